// The agent's options, one row each: its variable, `cutriage run` flag, help, what it accepts and
// how its value is stored (config_parse.h). The single table that drives parsing (config.cpp),
// `cutriage run --help`, the flag-to-environment mapping and the docs.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_parse.h"
#include "config_text.h"

namespace cutriage::agent::config_parse {
namespace {

using config_text::kRegexPrefix;
using config_text::shown;

constexpr std::string_view kPatternAccepts =
    "a path pattern; escapes: %p (pid), %h (host), %n (first unused sequence number), "
    "%q{VAR} (environment variable), %% (a literal %)";

// ---------------------------------------------------------------------------------------------
// Metric list: "list:<name>[,<name>...]"

// The shape of a CUPTI metric name, "base.rollup[.submetric]": no whitespace or control bytes, at
// least one '.', no empty component. The collector checks existence against the chip later.
bool is_metric_shaped(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  if (name.find('.') == std::string_view::npos || name.find("..") != std::string_view::npos) return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20U || u == 0x7FU;
  });
}

Problem apply_path(std::string_view value, std::string& out) {
  if (trim(value).empty()) return bad();
  out = std::string(value);
  return ok();
}

template <typename T>
Problem apply_unsigned(std::string_view value, T& out, uint64_t min, uint64_t max) {
  const std::optional<uint64_t> n = parse_unsigned(value, max);
  if (!n || *n < min) return bad();
  out = static_cast<T>(*n);
  return ok();
}

// A percentage above 0 and at most `max_percent`, stored as a fraction (0.4% -> 0.004).
Problem apply_fraction_of_percent(std::string_view value, double& out, double max_percent) {
  const std::optional<double> p = parse_percent(value);
  if (!p || !(*p > 0) || *p > max_percent) return bad();
  out = *p / 100.0;
  return ok();
}

Problem apply_metrics(std::string_view value, AgentConfig& config) {
  const std::string_view v = trim(value);
  struct Mode {
    std::string_view name;
    MetricMode mode;
  };
  for (const Mode m : {Mode{"adaptive", MetricMode::kAdaptive}, Mode{"full", MetricMode::kFull},
                       Mode{"base", MetricMode::kBase}}) {
    if (iequals(v, m.name)) {
      config.metric_mode = m.mode;
      config.metric_mode_set = true;
      config.metric_list.clear();
      return ok();
    }
  }
  constexpr std::string_view kList = "list:";
  if (!istarts_with(v, kList)) return bad();
  std::vector<std::string> names;
  std::string_view rest = v.substr(kList.size());
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = trim(rest.substr(0, comma));
    if (name.empty()) return bad("empty metric name in the list");
    if (!is_metric_shaped(name)) {
      return bad("metric " + shown(name) + " is not shaped like a CUPTI metric (base.rollup)");
    }
    // Duplicates are dropped, first position kept: the collector would otherwise ask twice.
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  config.metric_mode = MetricMode::kList;
  config.metric_mode_set = true;
  config.metric_list = std::move(names);
  return ok();
}

Problem apply_log_level(std::string_view value, AgentConfig& config) {
  const std::string_view v = trim(value);
  struct Level {
    std::string_view name;
    LogLevel level;
  };
  for (const Level l : {Level{"off", LogLevel::kOff}, Level{"error", LogLevel::kError},
                        Level{"warn", LogLevel::kWarn}, Level{"info", LogLevel::kInfo},
                        Level{"debug", LogLevel::kDebug}}) {
    if (iequals(v, l.name)) {
      config.log_level = l.level;
      return ok();
    }
  }
  return bad();
}

Problem apply_name_base(std::string_view value, AgentConfig& config) {
  const std::string_view v = trim(value);
  std::optional<NameBase> base;
  if (iequals(v, "function")) base = NameBase::kFunction;
  if (iequals(v, "demangled")) base = NameBase::kDemangled;
  if (iequals(v, "mangled")) base = NameBase::kMangled;
  if (!base) return bad();
  // Re-set the current spec with the new base; the spec was already accepted (or is empty), so
  // this cannot fail. Together with apply_kernel_name this makes the two order-independent.
  const std::string spec = config.kernel_filter.spec();
  std::string error = config.kernel_filter.set(spec, *base);
  return error.empty() ? ok() : bad(std::move(error));
}

