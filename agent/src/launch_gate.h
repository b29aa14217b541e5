// Always-on's launch gate (CUTRIAGE_LAUNCH_GATE): CUPTI's launch and wait callbacks cost every
// launch of the application CPU time on its own thread whether the agent does anything with the
// launch or not (BENCHMARKS.md, "The launch gate"). For most of an always-on run the agent has no
// use for them: the duty cycle has the trace paused, and the budget will admit nothing for tens
// of seconds. The gate turns them off then, and on again before anything needs them: before the
// trace resumes, and a lead before the budget may admit the next profile.
//
// What wants the callbacks is the agent's to say (Demand, gathered on the flush thread); the gate
// keeps the state, switches the platform's callbacks and counts the time they were off. Launches
// made while they are off are not counted (the families' launch counts cover the time they were
// on, as the trace's times cover its windows): the time off is reported (OverheadStats).
//
// Invariants the agent keeps by calling it on the flush thread, under the CUPTI gate held
// exclusively (no profiled launch is between its enter and exit then):
//  - open() before the trace resumes, close only once it is paused: every traced launch was seen
//    at its entry (the quiet tracker, the NVTX paths and the ranking's flushes rely on it);
//  - never closed while a step, a stage or anything else follows launches one by one, nor within
//    the lead of the budget's next admission: no profile begins at a launch whose exit the gate
//    could then swallow.
//  - a step waiting between two passes lets it close (step_profiler.h), but begins its next pass
//    on the application's thread, outside the CUPTI gate. The two meet Dekker-style: the gate
//    marks itself closed (open_, sequentially consistent) and then asks the veto; the step marks
//    itself busy and then reads is_open(). One of them sees the other, so no pass runs with the
//    callbacks off.
//
// Threading: update() from the flush thread only; is_open() and off_ns() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "cutriage/collectors/platform.h"
#include "log.h"

namespace cutriage::agent {

class LaunchGate {
 public:
  // What wants the callbacks now, as the agent sees it.
  struct Demand {
    bool needed_now = false;         // the trace is (or is about to be) on, or work follows launches
    uint64_t next_work_ns = 0;       // monotonic: the earliest a profile may be admitted; UINT64_MAX: none
    std::string why;                 // the reason needed_now is set (debug log)
  };

  // `lead_ns`: how long before the budget's next admission the callbacks come back on.
  LaunchGate(collectors::Platform& platform, Logger& log, bool enabled, uint64_t lead_ns);

  // The flush thread's tick: switches the callbacks as `demand` says. Returns true when it turned
  // them back on (the caller then tells what follows launches that it missed some).
  bool update(uint64_t now_mono_ns, const Demand& demand);
  // Whether the callbacks are on (the gate's view; true while disabled or never switched). False
  // from just before they are switched off until just after they are back on.
  [[nodiscard]] bool is_open() const { return open_.load(std::memory_order_seq_cst); }
  // Asked after the gate marked itself closed, before it switches: true keeps the callbacks on
  // (something began to follow launches since the demand was gathered). Set before the first
  // update(); lock-free, from the flush thread.
  void set_veto(std::function<bool()> veto) { veto_ = std::move(veto); }
  // Time the callbacks were off until `now_mono_ns`, the current stretch included.
  [[nodiscard]] uint64_t off_ns(uint64_t now_mono_ns) const;
  // Times the callbacks were turned off.
  [[nodiscard]] uint64_t closings() const { return closings_.load(std::memory_order_relaxed); }
  // Times they were switched either way: counted after they went off and before they come back
  // on, so a launch delivered after a gap always sees a count its launches before the gap did not
  // (a step between passes rejoins on it, StepProfiler::rejoin_locked).
  [[nodiscard]] uint64_t switches() const { return switches_.load(std::memory_order_seq_cst); }
  [[nodiscard]] bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // From any thread: a launch repeated its thread's previous correlation id after the gate had
  // closed. CUPTI was seen doing so after the callbacks came back on (PyTorch on an H100), and the
  // agent profiles no such launch: the next update() opens the gate for the rest of the run.
  void retire_after_repeated_ids() { retire_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] uint64_t lead_ns() const { return lead_ns_; }

 private:
  bool switch_to(bool on, uint64_t now_mono_ns);

  collectors::Platform& platform_;
  Logger& log_;
  // false: never closes (built disabled, or a switch failed); written by the flush thread only.
  std::atomic<bool> enabled_;
  const uint64_t lead_ns_;
  std::atomic<bool> open_{true};
  std::atomic<uint64_t> closed_at_ns_{0};  // the current stretch off began (valid while closed)
  std::atomic<uint64_t> off_total_ns_{0};  // ended stretches
  std::atomic<uint64_t> closings_{0};
  std::atomic<uint64_t> switches_{0};
  std::atomic<bool> retire_{false};  // retire_after_repeated_ids() was called
  std::function<bool()> veto_;
};

}  // namespace cutriage::agent
