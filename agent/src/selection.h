// Which launches are profiled, and how: the controller of the agent. The Selector applies the
// rules every mode shares (ranking, filters, launch skip and count, the deep-capture window, one
// launch shape per family, counters before PC sampling, the adaptive route's next counters); a
// SelectionPolicy holds what differs between deep mode (every counter a route wants, replayed),
// always-on (one single-pass group a launch, within a budget, resumable from an earlier process)
// and application replay (deep mode's selection, one single-pass group a launch, resumable).
//
// Threading: everything here runs under the family table's lock, except the fast-path members
// named so. The deep-capture window's state is guarded by that lock too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "budget.h"
#include "config.h"
#include "earlier_ranking.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/wire/records.h"
#include "family.h"
#include "groups.h"

namespace cutriage::agent {

// What the selection decided for one launch.
struct Selection {
  enum class Kind : uint8_t {
    kSkip,        // runs untouched
    kNoReplay,    // cooperative or communication kernel: record why, once
    kCounters,    // the range profiler, with `metrics`
    kPcSampling,  // PC sampling (the family's counters are done)
  };
  Kind kind = Kind::kSkip;
  std::vector<std::string> metrics;
  int group = -1;     // always-on: index of the single-pass group
  // Always-on with CUTRIAGE_STAGE_PASSES: `metrics` are a stage's, one pass on this launch (the
  // plan is PlanReplay::kLaunches; always_on.h).
  bool stage_pass = false;
  uint64_t stage_collection = 0;  // its stage's collection id: a pass of another starts CUPTI's over
  uint64_t deep = 0;  // id of the deep-capture request this launch serves; 0 = none
  CostKind cost = CostKind::kSameGroup;  // always-on: what the budget reserved for it
};

// The launch's context as always-on's group choice sees it.
struct ContextGroups {
  const MetricGroups* groups = nullptr;  // the chip's single-pass groups (null: none yet)
  int configured = -1;                   // the group the context has configured
  uint64_t configured_since_ns = 0;
  uint64_t stage_family = 0;    // the family whose stage the context holds (0: none)
  uint64_t stage_pass_ns = 0;   // that stage's last pass (monotonic)
};

// A deep-capture window (one at a time), guarded by the family table's lock.
struct DeepWindow {
  wire::ControlRequest request;
  uint32_t top = 0;  // "top:N"; 0 when `filter` names the families
  KernelFilter filter;
  uint64_t end_mono_ns = 0;
  std::set<uint64_t> captured;  // family ids profiled in the window
  std::set<uint64_t> sampled;   // family ids PC-sampled in the window
};

class SelectionPolicy {
 public:
  // What the policy makes of the counters a launch still wants.
  struct Choice {
    enum class Kind : uint8_t { kCollect, kWait, kComplete } kind = Kind::kCollect;
    std::vector<std::string> metrics;
    int group = -1;
    bool stage_pass = false;
    uint64_t stage_collection = 0;  // the stage's collection id (MetricPlan::collection)
    CostKind cost = CostKind::kSameGroup;
  };
  virtual ~SelectionPolicy() = default;

  // The launch fast path, without the lock: whether a candidate's launch may come to the
  // selection now (always-on: the budget and the family's own wait).
  virtual bool admits_fast(Family& family) = 0;
  // Whether families are PC-sampled again after an interval (refresh_candidates has work).
  [[nodiscard]] virtual bool resamples() const = 0;
  // The most counter launches one family gets.
  [[nodiscard]] virtual uint32_t max_counter_launches() const = 0;
  // Whether a family PC-sampled before is due for another sampled launch.
  [[nodiscard]] virtual bool samples_again_locked(const Family& family) const = 0;
  // First, on every selected launch: false when this launch stops here (always-on: it waits for
  // the launch shape an earlier process measured). May resume the family (sets resumed_record).
  virtual bool prepare_locked(Family& family, const collectors::LaunchEvent& event, uint64_t launch_index,
                              const std::string& chip, bool deep_targeted, const ContextGroups& context) = 0;
  // Whether a PC-sampled launch may go now (always-on: the budget).
  virtual bool admit_sampling_locked(Family& family) = 0;
  // The counters of a family's first profiled launch under adaptive collection.
  [[nodiscard]] virtual std::vector<std::string> first_counters(const std::string& chip) const = 0;
  // What this launch collects of `wanted` (non-empty, unless a stage is in progress).
  virtual Choice choose_locked(Family& family, std::vector<std::string> wanted, const ContextGroups& context) = 0;
  // Whether the family has a stage in progress whose passes are not all done (always-on with
  // CUTRIAGE_STAGE_PASSES): its launches go to choose_locked even when nothing else is wanted.
  [[nodiscard]] virtual bool stage_in_progress_locked(const Family& /*family*/) const { return false; }
  // The counter list a launch that wants `wanted` hands the collector, as choose_locked would make
  // it, for its metric plan to be made ahead on the flush thread; empty when there is nothing to
  // plan ahead. `family` (its lock held) is null for one not seen yet.
  [[nodiscard]] virtual std::vector<std::string> plan_list_locked(const Family* /*family*/,
                                                                  std::vector<std::string> wanted) const {
    return wanted;
  }
};

class Selector {
 public:
  Selector(const AgentConfig& config, FamilyTable& families, SelectionPolicy& policy,
           const EarlierRanking& earlier, const std::atomic<wire::AgentState>& state,
           const std::atomic<bool>& trace_started, std::function<uint64_t()> monotonic_ns);

