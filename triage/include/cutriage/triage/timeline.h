// The application view: what a cheap kernel trace says about a whole run, before any counter is
// read. Kernel families ranked by GPU time with their duration distribution and Amdahl ceilings,
// per-device busy and idle time (the union of busy intervals, never a naive sum), idle gaps,
// stretches bound by the launch rate, copies serialized with compute, and the session-level
// Decision 1 / 2A findings built on those numbers.
//
// Pure C++ on plain values (no CUDA, no I/O): the agent feeds it the Activity API's records as they
// arrive; the tool and the tests feed it the executions stored in a cutriage file.
//
// Memory is bounded: durations go into bounded log histograms, and busy intervals are merged in
// a window that trails the newest end seen on each device; intervals that start more than
// `TimelineOptions::window_ns` before it are folded into running totals. A record that arrives
// later than the window (CUPTI delivers buffers per context, out of order) is still counted in its
// family and in busy time; only its overlap with already folded intervals is approximated (counted
// as busy, never as a gap), and `late_records` says how many there were. Records without a usable
// time (start and end both zero, CUPTI's "not collected", or an end before the start) count as
// launches and nothing else.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cutriage/base/copy_kind.h"
#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::triage {

// One kernel execution from the trace. Times are nanoseconds on one clock (CUPTI's timestamp).
struct KernelSpan {
  uint64_t family = 0;  // caller's family id (see family_key below); 0 is a valid id
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  Dim3 grid;
  bool replayed = false;    // a profiled launch: counted as a launch, left out of duration stats
  bool from_graph = false;  // launched as a node of a CUDA graph
  // Running when a duty-cycled trace paused: end_ns is the pause, the real end is unknown. Counted
  // as a launch and as busy time up to end_ns; left out of duration stats, concurrency and
  // stretches (its length is not the kernel's).
  bool cut_by_pause = false;
};

// A kernel that was running when a duty-cycled trace paused at one of `pause_starts` (trace clock,
// ascending): its end is clipped to that pause and it is marked cut_by_pause. On the H200, CUPTI
// reported graph kernels in flight at a pause with ends about 100 ms late (5 us kernels read as
// 98 ms), so no such end is taken as the kernel's. Returns whether the span was cut; a replayed
// span is left as it is.
bool cut_at_pause(KernelSpan& span, std::span<const uint64_t> pause_starts);

// Copy directions come from the base library (cutriage/base/copy_kind.h), shared with the
// collectors.
using base::CopyKind;
using base::to_string;

struct CopySpan {
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  CopyKind kind = CopyKind::kUnspecified;
  bool pageable = false;  // host side not pinned: the copy cannot overlap and goes through staging
};

// Durations in a log-bucketed histogram: quantiles within ~1% relative error, bounded memory.
// Bucket i holds [1.01^i, 1.01^(i+1)) ns (bucket 0 also everything below 1 ns, the last one
// everything beyond); a quantile is the geometric middle of its bucket (at most 0.5% off), clamped
// to the exact min and max. Only the buckets between the smallest and the largest one used are
// stored, so a family whose durations span a factor of 10 costs ~2 KB, never more than kBuckets
// counters.
class DurationSketch {
 public:
  void add(double ns);
  [[nodiscard]] uint64_t count() const { return count_; }
  // q in [0, 1] (nearest rank); 0 when empty. Exact min and max at the ends.
  [[nodiscard]] double quantile(double q) const;
  [[nodiscard]] double min() const { return min_; }
  [[nodiscard]] double max() const { return max_; }

  static constexpr size_t kBuckets = 3000;  // 1.01^3000 ns is about 2.5 hours

 private:
  std::vector<uint64_t> counts_;  // counts_[i] is bucket first_ + i
  uint32_t first_ = 0;
  uint64_t count_ = 0;
  double min_ = 0;
  double max_ = 0;
};

