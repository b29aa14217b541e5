// Numbers as people read them in a report: counts with thousands separators, so that a reading
// never shows 131472828 beside 37,584. Text only; nothing parses these back.
#pragma once

#include <string>

namespace cutriage::base {

// `v` rounded to an integer, digits in groups of three: 131472828 -> "131,472,828", -12345 ->
// "-12,345". Values whose magnitude is not below 1e18 (or not finite) are written as "%g" does.
std::string grouped_integer(double v);

}  // namespace cutriage::base
