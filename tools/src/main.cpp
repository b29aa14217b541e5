// cutriage: triage Nsight Compute captures and read cutriage files.
//
// Exit codes (stable, scripts rely on them):
//   0 ok; 1 usage error; 2 input missing or unreadable; 3 not a cutriage file;
//   4 truncated cutriage file (complete records were used); 5 CSV not usable;
//   6 cannot write the output; 7 bad thresholds file; 10 the file has no trace (`trace`,
//   `report --rows families`) or no PC samples (`pprof`).
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cutriage/base/read_file.h"
#include "cutriage/triage/rule.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "html_report.h"
#include "import.h"
#include "ncu_csv.h"
#include "output_file.h"
#include "pprof_export.h"
#include "report.h"
#include "run.h"
#include "table_export.h"
#include "trace_export.h"

namespace {

using namespace cutriage;

enum Exit : int {
  kOk = 0,
  kUsage = 1,
  kUnreadable = 2,
  kNotCutriage = 3,
  kTruncated = 4,
  kBadCsv = 5,
  kWriteFailed = 6,
  kBadThresholds = 7,
  // 8 and 9 are `run`'s (agent library not found, application not started).
  kNoTrace = 10,    // `trace`: the file has no trace; `pprof`: it has no PC samples
  kNoSamples = 10,
};

// As the agent's CUTRIAGE_THRESHOLDS (agent/src/injection.cpp): a real file is a few dozen lines.
constexpr size_t kMaxThresholdsFileBytes = size_t{1} << 20;

constexpr const char* kMainHelp =
    "usage: cutriage <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [options] APP [ARGS...]       run APP with the agent injected, then print the report\n"
    "  triage --ncu-csv FILE... -o OUT.pb  diagnose Nsight Compute raw CSV captures\n"
    "  report FILE.pb [--format F]       human summary, kernels sorted by time (or JSON Lines, CSV)\n"
    "  json FILE.pb                      the file's records in the proto3 JSON mapping\n"
    "  trace FILE.pb [-o OUT.json]       the GPU timeline as Chrome trace JSON (Perfetto)\n"
    "  pprof FILE.pb [-o OUT.pb.gz]      PC samples (stall reasons per line and SASS) for pprof\n"
    "  rules                             list the triage rules and their thresholds\n"
    "  metrics [--ncu]                   list the metrics the rules read\n"
    "\n"
    "`cutriage <command> --help` describes each command.\n"
    "exit codes: 0 ok, 1 usage, 2 unreadable input, 3 not a cutriage file, 4 truncated file,\n"
    "            5 unusable CSV, 6 cannot write output, 7 bad thresholds file,\n"
    "            10 no trace in the file (`trace`), no PC samples (`pprof`);\n"
    "            `run` returns the application's own status (8 agent library not found,\n"
    "            9 application could not be started)\n";

constexpr const char* kTriageHelp =
    "usage: cutriage triage --ncu-csv FILE [FILE...] [-o OUT.pb] [options]\n"
    "\n"
    "Reads an export of `ncu --csv --page raw --print-units base` (one row per profiled launch),\n"
    "runs the Compute Triage decision tree on every kernel and writes a cutriage file.\n"
    "\n"
    "  --ncu-csv FILE...     the CSV export(s) (required); several files make one session\n"
    "  -o, --output OUT.pb   where to write the diagnoses (default: FILE with .pb appended)\n"
    "  --timings FILE        unprofiled kernel durations, lines `program,kernel,median_ns,count`,\n"
    "                        for Decision 0's duration check\n"
    "  --clock-control C     how ncu ran: none | locked (ncu's default) | unknown (default)\n"
    "  --thresholds FILE     threshold overrides, lines `rule.threshold = value`\n"
    "  --report              also print the report to stdout\n";

constexpr const char* kReportHelp =
    "usage: cutriage report FILE.pb [--verbose] [--top N] [--format text|json|csv]\n"
    "                                [--rows kernels|families] [--html OUT.html]\n"
    "\n"
    "Per kernel, longest first: the verdict, how far to trust it, the path through the decisions,\n"
    "the numbers behind the verdict, the next action and what it could buy.\n"
    "  --verbose        list every check of every visited decision, with not-evaluated reasons\n"
    "  --top N          only the N longest kernels\n"
    "  --format F       text (default): the report above; json: JSON Lines, one object per row;\n"
    "                   csv: RFC 4180 with a header row. Columns: docs/exports.md\n"
    "  --rows R         with json or csv: kernels (default), one row per profiled kernel, or\n"
    "                   families, one row per kernel family of the trace summary\n"
    "  --html OUT.html  write the report as one self-contained HTML page instead (charts inline,\n"
    "                   nothing loaded from the network; - for stdout): docs/html-report.md\n"
    "exit code 10 for --rows families when the file has no trace.\n";

constexpr const char* kJsonHelp =
    "usage: cutriage json FILE.pb\n"
    "\n"
    "Prints the file's records (session header, interned strings, kernels with diagnoses) in the\n"
    "proto3 JSON mapping of cutriage.v1, for scripts.\n";

constexpr const char* kTraceHelp =
    "usage: cutriage trace FILE.pb [-o OUT.json]\n"
    "\n"
    "Writes the kernels, copies and NVTX ranges the agent traced as Chrome trace event JSON, which\n"
    "the Perfetto UI (ui.perfetto.dev), its trace processor and chrome://tracing open: one process\n"
    "per GPU with one thread per stream, profiled launches in category \"profiled\", and a \"CPU\"\n"
    "process with one thread per OS thread holding its NVTX ranges. Times are microseconds from\n"
    "the first event.\n"
    "  -o, --output OUT.json   where to write it (default: FILE.pb with .trace.json appended;\n"
    "                          - for stdout)\n"
    "exit code 10 when the file has no trace (the run was made without tracing).\n";

constexpr const char* kPprofHelp =
    "usage: cutriage pprof FILE.pb [-o OUT.pb.gz] [--kernel NAME]\n"
    "\n"
    "Writes the warp-state samples of PC sampling as a gzip-compressed pprof profile, for\n"
    "`go tool pprof`, Perfetto or speedscope. Stacks, root to leaf: kernel (demangled name) >\n"
    "source line (\"stencil.cu:42\", or \"pc 0x01a0\" without -lineinfo) > SASS PC (\"0x01a0\n"
    "LDG.E ...\", the SASS from nvdisasm when it is installed) > warp state (\"long_scoreboard\").\n"
    "Two values: samples, and cycles = samples x 2^N (one sample per SM every 2^N cycles), the\n"
    "default, which compares kernels sampled at different periods. Samples the device counted\n"
    "but no PC holds are under \"(samples not attributed to a PC)\", so the total is the sum of\n"
    "the report's per-launch totals. The issue states selected and not_selected are kept as\n"
    "leaves; every sample is labelled kind=stall, kind=issue or kind=unattributed\n"
    "(`pprof -tagignore=kind=issue` shows the stalls only).\n"
    "  -o, --output OUT.pb.gz   where to write it (default: FILE.pb with .pprof.pb.gz appended;\n"
    "                           - for stdout)\n"
    "  --kernel NAME            only kernels whose mangled or demangled name contains NAME\n"
    "nvdisasm is looked for in $CUTRIAGE_NVDISASM, $PATH, $CUDA_HOME/bin, /usr/local/cuda/bin.\n"
    "exit code 10 when the file (or the kernels NAME selects) has no PC samples.\n";

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

int usage_error(const std::string& message, const char* help) {
  std::cerr << "cutriage: " << message << "\n\n" << help;
  return kUsage;
}

bool read_text(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return !f.bad();
}

// -o naming one of the command's inputs would destroy it (before: silently overwritten).
int refuse_input_as_output(const std::string& out_path, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    if (!in.empty() && tools::same_file(out_path, in)) {
      std::cerr << "cutriage: the output '" << out_path << "' is the input '" << in
                << "'; name another file with -o\n";
      return kUsage;
    }
  }
  return kOk;
}

