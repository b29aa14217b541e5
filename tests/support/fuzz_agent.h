// What each fuzzer of the agent's configuration parsers does with one input, shared by the
// libFuzzer targets (tests/fuzz/) and the Catch2 regression tests (tests/unit/agent/) that replay
// the inputs under tests/data/fuzz-regressions/. Written against the contract in agent/src/config.h.
//
// Inputs are text so that seeds and regression files stay readable:
//   config        lines NAME=VALUE, the environment parse_config sees (a line without '=' is a
//                 variable with an empty value)
//   path pattern  line 1: how many candidate paths exist already (a decimal number, capped);
//                 line 2: the pattern; further lines NAME=VALUE: the environment for %q{NAME}
//   kernel filter line 1: the name base (function, demangled or mangled); line 2: the filter
//                 spec; further lines: kernel names, each matched as mangled, demangled and
//                 function name
// Each function returns the first contract violation as one line ("" when none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config.h"

namespace cutriage::fuzz {

// Splits at '\n' (a trailing '\r' stays part of the line: the parsers must cope with it).
inline std::vector<std::string_view> fuzz_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    lines.push_back(text.substr(0, eol));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return lines;
}

inline std::vector<std::pair<std::string, std::string>> fuzz_environment(
    const std::vector<std::string_view>& lines, size_t first) {
  std::vector<std::pair<std::string, std::string>> env;
  for (size_t i = first; i < lines.size(); ++i) {
    const size_t eq = lines[i].find('=');
    if (eq == std::string_view::npos) {
      env.emplace_back(std::string(lines[i]), std::string());
    } else {
      env.emplace_back(std::string(lines[i].substr(0, eq)), std::string(lines[i].substr(eq + 1)));
    }
  }
  return env;
}

// parse_config: deterministic; every issue names a CUTRIAGE_* variable and is one line.
inline std::string exercise_config(std::string_view text) {
  const auto env = fuzz_environment(fuzz_lines(text), 0);
  const agent::ConfigResult first = agent::parse_config(env);
  for (const agent::ConfigIssue& issue : first.issues) {
    if (issue.variable.rfind("CUTRIAGE_", 0) != 0) return "an issue about '" + issue.variable + "'";
    if (issue.message.empty() || issue.message.find('\n') != std::string::npos) {
      return "the message about " + issue.variable + " is not one line";
    }
  }
  const agent::ConfigResult second = agent::parse_config(env);
  if (second.issues.size() != first.issues.size() || second.ok() != first.ok()) {
    return "parse_config is not deterministic";
  }
  // The parsed filter is usable on any name.
  (void)first.config.kernel_filter.matches("_Z6kernelv", "kernel()", "kernel");
  return "";
}

// expand_path_pattern: nullopt always comes with an error; a pattern without '%' is the path.
inline std::string exercise_path_pattern(std::string_view text) {
  const auto lines = fuzz_lines(text);
  uint32_t existing = 0;
  if (!lines.empty()) {
    for (char c : lines[0]) {
      if (c < '0' || c > '9') break;
      existing = existing * 10 + static_cast<uint32_t>(c - '0');
      if (existing > 1000) break;
    }
  }
  if (existing > 1000) existing = 1000;  // the expander may probe every number up to here
  const std::string_view pattern = lines.size() > 1 ? lines[1] : std::string_view{};
  const auto env = fuzz_environment(lines, 2);

  agent::PathContext ctx;
  ctx.pid = 4242;
  ctx.host = "node01";
  ctx.getenv = [&env](std::string_view name) -> std::optional<std::string> {
    for (const auto& [k, v] : env) {
      if (k == name) return v;
    }
    return std::nullopt;
  };
  uint32_t probes = 0;
  ctx.exists = [&probes, existing](const std::string&) { return probes++ < existing; };

  std::string error;
  const std::optional<std::string> path = agent::expand_path_pattern(pattern, ctx, &error);
  if (!path && error.empty()) return "failed without an error";
  if (path && pattern.find('%') == std::string_view::npos && *path != pattern) {
    return "a pattern without % was changed";
  }
  return "";
}

// KernelFilter: set() either accepts the spec or explains why not; an empty filter matches
// everything; copies match like the original.
inline std::string exercise_kernel_filter(std::string_view text) {
  const auto lines = fuzz_lines(text);
  agent::NameBase base = agent::NameBase::kFunction;
  if (!lines.empty() && lines[0] == "demangled") base = agent::NameBase::kDemangled;
  if (!lines.empty() && lines[0] == "mangled") base = agent::NameBase::kMangled;
  const std::string_view spec = lines.size() > 1 ? lines[1] : std::string_view{};

  agent::KernelFilter filter;
  const std::string error = filter.set(spec, base);
  if (!error.empty()) {
    if (error.find('\n') != std::string::npos) return "the error is not one line";
    return "";
  }
  const agent::KernelFilter copy = filter;
  for (size_t i = 2; i < lines.size(); ++i) {
    const bool m = filter.matches(lines[i], lines[i], lines[i]);
    if (filter.empty() && !m) return "an empty filter rejected a name";
    if (copy.matches(lines[i], lines[i], lines[i]) != m) return "a copy matches differently";
  }
  return "";
}

// parse_config_string (cutriage_init's argument): a refusal says why in one line; every entry it
// returns is a CUTRIAGE_* name and a value without the separators (';', line breaks); those
// entries over an environment parse as exercise_config expects.
inline std::string exercise_init_string(std::string_view text) {
  std::string error;
  const auto entries = agent::parse_config_string(text, &error);
  if (!entries) {
    if (error.empty()) return "refused without an error";
    if (error.find('\n') != std::string::npos) return "the error is not one line: " + error;
    return "";
  }
  for (const auto& [name, value] : *entries) {
    if (name.rfind("CUTRIAGE_", 0) != 0) return "an entry named '" + name + "'";
    if (name.find_first_of(";\n=") != std::string::npos) return "a name holding a separator";
    if (value.find_first_of(";\n") != std::string::npos) return "a value holding a separator";
  }
  const auto env = agent::with_overrides({{"CUTRIAGE_SELECT", "top:2"}, {"HOME", "/root"}}, *entries);
  const agent::ConfigResult result = agent::parse_config(env);
  for (const agent::ConfigIssue& issue : result.issues) {
    if (issue.variable.rfind("CUTRIAGE_", 0) != 0) return "an issue about '" + issue.variable + "'";
    if (issue.message.empty() || issue.message.find('\n') != std::string::npos) {
      return "the message about " + issue.variable + " is not one line";
    }
  }
  return "";
}

}  // namespace cutriage::fuzz
