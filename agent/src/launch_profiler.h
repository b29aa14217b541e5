// One profiled launch, from its launch-entry callback to its exit callback, on the application's
// thread: asks the selection, claims the context, begins the range profiler (or the PC sampler),
// and at the exit ends it, evaluates the counters, combines them with the family's earlier ones,
// triages and writes the record. Also the record of a launch that is never profiled, and the
// always-on release of idle range profilers.
//
// Ownership: the profile in flight lives in a thread-local slot between entry and exit; it holds
// its context (shared) and the CUPTI gate (shared, so no trace flush runs during a replay). The
// context's `busy` flag is held from entry to exit. Nothing here holds the family table's lock
// while a kernel runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "always_on.h"
#include "app_replay.h"
#include "config.h"
#include "contexts.h"
#include "cutriage/collectors/platform.h"
#include "devices.h"
#include "family.h"
#include "log.h"
#include "nvtx_tracker.h"
#include "pc_summary.h"
#include "plan_cache.h"
#include "record_output.h"
#include "selection.h"
#include "trace_folder.h"

namespace cutriage::agent {

class LaunchProfiler {
 public:
  // What the profiler works with; every reference outlives it. `always_on` is null in deep mode.
  struct Parts {
    const AgentConfig& config;
    collectors::Platform& platform;
    Logger& log;
    FamilyTable& families;
    Selector& selector;
    AlwaysOnPolicy* always_on;
    DeviceCatalog& devices;
    const KernelBuilds& builds;
    ContextTable& contexts;
    TraceFolder& trace;
    const std::atomic<bool>& trace_started;
    NvtxTracker& nvtx;
    RecordOutput& output;
    CubinCache& cubins;
    std::shared_mutex& gate;
    const triage::TriageOptions& triage_options;
    const std::atomic<uint64_t>& launch_counter;  // the latest launch's index
    const std::atomic<bool>& flush_running;       // a flush thread releases idle profilers
    const std::atomic<bool>& finished;            // the agent has finished
    std::function<uint64_t()> monotonic_ns;
    // The agent stops profiling (no permission): says so once.
    std::function<void(wire::AgentState, const std::string&)> set_inactive;
    std::function<void(wire::Severity, const std::string& code, const std::string& message, uint64_t family)> notify;
    std::function<void()> deep_profiled;  // a deep capture's launch completed
    // The process's metric plans, made once per (chip, counter list), shared with the graph
    // profiler.
    PlanCache& plans;
    // Application replay (CUTRIAGE_REPLAY=application); null otherwise (and always with always_on).
    ApplicationReplayPolicy* app_replay = nullptr;
    // Plans were queued (queue_plans, or a kernel's next stage): the flush thread's next tick
    // makes them now. Empty: they wait for the next tick.
    std::function<void()> plans_queued;
  };
  explicit LaunchProfiler(Parts parts);

  // The slow path of a launch the selection may want. True when this launch is now profiled or
  // sampled (its exit callback then completes it).
  bool enter(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index);
  // The launch's exit callback: completes the profile in flight on this thread, if it is this one.
  void exit(const collectors::LaunchEvent& event);
  // Always-on: disables the range profilers idle since release_ms (flush thread, or a launch when
  // there is none).
  void release_idle_profilers();
  // Always-on without a flush thread: the release of an idle range profiler falls to the first
  // launch after it is due (any family's; one thread takes it). One load per launch.
  void release_if_due() {
    if (uint64_t due = release_due_ns_.load(std::memory_order_relaxed);
        due != 0 && p_.monotonic_ns() >= due && release_due_ns_.compare_exchange_strong(due, 0)) {
      release_idle_profilers();
    }
  }
  // Deep mode: queues the metric plans a first profiled launch on `chip` will ask for, to be made
  // off the application's thread by make_queued_plans() (the flush thread).
  void queue_plans(const std::string& chip, const std::vector<std::vector<std::string>>& lists);
  // Makes the queued plans (and the chip's profiler host). Returns how many are ready.
  size_t make_queued_plans();
  // A step's counters for one launch of `family` (step_profiler.h): combined with the family's
  // earlier ones, triaged and written as a profiled launch's record, on the calling thread.
  // `event` is that launch's (its mangled name is taken from the family); `step_launches` the
  // family's launch in each pass of the step, `launch_index` among them; `entered_ns` and
  // `stopped_ns` (monotonic) bound the last pass's end, the record's cost. `traced_ns`: each of
  // those launches' traced duration (0: not traced), which Decision 0 compares.
  void publish_step(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index,
                    const collectors::MetricPlan& plan, const std::vector<collectors::MetricReading>& readings,
                    std::vector<uint64_t> step_launches, std::vector<double> traced_ns, uint64_t entered_ns,
                    uint64_t stopped_ns);
  // Launches whose PC samples came back.
  [[nodiscard]] uint64_t sampled_launches() const { return sampled_launches_.load(std::memory_order_relaxed); }

 private:
  struct Active;
  static std::unique_ptr<Active>& active_slot();
  [[nodiscard]] bool owns_slot(uint64_t correlation_id) const;
  // A profile in flight for this launch on `ctx` (claimed by the caller).
  [[nodiscard]] std::unique_ptr<Active> new_active(const std::shared_ptr<ContextState>& ctx, Family& family,
                                                   const collectors::LaunchEvent& event, uint64_t launch_index) const;
  void begin_counters(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index,
                      const Selection& selection, const std::shared_ptr<const MetricGroups>& groups,
                      uint64_t started_mono);
  void begin_sampling(const collectors::LaunchEvent& event, Family& family, uint64_t launch_index, uint64_t deep);
  void complete_counters(Active& active);
  // The evaluated counters of `active` (a profiled launch's, or a step's launch): the family's
  // record, its triage, completeness and next stage.
  void publish_counters(Active& active, const std::vector<collectors::MetricReading>& readings, uint64_t stopped);
  void complete_sampling(Active& active);
  // Writes the family's profiled record again with the samples (or why there are none).
  // `cost`: the sampled launch's phases (its triage filled in here); none when it never ran.
  void finish_sampling(Family& family, PcSummary summary, std::optional<wire::ProfileCost> cost = std::nullopt);
  void record_failure(Active& active, const std::string& what);
  // launch_index 0: the latest launch (when the caller does not know its own).
  void record_unprofiled(const collectors::LaunchEvent& event, Family& family, wire::ProfileStatus status,
                         const std::string& detail, uint64_t launch_index = 0);
  // Always-on: says once when a family's counters are complete.
  void note_complete(Family& family);
  void release(ContextState& ctx);

  Parts p_;
  // Always-on's or application replay's policy: launches carry single-pass groups; null in deep
  // mode with kernel replay.
  SinglePassPolicy* const single_pass_;
  const uint64_t instance_id_;  // tells the thread-local slots of different agents apart
  // Always-on without a flush thread: when the idle range profiler is due for release (monotonic
  // ns; 0 = none due). Set as a profiled launch ends; taken by the next launch after it.
  std::atomic<uint64_t> release_due_ns_{0};
  std::atomic<uint64_t> sampled_launches_{0};
};

}  // namespace cutriage::agent
