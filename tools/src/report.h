// Human and JSON views of a cutriage file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "file_reader.h"
#include "sass.h"
#include "trace_fold.h"  // recompute_summary: a killed run's view

namespace cutriage::tools {

struct ReportOptions {
  bool verbose = false;   // every check of every visited decision, not only the verdict
  size_t max_kernels = 0; // 0 = all
  // Kernel families listed in the application view (the rest are summed up in one line);
  // 0 = all. --verbose lists all.
  size_t max_families = 20;
  // Where nvdisasm is looked for, to show the SASS of sampled PCs (sass.h); tests pin it.
  NvdisasmSearch nvdisasm;
};

// The header gives the GPUs, the agent's mode, the notices, the launch counts and (always-on) the
// overhead spent against the budget, or why there is no session end (killed, or a segment of a
// rotated run whose end is in a later segment); then the deep-capture requests (control) in their
// latest state. When the file has a trace summary, the application view follows: per device the
// GPU span, busy and idle time, copies serialized with compute; kernel families ranked by GPU time
// with their duration statistics, share and Amdahl ceiling, and per family the verdict and next
// action of its profiled launch or why it was not profiled; then the session-level findings.
// Then the kernels sorted by profiled duration, longest first; per kernel: verdict, trust, the path
// through the decisions, the launches its metrics were assembled from without replay (always-on),
// the numbers behind the verdict, next action, estimated gain, and for a kernel with PC samples
// its "source" section: the lines with the most stall samples, their share, dominant stall reason
// and hottest instruction, and the sampling totals.
std::string render_report(const ReadResult& file, const ReportOptions& options);

// The verdict as the report's `verdict` line gives it: "MEMORY BOUND - DRAM at 91% of peak".
std::string verdict_headline(const v1::Diagnosis& diagnosis);

// `text` with every byte that could drive a terminal escaped: C0 controls and DEL as "\x1b",
// UTF-8-encoded C1 controls as "\u009b", bytes that are not well-formed UTF-8 as "\xff". A newline
// is kept when `keep_newlines` (a whole report), escaped otherwise (one name on one line).
std::string terminal_safe(std::string_view text, bool keep_newlines);

}  // namespace cutriage::tools
