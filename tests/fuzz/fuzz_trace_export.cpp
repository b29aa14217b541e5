// libFuzzer target: see exercise_trace_export in tests/support/fuzz_tools.h.
#include <google/protobuf/stubs/logging.h>

#include "fuzz_target.h"
#include "fuzz_tools.h"

// The exercise runs the tool's libprotobuf reader, which logs every record it rejects.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

CUTRIAGE_FUZZ_TARGET(cutriage::fuzz::exercise_trace_export)