Problem apply_kernel_name(std::string_view value, AgentConfig& config) {
  // A plain name is trimmed (real names carry no surrounding space, a stray one from quoting
  // would silently match nothing); a regex keeps everything after "regex:", spaces may be intended.
  std::string_view spec = value;
  while (!spec.empty() && is_space(spec.front())) spec.remove_prefix(1);
  if (spec.substr(0, kRegexPrefix.size()) != kRegexPrefix) spec = trim(spec);
  if (spec.empty()) return bad();
  std::string error = config.kernel_filter.set(spec, config.kernel_filter.base());
  return error.empty() ? ok() : bad(std::move(error));
}

constexpr std::string_view kBoolAccepts = "1, 0, on, off, true, false, yes or no";

Problem apply_select(std::string_view value, AgentConfig& config) {
  const std::string_view v = trim(value);
  if (iequals(v, "all")) {
    config.select = SelectMode::kAll;
    return ok();
  }
  if (iequals(v, "none")) {
    config.select = SelectMode::kNone;
    return ok();
  }
  if (istarts_with(v, "top:")) {
    const std::optional<uint64_t> k = parse_unsigned(v.substr(4), 1000000);
    if (!k || *k == 0) return bad("top: needs a count from 1 to 1000000");
    config.select = SelectMode::kTop;
    config.select_top = static_cast<uint32_t>(*k);
    return ok();
  }
  if (istarts_with(v, "share:")) {
    std::string_view n = trim(v.substr(6));
    if (!n.empty() && n.back() == '%') n.remove_suffix(1);
    // Percent with at most one decimal: "5", "0.5", "12.5".
    const size_t dot = n.find('.');
    const std::optional<uint64_t> whole = parse_unsigned(n.substr(0, dot), 100);
    std::optional<uint64_t> tenth = uint64_t{0};
    if (dot != std::string_view::npos) tenth = n.size() == dot + 2 ? parse_unsigned(n.substr(dot + 1), 9) : std::nullopt;
    if (!whole || !tenth) return bad("share: needs a percentage such as 5 or 0.5");
    const double pct = double(*whole) + double(*tenth) / 10.0;
    if (pct <= 0 || pct > 100) return bad("share: needs a percentage above 0 and at most 100");
    config.select = SelectMode::kShare;
    config.select_min_share = pct / 100.0;
    return ok();
  }
  return bad();
}

Problem apply_nvtx(std::string_view value, KernelFilter& filter) {
  std::string_view spec = value;
  if (spec.substr(0, kRegexPrefix.size()) != kRegexPrefix) spec = trim(spec);
  if (spec.empty()) return bad();
  std::string error = filter.set(spec, NameBase::kFunction);
  return error.empty() ? ok() : bad(std::move(error));
}

