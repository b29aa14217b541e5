// Metric plans made once per (chip, counter list) and reused: the Profiler Host's configuration
// image for a set of counters is the same for every kernel, and making it was most of a profiled
// launch's set-up on the H200 (BENCHMARKS.md, "Where a profiled kernel's cost goes"). Deep mode
// asks for the same lists again and again (every kernel's first stage, `--metrics full`).
//
// Thread-safe. A plan is made outside the lock (two threads may make the same one; the first to
// finish is kept), and only successful plans are kept. Bounded: when full, it starts over.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cutriage/collectors/range_profiler.h"

namespace cutriage::agent {

class PlanCache {
 public:
  explicit PlanCache(size_t max_entries = 64) : max_entries_(max_entries) {}

  // The plan of `metrics` (as asked: order matters to the plan's metric order) on `chip`.
  collectors::Result<collectors::MetricPlan> plan(collectors::ProfilerHost& host, const std::string& chip,
                                                  const std::vector<std::string>& metrics);
  [[nodiscard]] size_t size() const;

 private:
  using Key = std::pair<std::string, std::vector<std::string>>;
  const size_t max_entries_;
  mutable std::mutex mutex_;
  std::map<Key, collectors::MetricPlan> plans_;
};

}  // namespace cutriage::agent
