// Reads Nsight Compute's raw CSV export (`ncu --csv --page raw [--print-units base]`) into the
// triage engine's inputs: one KernelInput per profiled launch (row), with every metric column,
// the launch configuration from the launch__* columns and the device limits from device__attribute_*.
#pragma once

#include <iosfwd>
#include <memory>
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

// The physical lines of a CSV, one at a time, each with its '\n' (the last may lack one).
class CsvLineSource {
 public:
  virtual ~CsvLineSource() = default;
  virtual bool next_line(std::string& line) = 0;  // false at the end
};

class StringLineSource final : public CsvLineSource {
 public:
  explicit StringLineSource(std::string_view text) : text_(text) {}
  bool next_line(std::string& line) override;

 private:
  std::string_view text_;
};

// Reads the stream as it goes: nothing of it is kept but the line asked for.
class StreamLineSource final : public CsvLineSource {
 public:
  explicit StreamLineSource(std::istream& in) : in_(in) {}
  bool next_line(std::string& line) override;

 private:
  std::istream& in_;
};

// parse_ncu_csv one row at a time (issue 25, item 13: 10k full-width rows took 37 s and 6.8 GB,
// 100k ended in std::bad_alloc): memory holds one row, the columns, one GpuInfo per device and at
// most 100 warnings, never the text or the other rows. open(), then next() until false, then
// finish(). Throws only std::bad_alloc (parse_ncu_csv turns anything into an error).
class NcuCsvReader {
 public:
  explicit NcuCsvReader(CsvLineSource& source);
  ~NcuCsvReader();
  NcuCsvReader(const NcuCsvReader&) = delete;
  NcuCsvReader& operator=(const NcuCsvReader&) = delete;

  // Reads up to and including the header row; the error when the input is not a usable raw-page
  // export (the same messages as parse_ncu_csv).
  std::optional<NcuCsvError> open();
  // The next profiled launch (input filled, diagnosis empty); false after the last one.
  bool next(wire::KernelRecord& k);
  // After next() returned false: the import without its kernels (identity, GPUs, warnings), or
  // the error when no row was a kernel.
  NcuCsvResult finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

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
