// The kernel trace, folded: every execution, copy and NVTX range CUPTI delivers goes into the
// timeline statistics (families ranked by GPU time, busy and idle time, stretches, overlaps) and,
// within CUTRIAGE_TRACE_MAX_EVENTS, into the file's trace chunks. Profiled launches' executions
// are marked replayed and kept out of the durations. Always-on's duty-cycled trace pauses here,
// and records of kernels running across a pause are cut at it.
//
// Threading: one mutex guards everything here. It comes first in the lock order: the trace folder
// takes the family table's lock (to find or create a family, and in the ranking callback) and the
// output's, never the other way round; callers that hold the family table's lock do not call in.
// The `_locked` members are for callers that hold lock().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/wire/records.h"
#include "cutriage/triage/graphs.h"
#include "family.h"
#include "graph_table.h"
#include "log.h"
#include "nvtx_tracker.h"
#include "pm_nodes.h"
#include "record_output.h"

namespace cutriage::agent {

class TraceFolder {
 public:
  // After each delivered batch, with lock() held: the timeline, for the selection to rank the
  // families by GPU time.
  using OnRanked = std::function<void(const triage::TimelineAccumulator& timeline)>;
  // A notice for the file and the log (the duty cycle's, once).
  using Notify = std::function<void(wire::Severity, const std::string& code, const std::string& message)>;

  // `gate`: held shared by profiled launches, exclusively by whatever pauses or flushes CUPTI.
  TraceFolder(const AgentConfig& config, collectors::Platform& platform, Logger& log, FamilyTable& families,
              NvtxTracker& nvtx, GraphTable& graph_table, RecordOutput& output, std::shared_mutex& gate,
              OnRanked on_ranked, Notify notify);

  // The trace is running from now: its clock and the duty cycle's windows start here.
  void started(uint64_t trace_clock_ns, uint64_t mono_ns);
  [[nodiscard]] uint64_t clock_at_start_ns() const { return clock_at_start_ns_.load(); }

  void on_activity(const collectors::ActivityBatch& batch);
  // A profiled (or sampled) launch: its executions are replays, left out of the durations.
  // `launched`: the kernel it launched (empty for a graph launch, whose kernels are many). A
  // record under that correlation id of another kernel on another stream is the range profiler's
  // own (CUPTI's `WaitNs` beside each launch of a pass without replay, seen on the H100): no
  // family of the application's, so it is left out.
  void mark_replayed(uint64_t correlation_id, std::string_view launched = {}, uint32_t stream_id = 0);
  void mark_replayed(const collectors::LaunchEvent& event) {
    mark_replayed(event.correlation_id, event.mangled_name, static_cast<uint32_t>(event.stream_id));
  }
  // The traced duration of a launch marked replayed, once its record came with timestamps (a
  // step's pass: no replay, so CUPTI times it); 0 otherwise, or once it was forgotten.
  [[nodiscard]] double replayed_duration_ns(uint64_t correlation_id) const;
  // Records left out as the profiler's own kernels (mark_replayed).
  [[nodiscard]] uint64_t profiler_kernels_locked() const { return profiler_kernels_; }
  // CUPTI returns a replayed launch's record without timestamps: the range profiler's window
  // stands in for it, so the timeline does not count the profiler's time as idle.
  void add_replay_window(Family& family, const collectors::LaunchEvent& event, uint64_t begin_ns, uint64_t end_ns);
  // Always-on with CUTRIAGE_TRACE_DUTY below 100%: pauses or resumes the trace at the window's
  // edges (the flush thread only).
  void cycle(uint64_t now_mono_ns);
  // Whether the duty cycle wants the trace on at `now_mono_ns` (always true at 100%); the flush
  // thread only.
  [[nodiscard]] bool wants_on(uint64_t now_mono_ns) const;
  // The end: a pause still open is closed (and written), with the NVTX ranges closed since the
  // last batch. The flush thread must have stopped.
  void close();
  // Time spent paused (ended pauses), trace clock.
  [[nodiscard]] uint64_t paused_ns() const { return paused_ns_.load(std::memory_order_relaxed); }
  // Whether the duty cycle has the trace paused now (always-on): launches leave no record.
  [[nodiscard]] bool paused_now() const { return paused_.load(std::memory_order_relaxed); }

