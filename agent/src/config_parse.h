// What the configuration's parser (config.cpp) and its option table (config_options.cpp) share:
// the value parsers and the table's shape. Internal to cutriage_agent_config.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "config.h"

namespace cutriage::agent::config_parse {

// ---- strings (ASCII, case-insensitive where named so) ----------------------------------------
bool is_space(char c);  // the C locale's isspace
std::string_view trim(std::string_view s);
bool iequals(std::string_view a, std::string_view b);
bool istarts_with(std::string_view s, std::string_view prefix);

// ---- values: nullopt for a value not accepted (the caller words the error) -------------------
// 1, 0, on, off, true, false, yes, no.
std::optional<bool> parse_bool(std::string_view value);
// Unsigned decimal, surrounding whitespace allowed; no sign, no inner space, no trailing junk, no
// value above `max`. Leading zeros are fine ("007" is 7).
std::optional<uint64_t> parse_unsigned(std::string_view value, uint64_t max);
// A decimal number ("0.5", "2", "12.25"): digits with at most one '.', no sign or exponent, so
// the locale and strtod's extras never matter.
std::optional<double> parse_number(std::string_view value);
// "0.5%" or "0.5" (percent either way).
std::optional<double> parse_percent(std::string_view value);

// ---- the option table ------------------------------------------------------------------------
// The public OptionSpec plus what the parser needs. One entry per option. A handler either stores
// the value or returns a bad Problem; the caller words the one message (variable, value, the
// Problem's detail if any, "expected " + accepts) and never sees a throw.
struct Problem {
  bool bad = false;
  std::string detail;  // optional, before "expected ..."
};

inline Problem ok() { return {}; }
inline Problem bad(std::string detail = {}) { return {true, std::move(detail)}; }

using Handler = Problem (*)(std::string_view value, AgentConfig& config);

struct Option {
  OptionSpec spec;
  std::string_view accepts;  // what the error message says the variable accepts
  Handler apply;
};

// Every option, in the order help and docs list them (config_options.cpp). Parsing does not
// depend on the order.
std::span<const Option> options();

}  // namespace cutriage::agent::config_parse
