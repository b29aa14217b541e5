// Session-level Decision 1 / 2A checks on the kernel and copy trace (timeline.h), and the
// per-kernel timeline inputs of the engine.
//
// The guide reads these symptoms from Nsight Compute's PM-sampling rows of one profiled range;
// cutriage reads them from the whole run's trace instead, one GPU at a time: the "range" is the
// device's traced span (first record's start to last record's end) and "idle" is the part of it in
// which no kernel and no copy ran (the union of busy intervals, never a sum of durations: method,
// chapter 4). Idle time next to launches the agent profiled is the profiler's, not the
// application's, and is left out of both the idle time and the span.
//
// Thresholds, each recorded on the check as "<rule id>.<name>" and overridable like the kernel
// rules' (defaults in session_checks(), below; the stretch parameters are TimelineOptions: they
// shape the accumulation itself):
//   max_idle_pct 10            guide 3.2.4: idle or wait above ~10% of the profiled range
//   min_stretch_idle_pct 1     method ch. 1: under ~1% device idle, many small launches are not
//                              launch-starved
//   min_overlap_pct 10,        cutriage's reading of "fully serialized" and the floor below which
//   min_copy_time_pct 5        copies do not matter, as in d2a.serialized_copy_compute
//   min_pageable_time_pct 5    the same floor, for pageable copies
//   min_family_share_pct 5     cutriage: a family whose removal alone bounds the run at >= 1.05x
//                              (Amdahl, method ch. 1 and 5)
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cutriage/triage/rule.h"
#include "cutriage/triage/timeline.h"
#include "rule_helpers.h"

namespace cutriage::triage {

namespace {

using detail::count;
using detail::fmt;
using detail::pct;

// "12.3 ms", "4.56 us", "789 ns", "1.23 s".
std::string duration(double ns) {
  if (!std::isfinite(ns)) return fmt(ns);
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt(ns / 1e9, 2) + " s";
  if (a >= 1e6) return fmt(ns / 1e6, 1) + " ms";
  if (a >= 1e3) return fmt(ns / 1e3, 1) + " us";
  return fmt(ns, 0) + " ns";
}

// Offset of `t` from the device's first record, for locating an interval on a trace viewer.
std::string at(uint64_t t, const DeviceTimeStats& d) {
  return "+" +
         fmt(t >= d.first_start_ns ? static_cast<double>(t - d.first_start_ns) / 1e9 : 0.0, 3) +
         " s";
}

// A device's numbers with the profiler's idle time and the trace's pauses taken out.
struct DeviceView {
  const DeviceTimeStats* d = nullptr;
  double span = 0;
  double idle = 0;
  double idle_pct = 0;
};

DeviceView view_of(const DeviceTimeStats& d) {
  DeviceView v;
  v.d = &d;
  const double profiler = std::min(d.profiler_idle_ns, d.idle_ns());
  v.span = std::max(0.0, d.traced_span_ns() - profiler);
  v.idle = std::max(0.0, d.idle_ns() - profiler);
  v.idle_pct = v.span > 0 ? 100.0 * v.idle / v.span : 0.0;
  return v;
}

// One check being built: the thresholds and evidence it reads are recorded as it reads them.
class Check {
 public:
  // `id` names an entry of session_checks(), which gives the title, the decision and the
  // thresholds' defaults (the unit tests run every check, so a missing entry is caught there).
  Check(std::string_view id, const Thresholds* overrides) : def_(find_session_check(id)), overrides_(overrides) {
    r_.rule_id = std::string(id);
    if (def_ != nullptr) {
      r_.decision = def_->decision;
      r_.title = std::string(def_->title);
    }
  }

