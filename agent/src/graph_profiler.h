// CUDA graphs profiled as workloads: the session and controller for graph launches.
//
// CUPTI 13.0 counts a graph launch only as one user range, never node by node, and a graph launch
// must never be replayed (docs/graphs.md). So the application's own launches of one executable
// graph are the passes: a stage's counters are one PlanReplay::kApplication plan, pass i on the
// i-th launch of that exec, nothing replayed, saved or restored. The graph is routed as one
// workload (the engine's route on its counters picks the next stage's), then one of its launches
// is PC-sampled in continuous mode, the samples split by function. Each kernel family that ran in
// the graph gets a record with the graph's counters, its own launch shape, durations and samples,
// and the scope said (GraphScope; Decision 0's d0.graph_share and d0.graph_scope weigh it).
//
// Which graphs: in deep mode every exec launched a second time (up to kMaxTargets), since a short
// program's replays can be over before the trace ranks anything; in both modes, after each
// ranking, the graph holding most of each ranked family's time when most of that family's time is
// in graphs (the exec known through the graph table's bridge).
//
// Threading: targets sit behind mutex_, a leaf except that it is taken inside the trace's lock
// (retarget_locked) and before the family table's and the output's (records). A pass runs from
// the graph launch's entry to its exit on one thread, in a thread-local slot, holding its context
// (busy, and ContextState::graph_exec across the stage's passes) and the CUPTI gate shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "always_on.h"
#include "config.h"
#include "contexts.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/timeline.h"
#include "devices.h"
#include "family.h"
#include "graph_table.h"
#include "log.h"
#include "pc_summary.h"
#include "plan_cache.h"
#include "record_output.h"
#include "trace_folder.h"

namespace cutriage::agent {

class GraphProfiler {
 public:
  struct Parts {
    const AgentConfig& config;
    collectors::Platform& platform;
    Logger& log;
    FamilyTable& families;
    AlwaysOnPolicy* always_on;  // null in deep mode
    DeviceCatalog& devices;
    const KernelBuilds& builds;
    ContextTable& contexts;
    TraceFolder& trace;
    GraphTable& graphs;
    RecordOutput& output;
    CubinCache& cubins;
    std::shared_mutex& gate;
    const triage::TriageOptions& triage_options;
    const std::atomic<bool>& trace_started;
    const std::atomic<bool>& paused;
    PlanCache& plans;  // the process's metric plans (the launch profiler's too)
    std::function<uint64_t()> monotonic_ns;
    std::function<void(wire::AgentState, const std::string&)> set_inactive;
    std::function<void(wire::Severity, const std::string& code, const std::string& message, uint64_t family)> notify;
  };
  explicit GraphProfiler(Parts parts);
  ~GraphProfiler();
  GraphProfiler(const GraphProfiler&) = delete;
  GraphProfiler& operator=(const GraphProfiler&) = delete;

  // Graphs profiled at most (one exec each), and the families of one graph that get a record.
  static constexpr size_t kMaxTargets = 8;
  static constexpr size_t kMaxFamiliesPerGraph = 16;
  // A family gets a record from its graph's counters from this share of the graph's kernel time.
  static constexpr double kMinRecordShare = 0.01;
  // Deep mode: an exec becomes a target at this launch (a graph launched again), before the trace
  // ranks it; always-on waits for the ranking.
  static constexpr uint64_t kDeepTargetLaunches = 2;
  // Below this share of the graph's kernel time (d0.graph_share's min_share), a family's record
  // takes its own PM samples instead of the graph's counters, when it has enough of them.
  static constexpr double kNodeSamplingShare = 0.5;
  // The counter-data image of one PM-sampled launch holds at most this many samples (~117 KB each
  // at 20 metrics on the H200).
  static constexpr uint32_t kPmMaxSamples = 1024;

  // A cuGraphLaunch's entry: true when this launch is a pass or a sampled launch (its exit then
  // completes it). Counts the exec's launches and bridges it to its records' graph id.
  bool enter(const collectors::LaunchEvent& event);
  void exit(const collectors::LaunchEvent& event);
  // Whether any graph exec is a target (lock-free).
  [[nodiscard]] bool any_target() const { return any_target_.load(std::memory_order_relaxed); }
  // After each ranking, the trace's lock held: which graphs hold the ranked families' time.
  void retarget_locked(const triage::TimelineAccumulator& timeline);
  // The end of the session, after the last trace flush and before the records' rewrite: the
  // families' records take the passes' spans the trace knows by then.
  void finish();


 private:
  struct Target;
  struct Active;
  static std::unique_ptr<Active>& active_slot();
  [[nodiscard]] bool owns_slot(uint64_t correlation_id) const;
  // A pass or sampled launch in flight for `event` on `ctx` (claimed by the caller), holding the
  // CUPTI gate shared.
  [[nodiscard]] std::unique_ptr<Active> new_active(const collectors::LaunchEvent& event, const Target& t,
                                                   const std::shared_ptr<ContextState>& ctx, uint64_t started_mono,
                                                   CostKind cost) const;

  bool begin_pass(const collectors::LaunchEvent& event, Target& target, uint64_t started_mono);
  bool begin_sampling(const collectors::LaunchEvent& event, Target& target, uint64_t started_mono);
  bool begin_node_sampling(const collectors::LaunchEvent& event, Target& target, uint64_t started_mono);
  void complete_node_sampling(Active& active);
  // The phase after the counters, or after PM sampling: PM sampling (when a family needs it), PC
  // sampling, or done (mutex_ held).
  void after_counters_locked(Target& target);
  void after_node_sampling_locked(Target& target) const;
  void complete_pass(Active& active);
  void complete_sampling(Active& active);
  // A stage's counters are in: merged, the workload routed, the next stage planned or none.
  void stage_done(Target& target, const std::vector<collectors::MetricReading>& readings);
  void fail(Target& target, const std::string& why);
  // The records of the graph's families from the target's counters and samples (mutex_ NOT held);
  // with `write` false only the families' last records are updated.
  void write_records(uint32_t exec_id, bool write = true);
  [[nodiscard]] std::vector<std::string> next_stage_locked(Target& target, const std::string& chip) const;

  Parts p_;
  const uint64_t instance_id_;
  const uint64_t start_mono_ns_;  // the agent's start, for the log's "s after the agent started"
  // Fast path: whether any exec is a target (no lock on a graph launch otherwise).
  std::atomic<bool> any_target_{false};
  std::atomic<uint64_t> last_retarget_ns_{0};  // monotonic; retargeting is rate-limited
  mutable std::mutex mutex_;
  std::map<uint32_t, std::unique_ptr<Target>> targets_;  // by exec id
  // Launches seen per exec (bridging needs the first few; bounded like the graph table).
  std::map<uint32_t, uint64_t> launches_;
};

}  // namespace cutriage::agent
