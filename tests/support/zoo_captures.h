// The example zoo's Nsight Compute captures (tests/data/ncu/zoo, H200), imported and triaged as
// `cutriage triage --ncu-csv ... --timings ... --clock-control none` does: the tool tests that
// read them share this one import.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "capture_support.h"
#include "import.h"
#include "ncu_csv.h"

namespace cutriage::testing {

inline std::vector<wire::KernelRecord> zoo_ncu_records() {
  const std::filesystem::path dir = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "ncu";
  std::vector<std::filesystem::path> csvs;
  for (const auto& e : std::filesystem::directory_iterator(dir / "zoo")) {
    if (e.path().extension() == ".csv") csvs.push_back(e.path());
  }
  std::sort(csvs.begin(), csvs.end());
  std::vector<tools::NcuImport> imports;
  for (const auto& p : csvs) {
    tools::NcuCsvResult r = tools::parse_ncu_csv(slurp(p));
    if (r.import) imports.push_back(std::move(*r.import));
  }
  tools::ImportOptions options;
  options.clock_control = triage::ClockControl::kNone;  // capture.sh runs ncu --clock-control none
  std::vector<std::string> warnings;
  options.timings = tools::parse_timings(slurp(dir / "timings.csv"), warnings);
  return tools::triage_imports(std::move(imports), options).kernels;
}

}  // namespace cutriage::testing
