// Every input a fuzzer of the agent's configuration parsers ever failed on
// (tests/data/fuzz-regressions/<target>/), replayed through the same exercise_* function the
// fuzzer runs (tests/support/fuzz_agent.h); under the sanitizer gate (.ci/sanitize.sh) the replay
// also catches the memory error itself. Below them, the bugs those inputs found, spelled out.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "config.h"
#include "fuzz_agent.h"
#include "fuzz_control.h"
#include "fuzz_replay.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_fuzz_regressions_agent {

using cutriage::testing::replay;
using cutriage::testing::replay_seeds;

TEST_CASE("fuzz regressions: agent configuration", "[fuzz][config]") {
  replay("config", cutriage::fuzz::exercise_config);
}

TEST_CASE("fuzz regressions: output path pattern", "[fuzz][config]") {
  replay("path_pattern", cutriage::fuzz::exercise_path_pattern);
}

TEST_CASE("fuzz regressions: kernel filter", "[fuzz][config]") {
  replay("kernel_filter", cutriage::fuzz::exercise_kernel_filter);
}

TEST_CASE("fuzz regressions: cutriage_init's configuration string", "[fuzz][config]") {
  replay("init_string", cutriage::fuzz::exercise_init_string);
  replay_seeds("init_string", cutriage::fuzz::exercise_init_string);
}

TEST_CASE("fuzz regressions: control file commands", "[fuzz][config]") {
  replay("control", cutriage::fuzz::exercise_control);
  replay_seeds("control", cutriage::fuzz::exercise_control);
}

// Found by fuzz_kernel_filter: a regular expression ending in "(" made libstdc++'s regex scanner
// read one byte past the end of the pattern (a heap overflow under ASan when the spec is a view of
// an exactly sized buffer). The filter now compiles from a NUL-terminated copy; the pattern is
// rejected as it should be.
TEST_CASE("kernel filter: a regex ending in an open parenthesis is refused cleanly", "[fuzz][config]") {
  const std::string buffer = "regex:gemm(";
  // An exactly sized heap copy, like the fuzzer's input: nothing readable after the last byte.
  const std::vector<char> exact(buffer.begin(), buffer.end());
  cutriage::agent::KernelFilter filter;
  const std::string error =
      filter.set(std::string_view(exact.data(), exact.size()), cutriage::agent::NameBase::kFunction);
  CHECK_FALSE(error.empty());
  CHECK(filter.empty());
}

// Found by fuzz_kernel_filter: libstdc++'s regex compiler read the number of a back-reference or a
// repeat count into a long without an overflow check (signed overflow past 19 digits). Such
// numbers (10 digits or more) are now refused before compiling; ordinary counts still work.
TEST_CASE("kernel filter: an oversized repeat count or back-reference is refused", "[fuzz][config]") {
  cutriage::agent::KernelFilter filter;
  using cutriage::agent::NameBase;
  CHECK(filter.set("regex:gemm\\33333333000000114519", NameBase::kFunction).find("10 or more digits") !=
        std::string::npos);
  CHECK(filter.set("regex:a{1,99999999999999999999}", NameBase::kFunction).find("10 or more digits") !=
        std::string::npos);
  CHECK(filter.empty());
  CHECK(filter.set("regex:^gemm_[0-9]{2,3}$", NameBase::kFunction).empty());
  CHECK(filter.matches("_Z7gemm_64v", "gemm_64()", "gemm_64"));
  CHECK_FALSE(filter.matches("_Z9gemm_1024v", "gemm_1024()", "gemm_1024"));
}

}  // namespace test_fuzz_regressions_agent
