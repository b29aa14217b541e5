// libFuzzer target: see exercise_ncu_csv in tests/support/fuzz_tools.h.
#include <google/protobuf/stubs/logging.h>

#include "fuzz_target.h"
#include "fuzz_tools.h"

// libprotobuf logs every record it rejects (e.g. a string field that is not UTF-8) to stderr; at
// thousands of inputs a second that buries the report and slows the run. The reader's verdict is
// what the exercise checks.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_ncu_csv)
