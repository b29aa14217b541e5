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
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_parse.h"
#include "config_text.h"

namespace cutriage::agent {

// ---------------------------------------------------------------------------------------------
// Small string helpers and value parsers (config_parse.h)

namespace config_parse {
namespace {

char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

}  // namespace

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

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

std::optional<double> parse_percent(std::string_view value) {
  std::string_view v = trim(value);
  if (!v.empty() && v.back() == '%') v.remove_suffix(1);
  return parse_number(v);
}

}  // namespace config_parse

using config_parse::ascii_upper;
using config_parse::iequals;
using config_parse::istarts_with;
using config_parse::Option;
using config_parse::parse_unsigned;
using config_parse::trim;

namespace {

constexpr std::string_view kPrefix = "CUTRIAGE_";

// Variables of the `cutriage run` tool and of tests/run.sh that share the prefix but are none of
// the agent's options.
// They are accepted silently and take part in "did you mean" suggestions.
constexpr std::array<std::string_view, 3> kToolOnlyVariables = {"CUTRIAGE_LIBRARY", "CUTRIAGE_CMAKE_ARGS",
                                                              "CUTRIAGE_BUILD_DIR"};

using config_text::shown;

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
  for (const Option& o : config_parse::options()) {
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
  for (const Option& o : config_parse::options()) consider(o.spec.env);
  for (const std::string_view t : kToolOnlyVariables) consider(t);
  return best;
}

ConfigResult parse_config_impl(const std::vector<std::pair<std::string, std::string>>& env) {
  ConfigResult result;
  const std::span<const Option> all = config_parse::options();
  std::vector<bool> seen(all.size(), false);
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
    const auto index = static_cast<std::size_t>(option - all.data());
    if (seen[index]) continue;  // the first occurrence counts, as getenv(3) sees it
    seen[index] = true;
    if (value.empty()) continue;  // empty is unset
    config_parse::Problem problem = option->apply(value, result.config);
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
  if (result.config.replay == Replay::kApplication && result.config.mode == AgentMode::kAlwaysOn) {
    result.issues.push_back({ConfigIssue::Severity::kError, "CUTRIAGE_REPLAY",
                             "CUTRIAGE_REPLAY=application is deep mode's way to profile without replaying a "
                             "kernel, and CUTRIAGE_MODE=always-on never replays one already (one single-pass "
                             "group per launch the budget admits); expected CUTRIAGE_REPLAY=kernel (or unset) "
                             "with CUTRIAGE_MODE=always-on, or CUTRIAGE_MODE=deep"});
  }
  if (!result.config.metric_mode_set && result.config.mode == AgentMode::kDeep &&
      result.config.replay == Replay::kKernel) {
    result.config.metric_mode = MetricMode::kFull;
  }
  if (!result.config.trace_duty_set && result.config.mode == AgentMode::kAlwaysOn && result.config.trace &&
      result.config.trace_flush_ms > 0) {
    result.config.trace_duty = kAlwaysOnTraceDuty;
  }
  if (result.config.launch_gate_set && result.config.launch_gate && result.config.mode == AgentMode::kAlwaysOn &&
      result.config.trace_flush_ms == 0) {
    // The flush thread switches the callbacks: without it the gate would silently stay open.
    result.issues.push_back({ConfigIssue::Severity::kError, "CUTRIAGE_LAUNCH_GATE",
                             "CUTRIAGE_LAUNCH_GATE=1 needs the periodic collection that switches the "
                             "callbacks, but CUTRIAGE_TRACE_FLUSH_MS=0 turns it off; expected "
                             "CUTRIAGE_LAUNCH_GATE=0 with CUTRIAGE_TRACE_FLUSH_MS=0"});
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
  // Built once from the table; if even that allocation fails the list is empty, parsing (which
  // reads the table directly) is unaffected.
  static const std::vector<OptionSpec> options = []() -> std::vector<OptionSpec> {
    try {
      std::vector<OptionSpec> out;
      out.reserve(config_parse::options().size());
      for (const Option& o : config_parse::options()) out.push_back(o.spec);
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
