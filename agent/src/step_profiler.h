// Always-on's steps (CUTRIAGE_STEP_STAGES): one range-profiler collection of every counter the
// rules read, for every kernel of the application's step at once.
//
// An application repeats a step (a training iteration, a served batch): the same launches in the
// same order. The profiler first learns the step: it records the families launched on the context
// of the family that takes the next stage (AlwaysOnPolicy::step_anchor_locked), at least twice
// CUTRIAGE_STEP_STAGES launches, until all of them repeat with one period of at most
// CUTRIAGE_STEP_STAGES launches, starting at a launch of that family (the anchor; a family
// launched several times a step anchors at one of them). Each pass of the collection is then one
// period from the anchor, under auto range and user replay (PlanReplay::kLaunches): CUPTI gives
// every launch of the pass a range of its own and replays, saves and restores nothing, and after
// the last pass range r holds the counters of the step's r-th launch (docs/always-on.md, "Steps").
// So one configuration switch serves every family of the step, where the groups pay one per group
// and the stages one per family.
//
// A graph launched in the step (a served batch's graph every few requests) is one of its launches,
// checked like a kernel's, but no pass holds one: CUPTI fails the Stop of a pass with a graph
// launch inside it when the collection has several passes (on one stream as on two, seen on the
// H200: tests/data/always_on/steps-shapes-probe-h200.txt). So a step with graph launches is taken
// from the launch after its last graph launch (pass_start()), each pass ends before its first
// graph launch, and the launches from there to the next pass run outside any pass (the graph's own
// stages give its kernels their verdicts). A family launched only after that graph launch in the
// step gets no range from it.
//
// CUPTI does not check that the passes ran the same launches (a pass one launch short is not
// refused), so the profiler checks every launch on the step's context, from any thread, against
// the learned step, and gives the step up when one differs, when no period is found within
// kLearnPeriods times CUTRIAGE_STEP_STAGES launches, when the anchor comes from another thread
// than the first pass's, when no step begins for ContextState::kGraphHoldNs (the context's hold
// lapses then: a step must be shorter), or when the context's range profiler was taken meanwhile.
// Given up kMaxAbandoned times, steps are over for the process and the groups go on.
//
// Threading: with no step learned or in progress, a launch costs one atomic load, and for a
// candidate family a clock read; the families' lock is taken at most every kLookNs to see which
// family anchors the next step, then at that family's next launch. While a step is learned or in
// progress, every launch on its context takes `mutex_` (to be recorded); launches on other
// contexts read two atomics. The pass boundaries (the range profiler's end() and begin()) run on
// the anchor's thread in its launch-entry callback. Lock order: `mutex_`, then the families' lock
// (the budget's) or the context's profiler mutex, never the other way. The records are written
// after `mutex_` is released.
//
// Budget: every pass as a graph stage's first (AlwaysOnPolicy::admit_step, graph_spent): a pass
// begins only once what the passes before it cost is paid back at the budget's share and the
// budget is out of the debt the rest of the agent left (AlwaysOnPolicy::step_ready), and every
// boundary's measured wall time is charged. From the anchor's first look until the step is
// collected or given up, the step holds the lane (step_wants_lane): the groups, the families' PC
// sampling and the graphs' stages wait, so that the debt is paid and the step's turn comes. In
// between, the step keeps its context (its profiler configured, the groups, stages and PM windows
// off it) and follows the application's steps, checking each launch against the learned step, so
// that the next pass begins at a step's first launch. A collection's passes are so spread over
// minutes, and the budget holds over every window. With the launch gate (launch_gate.h) the wait
// may go without the launch callbacks: the step keeps its hold meanwhile (keep_hold) and, once
// they are back, finds its place in the application's steps again (rejoin_locked).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "always_on.h"
#include "config.h"
#include "contexts.h"
#include "cutriage/collectors/platform.h"
#include "devices.h"
#include "family.h"
#include "launch_profiler.h"
#include "log.h"
#include "plan_cache.h"
#include "trace_folder.h"

