#include "commands.h"

#include <sys/stat.h>

#include <cstdlib>

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "command_support.h"
#include "cutriage/base/read_file.h"
#include "cutriage/triage/rule.h"
#include "cutriage/wire/writer.h"
#include "diff.h"
#include "file_reader.h"
#include "html_report.h"
#include "html_timeline.h"
#include "import.h"
#include "merge.h"
#include "multi_file.h"
#include "ncu_csv.h"
#include "output_file.h"
#include "record_json.h"
#include "report.h"
#include "run.h"
#include "table_export.h"

namespace cutriage::tools::commands {

namespace {

// As the agent's CUTRIAGE_THRESHOLDS (agent/src/injection.cpp): a real file is a few dozen lines.
constexpr size_t kMaxThresholdsFileBytes = size_t{1} << 20;
// `merge` holds each input whole (wire::parse_prior_run reads bytes): an always-on file is a few
// MB, a resuming agent reads at most 256 MiB of one.
constexpr size_t kMaxMergeInputBytes = size_t{1} << 30;

}  // namespace

// ---------------------------------------------------------------------------------------------
// triage

void bind_triage(CLI::App& app, TriageOptions& o) {
  app.add_option("--ncu-csv", o.csv_paths,
                 "the export(s) of `ncu --csv --page raw --print-units base` (required); several files, "
                 "after one --ncu-csv or each after its own, make one session")
      ->type_name("FILE...")
      ->required()
      ->allow_extra_args()
      ->check(cli::not_empty());
  app.add_option("-o,--output", o.output, "where to write the diagnoses (default: the first CSV's name with .pb appended)")
      ->type_name("OUT.pb")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--timings", o.timings,
                 "unprofiled kernel durations, lines `program,kernel,median_ns,count`, for Decision 0's "
                 "duration check")
      ->type_name("FILE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--clock-control", o.clock_control,
                 "how ncu ran: none, locked (ncu's default) or unknown (the default)")
      ->type_name("C")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::one_of({"none", "locked", "unknown"}, {"base"}));
  app.add_option("--thresholds", o.thresholds, "threshold overrides, lines `rule.threshold = value`")
      ->type_name("FILE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("--report", o.report, "also print the report to stdout");
}

int cmd_triage(const TriageOptions& o) {
  const std::vector<std::string>& csv_paths = o.csv_paths;
  std::string out_path = o.output;
  const std::string& timings_path = o.timings;
  const std::string& thresholds_path = o.thresholds;
  const bool print_report = o.report;
  tools::ImportOptions options;
  if (o.clock_control == "none") {
    options.clock_control = triage::ClockControl::kNone;
  } else if (o.clock_control == "locked" || o.clock_control == "base") {
    options.clock_control = triage::ClockControl::kLocked;
  }
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

// ---------------------------------------------------------------------------------------------
// report

void bind_report(CLI::App& app, ReportOptions& o) {
  app.add_option("FILE.pb", o.files,
                 "cutriage files (the agent's output, or `cutriage triage`'s); several: the segments of one "
                 "process are merged, processes are reported apart")
      ->required();
  app.add_flag("-v,--verbose", o.verbose, "list every check of every visited decision, with not-evaluated reasons");
  app.add_option("--top", o.top, "only the N longest kernels (0: all)")
      ->type_name("N")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::whole_number(0, 1000000000));
  app.add_option("--format", o.format,
                 "text (the default): the report above; json: JSON Lines, one object per row; csv: RFC 4180 "
                 "with a header row. Columns: docs/exports.md")
      ->type_name("F")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::one_of({"text", "json", "csv"}, {"jsonl"}));
  app.add_option("--rows", o.rows,
                 "with json or csv: kernels (the default), one row per profiled kernel, families, one "
                 "row per kernel family of the trace summary, or ranks, one row per rank of a job (the files "
                 "of its ranks)")
      ->type_name("R")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::one_of({"kernels", "families", "ranks"}));
  app.add_option("--html", o.html,
                 "write the report as one self-contained HTML page instead (charts inline, nothing loaded "
                 "from the network; - for stdout): docs/html-report.md")
      ->type_name("OUT.html")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::not_empty());
}