  // The table's default (NaN for a name it lacks, so that every comparison is false), overridden.
  double threshold(std::string_view name) {
    double value = std::nan("");
    if (def_ != nullptr) {
      for (const ThresholdDef& t : def_->thresholds) {
        if (t.name == name) value = t.value;
      }
    }
    std::string key = r_.rule_id + "." + std::string(name);
    if (overrides_ != nullptr) {
      if (auto o = overrides_->override_for(key)) value = *o;
    }
    r_.thresholds.push_back(ThresholdUse{std::move(key), value});
    return value;
  }
  // A parameter the accumulator ran with: cited, not overridable here.
  void cite(std::string_view name, double value) {
    r_.thresholds.push_back(ThresholdUse{r_.rule_id + "." + std::string(name), value});
  }
  void note(std::string name, double value, std::string unit = {}) {
    r_.evidence.push_back(Evidence{std::move(name), value, std::move(unit), true});
  }
  void note_device(const DeviceView& v) {
    note("cutriage__device", v.d->device);
    note("cutriage__device_span_ns", v.span, "nsecond");
    note("cutriage__device_busy_ns", v.d->busy_ns, "nsecond");
    note("cutriage__device_idle_ns", v.idle, "nsecond");
    note("cutriage__device_idle_pct", v.idle_pct, "%");
  }

  CheckResult not_evaluated(std::string why) {
    r_.outcome = Outcome::kNotEvaluated;
    r_.reason = std::move(why);
    return std::move(r_);
  }
  CheckResult not_fired(std::string reading) {
    r_.outcome = Outcome::kNotFired;
    r_.reason = std::move(reading);
    return std::move(r_);
  }
  CheckResult fired(Limiter limiter, std::string reading, std::string next_action, double severity,
                    std::optional<double> speedup = std::nullopt, std::string basis = {},
                    std::string detail = {}) {
    r_.outcome = Outcome::kFired;
    r_.reason = reading;
    Finding f;
    f.limiter = limiter;
    f.summary = std::move(reading);
    f.detail = std::move(detail);
    f.next_action = std::move(next_action);
    if (speedup && std::isfinite(*speedup) && *speedup >= 1.0) {
      f.estimated_speedup = speedup;
      f.estimate_basis = std::move(basis);
    }
    f.severity = std::max(0.0, severity);
    r_.finding = std::move(f);
    return std::move(r_);
  }

