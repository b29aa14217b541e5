// The agent's configuration: CUTRIAGE_* environment variables (what `cutriage run` flags turn
// into), parsed strictly. A bad value is an error naming the variable and what it accepts; the
// agent then stays off for the run. An unknown CUTRIAGE_* key is a warning only.
//
// Pure C++: no CUDA, no I/O except what the caller passes in, never throws (the one exception:
// copying a KernelFilter allocates and may throw std::bad_alloc, like copying a std::string).
//
// Value rules, the same for every variable:
//   - An empty value ("CUTRIAGE_LAUNCH_COUNT=") is the same as not setting the variable, so a
//     wrapper script can clear an option by exporting it empty.
//   - Keywords and numbers may carry surrounding whitespace; keywords are case-insensitive.
//     Paths and regular expressions are taken verbatim (only an all-whitespace one is rejected).
//   - When a name occurs twice in the list, the first occurrence counts, as getenv(3) sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cutriage::agent {

// Always-on's default share of each CUTRIAGE_TRACE_PERIOD with the kernel trace on. On the H200 the
// trace cost the example service 0.3-0.4% of its throughput while on, and the PyTorch loop 0.65%
// (bench/trace_split.sh, 2026-11-30); a quarter of the time keeps that near 0.1-0.2%, so that the
// whole agent stays within 1% at the default budget.
inline constexpr double kAlwaysOnTraceDuty = 0.25;

enum class LogLevel : uint8_t { kOff, kError, kWarn, kInfo, kDebug };

// Which metrics the range profiler collects per profiled launch.
enum class MetricMode : uint8_t {
  kAdaptive,  // first launch: what Decisions 0-2 need; later launches: what the route asks for
  kFull,      // everything every rule reads, in one launch
  kBase,      // only Decisions 0-2
  kList,      // the explicit list in AgentConfig::metric_list
};

// Which form of a kernel's name the filter matches (ncu's --kernel-name-base).
enum class NameBase : uint8_t { kFunction, kDemangled, kMangled };

// Matches kernel names the way ncu's --kernel-name does: a plain string matches the whole name
// exactly; "regex:<ECMAScript regex>" matches when the regex finds a match anywhere in the name.
// An empty filter matches everything.
//
// Thread-safe for concurrent matches(): the compiled regex is immutable and shared between copies.
// Under libstdc++ the regex runs in its polynomial (breadth-first) mode, so a long kernel name
// cannot exhaust the stack of the application thread the agent runs on; back-references, which
// that mode cannot run, are rejected by set().
class KernelFilter {
 public:
  KernelFilter();
  ~KernelFilter();
  KernelFilter(const KernelFilter&);
  KernelFilter& operator=(const KernelFilter&);
  KernelFilter(KernelFilter&&) noexcept;
  KernelFilter& operator=(KernelFilter&&) noexcept;

  // Returns an error message (empty on success); on error the filter is left unchanged. An empty
  // spec makes the filter empty (it still records `base`). "regex:" specs longer than
  // kMaxRegexLength characters, empty ones and ones std::regex rejects are errors.
  std::string set(std::string_view spec, NameBase base);
  [[nodiscard]] bool empty() const;
  [[nodiscard]] const std::string& spec() const;
  [[nodiscard]] NameBase base() const;
  // Matches the name chosen by base(). A caller may leave names it has not computed empty: an
  // empty demangled name is derived from the mangled one, an empty function name from the
  // demangled (or mangled) one. A regex whose evaluation fails (std::regex complexity limits)
  // counts as no match.
  [[nodiscard]] bool matches(std::string_view mangled, std::string_view demangled,
                             std::string_view function) const;

