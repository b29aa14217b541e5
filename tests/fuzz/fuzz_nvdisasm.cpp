// libFuzzer target: see exercise_nvdisasm in tests/support/fuzz_tools.h.
#include "fuzz_target.h"
#include "fuzz_tools.h"

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_nvdisasm)
