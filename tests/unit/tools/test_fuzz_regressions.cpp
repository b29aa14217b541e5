// Every input a fuzzer of the tool's parsers ever failed on (tests/data/fuzz-regressions/<target>/,
// copied there from the fuzzer's artifact when the bug was fixed), replayed through the same
// exercise_* function the fuzzer runs (tests/support/fuzz_tools.h). Under the sanitizer gate
// (.ci/sanitize.sh) the replay also catches the memory error or undefined behaviour itself.
// Below them, the bugs those inputs found, spelled out.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "fuzz_tools.h"
#include "fuzz_replay.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_fuzz_regressions {

using cutriage::testing::replay;
using cutriage::testing::replay_seeds;

TEST_CASE("fuzz regressions: ncu csv", "[fuzz]") {
  replay("ncu_csv", cutriage::fuzz::exercise_ncu_csv);
}

TEST_CASE("fuzz regressions: timings", "[fuzz]") {
  replay("timings", cutriage::fuzz::exercise_timings);
}

TEST_CASE("fuzz regressions: cutriage file reader", "[fuzz]") {
  replay("file_reader", cutriage::fuzz::exercise_file_reader);
}

TEST_CASE("fuzz regressions: the agent's reader of an earlier output", "[fuzz]") {
  replay("prior_run", cutriage::fuzz::exercise_prior_run);
}

TEST_CASE("fuzz regressions: thresholds", "[fuzz]") {
  replay("thresholds", cutriage::fuzz::exercise_thresholds);
}

TEST_CASE("fuzz regressions: trace export", "[fuzz]") {
  replay("trace_export", cutriage::fuzz::exercise_trace_export);
  replay_seeds("trace_export", cutriage::fuzz::exercise_trace_export);
}

TEST_CASE("fuzz regressions: pprof export", "[fuzz]") {
  replay("pprof_export", cutriage::fuzz::exercise_pprof_export);
  replay_seeds("pprof_export", cutriage::fuzz::exercise_pprof_export);
}

TEST_CASE("fuzz regressions: nvdisasm listing", "[fuzz]") {
  replay("nvdisasm", cutriage::fuzz::exercise_nvdisasm);
  replay_seeds("nvdisasm", cutriage::fuzz::exercise_nvdisasm);
}

// The contracts themselves catch what they are for (a checker that accepts everything would let
// the fuzzers run green).
TEST_CASE("fuzz contracts: the JSON checker refuses what Perfetto would", "[fuzz]") {
  using cutriage::testing::JsonChecker;
  CHECK(JsonChecker(R"({"traceEvents": [{"ph": "X", "ts": 1.5e3, "name": "k\u00e9"}], "x": null})").check().empty());
  CHECK_FALSE(JsonChecker(R"({"a": 1,})").check().empty());
  CHECK_FALSE(JsonChecker("{\"a\": \"tab\there\"}").check().empty());
  CHECK_FALSE(JsonChecker(R"({"a": 01})").check().empty());
  CHECK_FALSE(JsonChecker(R"({"a": "\x41"})").check().empty());
  CHECK_FALSE(JsonChecker(R"([1] [2])").check().empty());
  CHECK_FALSE(JsonChecker(R"({"a": [1, 2})").check().empty());
}

// Found by fuzz_ncu_csv: a CSV with bytes that are not UTF-8 (here a Latin-1 host name and a torn
// character in a kernel name) produced a cutriage file whose string fields libprotobuf refuses, so
// `cutriage report` saw a truncated file. The importer now replaces such bytes with U+FFFD.
TEST_CASE("ncu csv: bytes that are not UTF-8 are replaced and the file reads back", "[ncu][fuzz]") {
  const std::string csv =
      "\"ID\",\"Host Name\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"nsecond\"\n"
      "\"0\",\"r\xE9seau-1\",\"zoo_k\xC3(int)\",\"1000\"\n";
  const auto parsed = cutriage::tools::parse_ncu_csv(csv);
  REQUIRE(parsed.import.has_value());
  const auto& imp = *parsed.import;
  CHECK(imp.host == "r\xEF\xBF\xBDseau-1");
  REQUIRE(imp.kernels.size() == 1);
  CHECK(imp.kernels[0].input.function_name == "zoo_k\xEF\xBF\xBD");
  CHECK(imp.kernels[0].input.demangled_name == "zoo_k\xEF\xBF\xBD(int)");
  CHECK(std::any_of(imp.warnings.begin(), imp.warnings.end(), [](const std::string& w) {
    return w.find("not valid UTF-8: 2 byte(s)") != std::string::npos;
  }));
  CHECK(cutriage::fuzz::exercise_ncu_csv(csv).empty());  // the encoded file reads back whole
}

// Found by fuzz_ncu_csv: a compute capability metric far outside int's range was converted to
// int (undefined behaviour). Such a value is now ignored and the CC column used instead.
TEST_CASE("ncu csv: an absurd compute capability metric is not converted", "[ncu][fuzz]") {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"CC\",\"device__attribute_compute_capability_major\","
      "\"device__attribute_compute_capability_minor\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"nsecond\"\n"
      "\"0\",\"k(int)\",\"9.0\",\"19404200000\",\"-3\",\"1000\"\n";
  const auto parsed = cutriage::tools::parse_ncu_csv(csv);
  REQUIRE(parsed.import.has_value());
  REQUIRE(parsed.import->kernels.size() == 1);
  const auto& limits = parsed.import->kernels[0].input.device_limits;
  REQUIRE(limits.has_value());
  CHECK(limits->cc_major == 9);
  CHECK(limits->cc_minor == 0);
}

// Found by fuzz_ncu_csv: the engine converted doubles it reads from the capture to integers
// unchecked, undefined behaviour for values outside the integer's range: a measured
// launch__sm_count (launch.cpp) and a column named like the engine's own cutriage__routed_regime
// (rules_d7.cpp). Both are now range-checked first; the sanitizer gate replays this.
TEST_CASE("triage: absurd launch__sm_count and cutriage__routed_regime columns are not converted",
          "[ncu][fuzz]") {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"CC\",\"launch__sm_count\","
      "\"cutriage__routed_regime\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"SM\",\"\",\"nsecond\"\n"
      "\"0\",\"k(int)\",\"(256, 1, 1)\",\"(4096, 1, 1)\",\"9.0\",\"17726500000\",\"1e20\",\"1000\"\n";
  CHECK(cutriage::fuzz::exercise_ncu_csv(csv).empty());
}

}  // namespace test_fuzz_regressions
