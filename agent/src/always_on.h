// Always-on's selection policy: one single-pass metric group a launch (no replay), within an
// overhead budget, with the context's configured group preferred and group switches chosen for the
// most GPU time still without a verdict; families resumed from an earlier process's output
// (CUTRIAGE_RESUME). Owns the budget, the chips' metric groups and the resumable families.
//
// Threading: the budget, the resume table and the families' fields sit behind the family table's
// lock (the `_locked` members); the metric groups behind groups_mutex_, which comes before it
// (planning charges the budget).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "budget.h"
#include "config.h"
#include "cutriage/triage/engine.h"
#include "cutriage/wire/prior_run.h"
#include "devices.h"
#include "family.h"
#include "groups.h"
#include "log.h"
#include "selection.h"

namespace cutriage::agent {

// The most of one CUTRIAGE_RESUME file (or segment) read into the application's memory.
inline constexpr size_t kMaxResumeFileBytes = size_t{256} << 20;

class AlwaysOnPolicy final : public SelectionPolicy {
 public:
  struct Clocks {
    std::function<uint64_t()> monotonic_ns;
    std::function<bool()> on_flush_thread;  // planning there is not the application's time
    std::function<bool()> trace_started;    // resumed records carry their family id then
  };
  AlwaysOnPolicy(const AgentConfig& config, FamilyTable& families, DeviceCatalog& devices, const KernelBuilds& builds,
                 Logger& log, const triage::TriageOptions& triage_options, Clocks clocks);

  // CUTRIAGE_RESUME: reads the earlier output (before anything is written: it may be the same file).
  void load_resume();
  // Whether the earlier output has this family's name and block (its first launch then comes to
  // the selection around the budget).
  [[nodiscard]] bool resumable_locked(const Family& family) const;

  bool admits_fast(Family& family) override;
  [[nodiscard]] bool resamples() const override { return config_.pc_sampling_interval_s > 0; }
  [[nodiscard]] uint32_t max_counter_launches() const override;
  [[nodiscard]] bool samples_again_locked(const Family& family) const override;
  bool prepare_locked(Family& family, const collectors::LaunchEvent& event, uint64_t launch_index,
                      const std::string& chip, bool deep_targeted) override;
  bool admit_sampling_locked(Family& family) override;
  [[nodiscard]] std::vector<std::string> first_counters(const std::string& chip) const override;
  Choice choose_locked(Family& family, std::vector<std::string> wanted, const ContextGroups& context) override;

  // The chip's single-pass groups, planned on first use. With `may_plan` false (an application
  // thread while the flush thread runs) a chip not planned yet is left to the flush thread and
  // null returned.
  std::shared_ptr<const MetricGroups> groups_for(const std::string& chip, bool may_plan);
  void plan_pending_groups();  // flush thread
  // A graph launch the graph profiler would make a pass of (the first of a stage: kGroupSwitch;
  // the stage's later passes: kSameGroup, at once, since a stage abandoned halfway is wasted) or
  // sample (kPcSampling): whether it may go now (the lock NOT held); its estimate is reserved.
  bool admit_graph(CostKind kind);
  // What a graph pass or sampled graph launch cost: the next graph stage waits until the budget's
  // share of the time since has paid for it (graph stages go on credit, see admit_graph).
  void graph_spent(uint64_t cost_ns);
  // Charges what elapsed since `started_mono_ns` (the lock NOT held).
  void charge_since(CostKind kind, uint64_t started_mono_ns);
  // A configured profiler may be taken on credit until then (monotonic ns).
  void extend_credit(uint64_t until_ns) { credit_until_ns_.store(until_ns, std::memory_order_relaxed); }
  [[nodiscard]] wire::OverheadStats stats_locked() const;
  // Says once, in the output and the log, when a family's counters are complete: the message, or
  // empty when there is nothing (new) to say.
  std::string completion_message_locked(Family& family);
  // The same, once, when its verdict is first routed (Family::routed): what an operator can act on
  // before the deeper decisions are in.
  std::string routed_message_locked(Family& family);

 private:
  // Per group, what the other candidate families on the device that are still launching want.
  struct GroupDemand;
  GroupDemand group_demand_locked(const Family& family, const MetricGroups& groups, uint64_t now_ns) const;
  std::optional<wire::KernelRecord> resume_locked(Family& family, const collectors::LaunchEvent& event,
                                                  uint64_t launch_index, const std::string& chip, bool* wait_for_shape);

  const AgentConfig& config_;
  FamilyTable& families_;
  DeviceCatalog& devices_;
  const KernelBuilds& builds_;
  Logger& log_;
  const triage::TriageOptions& triage_options_;
  Clocks clocks_;
  Budget budget_;
  std::atomic<uint64_t> credit_until_ns_{0};
  // Graph stages: not before then (monotonic ns). They are spaced by their own measured cost
  // instead of waiting for the allowance (admit_graph).
  std::atomic<uint64_t> graph_not_before_ns_{0};
  // CUTRIAGE_RESUME: what the earlier process measured, per family (mangled name, chip, block);
  // written by load_resume() before any callback, then read and erased under the lock.
  std::map<std::tuple<std::string, std::string, uint32_t, uint32_t, uint32_t>, wire::PriorFamily> resume_;
  std::string resume_source_;  // the file(s) it came from, for the records and the log

  std::mutex groups_mutex_;
  std::map<std::string, std::shared_ptr<const MetricGroups>> groups_;  // by chip
  std::set<std::string> groups_failed_;
  std::set<std::string> groups_pending_;  // chips the flush thread plans next
};

}  // namespace cutriage::agent
