// The agent inside the profiled process: sees every launch through the collector callbacks,
// selects launches to profile, wraps them in the range profiler, triages each kernel when its data
// is complete, appends the records, and prints the summary at exit.
//
// Trace first: with the trace on, every kernel execution arrives through the Activity API (on
// CUPTI's or the flush thread, never the application's), is folded into the timeline statistics
// and appended to the file's timeline; after each batch the families are ranked by GPU time and
// the selection policy marks the few worth profiling. A launch of an unmarked family costs the
// application thread a cache lookup and a few relaxed atomics (on_launch_enter's fast path).
//
// Threading: callbacks arrive on the application's threads, several at once. Lock order:
// trace_mutex_ -> mutex_ -> output_mutex_, and groups_mutex_ -> mutex_; nvtx_mutex_ is a leaf.
// Shared state sits behind `mutex_`; it is never held while a kernel runs. A profiled launch holds its context's
// `busy` flag from launch entry to launch exit (same thread); a second selected launch on that
// context meanwhile is left unprofiled rather than waited for, so the agent never blocks one
// application thread on another.
//
// Errors: nothing throws out of a callback. A failing CUPTI call marks that kernel's record
// FAILED and the agent goes on; a failure that makes profiling impossible (no permission, another
// subscriber) is said once and the application runs on unprofiled.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "budget.h"
#include "config.h"
#include "control.h"
#include "groups.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/wire/prior_run.h"
#include "cutriage/wire/records.h"
#include "cutriage/wire/writer.h"
#include "log.h"
#include "output.h"
#include "pc_summary.h"
#include "prometheus.h"