  static constexpr std::size_t kMaxRegexLength = 4096;  // bounds compile time and automaton size

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Which kernel families are profiled (the trace ranks them by GPU time first).
enum class SelectMode : uint8_t {
  kTop,    // the top_k families by GPU time traced so far
  kAll,    // every kernel from its first launch (no ranking; works without the trace)
  kShare,  // families with at least min_share of the GPU time traced so far
  kNone,   // trace only: nothing is replayed
};

// How the agent collects counters.
enum class AgentMode : uint8_t {
  kDeep,      // replay allowed: each profiled launch replayed for as many passes as its metrics need
  kAlwaysOn,  // never replays: one single-pass metric group per sampled launch, within a budget
};

// How deep mode collects counters that take several passes (CUTRIAGE_REPLAY).
enum class Replay : uint8_t {
  kKernel,       // the profiled launch is replayed in the process, device memory saved and restored
  // No launch is replayed: each profiled launch carries one single-pass metric group, and the
  // program is run again for the rest (resuming from the last run's output, CUTRIAGE_RESUME).
  kApplication,
};

// Which signal asks for a deep capture (off by default: the application may use it).
enum class ControlSignal : uint8_t { kOff, kUsr1, kUsr2 };

struct AgentConfig {
  bool enabled = true;
  AgentMode mode = AgentMode::kDeep;
  Replay replay = Replay::kKernel;  // deep mode only (always-on never replays)
  std::string output_pattern = "cutriage-%h-%p.pb";
  unsigned output_mode = 0600;  // CUTRIAGE_OUTPUT_MODE: permissions of the files it creates
  KernelFilter kernel_filter;
  uint64_t launch_skip = 0;     // matching launches to let pass before profiling starts
  uint64_t launch_count = 0;    // profile at most this many launches in all; 0 = no limit
  uint32_t max_profiles_per_kernel = 3;
  // Left unset (metric_mode_set false), parse_config gives deep mode with kernel replay kFull:
  // nearly every kernel's route needs a second stage (often a third) whose passes add up to about
  // the full list's, and each stage pays a new configuration's first start (docs/agent.md,
  // "Counters per launch"). Always-on and application replay keep kAdaptive, where a stage or a
  // run is paid per group. A config built in code keeps kAdaptive unless it says otherwise.
  MetricMode metric_mode = MetricMode::kAdaptive;
  bool metric_mode_set = false;
  std::vector<std::string> metric_list;  // for kList
  LogLevel log_level = LogLevel::kWarn;
  std::string log_file;                  // empty: stderr
  bool summary = true;                   // the per-kernel summary on stderr at exit
  std::string thresholds_file;           // empty: the guide's thresholds
  SelectMode select = SelectMode::kTop;
  // An earlier output of the same program whose ranking chooses the top:/share: families from
  // their first launch, instead of this run's trace (empty: off).
  std::string ranking_path;
  // Deep mode ranking by the trace: at a family's second launch while its first has no traced
  // duration yet (a script's launches queued without a wait), the agent waits for the context
  // and flushes the trace, so the family is ranked before that launch (Agent::rank_at_second_launch).
  bool rank_early = true;
  uint32_t select_top = 5;               // kTop
  double select_min_share = 0.05;        // kShare, in (0, 1]
  bool trace = true;                     // the Activity API kernel trace
  uint64_t trace_max_events = 1000000;   // kernel executions written to the timeline (0 = none)
  uint32_t trace_flush_ms = 100;         // how often the trace is delivered (0: only at exit)
  // Always-on: the kernel trace runs trace_duty of each trace_period_s window (from the start of
  // the window) and is paused for the rest, which removes CUPTI's per-kernel timing cost there.
  // 1: always on. Below 1 needs the trace and the flush thread (which switches it). Left unset
  // (trace_duty_set false), parse_config gives always-on kAlwaysOnTraceDuty when the trace and the
  // flush thread are on; a config built in code keeps 1 unless it says otherwise.
  double trace_duty = 1.0;
  bool trace_duty_set = false;
  uint32_t trace_period_s = 60;
  // NVTX range filters for profiling, matched against every range open on the launching thread
  // (NameBase is ignored: range names are plain strings).
  KernelFilter nvtx_include;
  KernelFilter nvtx_exclude;
  // PC sampling: one kernel-serialized launch per profiled family after its counters, scheduled
  // apart from the range profiler (they cannot share a context).
  bool pc_sampling = true;
  // A graph's kernels below half of its time PM-sampled per node over one launch (graph_profiler).
  bool graph_pm_sampling = true;
  // A graph's launch PC-sampled after its counters, the samples split by function. Off: CUPTI 13.0
  // hands over no PC across a graph launch while the kernel trace runs or on a context whose range
  // profiler was used (docs/graphs.md), which is always the agent's case, so the launch only cost
  // time (and, always-on, delayed the graph's "complete" by a budget period).
  bool graph_pc_sampling = false;
  // Always-on: one PM-sampled window over the application's own launches routes every family that
  // ran in it from its own samples (pm_window.h, docs/always-on.md).
  bool pm_window = true;
  // Always-on: a family's counters in stages of one multi-pass configuration each, one pass on each
  // of its next launches (always_on.h), instead of one single-pass group a launch: a stage pays one
  // switch for what takes the groups one switch each. Off until the H200 has measured it.
  bool stage_passes = false;
  // Always-on: steps (step_profiler.h). 0: off; otherwise the most launches one step (the launches
  // from one of the top family's launches to its next) may hold, each one range of a pass: one
  // collection of every counter the rules read gives every family of the step its verdict.
  // Experimental, off until the H200 has measured it in the agent.
  uint32_t step_launches = 0;
  // Always-on: CUPTI's one-off range-profiler start-up paid at the first launch on each device,
  // reported apart from the budget (profiler_warmup.h), instead of by the first profiled launch.
  bool warmup = true;
  // Always-on: CUPTI's launch and wait callbacks off while nothing needs them (launch_gate.h).
  // Off by default: on the H100, launches after the callbacks came back on repeated their thread's
  // previous correlation id under PyTorch, and such launches are never profiled (BENCHMARKS.md).
  bool launch_gate = false;
  bool launch_gate_set = false;
  uint32_t pc_sampling_period_log2 = 0;  // 0 = from the traced duration (5..31 otherwise)
  uint64_t cubin_cache_mb = 256;         // module cubins kept for source correlation
  // Prometheus textfile export (empty: off), rewritten every prometheus_interval_ms.
  std::string prometheus_file;
  uint32_t prometheus_interval_ms = 15000;
  // The GPU model label named modelName (dcgm-exporter's name, not snake_case) instead of
  // model_name (CUTRIAGE_PROMETHEUS_DCGM_LABELS).
  bool prometheus_dcgm_labels = false;
  // Rotating segments of the output file for long runs (both 0: one file).
  uint64_t segment_mb = 0;
  uint64_t segment_seconds = 0;
  uint32_t segment_keep = 0;  // published segments kept (0: all)
  // Always-on mode: the share of wall time profiled and sampled launches may cost the application
  // (measured on its threads), and at most this many such launches a second.
  double budget_fraction = 0.004;  // plus the trace: 0.6-0.9% on the H200 at a full duty
  double budget_rate = 2.0;
  uint32_t pc_sampling_interval_s = 600;  // a family is PC-sampled again after this long
  // A context's range profiler is disabled this long after its last profiled launch: an enabled
  // profiler slows the launches it does not profile (bench/switch_cost.sh idle). 0: right after
  // each profiled launch. Meanwhile other families may take the configured group cheaply.
  uint32_t release_ms = 2000;
  // Always-on and application replay: an earlier output of the program to resume the families'
  // counters from (empty: off).
  std::string resume_path;
  // Always-on: this process is replica `replica_index` of `replica_count` of one service. Its group
  // switches start at its own place in each choice's ranked groups, so that the replicas measure
  // different groups at once and `cutriage merge` assembles the fleet's counters sooner (1: alone).
  uint32_t replica_index = 0;
  uint32_t replica_count = 1;
  // Deep captures on request (cutriage_request_deep_capture, the control file, the signal).
  std::string control_file;  // polled by the flush thread; empty: off
  ControlSignal control_signal = ControlSignal::kOff;
  uint32_t deep_seconds = 30;  // how long a request's window stays open
  std::string deep_target = "top:3";  // what a request without a target captures
};

// "deep" or "always-on"
std::string_view mode_name(AgentMode mode);

// `s` without leading and trailing whitespace (what every value here is trimmed of).
std::string_view trim_whitespace(std::string_view s);

// A deep-capture target: "top:N" (the N largest families by traced GPU time; "top:" in any case)
// or a kernel-name filter in CUTRIAGE_KERNEL_NAME's syntax, matched against `base`.
struct DeepTarget {
  uint32_t top = 0;     // 1..1000 for "top:N"; 0 when `filter` names the families
  KernelFilter filter;
};
// nullopt with `error` set when the target is empty, a bad count or a bad filter.
std::optional<DeepTarget> parse_deep_target(std::string_view target, NameBase base, std::string* error);
// The error parse_deep_target would give, empty when valid (for the configuration and control
// file checks).
std::string check_deep_target(std::string_view target);

// "top:5", "all", "share:5%", "none"
std::string select_spec(const AgentConfig& config);

struct ConfigIssue {
  enum class Severity : uint8_t { kWarning, kError };
  Severity severity = Severity::kError;
  std::string variable;  // "CUTRIAGE_LAUNCH_COUNT"
  std::string message;   // one line, names the accepted values
};

struct ConfigResult {
  AgentConfig config;
  std::vector<ConfigIssue> issues;
  [[nodiscard]] bool ok() const;  // no kError issue; when false, config.enabled is false too
};

// One option: its environment variable, its `cutriage run` flag, and the help text. The single
// table that drives parsing, `cutriage run --help`, the flag-to-environment mapping and the docs.
struct OptionSpec {
  std::string_view env;          // "CUTRIAGE_LAUNCH_COUNT"
  // "--trace"; a short form first where ncu has one, separated by ", " ("-c, --launch-count"):
  // ncu's -o, -k, -c and -s mean the same here.
  std::string_view flag;
  std::string_view value_hint;   // "N"
  std::string_view default_text; // "0 (no limit)"
  std::string_view help;
};
const std::vector<OptionSpec>& config_options();

// Parses the CUTRIAGE_* entries of `env` (NAME, VALUE pairs; other names are ignored). Every
// option is parsed even after an error, so one run reports every bad variable: one kError issue
// per bad variable, one kWarning per unknown CUTRIAGE_* name (with the closest known name when
// one is close). CUTRIAGE_LIBRARY, which only `cutriage run` reads, is accepted silently.
ConfigResult parse_config(const std::vector<std::pair<std::string, std::string>>& env);

// The process environment as pairs (reads `environ`; entries without '=' are skipped). Not safe
// against a concurrent setenv(3), like getenv(3) itself.
std::vector<std::pair<std::string, std::string>> process_environment();

// A configuration string as cutriage_init() takes it: CUTRIAGE_NAME=VALUE entries separated by
// ';' or newlines, blanks around each entry ignored ("CUTRIAGE_SELECT=top:3; CUTRIAGE_SUMMARY=0").
// nullopt with `error` set for an entry without '=' or a name outside CUTRIAGE_*.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_config_string(std::string_view text,
                                                                                   std::string* error);