int exit_for(tools::ReadStatus status) {
  switch (status) {
    case tools::ReadStatus::kOk: return kOk;
    case tools::ReadStatus::kTruncated: return kTruncated;
    case tools::ReadStatus::kNotCutriage: return kNotCutriage;
    case tools::ReadStatus::kUnreadable: return kUnreadable;
  }
  return kUnreadable;
}

// Reads a cutriage file; prints the one-line problem. Returns false when nothing is usable.
bool load(const std::string& path, tools::ReadResult& result) {
  result = tools::read_cutriage_file(path);
  if (result.status == tools::ReadStatus::kOk) return true;
  std::cerr << "cutriage: " << path << ": " << result.message << "\n";
  return result.status == tools::ReadStatus::kTruncated;
}

int cmd_triage(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kTriageHelp;
    return kOk;
  }
  std::vector<std::string> csv_paths;
  std::string out_path, timings_path, thresholds_path;
  bool print_report = false;
  tools::ImportOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& dst) {
      if (i + 1 >= args.size()) return false;
      dst = args[++i];
      return true;
    };
    if (a == "--ncu-csv") {
      std::string p;
      if (!value(p)) return usage_error("--ncu-csv needs a file", kTriageHelp);
      csv_paths.push_back(p);
    } else if (a == "-o" || a == "--output") {
      if (!value(out_path)) return usage_error(a + " needs a file", kTriageHelp);
    } else if (a == "--timings") {
      if (!value(timings_path)) return usage_error("--timings needs a file", kTriageHelp);
    } else if (a == "--thresholds") {
      if (!value(thresholds_path)) return usage_error("--thresholds needs a file", kTriageHelp);
    } else if (a == "--clock-control") {
      std::string c;
      if (!value(c)) return usage_error("--clock-control needs a value", kTriageHelp);
      if (c == "none") {
        options.clock_control = triage::ClockControl::kNone;
      } else if (c == "locked" || c == "base") {
        options.clock_control = triage::ClockControl::kLocked;
      } else if (c != "unknown") {
        return usage_error("--clock-control accepts none, locked or unknown, not '" + c + "'",
                           kTriageHelp);
      }
    } else if (a == "--report") {
      print_report = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", kTriageHelp);
    } else if (!csv_paths.empty()) {
      csv_paths.push_back(a);  // `--ncu-csv a.csv b.csv`: more captures of the same session
    } else {
      return usage_error("unexpected argument '" + a + "' (CSV files follow --ncu-csv)", kTriageHelp);
    }
  }
  if (csv_paths.empty()) return usage_error("--ncu-csv FILE is required", kTriageHelp);
  if (out_path.empty()) out_path = csv_paths.front() + ".pb";
  std::vector<std::string> inputs = csv_paths;
  inputs.push_back(timings_path);
  inputs.push_back(thresholds_path);
  if (int rc = refuse_input_as_output(out_path, inputs); rc != kOk) return rc;
  if (!thresholds_path.empty()) {
    // Bounded and regular files only, as the agent reads CUTRIAGE_THRESHOLDS: /dev/zero here
    // ended in std::bad_alloc.
    base::Result<std::string> ttext = base::read_regular_file(thresholds_path, kMaxThresholdsFileBytes);
    if (!ttext.is_ok()) {
      std::cerr << "cutriage: --thresholds '" << thresholds_path << "': " << ttext.status().message() << "\n";
      return ttext.status().code() == base::StatusCode::kUnavailable ? kUnreadable : kBadThresholds;
    }
    if (auto err = options.triage.thresholds.parse(ttext.value())) {
      std::cerr << "cutriage: " << thresholds_path << ": " << *err << "\n";
      return kBadThresholds;
    }
  }
  if (!timings_path.empty()) {
    std::string ttext;
    if (!read_text(timings_path, ttext)) {
      std::cerr << "cutriage: cannot read timings file '" << timings_path << "'\n";
      return kUnreadable;
    }
    std::vector<std::string> warnings;
    options.timings = tools::parse_timings(ttext, warnings);
    for (const std::string& w : warnings) std::cerr << "cutriage: " << timings_path << ": " << tools::terminal_safe(w, false) << "\n";
  }

  // Two passes over each CSV, one row in memory at a time (before: the text, every row's tokens
  // and every kernel were held at once, 680 KB a row). The first gives the totals time shares
  // need and each capture's identity for the session header; the second triages each row and
  // writes its record. A CSV that is not a regular file (a pipe) is read into memory once, as it
  // cannot be read twice.
  struct CsvInput {
    std::string path;
    std::string text;  // a pipe's whole text; empty for a regular file, read from its path
    bool in_memory = false;
    tools::NcuImport import;  // identity, GPUs and warnings; no kernels
  };
  std::vector<CsvInput> csvs;
  tools::ImportTotals totals;
  // Runs `each` on every kernel of the CSV; prints the problem and returns its exit code.
  auto stream_csv = [](CsvInput& csv, const auto& each) -> int {
    std::ifstream file;
    std::optional<tools::StringLineSource> text_lines;
    std::optional<tools::StreamLineSource> file_lines;
    tools::CsvLineSource* source = nullptr;
    if (csv.in_memory) {
      source = &text_lines.emplace(csv.text);
    } else {
      file.open(csv.path, std::ios::binary);
      if (!file) {
        std::cerr << "cutriage: cannot read '" << csv.path << "'\n";
        return kUnreadable;
      }
      source = &file_lines.emplace(file);
    }
    tools::NcuCsvReader reader(*source);
    std::optional<tools::NcuCsvError> error = reader.open();
    if (!error) {
      wire::KernelRecord k;
      while (reader.next(k)) each(k);
    }
    if (file.bad()) {
      std::cerr << "cutriage: cannot read '" << csv.path << "'\n";
      return kUnreadable;
    }
    tools::NcuCsvResult done;
    if (!error) done = reader.finish();
    if (!error && done.error) error = done.error;
    if (error) {
      std::cerr << "cutriage: " << csv.path << ": " << error->message << "\n";
      return kBadCsv;
    }
    csv.import = std::move(*done.import);
    return kOk;
  };
  for (const std::string& csv_path : csv_paths) {
    CsvInput& csv = csvs.emplace_back();
    csv.path = csv_path;
    struct stat st {};
    if (::stat(csv_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      if (!read_text(csv_path, csv.text)) {
        std::cerr << "cutriage: cannot read '" << csv_path << "'\n";
        return kUnreadable;
      }
      csv.in_memory = true;
    }
    int rc = kOk;
    try {
      rc = stream_csv(csv, [&](const wire::KernelRecord& k) {
        totals.total_ns += k.duration_ns;
        ++totals.kernels;
      });
    } catch (const std::exception& e) {
      std::cerr << "cutriage: " << csv_path << ": internal error while reading the ncu CSV: " << e.what() << "\n";
      return kBadCsv;
    }
    if (rc != kOk) return rc;
    if (!options.source_path.empty()) options.source_path += " ";
    options.source_path += csv_path;
  }

  wire::SessionInfo session = tools::new_session(options);
  for (CsvInput& csv : csvs) tools::add_import_identity(session, csv.import);
  wire::RecordEncoder enc;
  std::string kept;  // the file's bytes again, for --report only
  size_t kernels = 0;
  {
    tools::OutputFile out;
    std::string error;
    auto write = [&](const std::string& bytes) {
      if (!error.empty()) return;
      out.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (print_report) kept += bytes;
    };
    if (out.open(out_path, &error)) write(enc.session(session));
    for (CsvInput& csv : csvs) {
      for (const std::string& w : csv.import.warnings) {
        std::cerr << "cutriage: " << tools::terminal_safe(w, false) << "\n";
      }
      std::vector<std::string> warnings;
      // The first pass read this CSV whole: only the file changing in between fails here.
      const int rc = stream_csv(csv, [&](wire::KernelRecord& k) {
        tools::triage_imported(k, csv.import.process_name, totals, options, warnings);
        for (const std::string& w : warnings) std::cerr << "cutriage: " << tools::terminal_safe(w, false) << "\n";
        warnings.clear();
        write(enc.kernel(k));
        ++kernels;
      });
      if (rc != kOk) return rc;
    }
    if (!error.empty() || !out.commit(&error)) {
      std::cerr << "cutriage: cannot write '" << out_path << "': " << error << "\n";
      return kWriteFailed;
    }
  }
  std::cerr << "cutriage: " << kernels << " kernel" << (kernels == 1 ? "" : "s")
            << " triaged -> " << out_path << "\n";
  if (print_report) {
    tools::ReadResult r = tools::read_cutriage_bytes(kept);
    std::cout << tools::render_report(r, {});
  }
  return kOk;
}

