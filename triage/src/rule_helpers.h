// Internal: small formatting and lookup helpers shared by the rule tables (rules_d*.cpp).
// Header-only, standard library only. Keep it small and stable: several rule files include it.
#pragma once

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "cutriage/triage/inputs.h"

namespace cutriage::triage::detail {

// A number with a fixed count of decimals ("42.5"); "nan"/"inf" for non-finite values.
inline std::string fmt(double value, int decimals = 1) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
  if (res.ec != std::errc{}) return "?";
  return std::string(buf, res.ptr);
}

// A percentage: "42.5%".
inline std::string pct(double value, int decimals = 1) { return fmt(value, decimals) + "%"; }

// An integer-valued quantity: "132".
inline std::string count(double value) { return fmt(value, 0); }

// A ratio with a multiplication sign: "1.35x".
inline std::string times(double value, int decimals = 2) { return fmt(value, decimals) + "x"; }

// True when `name` ends with `suffix`.
inline bool ends_with(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

// True when `name` starts with `prefix`.
inline bool starts_with(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix;
}

// a / b, or nullopt when b is zero or either is not finite.
inline std::optional<double> safe_ratio(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b) || b == 0) return std::nullopt;
  return a / b;
}

}  // namespace cutriage::triage::detail
