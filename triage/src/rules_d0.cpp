// Decision 0: are the collected metrics trustworthy? (guide 3.2.1, 3.3)
//
// Blocking rules (a firing one makes the diagnosis untrusted, and routing stops):
//   d0.duration_divergence, d0.metric_out_of_range, d0.metric_contradiction,
//   d0.assembled_launches, d0.graph_share.
// Non-blocking rules become trust notes (trust = suspect): d0.metric_slight_overshoot,
//   d0.collection_settings, d0.build_config, d0.profiled_clock, d0.pc_samples_dropped,
//   d0.graph_scope, d0.node_sampling.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine_regime.h"
#include "metric_names.h"
#include "pc_samples.h"
#include "registry.h"
#include "rule_helpers.h"
#include "rule_numbers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kDuration = "gpu__time_duration.sum";
// The SM clock over the profiled range (cycles elapsed per second of the range): cutriage never
// locks clocks, so this is what the launch actually ran at.
constexpr std::string_view kSmClock = "sm__cycles_elapsed.avg.per_second";

// Nanoseconds per unit of a duration as producers spell it (ncu switches units with magnitude).
double ns_per_unit(std::string_view unit) {
  if (unit == "usecond" || unit == "us") return 1e3;
  if (unit == "msecond" || unit == "ms") return 1e6;
  if (unit == "second" || unit == "s") return 1e9;
  return 1.0;  // "nsecond", "ns" or unspecified
}

bool is_percent_metric(std::string_view name) {
  return name.find(".pct_of_peak_sustained_") != std::string_view::npos || ends_with(name, ".pct") ||
         ends_with(name, "_pct");
}

// Measured percent-of-peak values above `lo` (and at most `hi`), by name.
std::vector<std::pair<std::string, double>> percents_between(const MetricSet& metrics, double lo,
                                                             double hi) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, v] : metrics.all()) {
    if (v.source != MetricSource::kMeasured || !is_percent_metric(name)) continue;
    if (v.value > lo && v.value <= hi) out.emplace_back(name, v.value);
  }
  return out;
}

// Whether the verdict can rest on `name`: a metric some rule reads by name, or an average
// percent-of-peak (the families the pipe and throughput rules scan). Max/min rollups and hit
// rates of units nobody routes on can overshoot on tiny grids without making the verdict wrong.
bool verdict_relies_on(std::string_view name) {
  // Never destroyed: the injected agent triages from an atexit handler, which can run after the
  // destructors of statics first used after it was registered.
  static const std::vector<std::string>& read_by_rules = *new std::vector<std::string>(all_metric_names());
  if (std::binary_search(read_by_rules.begin(), read_by_rules.end(), name)) return true;
  return name.find(".avg.pct_of_peak_sustained_") != std::string_view::npos;
}

// "a (123.4), b (117.0) and 3 more"
std::string list_offenders(RuleContext& ctx, const std::vector<std::pair<std::string, double>>& xs) {
  std::string s;
  const size_t shown = std::min<size_t>(xs.size(), 3);
  for (size_t i = 0; i < shown; ++i) {
    ctx.metric(xs[i].first);
    if (i > 0) s += ", ";
    s += xs[i].first + " = " + fmt(xs[i].second);
  }
  if (xs.size() > shown) s += " and " + std::to_string(xs.size() - shown) + " more";
  return s;
}