int cmd_report(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kReportHelp;
    return kOk;
  }
  std::string path;
  tools::ReportOptions options;
  std::optional<tools::TableFormat> format;  // nullopt: text
  std::optional<tools::TableRows> rows;
  std::string html_path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--html") {
      if (i + 1 >= args.size() || args[i + 1].empty()) return usage_error("--html needs a file", kReportHelp);
      html_path = args[++i];
    } else if (args[i] == "--format") {
      if (i + 1 >= args.size()) return usage_error("--format needs a value: text, json or csv", kReportHelp);
      const std::string& f = args[++i];
      if (f == "json" || f == "jsonl") {
        format = tools::TableFormat::kJsonLines;
      } else if (f == "csv") {
        format = tools::TableFormat::kCsv;
      } else if (f != "text") {
        return usage_error("--format accepts text, json or csv, not '" + f + "'", kReportHelp);
      }
    } else if (args[i] == "--rows") {
      if (i + 1 >= args.size()) return usage_error("--rows needs a value: kernels or families", kReportHelp);
      const std::string& r = args[++i];
      if (r == "kernels") {
        rows = tools::TableRows::kKernels;
      } else if (r == "families") {
        rows = tools::TableRows::kFamilies;
      } else {
        return usage_error("--rows accepts kernels or families, not '" + r + "'", kReportHelp);
      }
    } else if (args[i] == "--verbose" || args[i] == "-v") {
      options.verbose = true;
    } else if (args[i] == "--top") {
      if (i + 1 >= args.size()) return usage_error("--top needs a number", kReportHelp);
      try {
        options.max_kernels = std::stoul(args[++i]);
      } catch (...) {
        return usage_error("--top needs a number, not '" + args[i] + "'", kReportHelp);
      }
    } else if (!args[i].empty() && args[i][0] == '-') {
      return usage_error("unknown option '" + args[i] + "'", kReportHelp);
    } else if (path.empty()) {
      path = args[i];
    } else {
      return usage_error("one file at a time", kReportHelp);
    }
  }
  if (path.empty()) return usage_error("which file?", kReportHelp);
  if (rows && !format) return usage_error("--rows goes with --format json or csv", kReportHelp);
  if (!html_path.empty() && format) return usage_error("--html goes without --format", kReportHelp);
  if (!html_path.empty() && html_path != "-") {
    if (int rc = refuse_input_as_output(html_path, {path}); rc != kOk) return rc;
  }
  tools::ReadResult r;
  if (!load(path, r)) return exit_for(r.status);
  if (!html_path.empty()) {
    std::string error;
    if (!tools::write_html_report(r, {}, html_path, error)) {
      std::cerr << "cutriage: cannot write '" << html_path << "': " << error << "\n";
      return kWriteFailed;
    }
    if (html_path != "-") std::cerr << "cutriage: HTML report -> " << html_path << "\n";
    return exit_for(r.status);
  }
  if (format) {
    std::string error;
    const std::string table = tools::render_table(r, *format, rows.value_or(tools::TableRows::kKernels), error);
    if (!error.empty()) {
      std::cerr << "cutriage: " << path << ": " << error << "\n";
      return kNoTrace;
    }
    std::cout << table;
    return exit_for(r.status);
  }
  std::cout << tools::render_report(r, options);
  return exit_for(r.status);
}

