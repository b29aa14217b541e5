#include "ncu_csv.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "csv_tokenizer.h"
#include "cutriage/base/demangle.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/wire/utf8.h"

namespace cutriage::tools {
namespace {

using csv::CsvRecord;
using csv::CsvTokenizer;
using csv::is_space;
using csv::RepairedLines;
using csv::starts_with;
using csv::trim;
using wire::valid_utf8;

using triage::DeviceLimits;
using triage::Dim3;
using triage::LaunchConfig;

// ------------------------------------------------------------------------------------------------
// Small string helpers

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }


// Shortens a cell for a diagnostic.
std::string excerpt(std::string_view s, size_t max = 40) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "...";
}

// ------------------------------------------------------------------------------------------------
// Numbers

// A cell that says "not collected" rather than holding a value.
bool is_missing(std::string_view cell) {
  cell = trim(cell);
  // "no data": what ncu prints for SASS-patching metrics a kernel never triggers.
  return cell.empty() || iequals(cell, "n/a") || iequals(cell, "na") || cell == "-" ||
         cell == "--" || iequals(cell, "nan") || iequals(cell, "no data");
}

// Parses a decimal number as ncu writes it: optional sign, thousands separators (","), decimal
// point, optional exponent. The whole cell must be the number.
std::optional<double> parse_number(std::string_view cell) {
  cell = trim(cell);
  if (cell.empty()) return std::nullopt;
  std::string digits;
  digits.reserve(cell.size());
  for (char c : cell) {
    if (c == ',') continue;
    digits.push_back(c);
  }
  std::string_view d = digits;
  if (!d.empty() && d.front() == '+') d.remove_prefix(1);
  if (d.empty() || !(is_digit(d.front()) || d.front() == '-' || d.front() == '.')) return std::nullopt;
  double value = 0;
  const char* end = d.data() + d.size();
  auto [ptr, ec] = std::from_chars(d.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_u64(std::string_view cell) {
  auto v = parse_number(cell);
  if (!v || *v < 0 || *v > 1.8e19 || std::floor(*v) != *v) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

uint32_t to_u32(double v) {
  if (!(v > 0)) return 0;
  if (v >= 4294967295.0) return std::numeric_limits<uint32_t>::max();
  return static_cast<uint32_t>(std::llround(v));
}

// ------------------------------------------------------------------------------------------------
// Units: everything is brought to base units (byte, nsecond, hz, byte/second, cycle/second...).

struct UnitScale {
  double factor = 1;
  std::string unit;
};

// One unit word without '/'. Times become nanoseconds in a numerator (`time_in_ns`) and seconds in
// a denominator (rates are per second).
UnitScale normalize_unit_word(std::string_view word, bool time_in_ns) {
  word = trim(word);
  // Times.
  struct TimeUnit {
    std::string_view name;
    double seconds;
  };
  static constexpr std::array<TimeUnit, 12> kTimes{{{"second", 1},
                                                    {"msecond", 1e-3},
                                                    {"usecond", 1e-6},
                                                    {"nsecond", 1e-9},
                                                    {"psecond", 1e-12},
                                                    {"s", 1},
                                                    {"sec", 1},
                                                    {"ms", 1e-3},
                                                    {"us", 1e-6},
                                                    {"\xC2\xB5s", 1e-6},
                                                    {"ns", 1e-9},
                                                    {"ps", 1e-12}}};
  for (const auto& t : kTimes) {
    if (word == t.name) {
      if (time_in_ns) return {t.seconds / 1e-9, "nsecond"};
      return {t.seconds, "second"};
    }
  }
  // Frequencies: ncu writes "hz", "Khz", "Mhz", "Ghz" (never millihertz).
  if (word.size() >= 2 && iequals(word.substr(word.size() - 2), "hz")) {
    std::string_view prefix = word.substr(0, word.size() - 2);
    if (prefix.empty()) return {1, "hz"};
    if (prefix.size() == 1) {
      switch (ascii_lower(prefix.front())) {
        case 'k': return {1e3, "hz"};
        case 'm': return {1e6, "hz"};
        case 'g': return {1e9, "hz"};
        case 't': return {1e12, "hz"};
        default: break;
      }
    }
    return {1, std::string(word)};
  }
  // Short byte spellings.
  if (word == "B") return {1, "byte"};
  if (word.size() == 2 && word.back() == 'B') {
    switch (word.front()) {
      case 'K': return {1e3, "byte"};
      case 'M': return {1e6, "byte"};
      case 'G': return {1e9, "byte"};
      case 'T': return {1e12, "byte"};
      default: break;
    }
  }
  if (word.size() == 3 && word[1] == 'i' && word[2] == 'B') {
    switch (word.front()) {
      case 'K': return {1024.0, "byte"};
      case 'M': return {1024.0 * 1024, "byte"};
      case 'G': return {1024.0 * 1024 * 1024, "byte"};
      case 'T': return {1024.0 * 1024 * 1024 * 1024, "byte"};
      default: break;
    }
  }
  // Decimal prefixes on lower-case unit words: "Kbyte", "Mbyte", "Ginst", "Kcycle"; binary ones
  // ("Kibyte") are 1024-based.
  if (word.size() >= 2) {
    double factor = 0;
    switch (word.front()) {
      case 'K': factor = 1e3; break;
      case 'M': factor = 1e6; break;
      case 'G': factor = 1e9; break;
      case 'T': factor = 1e12; break;
      case 'P': factor = 1e15; break;
      default: break;
    }
    if (factor > 0) {
      std::string_view rest = word.substr(1);
      if (rest == "ibyte" || rest == "ibit") {  // not "Minst": only bytes and bits take binary prefixes
        const double binary = std::pow(1024.0, std::round(std::log10(factor) / 3));
        return {binary, std::string(rest.substr(1))};
      }
      if (rest[0] >= 'a' && rest[0] <= 'z') return {factor, std::string(rest)};
    }
  }
  return {1, std::string(word)};
}

UnitScale normalize_unit(std::string_view unit) {
  unit = trim(unit);
  const auto slash = unit.find('/');
  if (slash == std::string_view::npos) return normalize_unit_word(unit, /*time_in_ns=*/true);
  UnitScale num = normalize_unit_word(unit.substr(0, slash), /*time_in_ns=*/true);
  UnitScale den = normalize_unit_word(unit.substr(slash + 1), /*time_in_ns=*/false);
  return {num.factor / den.factor, num.unit + "/" + den.unit};
}

// ------------------------------------------------------------------------------------------------
// Columns

bool looks_like_metric_name(std::string_view name) {
  if (name.empty() || !is_letter(name.front())) return false;
  if (name.find("__") == std::string_view::npos) return false;
  for (char c : name) {
    if (is_space(c) || c == '"' || c == ',' || c == '(' || c == ')') return false;
  }
  return true;
}


struct Columns {
  std::map<std::string, size_t, std::less<>> by_name;  // first occurrence of each header name
  struct Metric {
    size_t index = 0;
    std::string name;
    UnitScale scale;
  };
  std::vector<Metric> metrics;

  [[nodiscard]] std::optional<size_t> find(std::string_view name) const {
    auto it = by_name.find(name);
    if (it == by_name.end()) return std::nullopt;
    return it->second;
  }
};

std::string_view cell_at(const CsvRecord& rec, std::optional<size_t> index) {
  if (!index || *index >= rec.fields.size()) return {};
  return trim(rec.fields[*index]);
}

// "(256, 1, 1)" -> Dim3. Also accepts "256,1,1", "[256 1 1]" and a single number.
std::optional<Dim3> parse_dim3(std::string_view cell) {
  cell = trim(cell);
  if (cell.empty()) return std::nullopt;
  std::array<uint32_t, 3> v{1, 1, 1};
  size_t count = 0;
  size_t i = 0;
  while (i < cell.size()) {
    const char c = cell[i];
    if (c == '(' || c == ')' || c == '[' || c == ']' || c == ',' || is_space(c)) {
      ++i;
      continue;
    }
    if (!is_digit(c) || count == 3) return std::nullopt;
    uint64_t x = 0;
    while (i < cell.size() && is_digit(cell[i])) {
      x = x * 10 + static_cast<uint64_t>(cell[i] - '0');
      if (x > std::numeric_limits<uint32_t>::max()) return std::nullopt;
      ++i;
    }
    v[count++] = static_cast<uint32_t>(x);
  }
  if (count == 0) return std::nullopt;
  return Dim3{v[0], v[1], v[2]};
}

// "9.0" -> {9, 0}.
std::optional<std::pair<int, int>> parse_cc(std::string_view cell) {
  cell = trim(cell);
  const auto dot = cell.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= cell.size()) return std::nullopt;
  int major = 0;
  int minor = 0;
  auto a = std::from_chars(cell.data(), cell.data() + dot, major);
  auto b = std::from_chars(cell.data() + dot + 1, cell.data() + cell.size(), minor);
  if (a.ec != std::errc() || a.ptr != cell.data() + dot || b.ec != std::errc() ||
      b.ptr != cell.data() + cell.size()) {
    return std::nullopt;
  }
  return std::make_pair(major, minor);
}

// The chip name for a compute capability, where one chip implements it (for known_device_limits).
std::string chip_for_cc(int major, int minor) {
  if (major == 9 && minor == 0) return "GH100";
  return {};
}

std::string chip_for_display_name(std::string_view name) {
  for (std::string_view hopper : {"H100", "H200", "H800", "H20", "GH200"}) {
    if (name.find(hopper) != std::string_view::npos) return "GH100";
  }
  return {};
}

// ------------------------------------------------------------------------------------------------
// Per-row conversion

struct RowText {
  std::map<std::string, std::string, std::less<>> values;  // non-numeric metric cells
  [[nodiscard]] std::string_view get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? std::string_view{} : std::string_view(it->second);
  }
};

std::optional<Dim3> dim3_from_metrics(const triage::MetricSet& m, std::string_view kind) {
  const std::string base = "launch__" + std::string(kind);
  auto x = m.get(base + "_dim_x");
  if (!x) x = m.get(base + "_size_x");
  if (x) {
    auto y = m.get(base + "_dim_y");
    if (!y) y = m.get(base + "_size_y");
    auto z = m.get(base + "_dim_z");
    if (!z) z = m.get(base + "_size_z");
    return Dim3{to_u32(*x), y ? to_u32(*y) : 1u, z ? to_u32(*z) : 1u};
  }
  if (auto total = m.get(base + "_size")) return Dim3{to_u32(*total), 1, 1};
  return std::nullopt;
}

std::optional<LaunchConfig> launch_config(const CsvRecord& rec, const Columns& cols,
                                          const triage::MetricSet& m) {
  std::optional<Dim3> grid = parse_dim3(cell_at(rec, cols.find("Grid Size")));
  std::optional<Dim3> block = parse_dim3(cell_at(rec, cols.find("Block Size")));
  if (!grid) grid = dim3_from_metrics(m, "grid");
  if (!block) block = dim3_from_metrics(m, "block");
  if (!grid || !block) return std::nullopt;
  LaunchConfig lc;
  lc.grid = *grid;
  lc.block = *block;
  auto u32 = [&](std::string_view name) -> uint32_t {
    auto v = m.get(name);
    return v ? to_u32(*v) : 0;
  };
  lc.registers_per_thread = u32("launch__registers_per_thread");
  lc.static_shared_bytes = u32("launch__shared_mem_per_block_static");
  lc.dynamic_shared_bytes = u32("launch__shared_mem_per_block_dynamic");
  lc.shared_config_bytes_per_sm = u32("launch__shared_mem_config_size");
  lc.local_bytes_per_thread = 0;  // not in the raw page
  if (m.has("launch__cluster_dim_x")) {
    const uint32_t cx = u32("launch__cluster_dim_x");
    const uint32_t cy = m.has("launch__cluster_dim_y") ? u32("launch__cluster_dim_y") : 1;
    const uint32_t cz = m.has("launch__cluster_dim_z") ? u32("launch__cluster_dim_z") : 1;
    if (cx > 0 && cy > 0 && cz > 0) lc.cluster = Dim3{cx, cy, cz};
  }
  return lc;
}

// A clock from a device attribute: "hz" after normalization, or no unit (CUDA reports kHz).
double clock_hz(const triage::MetricSet& m, std::string_view name) {
  const auto* v = m.find(name);
  if (v == nullptr || v->value <= 0) return 0;
  if (v->unit == "hz") return v->value;
  if (v->unit.empty()) return v->value * 1e3;
  return 0;
}

// A compute capability component from a metric cell: a small whole number, or nothing (the cell
// is outside input; converting an out-of-range double to int is undefined behaviour).
std::optional<int> cc_component(std::optional<double> v) {
  if (!v || !(*v >= 0 && *v <= 99) || std::floor(*v) != *v) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<DeviceLimits> device_limits(const CsvRecord& rec, const Columns& cols,
                                          const triage::MetricSet& m, const RowText& text) {
  std::optional<std::pair<int, int>> cc;
  if (auto major = cc_component(m.get("device__attribute_compute_capability_major"))) {
    auto minor = cc_component(m.get("device__attribute_compute_capability_minor"));
    cc = std::make_pair(*major, minor.value_or(0));
  } else {
    cc = parse_cc(cell_at(rec, cols.find("CC")));
  }
  std::string chip(trim(text.get("device__attribute_chip")));
  if (chip.empty() && cc) chip = chip_for_cc(cc->first, cc->second);
  if (chip.empty()) chip = chip_for_display_name(text.get("device__attribute_display_name"));

  bool known = false;
  DeviceLimits d;
  if (!chip.empty()) {
    if (auto table = triage::known_device_limits(chip)) {
      d = *table;
      known = true;
    }
    d.chip = chip;
  }
  bool any_attribute = false;
  auto set_u32 = [&](std::string_view name, uint32_t& field) {
    if (auto v = m.get(name); v && *v > 0) {
      field = to_u32(*v);
      any_attribute = true;
    }
  };
  set_u32("device__attribute_multiprocessor_count", d.sm_count);
  set_u32("device__attribute_warp_size", d.warp_size);
  set_u32("device__attribute_max_threads_per_multiprocessor", d.max_threads_per_sm);
  set_u32("device__attribute_max_blocks_per_multiprocessor", d.max_blocks_per_sm);
  if (!m.has("device__attribute_max_blocks_per_multiprocessor")) {
    set_u32("device__attribute_limits_max_cta_per_sm", d.max_blocks_per_sm);
  }
  set_u32("device__attribute_max_threads_per_block", d.max_threads_per_block);
  set_u32("device__attribute_max_registers_per_multiprocessor", d.registers_per_sm);
  set_u32("device__attribute_max_registers_per_thread", d.max_registers_per_thread);
  set_u32("device__attribute_max_shared_memory_per_multiprocessor", d.shared_bytes_per_sm);
  set_u32("device__attribute_max_shared_memory_per_block_optin", d.shared_bytes_per_block_optin);
  set_u32("device__attribute_reserved_shared_memory_per_block", d.reserved_shared_bytes_per_block);
  if (m.has("device__attribute_max_warps_per_multiprocessor")) {
    set_u32("device__attribute_max_warps_per_multiprocessor", d.max_warps_per_sm);
  } else if (m.has("device__attribute_max_threads_per_multiprocessor") && d.warp_size > 0) {
    d.max_warps_per_sm = d.max_threads_per_sm / d.warp_size;
  }
  // Clocks: the current rate, else the maximum one.
  auto set_clock = [&](std::string_view rate, std::string_view max_khz, double& field) {
    double hz = clock_hz(m, rate);
    if (hz <= 0) hz = clock_hz(m, max_khz);
    if (hz > 0) {
      field = hz;
      any_attribute = true;
    }
  };
  set_clock("device__attribute_clock_rate", "device__attribute_max_gpu_frequency_khz", d.sm_clock_hz);
  set_clock("device__attribute_memory_clock_rate", "device__attribute_max_mem_frequency_khz",
            d.memory_clock_hz);
  // Peak DRAM bandwidth: bytes per DRAM cycle at peak times DRAM cycles per second.
  const auto* peak = m.find("dram__bytes.sum.peak_sustained");
  const auto* rate = m.find("dram__cycles_elapsed.avg.per_second");
  if (peak != nullptr && rate != nullptr && peak->value > 0 && rate->value > 0 &&
      (rate->unit == "cycle/second" || rate->unit == "hz")) {
    d.dram_peak_bytes_per_second = peak->value * rate->value;
  }
  if (cc) {
    d.cc_major = cc->first;
    d.cc_minor = cc->second;
  }
  if (d.reserved_shared_bytes_per_block == 0 && d.cc_major >= 8) d.reserved_shared_bytes_per_block = 1024;
  if (!known && !any_attribute && !cc && chip.empty()) return std::nullopt;
  return d;
}

std::string describe_row(size_t line, std::string_view id, std::string_view function) {
  std::string s = "line " + std::to_string(line);
  if (!id.empty() || !function.empty()) {
    s += " (";
    if (!id.empty()) s += "ID " + std::string(id);
    if (!id.empty() && !function.empty()) s += ", ";
    if (!function.empty()) s += excerpt(function, 60);
    s += ")";
  }
  return s;
}

constexpr size_t kMaxWarnings = 100;

void add_warning(NcuImport& imp, size_t& dropped, std::string w) {
  if (imp.warnings.size() < kMaxWarnings) {
    imp.warnings.push_back(std::move(w));
  } else {
    ++dropped;
  }
}

NcuCsvResult fail(std::string message) {
  NcuCsvResult r;
  r.error = NcuCsvError{std::move(message)};
  return r;
}

}  // namespace

// What the reader keeps between rows: the columns, the session identity, one GpuInfo per device,
// the warnings (at most kMaxWarnings) and the tokenizer's one line.
struct NcuCsvReader::State {
  explicit State(CsvLineSource& source) : lines(source) {}
  RepairedLines lines;
  std::optional<CsvTokenizer> tokens;
  CsvRecord rec;  // the row being read; its fields' storage is reused
  Columns cols;
  size_t header_line = 0;
  size_t header_width = 0;
  std::vector<std::string> duplicate_columns;
  std::optional<size_t> id_col, name_col, mangled_col, demangled_col, function_col, device_col,
      context_col, stream_col, pid_col, host_col, process_col, device_name_col;
  bool expect_units = true;
  bool first_row = true;
  uint64_t ordinal = 0;
  uint64_t kernels = 0;
  std::map<uint32_t, size_t> gpu_index;  // device -> index into import.gpus
  NcuImport import;                      // without kernels; warnings are the rows' only
  size_t dropped_warnings = 0;

  void warn(std::string w) { add_warning(import, dropped_warnings, std::move(w)); }
  bool row(wire::KernelRecord& k);
};

NcuCsvReader::NcuCsvReader(CsvLineSource& source) : state_(std::make_unique<State>(source)) {}
NcuCsvReader::~NcuCsvReader() = default;

std::optional<NcuCsvError> NcuCsvReader::open() {
  State& st = *state_;
  // The header is the first line that starts with the "ID" column; anything before it (==PROF==
  // log lines, the application's own output) is skipped.
  std::string line;
  size_t line_no = 0;
  bool any_text = false;
  bool found = false;
  while (st.lines.next(line)) {
    ++line_no;
    std::string_view l = line;
    any_text = any_text || !trim(l).empty();
    while (!l.empty() && is_space(l.front())) l.remove_prefix(1);
    if (starts_with(l, "\"ID\"") || starts_with(l, "ID,")) {
      found = true;
      break;
    }
  }
  if (!found && !any_text) {
    return NcuCsvError{"the input is empty (expected the output of `ncu --csv --page raw`)"};
  }
  if (!found) {
    return NcuCsvError{
        "no header row: no line starts with the \"ID\" column (expected the output of "
        "`ncu --csv --page raw`, whose header has \"ID\", \"Kernel Name\" and one column per metric)"};
  }
  st.header_line = line_no;
  st.tokens.emplace(st.lines, std::move(line), line_no);
  CsvRecord header;
  if (!st.tokens->next(header)) return NcuCsvError{"no header row found"};
  st.header_line = header.line;

  Columns& cols = st.cols;
  for (size_t i = 0; i < header.fields.size(); ++i) {
    std::string name(trim(header.fields[i]));
    if (name.empty()) continue;
    if (!cols.by_name.emplace(name, i).second) {
      st.duplicate_columns.push_back(name);
      continue;
    }
  }
  const bool has_metric_name = cols.find("Metric Name").has_value();
  const bool has_metric_value = cols.find("Metric Value").has_value();
  if (has_metric_name && has_metric_value) {
    return NcuCsvError{"line " + std::to_string(header.line) +
                       ": this is a `--page details` export (it has \"Section Name\", \"Metric Name\", "
                       "\"Metric Unit\" and \"Metric Value\" columns, one row per metric); re-export the "
                       "report with `ncu --import <report>.ncu-rep --csv --page raw --print-units base`"};
  }
  if (!cols.find("Kernel Name")) {
    return NcuCsvError{"line " + std::to_string(header.line) +
                       ": the header has an \"ID\" column but no \"Kernel Name\" column; this is not an "
                       "`ncu --csv --page raw` export"};
  }
  for (const auto& [name, index] : cols.by_name) {
    if (looks_like_metric_name(name)) {
      cols.metrics.push_back({index, name, {}});
    }
    // Other columns (ncu's source-counter tables, its derived_tempMetric scratch columns) are
    // ignored silently: a full-set export always has them.
  }
  std::sort(cols.metrics.begin(), cols.metrics.end(),
            [](const Columns::Metric& a, const Columns::Metric& b) { return a.index < b.index; });
  if (cols.metrics.empty()) {
    return NcuCsvError{"line " + std::to_string(header.line) +
                       ": the header has no metric columns (only identity columns such as \"ID\" and "
                       "\"Kernel Name\"); profile with --set/--section/--metrics so the raw page has metrics"};
  }
  st.header_width = header.fields.size();
  st.id_col = cols.find("ID");
  st.name_col = cols.find("Kernel Name");
  st.mangled_col = cols.find("Mangled Name");
  st.demangled_col = cols.find("Demangled Name");
  st.function_col = cols.find("Function Name");
  st.device_col = cols.find("Device");
  st.context_col = cols.find("Context");
  st.stream_col = cols.find("Stream");
  st.pid_col = cols.find("Process ID");
  st.host_col = cols.find("Host Name");
  st.process_col = cols.find("Process Name");
  st.device_name_col = cols.find("Device Name");
  return std::nullopt;
}

bool NcuCsvReader::next(wire::KernelRecord& k) {
  State& st = *state_;
  if (!st.tokens) return false;
  while (st.tokens->next(st.rec)) {
    k = wire::KernelRecord{};
    if (st.row(k)) {
      ++st.kernels;
      return true;
    }
  }
  return false;
}

// One data row into `k`; false for a row that is not a kernel (blank, the header again, the units
// row, no ID).
bool NcuCsvReader::State::row(wire::KernelRecord& k) {
  NcuImport& imp = import;
  const bool all_empty = std::all_of(rec.fields.begin(), rec.fields.end(),
                                     [](const std::string& f) { return trim(f).empty(); });
  if (all_empty) return false;
  const std::string_view id_cell = cell_at(rec, id_col);
  if (id_cell == "ID") {  // the header again (several processes or concatenated exports)
    expect_units = true;
    return false;
  }
  if (id_cell.empty()) {
    if (expect_units) {
      for (auto& mc : cols.metrics) mc.scale = normalize_unit(cell_at(rec, mc.index));
      expect_units = false;
      return false;
    }
    warn("line " + std::to_string(rec.line) + ": row has no \"ID\" value; skipped");
    return false;
  }
  expect_units = false;

  triage::KernelInput& in = k.input;
  in.demangled_name = std::string(cell_at(rec, name_col));
  if (starts_with(in.demangled_name, "_Z")) {  // --print-kernel-base mangled
    in.mangled_name = in.demangled_name;
    in.demangled_name = demangle(in.mangled_name);
  }
  if (auto mangled = cell_at(rec, mangled_col); !mangled.empty()) in.mangled_name = std::string(mangled);
  if (auto dem = cell_at(rec, demangled_col); !dem.empty()) in.demangled_name = std::string(dem);
  if (in.demangled_name.empty() && !in.mangled_name.empty()) in.demangled_name = demangle(in.mangled_name);
  if (auto fn = cell_at(rec, function_col); !fn.empty()) {
    in.function_name = function_base_name(fn);
  } else {
    in.function_name = function_base_name(in.demangled_name);
  }
  // The demangler copies length-prefixed identifiers byte-wise and may cut a multi-byte
  // character of a (valid) mangled name in two.
  in.demangled_name = valid_utf8(in.demangled_name);
  in.function_name = valid_utf8(in.function_name);
  const std::string where = describe_row(rec.line, id_cell, in.function_name);

  std::vector<std::string> row_problems;
  if (rec.fields.size() < header_width) {
    row_problems.push_back("it has " + std::to_string(rec.fields.size()) + " of the header's " +
                           std::to_string(header_width) + " columns (the missing ones are treated as not collected)");
  } else if (rec.fields.size() > header_width) {
    row_problems.push_back("it has " + std::to_string(rec.fields.size() - header_width) +
                           " more column(s) than the header (ignored)");
  }
  if (in.demangled_name.empty()) row_problems.push_back("its \"Kernel Name\" is empty");

  if (auto id = parse_u64(id_cell)) {
    in.launch_index = *id;
  } else {
    in.launch_index = ordinal;
    row_problems.push_back("its ID \"" + excerpt(id_cell) + "\" is not a number (using " +
                           std::to_string(ordinal) + ")");
  }
  ++ordinal;
  if (auto dev = cell_at(rec, device_col); !dev.empty()) {
    if (auto v = parse_u64(dev); v && *v <= std::numeric_limits<uint32_t>::max()) {
      in.device = static_cast<uint32_t>(*v);
    } else {
      row_problems.push_back("its \"Device\" \"" + excerpt(dev) + "\" is not a device index");
    }
  }
  if (auto v = parse_u64(cell_at(rec, context_col))) k.context_id = *v;
  if (auto v = parse_u64(cell_at(rec, stream_col))) k.stream_id = *v;

  // Metrics.
  RowText text_values;
  std::vector<std::string> unparsable;
  for (const auto& mc : cols.metrics) {
    const std::string_view cell = cell_at(rec, mc.index);
    if (is_missing(cell)) continue;
    if (auto v = parse_number(cell)) {
      in.metrics.set(mc.name, *v * mc.scale.factor, mc.scale.unit, triage::MetricSource::kMeasured);
      continue;
    }
    const bool textual = std::any_of(cell.begin(), cell.end(), is_letter);
    if (textual && mc.scale.unit.empty()) {
      text_values.values.emplace(mc.name, std::string(cell));  // a string-valued metric
    } else {
      unparsable.push_back(mc.name + "=\"" + excerpt(cell) + "\"");
    }
  }
  if (!unparsable.empty()) {
    std::string p = std::to_string(unparsable.size()) + " value(s) could not be parsed as numbers and were skipped (";
    for (size_t i = 0; i < unparsable.size() && i < 3; ++i) p += (i ? ", " : "") + unparsable[i];
    if (unparsable.size() > 3) p += ", ...";
    p += ")";
    row_problems.push_back(std::move(p));
  }

  in.launch = launch_config(rec, cols, in.metrics);
  in.device_limits = device_limits(rec, cols, in.metrics, text_values);
  in.collection.replay_mode = triage::ReplayMode::kKernel;  // ncu's default; the caller may override
  in.collection.collector = triage::Collector::kNcuImport;
  if (auto passes = in.metrics.get("profiler__replayer_passes")) in.collection.passes = to_u32(*passes);
  if (auto dur = in.metrics.get("gpu__time_duration.sum")) k.duration_ns = *dur;

  // Session identity from the first row.
  if (first_row) {
    imp.host = std::string(cell_at(rec, host_col));
    imp.process_name = std::string(cell_at(rec, process_col));
    if (auto pid = parse_u64(cell_at(rec, pid_col))) imp.pid = *pid;
    first_row = false;
  }

  // One GpuInfo per device.
  std::string gpu_name(text_values.get("device__attribute_display_name"));
  if (gpu_name.empty()) gpu_name = std::string(cell_at(rec, device_name_col));
  auto [it, inserted] = gpu_index.emplace(in.device, imp.gpus.size());
  if (inserted) {
    wire::GpuInfo g;
    g.device = in.device;
    g.name = gpu_name;
    if (in.device_limits) g.limits = *in.device_limits;
    imp.gpus.push_back(std::move(g));
  } else {
    wire::GpuInfo& g = imp.gpus[it->second];
    if (g.name.empty()) g.name = gpu_name;
    if (g.limits.sm_count == 0 && in.device_limits && in.device_limits->sm_count > 0) {
      g.limits = *in.device_limits;
    }
  }

  if (!row_problems.empty()) {
    std::string w = where + ": ";
    for (size_t i = 0; i < row_problems.size(); ++i) w += (i ? "; " : "") + row_problems[i];
    warn(std::move(w));
  }
  return true;
}

NcuCsvResult NcuCsvReader::finish() {
  State& st = *state_;
  if (st.kernels == 0) {
    return fail("the CSV has a header but no profiled kernels (line " + std::to_string(st.header_line) +
                " is the header; no data rows follow)");
  }
  // The file-wide warnings first, as they are about everything below them.
  std::vector<std::string> front;
  if (st.lines.invalid_utf8_bytes() > 0) {
    front.push_back("the CSV is not valid UTF-8: " + std::to_string(st.lines.invalid_utf8_bytes()) +
                    " byte(s) were replaced with U+FFFD");
  }
  if (!st.duplicate_columns.empty()) {
    front.push_back("the header repeats " + std::to_string(st.duplicate_columns.size()) +
                    " column name(s) (first: \"" + st.duplicate_columns.front() +
                    "\"); the first occurrence is used");
  }
  if (st.tokens->unterminated_quote_line) {
    front.push_back("line " + std::to_string(*st.tokens->unterminated_quote_line) +
                    ": a quoted field is not closed before the end of the input; the text may be truncated");
  }
  if (st.tokens->log_lines_skipped > 0) {
    front.push_back("skipped " + std::to_string(st.tokens->log_lines_skipped) +
                    " ncu log line(s) (==PROF==, ==WARNING==, ...) between the CSV rows");
  }
  NcuImport imp = std::move(st.import);
  size_t dropped = st.dropped_warnings;
  std::vector<std::string> warnings = std::move(front);
  for (std::string& w : imp.warnings) {
    if (warnings.size() < kMaxWarnings) {
      warnings.push_back(std::move(w));
    } else {
      ++dropped;
    }
  }
  if (dropped > 0) warnings.push_back("... and " + std::to_string(dropped) + " more warning(s)");
  imp.warnings = std::move(warnings);
  std::sort(imp.gpus.begin(), imp.gpus.end(),
            [](const wire::GpuInfo& a, const wire::GpuInfo& b) { return a.device < b.device; });
  NcuCsvResult result;
  result.import = std::move(imp);
  return result;
}

bool StringLineSource::next_line(std::string& line) {
  if (text_.empty()) return false;
  const size_t eol = text_.find('\n');
  const size_t take = eol == std::string_view::npos ? text_.size() : eol + 1;
  line.assign(text_.data(), take);
  text_.remove_prefix(take);
  return true;
}

bool StreamLineSource::next_line(std::string& line) {
  if (!std::getline(in_, line)) return false;
  if (!in_.eof()) line.push_back('\n');  // getline stopped at one
  return true;
}

namespace {

NcuCsvResult parse_impl(std::string_view text) {
  StringLineSource source(text);
  NcuCsvReader reader(source);
  if (auto error = reader.open()) return fail(std::move(error->message));
  std::vector<wire::KernelRecord> kernels;
  wire::KernelRecord k;
  while (reader.next(k)) kernels.push_back(std::move(k));
  NcuCsvResult result = reader.finish();
  if (result.import) result.import->kernels = std::move(kernels);
  return result;
}

}  // namespace

NcuCsvResult parse_ncu_csv(std::string_view text) {
  try {
    return parse_impl(text);
  } catch (const std::exception& e) {
    return fail(std::string("internal error while reading the ncu CSV: ") + e.what());
  } catch (...) {
    return fail("internal error while reading the ncu CSV");
  }
}

std::vector<TimingEntry> parse_timings(std::string_view text, std::vector<std::string>& warnings) {
  std::vector<TimingEntry> out;
  try {
    size_t pos = 0;
    size_t line_no = 0;
    bool seen_content = false;
    while (pos <= text.size()) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string_view::npos) eol = text.size();
      std::string_view line = trim(text.substr(pos, eol - pos));
      pos = eol + 1;
      ++line_no;
      if (line_no == 1 && starts_with(line, "\xEF\xBB\xBF")) line = trim(line.substr(3));
      if (line.empty() || line.front() == '#') continue;

      // `<program>,<kernel>,<median>,<samples>`: the kernel name may itself hold commas (template
      // arguments), so it is everything between the first comma and the last-but-one.
      auto unquote = [](std::string_view f) {
        f = trim(f);
        if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
        return trim(f);
      };
      const auto bad = [&](std::string_view why) {
        warnings.push_back("timings line " + std::to_string(line_no) + ": " + std::string(why) +
                           " (expected `<program>,<kernel or *>,<median ns>,<samples>`, got \"" +
                           excerpt(line, 80) + "\"); skipped");
      };
      const size_t first = line.find(',');
      const size_t last = line.rfind(',');
      const size_t before_last = last == std::string_view::npos || last == 0
                                     ? std::string_view::npos
                                     : line.rfind(',', last - 1);
      if (first == std::string_view::npos || before_last == std::string_view::npos || before_last <= first) {
        bad("too few fields");
        seen_content = true;
        continue;
      }
      TimingEntry e;
      e.program = std::string(unquote(line.substr(0, first)));
      e.kernel = std::string(unquote(line.substr(first + 1, before_last - first - 1)));
      const std::string_view median_cell = unquote(line.substr(before_last + 1, last - before_last - 1));
      const std::string_view count_cell = unquote(line.substr(last + 1));
      // An optional header line: "program,kernel,median_ns,samples".
      const bool header_line = !seen_content && iequals(e.program, "program");
      seen_content = true;
      if (header_line) continue;
      if (e.program.empty() || e.kernel.empty()) {
        bad("empty program or kernel name");
        continue;
      }
      double median = 0;
      auto [mp, mec] = std::from_chars(median_cell.data(), median_cell.data() + median_cell.size(), median);
      if (mec != std::errc() || mp != median_cell.data() + median_cell.size() || !std::isfinite(median) ||
          median < 0) {
        bad("the median is not a non-negative number");
        continue;
      }
      uint32_t count = 0;
      auto [cp, cec] = std::from_chars(count_cell.data(), count_cell.data() + count_cell.size(), count);
      if (cec != std::errc() || cp != count_cell.data() + count_cell.size()) {
        bad("the sample count is not a whole number");
        continue;
      }
      e.median_ns = median;
      e.samples = count;
      out.push_back(std::move(e));
    }
  } catch (const std::exception& e) {
    warnings.push_back(std::string("timings: internal error: ") + e.what());
  } catch (...) {
    warnings.push_back("timings: internal error");
  }
  return out;
}

}  // namespace cutriage::tools
