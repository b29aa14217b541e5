// cutriage: triage Nsight Compute captures and read cutriage files.
//
// Exit codes (stable, scripts rely on them):
//   0 ok; 1 usage error; 2 input missing or unreadable; 3 not a cutriage file;
//   4 truncated cutriage file (complete records were used); 5 CSV not usable;
//   6 cannot write the output; 7 bad thresholds file; 10 the file has no trace (`trace`,
//   `report --rows families`) or no PC samples (`pprof`); 11 `diff --fail-if-slower` tripped.
//   `run` returns the application's own status (8 agent library not found, 9 application could
//   not be started).
//
// The commands, their options and their help are the table of commands.h (parsed by cli.h).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "commands.h"

namespace {

using cutriage::tools::commands::kOk;
using cutriage::tools::commands::kTruncated;
using cutriage::tools::commands::kUsage;
using cutriage::tools::commands::kWriteFailed;

// A report that did not reach stdout (`cutriage report x.pb > /dev/full`) is a failed command,
// not a success.
int checked_stdout(int rc) {
  std::cout.flush();
  if (std::cout) return rc;
  std::cerr << "cutriage: cannot write to stdout\n";
  return rc == kOk || rc == kTruncated ? kWriteFailed : rc;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const cutriage::tools::cli::Program program = cutriage::tools::commands::program();
    cutriage::tools::cli::Parsed parsed = cutriage::tools::cli::parse(program, args, std::cout, std::cerr);
    if (!parsed.run) return checked_stdout(parsed.exit_code);
    const int rc = parsed.run();
    return parsed.command->foreign_status ? rc : checked_stdout(rc);
  } catch (const std::exception& e) {
    std::cerr << "cutriage: internal error: " << e.what() << "\n";
    return kUsage;
  }
}