namespace {

// `report --html`: the page of one file, instead of the text report. The timeline's executions
// are taken as the file is read (html_timeline.h); every other record the page shows is a current
// one, so memory is the page's, not the file's.
int write_html(const std::string& path, const std::string& html_path) {
  if (html_path != "-") {
    if (const int rc = refuse_input_as_output(html_path, {path}); rc != kOk) return rc;
  }
  tools::ReadResult r;
  tools::TimelineSpans timeline;
  const auto take = [&timeline](const cutriage::v1::Record& record) {
    if (record.has_trace()) timeline.add_chunk(record.trace());
  };
  if (!load_current(path, r, take)) return exit_for(r.status);
  std::string error;
  if (!tools::write_html_report(r, {}, html_path, error, &timeline)) {
    std::cerr << "cutriage: cannot write '" << html_path << "': " << error << "\n";
    return kWriteFailed;
  }
  if (html_path != "-") std::cerr << "cutriage: HTML report -> " << html_path << "\n";
  return exit_for(r.status);
}

}  // namespace

int cmd_report(const ReportOptions& o) {
  const std::string& path = o.files.front();
  tools::ReportOptions options;
  options.verbose = o.verbose;
  options.max_kernels = o.top;
  std::optional<tools::TableFormat> format;  // nullopt: text
  if (o.format == "json" || o.format == "jsonl") format = tools::TableFormat::kJsonLines;
  if (o.format == "csv") format = tools::TableFormat::kCsv;
  std::optional<tools::TableRows> rows;
  if (o.rows == "kernels") rows = tools::TableRows::kKernels;
  if (o.rows == "families") rows = tools::TableRows::kFamilies;
  if (o.rows == "ranks") rows = tools::TableRows::kRanks;
  if (rows && !format) return usage_error("report", "--rows goes with --format json or csv");
  if (rows == tools::TableRows::kRanks && o.files.size() < 2) {
    return usage_error("report", "--rows ranks takes the files of a job's ranks, two or more");
  }
  if (!o.html.empty()) {
    if (format) return usage_error("report", "--html goes without --format");
    if (o.files.size() > 1) return usage_error("report", "--html takes one file");
    return write_html(path, o.html);
  }
  if (o.files.size() > 1) return tools::report_runs(o.files, options, format, rows, std::cout, std::cerr);
  tools::ReadResult r;
  if (!load_current(path, r)) return exit_for(r.status);
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

// ---------------------------------------------------------------------------------------------
// diff

void bind_diff(CLI::App& app, DiffOptions& o) {
  app.add_option("FILES", o.files, "BEFORE.pb AFTER.pb: the two runs (agent files or ncu imports)")
      ->type_name("BEFORE AFTER");
  app.add_option("--before", o.before, "the BEFORE side's files (segments merged, processes summed)")
      ->type_name("FILE...")
      ->expected(1, -1);
  app.add_option("--after", o.after, "the AFTER side's files")->type_name("FILE...")->expected(1, -1);
  app.add_option("--match", o.matches,
                 "pair kernel OLD of BEFORE with kernel NEW of AFTER (a rename): mangled, display or function "
                 "name; repeatable")
      ->type_name("OLD=NEW")
      ->allow_extra_args(false);  // one value per --match: the files follow it
  app.add_option("--noise", o.noise_pct, "changes within PCT percent are noise (default 5)")
      ->type_name("PCT")
      ->check(cli::percentage());
  app.add_option("--fail-if-slower", o.fail_if_slower_pct,
                 "exit 11 when a matched family's time per launch, or the total GPU time, grew by more than "
                 "PCT percent (for CI)")
      ->type_name("PCT")
      ->check(cli::percentage());
  app.add_option("--ledger", o.ledger, "append one JSON line per compared family (never overwritten)")
      ->type_name("FILE");
  app.add_option("--label", o.label, "the change, as the ledger records it")->type_name("TEXT");
  app.add_option("--format", o.format, "text (the default) or json (JSON Lines)")
      ->type_name("F")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::one_of({"text", "json"}, {"jsonl"}));
}