// Order: how help and docs list them. Parsing does not depend on it.
const std::array<Option, 51> kOptions = {{
    {{"CUTRIAGE_ENABLE", "--enable", "1|0", "1",
      "0 (or off, false, no) turns the agent off: the application runs untouched"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.enabled = *b;
       return ok();
     }},
    {{"CUTRIAGE_OUTPUT", "-o, --output", "PATTERN", "cutriage-%h-%p.pb",
      "output file; %p pid, %h host, %n first unused sequence number, %q{VAR} environment "
      "variable, %% a literal %"},
     kPatternAccepts,
     [](std::string_view v, AgentConfig& c) {
       if (trim(v).empty()) return bad();
       std::string error = check_path_pattern(v);
       if (!error.empty()) return bad(std::move(error));
       c.output_pattern = std::string(v);
       return ok();
     }},
    {{"CUTRIAGE_OUTPUT_MODE", "--output-mode", "MODE", "0600",
      "permissions of the files the agent writes (output, segments), octal; they hold the "
      "command line and host name, so only their owner reads them by default"},
     "an octal mode from 0600 to 0666 that lets the owner read and write (0600, 0640, 0644)",
     [](std::string_view v, AgentConfig& c) {
       const std::string_view t = trim(v);
       if (t.size() < 3 || t.size() > 4 || (t.size() == 4 && t[0] != '0')) return bad();
       unsigned mode = 0;
       for (char ch : t) {
         if (ch < '0' || ch > '7') return bad();
         mode = mode * 8 + static_cast<unsigned>(ch - '0');
       }
       if ((mode & 0600U) != 0600U || (mode & 0111U) != 0 || mode > 0666U) return bad();
       c.output_mode = mode;
       return ok();
     }},
    {{"CUTRIAGE_KERNEL_NAME", "-k, --kernel-name", "NAME|regex:RE", "(all kernels)",
      "profile only kernels whose name (see --kernel-name-base) equals NAME, or in which the "
      "ECMAScript regular expression RE finds a match"},
     "an exact kernel name or regex:<ECMAScript regular expression>", apply_kernel_name},
    {{"CUTRIAGE_KERNEL_NAME_BASE", "--kernel-name-base", "function|demangled|mangled", "function",
      "the name --kernel-name matches: the function name (no return type, no parameters), the "
      "full demangled name, or the mangled symbol"},
     "function, demangled or mangled", apply_name_base},
    {{"CUTRIAGE_LAUNCH_SKIP", "-s, --launch-skip", "N", "0",
      "let the first N matching launches run unprofiled"},
     "a non-negative integer",
     [](std::string_view v, AgentConfig& c) {
       return apply_unsigned(v, c.launch_skip, 0, UINT64_MAX);
     }},
    {{"CUTRIAGE_LAUNCH_COUNT", "-c, --launch-count", "N", "0 (no limit)",
      "profile at most N launches in all"},
     "a non-negative integer (0 = no limit)",
     [](std::string_view v, AgentConfig& c) {
       return apply_unsigned(v, c.launch_count, 0, UINT64_MAX);
     }},
    {{"CUTRIAGE_MAX_PROFILES_PER_KERNEL", "--max-profiles-per-kernel", "N", "3",
      "profile each kernel at most N times"},
     "an integer from 1 to 4294967295",
     [](std::string_view v, AgentConfig& c) {
       return apply_unsigned(v, c.max_profiles_per_kernel, 1, UINT32_MAX);
     }},
    {{"CUTRIAGE_METRICS", "--metrics", "adaptive|full|base|list:M[,M...]",
      "full in deep mode, adaptive in always-on and with application replay",
      "full: everything every rule reads, in one launch; adaptive: Decisions 0-2 first, then what "
      "the route asks for, over later launches; base: Decisions 0-2 only; list: exactly these CUPTI "
      "metrics"},
     "adaptive, full, base or list:<metric>[,<metric>...] with CUPTI metric names such as "
     "sm__throughput.avg.pct_of_peak_sustained_elapsed",
     apply_metrics},
    {{"CUTRIAGE_LOG_LEVEL", "--log-level", "off|error|warn|info|debug", "warn",
      "how much the agent logs"},
     "off, error, warn, info or debug", apply_log_level},
    {{"CUTRIAGE_LOG_FILE", "--log-file", "PATH", "(stderr)", "where the agent logs"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.log_file); }},
    {{"CUTRIAGE_SUMMARY", "--summary", "1|0", "1",
      "print the per-kernel summary on stderr at exit"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.summary = *b;
       return ok();
     }},
    {{"CUTRIAGE_THRESHOLDS", "--thresholds", "FILE", "(the guide's)",
      "override thresholds: lines rule_id.threshold = value (names from `cutriage rules`)"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.thresholds_file); }},
    {{"CUTRIAGE_SELECT", "--select", "top:K|share:P|all|none", "top:5",
      "which kernel families are profiled: the K largest by GPU time traced so far, those with at "
      "least P percent of it, every kernel from its first launch, or none (trace only)"},
     "top:<K>, share:<percent>, all or none", apply_select},
    {{"CUTRIAGE_RANKING", "--ranking", "PATH", "(off)",
      "an earlier output file of this program: CUTRIAGE_SELECT's top:K or share:P applies to the "
      "ranking it holds, so those families are profiled from their first launch (a short program's "
      "top kernel may be done before this run's own trace ranks it); the report says whether this "
      "run's trace matched that one"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.ranking_path); }},
    {{"CUTRIAGE_RANK_EARLY", "--rank-early", "1|0", "1",
      "deep mode with top:K or share:P: at a family's second launch, while its first has not come "
      "back from the trace (launches queued without a wait), wait for the context once and rank it "
      "then, so a short program's top kernel is profiled in this run; at most 64 waits, none once the "
      "process uses CUDA graphs; 0 leaves the ranking to the application's own waits"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.rank_early = *b;
       return ok();
     }},
    {{"CUTRIAGE_TRACE", "--trace", "1|0", "1",
      "trace every kernel execution with the CUPTI Activity API (needed by top: and share: "
      "selection, the application view and `cutriage trace`)"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.trace = *b;
       return ok();
     }},
    {{"CUTRIAGE_TRACE_MAX_EVENTS", "--trace-max-events", "N", "1000000",
      "timeline events (kernel executions, copies, NVTX ranges) kept in the file (the statistics "
      "cover every execution); 0 keeps statistics only"},
     "a non-negative integer",
     [](std::string_view v, AgentConfig& c) {
       return apply_unsigned(v, c.trace_max_events, 0, UINT64_MAX);
     }},
    {{"CUTRIAGE_TRACE_FLUSH_MS", "--trace-flush-ms", "MS", "100",
      "how often trace records are collected from CUPTI, in milliseconds (0: no periodic "
      "collection; full buffers and launches of unranked kernels still deliver)"},
     "an integer from 0 to 60000",
     [](std::string_view v, AgentConfig& c) {
       return apply_unsigned(v, c.trace_flush_ms, 0, 60000);
     }},
    {{"CUTRIAGE_TRACE_DUTY", "--trace-duty", "P%", "25% (always-on)",
      "always-on: keep the kernel trace on for P% of every CUTRIAGE_TRACE_PERIOD window and pause it "
      "for the rest; CUPTI times every traced kernel at a cost of its own (0.3-0.7% of the "
      "throughput of launch-heavy programs on the H200 while on), and the ranking and the family "
      "times come from the traced windows; 100% keeps it on (the default when CUTRIAGE_TRACE=0 or "
      "CUTRIAGE_TRACE_FLUSH_MS=0)"},
     "a percentage above 0 and at most 100, such as 25% or 100%",
     [](std::string_view v, AgentConfig& c) {
       c.trace_duty_set = true;
       return apply_fraction_of_percent(v, c.trace_duty, 100);
     }},
    {{"CUTRIAGE_TRACE_PERIOD", "--trace-period", "S", "60",
      "always-on: the window, in seconds, that CUTRIAGE_TRACE_DUTY divides into traced and paused time"},
     "an integer from 1 to 86400",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.trace_period_s, 1, 86400); }},
    {{"CUTRIAGE_NVTX_INCLUDE", "--nvtx-include", "NAME|regex:RE", "(no filter)",
      "profile only launches made inside an NVTX range named NAME (or matching RE)"},
     "an NVTX range name or regex:<ECMAScript regular expression>",
     [](std::string_view v, AgentConfig& c) { return apply_nvtx(v, c.nvtx_include); }},
    {{"CUTRIAGE_NVTX_EXCLUDE", "--nvtx-exclude", "NAME|regex:RE", "(no filter)",
      "never profile launches made inside an NVTX range named NAME (or matching RE)"},
     "an NVTX range name or regex:<ECMAScript regular expression>",
     [](std::string_view v, AgentConfig& c) { return apply_nvtx(v, c.nvtx_exclude); }},
    {{"CUTRIAGE_PC_SAMPLING", "--pc-sampling", "1|0", "1",
      "after a profiled kernel's counters are complete, sample its warp states on one more launch "
      "(kernel-serialized PC sampling) for Decisions 3 and 6: stall reasons per source line"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.pc_sampling = *b;
       return ok();
     }},
    {{"CUTRIAGE_GRAPH_PM_SAMPLING", "--graph-pm-sampling", "1|0", "1",
      "after a graph's counters are complete, PM-sample one of its launches so that its kernels with "
      "less than half of its time get counters of their own (Decision 2)"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.graph_pm_sampling = *b;
       return ok();
     }},
    {{"CUTRIAGE_GRAPH_PC_SAMPLING", "--graph-pc-sampling", "1|0", "0",
      "after a graph's counters, PC-sample one of its launches for its kernels' stall reasons and hot "
      "lines (off: CUPTI 13.0 returns no PC across a graph launch while the kernel trace runs, "
      "docs/graphs.md)"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.graph_pc_sampling = *b;
       return ok();
     }},
    {{"CUTRIAGE_PM_WINDOW", "--pm-window", "1|0", "1",
      "always-on: PM-sample one short window of the application's own launches (kernel trace on, no "
      "replay) so that every family with 5% of the GPU time gets a routed verdict (Decision 2) from its "
      "own samples within minutes; the range profiler's groups then add the depth"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.pm_window = *b;
       return ok();
     }},
    {{"CUTRIAGE_STAGE_PASSES", "--stage-passes", "1|0", "0",
      "always-on: collect a family's counters in stages, each one multi-pass configuration with one pass "
      "on each of the family's next launches (no replay), instead of one single-pass group a launch: one "
      "costly switch a stage instead of one a group (docs/always-on.md); experimental"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.stage_passes = *b;
       return ok();
     }},
    {{"CUTRIAGE_STEP_STAGES", "--step-stages", "0|N", "0",
      "always-on: collect every counter the rules read for every kernel of the application's step at "
      "once: the passes of one collection are the step's repeats (from one launch of the top family "
      "to its next), each launch of a pass one range; N is the most launches a step may have (2 to "
      "512), 0 is off (docs/always-on.md); experimental"},
     "0 (off) or an integer from 2 to 512",
     [](std::string_view v, AgentConfig& c) {
       if (trim(v) == "0") {
         c.step_launches = 0;
         return ok();
       }
       return apply_unsigned(v, c.step_launches, 2, 512);
     }},
    {{"CUTRIAGE_WARMUP", "--warmup", "1|0", "1",
      "always-on: pay CUPTI's one-off range-profiler start-up (the process's first Start, several times a "
      "later switch) at the first launch on each device of a family it profiles, reported apart from the budget, so that the "
      "budget's share goes to counters from the start; 0 leaves it to the first profiled launch, paid "
      "from the budget (docs/always-on.md)"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.warmup = *b;
       return ok();
     }},
    {{"CUTRIAGE_LAUNCH_GATE", "--launch-gate", "1|0", "0",
      "always-on, experimental: turn CUPTI's launch and wait callbacks off while nothing needs them "
      "(the trace paused, no profile due for a while), and on again before anything does: the "
      "callbacks cost every launch CPU time; launches made meanwhile are not counted "
      "(docs/always-on.md)"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.launch_gate = *b;
       c.launch_gate_set = true;
       return ok();
     }},
    {{"CUTRIAGE_PC_SAMPLING_PERIOD", "--pc-sampling-period", "auto|N", "auto",
      "one warp-state sample per SM every 2^N cycles, N from 5 to 31; auto picks N from the "
      "kernel's traced duration so that even a short kernel yields thousands of samples"},
     "auto or an integer from 5 to 31",
     [](std::string_view v, AgentConfig& c) {
       if (iequals(trim(v), "auto")) {
         c.pc_sampling_period_log2 = 0;
         return ok();
       }
       return apply_unsigned(v, c.pc_sampling_period_log2, 5, 31);
     }},
    {{"CUTRIAGE_CUBIN_CACHE_MB", "--cubin-cache-mb", "MB", "256",
      "memory for the cubins of loaded modules, kept to map sampled PCs to source lines (the "
      "oldest are dropped beyond it; 0 keeps none: samples then show SASS offsets only)"},
     "an integer from 0 to 65536",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.cubin_cache_mb, 0, 65536); }},
    {{"CUTRIAGE_PROMETHEUS_FILE", "--prometheus-file", "PATH", "(off)",
      "write the agent's counters in Prometheus text format to PATH (for node_exporter's textfile "
      "collector: name it *.prom), replaced atomically every CUTRIAGE_PROMETHEUS_INTERVAL_MS and at "
      "exit"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.prometheus_file); }},
    {{"CUTRIAGE_PROMETHEUS_INTERVAL_MS", "--prometheus-interval-ms", "MS", "15000",
      "how often the Prometheus file is rewritten, in milliseconds (with the trace's flush thread)"},
     "an integer from 100 to 3600000",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.prometheus_interval_ms, 100, 3600000); }},
    {{"CUTRIAGE_PROMETHEUS_DCGM_LABELS", "--prometheus-dcgm-labels", "1|0", "0",
      "1: the GPU's model label is named modelName, as dcgm-exporter names it, so series join with "
      "DCGM's on that label too (promtool check metrics then reports it: not snake_case); 0: "
      "model_name. gpu, UUID and Hostname are dcgm-exporter's names either way"},
     kBoolAccepts,
     [](std::string_view v, AgentConfig& c) {
       const std::optional<bool> b = parse_bool(v);
       if (!b) return bad();
       c.prometheus_dcgm_labels = *b;
       return ok();
     }},
    {{"CUTRIAGE_SEGMENT_MB", "--segment-mb", "MB", "0 (one file)",
      "write the output as segments of about MB megabytes (out.000001.pb, ...), each a complete "
      "file published by rename when the next begins; 0: one file"},
     "an integer from 0 to 1048576",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.segment_mb, 0, 1048576); }},
    {{"CUTRIAGE_SEGMENT_SECONDS", "--segment-seconds", "S", "0 (no age limit)",
      "start a new segment when the current one is S seconds old; 0: segments by size only"},
     "an integer from 0 to 31536000",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.segment_seconds, 0, 31536000); }},
    {{"CUTRIAGE_SEGMENT_KEEP", "--segment-keep", "N", "0 (all)",
      "keep the N newest published segments, deleting older ones; 0: keep all"},
     "an integer from 0 to 1000000",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.segment_keep, 0, 1000000); }},
    {{"CUTRIAGE_MODE", "--mode", "deep|always-on", "deep",
      "deep: profiled launches are replayed for every pass their metrics need (test runs); "
      "always-on: never replays, collects one single-pass metric group per sampled launch within "
      "CUTRIAGE_BUDGET, so a family's diagnosis assembles over repeated launches (production)"},
     "deep or always-on",
     [](std::string_view v, AgentConfig& c) {
       const std::string_view t = trim(v);
       if (iequals(t, "deep")) {
         c.mode = AgentMode::kDeep;
       } else if (iequals(t, "always-on") || iequals(t, "always_on")) {
         c.mode = AgentMode::kAlwaysOn;
       } else {
         return bad();
       }
       return ok();
     }},
    {{"CUTRIAGE_REPLAY", "--replay", "kernel|application", "kernel",
      "deep mode: kernel: a profiled launch is replayed in the process for every pass its counters "
      "need (device memory saved and restored between passes); application: no launch is replayed, "
      "each profiled launch carries one single-pass metric group and the program runs again for "
      "the rest (cutriage run does, each run continuing the last one's counters through "
      "CUTRIAGE_RESUME), like ncu --replay-mode application; not with CUTRIAGE_MODE=always-on"},
     "kernel or application",
     [](std::string_view v, AgentConfig& c) {
       const std::string_view t = trim(v);
       if (iequals(t, "kernel")) {
         c.replay = Replay::kKernel;
       } else if (iequals(t, "application")) {
         c.replay = Replay::kApplication;
       } else {
         return bad();
       }
       return ok();
     }},
    {{"CUTRIAGE_BUDGET", "--budget", "P%", "0.4%",
      "always-on: the most the agent's profiled and sampled launches may cost the application, as "
      "a share of wall time measured on its threads (the kernel trace is not included: see "
      "CUTRIAGE_TRACE_DUTY)"},
     "a percentage above 0 and at most 50, such as 0.5% or 2%",
     [](std::string_view v, AgentConfig& c) { return apply_fraction_of_percent(v, c.budget_fraction, 50); }},
    {{"CUTRIAGE_BUDGET_RATE", "--budget-rate", "N", "2",
      "always-on: at most N profiled or sampled launches a second (N may be fractional: 0.1 is one "
      "every 10 s)"},
     "a number above 0 and at most 1000",
     [](std::string_view v, AgentConfig& c) {
       const std::optional<double> n = parse_number(v);
       if (!n || !(*n > 0) || *n > 1000) return bad();
       c.budget_rate = *n;
       return ok();
     }},
    {{"CUTRIAGE_PC_SAMPLING_INTERVAL", "--pc-sampling-interval", "S", "600",
      "always-on: sample a family's PCs again after S seconds (its stalls may change with the "
      "traffic); 0: once per family"},
     "an integer from 0 to 31536000",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.pc_sampling_interval_s, 0, 31536000); }},
    {{"CUTRIAGE_RELEASE_MS", "--release-ms", "MS", "2000",
      "always-on: disable a context's range profiler MS milliseconds after its last profiled launch "
      "(an enabled profiler slows the launches it does not profile); 0: right after each one"},
     "an integer from 0 to 3600000",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.release_ms, 0, 3600000); }},
    {{"CUTRIAGE_RESUME", "--resume", "PATH", "(off)",
      "always-on and CUTRIAGE_REPLAY=application: an earlier output file of this program (its "
      "CUTRIAGE_OUTPUT; with segments, that base name): a family whose counters it holds continues "
      "from them instead of starting over, when the GPU chip and the launch shape are the same; a "
      "missing file starts afresh"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.resume_path); }},
    {{"CUTRIAGE_REPLICA", "--replica", "K/N", "(off)",
      "always-on: this process is replica K (from 0) of N of one service; each replica takes its metric "
      "groups in another order, so that N replicas measure different groups at once and `cutriage merge` "
      "of their files assembles each family's counters up to N times sooner"},
     "K/N with N from 1 to 1024 and K from 0 to N-1, such as 0/4 or 3/4",
     [](std::string_view v, AgentConfig& c) {
       const std::string_view t = trim(v);
       const size_t slash = t.find('/');
       if (slash == std::string_view::npos) return bad();
       const std::optional<uint64_t> k = parse_unsigned(t.substr(0, slash), 1023);
       const std::optional<uint64_t> n = parse_unsigned(t.substr(slash + 1), 1024);
       if (!k || !n || *n < 1 || *k >= *n) return bad();
       c.replica_index = static_cast<uint32_t>(*k);
       c.replica_count = static_cast<uint32_t>(*n);
       return ok();
     }},
    {{"CUTRIAGE_CONTROL_FILE", "--control-file", "PATH", "(off)",
      "a file the agent checks every trace flush; writing \"deep [SECONDS] [TARGET]\" to it requests a "
      "deep capture (the agent deletes it when read)"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.control_file); }},
    {{"CUTRIAGE_CONTROL_SIGNAL", "--control-signal", "off|usr1|usr2", "off",
      "a signal that requests a deep capture of CUTRIAGE_DEEP_TARGET (the agent installs no handler "
      "when the application has one)"},
     "off, usr1 or usr2",
     [](std::string_view v, AgentConfig& c) {
       const std::string_view t = trim(v);
       if (iequals(t, "off")) {
         c.control_signal = ControlSignal::kOff;
       } else if (iequals(t, "usr1") || iequals(t, "sigusr1")) {
         c.control_signal = ControlSignal::kUsr1;
       } else if (iequals(t, "usr2") || iequals(t, "sigusr2")) {
         c.control_signal = ControlSignal::kUsr2;
       } else {
         return bad();
       }
       return ok();
     }},
    {{"CUTRIAGE_DEEP_SECONDS", "--deep-seconds", "S", "30",
      "how long a deep-capture window stays open (replay allowed for its targets)"},
     "an integer from 1 to 3600",
     [](std::string_view v, AgentConfig& c) { return apply_unsigned(v, c.deep_seconds, 1, 3600); }},
    {{"CUTRIAGE_DEEP_TARGET", "--deep-target", "top:N|NAME|regex:RE", "top:3",
      "what a deep capture without a target profiles: the N largest families, or kernels matching "
      "the name (CUTRIAGE_KERNEL_NAME's syntax)"},
     "top:<N> or a kernel name or regex:<expression>",
     [](std::string_view v, AgentConfig& c) {
       std::string error = check_deep_target(v);
       if (!error.empty()) return bad(std::move(error));
       c.deep_target = std::string(trim(v));
       return ok();
     }},
}};

}  // namespace

std::span<const Option> options() { return kOptions; }

}  // namespace cutriage::agent::config_parse
