// `cutriage run [options] [--] APP [ARGS...]`: runs APP with libcutriage.so injected
// (CUDA_INJECTION64_PATH), the options passed as CUTRIAGE_* variables, then prints the report of
// the file the agent wrote.
#pragma once

#include <string>
#include <vector>

namespace cutriage::tools {

// Returns the application's exit status (128 + signal number when it was killed), or 1 for a
// usage or configuration error, 8 when libcutriage.so cannot be found, 9 when APP cannot start.
int run_command(const std::vector<std::string>& args, const std::string& self_exe);

// Where libcutriage.so is: `explicit_path` if given, else $CUTRIAGE_LIBRARY, else next to the
// tool (build tree: ../agent/libcutriage.so; install: ../lib/libcutriage.so). Empty when none
// exists.
std::string find_agent_library(const std::string& explicit_path, const std::string& self_exe);

}  // namespace cutriage::tools