static_assert(kSlower == tools::kExitSlower, "diff's exit code is the tool's");

int cmd_diff(const DiffOptions& o) {
  tools::DiffOptions options;
  if (!o.files.empty() && (!o.before.empty() || !o.after.empty())) {
    return usage_error("diff", "give the files either as BEFORE AFTER or with --before/--after");
  }
  if (!o.files.empty()) {
    if (o.files.size() != 2) return usage_error("diff", "diff takes two files, BEFORE and AFTER");
    options.before = {o.files[0]};
    options.after = {o.files[1]};
  } else {
    options.before = o.before;
    options.after = o.after;
  }
  if (options.before.empty() || options.after.empty()) {
    return usage_error("diff", "which files? BEFORE.pb AFTER.pb, or --before FILE... --after FILE...");
  }
  for (const std::string& m : o.matches) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return usage_error("diff", "--match needs OLD=NEW, not '" + m + "'");
    }
    options.matches.emplace_back(m.substr(0, eq), m.substr(eq + 1));
  }
  options.noise_pct = o.noise_pct;
  if (o.fail_if_slower_pct >= 0) options.fail_if_slower_pct = o.fail_if_slower_pct;
  options.ledger_path = o.ledger;
  options.label = o.label;
  if (o.format == "json" || o.format == "jsonl") options.format = tools::DiffFormat::kJsonLines;
  return tools::cmd_diff(options, std::cout, std::cerr);
}

// ---------------------------------------------------------------------------------------------
// json

void bind_json(CLI::App& app, JsonOptions& o) {
  app.add_option("FILE.pb", o.file, "a cutriage file")->required();
}

int cmd_json(const JsonOptions& o) {
  // Record by record (record_json.h): memory is one record, not the file (before: every record
  // and the whole text were held, 2.2 GB for a 256 MiB file). A problem is said after the
  // records before it, on stderr.
  const tools::RecordJsonResult result = tools::write_records_json(o.file, std::cout);
  if (result.read.status != tools::ReadStatus::kOk) {
    std::cerr << "cutriage: " << o.file << ": " << result.read.message << "\n";
  }
  if (!result.print_error.empty()) {
    std::cerr << "cutriage: " << o.file << ": " << result.print_error << "\n";
    return kNotCutriage;
  }
  return exit_for(result.read.status);  // a failed stdout: main's checked_stdout
}

// ---------------------------------------------------------------------------------------------
// merge

void bind_merge(CLI::App& app, MergeOptions& o) {
  app.add_option("FILE.pb", o.files,
                 "the always-on files of several processes of one program (two or more; files written in "
                 "another mode are skipped with a warning)")
      ->required();
  app.add_option("-o,--output", o.output, "the merged cutriage file to write (required; not one of the inputs)")
      ->type_name("OUT.pb")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::not_empty());
}

