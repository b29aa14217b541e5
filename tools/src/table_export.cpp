#include "table_export.h"

#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>
#include <variant>

#include "cutriage/base/demangle.h"
#include "cutriage/wire/utf8.h"
#include "report.h"
#include "report_model.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

using Cell = TableCell;

const std::vector<std::string> kKernelColumns = {
    "launch_index", "function", "demangled", "mangled", "device", "grid_x", "grid_y", "grid_z",
    "block_x", "block_y", "block_z", "duration_ns", "unprofiled_duration_ns", "time_share",
    "classification", "primary_limiter", "primary_rule", "headline", "next_action",
    "estimated_speedup", "trust", "library"};

const std::vector<std::string> kFamilyColumns = {
    "family_id", "name", "device", "launches", "replayed_launches", "total_ns", "mean_ns",
    "time_share", "verdict", "primary_limiter", "next_action", "not_profiled_reason"};

const std::vector<std::string> kRankColumns = {
    "rank", "local_rank", "process", "world_size", "span_ns", "busy_ns", "idle_ns", "idle_share",
    "kernel_ns", "communication_ns", "communication_share", "compute_ns", "straggler", "top_family",
    "top_family_share", "top_family_verdict"};

// "CLASSIFICATION_MEMORY_BOUND" -> "memory_bound"; "" for the unspecified value.
std::string enum_text(const std::string& name, std::string_view prefix) {
  std::string s = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "unspecified" ? std::string() : s;
}

