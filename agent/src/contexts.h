// CUDA contexts and the profilers the agent owns on them: at most one range profiler and one PC
// sampler per context, only one of the two enabled at a time, and on each device only one
// context's range profiler enabled (CUPTI answers a second one's Start with HARDWARE_BUSY).
//
// Ownership: the table owns the ContextStates; a launch in flight holds its context's shared_ptr,
// so a concurrent destroy cannot free the profiler under it. `busy` is held by one profiled launch
// (or a release) from its entry to its exit, on one thread; a second profiled launch on the
// context meanwhile is left unprofiled rather than waited for, so the agent never blocks one
// application thread on another. Each context's profilers sit behind its own profiler_mutex; the
// table's mutex (a leaf) guards only the map.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cutriage/collectors/platform.h"

namespace cutriage::agent {

struct ContextState {
  collectors::ContextEvent event;
  std::mutex profiler_mutex;  // the profilers below and their enable state
  std::unique_ptr<collectors::RangeProfiler> profiler;
  bool profiler_failed = false;
  std::unique_ptr<collectors::PcSampler> sampler;
  bool sampler_failed = false;
  std::string sampler_error;
  // PM sampling of the context's device across one graph launch (graph_profiler); made on first use.
  std::unique_ptr<collectors::PmSampler> pm_sampler;
  bool pm_failed = false;
  std::string pm_error;
  std::atomic<bool> busy{false};  // a profiled launch (or a release) holds the context
  // The launches one pass of its range profiler may record (ContextTable::set_max_ranges): more
  // than 1 with always-on's steps (step_profiler.h). Set before the profiler is made, never after.
  uint32_t max_ranges = 1;
  // Always-on: the single-pass group the range profiler is configured with (-1: none or another
  // plan). A launch of that group costs little; another group re-enables (costly).
  std::atomic<int> configured_group{-1};
  std::atomic<uint64_t> configured_mono_ns{0};  // when configured_group was configured
  // Always-on: when the last profiled launch on this context ended, while its range profiler is
  // still enabled; 0 once released or never used.
  std::atomic<uint64_t> profiled_end_mono_ns{0};
  // A graph's counter stage in progress over the application's launches of exec `graph_exec`
  // (0 = none): its range profiler holds that stage's configuration between the passes, and
  // another plan would abandon it, so other launches leave the context alone until the stage ends
  // or its exec has not been launched for kGraphHoldNs (graph_pass_mono_ns: the last pass).
  std::atomic<uint32_t> graph_exec{0};
  std::atomic<uint64_t> graph_pass_mono_ns{0};
  static constexpr uint64_t kGraphHoldNs = 2'000'000'000;
  // Whether a graph stage holds the context from a launch that is not of `exec` at `now_ns`.
  [[nodiscard]] bool held_by_graph(uint32_t exec, uint64_t now_ns) const {
    const uint32_t holder = graph_exec.load();
    return holder != 0 && holder != exec && now_ns < graph_pass_mono_ns.load() + kGraphHoldNs;
  }

  // Always-on with CUTRIAGE_STAGE_PASSES: a family's stage in progress over its own launches (the
  // family's id; 0 = none). Like a graph's, its range profiler holds the stage's configuration
  // between the passes, so other launches leave the context alone until the stage ends or the
  // family has not been profiled for kGraphHoldNs (stage_pass_mono_ns: the last pass). Cleared when
  // the profiler is disabled, which abandons the stage.
  std::atomic<uint64_t> stage_family{0};
  std::atomic<uint64_t> stage_pass_mono_ns{0};
  // Whether a family's stage holds the context from a launch of another family (`family` 0: a
  // graph launch, a window or another context's claim) at `now_ns`.
  [[nodiscard]] bool held_by_stage(uint64_t family, uint64_t now_ns) const {
    const uint64_t holder = stage_family.load();
    return holder != 0 && holder != family && now_ns < stage_pass_mono_ns.load() + kGraphHoldNs;
  }

