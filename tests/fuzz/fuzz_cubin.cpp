// libFuzzer target: see exercise_cubin in tests/support/fuzz_cubin.h.
#include "fuzz_cubin.h"

#include "fuzz_target.h"

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_cubin)
