// What each fuzzer of the `cutriage` tool's parsers does with one input, shared by the libFuzzer
// targets (tests/fuzz/) and the Catch2 regression tests that replay every input a fuzzer ever
// crashed on (tests/data/fuzz-regressions/). One definition, so a regression test exercises
// exactly the code path the fuzzer found the bug on.
//
// Each function feeds the bytes to a parser the way the tool does and checks the parser's
// documented contract. It returns the first contract violation as one line ("" when none); the
// fuzzers abort on a violation, the tests fail on it. Crashes, leaks and undefined behaviour are
// left to the sanitizers the fuzzers and the sanitizer CI gate are built with.
#pragma once

#include <cmath>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "cutriage/triage/rule.h"
#include "cutriage/wire/prior_ranking.h"
#include "cutriage/wire/prior_run.h"
#include "cutriage/wire/utf8.h"
#include "diff.h"
#include "file_reader.h"
#include "import.h"
#include "json_check.h"
#include "multi_file.h"
#include "ncu_csv.h"
#include "pprof_export.h"
#include "record_json.h"
#include "report.h"
#include "sass.h"
#include "trace_export.h"

namespace cutriage::fuzz {

// Reads a file as the tool does and renders both views of it; checks the reader's bookkeeping and
// that whatever it salvaged re-encodes into a file that reads back whole.
inline std::string exercise_file_reader(std::string_view bytes) {
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  if (r.bytes_total != bytes.size()) return "bytes_total differs from the input size";
  if (r.bytes_skipped > r.bytes_total) return "skipped more bytes than the input has";
  switch (r.status) {
    case tools::ReadStatus::kOk:
      if (r.bytes_skipped != 0) return "status ok but bytes were skipped";
      break;
    case tools::ReadStatus::kTruncated:
      if (r.bytes_skipped == 0) return "status truncated but no byte was skipped";
      break;
    case tools::ReadStatus::kNotCutriage:
      if (r.file.records_size() != 0) return "refused a file but kept records";
      return r.message.empty() ? "refused a file without a message" : "";
    case tools::ReadStatus::kUnreadable:
      return "read_cutriage_bytes reported an I/O error";
  }
  if (r.file.records_size() == 0 || !r.file.records(0).has_session()) {
    return "accepted a file that does not start with a session header";
  }
  for (const auto& [iid, value] : r.interned) {
    if (tools::lookup(r, iid) != value) return "lookup disagrees with the interned table";
  }
  // The salvaged records are a well-formed file on their own.
  const tools::ReadResult again = tools::read_cutriage_bytes(r.file.SerializeAsString());
  if (again.status != tools::ReadStatus::kOk) return "salvaged records do not read back: " + again.message;
  if (again.file.records_size() != r.file.records_size()) return "salvaged records read back changed";

  tools::ReportOptions brief;
  tools::ReportOptions verbose;
  verbose.verbose = true;
  (void)tools::render_report(r, brief);
  (void)tools::render_report(r, verbose);
  // `cutriage json`, streamed record by record: the text libprotobuf prints for the whole file.
  std::ostringstream streamed;
  const tools::RecordJsonResult json = tools::write_records_json_bytes(bytes, streamed);
  if (json.read.status != r.status || json.read.records_read != r.records_read) {
    return "the streamed JSON read a different file";
  }
  if (json.print_error.empty()) {
    std::string whole;
    google::protobuf::util::JsonPrintOptions print;
    print.add_whitespace = true;
    if (!google::protobuf::util::MessageToJsonString(r.file, &whole, print).ok()) {
      return "a file whose records print one by one does not print whole";
    }
    if (streamed.str() != whole + "\n") return "the streamed JSON differs from the whole file's";
  }

  // `cutriage diff` of the file against itself: every family pairs with itself, none is slower,
  // the gate at 0% holds, and every JSON line is JSON.
  const tools::MultiRead one = tools::group_runs({"f.pb"}, {r});
  if (one.processes.size() != 1) return "one file did not read as one process";
  tools::DiffOptions options;
  options.fail_if_slower_pct = 0;
  const tools::DiffResult diff = tools::compute_diff(tools::run_view(one.processes), tools::run_view(one.processes), options);
  if (!diff.only_before.empty() || !diff.only_after.empty()) return "a family of the file did not pair with itself";
  if (diff.fail) return "the file is slower than itself";
  (void)tools::render_diff_text(diff, options);
  std::istringstream lines(tools::render_diff_json(diff, options));
  for (std::string line; std::getline(lines, line);) {
    if (std::string why = testing::JsonChecker(line).check(); !why.empty()) return "a diff line is not JSON: " + why;
  }
  // The file as two segments of one run: the merge reads back and renders.
  tools::ReadResult seg1 = r, seg2 = r;
  seg1.file.mutable_records(0)->mutable_session()->set_segment_index(1);
  seg1.segment_index = 1;
  seg2.file.mutable_records(0)->mutable_session()->set_segment_index(2);
  seg2.segment_index = 2;
  const tools::MultiRead two = tools::group_runs({"a.pb", "b.pb"}, {seg1, seg2});
  if (two.processes.size() != 1) return "two segments of one run did not merge";
  if (two.processes[0].file.file.records_size() == 0) return "the merged segments hold no record";
  (void)tools::render_runs_report(two.processes, brief);
  return "";
}

// `cutriage triage` end to end on one CSV: import, triage every kernel, encode the file, read it
// back and render the report. Checks the importer's result contract and the file round trip.
inline std::string exercise_ncu_csv(std::string_view text) {
  tools::NcuCsvResult parsed = tools::parse_ncu_csv(text);
  if (parsed.import.has_value() == parsed.error.has_value()) {
    return "parse_ncu_csv must return exactly one of an import and an error";
  }
  if (parsed.error) {
    const std::string& m = parsed.error->message;
    if (m.empty() || m.find('\n') != std::string::npos) return "the error is not one line: " + m;
    return "";
  }
  if (parsed.import->kernels.empty()) return "an import without kernels";
  for (const auto& k : parsed.import->kernels) {
    for (const auto& [name, value] : k.input.metrics.all()) {
      if (!std::isfinite(value.value)) return "metric " + name + " is not finite";
    }
  }
  tools::ImportOptions options;
  std::vector<tools::NcuImport> imports;
  imports.push_back(std::move(*parsed.import));
  const tools::TriageRun run = tools::triage_imports(std::move(imports), options);
  const std::string file = tools::encode_run(run);
  const tools::ReadResult back = tools::read_cutriage_bytes(file);
  if (back.status != tools::ReadStatus::kOk) return "the encoded run does not read back: " + back.message;
  (void)tools::render_report(back, tools::ReportOptions{});
  return "";
}

// The `--timings` file: every entry kept has both names and a usable median.
inline std::string exercise_timings(std::string_view text) {
  std::vector<std::string> warnings;
  const std::vector<tools::TimingEntry> entries = tools::parse_timings(text, warnings);
  for (const auto& e : entries) {
    if (e.program.empty() || e.kernel.empty()) return "an entry without program or kernel";
    if (!std::isfinite(e.median_ns) || e.median_ns < 0) return "an entry with an unusable median";
  }
  for (const auto& w : warnings) {
    if (w.find('\n') != std::string::npos) return "a warning spans lines";
  }
  return "";
}

// The `--thresholds` file: an error leaves the overrides as they were and is one short line
// (quoted text is cut); success only ever sets finite, non-negative values on thresholds some
// rule or session check declares.
inline std::string exercise_thresholds(std::string_view text) {
  triage::Thresholds t;
  t.set("d1.waves_below_one.min_waves", 0.5);  // a prior override an error must not disturb
  const auto before = t.overrides();
  if (auto error = t.parse(text)) {
    if (t.overrides() != before) return "a failed parse changed the overrides";
    if (error->empty() || error->find('\n') != std::string::npos) return "the error is not one line";
    // Two quoted pieces of at most 80 characters (and their lengths), a known key, the wording.
    if (error->size() > 600) return "the error echoes " + std::to_string(error->size()) + " characters";
    return "";
  }
  for (const auto& [key, value] : t.overrides()) {
    if (!std::isfinite(value)) return "override " + key + " is not finite";
    if (value < 0) return "override " + key + " is negative";
    if (before.count(key) != 0) continue;
    const auto dot = key.rfind('.');
    const std::string id = dot == std::string::npos ? std::string() : key.substr(0, dot);
    if (triage::find_rule(id) == nullptr && triage::find_session_check(id) == nullptr) {
      return "override " + key + " names no rule or session check";
    }
  }
  return "";
}

// The agent's own reader of an earlier output (CUTRIAGE_RESUME), which runs inside the
// application: it must not throw, must say why it refused, and whatever it keeps must be usable
// (a name to match, launches to count). Where the tool's libprotobuf reader finds a whole file
// with a session header, the agent's reader must accept it too.
inline std::string exercise_prior_run(std::string_view bytes) {
  std::string error;
  std::optional<wire::PriorRun> run;
  try {
    run = wire::parse_prior_run(bytes, &error);
  } catch (...) {
    return "parse_prior_run threw";
  }
  if (!run) {
    if (error.empty()) return "refused without a reason";
  } else {
    for (const wire::PriorFamily& f : run->families) {
      if (f.mangled_name.empty()) return "kept a family without a name";
      if (f.assembled.empty()) return "kept a family without assembled launches";
      for (const wire::PriorFamily::Value& v : f.metrics) {
        if (v.name.empty()) return "kept a metric without a name";
      }
    }
  }
  // The same bytes as CUTRIAGE_RANKING (the agent reads both kinds of file the same way).
  std::string ranking_error;
  std::optional<wire::PriorRanking> ranking;
  try {
    ranking = wire::parse_prior_ranking(bytes, &ranking_error);
  } catch (...) {
    return "parse_prior_ranking threw";
  }
  if (!ranking && ranking_error.empty()) return "ranking refused without a reason";
  if (ranking) {
    for (size_t i = 0; i < ranking->families.size(); ++i) {
      if (ranking->families[i].mangled_name.empty()) return "ranked a family without a name";
      if (ranking->families[i].rank != i + 1) return "ranks out of order";
    }
  }
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  if (r.status == tools::ReadStatus::kOk && r.file.records_size() > 0 && r.file.records(0).has_session() && !run) {
    return "refused a file the tool reads whole: " + error;
  }
  if (r.status == tools::ReadStatus::kOk && r.file.records_size() > 0 && r.file.records(0).has_session() &&
      r.trace_summary_record >= 0 && !ranking) {
    return "refused the ranking of a file the tool reads whole: " + ranking_error;
  }
  return "";
}

// `cutriage trace` on whatever the reader salvages: an error is one line and says "no trace" only
// for a file without trace chunks; otherwise the output is one valid JSON value in UTF-8 (what
// Perfetto must be able to load, whatever the names in the file hold).
inline std::string exercise_trace_export(std::string_view bytes) {
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  if (r.status != tools::ReadStatus::kOk && r.status != tools::ReadStatus::kTruncated) return "";
  std::ostringstream out;
  tools::TraceExportStats stats;
  const std::optional<tools::TraceExportError> error = tools::export_chrome_trace(r, out, &stats);
  if (error) {
    if (error->message.empty() || error->message.find('\n') != std::string::npos) {
      return "the trace export's error is not one line: " + error->message;
    }
    if (error->kind == tools::TraceExportError::Kind::kWriteFailed) return "a write to memory failed";
    if (!r.trace_records.empty()) return "'no trace' for a file with trace chunks";
    return "";
  }
  if (r.trace_records.empty()) return "a trace exported from a file without trace chunks";
  const std::string json = out.str();
  if (!wire::is_valid_utf8(json)) return "the trace JSON is not UTF-8";
  if (std::string why = testing::JsonChecker(json).check(); !why.empty()) return "the trace is not JSON: " + why;
  return "";
}

// A SASS resolver that never finds nvdisasm (so a fuzz input never starts a process).
inline tools::NvdisasmSearch no_nvdisasm() {
  tools::NvdisasmSearch search;
  search.getenv = [](const char* name) -> const char* {
    return std::string_view(name) == "CUTRIAGE_NVDISASM" ? "/nonexistent/cutriage-fuzz/nvdisasm" : nullptr;
  };
  search.fallback_dirs.clear();
  return search;
}

// `cutriage pprof` on whatever the reader salvages: an error is one line; a profile keeps pprof's
// own rules (string 0 empty, every index and id it uses defined, as many values per sample as
// sample types), and the gzip export starts with gzip's magic.
inline std::string exercise_pprof_export(std::string_view bytes) {
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  if (r.status != tools::ReadStatus::kOk && r.status != tools::ReadStatus::kTruncated) return "";
  tools::SassResolver sass(no_nvdisasm());
  tools::PprofOptions options;
  options.source_name = "fuzz.pb";
  perftools::profiles::Profile p;
  tools::PprofStats stats;
  const std::optional<tools::PprofError> error = tools::build_pprof(r, options, sass, p, &stats);
  if (error) {
    if (error->message.empty() || error->message.find('\n') != std::string::npos) {
      return "the pprof export's error is not one line: " + error->message;
    }
    if (error->kind == tools::PprofError::Kind::kWriteFailed) return "building a profile in memory failed";
    return "";
  }
  const auto strings = static_cast<int64_t>(p.string_table_size());
  if (strings == 0 || !p.string_table(0).empty()) return "string_table[0] is not \"\"";
  for (const std::string& s : p.string_table()) {
    if (!wire::is_valid_utf8(s)) return "a string of the profile is not UTF-8";
  }
  auto bad_index = [strings](int64_t i) { return i < 0 || i >= strings; };
  for (const auto& t : p.sample_type()) {
    if (bad_index(t.type()) || bad_index(t.unit())) return "a sample type names no string";
  }
  std::set<uint64_t> functions;
  for (const auto& f : p.function()) {
    if (f.id() == 0 || !functions.insert(f.id()).second) return "a function id is 0 or repeated";
    if (bad_index(f.name()) || bad_index(f.system_name()) || bad_index(f.filename())) return "a function names no string";
  }
  std::set<uint64_t> locations;
  for (const auto& l : p.location()) {
    if (l.id() == 0 || !locations.insert(l.id()).second) return "a location id is 0 or repeated";
    for (const auto& line : l.line()) {
      if (functions.count(line.function_id()) == 0) return "a location's line names no function";
    }
  }
  if (p.sample_size() == 0) return "a profile without samples was not refused";
  for (const auto& s : p.sample()) {
    if (s.value_size() != p.sample_type_size()) return "a sample has not one value per sample type";
    if (s.location_id_size() == 0) return "a sample without a stack";
    for (uint64_t id : s.location_id()) {
      if (locations.count(id) == 0) return "a sample names no location";
    }
    for (const auto& label : s.label()) {
      if (bad_index(label.key()) || bad_index(label.str())) return "a label names no string";
    }
  }
  for (int64_t c : p.comment()) {
    if (bad_index(c)) return "a comment names no string";
  }
  if (stats.stacks != static_cast<uint64_t>(p.sample_size())) return "the stats count other stacks than the profile holds";
  std::ostringstream gz;
  tools::SassResolver sass_again(no_nvdisasm());
  if (tools::export_pprof(r, options, sass_again, gz)) return "the gzip export failed where the profile was built";
  const std::string z = gz.str();
  if (z.size() < 18 || z[0] != '\x1f' || z[1] != '\x8b') return "the export is not gzip";
  return "";
}

// nvdisasm's listing: each instruction is one line of text, trimmed, blanks squeezed to single
// spaces, without the ';' that ends it; parsing is deterministic.
inline std::string exercise_nvdisasm(std::string_view text) {
  const tools::SassListing listing = tools::parse_nvdisasm(text);
  for (const auto& [offset, instruction] : listing) {
    if (instruction.empty()) return "an empty instruction at " + std::to_string(offset);
    if (instruction.find_first_of("\n\r\t;") != std::string::npos) return "a line break, tab or ';' kept";
    if (instruction.front() == ' ' || instruction.back() == ' ') return "an instruction not trimmed";
    if (instruction.find("  ") != std::string::npos) return "blanks not squeezed";
  }
  if (tools::parse_nvdisasm(text) != listing) return "parse_nvdisasm is not deterministic";
  return "";
}

}  // namespace cutriage::fuzz
