// The agent's configuration: see config.h for the contract.
//
// Every public function here catches everything: this code runs inside the profiled application,
// where an escaping exception would terminate it. Errors travel as messages instead.
#include "config.h"

#include <unistd.h>  // environ

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_text.h"

namespace cutriage::agent {
namespace {

constexpr std::string_view kPrefix = "CUTRIAGE_";

// Variables of the `cutriage run` tool and of tests/run.sh that share the prefix but are none of
// the agent's options.
// They are accepted silently and take part in "did you mean" suggestions.
constexpr std::array<std::string_view, 3> kToolOnlyVariables = {"CUTRIAGE_LIBRARY", "CUTRIAGE_CMAKE_ARGS",
                                                              "CUTRIAGE_BUILD_DIR"};

using config_text::kMaxShownValue;
using config_text::kRegexPrefix;

// ---------------------------------------------------------------------------------------------
// Small string helpers

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_upper(a[i]) != ascii_upper(b[i])) return false;
  }
  return true;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

using config_text::shown;

// ---------------------------------------------------------------------------------------------
// Value parsers. Each returns nullopt for a value it does not accept; the caller words the error.

std::optional<bool> parse_bool(std::string_view value) {
  const std::string_view v = trim(value);
  for (const std::string_view yes : {"1", "on", "true", "yes"}) {
    if (iequals(v, yes)) return true;
  }
  for (const std::string_view no : {"0", "off", "false", "no"}) {
    if (iequals(v, no)) return false;
  }
  return std::nullopt;
}

// Unsigned decimal, surrounding whitespace allowed; no sign, no inner space, no trailing junk, no
// value above `max`. Leading zeros are fine ("007" is 7).
std::optional<uint64_t> parse_unsigned(std::string_view value, uint64_t max) {
  const std::string_view v = trim(value);
  if (v.empty()) return std::nullopt;
  uint64_t n = 0;
  for (const char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (n > (max - digit) / 10) return std::nullopt;  // n * 10 + digit would exceed max
    n = n * 10 + digit;
  }
  return n;
}

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

// A decimal number ("0.5", "2", "12.25"): digits with at most one '.', no sign or exponent, so
// the locale and strtod's extras never matter.
std::optional<double> parse_number(std::string_view value) {
  const std::string_view v = trim(value);
  if (v.empty() || v.size() > 32) return std::nullopt;
  double whole = 0;
  double scale = 0;  // 0 before the '.', then 0.1, 0.01, ...
  bool digits = false;
  for (char ch : v) {
    if (ch == '.') {
      if (scale != 0) return std::nullopt;
      scale = 0.1;
      continue;
    }
    if (ch < '0' || ch > '9') return std::nullopt;
    digits = true;
    if (scale == 0) {
      whole = whole * 10 + (ch - '0');
    } else {
      whole += (ch - '0') * scale;
      scale /= 10;
    }
  }
  if (!digits) return std::nullopt;
  return whole;
}

// "0.5%" or "0.5" (percent either way).
std::optional<double> parse_percent(std::string_view value) {
  std::string_view v = trim(value);
  if (!v.empty() && v.back() == '%') v.remove_suffix(1);
  return parse_number(v);
}

// ---------------------------------------------------------------------------------------------
// The option table: the public OptionSpec plus what the parser needs. One entry per option. A
// handler either stores the value or returns a bad Problem; the caller words the one message
// (variable, value, the Problem's detail if any, "expected " + accepts) and never sees a throw.

struct Problem {
  bool bad = false;
  std::string detail;  // optional, before "expected ..."
};

Problem ok() { return {}; }
Problem bad(std::string detail = {}) { return {true, std::move(detail)}; }

using Handler = Problem (*)(std::string_view value, AgentConfig& config);