 private:
  CheckResult r_;
  const SessionCheckDef* def_;
  const Thresholds* overrides_;
};

// The devices that have any traced time, worst first by `key`.
template <typename Key>
std::vector<DeviceView> devices_by(const TimelineSummary& t, Key key) {
  std::vector<DeviceView> out;
  for (const DeviceTimeStats& d : t.devices) {
    if (d.kernels + d.copies > 0 && d.span_ns() > 0) out.push_back(view_of(d));
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](const DeviceView& a, const DeviceView& b) { return key(a) > key(b); });
  return out;
}

std::string gpu(const DeviceView& v) { return "GPU " + std::to_string(v.d->device); }

// Idle time inside launch-bound stretches.
double stretch_idle(const DeviceTimeStats& d) {
  double kept = 0;
  for (const LaunchBoundStretch& s : d.launch_bound) {
    kept += std::max(0.0, static_cast<double>(s.end_ns - s.start_ns) - s.busy_ns);
  }
  // Files written before the totals existed carry only the kept stretches.
  return std::max(kept, d.launch_bound_span_ns - d.launch_bound_busy_ns);
}

// ---- session.d2a.idle_gaps ------------------------------------------------------------------

CheckResult check_idle(const TimelineSummary& t, const Thresholds* th) {
  Check c("session.d2a.idle_gaps", th);
  const double limit = c.threshold("max_idle_pct");
  auto devs = devices_by(t, [](const DeviceView& v) { return v.idle_pct; });
  if (devs.empty()) return c.not_evaluated("no kernel or copy with a duration was traced");
  const DeviceView& v = devs.front();
  const DeviceTimeStats& d = *v.d;
  c.note_device(v);
  c.note("cutriage__idle_gaps", static_cast<double>(d.gaps));
  c.note("cutriage__idle_gap_ns", d.gap_ns, "nsecond");
  const double largest =
      d.largest_gaps.empty()
          ? 0.0
          : static_cast<double>(d.largest_gaps.front().end_ns - d.largest_gaps.front().start_ns);
  c.note("cutriage__largest_idle_gap_ns", largest, "nsecond");
  c.note("cutriage__profiler_idle_ns", d.profiler_idle_ns, "nsecond");

  std::string reading = gpu(v) + " idle for " + pct(v.idle_pct) + " of its " + duration(v.span) +
                        " trace (" + duration(v.idle) + ")";
  if (d.gaps > 0) {
    reading += "; " + count(static_cast<double>(d.gaps)) + " gaps over " +
               duration(static_cast<double>(t.options.min_gap_ns)) + " hold " + duration(d.gap_ns);
    if (!d.largest_gaps.empty()) {
      reading +=
          ", the longest " + duration(largest) + " at " + at(d.largest_gaps.front().start_ns, d);
    }
  }
  if (!(v.idle_pct > limit)) return c.not_fired(reading);

  // What the idle time is made of decides where to look first.
  std::string action;
  const double in_stretches = std::min(stretch_idle(d), v.idle);
  if (in_stretches >= 0.25 * v.idle) {
    c.note("cutriage__launch_bound_idle_ns", in_stretches, "nsecond");
    action = pct(100.0 * in_stretches / v.idle, 0) +
             " of the idle time lies between short kernels the host could not launch fast enough "
             "(session.d2a.launch_bound): capture those sequences in CUDA graphs or fuse the small "
             "kernels. ";
  }
  if (d.gap_ns < 0.5 * v.idle) {
    action += "Most idle time sits in intervals under " +
              duration(static_cast<double>(t.options.min_gap_ns)) +
              " between back-to-back operations, the cost of each launch or dependency: fewer, "
              "larger launches or a CUDA graph remove it.";
  } else if (largest >= 0.5 * d.gap_ns) {
    action += "One wait dominates: find what the host thread did during the longest gap (at " +
              at(d.largest_gaps.front().start_ns, d) +
              "): a synchronization, an allocation, a blocking copy, data loading or a value read "
              "back; move it off the critical path or overlap it with queued GPU work.";
  } else {
    action +=
        "Check what the host does between submissions (device-wide synchronizations, "
        "blocking copies, CPU work) and queue work ahead: asynchronous copies, events instead "
        "of synchronizations, CUDA graphs.";
  }
  action += " Then return to the kernel decisions.";
  const double busy = std::max(d.busy_ns, 1.0);
  return c.fired(Limiter::kDispatchGaps, reading + " (> " + pct(limit, 0) + ")", action,
                 v.idle_pct / limit - 1.0, v.span / busy,
                 "the trace shrinks to the device's busy time if every idle interval were removed: "
                 "span / busy (" +
                     duration(v.span) + " / " + duration(d.busy_ns) + ")");
}

// ---- session.d2a.launch_bound ---------------------------------------------------------------

CheckResult check_launch_bound(const TimelineSummary& t, const Thresholds* th) {
  Check c("session.d2a.launch_bound", th);
  const TimelineOptions& o = t.options;
  c.cite("stretch_min_kernels", static_cast<double>(o.stretch_min_kernels));
  c.cite("stretch_max_kernel_ns", static_cast<double>(o.stretch_max_kernel_ns));
  c.cite("stretch_max_busy_pct", 100.0 * o.stretch_max_busy);
  c.cite("stretch_max_gap_ns", static_cast<double>(o.stretch_max_gap_ns));
  const double limit = c.threshold("min_stretch_idle_pct");
  auto devs = devices_by(t, [](const DeviceView& v) { return stretch_idle(*v.d); });
  uint64_t most_kernels = 0;
  for (const DeviceView& v : devs) most_kernels = std::max(most_kernels, v.d->kernels);
  if (devs.empty() || most_kernels == 0)
    return c.not_evaluated("no kernel with a duration was traced");
  if (most_kernels < o.stretch_min_kernels) {
    return c.not_evaluated(count(static_cast<double>(most_kernels)) +
                           " kernels traced on the busiest GPU, "
                           "fewer than the " +
                           count(static_cast<double>(o.stretch_min_kernels)) +
                           " a launch-bound stretch needs");
  }
  const DeviceView& v = devs.front();
  const DeviceTimeStats& d = *v.d;
  const double idle = stretch_idle(d);
  const double idle_pct = v.span > 0 ? 100.0 * idle / v.span : 0.0;
  const uint64_t found = std::max<uint64_t>(d.launch_bound_stretches, d.launch_bound.size());
  c.note_device(v);
  c.note("cutriage__launch_bound_stretches", static_cast<double>(found));
  c.note("cutriage__launch_bound_idle_ns", idle, "nsecond");
  c.note("cutriage__launch_bound_idle_pct", idle_pct, "%");
  if (found == 0) {
    return c.not_fired("no run of " + count(static_cast<double>(o.stretch_min_kernels)) +
                       " or more kernels of at most " +
                       duration(static_cast<double>(o.stretch_max_kernel_ns)) +
                       " with the GPU busy under " + pct(100.0 * o.stretch_max_busy, 0) + " of it");
  }
  std::string reading = gpu(v) + ": " + count(static_cast<double>(found)) +
                        " launch-bound stretch" + (found == 1 ? "" : "es") + " leave it idle " +
                        duration(idle) + ", " + pct(idle_pct) + " of its trace";
  std::string detail;
  if (!d.launch_bound.empty()) {
    const LaunchBoundStretch& s = d.launch_bound.front();
    const double span = static_cast<double>(s.end_ns - s.start_ns);
    c.note("cutriage__longest_stretch_ns", span, "nsecond");
    c.note("cutriage__longest_stretch_kernels", static_cast<double>(s.kernels));
    c.note("cutriage__longest_stretch_mean_kernel_ns", s.mean_kernel_ns, "nsecond");
    c.note("cutriage__longest_stretch_busy_pct", span > 0 ? 100.0 * s.busy_ns / span : 0.0, "%");
    detail = "longest stretch: " + count(static_cast<double>(s.kernels)) + " kernels of " +
             duration(s.mean_kernel_ns) + " on average over " + duration(span) + " at " +
             at(s.start_ns, d) + ", GPU busy " + pct(span > 0 ? 100.0 * s.busy_ns / span : 0.0);
    reading += "; " + detail;
  }
  if (idle_pct < limit) {
    return c.not_fired(reading + ": under " + pct(limit, 0) + ", not what limits the run");
  }
  return c.fired(
      Limiter::kDispatchGaps, reading,
      "The host cannot issue these short kernels as fast as the GPU runs them: record the "
      "sequence once as a CUDA graph and replay it, or fuse neighbouring small kernels, so "
      "the GPU stops waiting between launches.",
      idle_pct / limit - 1.0, v.span / std::max(v.span - idle, 1.0),
      "each stretch shrinks to its kernels' busy time when they run back to back: "
      "span / (span - idle inside the stretches)",
      detail);
}

// ---- session.d2a.serialized_copies ----------------------------------------------------------

bool any_copies(const TimelineSummary& t) {
  return std::any_of(t.devices.begin(), t.devices.end(),
                     [](const DeviceTimeStats& d) { return d.copies > 0 && d.copy_busy_ns > 0; });
}
bool any_kernels(const TimelineSummary& t) {
  return std::any_of(t.devices.begin(), t.devices.end(), [](const DeviceTimeStats& d) {
    return d.kernels > 0 && d.kernel_busy_ns > 0;
  });
}

CheckResult check_serialized_copies(const TimelineSummary& t, const Thresholds* th) {
  Check c("session.d2a.serialized_copies", th);
  const double min_overlap = c.threshold("min_overlap_pct");
  const double min_copy = c.threshold("min_copy_time_pct");
  if (!any_copies(t)) return c.not_evaluated("no copies traced");
  if (!any_kernels(t))
    return c.not_evaluated("no kernels traced: copies have nothing to overlap with");
  auto devs = devices_by(t, [](const DeviceView& v) { return v.d->copy_only_ns; });
  const DeviceView& v = devs.front();
  const DeviceTimeStats& d = *v.d;
  const double overlap_pct =
      d.copy_busy_ns > 0 ? 100.0 * d.copy_overlapped_ns / d.copy_busy_ns : 0.0;
  const double copy_pct = v.span > 0 ? 100.0 * d.copy_busy_ns / v.span : 0.0;
  c.note_device(v);
  c.note("cutriage__copies", static_cast<double>(d.copies));
  c.note("cutriage__copy_busy_ns", d.copy_busy_ns, "nsecond");
  c.note("cutriage__copy_only_ns", d.copy_only_ns, "nsecond");
  c.note("cutriage__copy_overlapped_ns", d.copy_overlapped_ns, "nsecond");
  c.note("cutriage__copy_compute_overlap_pct", overlap_pct, "%");
  c.note("cutriage__copy_time_pct", copy_pct, "%");
  std::string reading = gpu(v) + ": copies take " + pct(copy_pct) + " of the trace (" +
                        duration(d.copy_busy_ns) + "), " + pct(overlap_pct) +
                        " of it under a kernel";
  if (copy_pct < min_copy) return c.not_fired(reading + ": too little copying to matter");
  if (!(overlap_pct < min_overlap)) return c.not_fired(reading);
  // Hiding the copy-only time under kernels can shorten the trace by at most that time, and never
  // below the longer of the kernel and copy busy times.
  const double floor = std::max({v.span - d.copy_only_ns, d.kernel_busy_ns, d.copy_busy_ns, 1.0});
  return c.fired(
      Limiter::kSerializedCopyCompute,
      reading + ": copies and kernels take turns (" + duration(d.copy_only_ns) +
          " of copying with no kernel running)",
      "Overlap transfers with compute: pinned host buffers, asynchronous copies on a stream "
      "other than the kernels', and the data split into chunks so one chunk copies while "
      "the previous one is processed.",
      (min_overlap - overlap_pct) / min_overlap, v.span / floor,
      "upper bound: the copy-only time hidden under kernels, the trace no shorter than "
      "the kernel or copy busy time");
}

// ---- session.d2a.pageable_copies ------------------------------------------------------------

CheckResult check_pageable(const TimelineSummary& t, const Thresholds* th) {
  Check c("session.d2a.pageable_copies", th);
  const double min_pct = c.threshold("min_pageable_time_pct");
  if (!any_copies(t)) return c.not_evaluated("no copies traced");
  auto devs = devices_by(t, [](const DeviceView& v) { return v.d->pageable_copy_ns; });
  const DeviceView& v = devs.front();
  const DeviceTimeStats& d = *v.d;
  const double share_pct = v.span > 0 ? 100.0 * d.pageable_copy_ns / v.span : 0.0;
  const double of_copies_pct =
      d.copy_busy_ns > 0 ? 100.0 * d.pageable_copy_ns / d.copy_busy_ns : 0.0;
  c.note_device(v);
  c.note("cutriage__pageable_copy_ns", d.pageable_copy_ns, "nsecond");
  c.note("cutriage__pageable_copy_time_pct", share_pct, "%");
  c.note("cutriage__pageable_share_of_copy_time_pct", of_copies_pct, "%");
  if (!(d.pageable_copy_ns > 0)) return c.not_fired("no traced copy used pageable host memory");
  const std::string of_copies = "; " + pct(of_copies_pct) + " of copy time";
  std::string reading = gpu(v) + ": copies from or to pageable host memory take " +
                        duration(d.pageable_copy_ns) + ", " + pct(share_pct) + " of the trace";
  if (share_pct < min_pct) return c.not_fired(reading + of_copies);
  const double floor = std::max({v.span - d.pageable_copy_ns, d.kernel_busy_ns, 1.0});
  return c.fired(
      Limiter::kSerializedCopyCompute, reading + " (>= " + pct(min_pct, 0) + ")" + of_copies,
      "Pin the host buffers these copies use (cudaMallocHost/cudaHostAlloc, or "
      "cudaHostRegister on existing memory): pageable copies go through a staging buffer "
      "and block the host, so they can neither run at full bandwidth nor overlap kernels.",
      share_pct / min_pct - 1.0, v.span / floor,
      "upper bound: the pageable copy time hidden entirely under kernels once the copies "
      "are pinned and asynchronous");
}

// ---- session.d1.isolated_small_kernels ------------------------------------------------------

CheckResult check_isolated(const TimelineSummary& t, const Thresholds* th,
                           const std::function<std::string(uint64_t)>& name_of) {
  Check c("session.d1.isolated_small_kernels", th);
  const double max_idle = c.threshold("max_idle_pct");
  const double min_share = c.threshold("min_family_share_pct");
  uint64_t unreplayed = 0;
  for (const FamilyTimeStats& f : t.families)
    unreplayed += f.durations.count();  // unprofiled, timed
  if (unreplayed < 2) {
    return c.not_evaluated(
        "fewer than two unprofiled kernel executions traced: nothing to run "
        "concurrently with");
  }
  const FamilyTimeStats* pick = nullptr;
  DeviceView pick_dev;
  size_t isolated = 0;
  double idlest = 0;
  for (const FamilyTimeStats& f : t.families) {  // ranked: the first match takes the most time
    const DeviceTimeStats* d = t.device(f.device);
    if (d == nullptr || !(d->span_ns() > 0)) continue;
    const DeviceView v = view_of(*d);
    idlest = std::max(idlest, v.idle_pct);
    if (f.durations.count() == 0 || f.concurrent_launches > 0) continue;
    if (!(100.0 * t.time_share(f) >= min_share) || !(v.idle_pct > max_idle)) continue;
    ++isolated;
    if (pick == nullptr) {
      pick = &f;
      pick_dev = v;
    }
  }
  if (pick == nullptr) {
    if (!(idlest > max_idle)) {
      return c.not_fired("the GPU is idle at most " + pct(idlest) + " of its trace (<= " +
                         pct(max_idle, 0) + "): little room for kernels to overlap");
    }
    return c.not_fired("every family above " + pct(min_share, 0) +
                       " of kernel time overlapped another kernel at least once, or runs on a "
                       "GPU that is seldom idle");
  }
  const FamilyTimeStats& f = *pick;
  const std::string name = name_of ? name_of(f.family) : "family " + std::to_string(f.family);
  const double share_pct = 100.0 * t.time_share(f);
  const uint64_t launches = f.launches - f.replayed_launches;
  c.note_device(pick_dev);
  c.note("cutriage__family", static_cast<double>(f.family));
  c.note("cutriage__family_time_pct", share_pct, "%");
  c.note("cutriage__family_launches", static_cast<double>(launches));
  c.note("cutriage__family_concurrent_launches", static_cast<double>(f.concurrent_launches));
  c.note("cutriage__family_mean_ns", f.mean_ns(), "nsecond");
  c.note("cutriage__isolated_families", static_cast<double>(isolated));
  if (!f.recent.empty())
    c.note("cutriage__family_grid_blocks", static_cast<double>(f.recent.back().first.count()));
  // Launches the profiler held are left out of the count and the idle share alike (they ran
  // alone by construction); both say so, so that neither contradicts the family table.
  std::string reading = name + " takes " + pct(share_pct) + " of kernel time over " +
                        count(static_cast<double>(launches)) + " unprofiled launch" + (launches == 1 ? "" : "es");
  if (f.replayed_launches > 0) reading += " (of " + count(static_cast<double>(f.launches)) + ")";
  reading += " and never overlapped another kernel, while " + gpu(pick_dev) + " sat idle " +
             pct(pick_dev.idle_pct) + " of its traced time outside profiling";
  if (isolated > 1) reading += " (" + count(static_cast<double>(isolated)) + " such families)";
  // Running it alongside other work hides at most its own time, and at most the idle time.
  const double hidden = std::min(f.total_ns, pick_dev.idle);
  return c.fired(
      Limiter::kIsolatedKernel, reading,
      "Give it company: launch independent work (other layers, other batch items, the "
      "next step's copies) on separate streams, or merge several small launches into one "
      "grid; the kernel's own Decision 1 checks tell whether its grid leaves SMs empty.",
      share_pct / min_share - 1.0, pick_dev.span / std::max(pick_dev.span - hidden, 1.0),
      "at best the family's whole time hides in the GPU's idle time: span / (span - "
      "min(family time, idle time))",
      name);
}

}  // namespace