int cmd_json(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kJsonHelp;
    return kOk;
  }
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    return usage_error("json takes exactly one file", kJsonHelp);
  }
  tools::ReadResult r;
  if (!load(args[0], r)) return exit_for(r.status);
  std::string error;
  std::string json = tools::render_json(r, error);
  if (!error.empty()) {
    std::cerr << "cutriage: " << args[0] << ": " << error << "\n";
    return kNotCutriage;
  }
  std::cout << json << "\n";
  return exit_for(r.status);
}

int cmd_trace(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kTraceHelp;
    return kOk;
  }
  std::string path, out_path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      if (i + 1 >= args.size()) return usage_error(a + " needs a file", kTraceHelp);
      out_path = args[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", kTraceHelp);
    } else if (path.empty()) {
      path = a;
    } else {
      return usage_error("one file at a time", kTraceHelp);
    }
  }
  if (path.empty()) return usage_error("which file?", kTraceHelp);
  if (out_path.empty()) out_path = path + ".trace.json";
  if (out_path != "-") {
    if (int rc = refuse_input_as_output(out_path, {path}); rc != kOk) return rc;
  }
  tools::ReadResult r;
  if (!load(path, r)) return exit_for(r.status);
  if (r.trace_records.empty()) {
    // Checked before the output is opened, so no empty file is left behind.
    std::cerr << "cutriage: " << path
              << ": the file has no trace: the run was made without tracing, so there is no "
                 "timeline to export\n";
    return kNoTrace;
  }
  std::optional<tools::TraceExportError> error;
  tools::TraceExportStats stats;
  if (out_path == "-") {
    error = tools::export_chrome_trace(r, std::cout, &stats);
  } else {
    // Committed only when complete: a failed write leaves the name as it was (output_file.h).
    tools::OutputFile out;
    std::string why;
    if (!out.open(out_path, &why)) {
      std::cerr << "cutriage: cannot write '" << out_path << "': " << why << "\n";
      return kWriteFailed;
    }
    error = tools::export_chrome_trace(r, out.stream(), &stats);
    if (!error && !out.commit(&why)) error = tools::TraceExportError{tools::TraceExportError::Kind::kWriteFailed, why};
  }
  if (error) {
    if (error->kind == tools::TraceExportError::Kind::kNoTrace) {
      std::cerr << "cutriage: " << path << ": " << error->message << "\n";
      return kNoTrace;
    }
    std::cerr << "cutriage: cannot write '" << out_path << "'" << (error->message.empty() ? "" : ": ")
              << error->message << "\n";
    return kWriteFailed;
  }
  if (out_path != "-") {
    std::cerr << "cutriage: " << stats.kernels << " kernels, " << stats.copies << " copies, "
              << stats.nvtx_ranges << " NVTX ranges";
    if (stats.placed_profiled != 0) {
      std::cerr << ", " << stats.placed_profiled << " profiled launches placed from their records";
    }
    std::cerr << " -> " << out_path << "\n";
  }
  return exit_for(r.status);
}

