#include "cutriage/base/numbers.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace cutriage::base {

std::string grouped_integer(double v) {
  if (!std::isfinite(v) || std::fabs(v) >= 1e18) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  const auto n = static_cast<long long>(std::llround(v));
  const std::string digits = std::to_string(n < 0 ? -static_cast<unsigned long long>(n) : static_cast<unsigned long long>(n));
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace cutriage::base