// `env` with the entries of `overrides` replacing those of the same name (the string wins over the
// environment), overrides first so that parse_config sees them first.
std::vector<std::pair<std::string, std::string>> with_overrides(
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::vector<std::pair<std::string, std::string>>& overrides);

// What an output path pattern may refer to.
struct PathContext {
  uint64_t pid = 0;
  std::string host;
  std::function<std::optional<std::string>(std::string_view)> getenv;  // for %q{VAR}
  std::function<bool(const std::string&)> exists;                       // for %n
};

// Expands %p (pid), %h (host), %n (smallest sequence number >= 1 whose expansion does not exist
// yet), %q{VAR} (environment variable; unset is an error), %% (a literal %). Any other % sequence
// is an error. Returns the path, or nullopt with *error set (when error is not null).
// Several %n share one number. Without ctx.exists, %n is 1; %n is an error when every number up to
// kMaxPathSequence is taken. An unset %q{VAR}, or no ctx.getenv, is an error naming VAR; VAR is
// [A-Za-z_][A-Za-z0-9_]*. An expansion to the empty path is an error.
std::optional<std::string> expand_path_pattern(std::string_view pattern, const PathContext& ctx,
                                               std::string* error);

// The pattern with everything but %n resolved (errors as expand_path_pattern's): build(n) is the
// path for sequence number n, the same path for every n when the pattern has no %n. The output
// sink claims the first free number itself, atomically (output.h, OutputFileOptions::sequence).
struct PreparedPath {
  bool has_sequence = false;
  std::function<std::string(uint64_t)> build;
};
std::optional<PreparedPath> prepare_path_pattern(std::string_view pattern, const PathContext& ctx,
                                                 std::string* error);

inline constexpr uint64_t kMaxPathSequence = 100000;

// Checks a pattern's syntax without expanding it (what parse_config does for CUTRIAGE_OUTPUT).
// Returns an error message, empty when the pattern is well formed.
std::string check_path_pattern(std::string_view pattern);

}  // namespace cutriage::agent
