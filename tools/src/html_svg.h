// Small builders for the HTML report (html_report.cpp): HTML escaping, and inline SVG drawn from
// numbers (lines, boxes, points, labels, log and linear axes). The page has to open with no
// network, so everything is inline: no xmlns (an SVG element inside HTML needs none), no external
// fonts, no scripts.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cutriage::tools::html {

// `text` safe as HTML text and as a double- or single-quoted attribute value: & < > " ' as
// entities. Bytes that could not be shown as written are made visible first, as the text report
// does (report.h terminal_safe): control characters as "\x1b", bytes that are not UTF-8 as
// "\xff", so the page is valid UTF-8 with no control characters whatever the file held.
std::string escape(std::string_view text);

// `s` cut to `width` code points, the cut marked with an ellipsis.
std::string cut(std::string_view s, size_t width);

// A coordinate or length for an SVG attribute: two decimals at most, no trailing zeros, never
// in exponent form ("12.5", "0", "-3.25"); a value that is not finite is written as 0.
std::string num(double v);

// "66.9 T", "4.81 T", "512 G", "12.3": three significant digits with an SI prefix (k M G T P E),
// for axis labels and peak figures.
std::string si(double v);

// Maps a positive value to a position on a logarithmic axis spanning whole decades
// [10^lo, 10^hi] onto pixels [px_lo, px_hi] (px_hi may be smaller: SVG's y grows downwards).
struct LogAxis {
  int lo = 0;
  int hi = 1;
  double px_lo = 0;
  double px_hi = 1;
  // The decades that cover [min_value, max_value] (both > 0), at least `min_decades` wide.
  static LogAxis covering(double min_value, double max_value, double px_lo, double px_hi, int min_decades = 2);
  [[nodiscard]] double at(double value) const;  // values <= 0 go to px_lo
  [[nodiscard]] double value_at(double px) const;
};

// An inline <svg> element built up one shape at a time. Every text and title given is escaped
// here; `cls` names a class of the page's style sheet; `extra` is markup the caller made safe
// (attributes of numbers, built with num()).
class Svg {
 public:
  // `label` is the chart's accessible name (aria-label, and a <title> for tooltips).
  Svg(double width, double height, std::string_view cls, std::string_view label, std::string_view extra = {});

  void line(double x1, double y1, double x2, double y2, std::string_view cls);
  void rect(double x, double y, double w, double h, std::string_view cls, std::string_view fill = {},
            std::string_view title = {}, std::string_view extra = {});
  void circle(double cx, double cy, double r, std::string_view cls, std::string_view title = {},
              std::string_view extra = {});
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view cls, std::string_view extra = {});
  // anchor: "start", "middle" or "end"; `rotate` degrees about (x, y) (-90: a vertical axis label).
  void text(double x, double y, std::string_view text, std::string_view cls, std::string_view anchor = "start",
            double rotate = 0);

  // The element, closed.
  [[nodiscard]] std::string str() const { return body_ + "</svg>"; }

 private:
  std::string body_;
};

}  // namespace cutriage::tools::html
