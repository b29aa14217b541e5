// Internal: number formatting and threshold distances shared by the Decision 3-6 rules.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>

#include "cutriage/base/numbers.h"

namespace cutriage::triage::detail {

// Fixed-point text of `v` with `precision` decimals ("?" if it cannot be printed).
inline std::string num(double v, int precision = 2) {
  // Counts (no decimals) from five digits on are grouped like every other count in a report.
  if (precision == 0 && std::isfinite(v) && std::fabs(v) >= 10000) return base::grouped_integer(v);
  char buf[128];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  if (res.ec != std::errc{}) return "?";
  return std::string(buf, res.ptr);
}

// A share in [0, 1] as a percentage with one decimal: 0.5 -> "50.0%".
inline std::string share_pct(double share) { return num(share * 100.0, 1) + "%"; }

// How far `value` is past `threshold`, as a fraction of the threshold (>= 0): a rule's severity.
inline double above(double value, double threshold) {
  return threshold > 0 ? std::max(0.0, value / threshold - 1.0) : std::max(0.0, value);
}
inline double below(double value, double threshold) {
  return threshold > 0 ? std::max(0.0, 1.0 - value / threshold) : 0.0;
}

}  // namespace cutriage::triage::detail
