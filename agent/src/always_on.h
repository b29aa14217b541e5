// Always-on's selection policy: one single-pass metric group a launch (no replay), within an
// overhead budget, with the context's configured group preferred and group switches chosen for the
// most GPU time still without a verdict; families resumed from an earlier process's output
// (CUTRIAGE_RESUME, single_pass.h). Owns the budget.
//
// With CUTRIAGE_STAGE_PASSES, a family's counters come in stages instead, as deep mode's adaptive
// route stages them (routing counters and their riders first, then what the route still reads),
// each stage one multi-pass configuration (PlanReplay::kLaunches) with one pass on each of the
// family's next launches: as graphs are profiled over their own replays (graph_profiler.h). Why:
// the costly part of always-on is the switch to a new configuration (140-200 ms on the H200),
// paid once a stage here, against once a group (about 16 groups for a complete verdict). The
// family with the most GPU time takes the next stage; the context stays with it until the stage
// ends (ContextState::stage_family), and a stage whose context was reconfigured or released
// between two passes is started again.
//
// Threading: the budget and the families' fields sit behind the family table's lock (the
// `_locked` members); the metric groups behind the base's groups mutex, which comes before it
// (planning charges the budget).
#pragma once

#include <algorithm>
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
#include "single_pass.h"

namespace cutriage::agent {

class AlwaysOnPolicy final : public SinglePassPolicy {
 public:
  AlwaysOnPolicy(const AgentConfig& config, FamilyTable& families, DeviceCatalog& devices, const KernelBuilds& builds,
                 Logger& log, const triage::TriageOptions& triage_options, Clocks clocks);

  bool admits_fast(Family& family) override;
  [[nodiscard]] bool resamples() const override { return config_.pc_sampling_interval_s > 0; }
  [[nodiscard]] uint32_t max_counter_launches() const override;
  [[nodiscard]] bool samples_again_locked(const Family& family) const override;
  bool admit_sampling_locked(Family& family) override;
  [[nodiscard]] std::vector<std::string> first_counters(const std::string& chip) const override;
  Choice choose_locked(Family& family, std::vector<std::string> wanted, const ContextGroups& context) override;
  [[nodiscard]] bool stage_in_progress_locked(const Family& family) const override {
    return config_.stage_passes && !family.ao_stage.empty();
  }
  // CUTRIAGE_STAGE_PASSES: the stage choose_locked would begin for `wanted` (stage_counters_locked);
  // nothing otherwise, since the groups are planned once per chip.
  [[nodiscard]] std::vector<std::string> plan_list_locked(const Family* family,
                                                          std::vector<std::string> wanted) const override;

  // CUTRIAGE_STAGE_PASSES: the first stage of a family the PM window routes with `verdict`, as
  // choose_locked will begin it when nothing was collected yet (its plan is made before the
  // routing is published); empty otherwise.
  [[nodiscard]] std::vector<std::string> routed_first_stage(const std::string& chip,
                                                            triage::Classification verdict) const;

  // CUTRIAGE_STEP_STAGES: the family that anchors the next step on `family`'s device now
  // (step_profiler.h): the first in the order stages take (stage_leader_locked), with counters
  // left; none while the PM routing window may still route the families in seconds (a step's
  // collection holds the context for minutes).
  [[nodiscard]] const Family* step_anchor_locked(const Family& family, uint64_t now_ns) const;

