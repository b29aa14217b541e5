// Always-on's start-up (CUTRIAGE_WARMUP): CUPTI's one-off range-profiler start-up, paid at the
// first launch on each device instead of by the first launch the budget admits.
//
// The process's first Start on a newly enabled range-profiler object costs several times what
// every later one costs (bench/switch_cost.sh "fresh": the first against the rest). Charged to
// the budget, that one Start is a debt the share pays back over minutes, and every verdict waits
// behind it (docs/always-on.md, "Start-up"). Paid here instead: at the first launch on each device
// of a family the agent wants (a candidate, or a targeted graph: the caller decides), on the
// launching thread, before the launch, one empty range is started and stopped
// (RangeProfiler::warm_up), and its cost is reported apart from the budget
// (OverheadStats::startup_ns), as the profiler host made at context creation is. A process with
// nothing to profile never pays it.
//
// Threading: once every device launched on is done, a launch costs one atomic load. The first
// launches on a device race for `mutex_` with try_lock: the loser goes on unwarmed, as do launches
// into a stream under capture (tried again at the next launch). Lock order: `mutex_`, then the
// context's profiler mutex, then the families' lock (the budget's).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

#include "always_on.h"
#include "contexts.h"
#include "cutriage/collectors/platform.h"
#include "devices.h"
#include "log.h"
#include "plan_cache.h"

namespace cutriage::agent {

class ProfilerWarmup {
 public:
  // What the warm-up works with; every reference outlives it.
  struct Parts {
    collectors::Platform& platform;
    Logger& log;
    DeviceCatalog& devices;
    ContextTable& contexts;
    PlanCache& plans;
    AlwaysOnPolicy& always_on;
    std::function<uint64_t()> monotonic_ns;
  };
  // The counter of the warm-up's plan: any single-pass one serves, its values are never read.
  static constexpr const char* kMetric = "sm__cycles_elapsed.avg.per_second";

  explicit ProfilerWarmup(Parts parts) : p_(std::move(parts)) {}

  // The entry of a launch the agent may profile (kernel or graph launch), before anything profiles
  // it. On a device not yet done, pays the start-up now, on this thread.
  void at_launch(const collectors::LaunchEvent& event) {
    if (event.device >= 64 || (done_.load(std::memory_order_relaxed) & (uint64_t{1} << event.device)) != 0) return;
    warm_up(event);
  }
  // Devices done (bit per ordinal), whether the start-up was paid or could not be.
  [[nodiscard]] uint64_t done_devices() const { return done_.load(); }

 private:
  void warm_up(const collectors::LaunchEvent& fast_event);
  void finish(uint32_t device) { done_.fetch_or(uint64_t{1} << device); }

  Parts p_;
  std::mutex mutex_;
  std::atomic<uint64_t> done_{0};
};

}  // namespace cutriage::agent
