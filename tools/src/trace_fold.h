// The application view of a run killed before it wrote its trace summary, recomputed from its
// trace events without holding them (issue 25). The events are folded into the statistics the
// agent keeps (triage::TimelineAccumulator, triage::GraphAccumulator) as they are read: memory is
// those statistics and a bounded window of events waiting to be put in time order, never the
// trace.
//
// Why a window: the accumulator folds what falls behind its own window, and chunks reach the file
// out of order (CUPTI delivers buffers per context), so the events are fed in time order. Up to
// TraceFold::kWindowEvents of them wait; the window full, they are sorted and the earlier half is
// fed. A file of fewer events is fed as one sorted sequence, exactly as when every event was held
// (the output is the same); a larger one is fed in time order except for events more than the
// window out of place, which the accumulator takes as late records (counted, their overlap with
// folded time approximated as busy, TimelineAccumulator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cutriage/triage/graphs.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/v1/cutriage.pb.h"
#include "file_reader.h"

namespace cutriage::tools {

class TraceFold {
 public:
  // Kernel executions and copies waiting to be fed in time order (about 48 bytes each), and as
  // many graph kernels.
  static constexpr size_t kWindowEvents = size_t{1} << 17;

  explicit TraceFold(size_t window = kWindowEvents);

  // What a first read of the same file knew: every family's device and every pause of the trace.
  // Without it, families and pauses are taken as their records stream past (add_family, the
  // chunks' own pauses), and an event fed before its family's record or its pause is placed with
  // what was known then (only in a file of more than a window of events).
  void seed(const ReadResult& first_read);
  void add_family(const v1::KernelFamily& family);
  void add_chunk(const v1::TraceChunk& chunk);

  // Feeds what waits and returns the summary the agent would have written (through its encoder),
  // family names for the findings from `file`; nullopt when no kernel or copy was traced.
  std::optional<v1::TraceSummary> finish(const ReadResult& file);

 private:
  void add_pause(uint64_t start, uint64_t end);
  // Feeds the waiting kernels and copies in time order: all of them, or the earlier part.
  void feed(bool all);
  void feed_graphs(size_t count);

  size_t window_;
  bool seeded_ = false;
  std::map<uint64_t, uint32_t> devices_;                // family id -> device
  std::vector<std::pair<uint64_t, uint64_t>> pauses_;  // sorted by start
  std::vector<uint64_t> pause_starts_;                 // pauses_' starts, for triage::cut_at_pause
  size_t pauses_fed_ = 0;                              // pauses_[0, pauses_fed_) went to the accumulator
  // Waiting, in arrival order until sorted. A kernel's device is its family's, looked up when it
  // is fed (a family record may follow its kernels' chunk).
  std::vector<triage::KernelSpan> kernels_;
  std::vector<triage::CopySpan> copies_;
  std::vector<triage::GraphKernel> graph_kernels_;
  triage::TimelineAccumulator timeline_;
  triage::GraphAccumulator graphs_;
  uint64_t kernel_events_ = 0;  // every kernel execution added (TraceSummary.timeline_kernel_events)
  uint64_t copy_events_ = 0;
};

// The trace summary of a file with a trace but none written: the one folded while it was read
// (ReadResult::recomputed_summary), else folded from the trace chunks it holds (a file read with
// ReadScope::kEverything). What only the agent knew is missing: selection outcomes, NVTX paths
// per family, dropped records. nullopt when there is no execution to fold.
std::optional<v1::TraceSummary> recompute_summary(const ReadResult& file);

// Reads `paths` (the files of `r`, one process, in segment order) again record by record and folds
// their trace events into r.recomputed_summary. Files that cannot be read again the same way (a
// pipe, "-"), or a read that fails, leave it unset: the views then show no application view.
void fold_trace_events(ReadResult& r, const std::vector<std::string>& paths);

}  // namespace cutriage::tools