namespace cutriage::agent {

inline constexpr const char* kAgentVersion = "0.1.0";

// What the agent knows about the process it runs in.
struct ProcessInfo {
  uint64_t pid = 0;
  std::string host;
  std::vector<std::string> command_line;
  std::function<uint64_t()> now_unix_ns;  // wall clock; tests pass a fake
  // Monotonic clock for the always-on budget (costs, windows); steady_clock when empty.
  std::function<uint64_t()> monotonic_ns;
};

// One kernel as the summary shows it.
struct KernelSummary {
  std::string function_name;
  std::string mangled_name;
  uint32_t device = 0;
  wire::KernelLaunchStats stats;
  std::optional<triage::Diagnosis> diagnosis;  // latest, over all combined launches
  wire::ProfileStatus last_status = wire::ProfileStatus::kUnspecified;
  std::string last_status_detail;
  std::vector<std::string> uncollected;  // counters the route still wanted when profiling stopped
};

class Agent final : public collectors::LaunchObserver, public collectors::ActivityObserver {
 public:
  // `platform` and `log` must outlive the agent. `sink` receives the file's bytes.
  Agent(AgentConfig config, collectors::Platform& platform, std::unique_ptr<RecordSink> sink,
        Logger& log, ProcessInfo process, triage::Thresholds thresholds = {});
  ~Agent() override;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Subscribes to the callbacks and starts the trace. False when the agent stays off (the reason
  // was logged once).
  bool start();
  // Collects the last trace records, writes the application view and the session end, prints the
  // summary. Idempotent; safe after the contexts are gone.
  void finish();
  // Collects the trace and rewrites the Prometheus file now (cutriage_flush; application threads).
  void flush();

  void on_context_created(const collectors::ContextEvent& event) override;
  void on_context_destroying(const collectors::ContextEvent& event) override;
  void on_module_loaded(const collectors::ModuleEvent& event) override;
  bool on_launch_enter(const collectors::LaunchEvent& event) override;
  void on_launch_exit(const collectors::LaunchEvent& event) override;
  void on_nvtx(const collectors::NvtxEvent& event) override;
  void on_activity(const collectors::ActivityBatch& batch) override;

  [[nodiscard]] wire::AgentState state() const { return state_.load(); }
  [[nodiscard]] std::vector<KernelSummary> kernels() const;
  [[nodiscard]] wire::SessionEnd session_end() const;
  [[nodiscard]] std::string output_path() const { return sink_ ? sink_->describe() : ""; }
  // The application view so far (families, devices, session findings). Empty without the trace.
  [[nodiscard]] wire::TraceSummary trace_summary() const;
  // What the Prometheus export shows now (families ranked by traced GPU time, their verdicts).
  [[nodiscard]] PromSnapshot prometheus_snapshot() const;

  // Opens a deep-capture window: for `seconds` (0: CUTRIAGE_DEEP_SECONDS), launches of the
  // families `target` names (empty: CUTRIAGE_DEEP_TARGET) are profiled with replay, every counter
  // in one launch, then PC-sampled, outside the budget. Returns the request id (the
  // ControlRequest records in the output carry it), or 0 with `error` set when the request is
  // refused (agent not running, a window already open, a bad target); a refused request is
  // written too. Never call it from a CUDA callback.
  uint64_t request_deep_capture(wire::ControlSource source, const std::string& target, uint32_t seconds,
                                std::string* error);
  // Pauses (true) or resumes profiling and sampling; the trace keeps running.
  void set_paused(bool paused) { paused_.store(paused); }
  [[nodiscard]] bool paused() const { return paused_.load(); }
  // The always-on budget so far; nullopt in deep mode.
  [[nodiscard]] std::optional<wire::OverheadStats> overhead() const;

 private:
  struct ContextState;
  struct KernelState;
  struct ActiveProfile;
  struct NameInfo;
  struct NvtxThread;
  struct CorrelationBuffer;
  struct ActivityKey;
  struct ActivityKeyHash {
    size_t operator()(const ActivityKey& k) const noexcept;
  };

  // The profiled launch in flight on the calling thread (entry to exit); null when none.
  static std::unique_ptr<ActiveProfile>& active_slot();
  void launch_enter(const collectors::LaunchEvent& event, KernelState& kernel, uint64_t launch_index);
  void launch_exit(const collectors::LaunchEvent& event);
  // The family of a launch: a thread-local cache in front of kernel_for_locked.
  KernelState* kernel_for_launch(const collectors::LaunchEvent& event);
  // Finds or creates the family (mutex_ held).
  KernelState* kernel_for_locked(std::string_view mangled, uint32_t device, const triage::Dim3& block);
  // What select() decided for one launch.
  struct Selection {
    enum class Kind : uint8_t {
      kSkip,        // runs untouched
      kNoReplay,    // cooperative or communication kernel: record why, once
      kCounters,    // the range profiler, with `metrics`
      kPcSampling,  // PC sampling (the family's counters are done)
    };
    Kind kind = Kind::kSkip;
    std::vector<std::string> metrics;
    int group = -1;       // always-on: index of the single-pass group (metrics unused)
    uint64_t deep = 0;    // id of the deep-capture request this launch serves; 0 = none
    CostKind cost = CostKind::kSameGroup;  // always-on: what the budget reserved for it
  };
  // Decides under mutex_ whether this launch is profiled and how. `groups`, `context_group` and
  // `context_group_since_ns` only in always-on mode (the chip's single-pass groups, the group the
  // context has configured and since when).
  Selection select(const collectors::LaunchEvent& event, uint64_t launch_index, const std::string& chip,
                   KernelState& kernel,
                   const MetricGroups* groups, int context_group, uint64_t context_group_since_ns);
  // Always-on (mutex_ held): per group, what the other candidate families on the kernel's device
  // that are still launching (within kRecentLaunchNs) want from it (the weights: with `kernel`).
  struct GroupDemand {
    std::vector<size_t> counters;  // counters wanted, summed over the families
    // Families without a verdict yet (not profiled, or inconclusive) that want routing counters
    // of the group.
    std::vector<size_t> unrouted;
    // The same two by GPU time: the traced shares of the families wanting something of the group
    // (`weight`), and of those among them that it would route (`unrouted_weight`). Unlike the
    // counts, these include `kernel` itself, summed in one fixed order, so that every family's
    // launch ranks the groups alike (a tie must not make two families each leave the switch to
    // the other).
    std::vector<double> weight;
    std::vector<double> unrouted_weight;
  };
  GroupDemand group_demand_locked(const KernelState& kernel, const MetricGroups& groups,
                                              uint64_t now_ns);
  // Always-on (CUTRIAGE_RESUME): reads the earlier output into resume_ (start(), before anything
  // is written: the output may be the same file).
  void load_resume();
  // Always-on (mutex_ held): on a family's first selection, takes what the earlier process measured
  // for it, when the chip and the launch's shape match. Returns the record saying so. A launch of
  // another shape sets *wait_for_shape instead, for up to kResumeShapeTries launches; then the
  // family starts afresh.
  std::optional<wire::KernelRecord> resume_family_locked(KernelState& kernel, const collectors::LaunchEvent& event,
                                                         uint64_t launch_index, const std::string& chip,
                                                         bool* wait_for_shape);
  static constexpr uint32_t kResumeShapeTries = 16;
  // Always-on: how long a configured group is left to the other families that still want it
  // before a family that wants none of it may switch the context away.
  static constexpr uint64_t kHoldGroupNs = 5'000'000'000;
  // Always-on: a family counts as still launching this long after its latest launch. Switches are
  // chosen for those only: a family that stopped launching must not hold the others back.
  static constexpr uint64_t kRecentLaunchNs = 30'000'000'000;
  // Always-on: how long a family that declined a switch (another family's group ranked first)
  // waits before its launches come to the selection again.
  static constexpr uint64_t kRoutingFirstWaitNs = 1'000'000'000;
  // Always-on: the chip's single-pass groups, planned on first use. With `may_plan` false (an
  // application thread while the flush thread runs) a chip not planned yet is left to the flush
  // thread and null returned; planning on an application thread is charged to the budget.
  std::shared_ptr<const MetricGroups> groups_for(const std::string& chip, bool may_plan);
  void plan_pending_groups();  // flush thread
  [[nodiscard]] bool on_flush_thread() const;
  // Whether a deep-capture window is open and targets this family (mutex_ held).
  bool deep_targets_locked(const KernelState& kernel) const;
  // Closes the deep-capture window when it expired or got everything (mutex_ NOT held).
  void check_deep_window();
  void write_control(const wire::ControlRequest& request);
  // The flush thread's control duties: the control file and the signal.
  void poll_control();
  uint64_t monotonic_now() const;
  // Always-on: says once, in the output and the log, when a family's counters are complete.
  void note_complete(KernelState& kernel);
  // Marks families whose always-on PC-sampling interval has passed as candidates again.
  void refresh_candidates();
  // Always-on (flush thread): disables the range profilers of contexts whose last profiled launch
  // ended release_ms ago. release_profiler: one context, charged to the budget.
  void release_idle_profilers();
  void release_profiler(ContextState& ctx);
  // Disables the context's range profiler and forgets its group (profiler_mutex held).
  void release_locked(ContextState& ctx);
  // Charges an admitted launch's measured cost when it ends (mutex_ NOT held).
  void charge(const ActiveProfile& active);
  // Charges what elapsed since `started_mono_ns` to the budget (mutex_ NOT held).
  void charge_since(CostKind kind, uint64_t started_mono_ns);
  // Whether the family's next launch goes to select() (mutex_ held).
  void update_candidate_locked(KernelState& kernel);
  bool counters_left_locked(const KernelState& kernel) const;      // mutex_ held
  bool pc_sampling_left_locked(const KernelState& kernel) const;   // mutex_ held
  // Disables the range profilers of the device's other contexts; false when one of them has a
  // launch in flight (this launch then runs untouched).
  bool claim_device(const std::shared_ptr<ContextState>& ctx);
  // The launch's context, marked busy and with its device claimed; null when either is taken.
  std::shared_ptr<ContextState> claim_context(const collectors::LaunchEvent& event);
  std::unique_ptr<ActiveProfile> new_active(const std::shared_ptr<ContextState>& ctx, KernelState& kernel,
                                            const collectors::LaunchEvent& event, uint64_t launch_index);
  void pc_sampling_enter(const collectors::LaunchEvent& event, KernelState& kernel, uint64_t launch_index,
                         uint64_t deep);
  void complete_pc_sampling(ActiveProfile& active);
  // Writes the family's profiled record again with the samples (or why there are none).
  void finish_pc_sampling(KernelState& kernel, PcSummary summary);
  // Whether the NVTX ranges open on the calling thread pass CUTRIAGE_NVTX_INCLUDE/EXCLUDE.
  bool nvtx_allows();
  NvtxThread& nvtx_thread();
  void flush_loop();
  // Always-on with CUTRIAGE_TRACE_DUTY below 100%: pauses or resumes the kernel trace at the
  // window's edges (flush thread only).
  void cycle_trace();
  // Ends the pause that began at trace_paused_at_ns_ at `end_ns` (trace clock): into the timeline,
  // `chunk` and the paused-time counter. Under trace_mutex_.
  void close_pause_locked(uint64_t end_ns, wire::TraceChunk& chunk);
  // Rewrites CUTRIAGE_PROMETHEUS_FILE (flush thread and finish(); never an application thread).
  void write_prometheus();
  void stop_flush_thread();
  // Ranks the families after a trace batch and marks the ones to profile (trace_mutex_ held).
  void update_selection_locked();
  void write_chunk_locked(wire::TraceChunk& chunk);  // trace_mutex_ held
  void drain_correlations_locked();                   // trace_mutex_ held
  void trace_replay(const ActiveProfile& active);     // the replay window into the timeline
  // One kernel execution into the statistics and, within the cap, the chunk (trace_mutex_ held).
  void add_execution_locked(KernelState& kernel, const collectors::KernelActivity& a, bool replayed,
                            uint32_t nvtx_path, wire::TraceChunk& chunk);
  void fill_trace_inputs_locked(const KernelState& kernel, triage::KernelInput& input);  // trace_mutex_
  wire::TraceSummary trace_summary_locked(const triage::TimelineSummary& timeline) const;  // trace_mutex_
  void finish_trace();
  std::vector<std::string> summary_lines(const wire::TraceSummary& trace) const;
  std::shared_ptr<ContextState> context_for(const collectors::LaunchEvent& event);
  std::shared_ptr<collectors::ProfilerHost> host_for(const std::string& chip, std::string* error);
  std::optional<collectors::DeviceInfo> device_info(uint32_t device);
  void complete_profile(ActiveProfile& active, const collectors::LaunchEvent& event);
  void record_failure(ActiveProfile& active, const std::string& what);
  // launch_index 0: the latest launch (when the caller does not know its own).
  void record_unprofiled(const collectors::LaunchEvent& event, KernelState& kernel,
                         wire::ProfileStatus status, const std::string& detail, uint64_t launch_index = 0);
  void write_kernel(const wire::KernelRecord& record);
  void write_notice(wire::Severity severity, const std::string& code, const std::string& message,
                    uint64_t family_id = 0);
  // Encodes (after any segment rotation, so the bytes use the new segment's interning) and
  // appends one record (output_mutex_ held).
  void write_bytes_locked(const std::function<std::string()>& encode);
  // Starts the next segment when the sink says the current one is full (output_mutex_ held):
  // header, interned strings and every family defined so far again, so each segment is a file
  // of its own. Called before any record is encoded.
  void rotate_if_due_locked();
  void emit_family_locked(const KernelState& kernel);  // output_mutex_ held
  void ensure_header_locked();                         // output_mutex_ held
  void set_inactive(wire::AgentState state, const std::string& detail);
  void fill_kernel_input(const collectors::LaunchEvent& event, const KernelState& kernel,
                         uint64_t launch_index, triage::KernelInput& input);
  void fill_kernel_input_locked(const collectors::LaunchEvent& event, const KernelState& kernel,
                                uint64_t launch_index, triage::KernelInput& input) const;  // mutex_ held
  // From the family's diagnosis: the counters its route still wants; complete when none (mutex_).
  void update_completeness_locked(KernelState& kernel);
  // Adds a counter to those asked for and not collected, once (mutex_ held).
  void note_rejected_locked(KernelState& kernel, const std::string& name);
  void write_family_locked(KernelState& kernel);  // output_mutex_ held
  void fill_build_locked(const KernelState& kernel, triage::KernelInput& input) const;  // mutex_ held

  AgentConfig config_;
  collectors::Platform& platform_;
  std::unique_ptr<RecordSink> sink_;
  Logger& log_;
  ProcessInfo process_;
  triage::TriageOptions triage_options_;
  uint64_t start_time_ns_ = 0;

  const uint64_t instance_id_;  // tells thread-local caches of different agents apart
  CubinCache cubins_;           // module cubins for source correlation of PC samples
  std::atomic<wire::AgentState> state_{wire::AgentState::kActive};
  std::atomic<bool> finished_{false};
  std::atomic<bool> subscribed_{false};
  std::atomic<bool> trace_started_{false};

  // Counted on the fast path, without mutex_.
  std::atomic<uint64_t> launch_counter_{0};
  std::atomic<uint64_t> kernel_launches_{0};
  std::atomic<uint64_t> graph_launches_{0};
  std::atomic<uint64_t> not_replayable_launches_{0};
  std::atomic<uint64_t> matching_launches_{0};
  std::atomic<uint64_t> sampled_launches_{0};  // PC-sampled launches that gave samples
  std::atomic<uint64_t> generation_{1};  // bumped when a family is created; invalidates caches
  std::atomic<bool> paused_{false};
  const bool always_on_;
  // Always-on only (null in deep mode); never reassigned, so ready() is read without mutex_.
  std::unique_ptr<Budget> budget_;
  // CUTRIAGE_RESUME: what the earlier process measured, per family (mangled name, chip, block);
  // written by start() before any callback, then read and erased under mutex_.
  std::map<std::tuple<std::string, std::string, uint32_t, uint32_t, uint32_t>, wire::PriorFamily> resume_;
  std::string resume_source_;  // the file(s) it came from, for the records and the log
  std::atomic<bool> deep_open_{false};   // a deep-capture window is open (fast path)

  // The flush thread: delivers trace records every trace_flush_ms (launches of untraced families
  // also flush, see on_launch_enter).
  std::thread flush_thread_;
  std::thread::id flush_thread_id_;         // written before flush_running_ is set
  std::atomic<bool> flush_running_{false};
  std::mutex flush_mutex_;
  std::condition_variable flush_cv_;
  bool flush_stop_ = false;

  // CUPTI does not say whether activity buffers may be flushed while the range profiler replays a
  // kernel on another thread, so the agent never does: profiled launches hold this shared from
  // begin to end; flushes hold it exclusively (the callback's flush only tries, never waits).
  std::shared_mutex cupti_gate_;
  // Always-on: until then (monotonic ns) a configured profiler may be taken on credit, so the fast
  // path lets candidate launches through even when the budget is not ready.
  std::atomic<uint64_t> credit_until_ns_{0};
  // Always-on without a flush thread: when the idle range profiler is due for release (monotonic
  // ns; 0 = none due). Set as a profiled launch ends; taken by the next launch after it.
  std::atomic<uint64_t> release_due_ns_{0};

  mutable std::mutex trace_mutex_;  // the timeline and everything the activity side owns
  triage::TimelineAccumulator timeline_;
  std::unordered_map<ActivityKey, KernelState*, ActivityKeyHash> activity_families_;
  std::set<uint64_t> replayed_correlations_;  // profiled launches: their executions are perturbed
  std::unordered_map<uint64_t, uint32_t> correlation_nvtx_;  // correlation id -> NVTX path id
  uint64_t timeline_events_ = 0;         // kernels, copies and NVTX ranges written (the cap)
  uint64_t timeline_kernel_events_ = 0;  // kernel executions among them
  uint64_t dropped_records_ = 0;
  uint64_t trace_clock_at_start_ns_ = 0;
  // The duty-cycled trace (cycle_trace; the flush thread alone touches these but the atomic):
  // windows count from trace_cycle_start_mono_ns_ on the agent's monotonic clock.
  uint64_t trace_cycle_start_mono_ns_ = 0;
  bool trace_paused_ = false;
  uint64_t trace_paused_at_ns_ = 0;  // trace clock
  // The latest pauses' starts (trace clock), under trace_mutex_: a record of a kernel running
  // across one is cut there (add_execution_locked). Records come within seconds, so a few do.
  std::vector<uint64_t> pause_starts_;
  bool trace_duty_noticed_ = false;  // the trace_duty notice is written once
  std::atomic<uint64_t> trace_paused_ns_{0};  // ended pauses (close_pause_locked), trace clock

  mutable std::mutex nvtx_mutex_;  // leaf lock
  std::vector<std::string> nvtx_paths_{""};  // path id -> "outer/inner"; 0 = none
  std::unordered_map<std::string, uint32_t> nvtx_path_ids_;
  std::vector<std::shared_ptr<CorrelationBuffer>> correlation_buffers_;
  struct OpenRange {
    std::string name;
    std::string domain;
    uint64_t start_ns = 0;
    uint32_t thread_id = 0;
  };
  std::unordered_map<uint64_t, OpenRange> open_ranges_;  // start/end ranges by id
  std::vector<wire::NvtxRange> pending_nvtx_;            // closed, not yet written

  mutable std::mutex mutex_;  // everything below until output_mutex_
  std::string state_detail_;
  std::map<uint64_t, std::shared_ptr<ContextState>> contexts_;
  std::map<uint32_t, collectors::DeviceInfo> devices_;
  std::set<uint32_t> devices_failed_;
  std::map<std::string, std::shared_ptr<collectors::ProfilerHost>> hosts_;  // by chip
  std::set<std::string> hosts_failed_;
  std::map<std::string, std::shared_ptr<NameInfo>, std::less<>> names_;  // by mangled name
  // Families by (mangled name, device, block shape); never erased while the agent lives, so
  // KernelState pointers stay valid for the caches.
  std::map<std::tuple<std::string, uint32_t, uint32_t, uint32_t, uint32_t>, std::unique_ptr<KernelState>,
           std::less<>>
      kernels_;
  std::vector<KernelState*> families_;  // by family id - 1
  uint64_t profiles_started_ = 0;
  wire::SessionEnd totals_;
  uint64_t modules_loaded_ = 0;
  static constexpr uint8_t kBuildLineInfo = 1;
  static constexpr uint8_t kBuildDebug = 2;
  std::unordered_map<size_t, uint8_t> kernel_builds_;  // hash of the mangled name -> kBuild* bits
  uint64_t contexts_seen_ = 0;
  // Deep capture: one window at a time.
  struct DeepWindow {
    wire::ControlRequest request;
    uint32_t top = 0;            // "top:N"; 0 when `filter` names the families
    KernelFilter filter;
    uint64_t end_mono_ns = 0;
    std::set<uint64_t> captured;  // family ids profiled in the window
    std::set<uint64_t> sampled;   // family ids PC-sampled in the window
  };
  std::optional<DeepWindow> deep_;
  uint64_t next_request_id_ = 1;
  std::set<std::string> control_errors_;  // refusal reasons written and said once each

  std::mutex groups_mutex_;  // before mutex_ (planning calls host_for and charges the budget)
  std::map<std::string, std::shared_ptr<const MetricGroups>> groups_;  // by chip
  std::set<std::string> groups_failed_;
  std::set<std::string> groups_pending_;  // chips the flush thread plans next

  mutable std::mutex output_mutex_;  // the encoder (interning) and the sink
  wire::RecordEncoder encoder_;
  bool header_written_ = false;
  std::vector<KernelState*> written_families_;  // families defined in the file (or segment)
  uint32_t segment_index_ = 0;                   // 1, 2, ... with segments; 0 = one file
};

}  // namespace cutriage::agent