  [[nodiscard]] std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mutex_); }
  [[nodiscard]] const triage::TimelineAccumulator& timeline_locked() const { return timeline_; }
  // Decision 0's and the engine's trace inputs for a family: its unprofiled durations (of the
  // launch's grid when known), its share of the GPU time, whether it ran concurrently.
  void fill_inputs_locked(uint64_t family_id, triage::KernelInput& input) const;
  void fill_inputs(uint64_t family_id, triage::KernelInput& input) const;
  [[nodiscard]] uint64_t dropped_records_locked() const { return dropped_records_; }
  [[nodiscard]] uint64_t kernel_events_locked() const { return kernel_events_; }
  // The family's executions by NVTX path id (for graph kernels, the path open when their node
  // was captured).
  [[nodiscard]] const std::map<uint32_t, uint64_t>* nvtx_launches_locked(uint64_t family_id) const;
  // Each CUDA graph as one workload (its traced kernels), most kernel time first, with the exec
  // it runs as where the graph table has bridged it.
  [[nodiscard]] std::vector<triage::GraphStats> graphs_locked() const;
  [[nodiscard]] const triage::GraphAccumulator& graph_accumulator_locked() const { return graphs_; }
  // A profiled graph launch: its kernels' span (first start to last end) is kept for
  // graph_launch_span, a few launches at a time (the oldest forgotten first). A watched launch
  // whose records show a node twice was not the only launch under its correlation id (CUPTI
  // repeated ids under always-on on the H200, docs/graphs.md); one with a kernel cut by a pause
  // has no trustworthy end: either has no span, nor executions, and graph_launch_unusable says why.
  void watch_graph_launch(uint64_t correlation_id);
  [[nodiscard]] std::optional<double> graph_launch_span(uint64_t correlation_id) const;
  static constexpr size_t kMaxWatchedLaunches = 64;
  // A PM-sampled graph launch: its kernel executions (family, start, end) are kept for
  // graph_launch_executions, a few launches at a time, each up to kMaxNodeExecutions.
  void watch_graph_nodes(uint64_t correlation_id);
  [[nodiscard]] std::vector<NodeExecution> graph_launch_executions(uint64_t correlation_id) const;
  // Why a watched launch's records cannot be used; empty when they can (or it is not watched).
  [[nodiscard]] std::string graph_launch_unusable(uint64_t correlation_id) const;
  static constexpr size_t kMaxNodeWatches = 8;
  static constexpr size_t kMaxNodeExecutions = 4096;
  // Always-on's PM routing window (pm_window.h): from watch_window() to unwatch_window(), every
  // traced execution on `device` that ends after `from_ns` (trace clock) is kept, up to
  // kMaxWindowExecutions, with the latest start seen on the device (whether the trace has caught
  // up with the window's end). Replayed and pause-cut executions are left out.
  struct WindowExecutions {
    std::vector<NodeExecution> executions;
    uint64_t latest_start_ns = 0;
    bool truncated = false;  // more than kMaxWindowExecutions
    // Each family's launch shape, from its first kept execution's record (grid, block,
    // registers, shared and local memory).
    std::map<uint64_t, triage::LaunchConfig> shapes;
  };
  void watch_window(uint32_t device, uint64_t from_ns);
  [[nodiscard]] WindowExecutions window_executions() const;
  void unwatch_window();
  static constexpr size_t kMaxWindowExecutions = 65536;
  // Profiled launches remembered by correlation id (mark_replayed); the oldest go first.
  static constexpr size_t kMaxReplayed = 65536;
  // How long the trace stays on from `now_mono_ns` under the duty cycle: UINT64_MAX when it is
  // never paused, 0 while paused. The flush thread only (the duty cycle's state is its own).
  [[nodiscard]] uint64_t on_left_ns(uint64_t now_mono_ns) const;
  // The launch shape of a family's latest traced graph execution (grid, block, registers, shared
  // and local memory, from its record): graph kernels have no launch callback to read it from.
  [[nodiscard]] std::optional<triage::LaunchConfig> graph_launch_locked(uint64_t family_id) const;
  [[nodiscard]] const GraphTable& graph_table() const { return graph_table_; }

 private:
  struct Chunk {
    wire::TraceChunk chunk;
    std::vector<wire::FamilyDef> families;  // not handed to the output before
  };
  struct ActivityKey {
    const char* name = nullptr;  // CUPTI shares one name pointer among a kernel's records
    uint32_t device = 0;
    triage::Dim3 block;
    bool operator==(const ActivityKey& o) const { return name == o.name && device == o.device && block == o.block; }
  };
  struct ActivityKeyHash {
    size_t operator()(const ActivityKey& k) const noexcept;
  };

  Family* family_of_locked(const collectors::KernelActivity& a);
  void add_execution_locked(Family& family, const collectors::KernelActivity& a, bool replayed, uint32_t nvtx_path,
                            Chunk& chunk);
  void add_copy_locked(const collectors::CopyActivity& c, Chunk& chunk);
  uint32_t nvtx_path_locked(uint64_t correlation_id, bool keep, uint64_t family_id);
  uint32_t graph_nvtx_path_locked(uint64_t node_id, uint64_t family_id);
  void write_locked(Chunk& chunk);
  // Ends the pause that began at paused_at_ns_ at `end_ns` (trace clock): into the timeline, the
  // chunk and the paused-time counter.
  void close_pause_locked(uint64_t end_ns, wire::TraceChunk& chunk);
  void pause(uint64_t now_mono_ns, uint64_t on_ns);
  void resume(uint64_t now_mono_ns, uint64_t on_ns);

  const AgentConfig& config_;
  collectors::Platform& platform_;
  Logger& log_;
  FamilyTable& families_;
  NvtxTracker& nvtx_;
  GraphTable& graph_table_;
  RecordOutput& output_;
  std::shared_mutex& gate_;
  OnRanked on_ranked_;
  Notify notify_;

  mutable std::mutex mutex_;
  triage::TimelineAccumulator timeline_;
  triage::GraphAccumulator graphs_;
  std::unordered_map<ActivityKey, Family*, ActivityKeyHash> activity_families_;
  std::vector<bool> defined_;  // by family id: its definition was handed to the output
  std::map<uint64_t, std::map<uint32_t, uint64_t>> nvtx_launches_;  // family id -> path id -> executions
  // Profiled launches by correlation id: a hash of the kernel launched (0: a graph launch) and
  // its stream. A hash, not the name: the launch path of a profiled launch copies no string.
  struct Replayed {
    size_t launched_hash = 0;
    uint32_t stream_id = 0;
    double traced_ns = 0;  // its kernel's traced duration, once its record came (a kernel launch)
  };
  std::map<uint64_t, Replayed> replayed_;  // at most kMaxReplayed, the newest ids
  uint64_t profiler_kernels_ = 0;
  // A watched graph launch's records so far.
  struct WatchedLaunch {
    uint64_t first_start_ns = 0;  // 0 = no record yet
    uint64_t last_end_ns = 0;
    std::set<uint64_t> nodes;     // the nodes seen (a second record of one: ids repeated)
    std::vector<NodeExecution> executions;  // watch_graph_nodes only, up to kMaxNodeExecutions
    std::string unusable;         // why its records cannot be used; empty when they can
  };
  // Adds a record of the launch to its watch (marks it unusable where the record says so).
  static void note_watched(WatchedLaunch& w, uint64_t node_id, const NodeExecution& e, bool cut_by_pause,
                           bool keep_execution);
  std::map<uint64_t, WatchedLaunch> watched_;     // correlation id -> span (watch_graph_launch)
  std::map<uint64_t, WatchedLaunch> node_watch_;  // correlation id -> executions (watch_graph_nodes)
  bool window_watch_ = false;  // the PM window's watch (watch_window)
  uint32_t window_device_ = 0;
  uint64_t window_from_ns_ = 0;
  WindowExecutions window_;
  std::unordered_map<uint64_t, triage::LaunchConfig> graph_launch_;  // family id -> latest graph execution's shape
  std::unordered_map<uint64_t, uint32_t> correlation_nvtx_;  // correlation id -> NVTX path id
  uint64_t events_ = 0;         // kernels, copies and NVTX ranges written (the cap)
  uint64_t kernel_events_ = 0;  // kernel executions among them
  uint64_t dropped_records_ = 0;
  // The latest pauses' starts (trace clock): a record of a kernel running across one is cut there.
  // Records come within seconds, so a few do.
  std::vector<uint64_t> pause_starts_;
  std::atomic<uint64_t> paused_ns_{0};
  // Lock-free: the file's header reads it while the trace writes a chunk.
  std::atomic<uint64_t> clock_at_start_ns_{0};

  // The duty cycle (the flush thread's alone): windows count from cycle_start_mono_ns_.
  uint64_t cycle_start_mono_ns_ = 0;
  std::atomic<bool> paused_{false};  // written under gate_; read by launch callbacks too
  uint64_t paused_at_ns_ = 0;  // trace clock
  bool duty_noticed_ = false;  // the trace_duty notice is written once
};

}  // namespace cutriage::agent
