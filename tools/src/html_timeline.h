// The HTML page's timeline (html_report.h): per GPU one SVG strip, a row per stream, a box per
// kernel or copy, boxes closer than half a pixel merged; a zoomed strip on the busiest stretch of
// a mostly idle GPU. Its executions are taken from the trace chunks as the file is read
// (TimelineSpans), since a read of the current state does not keep them (ReadScope::kCurrent).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <vector>

#include "cutriage/v1/cutriage.pb.h"
#include "file_reader.h"

namespace cutriage::tools {

// A family's colour on the page by its rank in GPU time (0 first): the top families each their
// own, the rest one grey.
const char* family_color(size_t rank);
// How many families get a colour of their own.
size_t colored_families();

struct TimelineSpan {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t family = 0;  // 0 for a copy
  uint32_t device = 0;  // a copy's; a kernel's is its family's, looked up when drawn
  uint32_t stream = 0;
  bool copy = false;
  bool replayed = false;
};

// The kernel executions and copies the timeline draws: the first kMaxSpans of them in file order
// (about 40 bytes each), the rest counted. The timeline is the one part of the page that grows
// with the trace; its cap bounds the page's memory and its size, and the page says what was left
// out.
class TimelineSpans {
 public:
  static constexpr size_t kMaxSpans = 200'000;
  explicit TimelineSpans(size_t max_spans = kMaxSpans) : max_spans_(max_spans) {}
  void add_chunk(const v1::TraceChunk& chunk);
  [[nodiscard]] const std::vector<TimelineSpan>& spans() const { return spans_; }
  [[nodiscard]] uint64_t seen() const { return seen_; }  // every execution and copy, kept or not
  [[nodiscard]] size_t max_spans() const { return max_spans_; }

 private:
  void add(const TimelineSpan& span);
  size_t max_spans_;
  std::vector<TimelineSpan> spans_;
  uint64_t seen_ = 0;
};

// What the timeline needs of the page.
struct TimelinePage {
  const ReadResult& file;                      // families, pauses, names
  const v1::SessionHeader* session = nullptr;  // GPU names
  const v1::TraceSummary* summary = nullptr;   // the legend's families, in rank order
  const std::map<uint64_t, size_t>& family_rank;  // family id -> rank by GPU time
  size_t max_streams = 0;                      // streams drawn per GPU, busiest first; 0 = all
  const char* no_trace_why = "";               // "the run was made without tracing"
};

// <section id="timeline">, with the legend; a file without executions gets one line saying why.
void render_timeline(std::ostringstream& out, const TimelinePage& page, const TimelineSpans& spans);

}  // namespace cutriage::tools
