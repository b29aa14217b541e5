#include "trace_fold.h"

#include <algorithm>

#include "cutriage/triage/rule.h"
#include "cutriage/wire/writer.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

constexpr auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };

}  // namespace

TraceFold::TraceFold(size_t window) : window_(std::max<size_t>(window, 2)) {}

void TraceFold::seed(const ReadResult& first_read) {
  for (const auto& [id, record] : first_read.family_records) {
    devices_[id] = first_read.file.records(record).family().device();
  }
  pauses_ = trace_pauses(first_read);  // sorted
  pause_starts_ = trace_pause_starts(first_read);
  seeded_ = true;
}

void TraceFold::add_family(const v1::KernelFamily& family) {
  if (!seeded_) devices_[family.id()] = family.device();  // the last definition, as find_family
}

void TraceFold::add_pause(uint64_t start, uint64_t end) {
  const std::pair<uint64_t, uint64_t> pause{start, end};
  const auto at = std::upper_bound(pauses_.begin(), pauses_.end(), pause);
  const auto index = static_cast<size_t>(at - pauses_.begin());
  pauses_.insert(at, pause);
  pause_starts_.insert(pause_starts_.begin() + static_cast<std::ptrdiff_t>(index), start);
  // Behind what the accumulator has been given (it takes pauses in time order): used for cutting
  // the kernels still to come, not fed.
  if (index < pauses_fed_) ++pauses_fed_;
}

void TraceFold::add_chunk(const v1::TraceChunk& chunk) {
  if (!seeded_) {
    for (const v1::Interval& p : chunk.untraced()) add_pause(p.start_ns(), p.end_ns());
  }
  for (const v1::KernelExecution& k : chunk.kernels()) {
    triage::KernelSpan span;
    span.family = k.family_id();
    span.stream = k.stream_id();
    span.start_ns = k.start_ns();
    span.end_ns = std::max(k.end_ns(), k.start_ns());
    span.grid = {k.grid().x(), k.grid().y(), k.grid().z()};
    span.replayed = k.replayed();
    span.from_graph = k.graph_id() != 0;
    span.cut_by_pause = k.cut_by_pause();
    kernels_.push_back(span);
    ++kernel_events_;
    // The graphs as the agent folds them: graph kernels neither replayed nor cut by a pause (as
    // the record says: the agent's own cut).
    if (k.graph_id() != 0 && !k.replayed() && !k.cut_by_pause()) {
      graph_kernels_.push_back({k.graph_id(), k.correlation_id(), k.graph_node_id(), k.family_id(), k.start_ns(),
                                std::max(k.end_ns(), k.start_ns())});
      if (graph_kernels_.size() >= window_) feed_graphs(window_ / 2);
    }
  }
  for (const v1::CopyExecution& c : chunk.copies()) {
    triage::CopySpan span;
    span.device = c.device();
    span.stream = c.stream_id();
    span.start_ns = c.start_ns();
    span.end_ns = std::max(c.end_ns(), c.start_ns());
    span.bytes = c.bytes();
    span.kind = static_cast<triage::CopyKind>(c.kind());
    span.pageable = c.pageable();
    copies_.push_back(span);
    ++copy_events_;
  }
  if (kernels_.size() + copies_.size() >= window_) feed(false);
}

void TraceFold::feed(bool all) {
  std::sort(kernels_.begin(), kernels_.end(), by_start);
  std::sort(copies_.begin(), copies_.end(), by_start);
  // The window full, its earlier part goes: up to the later of the two lists' median starts, so
  // at least half of the larger list is fed and sorting costs O(log window) an event.
  std::optional<uint64_t> until;
  if (!all) {
    until = 0;
    if (!kernels_.empty()) until = kernels_[kernels_.size() / 2].start_ns;
    if (!copies_.empty()) until = std::max(*until, copies_[copies_.size() / 2].start_ns);
  }
  auto due = [&](uint64_t start) { return !until || start <= *until; };
  size_t k = 0;
  size_t c = 0;
  for (; k < kernels_.size() && due(kernels_[k].start_ns); ++k) {
    triage::KernelSpan& span = kernels_[k];
    // Each pause before the records that follow it, copies before a kernel starting with them,
    // as the agent did.
    for (; pauses_fed_ < pauses_.size() && pauses_[pauses_fed_].first <= span.start_ns; ++pauses_fed_) {
      timeline_.add_untraced(pauses_[pauses_fed_].first, pauses_[pauses_fed_].second);
    }
    for (; c < copies_.size() && copies_[c].start_ns <= span.start_ns; ++c) timeline_.add_copy(copies_[c]);
    const auto device = devices_.find(span.family);
    span.device = device != devices_.end() ? device->second : 0;
    // The agent cuts kernels running at a pause as it writes them; files from before it did (and
    // any record it could not match to a pause) are cut here the same way.
    if (!pause_starts_.empty()) triage::cut_at_pause(span, pause_starts_);
    timeline_.add_kernel(span);
  }
  for (; c < copies_.size() && due(copies_[c].start_ns); ++c) timeline_.add_copy(copies_[c]);
  kernels_.erase(kernels_.begin(), kernels_.begin() + static_cast<std::ptrdiff_t>(k));
  copies_.erase(copies_.begin(), copies_.begin() + static_cast<std::ptrdiff_t>(c));
}

void TraceFold::feed_graphs(size_t count) {
  std::sort(graph_kernels_.begin(), graph_kernels_.end(), by_start);
  count = std::min(count, graph_kernels_.size());
  for (size_t i = 0; i < count; ++i) graphs_.add(graph_kernels_[i]);
  graph_kernels_.erase(graph_kernels_.begin(), graph_kernels_.begin() + static_cast<std::ptrdiff_t>(count));
}

std::optional<v1::TraceSummary> TraceFold::finish(const ReadResult& file) {
  if (kernel_events_ == 0 && copy_events_ == 0) return std::nullopt;
  feed(true);
  feed_graphs(graph_kernels_.size());
  wire::TraceSummary summary;
  summary.timeline = timeline_.summary();
  summary.findings = triage::triage_timeline(summary.timeline, triage::Thresholds{},
                                             [&file](uint64_t id) { return family_name(file, id); });
  summary.timeline_kernel_events = kernel_events_;
  summary.graphs = graphs_.summary();
  v1::File encoded;
  if (!encoded.ParseFromString(wire::RecordEncoder().trace_summary(summary)) || encoded.records_size() != 1) {
    return std::nullopt;
  }
  return encoded.records(0).trace_summary();
}

std::optional<v1::TraceSummary> recompute_summary(const ReadResult& file) {
  if (file.recomputed_summary) return file.recomputed_summary;
  if (file.trace_records.empty()) return std::nullopt;
  TraceFold fold;
  fold.seed(file);
  for (const int r : file.trace_records) fold.add_chunk(file.file.records(r).trace());
  return fold.finish(file);
}

void fold_trace_events(ReadResult& r, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (!rereadable_path(path)) return;
  }
  TraceFold fold;
  fold.seed(r);
  for (const std::string& path : paths) {
    const StreamedRead read = stream_cutriage_file(path, [&fold](v1::Record& record) {
      if (record.has_trace()) fold.add_chunk(record.trace());
    });
    if (read.status == ReadStatus::kUnreadable || read.status == ReadStatus::kNotCutriage) return;
  }
  r.recomputed_summary = fold.finish(r);
}

}  // namespace cutriage::tools