int cmd_merge(const MergeOptions& o) {
  if (o.files.size() < 2) {
    return usage_error("merge", "merge takes two files or more: the always-on files of several processes");
  }
  if (const int rc = refuse_input_as_output(o.output, o.files); rc != kOk) return rc;
  try {
    std::vector<tools::MergeInput> inputs;
    for (const std::string& path : o.files) {
      base::Result<std::string> read = base::read_regular_file(path, kMaxMergeInputBytes);
      if (!read.is_ok()) {
        std::cerr << "cutriage: " << path << ": " << read.status().message() << "\n";
        return kUnreadable;
      }
      inputs.push_back({path, std::move(read).value()});
    }
    const tools::MergeResult merged = tools::merge_always_on(inputs);
    for (const std::string& w : merged.warnings) std::cerr << "cutriage merge: " << tools::terminal_safe(w, false) << "\n";
    if (merged.status != tools::MergeStatus::kOk) {
      std::cerr << "cutriage merge: " << tools::terminal_safe(merged.error, false) << "\n";
      return merged.status == tools::MergeStatus::kNotCutriage ? kNotCutriage : kUsage;
    }
    tools::OutputFile out;
    std::string error;
    if (out.open(o.output, &error)) {
      out.stream().write(merged.bytes.data(), static_cast<std::streamsize>(merged.bytes.size()));
      (void)out.commit(&error);
    }
    if (!error.empty()) {
      std::cerr << "cutriage: cannot write '" << o.output << "': " << error << "\n";
      return kWriteFailed;
    }
    std::cerr << "cutriage merge: " << merged.families << (merged.families == 1 ? " family" : " families") << " from "
              << merged.files << (merged.files == 1 ? " file" : " files") << " (" << merged.across_processes
              << " assembled across processes) -> " << o.output << "\n";
    return kOk;
  } catch (const std::exception& e) {
    std::cerr << "cutriage merge: internal error: " << e.what() << "\n";
    return kUnreadable;
  }
}

// ---------------------------------------------------------------------------------------------
// rules, metrics

void bind_rules(CLI::App& /*app*/, RulesOptions& /*o*/) {}

