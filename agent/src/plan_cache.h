// Metric plans made once per (chip, counter list) and reused: the Profiler Host's configuration
// image for a set of counters is the same for every kernel, and making it was most of a profiled
// launch's set-up on the H200 (BENCHMARKS.md, "Where a profiled kernel's cost goes"). Deep mode
// asks for the same lists again and again (every kernel's first stage, `--metrics full`).
//
// Plans can also be made ahead, off the application's thread: a list queued with `queue()` is made
// by `make_queued()` (the flush thread's tick), so that the first profiled launch finds it ready.
//
// Thread-safe. A plan is made outside the lock; a thread that asks for a plan another thread is
// making waits for that one instead of making it twice (the waiter's cost is what is left of it).
// Only successful plans are kept. Bounded: when full, it starts over.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
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
  // Asks for the plan of `metrics` on `chip` to be made ahead (once; a list already made or queued
  // is not queued again).
  void queue(const std::string& chip, std::vector<std::string> metrics);
  // Makes the queued plans, in the order they were queued, with the host `host_of` gives for a
  // chip (null: that chip's plans are dropped). Returns how many plans were made.
  size_t make_queued(const std::function<std::shared_ptr<collectors::ProfilerHost>(const std::string&)>& host_of);
  [[nodiscard]] size_t size() const;
  // Plans that plan() found being made by another thread and waited for.
  [[nodiscard]] size_t waits() const;

 private:
  using Key = std::pair<std::string, std::vector<std::string>>;
  const size_t max_entries_;
  mutable std::mutex mutex_;
  std::condition_variable made_;   // a plan in flight finished (made or not)
  std::map<Key, collectors::MetricPlan> plans_;
  std::set<Key> in_flight_;        // being made by some thread now
  std::vector<Key> queued_;        // to be made ahead, oldest first
  std::set<Key> ever_queued_;      // a list is made ahead once (bounded: then forgotten)
  size_t waits_ = 0;
};

}  // namespace cutriage::agent
