// The agent inside the profiled process: a coordinator that implements the collectors' observer
// interfaces and hands each callback to the component that owns its concern
// (docs/architecture.md draws the path of a launch through them):
//
//   FamilyTable     kernel families and their profiling state (family.h)
//   TraceFolder     the kernel trace folded into the timeline and the file's chunks; the duty cycle
//   NvtxTracker     NVTX ranges, paths, and which launches ran inside them
//   Selector        which launches are profiled and how, with a SelectionPolicy: DeepPolicy,
//                   AlwaysOnPolicy (budget, single-pass groups, resume) or ApplicationReplayPolicy
//                   (deep mode's selection, single-pass groups, resume: CUTRIAGE_REPLAY=application)
//   LaunchProfiler  one profiled or sampled launch from entry to exit, and its record
//   ContextTable    contexts and the range profilers and PC samplers owned on them
//   DeviceCatalog   device facts and profiler hosts; KernelBuilds, the modules' build notes
//   RecordOutput    the encoder, segments and sink
//   SessionView     the application view, session end, Prometheus snapshot and exit summary
//   PmWindow        always-on's PM routing window over the application's own launches
//   LaunchGate      always-on's switch of the launch callbacks while nothing needs them
//
// Threading: callbacks arrive on the application's threads, several at once. Lock order: the
// trace's, then the family table's, then the output's; the NVTX tracker's, the device catalog's
// and the context table's are leaves; always-on's groups lock comes before the family table's.
// No lock is held while a kernel runs. Nothing throws out of a callback: a failing CUPTI call marks
// that kernel's record FAILED and the agent goes on; a failure that makes profiling impossible (no
// permission, another subscriber) is said once and the application runs on unprofiled.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "always_on.h"
#include "app_replay.h"
#include "config.h"
#include "contexts.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/engine.h"
#include "cutriage/wire/records.h"
#include "deep_capture.h"
#include "earlier_ranking.h"
#include "devices.h"
#include "family.h"
#include "graph_profiler.h"
#include "graph_table.h"
#include "flush_thread.h"
#include "launch_gate.h"
#include "launch_profiler.h"
#include "log.h"
#include "nvtx_tracker.h"
#include "output.h"
#include "pc_summary.h"
#include "plan_cache.h"
#include "pm_window.h"
#include "quiet_tracker.h"
#include "prometheus.h"
#include "record_output.h"
#include "selection.h"
#include "session_view.h"
#include "step_profiler.h"
#include "profiler_warmup.h"
#include "trace_folder.h"