int cmd_rules(const RulesOptions& /*o*/) {
  for (const triage::Rule& rule : triage::all_rules()) {
    std::cout << rule.id << "  [" << triage::to_string(rule.decision) << "] " << rule.title << "\n";
    if (rule.note) std::cout << "    note     qualifies the other findings, never the verdict's primary one\n";
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

void bind_metrics(CLI::App& app, MetricsOptions& o) {
  app.add_flag("--ncu", o.ncu,
               "one comma-separated line for `ncu --metrics`, without cutriage's own timeline quantities");
}

int cmd_metrics(const MetricsOptions& o) {
  const bool ncu = o.ncu;
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


// ---------------------------------------------------------------------------------------------
// The command table

cli::Command triage_command(std::function<int(const TriageOptions&)> run) {
  return cli::make_command<TriageOptions>(
      {"triage", "diagnose Nsight Compute raw CSV captures", "--ncu-csv FILE... [-o OUT.pb] [options]",
       "Reads an export of `ncu --csv --page raw --print-units base` (one row per profiled launch), runs the "
       "Compute Triage decision tree on every kernel and writes a cutriage file.",
       "exit codes: 2 a CSV cannot be read, 5 a CSV is not usable (a --page details export), 6 the output "
       "cannot be written, 7 bad thresholds file.",
       false, false, {}},
      bind_triage, std::move(run));
}

cli::Command report_command(std::function<int(const ReportOptions&)> run) {
  return cli::make_command<ReportOptions>(
      {"report", "human summary, kernels sorted by time (or JSON Lines, CSV)", "FILE.pb [FILE.pb...] [options]",
       "Per kernel, longest first: the verdict, how far to trust it, the path through the decisions, the "
       "numbers behind the verdict, the next action and what it could buy. A file with a trace opens with the "
       "application view: the kernel families ranked by GPU time.\n\nSeveral files: the segments of one process "
       "(same host, pid and start) are merged; files of different processes are reported apart, each under "
       "its heading, and the json and csv rows get a first column `process`. The ranks of one job (a rank in "
       "each session header) open with the job view: per rank its GPU busy, idle and communication time, its "
       "top families and verdicts side by side, and the straggler; the rows get a column `rank` after "
       "`process`.",
       "exit codes: 1 the same segment given twice, or --rows ranks over files that are not one job's ranks, 2 "
       "unreadable file, 3 not a cutriage file, 4 truncated "
       "file (the complete records are reported), 10 for --rows families when the file has no trace.",
       false, false, {}},
      bind_report, std::move(run));
}

cli::Command diff_command(std::function<int(const DiffOptions&)> run) {
  return cli::make_command<DiffOptions>(
      {"diff", "two runs compared: time, verdicts, keep or revert", "BEFORE.pb AFTER.pb [options]",
       "Compares two runs (agent files or `cutriage triage --ncu-csv` imports) kernel family by family: the "
       "time per launch (the ground truth), the verdict and limiter of each run, the deciding metrics side "
       "by side, the call (keep when faster beyond the noise, revert when slower) and the causal chain: did "
       "the counter the BEFORE verdict names move the way its next action predicts (confirmed, unexplained, "
       "regressed, no change, no prediction). Each side may be several files with --before FILE... --after "
       "FILE... (segments are merged, processes summed). docs/diff.md describes the output and the ledger.",
       "exit codes: 2 unreadable file, 3 not a cutriage file, 6 the ledger cannot be written, 11 "
       "--fail-if-slower tripped.",
       false, false, {}},
      bind_diff, std::move(run));
}

cli::Command json_command(std::function<int(const JsonOptions&)> run) {
  return cli::make_command<JsonOptions>(
      {"json", "the file's records in the proto3 JSON mapping", "FILE.pb",
       "Prints the file's records (session header, interned strings, kernels with diagnoses) in the proto3 "
       "JSON mapping of cutriage.v1, for scripts, each as it is read (memory is one record, whatever the "
       "file's size). FILE.pb may be - (standard input).",
       "exit codes: 2 unreadable file, 3 not a cutriage file, 4 truncated file.", false, false, {}},
      bind_json, std::move(run));
}

cli::Command trace_command(std::function<int(const TraceOptions&)> run) {
  return cli::make_command<TraceOptions>(
      {"trace", "the GPU timeline as Chrome trace JSON (Perfetto)", "FILE.pb [FILE.pb...] [-o OUT.json]",
       "Writes the kernels, copies and NVTX ranges the agent traced as Chrome trace event JSON, which the "
       "Perfetto UI (ui.perfetto.dev), its trace processor and chrome://tracing open: one process per GPU "
       "with one thread per stream, profiled launches in category \"profiled\", and a \"CPU\" process with "
       "one thread per OS thread holding its NVTX ranges. Times are microseconds from the first event.\n\n"
       "Several files (-o required): the segments of one process (same host, pid and start) are merged into "
       "one timeline; each other process gets its own GPU and CPU processes, named \"host:pid GPU 0 ...\", "
       "all on one clock (Unix time, from each file's header), so the ranks of a job line up.",
       "exit codes: 1 the same segment given twice, or several files without -o; 6 the output cannot be "
       "written, 10 the file (of several: every file) has no trace (the run was made without tracing).",
       false, false, {}},
      bind_trace, std::move(run));
}

cli::Command pprof_command(std::function<int(const PprofOptions&)> run) {
  return cli::make_command<PprofOptions>(
      {"pprof", "PC samples (stall reasons per line and SASS) for pprof", "FILE.pb [FILE.pb...] [-o OUT.pb.gz] [--kernel NAME]",
       "Writes the warp-state samples of PC sampling as a gzip-compressed pprof profile, for `go tool pprof`, "
       "Perfetto or speedscope. Stacks, root to leaf: kernel (demangled name) > source line (\"stencil.cu:42\", "
       "or \"pc 0x01a0\" without -lineinfo) > SASS PC (\"0x01a0 LDG.E ...\", the SASS from nvdisasm when it "
       "is installed) > warp state (\"long_scoreboard\"). Two values: samples, and cycles = samples x 2^N "
       "(one sample per SM every 2^N cycles), the default, which compares kernels sampled at different "
       "periods. Samples the device counted but no PC holds are under \"(samples not attributed to a PC)\", "
       "so the total is the sum of the report's per-launch totals. The issue states selected and "
       "not_selected are kept as leaves; every sample is labelled kind=stall, kind=issue or "
       "kind=unattributed (`pprof -tagignore=kind=issue` shows the stalls only).\n\n"
       "Several files (-o required): the samples of them all in one profile, the segments of one process "
       "merged; with several processes every sample is labelled process=host:pid (`pprof -tagfocus`).\n\n"
       "nvdisasm is looked for in $CUTRIAGE_NVDISASM, $PATH, $CUDA_HOME/bin, /usr/local/cuda/bin.",
       "exit codes: 1 the same segment given twice, or several files without -o; 6 the output cannot be "
       "written, 10 the files (or the kernels NAME selects) have no PC samples.",
       false, false, {}},
      bind_pprof, std::move(run));
}

cli::Command merge_command(std::function<int(const MergeOptions&)> run) {
  return cli::make_command<MergeOptions>(
      {"merge", "several processes' always-on counters in one file (replicas; CUTRIAGE_RESUME)", "-o OUT.pb FILE.pb FILE.pb [FILE.pb...]",
       "Assembles each kernel family's always-on counters from several processes of one program (replicas of "
       "a service on GPUs of one chip, which measure different metric groups) into one new cutriage file: per "
       "family (same mangled name, chip, block and grid; other launch shapes are never combined) the union of "
       "the counters they measured, the launches each process measured them on, with its pid, and today's "
       "verdict from the merged counters; one notice per family says which process gave how many counters. "
       "A process restarted with CUTRIAGE_RESUME=OUT.pb continues from them. A counter several processes "
       "measured keeps the value of the process with the most counters of that family (ties: the lowest "
       "pid). Files not written in always-on mode (nor under application replay) are skipped with a warning; "
       "a file cut short is used up to the cut.",
       "exit codes: 1 fewer than two files, -o missing or naming an input, or no always-on input; 2 an input "
       "cannot be read; 3 an input is not a cutriage file; 6 the output cannot be written.",
       false, false, {}},
      bind_merge, std::move(run));
}

cli::Command rules_command(std::function<int(const RulesOptions&)> run) {
  return cli::make_command<RulesOptions>(
      {"rules", "list the triage rules and their thresholds", "",
       "Lists every rule of the decision tree (id, decision, title), the metrics it needs or reads if "
       "present, and its thresholds with their defaults; then the session checks of the timeline. Thresholds "
       "are overridden by name (`rule_id.threshold = value`) with --thresholds or CUTRIAGE_THRESHOLDS.",
       "", false, false, {}},
      bind_rules, std::move(run));
}

cli::Command metrics_command(std::function<int(const MetricsOptions&)> run) {
  return cli::make_command<MetricsOptions>(
      {"metrics", "list the metrics the rules read", "[--ncu]",
       "Lists every metric a rule reads, one a line.", "", false, false, {}},
      bind_metrics, std::move(run));
}

cli::Program program() {
  cli::Program p;
  p.version = CUTRIAGE_VERSION;
  p.summary =
      "cutriage tells why a CUDA kernel is slow: it runs an application with the profiling agent "
      "injected (run), or triages Nsight Compute captures (triage), and reads the files either writes.";
  p.epilog =
      "exit codes: 0 ok, 1 usage, 2 unreadable input, 3 not a cutriage file, 4 truncated file, 5 unusable "
      "CSV, 6 cannot write output, 7 bad thresholds file, 10 no trace in the file (`trace`), no PC samples "
      "(`pprof`), 11 `diff --fail-if-slower` tripped; `run` returns the application's own status (8 agent library not found, 9 application "
      "could not be started).";
  p.commands = {run_command_entry(), triage_command(), report_command(), diff_command(),  json_command(),
                trace_command(),     pprof_command(),  merge_command(),  rules_command(), metrics_command()};
  return p;
}

}  // namespace cutriage::tools::commands