namespace cutriage::agent {

class StepProfiler {
 public:
  // What the profiler works with; every reference outlives it.
  struct Parts {
    const AgentConfig& config;
    collectors::Platform& platform;
    Logger& log;
    FamilyTable& families;
    AlwaysOnPolicy& always_on;
    DeviceCatalog& devices;
    ContextTable& contexts;
    PlanCache& plans;
    LaunchProfiler& launches;  // writes the records
    TraceFolder& trace;
    const std::atomic<bool>& trace_started;
    std::function<uint64_t()> monotonic_ns;
    // A flush thread runs (it evaluates completed steps, poll()), and how to wake it.
    const std::atomic<bool>& flush_running;
    std::function<void()> wake;
    // The launch gate (launch_gate.h), null without one: whether the launch callbacks are on, and
    // how many times they have been switched (LaunchGate::switches).
    std::function<bool()> callbacks_on;
    std::function<uint64_t()> callbacks_switches;
  };
  // Steps given up this many times: no more for the process.
  static constexpr uint32_t kMaxAbandoned = 3;
  // After a step is given up, the next one waits this long (monotonic ns).
  static constexpr uint64_t kRetryNs = 10'000'000'000;
  // How often a candidate's launch asks whether its family anchors a step (monotonic ns).
  static constexpr uint64_t kLookNs = 20'000'000;
  // How long only the launches of the family found to anchor the next step look again.
  static constexpr uint64_t kLookForNs = 1'000'000'000;
  // How long the anchor's launch, or a launch of a step learned or in progress, holds the graphs'
  // stages back (AlwaysOnPolicy::step_wants_lane) when no launch renews it.
  static constexpr uint64_t kLaneHoldNs = 1'000'000'000;
  // Learning gives up after this many times CUTRIAGE_STEP_STAGES launches without a period.
  static constexpr uint32_t kLearnPeriods = 3;

  explicit StepProfiler(Parts parts);

  // A kernel launch (not a graph launch), before the selection sees it: true when a step took it.
  // The caller then leaves the launch alone (it runs as the application issued it, recorded as one
  // range of the step's pass); false: the launch goes on through the selection.
  bool enter(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index);
  // A graph launch: on a step's context, one of the step's launches (learned, or checked).
  void graph_launch(const collectors::LaunchEvent& event);
  // The flush thread's tick: evaluates the steps completed since, and writes their records.
  void poll();
  // Whether a step is learned or collected. Lock-free.
  [[nodiscard]] bool busy() const { return in_step_.load(std::memory_order_relaxed); }
  // Whether the step needs every launch now, so the launch callbacks must stay on (launch_gate.h):
  // while it is learned and while a pass runs. A step waiting between two passes does not: it
  // finds its place in the step again when they come back (rejoin_locked). Lock-free, sequentially
  // consistent: the gate's veto (launch_gate.h).
  [[nodiscard]] bool follows_now() const {
    return in_step_.load(std::memory_order_seq_cst) && !quiet_.load(std::memory_order_seq_cst);
  }
  // While the step waits between two passes: when the next may begin, as things stand (monotonic).
  [[nodiscard]] uint64_t next_pass_ns() const { return p_.always_on.step_ready_ns(); }
  // The family whose hold on the step's context (ContextState::stage_family) is a step waiting
  // between passes; 0 when none. Lock-free.
  [[nodiscard]] uint64_t quiet_family() const { return quiet_family_.load(std::memory_order_relaxed); }
  // The flush thread's tick while the launch callbacks are off: a step waiting between two passes
  // keeps its context's hold and the lane, which its launches would otherwise renew, so that no
  // idle release, PM window or other profile takes the context meanwhile, nor the first launches
  // after the gap. Skipped when a launch holds the step's lock (the callbacks are on then).
  void keep_hold(uint64_t now);
  // The launch callbacks were off for a while: a step being learned starts learning over (its
  // launches so far and the next ones are not consecutive). A step between passes rejoins.
  void launches_missed();
  // The agent finishes: a step in progress is given up, a completed one is evaluated.
  void finish();