namespace cutriage::agent {

// The CMake project's version (the top CMakeLists.txt defines CUTRIAGE_VERSION for every target),
// the one the tool prints for `cutriage --version`.
inline constexpr const char* kAgentVersion = CUTRIAGE_VERSION;

// What the agent knows about the process it runs in.
struct ProcessInfo {
  uint64_t pid = 0;
  std::string host;
  std::vector<std::string> command_line;
  std::function<uint64_t()> now_unix_ns;  // wall clock; tests pass a fake
  // Monotonic clock for the always-on budget (costs, windows); steady_clock when empty.
  std::function<uint64_t()> monotonic_ns;
  // Its place in a distributed job (job_place.h); unset when no launcher named its rank.
  std::optional<wire::JobPlace> job = std::nullopt;
};

class Agent final : public collectors::LaunchObserver, public collectors::ActivityObserver {
 public:
  // `platform` and `log` must outlive the agent. `sink` receives the file's bytes.
  Agent(AgentConfig config, collectors::Platform& platform, std::unique_ptr<RecordSink> sink, Logger& log,
        ProcessInfo process, triage::Thresholds thresholds = {});
  ~Agent() override;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Subscribes to the callbacks and starts the trace. False when the agent stays off (the reason
  // was logged once).
  bool start();
  // Collects the last trace records, writes the application view and the session end, prints the
  // summary. Idempotent; safe after the contexts are gone.
  void finish();
  // At exit, before the Profiler Host library's destructors (collectors/host_lifetime.h): stops
  // the flush thread (it may be making a metric plan) and closes an open PM window while the host
  // can still evaluate it. finish() runs later and makes no host call. Never throws.
  void before_host_unload();
  // Collects the trace and rewrites the Prometheus file now (cutriage_flush; application threads).
  void flush();

  void on_context_created(const collectors::ContextEvent& event) override;
  void on_context_destroying(const collectors::ContextEvent& event) override;
  void on_module_loaded(const collectors::ModuleEvent& event) override;
  bool on_launch_enter(const collectors::LaunchEvent& event) override;
  void on_launch_exit(const collectors::LaunchEvent& event) override;
  void on_nvtx(const collectors::NvtxEvent& event) override;
  void on_graph(const collectors::GraphEvent& event) override;
  void on_synchronize(bool enter, bool whole_context) override;
  void on_activity(const collectors::ActivityBatch& batch) override;

  [[nodiscard]] wire::AgentState state() const { return state_.load(); }
  [[nodiscard]] std::vector<KernelSummary> kernels() const { return view_.kernels(); }
  [[nodiscard]] wire::SessionEnd session_end() const;
  [[nodiscard]] std::string output_path() const { return output_.describe(); }
  // The application view so far (families, devices, session findings). Empty without the trace.
  [[nodiscard]] wire::TraceSummary trace_summary() const { return view_.trace_summary(); }
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
  [[nodiscard]] std::optional<wire::OverheadStats> overhead() const { return view_.overhead(); }

 private:
  // The flush thread's work every trace_flush_ms: collect the trace, then the periodic duties.
  void flush_tick();
  // Stops what may call the Profiler Host off the exiting thread: the flush thread and an open PM
  // window (ended, and so decoded, now). Shared by the end of the trace and before_host_unload.
  void stop_host_users();
  void finish_trace();
  void write_prometheus();
  void write_notice(wire::Severity severity, const std::string& code, const std::string& message,
                    uint64_t family_id = 0);
  // A launch whose correlation id repeats its thread's previous one: counted, and said once.
  void note_repeated_correlation(const collectors::LaunchEvent& event);
  // CUTRIAGE_RANK_EARLY: a family's second launch while its first has no traced duration yet. In
  // deep mode, with the trace ranking, the agent waits for the launch's context (the first launch
  // then has finished), and when that wait left nothing in flight, forces the trace's flush: the
  // family is ranked before this launch, which it may then profile. A short script whose launches
  // are queued without a wait otherwise ranks its top kernel only after its last launch. Never
  // into a capturing stream, never once the process has used CUDA graphs (a wait during another
  // thread's capture would end that capture), at most kMaxEarlyWaits times. True: flushed.
  bool rank_at_second_launch(const collectors::LaunchEvent& event);
  void set_inactive(wire::AgentState state, const std::string& detail);
  [[nodiscard]] wire::SessionInfo session_header(uint32_t segment_index);
  [[nodiscard]] uint64_t monotonic_now() const { return process_.monotonic_ns(); }
  // The selection ranks families by their traced time (top:K, share:P).
  [[nodiscard]] bool ranks_by_trace() const {
    return config_.select == SelectMode::kTop || config_.select == SelectMode::kShare;
  }

  AgentConfig config_;
  collectors::Platform& platform_;
  Logger& log_;
  ProcessInfo process_;
  triage::TriageOptions triage_options_;
  uint64_t start_time_ns_ = 0;

  std::atomic<wire::AgentState> state_{wire::AgentState::kActive};
  std::atomic<bool> finished_{false};
  // The process that built the agent; in any other (a fork of it) the agent does nothing.
  const pid_t owner_pid_ = ::getpid();
  [[nodiscard]] bool in_forked_child() const { return ::getpid() != owner_pid_; }
  std::atomic<bool> subscribed_{false};
  std::atomic<bool> trace_started_{false};
  std::atomic<bool> paused_{false};
  LaunchCounts counts_;
  mutable std::mutex detail_mutex_;  // leaf
  std::string state_detail_;

  // CUPTI does not say whether activity buffers may be flushed while the range profiler replays a
  // kernel on another thread, so the agent never does: profiled launches hold this shared from
  // begin to end; flushes hold it exclusively (the callback's flush only tries, never waits).
  std::shared_mutex cupti_gate_;
  // Calls into the components below: ~Agent stops it before they go.
  FlushThread flush_thread_;
  std::chrono::steady_clock::time_point last_prometheus_;  // the flush thread's alone

  // The components, in dependency order (each refers only to those above it, except the
  // callbacks into the coordinator: notices, the agent's state, the deep window's end).
  CubinCache cubins_;  // module cubins for source correlation of PC samples
  KernelBuilds builds_;
  DeviceCatalog devices_;
  ContextTable contexts_;
  RecordOutput output_;
  NvtxTracker nvtx_;
  QuietTracker quiet_;  // whether a wait left nothing in flight (the trace's forced flushes)
  std::atomic<bool> rank_pending_{false};  // a family launched with no traced execution yet
  std::atomic<uint64_t> last_quiet_flush_ns_{0};  // monotonic; 0 = none yet
  static constexpr uint64_t kQuietFlushGapNs = 50'000'000;  // 50 ms between forced flushes at waits
  std::atomic<uint32_t> early_waits_{0};   // rank_at_second_launch's waits so far
  std::atomic<bool> early_off_{false};      // no more of them: graphs seen, a wait failed, or the cap
  static constexpr uint32_t kMaxEarlyWaits = 64;
  GraphTable graphs_;
  FamilyTable families_;
  EarlierRanking earlier_ranking_;  // CUTRIAGE_RANKING; loaded by start(), read-only after
  std::unique_ptr<AlwaysOnPolicy> always_on_;  // null in deep mode; never reassigned
  // CUTRIAGE_REPLAY=application (deep mode); null otherwise; never reassigned.
  std::unique_ptr<ApplicationReplayPolicy> app_replay_;
  // Whichever of the two is set: launches carry single-pass groups, families resume.
  [[nodiscard]] SinglePassPolicy* single_pass() const {
    return always_on_ ? static_cast<SinglePassPolicy*>(always_on_.get()) : app_replay_.get();
  }
  DeepPolicy deep_policy_;
  Selector selector_;
  TraceFolder trace_;
  PlanCache plans_;  // metric plans, once per (chip, counter list): launches' and graphs' alike
  LaunchProfiler profiler_;
  GraphProfiler graph_profiler_;
  SessionView view_;

  DeepCaptures deep_;
  // Always-on's PM routing window (CUTRIAGE_PM_WINDOW); null otherwise; never reassigned.
  std::unique_ptr<PmWindow> pm_window_;
  // Always-on's steps (CUTRIAGE_STEP_STAGES); null otherwise; never reassigned.
  std::unique_ptr<StepProfiler> steps_;
  // Always-on's start-up paid ahead (CUTRIAGE_WARMUP); null otherwise; never reassigned.
  std::unique_ptr<ProfilerWarmup> warmup_;
  // Polls the window when the agent may profile (flush thread, or cutriage_flush without one).
  void poll_pm_window(bool may_wait);
  // Always-on's launch gate (CUTRIAGE_LAUNCH_GATE); null otherwise; never reassigned. Switched by
  // the flush thread alone (update_launch_gate).
  std::unique_ptr<LaunchGate> launch_gate_;
  // What wants the launch callbacks at `now` (the CUPTI gate held exclusively).
  [[nodiscard]] LaunchGate::Demand launch_demand(uint64_t now) const;
  void update_launch_gate();
};

}  // namespace cutriage::agent