int cmd_pprof(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kPprofHelp;
    return kOk;
  }
  std::string path, out_path;
  tools::PprofOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      if (i + 1 >= args.size()) return usage_error(a + " needs a file", kPprofHelp);
      out_path = args[++i];
    } else if (a == "--kernel") {
      if (i + 1 >= args.size() || args[i + 1].empty()) return usage_error("--kernel needs a name", kPprofHelp);
      options.kernel = args[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'", kPprofHelp);
    } else if (path.empty()) {
      path = a;
    } else {
      return usage_error("one file at a time", kPprofHelp);
    }
  }
  if (path.empty()) return usage_error("which file?", kPprofHelp);
  if (out_path.empty()) out_path = path + ".pprof.pb.gz";
  if (out_path != "-") {
    if (int rc = refuse_input_as_output(out_path, {path}); rc != kOk) return rc;
  }
  options.source_name = path;
  tools::ReadResult r;
  if (!load(path, r)) return exit_for(r.status);
  // Made in memory before the output is opened, so that no empty file is left behind when
  // there is nothing to export.
  tools::SassResolver sass;
  tools::PprofStats stats;
  std::ostringstream buffer;
  if (std::optional<tools::PprofError> error = tools::export_pprof(r, options, sass, buffer, &stats)) {
    if (error->kind == tools::PprofError::Kind::kNoSamples) {
      std::cerr << "cutriage: " << path << ": " << error->message << "\n";
      return kNoSamples;
    }
    std::cerr << "cutriage: cannot encode the profile"
              << (error->message.empty() ? "" : ": " + error->message) << "\n";
    return kWriteFailed;
  }
  for (const std::string& note : stats.notes) std::cerr << "cutriage: note: " << note << "\n";
  const std::string compressed = buffer.str();
  if (out_path == "-") {
    std::cout.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "cutriage: cannot write to stdout\n";
      return kWriteFailed;
    }
    return exit_for(r.status);
  }
  {
    // Committed only when complete: a failed write leaves the name as it was (output_file.h).
    tools::OutputFile out;
    std::string why;
    if (out.open(out_path, &why)) out.stream().write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
    if (!why.empty() || !out.commit(&why)) {
      std::cerr << "cutriage: cannot write '" << out_path << "': " << why << "\n";
      return kWriteFailed;
    }
  }
  std::cerr << "cutriage: " << stats.kernels << (stats.kernels == 1 ? " kernel, " : " kernels, ")
            << stats.samples << " samples (" << stats.stall_samples << " stalls";
  if (stats.unattributed_samples != 0) std::cerr << ", " << stats.unattributed_samples << " not attributed to a PC";
  std::cerr << "), " << stats.cycles << " SM cycles, in " << stats.stacks << " stacks -> " << out_path << "\n";
  return exit_for(r.status);
}

