#include "trace_placement.h"

#include <algorithm>
#include <limits>

namespace cutriage::tools {

namespace v1 = cutriage::v1;

uint64_t duration_u64(double ns) {
  constexpr double kMax = 9007199254740992.0;  // 2^53
  if (!(ns > 0)) return 0;
  return static_cast<uint64_t>(ns < kMax ? ns : kMax);
}

LaunchPlacer::LaunchPlacer(const ReadResult& file) {
  for (int r = 0; r < file.file.records_size(); ++r) {
    if (!file.file.records(r).has_kernel()) continue;
    const v1::KernelProfile& k = file.file.records(r).kernel();
    if (k.correlation_id() == 0 || k.has_graph_scope() || k.replay_mode() == v1::REPLAY_MODE_NONE) continue;
    if (k.status() != v1::PROFILE_STATUS_PROFILED) continue;
    const GpuTrackKey track{k.device(), static_cast<uint32_t>(k.context_id()), static_cast<uint32_t>(k.stream_id())};
    // One per launch: the records of a launch (its revisions) share its correlation id.
    launches_.insert_or_assign(k.correlation_id(), Launch{track, r, false});
  }
  for (const auto& [correlation, launch] : launches_) {
    tracks_[launch.track].correlations.push_back(correlation);  // ascending: the map's order
  }
  for (auto& [key, track] : tracks_) track.buckets.resize(track.correlations.size() + 1);
}

void LaunchPlacer::event(const GpuTrackKey& track, uint64_t correlation, uint64_t start, uint64_t end) {
  auto t = tracks_.find(track);
  if (t == tracks_.end()) return;
  const std::vector<uint64_t>& c = t->second.correlations;
  // The first launch whose correlation id is not below the event's: the event is before it.
  const auto j = static_cast<size_t>(std::lower_bound(c.begin(), c.end(), correlation) - c.begin());
  Bucket& b = t->second.buckets[j];
  ++b.count;
  b.max_end = std::max(b.max_end, end);
  b.min_start = std::min(b.min_start, start);
}

void LaunchPlacer::kernel(const GpuTrackKey& track, uint64_t correlation, uint64_t start, uint64_t end) {
  if (launches_.empty()) return;
  // CUPTI's correlation ids are unique in the process, whatever the context.
  if (auto l = launches_.find(correlation); l != launches_.end()) l->second.traced = true;
  // Graph nodes carry their graph launch's correlation id: stream order holds for the launch.
  event(track, correlation, start, end);
}

void LaunchPlacer::copy(const GpuTrackKey& track, uint64_t correlation, uint64_t start, uint64_t end) {
  if (launches_.empty()) return;
  event(track, correlation, start, end);
}

std::vector<PlacedLaunch> LaunchPlacer::place(const ReadResult& file, uint64_t& unplaced) const {
  std::vector<PlacedLaunch> out;
  for (const auto& entry : tracks_) {
    // Not a structured binding: the lambda below captures the track (clang 14 refuses bindings).
    const GpuTrackKey& key = entry.first;
    const Track& track = entry.second;
    const std::vector<Bucket>& b = track.buckets;
    const size_t m = track.correlations.size();
    // Over the events after launch i (buckets i + 1 .. m): their count and earliest start.
    std::vector<uint64_t> after_count(m + 1, 0);
    std::vector<uint64_t> after_start(m + 1, std::numeric_limits<uint64_t>::max());
    for (size_t j = m; j-- > 0;) {
      after_count[j] = after_count[j + 1] + b[j + 1].count;
      after_start[j] = std::min(after_start[j + 1], b[j + 1].min_start);
    }
    // The launches in one gap (no event between them) are placed together: grouped by how many
    // events come before them.
    std::map<uint64_t, std::vector<size_t>> gaps;
    // Over the events before launch i, its own correlation id included (buckets 0 .. i): their
    // count and latest end.
    std::vector<uint64_t> before_count(m, 0);
    std::vector<uint64_t> before_end(m, 0);
    for (size_t i = 0; i < m; ++i) {
      before_count[i] = (i > 0 ? before_count[i - 1] : 0) + b[i].count;
      before_end[i] = std::max(i > 0 ? before_end[i - 1] : 0, b[i].max_end);
      if (!launches_.at(track.correlations[i]).traced) gaps[before_count[i]].push_back(i);
    }
    for (const auto& [count_before, group] : gaps) {
      const size_t i = group.front();  // every launch of the group has the same neighbours
      const bool has_before = before_count[i] > 0;
      const bool has_after = after_count[i] > 0;
      // Ends and starts over every neighbour before / after (records may come out of time order).
      const uint64_t from = before_end[i];
      const uint64_t to = after_start[i];
      if (!has_before && !has_after) {
        unplaced += group.size();
        continue;
      }
      auto record_of = [&](size_t n) { return launches_.at(track.correlations[n]).record; };
      if (has_before && has_after && to > from) {
        const uint64_t span = to - from;
        const uint64_t count = group.size();
        for (uint64_t n = 0; n < count; ++n) {
          out.push_back({key, from + span * n / count, from + span * (n + 1) / count, record_of(group[n])});
        }
        continue;
      }
      // One side known (or neighbours out of order): each launch drawn for its profiled duration,
      // one after another from the earlier neighbour, or one before another up to the later one.
      uint64_t total = 0;
      for (const size_t n : group) total += duration_u64(file.file.records(record_of(n)).kernel().duration_ns());
      uint64_t at = has_before ? from : (to >= total ? to - total : 0);
      for (const size_t n : group) {
        const uint64_t d = duration_u64(file.file.records(record_of(n)).kernel().duration_ns());
        out.push_back({key, at, at + d, record_of(n)});
        at += d;
      }
    }
  }
  return out;
}

}  // namespace cutriage::tools
