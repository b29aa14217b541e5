// The commands of `cutriage`: per command an options struct (what its flags and arguments set), a
// bind_xxx(CLI::App&, XxxOptions&) that declares them, a cmd_xxx(const XxxOptions&) that runs it,
// and an xxx_command() entry of the command table (program()). `run` is in run.h.
//
// Adding a command: its options struct, bind_ and cmd_ functions and xxx_command() here and in
// commands.cpp, one line in program(), and its flags in docs/cli.md (the cli.parser test checks
// that every flag its --help prints is there). Adding an option: one add_option/add_flag line in
// its bind_ function, bound to a new field of the struct.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "cli.h"

namespace cutriage::tools::commands {

// Exit codes (stable, scripts rely on them; main.cpp and docs/cli.md list them).
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
  kSlower = 11,     // `diff --fail-if-slower`: a family or the total got slower (diff.h)
};

struct TriageOptions {
  std::vector<std::string> csv_paths;
  std::string output;          // empty: the first CSV's name with .pb appended
  std::string timings;
  std::string thresholds;
  std::string clock_control = "unknown";  // none | locked (base) | unknown
  bool report = false;
};
void bind_triage(CLI::App& app, TriageOptions& o);
int cmd_triage(const TriageOptions& o);

struct ReportOptions {
  std::vector<std::string> files;  // several: segments merged, processes apart (multi_file.h)
  bool verbose = false;
  size_t top = 0;              // 0: every kernel
  std::string format = "text";  // text | json (jsonl) | csv
  std::string rows;             // empty, kernels or families (json and csv only)
  std::string html;             // --html OUT.html ("-": stdout); empty: no page
};
void bind_report(CLI::App& app, ReportOptions& o);
int cmd_report(const ReportOptions& o);

struct DiffOptions {
  std::vector<std::string> files;   // BEFORE AFTER
  std::vector<std::string> before;  // --before FILE...
  std::vector<std::string> after;   // --after FILE...
  std::vector<std::string> matches;  // OLD=NEW
  double noise_pct = 5;
  double fail_if_slower_pct = -1;  // < 0: no gate
  std::string ledger;
  std::string label;
  std::string format = "text";  // text | json
};
void bind_diff(CLI::App& app, DiffOptions& o);
int cmd_diff(const DiffOptions& o);

struct JsonOptions {
  std::string file;
};
void bind_json(CLI::App& app, JsonOptions& o);
int cmd_json(const JsonOptions& o);

struct TraceOptions {
  std::vector<std::string> files;  // several: segments merged, processes apart (multi_file.h)
  std::string output;  // empty: FILE.trace.json (one file; several need -o); "-": stdout
};
void bind_trace(CLI::App& app, TraceOptions& o);
int cmd_trace(const TraceOptions& o);

struct PprofOptions {
  std::vector<std::string> files;  // several: segments merged, processes labelled (multi_file.h)
  std::string output;  // empty: FILE.pprof.pb.gz (one file; several need -o); "-": stdout
  std::string kernel;  // empty: every kernel
};
void bind_pprof(CLI::App& app, PprofOptions& o);
int cmd_pprof(const PprofOptions& o);

struct MergeOptions {
  std::vector<std::string> files;  // always-on files of several processes (merge.h)
  std::string output;              // -o OUT.pb, required
};
void bind_merge(CLI::App& app, MergeOptions& o);
int cmd_merge(const MergeOptions& o);

struct RulesOptions {};
void bind_rules(CLI::App& app, RulesOptions& o);
int cmd_rules(const RulesOptions& o);

struct MetricsOptions {
  bool ncu = false;
};
void bind_metrics(CLI::App& app, MetricsOptions& o);
int cmd_metrics(const MetricsOptions& o);

// The table's entries. A test passes its own `run` to see what the parser made of a command line.
cli::Command triage_command(std::function<int(const TriageOptions&)> run = cmd_triage);
cli::Command report_command(std::function<int(const ReportOptions&)> run = cmd_report);
cli::Command diff_command(std::function<int(const DiffOptions&)> run = cmd_diff);
cli::Command json_command(std::function<int(const JsonOptions&)> run = cmd_json);
cli::Command trace_command(std::function<int(const TraceOptions&)> run = cmd_trace);
cli::Command pprof_command(std::function<int(const PprofOptions&)> run = cmd_pprof);
cli::Command merge_command(std::function<int(const MergeOptions&)> run = cmd_merge);
cli::Command rules_command(std::function<int(const RulesOptions&)> run = cmd_rules);
cli::Command metrics_command(std::function<int(const MetricsOptions&)> run = cmd_metrics);

// Every command, in the order `cutriage help` lists them.
cli::Program program();

}  // namespace cutriage::tools::commands