  // Decides, under the lock, whether this launch is profiled and how.
  Selection select(const collectors::LaunchEvent& event, uint64_t launch_index, const std::string& chip,
                   Family& family, const ContextGroups& context);
  // Whether the family's next launch goes to the selection (lock held).
  void update_candidate_locked(Family& family);
  void update_all_locked();
  [[nodiscard]] bool counters_left_locked(const Family& family) const;
  [[nodiscard]] bool pc_sampling_left_locked(const Family& family) const;
  // After a trace batch: ranks the families and marks the ones to profile (the trace's lock held).
  void apply_ranking(const triage::TimelineAccumulator& timeline);
  // Families due for another sampled launch become candidates again (always-on's interval).
  void refresh_candidates();

  [[nodiscard]] SelectionPolicy& policy() { return policy_; }
  // The counter lists a family's first profiled launch on `chip` may ask for, most likely first
  // (deep mode plans them ahead, off the application's thread). Empty when nothing is profiled.
  [[nodiscard]] std::vector<std::vector<std::string>> first_lists(const std::string& chip) const;
  // The counter list the family's next profiled launch will hand the collector (lock held), for
  // its plan to be made ahead; empty when nothing is left or nothing is worth planning ahead.
  [[nodiscard]] std::vector<std::string> next_list_locked(Family& family, const std::string& chip);
  // Launches of families that pass the kernel-name filter (CUTRIAGE_LAUNCH_SKIP counts them).
  void count_matching_launch() { matching_launches_.fetch_add(1, std::memory_order_relaxed); }
  // The deep-capture window (lock held).
  [[nodiscard]] std::optional<DeepWindow>& deep_locked() { return deep_; }
  [[nodiscard]] bool deep_targets_locked(const Family& family) const;
  [[nodiscard]] bool deep_open() const { return deep_open_.load(std::memory_order_relaxed); }
  void set_deep_open(bool open) { deep_open_.store(open); }

 private:
  Selection select_deep_locked(const collectors::LaunchEvent& event, Family& family);
  // The counters the route still wants of this launch, by CUTRIAGE_METRICS; empty: none.
  std::vector<std::string> wanted_locked(Family& family, const std::string& chip);

  const AgentConfig& config_;
  FamilyTable& families_;
  SelectionPolicy& policy_;
  const EarlierRanking& earlier_;  // when loaded, its ranking chooses the families, not the trace's
  const std::atomic<wire::AgentState>& state_;
  const std::atomic<bool>& trace_started_;
  std::function<uint64_t()> monotonic_ns_;
  std::atomic<uint64_t> matching_launches_{0};
  std::optional<DeepWindow> deep_;
  std::atomic<bool> deep_open_{false};  // a deep-capture window is open (fast path)
};

// Deep mode: every counter the route wants, replayed; no budget.
class DeepPolicy final : public SelectionPolicy {
 public:
  explicit DeepPolicy(const AgentConfig& config) : config_(config) {}
  bool admits_fast(Family&) override { return true; }
  [[nodiscard]] bool resamples() const override { return false; }
  [[nodiscard]] uint32_t max_counter_launches() const override { return config_.max_profiles_per_kernel; }
  [[nodiscard]] bool samples_again_locked(const Family&) const override { return false; }
  bool prepare_locked(Family&, const collectors::LaunchEvent&, uint64_t, const std::string&, bool,
                      const ContextGroups&) override {
    return true;
  }
  bool admit_sampling_locked(Family&) override { return true; }
  [[nodiscard]] std::vector<std::string> first_counters(const std::string& chip) const override;
  Choice choose_locked(Family&, std::vector<std::string> wanted, const ContextGroups&) override;

 private:
  const AgentConfig& config_;
};

bool same_shape(const triage::LaunchConfig& a, const triage::LaunchConfig& b);

}  // namespace cutriage::agent
