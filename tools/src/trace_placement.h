// Profiled launches without an execution in the trace, placed where they ran (`cutriage trace`,
// trace_export.h). Agents before 2026-12-01 dropped the replayed launch's record, which CUPTI
// delivers without timestamps: such a launch is drawn from its KernelProfile record across the gap
// its replay left on its stream, so the gap does not read as idle.
//
// A stream runs its work in launch order and correlation ids grow in launch order, so a launch ran
// after the stream's last event of a smaller correlation id ended and before its first event of a
// larger one started. Several profiled launches in one gap share it equally, in launch order. A
// launch with a neighbour on one side only is drawn for its profiled duration from (or up to) that
// neighbour; one with no neighbour on its stream is left out (counted). Graph-scope records (a
// graph launch's counters, its kernels traced as nodes) and records without a correlation id are
// never placed.
//
// The neighbours are gathered in one pass over the trace without holding it: the launches to place
// are known before (the file's KernelProfile records), so each event only updates the aggregate of
// the gap between two of them that it falls in (its count, latest end, earliest start). Memory is
// those launches, never the events.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "file_reader.h"

namespace cutriage::tools {

// A track of GPU work: a stream of one context on one device.
struct GpuTrackKey {
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  friend bool operator<(const GpuTrackKey& a, const GpuTrackKey& b) {
    return std::tie(a.device, a.context, a.stream) < std::tie(b.device, b.context, b.stream);
  }
};

// A profiled duration from the file (a double) in whole nanoseconds: 0 for a negative or NaN value,
// at most 2^53 (104 days) so that a corrupt value neither overflows the conversion nor a sum.
uint64_t duration_u64(double ns);

struct PlacedLaunch {
  GpuTrackKey track;
  uint64_t start = 0;
  uint64_t end = 0;
  int record = 0;  // its KernelProfile record in file.file
};

class LaunchPlacer {
 public:
  // The launches that may need placing: `file`'s profiled, replayed KernelProfile records with a
  // correlation id, outside graphs (of the records of one launch, the last).
  explicit LaunchPlacer(const ReadResult& file);

  // Every kernel execution and copy of the trace, on its track, times as drawn (cut at a pause).
  // A kernel whose correlation id is a launch's is that launch's execution: it needs no placing.
  void kernel(const GpuTrackKey& track, uint64_t correlation, uint64_t start, uint64_t end);
  void copy(const GpuTrackKey& track, uint64_t correlation, uint64_t start, uint64_t end);

  // The launches without an execution, placed in launch order per gap; `unplaced` counts those
  // with no event on their stream.
  [[nodiscard]] std::vector<PlacedLaunch> place(const ReadResult& file, uint64_t& unplaced) const;

 private:
  struct Launch {
    GpuTrackKey track;
    int record = 0;
    bool traced = false;
  };
  // The events of a track between two of its launches' correlation ids: bucket j holds those with
  // correlation in (c[j-1], c[j]], the last one those above every c.
  struct Bucket {
    uint64_t count = 0;
    uint64_t max_end = 0;
    uint64_t min_start = UINT64_MAX;
  };
  struct Track {
    std::vector<uint64_t> correlations;  // its launches', ascending
    std::vector<Bucket> buckets;         // correlations.size() + 1
  };
  void event(const GpuTrackKey& track, uint64_t correlation, uint64_t start, uint64_t end);

  std::map<uint64_t, Launch> launches_;  // by correlation id: unique in the process
  std::map<GpuTrackKey, Track> tracks_;  // the tracks launches ran on
};

}  // namespace cutriage::tools
