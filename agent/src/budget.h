// The always-on agent's overhead budget: how much of the application's time profiled and sampled
// launches may cost, and how many of them a second.
//
// Cost is what the agent measures on the application's thread for one such launch: from its
// launch-entry callback to the end of its exit callback (CUPTI configuration, the wait for the
// launch to finish, decoding), plus one-off work done for it (planning metric groups). The
// allowance starts full, at `fraction * window` (the first launch goes at once instead of a
// window later), and time accrues it at `fraction` of wall time up to that cap; a launch is admitted
// when the allowance covers its estimated cost and the rate limit allows, and its measured cost
// is charged when it ends (the estimate is trued up then). Launches of the group the profiler has
// configured may go on credit, into a debt of at most one full allowance. So over any stretch of
// time T the agent spends at most fraction * T + 2 * fraction * window plus one launch's
// misestimate (from the start too: a full allowance later in the run allows the same burst), and when
// launches get dearer (a busier GPU makes the wait longer) fewer are admitted: the budget backs
// off by itself.
//
// Estimates are per kind of launch (same metric group as the context has configured, a group
// switch, PC sampling): the mean of recent measured costs, starting from conservative guesses.
//
// Not thread-safe: the agent calls it under its own mutex, except ready(), which is lock-free
// for the launch fast path.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

#include "cutriage/wire/records.h"

namespace cutriage::agent {

// kPlanning and kRelease are one-off work charged when done (nothing reserved for them).
// kPmWindow: always-on's PM routing window (pm_window.h), admitted and charged like a launch.
enum class CostKind : uint8_t {
  kSameGroup = 0,
  kGroupSwitch = 1,
  kPcSampling = 2,
  kPlanning = 3,
  kRelease = 4,
  kPmWindow = 5,
};
inline constexpr size_t kCostKinds = 6;

struct BudgetOptions {
  double fraction = 0.004;          // of wall time
  double max_per_second = 2.0;      // admitted launches
  uint64_t window_ns = 60'000'000'000;  // allowance cap, and the window the stats report
};

class Budget {
 public:
  Budget(BudgetOptions options, uint64_t now_ns);

  // Lock-free: false when no launch can be admitted before `next` (the allowance is short or the
  // rate limit holds); the fast path then skips the selection work entirely.
  [[nodiscard]] bool ready(uint64_t now_ns) const { return now_ns >= next_ns_.load(std::memory_order_relaxed); }
  // When ready() turns true (a hint, as ready() is).
  [[nodiscard]] uint64_t next_ns() const { return next_ns_.load(std::memory_order_relaxed); }
  // Lock-free: whether the allowance is out of debt (at or above zero) at `now_ns`, as of the last
  // admission or charge. Work the caller spaces itself (admit_spaced) waits for this when it must
  // not add its cost to a debt others left.
  [[nodiscard]] bool solvent(uint64_t now_ns) const { return now_ns >= solvent_ns_.load(std::memory_order_relaxed); }
  // When solvent() turns true (a hint, as solvent() is).
  [[nodiscard]] uint64_t solvent_ns() const { return solvent_ns_.load(std::memory_order_relaxed); }
  // The minimum spacing of admitted launches (the rate limit).
  [[nodiscard]] uint64_t spacing_ns() const { return static_cast<uint64_t>(1e9 / options_.max_per_second); }
  // Whether a launch of `kind` may go now; reserves its estimated cost when it may. With
  // `on_credit` the allowance need only be above minus the cap (the rate limit holds as ever): the
  // launch may leave a debt of up to one full allowance that later launches wait out, so the
  // long-run share still holds. At the default budget a group switch costs more than the cap, so
  // the allowance is below zero after every switch: credit that stopped at zero served no second
  // family.
  bool admit(uint64_t now_ns, CostKind kind, bool on_credit = false);
  // Admits without the allowance or the rate limit, reserving the estimate all the same: for work
  // the caller spaces itself by its measured cost (graph stages, AlwaysOnPolicy::admit_graph), and
  // for the later passes of a stage whose first pass was admitted (CUTRIAGE_STAGE_PASSES). The
  // debt it leaves holds the other launches back, so the long-run share stays the budget; a
  // stage's passes add their cost to the burst bound above.
  void admit_spaced(uint64_t now_ns, CostKind kind);
  // The measured cost of an admitted launch (or of one-off work), when it ended.
  void charge(uint64_t now_ns, CostKind kind, uint64_t cost_ns);
  // An admitted launch that was not profiled after all (its context was taken, its profiler could
  // not start): its reservation is returned and what it cost is spent, but it teaches the
  // estimate nothing and counts as neither an admission nor a switch (a claim that failed in
  // microseconds would otherwise pass for the first switch, CUPTI's start-up, or drag the mean).
  void cancel(uint64_t now_ns, CostKind kind, uint64_t cost_ns);
  // CUPTI's one-off start-up, paid ahead at the first launch (CUTRIAGE_WARMUP): reported apart
  // (OverheadStats::startup_ns), neither spent nor drawn from the allowance, as the profiler host
  // made at context creation is not. The first group switch is then estimated as a later one.
  void startup_paid(uint64_t now_ns, uint64_t cost_ns);
  // A selected launch the budget held back.
  void defer() { ++deferred_; }
  [[nodiscard]] uint64_t estimate_ns(CostKind kind) const { return estimate_[static_cast<size_t>(kind)]; }
  [[nodiscard]] wire::OverheadStats stats(uint64_t now_ns) const;
  [[nodiscard]] const BudgetOptions& options() const { return options_; }

 private:
  // What was spent now: the totals and the last window's.
  void spend(uint64_t now_ns, uint64_t cost_ns);
  [[nodiscard]] double cap() const;  // the allowance's ceiling: fraction * window
  void accrue(uint64_t now_ns);
  void update_next(uint64_t now_ns, double needed);

  BudgetOptions options_;
  uint64_t start_ns_;
  uint64_t last_ns_;        // allowance accrued up to here
  double allowance_ns_;     // may go negative after an underestimate
  uint64_t last_admit_ns_ = 0;
  bool admitted_any_ = false;
  std::array<uint64_t, kCostKinds> estimate_;
  std::array<uint32_t, kCostKinds> measured_{};  // costs measured per kind (the estimate's weight)
  bool startup_charged_ = false;          // the first group switch (CUPTI start-up) was charged
  uint64_t spent_ns_ = 0;
  uint64_t startup_ns_ = 0;  // startup_paid(), outside spent_ns_
  uint64_t admitted_ = 0;
  uint64_t deferred_ = 0;
  uint64_t group_switches_ = 0;
  std::deque<std::pair<uint64_t, uint64_t>> recent_;  // (end time, cost) within one window
  uint64_t window_spent_ns_ = 0;                       // sum of recent_
  uint64_t max_window_spent_ns_ = 0;
  std::atomic<uint64_t> next_ns_{0};
  std::atomic<uint64_t> solvent_ns_{0};  // the allowance is back at zero then (solvent)
};

}  // namespace cutriage::agent
