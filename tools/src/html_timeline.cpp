#include "html_timeline.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "html_svg.h"
#include "report_model.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
using namespace model;

namespace {

// Families' colours on the timeline, by rank; the rest share the last ("other").
constexpr const char* kPalette[] = {"#0969da", "#bc4c00", "#8250df", "#1a7f37", "#cf222e",
                                    "#9a6700", "#1b7c83", "#bf3989", "#6639ba", "#953800"};
constexpr size_t kColoredFamilies = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr const char* kOtherColor = "#afb8c1";

std::string esc(std::string_view s) { return html::escape(s); }

struct Span {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t family = 0;  // 0 for a copy
  bool copy = false;
  bool replayed = false;
};

// Rounds a time step up to 1, 2 or 5 times a power of ten.
double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

using Rows = std::map<std::pair<uint32_t, uint32_t>, std::vector<Span>>;  // (device, stream) -> spans by start

// One SVG strip of `device`'s streams `order` over [w0, w1]: a row per stream, a box per kernel or
// copy, boxes closer than half a pixel merged (a loop of short kernels would otherwise be
// thousands of boxes), each coloured by what took most of its time. `mark` (when w0 < m0 < m1)
// outlines a stretch of the strip: where the zoomed strip below it is.
std::string timeline_strip(const TimelinePage& c, const Rows& rows, uint32_t device, const std::vector<uint32_t>& order,
                           uint64_t origin, uint64_t w0, uint64_t w1, const std::string& label,
                           std::pair<uint64_t, uint64_t> mark = {0, 0}, bool axis_from_w0 = false) {
  constexpr double kWidth = 1180, kLabel = 110, kRight = 36, kRowH = 16, kTop = 8, kAxisH = 26;
  const double plot_w = kWidth - kLabel - kRight;
  const double total = double(w1 - w0);
  auto x_of = [&](uint64_t t) {
    const uint64_t clamped = std::clamp(t, w0, w1);
    return kLabel + (double(clamped - w0) / total) * plot_w;
  };
  const double height = kTop + double(order.size()) * kRowH + kAxisH;
  html::Svg svg(kWidth, height, "timeline", label,
                "data-t0=\"" + std::to_string(w0) + "\" data-t1=\"" + std::to_string(w1) + "\"");
  for (const auto& [start, end] : trace_pauses(c.file)) {
    if (end <= w0 || start >= w1) continue;
    const double x0 = x_of(start), x1 = x_of(end);
    svg.rect(x0, kTop, x1 - x0, double(order.size()) * kRowH, "pause", {}, "trace paused: what ran here is unknown");
  }
  for (size_t row = 0; row < order.size(); ++row) {
    const double y = kTop + double(row) * kRowH;
    svg.rect(kLabel, y + 1, plot_w, kRowH - 2, "lane");
    svg.text(kLabel - 6, y + kRowH - 4, "stream " + std::to_string(order[row]), "label-muted", "end");
    const std::vector<Span>& spans = rows.at({device, order[row]});
    size_t i = 0;
    while (i < spans.size()) {
      if (spans[i].end < w0 || spans[i].start > w1) {
        ++i;
        continue;
      }
      double x0 = x_of(spans[i].start), x1 = x_of(spans[i].end);
      std::map<std::pair<bool, uint64_t>, double> time;  // (copy, family) -> ns
      time[{spans[i].copy, spans[i].family}] += double(spans[i].end - spans[i].start);
      size_t count = 1;
      bool replayed = spans[i].replayed;
      size_t j = i + 1;
      for (; j < spans.size() && spans[j].start <= w1; ++j) {
        const double nx0 = x_of(spans[j].start), nx1 = x_of(spans[j].end);
        if (nx0 > x1 + 0.5 || (nx1 - nx0 >= 1 && x1 - x0 >= 1)) break;
        x1 = std::max(x1, nx1);
        time[{spans[j].copy, spans[j].family}] += double(spans[j].end - spans[j].start);
        replayed = replayed || spans[j].replayed;
        ++count;
      }
      const auto top = std::max_element(time.begin(), time.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
      const bool copy = top->first.first;
      const uint64_t family = top->first.second;
      std::string fill;
      std::string title;
      if (!copy) {
        auto rank = c.family_rank.find(family);
        fill = family_color(rank != c.family_rank.end() ? rank->second : colored_families());
      }
      if (count == 1) {
        title = (copy ? std::string("copy") : family_name(c.file, family)) + ", " +
                short_duration(double(spans[i].end - spans[i].start)) + (replayed ? " (profiled: replayed)" : "");
      } else {
        title = with_commas(count) + " kernels and copies, mostly " +
                (copy ? std::string("copies") : family_name(c.file, family));
      }
      title += " at +" + short_duration(double(spans[i].start - origin));
      std::string cls = copy ? "copy" : "kernel";
      if (replayed) cls += " replayed";
      svg.rect(x0, y + 2, std::max(x1 - x0, 0.5), kRowH - 4, cls, fill, title);
      i = j;
    }
  }
  if (mark.first > w0 && mark.second > mark.first) {
    const double x0 = x_of(mark.first), x1 = x_of(mark.second);
    svg.rect(x0 - 1, kTop - 2, x1 - x0 + 2, double(order.size()) * kRowH + 4, "zoom-mark", {},
             "zoomed below: +" + short_duration(double(mark.first - origin)) + " to +" +
                 short_duration(double(mark.second - origin)));
  }
  // Time axis, from the first traced event (a zoomed strip: from its own start): ticks at a 1-2-5
  // step, about 10 of them.
  const uint64_t axis_origin = axis_from_w0 ? w0 : origin;
  const double axis_y = kTop + double(order.size()) * kRowH + 2;
  svg.line(kLabel, axis_y, kLabel + plot_w, axis_y, "axis");
  const double step = nice_step(total / 10);
  const double first = std::ceil(double(w0 - axis_origin) / step) * step;
  // Ticks counted in whole steps (a float induction variable would accumulate rounding).
  const double last = double(w1 - axis_origin) + step * 1e-9;
  for (long i = 0; first + double(i) * step <= last; ++i) {
    const double t = first + double(i) * step;
    const double x = kLabel + ((t - double(w0 - axis_origin)) / total) * plot_w;
    svg.line(x, axis_y, x, axis_y + 4, "axis");
    svg.text(x, axis_y + 16, t == 0 ? "0" : "+" + short_duration(t), "label-muted", "middle");
  }
  return svg.str();
}

struct Window {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t busy = 0;
};

// Of the stretches of `length` ns, the one holding the most kernel and copy time (two pointers
// over `spans`, (start, end) by start; a span counts where it starts), cut to what runs in it.

Window busiest_window(const std::vector<std::pair<uint64_t, uint64_t>>& spans, uint64_t length) {
  size_t best_lo = 0, best_hi = 0;
  uint64_t best_busy = 0, busy = 0;
  size_t lo = 0;
  for (size_t hi = 0; hi < spans.size(); ++hi) {
    busy += spans[hi].second - spans[hi].first;
    while (spans[hi].first - spans[lo].first > length) {
      busy -= spans[lo].second - spans[lo].first;
      ++lo;
    }
    if (busy > best_busy) {
      best_busy = busy;
      best_lo = lo;
      best_hi = hi;
    }
  }
  if (best_busy == 0) return {};
  Window w{spans[best_lo].first, spans[best_lo].first, best_busy};
  for (size_t i = best_lo; i <= best_hi; ++i) w.end = std::max(w.end, spans[i].second);
  return w;
}

// Where to zoom on a mostly idle device: the busiest stretch of a twentieth of the span, narrowed
// by quarters while the narrower stretch keeps 80% of the busy time, so a burst of short kernels
// fills the zoomed strip; profiled launches left out (a replay's time is the profiler's).
std::pair<uint64_t, uint64_t> zoom_window(const Rows& rows, uint32_t device, uint64_t span) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // start, end, by start
  for (const auto& [key, list] : rows) {
    if (key.first != device) continue;
    for (const Span& s : list) {
      if (!s.replayed) spans.push_back({s.start, s.end});
    }
  }
  std::sort(spans.begin(), spans.end());
  uint64_t length = span / 20;
  Window w = busiest_window(spans, length);
  while (length / 4 >= 10'000) {
    const Window narrower = busiest_window(spans, length / 4);
    if (double(narrower.busy) < 0.8 * double(w.busy)) break;
    w = narrower;
    length /= 4;
  }
  if (w.busy == 0) return {0, 0};
  const uint64_t pad = (w.end - w.start) / 50 + 1;
  return {w.start > pad ? w.start - pad : 0, w.end + pad};
}

}  // namespace

