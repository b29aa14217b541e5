#include "launch_gate.h"

namespace cutriage::agent {

LaunchGate::LaunchGate(collectors::Platform& platform, Logger& log, bool enabled, uint64_t lead_ns)
    : platform_(platform), log_(log), enabled_(enabled), lead_ns_(lead_ns) {}

bool LaunchGate::update(uint64_t now_mono_ns, const Demand& demand) {
  if (retire_.load(std::memory_order_relaxed) && enabled()) {
    enabled_.store(false, std::memory_order_relaxed);
    log_.log_once(LogLevel::kWarn, "launch-gate-ids",
                  "launches carried their thread's previous correlation id after the launch callbacks had been off " +
                      std::to_string(closings()) +
                      " time(s): they stay on for the rest of the run, so that launches keep ids of their own "
                      "(CUTRIAGE_LAUNCH_GATE)");
  }
  const bool open = open_.load(std::memory_order_relaxed);
  // Wanted on now, or soon enough that the next tick could be late for it.
  const bool wanted = !enabled() || demand.needed_now || demand.next_work_ns <= now_mono_ns + lead_ns_;
  if (wanted == open) return false;
  if (!switch_to(wanted, now_mono_ns)) return false;
  if (log_.enabled(LogLevel::kDebug)) {
    log_.debug(std::string("launch callbacks ") + (wanted ? "on (" + demand.why + ")" : "off") + " at monotonic " +
               std::to_string(now_mono_ns));
  }
  return wanted;
}

bool LaunchGate::switch_to(bool on, uint64_t now_mono_ns) {
  if (!on) {
    // Marked closed first, then the veto: see the header's Dekker note.
    closed_at_ns_.store(now_mono_ns, std::memory_order_relaxed);
    open_.store(false, std::memory_order_seq_cst);
    if (veto_ && veto_()) {
      open_.store(true, std::memory_order_seq_cst);
      return false;
    }
  }
  if (on) switches_.fetch_add(1, std::memory_order_seq_cst);  // before: see switches()
  const collectors::Status s = platform_.set_launch_callbacks(on);
  if (!s.is_ok()) {
    // Half switched is not a state to leave them in: back on, and the gate stays open for good.
    (void)platform_.set_launch_callbacks(true);
    enabled_.store(false, std::memory_order_relaxed);
    if (!open_.load(std::memory_order_relaxed)) {
      off_total_ns_.fetch_add(now_mono_ns - closed_at_ns_.load(std::memory_order_relaxed), std::memory_order_relaxed);
      open_.store(true, std::memory_order_relaxed);
    }
    log_.log_once(LogLevel::kWarn, "launch-gate",
                  "the launch callbacks could not be switched (" + s.message() +
                      "): they stay on for the rest of the run (CUTRIAGE_LAUNCH_GATE)");
    return false;
  }
  if (on) {
    off_total_ns_.fetch_add(now_mono_ns - closed_at_ns_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    open_.store(true, std::memory_order_seq_cst);
  } else {
    closings_.fetch_add(1, std::memory_order_seq_cst);
    switches_.fetch_add(1, std::memory_order_seq_cst);  // after: see switches()
  }
  return true;
}

uint64_t LaunchGate::off_ns(uint64_t now_mono_ns) const {
  uint64_t total = off_total_ns_.load(std::memory_order_relaxed);
  if (!open_.load(std::memory_order_relaxed)) {
    const uint64_t at = closed_at_ns_.load(std::memory_order_relaxed);
    if (now_mono_ns > at) total += now_mono_ns - at;
  }
  return total;
}

}  // namespace cutriage::agent