struct Option {
  OptionSpec spec;
  std::string_view accepts;  // what the error message says the variable accepts
  Handler apply;
};

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
const std::array<Option, 41> kOptions = {{
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
    {{"CUTRIAGE_METRICS", "--metrics", "adaptive|full|base|list:M[,M...]", "adaptive",
      "adaptive: Decisions 0-2 first, then what the route asks for; full: everything every rule "
      "reads; base: Decisions 0-2 only; list: exactly these CUPTI metrics"},
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
      "always-on: an earlier output file of this program (its CUTRIAGE_OUTPUT; with segments, that "
      "base name): a family whose counters it holds continues from them instead of starting over, "
      "when the GPU chip and the launch shape are the same; a missing file starts afresh"},
     "a file path",
     [](std::string_view v, AgentConfig& c) { return apply_path(v, c.resume_path); }},
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

std::string_view trim_whitespace(std::string_view s) { return trim(s); }

std::string_view mode_name(AgentMode mode) { return mode == AgentMode::kAlwaysOn ? "always-on" : "deep"; }

std::optional<DeepTarget> parse_deep_target(std::string_view target, NameBase base, std::string* error) {
  const std::string_view t = trim(target);
  if (t.empty()) {
    *error = "the target is empty";
    return std::nullopt;
  }
  DeepTarget out;
  if (istarts_with(t, "top:")) {
    const std::optional<uint64_t> k = parse_unsigned(t.substr(4), 1000);
    if (!k || *k == 0) {
      *error = "top: needs a count from 1 to 1000";
      return std::nullopt;
    }
    out.top = static_cast<uint32_t>(*k);
    return out;
  }
  *error = out.filter.set(target, base);
  if (!error->empty()) return std::nullopt;
  return out;
}

std::string check_deep_target(std::string_view target) {
  std::string error;
  (void)parse_deep_target(target, NameBase::kFunction, &error);
  return error;
}

namespace {

const Option* find_option(std::string_view name) {
  for (const Option& o : kOptions) {
    if (o.spec.env == name) return &o;
  }
  return nullptr;
}

bool is_tool_only(std::string_view name) {
  return std::find(kToolOnlyVariables.begin(), kToolOnlyVariables.end(), name) !=
         kToolOnlyVariables.end();
}

// Levenshtein distance, case-insensitive (a lower-case key is a typo of the upper-case one).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (ascii_upper(a[i - 1]) == ascii_upper(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (iequals(hay.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

// The known name an unknown one was most likely meant to be, or empty. Compares the parts after
// the prefix, preferring in turn: a near miss (edit distance <= 2: "LAUNCH_CONT"), one name
// containing the other ("SKIP" for LAUNCH_SKIP, "KERNEL_NAME_REGEX" for KERNEL_NAME, which a
// distance alone would send to KERNEL_NAME_BASE), a looser typo (distance <= 2 + length / 5).
// Within a tier the smaller distance wins, then the table's order.
std::string_view closest_known(std::string_view unknown) {
  constexpr std::size_t kMaxCompared = 64;  // longer names are no typo; also bounds the cost
  const std::string_view u = unknown.substr(kPrefix.size());
  if (u.empty() || u.size() > kMaxCompared) return {};
  std::string_view best;
  std::pair<int, std::size_t> best_rank = {3, SIZE_MAX};  // (tier, distance); tier 3 = unrelated
  auto consider = [&](std::string_view known) {
    const std::string_view k = known.substr(kPrefix.size());
    const std::size_t d = edit_distance(u, k);
    int tier = 3;
    if (d <= 2) {
      tier = 0;
    } else if (std::min(u.size(), k.size()) >= 4 && (icontains(k, u) || icontains(u, k))) {
      tier = 1;
    } else if (d <= 2 + k.size() / 5) {
      tier = 2;
    }
    const std::pair<int, std::size_t> rank = {tier, d};
    if (tier < 3 && rank < best_rank) {
      best = known;
      best_rank = rank;
    }
  };
  for (const Option& o : kOptions) consider(o.spec.env);
  for (const std::string_view t : kToolOnlyVariables) consider(t);
  return best;
}

ConfigResult parse_config_impl(const std::vector<std::pair<std::string, std::string>>& env) {
  ConfigResult result;
  std::array<bool, kOptions.size()> seen{};
  std::vector<std::string_view> unknown_seen;
  for (const auto& [name, value] : env) {
    if (name.size() < kPrefix.size() || std::string_view(name).substr(0, kPrefix.size()) != kPrefix) {
      continue;
    }
    if (is_tool_only(name)) continue;
    const Option* option = find_option(name);
    if (option == nullptr) {
      if (std::find(unknown_seen.begin(), unknown_seen.end(), name) != unknown_seen.end()) continue;
      unknown_seen.emplace_back(name);
      std::string message = "unknown variable " + shown(name) + " ignored";
      const std::string_view suggestion = closest_known(name);
      if (!suggestion.empty()) message += " (did you mean " + std::string(suggestion) + "?)";
      result.issues.push_back({ConfigIssue::Severity::kWarning, name, std::move(message)});
      continue;
    }
    const auto index = static_cast<std::size_t>(option - kOptions.data());
    if (seen[index]) continue;  // the first occurrence counts, as getenv(3) sees it
    seen[index] = true;
    if (value.empty()) continue;  // empty is unset
    Problem problem = option->apply(value, result.config);
    if (!problem.bad) continue;
    std::string message = std::string(option->spec.env) + "=" + shown(value) + ": ";
    if (!problem.detail.empty()) message += problem.detail + "; ";
    message += "expected ";
    message += option->accepts;
    result.issues.push_back({ConfigIssue::Severity::kError, std::string(option->spec.env), std::move(message)});
  }
  if (!result.config.trace &&
      (result.config.select == SelectMode::kTop || result.config.select == SelectMode::kShare)) {
    result.issues.push_back({ConfigIssue::Severity::kError, "CUTRIAGE_SELECT",
                             "CUTRIAGE_SELECT=" + select_spec(result.config) +
                                 " ranks kernels by traced GPU time, but CUTRIAGE_TRACE=0 turns the "
                                 "trace off; expected CUTRIAGE_SELECT=all or none with CUTRIAGE_TRACE=0"});
  }
  if (!result.config.trace_duty_set && result.config.mode == AgentMode::kAlwaysOn && result.config.trace &&
      result.config.trace_flush_ms > 0) {
    result.config.trace_duty = kAlwaysOnTraceDuty;
  }
  if (result.config.trace_duty < 1.0 && result.config.mode == AgentMode::kAlwaysOn) {
    // The flush thread switches the trace on and off: without it (or without a trace) the duty
    // would silently not apply.
    if (!result.config.trace) {
      result.issues.push_back({ConfigIssue::Severity::kError, "CUTRIAGE_TRACE_DUTY",
                               "CUTRIAGE_TRACE_DUTY below 100% pauses the kernel trace, but "
                               "CUTRIAGE_TRACE=0 turns it off; expected CUTRIAGE_TRACE_DUTY=100% with "
                               "CUTRIAGE_TRACE=0"});
    } else if (result.config.trace_flush_ms == 0) {
      result.issues.push_back({ConfigIssue::Severity::kError, "CUTRIAGE_TRACE_DUTY",
                               "CUTRIAGE_TRACE_DUTY below 100% needs the periodic trace collection "
                               "that switches the trace, but CUTRIAGE_TRACE_FLUSH_MS=0 turns it off; "
                               "expected CUTRIAGE_TRACE_FLUSH_MS from 1 to 60000"});
    }
  }
  if (!result.ok()) result.config.enabled = false;
  return result;
}

}  // namespace

std::string select_spec(const AgentConfig& config) {
  switch (config.select) {
    case SelectMode::kAll: return "all";
    case SelectMode::kNone: return "none";
    case SelectMode::kTop: return "top:" + std::to_string(config.select_top);
    case SelectMode::kShare: {
      const double pct = config.select_min_share * 100.0;
      const auto tenths = static_cast<uint64_t>(std::llround(pct * 10.0));
      std::string s = "share:" + std::to_string(tenths / 10);
      if (tenths % 10 != 0) s += "." + std::to_string(tenths % 10);
      return s + "%";
    }
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Public functions

bool ConfigResult::ok() const {
  return std::none_of(issues.begin(), issues.end(), [](const ConfigIssue& issue) {
    return issue.severity == ConfigIssue::Severity::kError;
  });
}

const std::vector<OptionSpec>& config_options() {
  // Built once from kOptions; if even that allocation fails the list is empty, parsing (which
  // reads kOptions directly) is unaffected.
  static const std::vector<OptionSpec> options = []() -> std::vector<OptionSpec> {
    try {
      std::vector<OptionSpec> out;
      out.reserve(kOptions.size());
      for (const Option& o : kOptions) out.push_back(o.spec);
      return out;
    } catch (...) {
      return {};
    }
  }();
  return options;
}

ConfigResult parse_config(const std::vector<std::pair<std::string, std::string>>& env) {
  try {
    return parse_config_impl(env);
  } catch (...) {
    // Only allocation can fail here. Stay off: a half-read configuration might have missed the
    // off switch.
    ConfigResult result;
    result.config.enabled = false;
    try {
      result.issues.push_back({ConfigIssue::Severity::kError, {}, "cannot read the configuration (out of memory)"});
    } catch (...) {
    }
    return result;
  }
}

std::vector<std::pair<std::string, std::string>> process_environment() {
  std::vector<std::pair<std::string, std::string>> out;
  try {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      const std::string_view kv(*entry);
      const std::size_t eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      out.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
  } catch (...) {
    out.clear();
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> parse_config_string(std::string_view text,
                                                                                   std::string* error) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(";\n", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view entry = trim(text.substr(start, end - start));
    start = end + 1;
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      if (error) *error = "entry '" + shown(entry) + "' has no '=' (expected CUTRIAGE_NAME=VALUE)";
      return std::nullopt;
    }
    const std::string_view name = trim(entry.substr(0, eq));
    if (name.substr(0, kPrefix.size()) != kPrefix || name.size() == kPrefix.size()) {
      if (error) *error = "entry '" + shown(entry) + "' does not name a CUTRIAGE_* option";
      return std::nullopt;
    }
    out.emplace_back(std::string(name), std::string(entry.substr(eq + 1)));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> with_overrides(
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::pair<std::string, std::string>> out = overrides;
  for (const auto& kv : env) {
    const bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                      [&](const auto& o) { return o.first == kv.first; });
    if (!replaced) out.push_back(kv);
  }
  return out;
}

namespace config_text {

std::string shown(std::string_view value) {
  std::string_view head = value;
  const bool cut = value.size() > kMaxShownValue;
  if (cut) {
    std::size_t n = kMaxShownValue;
    // Back off over UTF-8 continuation bytes (10xxxxxx) so the cut lands on a character start.
    while (n > 0 && (static_cast<unsigned char>(value[n]) & 0xC0U) == 0x80U) --n;
    head = value.substr(0, n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : head) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20U || u == 0x7FU) {
      out += "\\x";
      out += kHex[u >> 4U];
      out += kHex[u & 0xFU];
    } else {
      out += c;
    }
  }
  out += '"';
  if (cut) out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

}  // namespace config_text
}  // namespace cutriage::agent