struct FamilyTimeStats {
  uint64_t family = 0;
  uint32_t device = 0;
  uint64_t launches = 0;           // every execution traced, replayed ones included
  uint64_t replayed_launches = 0;  // profiled: their durations are not in the numbers below
  uint64_t graph_launches = 0;
  uint64_t concurrent_launches = 0;  // executions that overlapped another kernel on the device
  double total_ns = 0;              // sum of unreplayed durations
  DurationSketch durations;         // unreplayed durations
  // Most recent unreplayed durations with their grid, newest last (at most kRecent), for Decision
  // 0's comparison of a profiled launch with unprofiled launches of the same shape.
  static constexpr size_t kRecent = 32;
  std::vector<std::pair<Dim3, double>> recent;

  [[nodiscard]] double mean_ns() const;
  // Durations of recent unreplayed executions with this grid (all recent ones when none match).
  [[nodiscard]] std::vector<double> recent_durations(const std::optional<Dim3>& grid) const;
};

struct IdleGap {
  uint64_t start_ns = 0;  // end of the busy interval before the gap
  uint64_t end_ns = 0;    // start of the next one
};

// A stretch of many short kernels in which the GPU was mostly idle between them: the host could
// not launch fast enough (Decision 2A).
struct LaunchBoundStretch {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t kernels = 0;
  double busy_ns = 0;           // kernel busy time inside the stretch
  double mean_kernel_ns = 0;
};

struct DeviceTimeStats {
  uint32_t device = 0;
  uint64_t first_start_ns = 0;
  uint64_t last_end_ns = 0;
  double busy_ns = 0;            // union of kernel and copy intervals
  double kernel_busy_ns = 0;     // union of kernel intervals
  double copy_busy_ns = 0;       // union of copy intervals
  double copy_only_ns = 0;       // copies running while no kernel ran (serialized with compute)
  double copy_overlapped_ns = 0; // copies running while a kernel ran
  double pageable_copy_ns = 0;   // copy time with pageable host memory
  uint64_t kernels = 0;
  uint64_t copies = 0;
  uint64_t gaps = 0;             // idle gaps longer than TimelineOptions::min_gap_ns
  double gap_ns = 0;             // their total
  std::vector<IdleGap> largest_gaps;  // longest first, at most TimelineOptions::keep_gaps
  std::vector<LaunchBoundStretch> launch_bound;  // longest first, at most keep_stretches
  // Every launch-bound stretch found, kept in `launch_bound` or not.
  uint64_t launch_bound_stretches = 0;
  double launch_bound_span_ns = 0;
  double launch_bound_busy_ns = 0;
  // Idle time next to a profiled (replayed) launch: the profiler's own setup, save and restore
  // around its passes. Part of idle_ns() but not of gaps/gap_ns; the session checks leave it out.
  double profiler_idle_ns = 0;
  // Time between two busy intervals across a pause of the trace (TimelineAccumulator::
  // add_untraced): unknown, so neither idle nor a gap. Not part of idle_ns().
  double untraced_ns = 0;
  uint64_t late_records = 0;

  [[nodiscard]] double span_ns() const {
    return last_end_ns > first_start_ns ? double(last_end_ns - first_start_ns) : 0.0;
  }
  // The span with the untraced time taken out: what busy and idle divide.
  [[nodiscard]] double traced_span_ns() const { return span_ns() > untraced_ns ? span_ns() - untraced_ns : 0.0; }
  [[nodiscard]] double idle_ns() const { return traced_span_ns() > busy_ns ? traced_span_ns() - busy_ns : 0.0; }
};