const std::vector<SessionCheckDef>& session_checks() {
  // Never destroyed, like all_rules(): the injected agent triages from an atexit handler.
  static const std::vector<SessionCheckDef>& checks = *new std::vector<SessionCheckDef>{
      {"session.d1.isolated_small_kernels", Decision::kD1WorkloadSize,
       "Families with a large share of GPU time share the GPU with other work",
       {{"max_idle_pct", 10.0, "as session.d2a.idle_gaps: the GPU sat idle"},
        {"min_family_share_pct", 5.0,
         "a family whose removal alone bounds the run at >= 1.05x (Amdahl, method ch. 1 and 5)"}}},
      {"session.d2a.idle_gaps", Decision::kD2ADispatch, "The GPU is kept busy between operations",
       {{"max_idle_pct", 10.0, "guide 3.2.4: idle or wait above ~10% of the profiled range"}}},
      {"session.d2a.launch_bound", Decision::kD2ADispatch, "Short kernels are not waiting on the host's launch rate",
       {{"min_stretch_idle_pct", 1.0, "method ch. 1: under ~1% device idle, many small launches are not launch-starved"}}},
      {"session.d2a.serialized_copies", Decision::kD2ADispatch, "Copies overlap compute",
       {{"min_overlap_pct", 10.0, "cutriage's reading of \"fully serialized\", as d2a.serialized_copy_compute"},
        {"min_copy_time_pct", 5.0, "the floor below which copies do not matter"}}},
      {"session.d2a.pageable_copies", Decision::kD2ADispatch, "Host buffers of copies are pinned",
       {{"min_pageable_time_pct", 5.0, "the floor below which copies do not matter, for pageable copies"}}},
  };
  return checks;
}

