// libFuzzer target: see exercise_control in tests/support/fuzz_control.h.
#include "fuzz_control.h"
#include "fuzz_target.h"

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_control)
