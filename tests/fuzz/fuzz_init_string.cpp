// libFuzzer target: see exercise_init_string in tests/support/fuzz_agent.h.
#include "fuzz_agent.h"
#include "fuzz_target.h"

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_init_string)