std::string json_text(std::string_view s) {
  std::string repaired;
  if (!wire::is_valid_utf8(s)) {
    repaired = wire::valid_utf8(s);
    s = repaired;
  }
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string real(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string json_cell(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return json_text(*s);
  if (const auto* u = std::get_if<uint64_t>(&c)) return std::to_string(*u);
  if (const auto* d = std::get_if<double>(&c)) return std::isfinite(*d) ? real(*d) : "null";
  return "null";
}

std::string csv_cell(const Cell& c) {
  std::string text;
  if (const auto* s = std::get_if<std::string>(&c)) {
    text = terminal_safe(*s, false);  // control characters escaped, UTF-8 repaired
  } else if (const auto* u = std::get_if<uint64_t>(&c)) {
    text = std::to_string(*u);
  } else if (const auto* d = std::get_if<double>(&c)) {
    if (std::isfinite(*d)) text = real(*d);
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

void append_table_row(std::string& out, TableFormat format, const std::vector<std::string>& columns,
                      const std::vector<TableCell>& cells) {
  if (format == TableFormat::kJsonLines) {
    out += '{';
    for (size_t i = 0; i < columns.size(); ++i) {
      if (i != 0) out += ',';
      out += json_text(columns[i]) + ":" + json_cell(cells[i]);
    }
    out += "}\n";
    return;
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i != 0) out += ',';
    out += csv_cell(cells[i]);
  }
  out += "\r\n";
}

namespace {

void append_row(std::string& out, TableFormat format, const std::vector<std::string>& columns,
                const std::vector<Cell>& cells) {
  append_table_row(out, format, columns, cells);
}

Cell text(std::string_view s) { return Cell(std::string(s)); }

std::vector<Cell> kernel_row(const ReadResult& file, const v1::KernelProfile& k) {
  const v1::Diagnosis& d = k.diagnosis();
  const std::string mangled(lookup(file, k.mangled_name_iid()));
  std::string demangled(lookup(file, k.demangled_name_iid()));
  if (demangled.empty()) demangled = demangle(mangled);
  std::string function(lookup(file, k.function_name_iid()));
  if (function.empty()) function = demangled.empty() ? mangled : demangled;
  auto dim = [&](const v1::Dim3& x, int axis) -> Cell {
    if (!k.has_launch()) return {};
    return uint64_t{axis == 0 ? x.x() : axis == 1 ? x.y() : x.z()};
  };
  auto positive = [](double v) -> Cell { return v > 0 ? Cell(v) : Cell(); };
  return {uint64_t{k.launch_index()},
          function,
          demangled,
          mangled,
          uint64_t{k.device()},
          dim(k.launch().grid(), 0),
          dim(k.launch().grid(), 1),
          dim(k.launch().grid(), 2),
          dim(k.launch().block(), 0),
          dim(k.launch().block(), 1),
          dim(k.launch().block(), 2),
          positive(k.duration_ns()),
          positive(k.unprofiled_duration_ns()),
          positive(k.time_share()),
          enum_text(v1::Classification_Name(d.classification()), "CLASSIFICATION_"),
          enum_text(v1::Limiter_Name(d.primary_limiter()), "LIMITER_"),
          text(d.primary_rule_id()),
          text(d.headline()),
          text(d.next_action()),
          positive(d.estimated_speedup()),
          enum_text(v1::Trust_Name(d.trust()), "TRUST_"),
          text(d.library())};
}

std::vector<Cell> family_row(const ReadResult& file, const std::vector<const v1::KernelProfile*>& current,
                             const v1::FamilyStats& fs) {
  const v1::KernelFamily* fam = find_family(file, fs.family_id());
  const v1::KernelProfile* k = model::family_profile(current, fs);
  Cell verdict, limiter, next, why;
  if (k != nullptr && k->has_diagnosis()) {
    verdict = enum_text(v1::Classification_Name(k->diagnosis().classification()), "CLASSIFICATION_");
    limiter = enum_text(v1::Limiter_Name(k->diagnosis().primary_limiter()), "LIMITER_");
    next = text(k->diagnosis().next_action());
  } else {
    std::string reason = enum_text(v1::FamilyStats::Selection_Name(fs.selection()), "SELECTION_");
    if (!fs.selection_detail().empty()) reason += (reason.empty() ? "" : ": ") + fs.selection_detail();
    why = reason;
  }
  auto positive = [](double v) -> Cell { return v > 0 ? Cell(v) : Cell(); };
  return {uint64_t{fs.family_id()},
          family_name(file, fs.family_id()),
          fam != nullptr ? Cell(uint64_t{fam->device()}) : Cell(),
          uint64_t{fs.launches()},
          uint64_t{fs.replayed_launches()},
          fs.total_ns(),
          positive(fs.mean_ns()),
          fs.time_share(),
          verdict,
          limiter,
          next,
          why};
}

}  // namespace

std::string csv_field(std::string_view text) { return csv_cell(std::string(text)); }

const std::vector<std::string>& table_columns(TableRows rows) {
  switch (rows) {
    case TableRows::kKernels: return kKernelColumns;
    case TableRows::kFamilies: return kFamilyColumns;
    case TableRows::kRanks: return kRankColumns;
  }
  return kKernelColumns;
}

std::string render_table(const ReadResult& file, TableFormat format, TableRows rows, std::string& error) {
  const std::vector<std::string>& columns = table_columns(rows);
  std::string out;
  if (format == TableFormat::kCsv) {
    for (size_t i = 0; i < columns.size(); ++i) out += (i != 0 ? "," : "") + columns[i];
    out += "\r\n";
  }
  // The kernels as the text report counts them: a record that a later one combines (adaptive
  // collection) is not a kernel of its own (before: torch_loop had 14 rows for 8 kernels).
  const std::vector<const v1::KernelProfile*> current = model::report_kernels(file).current;
  if (rows == TableRows::kKernels) {
    for (const v1::KernelProfile* k : current) append_row(out, format, columns, kernel_row(file, *k));
    return out;
  }
  if (rows == TableRows::kRanks) {
    // Ranks are a view of several files (job_view.h); one file is not a job.
    error = "--rows ranks needs the files of a job's ranks (multi_file.h reads them)";
    return {};
  }
  std::optional<v1::TraceSummary> recomputed;
  const v1::TraceSummary* summary = trace_summary(file);
  if (summary == nullptr) {
    recomputed = recompute_summary(file);
    if (recomputed) summary = &*recomputed;
  }
  if (summary == nullptr) {
    error = "the file has no trace summary (the run was made without tracing): --rows families needs one";
    return {};
  }
  for (const v1::FamilyStats& fs : summary->families()) append_row(out, format, columns, family_row(file, current, fs));
  return out;
}

}  // namespace cutriage::tools
