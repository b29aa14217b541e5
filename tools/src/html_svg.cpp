#include "html_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report.h"

namespace cutriage::tools::html {

std::string cut(std::string_view s, size_t width) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (seen++ == width) return std::string(s.substr(0, i)) + "\u2026";
  }
  return std::string(s);
}

std::string escape(std::string_view text) {
  const std::string visible = terminal_safe(text, false);
  std::string out;
  out.reserve(visible.size());
  for (char c : visible) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string si(double v) {
  if (!std::isfinite(v)) return "-";
  static constexpr const char* kPrefix[] = {"", " k", " M", " G", " T", " P", " E"};
  int p = 0;
  double a = std::fabs(v);
  while (a >= 999.5 && p < 6) {
    a /= 1000;
    v /= 1000;
    ++p;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, a >= 99.95 ? "%.0f%s" : a >= 9.995 ? "%.1f%s" : "%.2f%s", v, kPrefix[p]);
  return buf;
}

LogAxis LogAxis::covering(double min_value, double max_value, double px_lo, double px_hi, int min_decades) {
  LogAxis a;
  a.px_lo = px_lo;
  a.px_hi = px_hi;
  if (!(min_value > 0) || !std::isfinite(min_value)) min_value = 1;
  if (!(max_value > 0) || !std::isfinite(max_value)) max_value = min_value;
  if (max_value < min_value) std::swap(min_value, max_value);
  a.lo = static_cast<int>(std::floor(std::log10(min_value)));
  a.hi = static_cast<int>(std::ceil(std::log10(max_value)));
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  // Widened on both sides alike, so the data stays in the middle of a narrow range.
  while (a.hi - a.lo < min_decades) {
    if ((a.hi - a.lo) % 2 == 0) {
      ++a.hi;
    } else {
      --a.lo;
    }
  }
  return a;
}

double LogAxis::at(double value) const {
  if (!(value > 0)) return px_lo;
  const double t = (std::log10(value) - lo) / double(hi - lo);
  return px_lo + t * (px_hi - px_lo);
}

double LogAxis::value_at(double px) const {
  const double t = (px - px_lo) / (px_hi - px_lo);
  return std::pow(10.0, lo + t * double(hi - lo));
}

namespace {

void title_element(std::string& body, std::string_view title) {
  if (!title.empty()) body += "<title>" + escape(title) + "</title>";
}

// Ends an element whose attributes are written: self-closed without a title, else with the title
// (a hover tooltip) as its child.
void close_with_title(std::string& body, std::string_view tag, std::string_view title) {
  if (title.empty()) {
    body += "/>";
    return;
  }
  body += ">";
  title_element(body, title);
  body += "</";
  body += tag;
  body += ">";
}

}  // namespace

Svg::Svg(double width, double height, std::string_view cls, std::string_view label, std::string_view extra) {
  body_ = "<svg class=\"" + escape(cls) + "\" width=\"" + num(width) + "\" height=\"" + num(height) +
          "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" role=\"img\" aria-label=\"" + escape(label) + "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  body_ += ">";
  title_element(body_, label);
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view cls) {
  body_ += "<line class=\"" + escape(cls) + "\" x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) +
           "\" y2=\"" + num(y2) + "\"/>";
}

void Svg::rect(double x, double y, double w, double h, std::string_view cls, std::string_view fill,
               std::string_view title, std::string_view extra) {
  body_ += "<rect class=\"" + escape(cls) + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
           num(std::max(w, 0.0)) + "\" height=\"" + num(std::max(h, 0.0)) + "\"";
  if (!fill.empty()) body_ += " fill=\"" + escape(fill) + "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  close_with_title(body_, "rect", title);
}

void Svg::circle(double cx, double cy, double r, std::string_view cls, std::string_view title, std::string_view extra) {
  body_ += "<circle class=\"" + escape(cls) + "\" cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  close_with_title(body_, "circle", title);
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view cls, std::string_view extra) {
  body_ += "<polyline class=\"" + escape(cls) + "\" points=\"";
  for (size_t i = 0; i < points.size(); ++i) {
    if (i != 0) body_ += ' ';
    body_ += num(points[i].first) + "," + num(points[i].second);
  }
  body_ += "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  body_ += "/>";
}

void Svg::text(double x, double y, std::string_view text, std::string_view cls, std::string_view anchor,
               double rotate) {
  body_ += "<text class=\"" + escape(cls) + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" +
           escape(anchor) + "\"";
  if (rotate != 0) body_ += " transform=\"rotate(" + num(rotate) + " " + num(x) + " " + num(y) + ")\"";
  body_ += ">" + escape(text) + "</text>";
}

}  // namespace cutriage::tools::html
