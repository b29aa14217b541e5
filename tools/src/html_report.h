// `cutriage report FILE.pb --html OUT.html`: the report as one self-contained HTML page, for a
// browser, a CI artifact or an attachment to a bug.
//
// Sections, in order: the session (source, host, GPUs with their peak figures, notices, launch
// counts, totals of the trace); the kernel families by GPU time with each one's verdict or why it
// was not profiled; the timeline of the trace, one SVG strip per GPU with a row per stream; then
// each profiled kernel, longest first, as the text report orders them: launch, verdict, trust,
// path, the evidence with the deciding number first, next action, gain, a roofline chart (SVG,
// roofline.h) and, where PC samples exist, the hot source lines with the SASS of their hottest
// instruction; the kernels that were not profiled; the session findings.
//
// The page needs nothing but itself: CSS and SVG inline, no script, no font, no image, no link
// to anything outside the file. Every string taken from the file (kernel names hold < > &, NVTX
// paths and command lines hold anything) is escaped (html_svg.h escape). docs/html-report.md.
#pragma once

#include <string>

#include "file_reader.h"
#include "html_timeline.h"
#include "sass.h"

namespace cutriage::tools {

struct HtmlReportOptions {
  // Kernel families listed in the families table (the rest are summed in one row); 0 = all.
  size_t max_families = 30;
  // Streams drawn per GPU in the timeline, busiest first; 0 = all.
  size_t max_streams = 32;
  // Where nvdisasm is looked for, for the SASS of sampled PCs (sass.h); tests pin it.
  NvdisasmSearch nvdisasm;
};

// The page. `timeline`: the executions the timeline draws, taken while the file was read (a file
// read with ReadScope::kCurrent keeps no trace chunk); null: taken from the chunks `file` holds.
std::string render_html_report(const ReadResult& file, const HtmlReportOptions& options,
                               const TimelineSpans* timeline = nullptr);

// Renders the page and writes it to `path` ("-" = stdout), committed only when complete (a
// failed write leaves the name as it was, output_file.h). False with `error` set on failure.
bool write_html_report(const ReadResult& file, const HtmlReportOptions& options, const std::string& path,
                       std::string& error, const TimelineSpans* timeline = nullptr);

}  // namespace cutriage::tools