const SessionCheckDef* find_session_check(std::string_view id) {
  for (const SessionCheckDef& c : session_checks()) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::vector<CheckResult> triage_timeline(const TimelineSummary& timeline) {
  return triage_timeline(timeline, Thresholds{}, {});
}

std::vector<CheckResult> triage_timeline(const TimelineSummary& timeline,
                                         const Thresholds& thresholds,
                                         const std::function<std::string(uint64_t)>& family_name) {
  std::vector<CheckResult> out;  // guide order: Decision 1, then 2A
  out.push_back(check_isolated(timeline, &thresholds, family_name));
  out.push_back(check_idle(timeline, &thresholds));
  out.push_back(check_launch_bound(timeline, &thresholds));
  out.push_back(check_serialized_copies(timeline, &thresholds));
  out.push_back(check_pageable(timeline, &thresholds));
  return out;
}

void fill_timeline_inputs(const TimelineSummary& timeline, uint64_t family, KernelInput& input) {
  const FamilyTimeStats* f = timeline.family(family);
  if (f == nullptr) return;
  if (timeline.total_kernel_ns > 0) input.time_share = timeline.time_share(*f);
  // Profiled launches take no part in the concurrency check: without an unprofiled one it is unknown.
  if (f->launches > f->replayed_launches) input.ran_concurrently = f->concurrent_launches > 0;
  // Deliberately not set: Decision 2A's per-kernel quantities (cutriage__gpu_idle_pct,
  // copy_time_pct, copy_compute_overlap_pct). They describe the kernel's own profiled range; the
  // session's idle share (start-up, host work, every other kernel) put in their place turned
  // every kernel of a PyTorch run into "dispatch bound" on the H200. The session-level checks
  // (triage_timeline) report those numbers on the session instead.
}

}  // namespace cutriage::triage
