// Replays every input saved under tests/data/fuzz-regressions/<target>/ through a fuzz target's
// exercise function (tests/support/fuzz_*.h): an empty result means the parser kept its contract.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "capture_support.h"
#include "catch.h"

namespace cutriage::testing {

inline std::vector<std::filesystem::path> regression_inputs(std::string_view target) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir =
      std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "fuzz-regressions" / std::string(target);
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

template <typename Exercise>
void replay(std::string_view target, Exercise exercise) {
  for (const auto& path : regression_inputs(target)) {
    INFO(path.string());
    CHECK(exercise(slurp(path)).empty());
  }
}

// The committed seeds of a target (tests/fuzz/seeds/<target>/) through its exercise function: the
// contract holds on the inputs the fuzzer starts from, in every build, fuzzers built or not.
template <typename Exercise>
void replay_seeds(std::string_view target, Exercise exercise) {
  const std::filesystem::path dir =
      std::filesystem::path(CUTRIAGE_SOURCE_DIR) / "tests" / "fuzz" / "seeds" / std::string(target);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  CHECK_FALSE(files.empty());
  for (const auto& path : files) {
    INFO(path.string());
    CHECK(exercise(slurp(path)).empty());
  }
}

}  // namespace cutriage::testing