int cmd_rules() {
  for (const triage::Rule& rule : triage::all_rules()) {
    std::cout << rule.id << "  [" << triage::to_string(rule.decision) << "] " << rule.title << "\n";
    for (const triage::MetricNeed& m : rule.metrics) {
      std::cout << "    " << (m.required ? "needs    " : "optional ") << m.name << "\n";
    }
    for (const triage::ThresholdDef& t : rule.thresholds) {
      std::cout << "    threshold " << rule.id << "." << t.name << " = " << t.value;
      if (!t.note.empty()) std::cout << "  (" << t.note << ")";
      std::cout << "\n";
    }
  }
  // The session checks of the timeline: no counters, thresholds overridden the same way.
  for (const triage::SessionCheckDef& check : triage::session_checks()) {
    std::cout << check.id << "  [" << triage::to_string(check.decision) << "] " << check.title << "\n";
    std::cout << "    reads    the kernel and copy trace\n";
    for (const triage::ThresholdDef& t : check.thresholds) {
      std::cout << "    threshold " << check.id << "." << t.name << " = " << t.value;
      if (!t.note.empty()) std::cout << "  (" << t.note << ")";
      std::cout << "\n";
    }
  }
  return kOk;
}

int cmd_metrics(const std::vector<std::string>& args) {
  bool ncu = !args.empty() && args[0] == "--ncu";
  if (!args.empty() && !ncu) {
    return usage_error("metrics takes only --ncu", "usage: cutriage metrics [--ncu]\n");
  }
  std::vector<std::string> names = triage::all_metric_names();
  std::string sep = ncu ? "," : "\n";
  bool first = true;
  for (const std::string& n : names) {
    // cutriage__* are cutriage's own timeline quantities; ncu cannot collect them.
    if (ncu && n.rfind("cutriage__", 0) == 0) continue;
    if (!first) std::cout << sep;
    std::cout << n;
    first = false;
  }
  std::cout << "\n";
  return kOk;
}