  // Disables the range profiler and forgets its group and stage (profiler_mutex held).
  void release_locked();
  // The range profiler, made on first use (profiler_mutex held). Not ok when there is none:
  // *failed_now set when making it failed just now (the status is CUPTI's: permission denied, ...;
  // the caller says so once), otherwise an earlier failure (kUnavailable).
  collectors::Status ensure_range_profiler_locked(collectors::Platform& platform, bool* failed_now);
  // Starts PC sampling on the context (profiler_mutex held): the range profiler disabled first
  // (CUPTI refuses its Start while PC sampling is enabled, and PC sampling begun beside an enabled,
  // idle range profiler hands over no sample at all: smoke step H on the H200), the sampler made on first use. *failed_now is set
  // when making it failed just now (the caller says so once); a failure is kept in
  // sampler_failed/sampler_error and every later call answers kNotSupported with it.
  collectors::Status begin_sampling_locked(collectors::Platform& platform, const collectors::PcSamplingOptions& options,
                                           bool* failed_now);
  // Starts PM sampling on the context's device (profiler_mutex held): the range profiler disabled
  // first (the H200 probe: the range profiler enabled during PM sampling crashed the process), the
  // sampler made on first use for `chip`; a failure to make it is kept like the PC sampler's.
  collectors::Status begin_pm_sampling_locked(collectors::Platform& platform, const std::string& chip,
                                              const collectors::PmSamplingOptions& options);
};

// A context's claim (ContextState::busy) from ContextTable::claim until the profile in flight takes
// it over (the thread's slot) or the launch gives up: given back on every early return and when an
// exception leaves (an allocation that failed), and never twice, since another thread may have
// claimed the context once it was given back.
class ClaimGuard {
 public:
  explicit ClaimGuard(ContextState* ctx) : ctx_(ctx) {}
  ~ClaimGuard() { release(); }
  ClaimGuard(const ClaimGuard&) = delete;
  ClaimGuard& operator=(const ClaimGuard&) = delete;
  void release() {
    if (ctx_ != nullptr) ctx_->busy.store(false);
    ctx_ = nullptr;
  }
  void hand_over() { ctx_ = nullptr; }  // the profile in flight releases it at its exit

 private:
  ContextState* ctx_;
};

class ContextTable {
 public:
  void created(const collectors::ContextEvent& event);
  // Forgets the context; its profilers go with it unless a launch in flight holds it.
  void destroying(const collectors::ContextEvent& event);
  // The launch's context (one created before the agent subscribed is added now).
  std::shared_ptr<ContextState> for_launch(const collectors::LaunchEvent& event);
  // The launch's context, marked busy, with the device's other contexts' range profilers
  // disabled; null when this context or another one of the device has a profile in flight.
  // A graph stage's hold (ContextState::graph_exec) refuses launches of other execs and kernel
  // launches (`graph_exec` 0) until it lapses at `now_ns`; a family's stage (stage_family) refuses
  // launches of other families (`family` 0: a graph launch) the same way.
  std::shared_ptr<ContextState> claim(const collectors::LaunchEvent& event, uint32_t graph_exec = 0,
                                      uint64_t now_ns = 0, uint64_t family = 0);
  // Always-on's PM window (pm_window.h), from the flush thread: a context of `device`, marked busy,
  // while no context of the device has a range profiler still enabled after a profiled launch
  // (released when idle: CUTRIAGE_RELEASE_MS), a graph stage holding it, or a launch in flight
  // profiled or sampled; null otherwise (the window waits for the next tick). The caller clears
  // `busy` when the window ends.
  std::shared_ptr<ContextState> claim_for_window(uint32_t device, uint64_t now_ns);
  // Contexts whose range profiler has been idle `idle_ns` since their last profiled launch.
  std::vector<std::shared_ptr<ContextState>> idle_since(uint64_t now_ns, uint64_t idle_ns) const;
  // Whether a context's range profiler is still to be released (a profiled launch ended on it and
  // no release since): idle_since leaves such a context alone while a graph or a stage holds it.
  [[nodiscard]] bool release_pending() const;
  // Whether a context is claimed (busy) or held by a graph's or a family's stage between its
  // passes at `now_ns`: its collection goes on at the application's next launches (launch_gate.h).
  // A hold by `quiet_stage_family` is a step waiting between passes, which rejoins the launches
  // later (StepProfiler::follows_now): not counted.
  [[nodiscard]] bool follows_launches(uint64_t now_ns, uint64_t quiet_stage_family = 0) const;
  [[nodiscard]] uint64_t seen() const;  // contexts created or first launched on
  // The launches a pass of each context's range profiler may record (ContextState::max_ranges),
  // for contexts made from now on; set once, before the first context (CUTRIAGE_STEP_STAGES).
  void set_max_ranges(uint32_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    max_ranges_ = n;
  }

 private:
  bool claim_device(const std::shared_ptr<ContextState>& ctx, uint64_t now_ns);

  mutable std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<ContextState>> contexts_;
  uint64_t seen_ = 0;
  uint32_t max_ranges_ = 1;
};

}  // namespace cutriage::agent