// "1 percentage", "3 percentages": a count said in words, never "percentage(s)".
std::string counted(size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

RuleVerdict eval_duration(RuleContext& ctx) {
  std::vector<double> u;
  for (double d : ctx.kernel().unprofiled_durations_ns) {
    if (std::isfinite(d) && d > 0) u.push_back(d);
  }
  if (u.empty()) {
    return RuleVerdict::not_evaluated(
        "no unprofiled duration of this kernel was supplied (needs a timing without replay, e.g. "
        "from the activity trace)");
  }
  std::sort(u.begin(), u.end());
  const size_t n = u.size();
  const double median = n % 2 == 1 ? u[n / 2] : 0.5 * (u[n / 2 - 1] + u[n / 2]);
  const MetricValue* mv = ctx.metrics().find(kDuration);
  const double profiled = ctx.required(kDuration) * ns_per_unit(mv != nullptr ? mv->unit : "");
  if (!(profiled > 0)) return RuleVerdict::not_evaluated("profiled duration is not positive");
  ctx.note("cutriage__unprofiled_duration_median_ns", median, "nsecond");
  const double ratio = profiled / median;
  ctx.note("cutriage__profiled_over_unprofiled_duration.ratio", ratio);
  const double divergence = std::max(ratio, 1.0 / ratio);
  const double limit = ctx.threshold("max_ratio");
  std::string reading = "profiled " + fmt(profiled / 1e3, 2) + " us vs unprofiled median " +
                        fmt(median / 1e3, 2) + " us over " + counted(n, "run") + ": " +
                        times(divergence) + " apart";
  // A profiled launch carries a fixed cost of its own (the range start and stop around it, about
  // a microsecond on the H200: a 0.8 us kernel read as 1.7 us): a ratio over a sub-microsecond
  // kernel says nothing about the counters.
  const double min_difference = ctx.threshold("min_difference_ns");
  const double difference = std::abs(profiled - median);
  if (divergence > limit && difference < min_difference) {
    return RuleVerdict::not_fired(reading + " (> " + times(limit, 1) + ", but only " + fmt(difference / 1e3, 2) +
                                  " us apart, within the profiler's fixed cost of " +
                                  fmt(min_difference / 1e3, 1) + " us)");
  }
  if (divergence > limit) {
    RuleVerdict v = RuleVerdict::fired(reading + " (> " + times(limit, 1) + ")", divergence / limit - 1.0);
    // The likely causes, most checkable first.
    std::string causes = "Likely causes: ";
    const std::optional<double> clock = ctx.metric(kSmClock);
    const DeviceLimits* dev = ctx.kernel().device_limits ? &*ctx.kernel().device_limits : nullptr;
    if (clock && dev != nullptr && dev->sm_clock_hz > 0) {
      causes += "the SM clock (" + fmt(*clock / 1e6, 0) + " MHz under the profiler, peak " +
                fmt(dev->sm_clock_hz / 1e6, 0) + " MHz; clocks are never locked), ";
    } else {
      causes += "a different SM clock under the profiler (clocks are never locked), ";
    }
    causes += "caches warm in one case and cold in the other (replay restores memory between "
              "passes), unprofiled launches that overlapped other kernels while the profiled one "
              "ran alone, or launches of the same shape doing different work (data-dependent "
              "loops). ";
    switch (ctx.kernel().collection.collector) {
      case Collector::kNcuImport:
        causes += "Compare with the kernel's duration in an unprofiled run (Nsight Systems, or the timings "
                  "given to `cutriage triage --timings`) and profile a launch of the steady state "
                  "(ncu --launch-skip).";
        break;
      case Collector::kAgent:
        causes += "Compare the durations in the timeline (`cutriage trace`) and profile a launch of the "
                  "steady state (CUTRIAGE_LAUNCH_SKIP).";
        break;
      case Collector::kUnspecified:
        causes += "Compare with the kernel's duration in an unprofiled run and profile a launch of the "
                  "steady state.";
        break;
    }
    v.next_action = causes;
    return v;
  }
  return RuleVerdict::not_fired(reading + " (<= " + times(limit, 1) + ")");
}

RuleVerdict eval_clock(RuleContext& ctx) {
  const double clock = ctx.required(kSmClock);
  const DeviceLimits* dev = ctx.kernel().device_limits ? &*ctx.kernel().device_limits : nullptr;
  if (dev == nullptr || !(dev->sm_clock_hz > 0)) {
    return RuleVerdict::not_evaluated("the device's peak SM clock is unknown");
  }
  const double pct_of_peak = 100.0 * clock / dev->sm_clock_hz;
  ctx.note("cutriage__sm_clock_pct_of_peak", pct_of_peak, "%");
  const double min_pct = ctx.threshold("min_pct_of_peak");
  std::string reading = "SM clock " + fmt(clock / 1e6, 0) + " MHz during the profiled launch, " +
                        pct(pct_of_peak, 0) + " of the device's peak " + fmt(dev->sm_clock_hz / 1e6, 0) + " MHz";
  if (pct_of_peak < min_pct) {
    return RuleVerdict::fired(reading + " (< " + pct(min_pct, 0) + ")", min_pct / std::max(pct_of_peak, 1.0) - 1.0);
  }
  return RuleVerdict::not_fired(reading + " (>= " + pct(min_pct, 0) + ")");
}

RuleVerdict eval_out_of_range(RuleContext& ctx) {
  if (ctx.metrics().size() == 0) return RuleVerdict::not_evaluated("no metrics were collected");
  const double max_pct = ctx.threshold("max_pct");
  auto over = percents_between(ctx.metrics(), max_pct, INFINITY);
  std::erase_if(over, [](const auto& o) { return !verdict_relies_on(o.first); });
  std::vector<std::pair<std::string, double>> negative;
  for (const auto& [name, v] : ctx.metrics().all()) {
    if (v.source == MetricSource::kMeasured && v.value < 0 && verdict_relies_on(name)) {
      negative.emplace_back(name, v.value);
    }
  }
  if (over.empty() && negative.empty()) {
    return RuleVerdict::not_fired("no measured percentage above " + pct(max_pct, 0) +
                                  " and no negative value among " +
                                  std::to_string(ctx.metrics().size()) + " metrics");
  }
  std::string reading;
  double severity = 0;
  if (!over.empty()) {
    reading = counted(over.size(), "percentage") + " above " + pct(max_pct, 0) + ": " + list_offenders(ctx, over);
    for (const auto& o : over) severity = std::max(severity, o.second / max_pct - 1.0);
  }
  if (!negative.empty()) {
    if (!reading.empty()) reading += "; ";
    reading += counted(negative.size(), "negative value") + ": " + list_offenders(ctx, negative);
    severity = std::max(severity, 1.0);
  }
  return RuleVerdict::fired(reading, severity);
}

RuleVerdict eval_slight_overshoot(RuleContext& ctx) {
  if (ctx.metrics().size() == 0) return RuleVerdict::not_evaluated("no metrics were collected");
  const double max_pct = ctx.threshold("max_pct");
  auto over = percents_between(ctx.metrics(), 100.0, max_pct);
  // Far-out values the verdict does not rely on (d0.metric_out_of_range ignores them) are noted
  // here, so they stay visible without blocking.
  auto far = percents_between(ctx.metrics(), max_pct, INFINITY);
  std::erase_if(far, [](const auto& o) { return verdict_relies_on(o.first); });
  if (over.empty() && far.empty()) {
    return RuleVerdict::not_fired("no measured percentage above 100%");
  }
  // Only an overshoot in a number a verdict reads is a caveat on the verdict (issue 23: a cuBLAS
  // GEMM was "suspect" for an L2 write hit rate of 100.02%); the others are said, not counted.
  std::vector<std::pair<std::string, double>> read;
  std::vector<std::pair<std::string, double>> unread;
  for (const auto& o : over) (verdict_relies_on(o.first) ? read : unread).push_back(o);
  std::string reading;
  if (!read.empty()) {
    reading = counted(read.size(), "percentage") + " the verdict reads slightly above 100% (" +
              list_offenders(ctx, read) + "): typical multi-pass replay artifact";
  }
  std::string aside;
  if (!unread.empty()) {
    aside = counted(unread.size(), "percentage") + " slightly above 100% in metrics no verdict uses (" +
            list_offenders(ctx, unread) + ")";
  }
  if (!far.empty()) {
    // Not "slight": said as what it is, a far overshoot the verdict does not read.
    if (!aside.empty()) aside += "; ";
    aside += counted(far.size(), "percentage") + " far above 100% in metrics no verdict uses (" +
             list_offenders(ctx, far) + "): max/min rollups and hit rates overshoot on small grids";
  }
  if (read.empty()) return RuleVerdict::not_fired(aside + "; not a caveat on the verdict");
  return RuleVerdict::fired(reading + (aside.empty() ? "" : "; also " + aside) + "; not blocking", 0.1);
}

RuleVerdict eval_contradiction(RuleContext& ctx) {
  const double busy = ctx.threshold("busy_pct");
  const double idle = ctx.threshold("idle_pct");
  std::optional<double> sm = ctx.metric(kSmThroughput);
  std::optional<double> issue = ctx.metric(kIssueActivePct);
  std::optional<double> mem = ctx.metric(kMemThroughput);
  std::optional<double> tiers;
  int tier_count = 0;
  for (std::string_view t : {kDram, kL2, kL1}) {
    if (auto v = ctx.metric(t)) {
      tiers = std::max(tiers.value_or(*v), *v);
      ++tier_count;
    }
  }
  const bool can_issue = sm && issue;
  const bool can_tiers = mem && tier_count == 3;
  if (!can_issue && !can_tiers) {
    return RuleVerdict::not_evaluated(
        "needs sm__throughput with smsp__issue_active, or gpu__compute_memory_throughput with the "
        "dram/lts/l1tex throughputs");
  }
  std::string found;
  double severity = 0;
  if (can_issue && *sm > busy && *issue < idle) {
    found = "SM throughput " + pct(*sm) + " with issue activity " + pct(*issue, 2) +
            ": the SM cannot be busy while issuing almost nothing";
    severity = 1.0;
  }
  if (can_tiers && *mem > busy && *tiers < idle) {
    if (!found.empty()) found += "; ";
    found += "memory throughput " + pct(*mem) + " while DRAM, L2 and L1TEX are all below " +
             pct(idle, 0) + " (top " + pct(*tiers, 2) + ")";
    severity = 1.0;
  }
  if (!found.empty()) return RuleVerdict::fired(found, severity);
  std::string reading;
  if (can_issue) reading = "SM throughput " + pct(*sm) + " with issue activity " + pct(*issue);
  if (can_tiers) {
    if (!reading.empty()) reading += "; ";
    reading += "memory throughput " + pct(*mem) + " with top memory tier " + pct(*tiers);
  }
  return RuleVerdict::not_fired(reading + ": consistent");
}

std::string_view replay_name(ReplayMode m) {
  switch (m) {
    case ReplayMode::kKernel: return "kernel replay";
    case ReplayMode::kApplication: return "application replay";
    case ReplayMode::kRange: return "range replay";
    case ReplayMode::kNone: return "no replay";
    case ReplayMode::kUnspecified: break;
  }
  return "replay mode unknown";
}

std::string_view clock_name(ClockControl c) {
  switch (c) {
    case ClockControl::kLocked: return "clocks locked to base";
    case ClockControl::kNone: return "clock control none";
    case ClockControl::kUnspecified: break;
  }
  return "clock control unknown";
}

RuleVerdict eval_settings(RuleContext& ctx) {
  const CollectionSettings& c = ctx.kernel().collection;
  if (c.replay_mode == ReplayMode::kUnspecified && c.clock_control == ClockControl::kUnspecified) {
    return RuleVerdict::not_evaluated("replay mode and clock control were not recorded");
  }
  std::string settings = std::string(replay_name(c.replay_mode)) + ", " +
                         std::string(clock_name(c.clock_control));
  if (!c.cache_control.empty()) settings += ", cache control " + c.cache_control;
  if (c.passes > 0) settings += ", " + std::to_string(c.passes) + " pass(es)";
  ctx.note("cutriage__collection_passes", c.passes, "pass");
  const bool system_replay =
      c.replay_mode == ReplayMode::kApplication || c.replay_mode == ReplayMode::kRange;
  if (system_replay && c.clock_control == ClockControl::kLocked) {
    return RuleVerdict::fired(settings +
                              ": a system-representative replay with locked clocks mixes two "
                              "analysis goals; use clock control none for application behavior");
  }
  if (c.replay_mode == ReplayMode::kKernel && c.cache_control == "none" && c.passes > 1) {
    return RuleVerdict::fired(settings +
                              ": with caches left warm across kernel-replay passes, each pass sees a "
                              "different cache state, so counters from different passes disagree");
  }
  std::string note;
  if (c.clock_control == ClockControl::kNone) {
    note = " (clocks float as in the application, as cutriage's profiler and ncu "
           "--clock-control none collect)";
  } else if (c.clock_control == ClockControl::kLocked) {
    note = " (suits isolated kernel analysis; durations run at base clock)";
  }
  return RuleVerdict::not_fired(settings + note);
}

RuleVerdict eval_build(RuleContext& ctx) {
  const CollectionSettings& c = ctx.kernel().collection;
  if (!c.debug_build && !c.has_line_info) {
    return RuleVerdict::not_evaluated("the build flags (-G, -lineinfo) were not recorded");
  }
  std::string problems;
  if (c.debug_build.value_or(false)) {
    problems = "built with device debug (-G): code generation and timings differ from a release build";
  }
  if (c.has_line_info && !*c.has_line_info) {
    if (!problems.empty()) problems += "; ";
    problems += "no line table (-lineinfo missing): samples cannot be mapped to source lines";
  }
  if (!problems.empty()) {
    RuleVerdict v = RuleVerdict::fired(problems);
    if (c.debug_build.value_or(false)) {
      v.next_action = "Rebuild without -G (keep -O3) and with -lineinfo, then profile again.";
    }
    return v;
  }
  std::string reading = "release build";
  if (!c.debug_build) reading = "debug flag unknown";
  reading += c.has_line_info ? ", line table present" : ", line table unknown";
  return RuleVerdict::not_fired(reading);
}

// Samples the sampler lost. Lost samples are not spread evenly: a buffer fills during the busiest
// stretch of the kernel and everything sampled until it drains is gone, so the per-line and
// per-reason shares lean towards the rest of the run.
RuleVerdict eval_pc_samples_dropped(RuleContext& ctx) {
  const auto& pcs = ctx.kernel().pc_samples;
  // Without samples there is nothing to lose; the sample-based checks say "no PC samples"
  // themselves, and a not-evaluated Decision 0 check would mark every kernel suspect.
  if (!pcs) return RuleVerdict::not_fired("no PC samples were collected for this kernel");
  if (!pcs->error.empty()) return RuleVerdict::not_evaluated("PC sampling failed: " + pcs->error);
  uint64_t kept = 0;
  for (const PcSampleLine& line : pcs->lines) {
    for (const auto& [state, n] : warp_states(line)) kept += n;
  }
  // CUPTI's total counts the dropped samples (and those of driver-internal kernels); a writer that
  // left the total out, or counted only the kept ones, still gets a share of what was sampled.
  const uint64_t total = std::max(pcs->total_samples, kept + pcs->dropped_samples);
  const double share =
      total > 0 ? static_cast<double>(pcs->dropped_samples) / static_cast<double>(total) : 0.0;
  ctx.note("cutriage__pc_samples_dropped", static_cast<double>(pcs->dropped_samples), "sample");
  ctx.note("cutriage__pc_samples_total", static_cast<double>(total), "sample");
  ctx.note("cutriage__pc_samples_dropped_share", share);
  ctx.note("cutriage__pc_hardware_buffer_full", pcs->hardware_buffer_full ? 1.0 : 0.0);
  const double limit = ctx.threshold("max_dropped_share");
  std::string reading = std::to_string(pcs->dropped_samples) + " of " + std::to_string(total) +
                        " PC samples dropped (" + pct(100.0 * share, 2) + ")";
  if (pcs->hardware_buffer_full) reading += "; the sampler's hardware buffer was full";
  if (pcs->sampling_period_log2 > 0) {
    reading += "; one sample per SM every 2^" + std::to_string(pcs->sampling_period_log2) + " cycles";
  }
  reading += sampled_launch_note(ctx.kernel());
  if (share > limit || pcs->hardware_buffer_full) {
    RuleVerdict v = RuleVerdict::fired(
        reading + " (> " + pct(100.0 * limit, 0) + (pcs->hardware_buffer_full ? " or buffer full)" : ")"),
        pcs->hardware_buffer_full ? std::max(1.0, above(share, limit)) : above(share, limit));
    std::string action = "Sample again with a longer period";
    if (pcs->sampling_period_log2 > 0) {
      action += " (2^" + std::to_string(pcs->sampling_period_log2 + 1) + " cycles or more)";
    }
    action += " or a larger hardware buffer; until then read the hot lines and stall shares as "
              "approximate: samples are lost in bursts when a buffer fills, not evenly.";
    v.next_action = std::move(action);
    return v;
  }
  return RuleVerdict::not_fired(reading + " (<= " + pct(100.0 * limit, 0) + ", buffer not full)");
}

// A diagnosis assembled across launches (always-on mode: one single-pass metric group per launch,
// no replay) compares counters of different executions: valid only when they ran the same launch
// configuration and took about as long. A launch of another shape, or one that ran far longer
// (other work sharing the GPU, data-dependent loops), makes ratios between its counters and those
// of the other launches meaningless.
std::string dims(const Dim3& d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

RuleVerdict eval_assembled(RuleContext& ctx) {
  const std::vector<AssembledLaunch>& launches = ctx.kernel().assembled_launches;
  if (launches.empty()) return RuleVerdict::not_fired("every metric came from one launch");
  ctx.note("cutriage__assembled_launches", static_cast<double>(launches.size()), "launch");
  if (launches.size() == 1) return RuleVerdict::not_fired("every metric came from one launch, without replay");
  const AssembledLaunch& first = launches.front();
  std::vector<std::string> shapes;
  for (const AssembledLaunch& l : launches) {
    if (l.grid != first.grid || l.block != first.block || l.dynamic_shared_bytes != first.dynamic_shared_bytes) {
      shapes.push_back("launch " + std::to_string(l.launch_index) + " grid " + dims(l.grid) + " block " +
                       dims(l.block) + " " + std::to_string(l.dynamic_shared_bytes) + " B dynamic");
    }
  }
  std::vector<double> durations;
  for (const AssembledLaunch& l : launches) {
    if (std::isfinite(l.duration_ns) && l.duration_ns > 0) durations.push_back(l.duration_ns);
  }
  size_t earlier = 0;
  for (const AssembledLaunch& l : launches) earlier += l.from_earlier_process() ? 1 : 0;
  if (earlier > 0) ctx.note("cutriage__assembled_launches_earlier_process", static_cast<double>(earlier), "launch");
  // Launches of an earlier process of the program (resumed) are held to the same test: a rebuilt
  // kernel or other inputs show up as another shape or other durations.
  const std::string count = std::to_string(launches.size()) + " launches" +
                            (earlier > 0 ? " (" + std::to_string(earlier) + " in an earlier process)" : "");
  if (!shapes.empty()) {
    RuleVerdict v = RuleVerdict::fired(count + " of different launch configurations: launch " +
                                       std::to_string(first.launch_index) + " grid " + dims(first.grid) + " vs " +
                                       shapes.front() +
                                       (shapes.size() > 1 ? " and " + std::to_string(shapes.size() - 1) + " more" : ""),
                                       1.0);
    v.next_action = "Counters of differently shaped launches cannot be combined: collect this family again "
                    "(the agent restarts it) or request a deep capture, which measures one launch with replay.";
    return v;
  }
  if (durations.size() < 2) {
    return RuleVerdict::not_evaluated(count + " of one launch configuration, but fewer than two have a measured "
                                      "duration (gpu__time_duration.sum)");
  }
  const auto [lo, hi] = std::minmax_element(durations.begin(), durations.end());
  const double ratio = *hi / *lo;
  ctx.note("cutriage__assembled_duration_min_ns", *lo, "nsecond");
  ctx.note("cutriage__assembled_duration_max_ns", *hi, "nsecond");
  ctx.note("cutriage__assembled_duration_spread.ratio", ratio);
  const double limit = ctx.threshold("max_duration_ratio");
  const double min_difference = ctx.threshold("min_difference_ns");
  // Launches without a measured duration (a graph launch whose trace was paused, or whose records
  // could not be told from another launch's) are in the count but not in the comparison.
  const std::string measured =
      durations.size() < launches.size() ? " (" + std::to_string(durations.size()) + " with a measured duration)" : "";
  const std::string reading = count + " of one launch configuration" + measured + ", durations " + fmt(*lo / 1e3, 2) +
                              " to " + fmt(*hi / 1e3, 2) + " us (" + times(ratio) + ")";
  if (ratio > limit && *hi - *lo >= min_difference) {
    RuleVerdict v = RuleVerdict::fired(reading + " (> " + times(limit, 1) + ")", ratio / limit - 1.0);
    v.next_action = "The launches did different amounts of work or shared the GPU differently: ratios between "
                    "counters of different groups are unreliable. Request a deep capture of this family "
                    "(cutriage_request_deep_capture, the control file or the signal) to measure one launch.";
    return v;
  }
  return RuleVerdict::not_fired(reading + " (<= " + times(limit, 1) + " or within " + fmt(min_difference / 1e3, 1) +
                                " us)");
}

// Counters of a whole graph launch stand for one of its kernels only as far as that kernel holds
// the graph's time: below the share the counters describe other kernels more than this one.
RuleVerdict eval_graph_share(RuleContext& ctx) {
  const std::optional<GraphScope>& g = ctx.kernel().graph_scope;
  if (!g) return RuleVerdict::not_fired("the counters are this kernel's own launch's");
  ctx.note("cutriage__share_of_graph_kernel_time", 100.0 * g->share_of_graph, "%");
  if (g->node_sampling) {
    // PM samples attributed to this kernel's own executions: its share of the graph does not
    // dilute them (d0.node_sampling says how many there are).
    return RuleVerdict::not_fired("the counters are this kernel's own PM samples in graph " +
                                  std::to_string(g->graph_id) + " (it holds " + pct(100.0 * g->share_of_graph, 1) +
                                  " of the graph's kernel time), not the graph's");
  }
  const double min_share = ctx.threshold("min_share");
  const std::string reading = "the counters are graph " + std::to_string(g->graph_id) + "'s whole launch, " +
                              "of whose kernel time this kernel holds " + pct(100.0 * g->share_of_graph, 1);
  if (g->share_of_graph < min_share) {
    RuleVerdict v = RuleVerdict::fired(reading + " (< " + pct(100.0 * min_share, 0) + ")",
                                       min_share / std::max(g->share_of_graph, 0.01) - 1.0);
    v.next_action = "The graph's counters describe its other kernels more than this one. Read this kernel's "
                    "stall reasons and hot lines (PC sampling, per function), or profile it outside the graph: "
                    "run the captured step once eagerly under `cutriage run`, or `ncu --graph-profiling node`.";
    return v;
  }
  return RuleVerdict::not_fired(reading + " (>= " + pct(100.0 * min_share, 0) + ")");
}

// The same counters, when the kernel holds most of the graph: trusted, but mixed with the rest.
RuleVerdict eval_graph_scope(RuleContext& ctx) {
  const std::optional<GraphScope>& g = ctx.kernel().graph_scope;
  if (!g) return RuleVerdict::not_fired("the counters are this kernel's own launch's");
  if (g->node_sampling) return RuleVerdict::not_fired("the counters are this kernel's own PM samples, not the graph's");
  const double max_share = ctx.threshold("pure_share");
  const std::string reading = "counters of graph " + std::to_string(g->graph_id) + " over " +
                              counted(g->replays_profiled, "replay") + "; this kernel is " +
                              pct(100.0 * g->share_of_graph, 1) + " of its kernel time, " +
                              counted(g->other_families, "other kernel") + " the rest";
  if (g->share_of_graph < max_share) return RuleVerdict::fired(reading, 1.0 - g->share_of_graph);
  return RuleVerdict::not_fired(reading + " (>= " + pct(100.0 * max_share, 0) + ")");
}

// Counters PM-sampled per graph node: the kernel's own, but averaged over few samples of one
// launch, and under PM sampling's definitions (L2 left out, the memory throughput a stand-in).
// The same rule for always-on's PM routing window (KernelInput::pm_window): samples of the
// application's ordinary launches, attributed to this kernel's traced executions in the window.
RuleVerdict eval_node_sampling(RuleContext& ctx) {
  const std::optional<GraphScope>& g = ctx.kernel().graph_scope;
  const std::optional<PmWindowScope>& w = ctx.kernel().pm_window;
  if ((!g || !g->node_sampling) && !w) {
    return RuleVerdict::not_fired("the counters are not PM-sampled (per graph node or in a PM window)");
  }
  uint32_t samples = 0;
  std::string reading;
  if (g && g->node_sampling) {
    const NodeSampling& n = *g->node_sampling;
    samples = n.samples;
    reading = "the counters are this kernel's own PM samples: " + counted(n.samples, "sample") + " of " +
              fmt(static_cast<double>(n.interval_ns) / 1e3, 1) + " us inside " + counted(n.executions, "execution") +
              " in one launch of graph " + std::to_string(g->graph_id) + " (" + counted(n.launch_samples, "sample") +
              " across the launch); PM sampling's throughput definitions, L2 not sampled";
  } else {
    samples = w->samples;
    const double span_ms = w->window_end_ns > w->window_start_ns
                               ? static_cast<double>(w->window_end_ns - w->window_start_ns) / 1e6
                               : 0.0;
    reading = "the counters are this kernel's own PM samples: " + counted(w->samples, "sample") + " of " +
              fmt(static_cast<double>(w->interval_ns) / 1e3, 1) + " us inside " + counted(w->executions, "execution") +
              " in one PM window of " + fmt(span_ms, 1) + " ms over the application's own launches (" +
              counted(w->window_samples, "sample") + " in the window); PM sampling's throughput definitions, L2 "
              "not sampled";
  }
  ctx.note("cutriage__node_pm_samples", samples, "");
  const double min_samples = ctx.threshold("min_samples");
  if (samples < min_samples) {
    RuleVerdict v = RuleVerdict::fired(reading + " (< " + fmt(min_samples, 0) + ")", min_samples / std::max<double>(samples, 1) - 1.0);
    v.next_action = w ? "Too few samples lie inside this kernel's executions: the range profiler's groups "
                        "give its counters later; the verdict then rests on them."
                      : "Too few samples lie inside this kernel's executions: a shorter sampling interval, or "
                        "profile the kernel outside the graph.";
    return v;
  }
  return RuleVerdict::fired(reading, 0.1);
}

}  // namespace

std::vector<Rule> make_d0_rules() {
  std::vector<Rule> rules;
  rules.push_back(Rule{
      .id = "d0.profiled_clock",
      .decision = Decision::kD0Trust,
      .title = "The GPU ran near its peak clock while profiled",
      .parent = {},
      .metrics = {{kSmClock, true}},
      .thresholds = {{"min_pct_of_peak", 80.0,
                      "guide 3.2.1: clocks change timings; below ~80% of peak the profiled launch "
                      "was power, thermal or idle-clock limited"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The GPU ran well below its peak clock while this launch was profiled.",
      .next_action = "Read the percent-of-peak numbers (relative to elapsed cycles) rather than "
                     "absolute times; profile again when the GPU is not power or thermal capped.",
      .priority = 35,
      .evaluate = eval_clock,
  });
  rules.push_back(Rule{
      .id = "d0.duration_divergence",
      .decision = Decision::kD0Trust,
      .title = "Profiled duration agrees with an unprofiled timing of the same kernel",
      .parent = {},
      .metrics = {{kDuration, true}, {kSmClock, false}},
      .thresholds = {{"max_ratio", 2.0,
                      "guide 3.2.1: a divergence beyond ~2x calls for checking clock, cache and "
                      "replay settings"},
                     {"min_difference_ns", 2000.0,
                      "a profiled launch's fixed timing cost: zoo_tiny_kernel read 1.70 us "
                      "profiled vs 0.80 us traced on the H200"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The kernel ran at a very different speed under the profiler than without it.",
      .next_action = "Compare under equal conditions: profile with clock control none and "
                     "application or range replay, then collect again.",
      .priority = 20,
      .blocking = true,
      .evaluate = eval_duration,
  });
  rules.push_back(Rule{
      .id = "d0.assembled_launches",
      .decision = Decision::kD0Trust,
      .title = "Launches a diagnosis was assembled from are comparable",
      .parent = {},
      .metrics = {},
      .thresholds = {{"max_duration_ratio", 1.5,
                      "project: single-pass groups come from different launches; beyond 1.5x "
                      "apart the launches did different work or met different contention"},
                     {"min_difference_ns", 2000.0,
                      "the same fixed timing cost as d0.duration_divergence: sub-microsecond "
                      "kernels differ by more than 1.5x from launch to launch"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The diagnosis combines counters of launches that were not alike.",
      .next_action = "Collect the family again, or request a deep capture of one launch with replay.",
      .priority = 15,
      .blocking = true,
      .evaluate = eval_assembled,
  });
  rules.push_back(Rule{
      .id = "d0.graph_share",
      .decision = Decision::kD0Trust,
      .title = "Counters of a graph launch describe this kernel",
      .parent = {},
      .metrics = {},
      .thresholds = {{"min_share", 0.5,
                      "project: below half of the graph's kernel time, the graph's counters are "
                      "mostly other kernels' (CUPTI 13.0 counts a graph launch as one range)"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The counters are a whole graph launch's, and most of its time is other kernels'.",
      .next_action = "Read the kernel's PC samples, or profile it outside the graph.",
      .priority = 16,
      .blocking = true,
      .evaluate = eval_graph_share,
  });
  rules.push_back(Rule{
      .id = "d0.graph_scope",
      .decision = Decision::kD0Trust,
      .title = "Counters are this kernel's alone",
      .parent = {},
      .metrics = {},
      .thresholds = {{"pure_share", 0.95,
                      "project: from 95% of the graph's kernel time on, the other kernels' part "
                      "of the graph's counters is within the counters' own run-to-run spread"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The counters are a whole graph launch's: they mix this kernel with the graph's others.",
      .next_action = "Weigh the verdict by the kernel's share of the graph; its PC samples are its own.",
      .priority = 45,
      .evaluate = eval_graph_scope,
  });
  rules.push_back(Rule{
      .id = "d0.node_sampling",
      .decision = Decision::kD0Trust,
      .title = "Counters PM-sampled per graph node or in a PM window",
      .parent = {},
      .metrics = {},
      .thresholds = {{"min_samples", 3.0,
                      "project: fewer samples than this inside the kernel's executions make its mean a "
                      "reading of one or two moments; the H200 probe's per-node means, from 9 samples "
                      "on, matched the range profiler within about 2 points"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The counters are this kernel's own, PM-sampled across one launch of its graph or in one "
                 "PM window of the application's launches.",
      .next_action = "Read them as the kernel's own regime; L2 and the counters PM sampling does not give "
                     "are missing, and the decisions that need them say so.",
      .priority = 46,
      .evaluate = eval_node_sampling,
  });
  rules.push_back(Rule{
      .id = "d0.metric_out_of_range",
      .decision = Decision::kD0Trust,
      .title = "Every metric lies in its logical range",
      .parent = {},
      .metrics = {},
      .thresholds = {{"max_pct", 110.0,
                      "guide 3.2.1 note [1]: small overshoots above 100% are multi-pass artifacts; "
                      "cutriage blocks only past 110%"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "Some measured values are impossible (far above 100% of peak, or negative).",
      .next_action = "Lengthen or enlarge the workload, collect fewer metrics per run so related "
                     "counters share a pass, and collect again.",
      .priority = 10,
      .blocking = true,
      .evaluate = eval_out_of_range,
  });
  rules.push_back(Rule{
      .id = "d0.metric_slight_overshoot",
      .decision = Decision::kD0Trust,
      .title = "Percentages slightly above 100% (multi-pass artifacts)",
      .parent = {},
      .metrics = {},
      .thresholds = {{"max_pct", 110.0, "upper end of the tolerated overshoot (guide 3.2.1 note [1])"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "A few percentages overshoot 100% slightly; read them as ~100%.",
      .next_action = "No action needed unless other readings contradict each other.",
      .priority = 60,
      .evaluate = eval_slight_overshoot,
  });
  rules.push_back(Rule{
      .id = "d0.metric_contradiction",
      .decision = Decision::kD0Trust,
      .title = "Metrics do not contradict each other",
      .parent = {},
      .metrics = {{kSmThroughput, false},
                  {kIssueActivePct, false},
                  {kMemThroughput, false},
                  {kDram, false},
                  {kL2, false},
                  {kL1, false}},
      .thresholds = {{"busy_pct", 50.0, "a unit this busy must show activity in what feeds it"},
                     {"idle_pct", 1.0, "activity this low counts as zero"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "Readings contradict each other (a busy unit with no activity feeding it).",
      .next_action = "Collect again with fewer metrics per pass and a longer workload; check that "
                     "no other process shared the GPU.",
      .priority = 10,
      .blocking = true,
      .evaluate = eval_contradiction,
  });
  rules.push_back(Rule{
      .id = "d0.collection_settings",
      .decision = Decision::kD0Trust,
      .title = "Replay mode and clock control fit the analysis goal",
      .parent = {},
      .metrics = {},
      .thresholds = {},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The collection settings mix isolated-kernel and system-representative choices.",
      .next_action = "Pick one goal: kernel replay with locked clocks for the kernel alone, or "
                     "range/application replay with clock and cache control none for the "
                     "application's behavior.",
      .priority = 50,
      .evaluate = eval_settings,
  });
  rules.push_back(Rule{
      .id = "d0.build_config",
      .decision = Decision::kD0Trust,
      .title = "Release build with line information (source mapping)",
      .parent = {},
      .metrics = {},
      .thresholds = {},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The profiled binary is a debug build or lacks line information.",
      .next_action = "Build with release optimization and -lineinfo, then profile again.",
      .priority = 40,
      // The counters of a kernel without a line table are as right as any: it only keeps the
      // samples from source lines (library kernels never have one). A -G build's counters are
      // right for that build; whether it represents the release is the user's to judge.
      .scope = TrustScope::kSourceMapping,
      .evaluate = eval_build,
  });
  rules.push_back(Rule{
      .id = "d0.pc_samples_dropped",
      .decision = Decision::kD0Trust,
      .title = "PC sampling lost no significant share of its samples",
      .parent = {},
      .metrics = {},
      .thresholds = {{"max_dropped_share", 0.01,
                      "project: samples are lost in bursts, not evenly, so beyond ~1% dropped the "
                      "per-line and per-reason shares can lean; a full hardware buffer fires "
                      "regardless (CUPTI then returns no data for the drained stretch)"}},
      .limiter = Limiter::kUntrustedMetrics,
      .finding = "The PC sampler dropped samples: stall shares and hot lines are approximate.",
      .next_action = "Sample again with a longer sampling period or a larger hardware buffer.",
      .priority = 45,
      .evaluate = eval_pc_samples_dropped,
  });
  return rules;
}

}  // namespace cutriage::triage::detail