 private:
  // One launch of the pass in progress.
  struct Launch {
    Family* family = nullptr;       // nullptr: a graph launch (its range is not evaluated)
    collectors::LaunchEvent event;  // mangled_name points at the family's (the callback's is gone)
    uint64_t launch_index = 0;
  };
  // What a completed step hands to the records, outside `mutex_`.
  struct Published {
    Launch launch;
    std::vector<collectors::MetricReading> readings;
    std::vector<uint64_t> launch_indices;  // the family's launch in each pass
    std::vector<double> traced_ns;         // and its traced duration (0: not traced)
  };
  // A step's last pass ended: its counter data and what evaluating it needs. The evaluation (the
  // Profiler Host, every counter of every range: seconds for a step of a dozen kernels) and the
  // records are made off the application's thread when a flush thread runs (poll()).
  struct Collected {
    collectors::CounterData data;
    collectors::MetricPlan plan;
    std::shared_ptr<collectors::ProfilerHost> host;
    std::vector<Launch> launches;                // the last pass's, in range order
    std::vector<std::vector<uint64_t>> indices;  // per range: its launch index in each pass
    std::vector<std::vector<uint64_t>> correlations;  // per range: its correlation id in each pass
    std::string anchor;                          // the anchor's function, for the log
    uint64_t anchor_id = 0;                      // its family: the context's hold until published
    std::shared_ptr<ContextState> ctx;
    uint64_t begun_ns = 0;                       // the step began (monotonic)
    uint64_t entered_ns = 0;                     // the last boundary began
    uint64_t ended_ns = 0;                       // and ended, on the application's thread
  };

  // Whether the launch's family is the top one now: learning begins on its context.
  bool try_learn(const collectors::LaunchEvent& event, Family& family, uint64_t now);
  // A launch on the step's context while the step is learned or collected.
  bool in_step(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index);
  // Learning, at an anchor's launch: the shortest period (at most CUTRIAGE_STEP_STAGES) of every
  // launch recorded so far, once they are at least twice CUTRIAGE_STEP_STAGES, when that launch
  // begins one; 0 otherwise.
  [[nodiscard]] size_t period_at() const;
  // Where in the learned period (first_) the passes begin: just after its last graph launch, or
  // at the anchor's launch (0) when it has none.
  [[nodiscard]] size_t pass_start() const;
  // The step is learned: its first pass begins on this launch (the anchor's). False: given up.
  bool begin_locked(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index, uint64_t now);
  // The anchor launched again: the pass in progress ends, and the next begins when the budget
  // has paid for the passes so far (otherwise the step waits, following the application's steps,
  // until a later one), or the step completes.
  // `at_graph`: the step's graph launch that ends each pass (pass_len_); the next pass then begins
  // at the step's next first launch.
  std::optional<Collected> boundary_locked(const collectors::LaunchEvent& event, uint64_t launch_index, uint64_t now,
                                           bool at_graph = false);
  // Waiting between two passes: a launch of the step; at the step's first launch the next pass
  // begins when the budget allows.
  bool between_passes_locked(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index,
                             uint64_t now);
  // Learning: records the next launch's family (or graph launch's position); gives the step up
  // when no period came within kLearnPeriods times CUTRIAGE_STEP_STAGES launches.
  void learn_locked(uint64_t position);
  // Between two passes: whether the launch is the step's next one (advancing position_); gives
  // the step up otherwise. `what` names it for the log.
  bool follow_locked(uint64_t position, const std::string& what);
  // Between two passes, after the launch callbacks were off (the gate's switch count moved since
  // the step last followed a launch; a launch in flight as they went off starts the gathering
  // too, and the switch back on starts it over): the launches are gathered until they span one
  // step, and the
  // step goes on from where they match its learned order (first_: shortest period, so at most
  // one rotation matches); no match gives the step up. True while the launch was taken by it
  // (it begins no pass).
  bool rejoin_locked(uint64_t position, const std::string& what);
  // waiting_, mirrored for the gate (quiet_, quiet_family_).
  void set_waiting_locked(bool waiting);
  [[nodiscard]] uint64_t callbacks_switches() const {
    return p_.callbacks_switches ? p_.callbacks_switches() : 0;
  }
  // The log's reasons for a pass that differs from the first.
  [[nodiscard]] std::string more_than_step(const std::string& what) const;
  [[nodiscard]] std::string other_than_first(const std::string& what, size_t at) const;
  // Claims the step's context (ContextState::busy: a release or a PM window may hold it) and runs
  // `work` under its profiler mutex, when its range profiler is still the step's. Returns why not
  // (empty: `work` ran).
  template <typename Work>
  std::string with_profiler_locked(Work&& work);
  // Begins pass pass_ on the step's context (its profiler mutex held), checking that CUPTI took it
  // as that pass of the collection.
  collectors::Status begin_pass_locked(ContextState& ctx, uint64_t now);
  // The values of every range, for the families the step completes.
  std::vector<Published> evaluate(const Collected& c, size_t* failed) const;
  [[nodiscard]] Launch record_of(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index,
                                 bool last_pass) const;
  void abandon_locked(const std::string& why);
  // Counts a step given up (or never begun), says why, and waits kRetryNs before the next.
  void gave_up(std::string message);
  void end_step_locked();
  // Evaluates a completed step and writes its records: on the flush thread when one runs, else
  // here.
  void hand_over(Collected c);
  void evaluate_and_publish(const Collected& c);