  // A graph launch the graph profiler would make a pass of (the first of a stage: kGroupSwitch;
  // the stage's later passes: kSameGroup, at once, since a stage abandoned halfway is wasted) or
  // sample (kPcSampling): whether it may go now (the lock NOT held); its estimate is reserved.
  // Refused (kind other than kSameGroup) while a step wants the lane (step_wants_lane). A stage
  // dearer than one allowance thus breaks Budget's bound (budget.h) by the difference: its passes
  // go at once, and only the graph's next stage is held back.
  bool admit_graph(CostKind kind);
  // The same for a step's pass (step_profiler.h), which the step's own hold does not refuse.
  bool admit_step(CostKind kind);
  // CUTRIAGE_STEP_STAGES: the graph stages and sampled graph launches share one lane with the
  // steps (graph_ready, graph_spent). A graph is launched far more often than a step can be
  // learned (2 x CUTRIAGE_STEP_STAGES launches), so without a hold the graph's stages would take
  // every turn and the step, which gives every family of the application's loop its counters,
  // none. A step whose anchor launches holds the lane until `until_ns` (monotonic): the graphs'
  // stages (admit_graph) and the families' groups and PC sampling (admits_fast) wait. The anchor's
  // looks and every launch of a step learned or in progress renew it; a give-up or no family left
  // to collect drops it (step_lane_done); a hold nobody renews lapses by itself.
  void step_wants_lane(uint64_t until_ns) { step_lane_until_ns_.store(until_ns, std::memory_order_relaxed); }
  void step_lane_done() { step_lane_until_ns_.store(0, std::memory_order_relaxed); }
  [[nodiscard]] bool step_holds_lane(uint64_t now_ns) const {
    return now_ns < step_lane_until_ns_.load(std::memory_order_relaxed);
  }
  // What a graph pass or sampled graph launch cost: the next graph stage waits until the budget's
  // share of the time since has paid for it (graph stages go on credit, see admit_graph).
  void graph_spent(uint64_t cost_ns);
  // The launch gate's question (launch_gate.h): the earliest a launch may be admitted from `now`
  // on (monotonic ns; `now` when one may be at once, UINT64_MAX when nothing is wanted): the
  // budget's next admission for a candidate family, a graph's next stage when `graphs` (a graph is
  // a target), a step's next pass when `steps`; while a step holds the lane, only the step's. A
  // hint that errs early (a family's own hold is not read). Takes the family table's lock.
  [[nodiscard]] uint64_t next_work_ns(uint64_t now_ns, bool graphs, bool steps) const;
  // Whether the PM routing window has yet to give its first answer, and may still within
  // kPmWaitNs of the start.
  [[nodiscard]] bool routing_window_pending(uint64_t now_ns) const;
  // Whether admit_graph would admit a first pass now (nothing reserved).
  [[nodiscard]] bool graph_ready(uint64_t now_ns) const {
    return now_ns >= graph_not_before_ns_.load(std::memory_order_relaxed);
  }
  // Whether a step's pass may begin now: graph_ready, and the budget out of the debt that the PM
  // window, the plans and the groups' launches left (a step that waited only for its own passes
  // spent the share twice over: BENCHMARKS.md). The groups and the PC sampling of families wait
  // while a step holds the lane (admits_fast), so the debt is paid.
  [[nodiscard]] bool step_ready(uint64_t now_ns) const { return graph_ready(now_ns) && budget_.solvent(now_ns); }
  // When step_ready will next hold, as things stand (monotonic ns): the launch gate's cue to have
  // the callbacks back for a step waiting between two passes.
  [[nodiscard]] uint64_t step_ready_ns() const {
    return std::max(graph_not_before_ns_.load(std::memory_order_relaxed), budget_.solvent_ns());
  }
  // Charges what elapsed since `started_mono_ns` (the lock NOT held).
  void charge_since(CostKind kind, uint64_t started_mono_ns);
  // CUPTI's start-up paid ahead since `started_mono_ns` (ProfilerWarmup, the lock NOT held):
  // reported apart, outside the budget's share (Budget::startup_paid).
  void startup_paid_since(uint64_t started_mono_ns);
  // The same for an admitted launch that was not profiled after all (Budget::cancel).
  void cancel_since(CostKind kind, uint64_t started_mono_ns);
  // Always-on's PM routing window (pm_window.h), the lock NOT held. The first window goes at once,
  // on credit, as the budget's first launch goes on the full allowance it starts with: a routed
  // verdict for every family in the first minutes is worth more than the range profiler's first
  // group, which the debt delays by the window's cost over the budget's share (about 15 s at 0.4%
  // for the assumed 61 ms). Later windows wait for the allowance like a launch. Reserves the
  // estimate when admitted.
  bool admit_pm_window(bool first);
  // What an admitted window cost (or a refused begin()), the lock NOT held.
  void charge(CostKind kind, uint64_t cost_ns);
  // The PM routing window has given its first answer (its samples attributed) or failed: stages
  // (CUTRIAGE_STAGE_PASSES) no longer wait for it.
  void pm_window_settled() { pm_settled_.store(true, std::memory_order_relaxed); }
  // A configured profiler may be taken on credit until then (monotonic ns).
  void extend_credit(uint64_t until_ns) { credit_until_ns_.store(until_ns, std::memory_order_relaxed); }
  [[nodiscard]] wire::OverheadStats stats_locked() const;
  // Since the policy (the agent) started, on the budget's clock.
  [[nodiscard]] uint64_t since_start_ns() const { return clocks_.monotonic_ns() - started_ns_; }
  // Says once, in the output and the log, when a family's counters are complete: the message, or
  // empty when there is nothing (new) to say.
  std::string completion_message_locked(Family& family);
  // The same, once, when its verdict is first routed (Family::routed): what an operator can act on
  // before the deeper decisions are in.
  std::string routed_message_locked(Family& family);

 protected:
  void planning_cost(uint64_t cost_ns) override;

 private:
  // Per group, what the other candidate families on the device that are still launching want.
  struct GroupDemand;
  GroupDemand group_demand_locked(const Family& family, const MetricGroups& groups, uint64_t now_ns) const;
  // One single-pass group for this launch (the default), or a wait.
  Choice choose_group_locked(Family& family, const std::vector<std::string>& wanted, const ContextGroups& context);
  // A stage's counters for `wanted`: with a family the PM window routed first, its verdict's route
  // too; then what every group measures; sorted. Empty when `wanted` and the route add nothing.
  // `family` may be null (a family not seen yet).
  [[nodiscard]] static std::vector<std::string> stage_counters_locked(const Family* family,
                                                                      std::vector<std::string> wanted);
  // CUTRIAGE_STAGE_PASSES: the next pass of the family's stage, or a new stage.
  Choice choose_stage_locked(Family& family, std::vector<std::string> wanted, const ContextGroups& context);
  // Whether no other family still launching on the device, with counters left, holds more of the
  // GPU time (it takes the next stage: impact first).
  [[nodiscard]] bool first_for_stage_locked(const Family& family, uint64_t now_ns) const;
  // Of the families that may take the next stage on `family`'s device (itself among them), the
  // one that takes it.
  [[nodiscard]] const Family* stage_leader_locked(const Family& family, uint64_t now_ns) const;

  const uint64_t started_ns_;
  Budget budget_;
  std::atomic<uint64_t> credit_until_ns_{0};
  // CUTRIAGE_STAGE_PASSES with the PM window on: a family's first stage waits for the first window
  // (at most kPmWaitNs), so that a family it routes takes its verdict's decisions in that stage.
  std::atomic<bool> pm_settled_;
  // Graph stages: not before then (monotonic ns). They are spaced by their own measured cost
  // instead of waiting for the allowance (admit_graph).
  std::atomic<uint64_t> graph_not_before_ns_{0};
  std::atomic<uint64_t> step_lane_until_ns_{0};  // step_wants_lane
  uint64_t stage_ids_ = 0;  // the last stage's collection id (the family table's lock)
};

}  // namespace cutriage::agent