struct TimelineOptions {
  uint64_t window_ns = 2'000'000'000;  // records starting this far behind the newest end are folded
  uint64_t min_gap_ns = 5'000;         // shorter idle time between intervals is not a "gap"
  size_t keep_gaps = 10;
  size_t keep_stretches = 10;
  // Launch-bound stretches: at least `stretch_min_kernels` consecutive kernels of at most
  // `stretch_max_kernel_ns` each, with the device busy less than `stretch_max_busy` of the stretch.
  uint64_t stretch_min_kernels = 50;
  uint64_t stretch_max_kernel_ns = 20'000;
  double stretch_max_busy = 0.5;
  // Idle time longer than this ends a stretch: launch overhead costs microseconds, a longer wait
  // is host work or synchronization (reported as an idle gap instead).
  uint64_t stretch_max_gap_ns = 1'000'000;
};

struct TimelineSummary {
  std::vector<FamilyTimeStats> families;  // ranked: largest total_ns first
  std::vector<DeviceTimeStats> devices;   // by device id
  double total_kernel_ns = 0;             // sum of unreplayed kernel durations, all families
  uint64_t kernel_executions = 0;
  uint64_t copy_executions = 0;
  uint64_t late_records = 0;
  TimelineOptions options;  // what the accumulator ran with (the session checks cite them)

  // Share of all unreplayed kernel time this family takes, in [0, 1].
  [[nodiscard]] double time_share(const FamilyTimeStats& family) const;
  // 1 / (1 - share): the whole-run speedup bound if the family took no time at all. Infinite
  // (returned as 0) when it is the only family.
  [[nodiscard]] double amdahl_ceiling(const FamilyTimeStats& family) const;
  [[nodiscard]] const FamilyTimeStats* family(uint64_t id) const;
  [[nodiscard]] const DeviceTimeStats* device(uint32_t id) const;
};

// Accumulates spans in any order (within the window, see above). Not thread-safe: the agent
// serializes calls.
class TimelineAccumulator {
 public:
  explicit TimelineAccumulator(TimelineOptions options = {});
  ~TimelineAccumulator();
  TimelineAccumulator(TimelineAccumulator&&) noexcept;
  TimelineAccumulator& operator=(TimelineAccumulator&&) noexcept;

  void add_kernel(const KernelSpan& span);
  void add_copy(const CopySpan& span);
  // [start_ns, end_ns) the trace was paused, on every device (a duty-cycled trace): the time
  // between two busy intervals that overlaps it is untraced, not idle. Call before the records
  // that follow the pause are added; pauses come in time order. The last 4096 are kept (older
  // ones lie far behind the window).
  void add_untraced(uint64_t start_ns, uint64_t end_ns);
  // The current picture, intervals still in the window included. Leaves the accumulator as is.
  [[nodiscard]] TimelineSummary summary() const;
  // Family stats so far (null when the family has no execution yet); cheap, for selection.
  [[nodiscard]] const FamilyTimeStats* family(uint64_t id) const;
  // Families ranked by total_ns (ids), largest first; ties broken by id.
  [[nodiscard]] std::vector<uint64_t> ranking() const;
  [[nodiscard]] double total_kernel_ns() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Session-level Decision 1 and 2A checks on the timeline: idle gaps (D2A), launch-bound stretches
// (D2A), copies serialized with compute and pageable copies (D2A), families that never overlap
// other kernels while the GPU sits idle (D1). Each result carries the numbers it rests on; a check
// without the data it needs (no copies traced, one kernel) says "not evaluated" and why.
std::vector<CheckResult> triage_timeline(const TimelineSummary& timeline);
// The same, with threshold overrides (keys "<rule id>.<threshold>", as for the kernel rules) and
// family names for the findings' text (default: "family <id>").
class Thresholds;
std::vector<CheckResult> triage_timeline(
    const TimelineSummary& timeline, const Thresholds& thresholds,
    const std::function<std::string(uint64_t)>& family_name = {});

// Per-kernel timeline inputs for the engine: KernelInput::time_share and ran_concurrently. Not
// the session's idle or copy shares: those describe the run, not the kernel's own range, and are
// reported by triage_timeline.
void fill_timeline_inputs(const TimelineSummary& timeline, uint64_t family, KernelInput& input);

}  // namespace cutriage::triage