  Parts p_;
  std::atomic<bool> in_step_{false};        // a step is learned or collected (on step_context_)
  std::atomic<uint64_t> step_context_{0};  // the step's context id, while in_step_
  std::atomic<uint64_t> last_step_ns_{0};  // a step last began, or learning last recorded (monotonic)
  std::atomic<uint64_t> not_before_ns_{0};
  std::atomic<uint64_t> look_for_{0};          // the family found to anchor the next step (0: any)
  std::atomic<uint64_t> look_for_until_ns_{0};  // until then only its launches look
  std::atomic<bool> over_{false};          // kMaxAbandoned reached, or no way to make a plan
  std::atomic<uint32_t> abandoned_{0};
  std::atomic<bool> quiet_{false};            // waiting_, for follows_now()
  std::atomic<uint64_t> quiet_family_{0};     // the anchor's family while waiting_ with a context

  std::mutex pending_mutex_;
  std::vector<Collected> pending_;  // completed steps for the flush thread (pending_mutex_)

  std::mutex mutex_;
  // The step in progress (mutex_).
  bool learning_ = false;                  // in_step_ while the step is learned, before its first pass
  uint64_t top_ = 0;                       // the family learning looks for (its id)
  std::vector<uint64_t> learned_;          // learning: the families of the launches so far
  std::shared_ptr<ContextState> ctx_;
  Family* anchor_ = nullptr;
  std::thread::id anchor_thread_;
  std::shared_ptr<collectors::ProfilerHost> host_;
  collectors::MetricPlan plan_;
  uint32_t pass_ = 0;                               // the pass in progress, or the next one while waiting_
  bool waiting_ = false;                            // between two passes (without ctx_: before the first)
  size_t pass_len_ = 0;                             // launches a pass: first_ up to its first graph launch
  size_t position_ = 0;                             // waiting_: the next launch's position in the step
  std::vector<uint64_t> first_;                     // the family of each launch of a pass (learned)
  std::vector<std::vector<uint64_t>> indices_;      // per launch position: its launch index in each pass
  std::vector<std::vector<uint64_t>> correlations_;  // per launch position: its correlation id in each pass
  std::vector<Launch> current_;                     // the pass in progress's launches
  uint64_t gaps_seen_ = 0;                          // the gate's switches when a launch was last followed
  bool rejoining_ = false;                          // rejoin_locked gathers launches
  std::vector<uint64_t> heard_;                     // and these since the callbacks came back
  uint64_t begun_ns_ = 0;                           // the step began (monotonic)
};

}  // namespace cutriage::agent