void TimelineSpans::add(const TimelineSpan& span) {
  ++seen_;
  if (spans_.size() < max_spans_) spans_.push_back(span);
}

void TimelineSpans::add_chunk(const v1::TraceChunk& chunk) {
  for (const v1::KernelExecution& k : chunk.kernels()) {
    add({k.start_ns(), std::max(k.end_ns(), k.start_ns()), k.family_id(), 0, k.stream_id(), false, k.replayed()});
  }
  for (const v1::CopyExecution& cp : chunk.copies()) {
    add({cp.start_ns(), std::max(cp.end_ns(), cp.start_ns()), 0, cp.device(), cp.stream_id(), true, false});
  }
}

const char* family_color(size_t rank) { return rank < kColoredFamilies ? kPalette[rank] : kOtherColor; }

size_t colored_families() { return kColoredFamilies; }

void render_timeline(std::ostringstream& out, const TimelinePage& c, const TimelineSpans& kept) {
  out << "<section id=\"timeline\"><h2>Timeline</h2>\n";
  Rows rows;
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (const TimelineSpan& span : kept.spans()) {
    uint32_t device = span.device;
    if (!span.copy) {
      const v1::KernelFamily* fam = find_family(c.file, span.family);
      device = fam != nullptr ? fam->device() : 0;
    }
    rows[{device, span.stream}].push_back({span.start, span.end, span.family, span.copy, span.replayed});
    t0 = std::min(t0, span.start);
    t1 = std::max(t1, span.end);
  }
  if (rows.empty() || t1 <= t0) {
    out << "<p class=\"muted\">The file has no trace (" << c.no_trace_why << ").</p></section>\n";
    return;
  }
  for (auto& [key, spans] : rows) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  }
  out << "<p class=\"muted\">Time from the first traced event; one row per stream. Hover a box for its kernel.</p>\n";
  if (kept.seen() > kept.spans().size()) {
    // The page holds at most max_spans() executions: the first ones the file holds are drawn.
    out << "<p class=\"muted timeline-cut\" data-drawn=\"" << kept.spans().size() << "\" data-seen=\"" << kept.seen()
        << "\">Drawn: the first " << esc(with_commas(kept.spans().size())) << " of the "
        << esc(with_commas(kept.seen())) << " kernel executions and copies the file holds, up to +"
        << esc(short_duration(double(t1 - t0))) << "; the other " << esc(with_commas(kept.seen() - kept.spans().size()))
        << " are not drawn (the page draws at most " << esc(with_commas(kept.max_spans()))
        << "). The tables above count them all.</p>\n";
  }
  std::set<uint32_t> devices;
  for (const auto& [key, spans] : rows) devices.insert(key.first);
  for (uint32_t device : devices) {
    // Streams of the device, busiest first, at most max_streams of them, drawn in id order.
    std::vector<std::pair<double, uint32_t>> streams;
    uint64_t d0 = UINT64_MAX, d1 = 0;
    double busy = 0;
    for (const auto& [key, spans] : rows) {
      if (key.first != device) continue;
      double stream_busy = 0;
      for (const Span& s : spans) {
        stream_busy += double(s.end - s.start);
        d0 = std::min(d0, s.start);
        d1 = std::max(d1, s.end);
      }
      busy += stream_busy;
      streams.push_back({stream_busy, key.second});
    }
    std::sort(streams.begin(), streams.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const size_t drawn = c.max_streams == 0 ? streams.size() : std::min(streams.size(), c.max_streams);
    std::vector<uint32_t> order;
    for (size_t i = 0; i < drawn; ++i) order.push_back(streams[i].second);
    std::sort(order.begin(), order.end());
    if (d1 <= d0) d1 = d0 + 1;
    // Mostly idle (a training loop waiting on its input): a second strip zooms on the busiest
    // stretch, marked on the first, so the kernels' order can be read.
    std::pair<uint64_t, uint64_t> zoom{0, 0};
    if (busy < 0.5 * double(d1 - d0) && d1 - d0 > 1000) {
      zoom = zoom_window(rows, device, d1 - d0);
      zoom.first = std::max(zoom.first, d0);
      zoom.second = std::min(zoom.second, d1);
    }
    out << "<h3>" << esc(gpu_label(c.session, device)) << "</h3>\n"
        << timeline_strip(c, rows, device, order, t0, d0, d1,
                          "timeline of " + gpu_label(c.session, device) + ": kernels and copies per stream over " +
                              short_duration(double(d1 - d0)),
                          zoom)
        << "\n";
    if (zoom.second > zoom.first) {
      out << "<p class=\"muted\">The busiest stretch: " << esc(short_duration(double(zoom.second - zoom.first)))
          << " from +" << esc(short_duration(double(zoom.first - t0))) << ", times from its start:</p>\n"
          << timeline_strip(c, rows, device, order, t0, zoom.first, zoom.second,
                            "zoomed timeline of " + gpu_label(c.session, device) + ": " +
                                short_duration(double(zoom.second - zoom.first)) + " from +" +
                                short_duration(double(zoom.first - t0)),
                            {0, 0}, true)
          << "\n";
    }
    if (drawn < streams.size()) {
      out << "<p class=\"muted\">" << esc(with_commas(streams.size() - drawn)) << " more streams with less busy time "
          << "are not drawn.</p>\n";
    }
  }
  // Legend: the coloured families, numbered as in the families table, then what the rest means.
  out << "<p class=\"legend\">";
  if (c.summary != nullptr) {
    const size_t n = std::min<size_t>(kColoredFamilies, static_cast<size_t>(c.summary->families_size()));
    for (size_t i = 0; i < n; ++i) {
      const std::string name = family_name(c.file, c.summary->families(static_cast<int>(i)).family_id());
      out << "<span class=\"swatch\" style=\"background:" << kPalette[i] << "\"></span><span title=\"" << esc(name)
          << "\">#" << (i + 1) << " " << esc(html::cut(name, 48)) << "</span>";
    }
  }
  out << "<span class=\"swatch\" style=\"background:" << kOtherColor << "\"></span>other kernels"
      << "<span class=\"swatch\" style=\"background:#57606a\"></span>copies and memsets"
      << "<span class=\"swatch\" style=\"background:#fff;border:1px dashed #1d2329\"></span>pale, dashed: "
         "profiled launches (their time includes the profiler's replay)</p>\n";
  out << "</section>\n";
}

}  // namespace cutriage::tools
