// Reads Nsight Compute's raw CSV export (`ncu --csv --page raw [--print-units base]`) into the
// triage engine's inputs: one KernelInput per profiled launch (row), with every metric column,
// the launch configuration from the launch__* columns and the device limits from device__attribute_*.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/wire/records.h"

namespace cutriage::tools {

struct NcuImport {
  std::vector<wire::KernelRecord> kernels;  // input filled; diagnosis empty
  std::vector<wire::GpuInfo> gpus;          // one per distinct device seen
  std::string host;
  uint64_t pid = 0;
  std::string process_name;
  std::vector<std::string> warnings;  // e.g. "row 7: 3 values could not be parsed"
};

struct NcuCsvError {
  std::string message;  // one line, says what is wrong and where
};

// Parses the whole CSV text. Fails (returns an error) only when the text is not a usable raw-page
// export: no header, no "Kernel Name" column, no metric columns, or no data rows. Unknown columns
// are kept as metrics when they look like metric names and ignored otherwise.
struct NcuCsvResult {
  std::optional<NcuImport> import;
  std::optional<NcuCsvError> error;
};
NcuCsvResult parse_ncu_csv(std::string_view text);

// Unprofiled timings, one CSV line each: `<program>,<kernel function name or *>,<median ns>,<n>`
// (what the example zoo writes with ZOO_TIMING_FILE). Matched to kernels by function name.
struct TimingEntry {
  std::string program;
  std::string kernel;  // "*" matches any kernel of the program
  double median_ns = 0;
  uint32_t samples = 0;
};
std::vector<TimingEntry> parse_timings(std::string_view text, std::vector<std::string>& warnings);

}  // namespace cutriage::tools
