// libFuzzer target: see exercise_kernel_filter in tests/support/fuzz_agent.h.
#include "fuzz_target.h"
#include "fuzz_agent.h"

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_kernel_filter)