// A report that did not reach stdout (`cutriage report x.pb > /dev/full`) is a failed command,
// not a success: before, the exit code was 0.
int checked_stdout(int rc) {
  std::cout.flush();
  if (std::cout) return rc;
  std::cerr << "cutriage: cannot write to stdout\n";
  return rc == kOk || rc == kTruncated ? kWriteFailed : rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kMainHelp;
    return kUsage;
  }
  std::string cmd = args.front();
  args.erase(args.begin());
  try {
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      std::cout << kMainHelp;
      return kOk;
    }
    if (cmd == "--version") {
      std::cout << "cutriage " << CUTRIAGE_VERSION << "\n";
      return kOk;
    }
    if (cmd == "run") return tools::run_command(args, "/proc/self/exe");
    int rc = -1;
    if (cmd == "triage") rc = cmd_triage(args);
    if (cmd == "report") rc = cmd_report(args);
    if (cmd == "json") rc = cmd_json(args);
    if (cmd == "trace") rc = cmd_trace(args);
    if (cmd == "pprof") rc = cmd_pprof(args);
    if (cmd == "rules") rc = cmd_rules();
    if (cmd == "metrics") rc = cmd_metrics(args);
    if (rc >= 0) return checked_stdout(rc);
  } catch (const std::exception& e) {
    std::cerr << "cutriage: internal error: " << e.what() << "\n";
    return kUsage;
  }
  std::cerr << "cutriage: unknown command '" << cmd << "'\n\n" << kMainHelp;
  return kUsage;
}
