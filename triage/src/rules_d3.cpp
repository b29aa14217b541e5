// Decision 3: the kernel is latency-limited; what keeps the schedulers from issuing?
//
// Every rule reads scheduler, warp-state and occupancy quantities. The stall-reason table (reason ->
// what to change) lives here and is shared with Decisions 5 and 6 through the vocabulary functions
// at the end (declared in pc_samples.h).
//
// The stall breakdown comes from the range profiler's per-reason ratios and from PC samples
// (KernelInput::pc_samples). d3.dominant_stall decides on the ratios when they were measured, on
// the samples otherwise, and in both cases places the dominant reason on its source lines from
// the samples; d3.low_eligible_warps falls back on the sampled share of eligible warp states.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine_regime.h"
#include "metric_names.h"
#include "pc_samples.h"
#include "registry.h"
#include "rule_helpers.h"
#include "rule_numbers.h"

namespace cutriage::triage::detail {

namespace {


struct StallAction {
  std::string_view reason;
  std::string_view action;
};

// Project wording of the per-reason actions (guide 3.8.2). `gmma` is GH100's counter name for the
// warp-group arrive/wait stall. PC sampling's `no_instructions` reaches this table as
// `no_instruction` (canonical_stall_reason).
constexpr StallAction kStallActions[] = {
    {"long_scoreboard",
     "Warps wait on global/local/texture loads. Locate the producing load (the sample sits on its "
     "consumer) and hide its latency: more independent loads per thread (unroll, vector loads), "
     "issue loads well before their use, stage tiles through shared memory or async copies, and "
     "check coalescing and cache hit rates. Treat it as memory latency, not bandwidth."},
    {"short_scoreboard",
     "Warps wait on MIO results: shared-memory loads, special-function math (MUFU) or indirect "
     "branches. Check shared-memory bank conflicts first, then reduce MUFU use (fast intrinsics, "
     "table lookups) or shared-memory round trips."},
    {"wait",
     "Warps wait on fixed-latency dependencies between back-to-back arithmetic. Interleave "
     "independent instructions (unroll, more accumulators) or run more warps per scheduler."},
    {"math_pipe_throttle",
     "Warps queue for a busy math pipe: the kernel is pipe-bound. Follow Decision 4 to find the "
     "pipe, then move work to other pipes or cut instructions on it."},
    {"lg_throttle",
     "The local/global memory instruction queue is full. Issue fewer, wider memory instructions "
     "(vector loads/stores), remove redundant global accesses and register spills, and interleave "
     "math between memory instructions."},
    {"tex_throttle",
     "The texture/surface queue is full. Issue fewer texture fetches, fetch wider data per call, "
     "or read through plain global loads where filtering is not needed."},
    {"mio_throttle",
     "The MIO queue (shared memory, special math, indirect branches) is full. Use fewer, wider "
     "shared-memory accesses, resolve bank conflicts and improve locality of scattered accesses."},
    {"barrier",
     "Warps idle at block barriers waiting for slower warps. Even out the work done before each "
     "__syncthreads(), move divergent work out of the barrier region, or use smaller blocks / "
     "warp-level synchronization."},
    {"membar",
     "Warps wait on memory fences. Remove fences that are not needed, narrow their scope "
     "(block instead of device or system) and keep them out of inner loops."},
    {"warpgroup_arrive",
     "Warps of a warp group wait for each other at warp-group MMA arrive/wait points: the four "
     "schedulers are out of step. Balance work across the warp group and align the TMA/MMA "
     "pipeline stages so no warp arrives late."},
    {"gmma",
     "Warps of a warp group wait for each other at warp-group MMA arrive/wait points: the four "
     "schedulers are out of step. Balance work across the warp group and align the TMA/MMA "
     "pipeline stages so no warp arrives late."},
    {"drain",
     "Exited warps wait for their outstanding stores to drain. Reduce or coalesce the stores at "
     "the end of the kernel (e.g. reduce before writing) and check for tail effects."},
    {"imc_miss",
     "Constant-cache misses. Keep the constants a warp reads few and adjacent, and avoid "
     "per-thread divergent indices into constant memory."},
    {"no_instruction",
     "Instruction fetch misses. Shrink the hot code (less unrolling or inlining in cold paths) or "
     "make the kernel run long enough for the instruction cache to warm up."},
    {"branch_resolving",
     "Warps wait for branch targets to resolve. Remove unnecessary branches (predication, "
     "branch-free arithmetic) and reduce divergent control flow."},
    {"sleeping",
     "Warps are sleeping or yielded (nanosleep, blocked threads). Sleep less often or for shorter "
     "periods, or replace spin-wait loops with a different synchronization scheme."},
    {"dispatch_stall",
     "Ready instructions are held back by the dispatcher. Rarely actionable from source; check the "
     "other stall reasons and pipe conflicts first."},
    {"misc",
     "A miscellaneous hardware stall dominates. Look at the hot source lines (Decision 6) to find "
     "which instructions carry it."},
};

// The stall-reason ratios GH100 exposes (ncu and CUPTI share these names).
constexpr std::string_view kStallMetricNames[] = {
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
};

struct StallBreakdown {
  std::vector<std::pair<std::string, double>> reasons;  // true stalls only, by reason
  double total = 0;
};

// Collects every stall-per-issue-active ratio present (by prefix, so other chips' reasons are
// included), minus selected/not_selected. Reads go through ctx so they become evidence.
StallBreakdown read_stalls(RuleContext& ctx) {
  StallBreakdown out;
  std::vector<std::string> names;
  const auto& all = ctx.metrics().all();
  for (auto it = all.lower_bound(kStallPrefix); it != all.end(); ++it) {
    std::string_view name = it->first;
    if (!starts_with(name, kStallPrefix)) break;
    if (ends_with(name, kStallSuffix)) names.emplace_back(name);
  }
  for (const std::string& name : names) {
    std::string_view reason = std::string_view(name).substr(
        kStallPrefix.size(), name.size() - kStallPrefix.size() - kStallSuffix.size());
    if (is_issue_state_not_stall(reason)) continue;
    std::optional<double> v = ctx.metric(name);
    if (!v || !std::isfinite(*v) || *v < 0) continue;
    out.reasons.emplace_back(std::string(reason), *v);
    out.total += *v;
  }
  return out;
}

std::vector<MetricNeed> stall_metric_needs() {
  std::vector<MetricNeed> out;
  for (std::string_view n : kStallMetricNames) out.push_back(MetricNeed{n, false});
  return out;
}

constexpr std::string_view kIssueActive = "smsp__issue_active.avg.per_cycle_active";
constexpr std::string_view kWarpsEligible = "smsp__warps_eligible.avg.per_cycle_active";
constexpr std::string_view kWarpsActive = "smsp__warps_active.avg.per_cycle_active";
constexpr std::string_view kAchievedOcc = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr std::string_view kTheoreticalOcc = "sm__maximum_warps_per_active_cycle_pct";
constexpr std::string_view kLimitRegisters = "launch__occupancy_limit_registers";
constexpr std::string_view kLimitShared = "launch__occupancy_limit_shared_mem";
constexpr std::string_view kLimitWarps = "launch__occupancy_limit_warps";
constexpr std::string_view kLimitBlocks = "launch__occupancy_limit_blocks";
constexpr std::string_view kLsuWavefronts =
    "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed";
constexpr std::string_view kSm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

Rule issue_starved() {
  return Rule{
      .id = "d3.issue_starved",
      .decision = Decision::kD3IssueStalls,
      .title = "Schedulers issue on too few cycles",
      .parent = {},
      .metrics = {{kIssueActive, true}},
      .thresholds = {{"starved", 0.5, "guide 3.2.5: below 0.5 issued instructions per active cycle "
                                      "per scheduler is issue-starved"},
                     {"severe", 0.2, "guide 3.2.5: below 0.2 is severely starved"}},
      .limiter = Limiter::kIssueStarvation,
      .finding = "Each scheduler issues an instruction on only a fraction of its active cycles.",
      .next_action =
          "Find out what the warps wait on: read the dominant stall reason and the eligible-warp "
          "count, then decide between hiding memory latency and reshaping the instruction stream.",
      .priority = 60,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double issue = ctx.required(kIssueActive);
        double starved = ctx.threshold("starved");
        double severe = ctx.threshold("severe");
        std::string reading = num(issue) + " instructions issued per active cycle per scheduler";
        if (!(issue < starved)) return RuleVerdict::not_fired(reading + " (>= " + num(starved) + ")");
        bool is_severe = issue < severe;
        RuleVerdict v = RuleVerdict::fired(
            reading + (is_severe ? " (< " + num(severe) + ": severely starved)"
                                 : " (< " + num(starved) + ": issue-starved)"),
            below(issue, starved));
        v.detail = is_severe ? "severe" : "starved";
        return v;
      },
  };
}

// The sampled stand-in for warps_eligible / warps_active: each PC sample catches one resident warp
// in one state, and a warp is eligible exactly when that state is selected (it issued) or
// not_selected (it could have), so the eligible share of all warp-state samples estimates the
// share of active warp-cycles spent eligible.
RuleVerdict sampled_eligible_share(RuleContext& ctx, const std::string& missing) {
  if (auto why = samples_unusable(ctx.kernel())) return RuleVerdict::not_evaluated(missing + "; " + *why);
  const SampleView view = aggregate_samples(*ctx.kernel().pc_samples);
  const auto states = static_cast<double>(view.warp_state_samples);
  ctx.note("pc_warp_state_samples", states, "sample");
  const double min_samples = ctx.threshold("min_samples");
  if (states < min_samples) {
    return RuleVerdict::not_evaluated(missing + "; only " + std::to_string(view.warp_state_samples) +
                                      " warp-state samples (< " + num(min_samples, 0) +
                                      "): too few for a sampled eligible share");
  }
  const uint64_t eligible = view.selected + view.not_selected;
  // No warp issued in any sample: the sampler was not asked for the issue states (a stall-reason
  // subset was configured), not a kernel that never issues.
  if (eligible == 0) {
    return RuleVerdict::not_evaluated(missing + "; the PC samples carry no selected or not_selected "
                                                "states to count eligible warps by");
  }
  const double ratio = static_cast<double>(eligible) / states;
  ctx.note("pc_sample_eligible_share", ratio);
  const double limit = ctx.threshold("eligible_to_active");
  std::string reading = "sampled: " + share_pct(ratio) + " of " + std::to_string(view.warp_state_samples) +
                        " warp-state samples found the warp eligible (selected " +
                        std::to_string(view.selected) + ", not_selected " +
                        std::to_string(view.not_selected) + ")" + sampled_launch_note(ctx.kernel()) +
                        ", standing in for eligible/active warps, which were not measured";
  if (!(ratio < limit)) return RuleVerdict::not_fired(reading + "; >= " + num(limit));
  RuleVerdict v = RuleVerdict::fired(reading + " (< " + num(limit) + ")", below(ratio, limit));
  v.detail = "sampled";
  return v;
}

Rule low_eligible_warps() {
  return Rule{
      .id = "d3.low_eligible_warps",
      .decision = Decision::kD3IssueStalls,
      .title = "Few of the active warps are eligible to issue",
      .parent = {},
      // Optional: without them the check falls back on the PC samples' eligible share.
      .metrics = {{kWarpsEligible, false}, {kWarpsActive, false}},
      .thresholds = {{"eligible_to_active", 0.5,
                      "guide 3.2.5: eligible/active below ~0.5 is a strong latency signal; "
                      "sampled: the share of samples in selected or not_selected"},
                     {"min_eligible", 4.0,
                      "guide 3.8.4: fewer than ~4 eligible warps per cycle starves the scheduler "
                      "(reported, raises severity; counters only)"},
                     {"min_samples", kMinStallSamples,
                      "project: the sampled share needs 100 warp-state samples (sampling error "
                      "sqrt(p(1-p)/n), 5 points at 50%)"}},
      .limiter = Limiter::kLowEligibleWarps,
      .finding = "Most resident warps are stalled on any given cycle.",
      .next_action =
          "Reduce what the warps stall on (see the dominant stall reason) and add independent "
          "work per warp (ILP) before adding more warps.",
      .priority = 55,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        std::optional<double> eligible_m = ctx.metric(kWarpsEligible);
        std::optional<double> active_m = ctx.metric(kWarpsActive);
        if (!eligible_m || !active_m) {
          std::string missing = "missing ";
          if (!eligible_m) missing += std::string(kWarpsEligible);
          if (!active_m) missing += std::string(eligible_m ? "" : ", ") + std::string(kWarpsActive);
          return sampled_eligible_share(ctx, missing);
        }
        double eligible = *eligible_m;
        double active = *active_m;
        if (!(active > 0)) return RuleVerdict::not_evaluated("no active warps measured");
        double ratio = eligible / active;
        ctx.note("eligible_to_active_warps", ratio);
        double limit = ctx.threshold("eligible_to_active");
        double min_eligible = ctx.threshold("min_eligible");
        std::string reading = num(eligible) + " eligible of " + num(active) +
                              " active warps per cycle per scheduler (ratio " + num(ratio) + ")";
        if (!(ratio < limit)) return RuleVerdict::not_fired(reading + ", >= " + num(limit));
        double severity = below(ratio, limit);
        if (eligible < min_eligible) {
          reading += "; fewer than " + num(min_eligible, 0) + " eligible warps per cycle";
          severity += below(eligible, min_eligible);
        }
        return RuleVerdict::fired(reading + " (< " + num(limit) + ")", severity);
      },
  };
}

// Lines named for the dominant reason: the hottest always, then up to two more.
constexpr size_t kMaxStallSites = 3;

// A fired dominant-stall verdict tied to its lines: where the reason's samples sit (top sites with
// their counts), and a next action that starts there. For scoreboard waits the action names the
// consuming instruction the samples sit on and the likely producer.
RuleVerdict dominant_stall_verdict(RuleContext& ctx, std::string reading, double severity,
                                   const std::string& reason, const SampleView* view,
                                   const std::optional<std::string>& no_lines) {
  std::vector<ReasonSite> sites;
  if (view != nullptr) sites = sites_of_reason(*view, reason, kMaxStallSites, ctx.threshold("site_min_share"));
  std::optional<std::string> action;
  if (auto a = stall_next_action(reason)) action = std::string(*a);
  if (!sites.empty()) {
    std::string where;
    for (const ReasonSite& s : sites) {
      where += (where.empty() ? "" : ", ") + s.location->key + " (" + std::to_string(s.samples) +
               " samples, " + share_pct(s.share) + ")";
      ctx.note("pc_samples." + reason + "@" + s.location->key, static_cast<double>(s.samples), "sample");
    }
    reading += "; its samples sit on " + where + line_info_note(*view);
    std::string at = "At " + describe_location(*sites.front().location);
    if (sites.size() > 1) {
      at += " (then ";
      for (size_t i = 1; i < sites.size(); ++i) at += (i > 1 ? ", " : "") + sites[i].location->key;
      at += ")";
    }
    std::string producer = consumer_producer_note(*ctx.kernel().pc_samples, sites.front(), reason);
    action = at + ": " + (producer.empty() ? "" : producer + " ") +
             action.value_or("Find what the '" + reason + "' stall waits on there.");
  } else if (no_lines) {
    reading += "; lines not named: " + *no_lines;
  } else if (view != nullptr) {
    reading += "; the PC samples hold no " + reason + " samples to place it on lines";
  }
  RuleVerdict v = RuleVerdict::fired(std::move(reading), severity);
  v.detail = reason;
  v.next_action = std::move(action);  // unset: the rule's generic action
  return v;
}

// Decides from the PC samples alone (no stall-reason ratios measured).
RuleVerdict dominant_stall_from_samples(RuleContext& ctx, const SampleView& view, double limit,
                                        double min_ratio) {
  const SampledReason top = *dominant_sampled_reason(view);  // the caller checked for stalls
  ctx.note("pc_sample_stall_share." + top.reason, top.share);
  std::string reading = top.reason + " holds " + share_pct(top.share) + " of " +
                        std::to_string(view.stall_samples) + " stall samples (" +
                        std::to_string(top.samples) + "; PC sampling" +
                        sampled_launch_note(ctx.kernel()) + ", no stall-reason ratios measured)";
  if (!(top.share > limit)) return RuleVerdict::not_fired(reading + "; no reason above " + share_pct(limit));
  reading += " (> " + share_pct(limit) + ")";
  // Samples of a reason per `selected` sample estimate the warps stalled on it per issued
  // instruction: one warp is selected on each issue cycle.
  if (view.selected > 0) {
    const double per_issue = static_cast<double>(top.samples) / static_cast<double>(view.selected);
    ctx.note("pc_sample_" + top.reason + "_per_selected", per_issue);
    reading += ", " + num(per_issue) + " per selected sample";
    if (!(per_issue > min_ratio)) {
      return RuleVerdict::not_fired(reading + ", not above " + num(min_ratio) +
                                    ": stalls are not what limits issue");
    }
  }
  return dominant_stall_verdict(ctx, reading, above(top.share, limit), top.reason, &view, std::nullopt);
}

RuleVerdict eval_dominant_stall(RuleContext& ctx) {
  StallBreakdown stalls = read_stalls(ctx);
  SampleView view;
  const std::optional<std::string> no_samples = read_stall_samples(ctx, view);
  double limit = ctx.threshold("dominant_share");
  double min_ratio = ctx.threshold("min_per_issue");
  if (stalls.reasons.empty()) {
    if (no_samples) {
      return RuleVerdict::not_evaluated(
          "missing smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio (no "
          "stall-reason ratios measured), and " + *no_samples);
    }
    return dominant_stall_from_samples(ctx, view, limit, min_ratio);
  }
  if (!(stalls.total > 0)) return RuleVerdict::not_fired("no stall cycles measured");
  auto top = std::max_element(stalls.reasons.begin(), stalls.reasons.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  double share = top->second / stalls.total;
  ctx.note("stall_total_per_issue_active", stalls.total);
  ctx.note("stall_share." + top->first, share);
  std::string reading = top->first + " holds " + share_pct(share) + " of stalls (" +
                        num(top->second) + " of " + num(stalls.total) +
                        " warps stalled per issued instruction)";
  // The ratios decide (exact counts over the whole launch); the samples are a statistical view,
  // possibly of another launch. When they name another reason first, the reading says so.
  if (!no_samples) {
    const SampledReason sampled = *dominant_sampled_reason(view);
    auto it = view.stalls_by_reason.find(top->first);
    const double same = it == view.stalls_by_reason.end()
                            ? 0.0
                            : static_cast<double>(it->second) / static_cast<double>(view.stall_samples);
    ctx.note("pc_sample_stall_share." + top->first, same);
    if (sampled.reason == top->first) {
      reading += "; PC samples agree (" + share_pct(same) + " of " + std::to_string(view.stall_samples) +
                 " stall samples)";
    } else {
      ctx.note("pc_sample_stall_share." + sampled.reason, sampled.share);
      reading += "; PC samples disagree: they put " + sampled.reason + " first (" +
                 share_pct(sampled.share) + " of " + std::to_string(view.stall_samples) +
                 " stall samples" + sampled_launch_note(ctx.kernel()) + ") and " + top->first +
                 " at " + share_pct(same);
    }
  }
  if (!(share > limit)) {
    return RuleVerdict::not_fired(reading + "; no reason above " + share_pct(limit));
  }
  if (!(top->second > min_ratio)) {
    return RuleVerdict::not_fired(reading + "; its ratio is not above " + num(min_ratio) +
                                  ", so stalls are not what limits issue");
  }
  // Lines are named from the samples; when there are none at all (an ncu CSV) nothing is said,
  // Decision 6 reports that once. Samples that failed or are too few are named.
  std::optional<std::string> no_lines;
  if (no_samples && ctx.kernel().pc_samples) no_lines = no_samples;
  return dominant_stall_verdict(ctx, reading + " (> " + share_pct(limit) + ")", above(share, limit),
                                top->first, no_samples ? nullptr : &view, no_lines)
      .decided_by("stall_share." + top->first, "dominant_share");
}

Rule dominant_stall() {
  return Rule{
      .id = "d3.dominant_stall",
      .decision = Decision::kD3IssueStalls,
      .title = "One stall reason dominates",
      .parent = {},
      .metrics = stall_metric_needs(),
      .thresholds = {{"dominant_share", 0.30,
                      "guide 3.8.2: flag a reason holding more than ~30% of all stalls "
                      "(selected and not_selected excluded); of stall samples when only PC "
                      "samples were collected"},
                     {"min_per_issue", 1.0,
                      "guide 3.2.5: the reason's stalled-warps-per-issue ratio must be well "
                      "above 1 to matter; 1 is the floor used (sampled: its samples per "
                      "selected sample)"},
                     min_stall_samples_threshold(),
                     {"site_min_share", 0.05,
                      "project: beside the hottest line, a line is named only when it holds at "
                      "least 5% of the dominant reason's samples (as "
                      "d6.focused_stall_on_line.min_line_share)"}},
      .limiter = Limiter::kStallDominant,
      .finding = "A single stall reason accounts for most of the cycles warps cannot issue.",
      .next_action = "Act on the dominant stall reason (see detail).",
      .priority = 40,
      .blocking = false,
      .evaluate = eval_dominant_stall,
  };
}

Rule warp_divergence() {
  return Rule{
      .id = "d3.warp_divergence",
      .decision = Decision::kD3IssueStalls,
      .title = "Warps run with many lanes inactive",
      .parent = {},
      .metrics = {{kThreadsPerInst, true}},
      .thresholds = {{"min_threads", 24.0,
                      "guide 3.2.5: below ~24 active threads per executed instruction (of 32)"}},
      .limiter = Limiter::kWarpDivergence,
      .finding = "Divergent control flow leaves many lanes of each warp idle.",
      .next_action =
          "Make the threads of a warp take the same path: regroup data or work so branch "
          "conditions are uniform per warp, hoist divergent work into separate passes or kernels, "
          "and keep warp-collective calls outside per-lane conditions.",
      .priority = 25,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double threads = ctx.required(kThreadsPerInst);
        double limit = ctx.threshold("min_threads");
        std::string reading = num(threads, 1) + " active threads per executed warp instruction (" +
                              share_pct(threads / 32.0) + " lane efficiency)";
        if (!(threads < limit)) return RuleVerdict::not_fired(reading + ", >= " + num(limit, 0));
        return RuleVerdict::fired(reading + " (< " + num(limit, 0) + ")", below(threads, limit));
      },
  };
}

Rule predication() {
  return Rule{
      .id = "d3.predication_overhead",
      .decision = Decision::kD3IssueStalls,
      .title = "Many executing threads are predicated off",
      .parent = {},
      .metrics = {{kPredOnPerInst, true}, {kThreadsPerInst, false}},
      .thresholds = {{"min_threads", 24.0,
                      "guide 3.2.5: below ~24 predicated-on threads per executed instruction"},
                     {"min_predicated_off", 2.0,
                      "project: with the active-thread ratio known, at least 2 lanes per "
                      "instruction must be predicated off; otherwise divergence explains it"}},
      .limiter = Limiter::kPredication,
      .finding = "Issued instructions do work for few lanes because the rest are predicated off.",
      .next_action =
          "Cut predicated-off work: replace guarded instruction sequences with uniform ones, move "
          "bounds and tail handling out of the main loop, and regroup data so guards agree "
          "across a warp.",
      .priority = 28,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double pred_on = ctx.required(kPredOnPerInst);
        double limit = ctx.threshold("min_threads");
        std::string reading = num(pred_on, 1) + " predicated-on threads per executed instruction";
        if (!(pred_on < limit)) return RuleVerdict::not_fired(reading + ", >= " + num(limit, 0));
        if (auto active = ctx.metric(kThreadsPerInst)) {
          double off = *active - pred_on;
          ctx.note("predicated_off_threads_per_inst", off);
          double min_off = ctx.threshold("min_predicated_off");
          reading += " of " + num(*active, 1) + " active (" + num(off, 1) + " predicated off)";
          if (!(off >= min_off)) {
            return RuleVerdict::not_fired(reading + "; the loss is divergence, not predication");
          }
        }
        return RuleVerdict::fired(reading + " (< " + num(limit, 0) + ")", below(pred_on, limit));
      },
  };
}

struct LimitChoice {
  Limiter limiter;
  std::string_view name;
  std::string_view action;
};

Rule occupancy_resource_limit() {
  return Rule{
      .id = "d3.occupancy_resource_limit",
      .decision = Decision::kD3IssueStalls,
      .title = "A launch resource caps occupancy",
      .parent = {},
      .metrics = {{kTheoreticalOcc, true},
                  {kLimitRegisters, true},
                  {kLimitShared, true},
                  {kLimitWarps, true},
                  {kLimitBlocks, true},
                  {kAchievedOcc, false}},
      .thresholds = {{"theoretical_pct", 50.0,
                      "project: theoretical occupancy below half the warp slots leaves too few "
                      "warps to hide latency (guide 3.8.1 names the resources, not a number)"}},
      .limiter = Limiter::kOccupancyRegisters,
      .finding = "Theoretical occupancy is capped by one launch resource.",
      .next_action = "Reduce use of the limiting resource (see detail).",
      .priority = 30,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double theoretical = ctx.required(kTheoreticalOcc);
        double limit = ctx.threshold("theoretical_pct");
        // Blocks per SM each resource allows; the smallest is the limiter. Ties go in the order
        // the launch arithmetic uses (warps, blocks, registers, shared memory), and its own
        // verdict wins when the engine passed it in.
        const LimitChoice choices[] = {
            {Limiter::kOccupancyWarpSlots, "warp_slots",
             "Large blocks fill the warp slots with few blocks: try smaller blocks so more, "
             "independent blocks can be resident."},
            {Limiter::kOccupancyBlockSlots, "block_slots",
             "The per-SM block limit is reached with small blocks: use larger blocks (more warps "
             "each) so the warp slots can fill."},
            {Limiter::kOccupancyRegisters, "registers",
             "Registers per thread cap resident warps: lower them (__launch_bounds__, "
             "-maxrregcount, shorter live ranges) down to the next occupancy step, and check that "
             "spills do not appear."},
            {Limiter::kOccupancySharedMemory, "shared_memory",
             "Shared memory per block caps resident blocks: shrink the per-block allocation "
             "(smaller tiles, fewer stages, reuse buffers) or raise the carve-out."},
        };
        const double limits[] = {ctx.required(kLimitWarps), ctx.required(kLimitBlocks),
                                 ctx.required(kLimitRegisters), ctx.required(kLimitShared)};
        size_t best = 0;
        for (size_t i = 1; i < 4; ++i) {
          if (limits[i] < limits[best]) best = i;
        }
        if (const auto& launch = ctx.launch()) {
          switch (launch->limiter) {
            case OccupancyLimiter::kWarpSlots: best = 0; break;
            case OccupancyLimiter::kBlockSlots: best = 1; break;
            case OccupancyLimiter::kRegisters: best = 2; break;
            case OccupancyLimiter::kSharedMemory: best = 3; break;
            default: break;
          }
        }
        std::string reading = "theoretical occupancy " + num(theoretical, 1) + "%, limited by " +
                              std::string(choices[best].name) + " (" + num(limits[best], 0) +
                              (limits[best] == 1 ? " block" : " blocks") + " per SM; warps " + num(limits[0], 0) + ", blocks " +
                              num(limits[1], 0) + ", registers " + num(limits[2], 0) + ", shared " +
                              num(limits[3], 0) + ")";
        if (auto achieved = ctx.metric(kAchievedOcc)) {
          reading += ", achieved " + num(*achieved, 1) + "%";
        }
        if (!(theoretical < limit)) return RuleVerdict::not_fired(reading + "; >= " + num(limit, 0) + "%");
        RuleVerdict v = RuleVerdict::fired(reading + " (< " + num(limit, 0) + "%)",
                                           below(theoretical, limit));
        v.limiter = choices[best].limiter;
        v.detail = std::string(choices[best].name);
        v.next_action = std::string(choices[best].action);
        return v;
      },
  };
}

Rule achieved_below_theoretical() {
  return Rule{
      .id = "d3.achieved_below_theoretical",
      .decision = Decision::kD3IssueStalls,
      .title = "Achieved occupancy falls well short of theoretical",
      .parent = {},
      .metrics = {{kAchievedOcc, true}, {kTheoreticalOcc, true}},
      .thresholds = {{"achieved_to_theoretical", 0.8,
                      "project: achieved below 80% of theoretical counts as 'well below' "
                      "(guide 3.2.5 gives no number)"}},
      .limiter = Limiter::kLowAchievedOccupancy,
      .finding = "Warp slots that the launch allows stay empty for much of the run.",
      .next_action =
          "Look for load imbalance and tail effects: uneven work per block, a last partial wave, "
          "early-exiting warps, or per-block setup cost. Split work into more, smaller blocks or "
          "balance it across blocks.",
      .priority = 32,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double achieved = ctx.required(kAchievedOcc);
        double theoretical = ctx.required(kTheoreticalOcc);
        if (!(theoretical > 0)) return RuleVerdict::not_evaluated("theoretical occupancy is 0");
        double ratio = achieved / theoretical;
        ctx.note("achieved_to_theoretical_occupancy", ratio);
        double limit = ctx.threshold("achieved_to_theoretical");
        std::string reading = "achieved occupancy " + num(achieved, 1) + "% is " + share_pct(ratio) +
                              " of the theoretical " + num(theoretical, 1) + "%";
        if (!(ratio < limit)) return RuleVerdict::not_fired(reading + " (>= " + share_pct(limit) + ")");
        return RuleVerdict::fired(reading + " (< " + share_pct(limit) + ")", below(ratio, limit));
      },
  };
}

Rule bytes_in_flight() {
  return Rule{
      .id = "d3.bytes_in_flight",
      .decision = Decision::kD3IssueStalls,
      .title = "Too few bytes in flight to use the memory system",
      .parent = {},
      .metrics = {{kMemThroughput, true},
                  {kDram, false},
                  {kGpuDram, false},
                  {kL2, false},
                  {kL1, false},
                  {kLsuWavefronts, false},
                  {kSm, false},
                  {kLdSectors, false},
                  {kLdRequests, false},
                  {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                   false}},
      .thresholds = {{"dram_low_pct", 60.0,
                      "guide 3.2.3: below ~60% of peak is low; 3.6.2: DRAM well below peak"},
                     {"unit_busy_pct", 60.0,
                      "guide 3.6.2: no SM pipe, L1TEX or L2 near saturation; 60% is the "
                      "guide's low/high boundary"},
                     {"min_long_scoreboard_share", 0.25,
                      "project: when stall reasons are measured (ratios, else PC samples), "
                      "long_scoreboard must hold at least a quarter of the stalls for memory "
                      "latency to be the story"},
                     min_stall_samples_threshold()},
      .limiter = Limiter::kBytesInFlight,
      .finding = "Memory is far from busy yet warps wait on it: not enough requests are in flight.",
      .next_action =
          "Keep more loads outstanding: have each thread load several independent elements "
          "before using any (unroll), use 16-byte vector loads, issue loads early and consume "
          "late, raise occupancy, or stage data with cp.async/TMA or L2 prefetch.",
      .priority = 35,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double memory = ctx.required(kMemThroughput);
        std::optional<double> dram = ctx.metric(kDram);
        if (!dram) dram = ctx.metric(kGpuDram);
        if (!dram) {
          return RuleVerdict::not_evaluated("missing " + std::string(kDram) + " (or " +
                                            std::string(kGpuDram) + ")");
        }
        double dram_low = ctx.threshold("dram_low_pct");
        double busy = ctx.threshold("unit_busy_pct");
        std::string reading = "DRAM " + num(*dram, 1) + "%, compute-memory " + num(memory, 1) + "%";
        if (!(*dram < dram_low)) {
          return RuleVerdict::not_fired(reading + ": DRAM is not well below peak (>= " +
                                        num(dram_low, 0) + "%)");
        }
        std::vector<std::string> busy_units;
        if (memory >= busy) busy_units.emplace_back("compute-memory " + num(memory, 1) + "%");
        const std::pair<std::string_view, std::string_view> units[] = {
            {kL2, "L2"}, {kL1, "L1TEX"}, {kLsuWavefronts, "LSU wavefronts"}, {kSm, "SM"}};
        for (const auto& [name, label] : units) {
          if (auto v = ctx.metric(name)) {
            reading += ", " + std::string(label) + " " + num(*v, 1) + "%";
            if (*v >= busy) busy_units.push_back(std::string(label));
          }
        }
        if (!busy_units.empty()) {
          std::string list;
          for (const auto& u : busy_units) list += (list.empty() ? "" : ", ") + u;
          return RuleVerdict::not_fired(reading + ": a unit is busy (" + list + " >= " +
                                        num(busy, 0) + "%)");
        }
        StallBreakdown stalls = read_stalls(ctx);
        std::optional<double> ls_share;
        if (stalls.total > 0) {
          double ls = 0;
          for (const auto& [reason, value] : stalls.reasons) {
            if (reason == "long_scoreboard") ls = value;
          }
          ls_share = ls / stalls.total;
          ctx.note("long_scoreboard_share", *ls_share);
          reading += ", long_scoreboard " + share_pct(*ls_share) + " of stalls";
        } else {
          SampleView view;
          if (auto why = read_stall_samples(ctx, view)) {
            reading += " (stall reasons not measured";
            if (ctx.kernel().pc_samples) reading += "; PC samples unusable: " + *why;
            reading += ")";
          } else {
            auto it = view.stalls_by_reason.find("long_scoreboard");
            const uint64_t ls = it == view.stalls_by_reason.end() ? 0 : it->second;
            ls_share = static_cast<double>(ls) / static_cast<double>(view.stall_samples);
            ctx.note("pc_sample_long_scoreboard_share", *ls_share);
            reading += ", long_scoreboard " + share_pct(*ls_share) + " of " +
                       std::to_string(view.stall_samples) + " stall samples (PC sampling)";
          }
        }
        if (ls_share) {
          double min_share = ctx.threshold("min_long_scoreboard_share");
          if (!(*ls_share >= min_share)) {
            return RuleVerdict::not_fired(reading + ": warps are not mainly waiting on memory (< " +
                                          share_pct(min_share) + ")");
          }
        }
        auto sectors = ctx.metric(kLdSectors);
        auto requests = ctx.metric(kLdRequests);
        if (sectors && requests && *requests > 0) {
          double spr = *sectors / *requests;
          ctx.note("global_load_sectors_per_request", spr);
          reading += ", " + num(spr) + " sectors per load request" +
                     (spr > 4 ? " (uncoalesced: fix that first)" : "");
        }
        return RuleVerdict::fired(reading, below(*dram, dram_low));
      },
  };
}

}  // namespace

std::string_view canonical_stall_reason(std::string_view raw) {
  constexpr std::string_view prefixes[] = {"smsp__average_warps_issue_stalled_",
                                           "smsp__pcsamp_warps_issue_stalled_",
                                           "smsp__warps_issue_stalled_",
                                           "warps_issue_stalled_", "stalled_"};
  for (std::string_view p : prefixes) {
    if (starts_with(raw, p)) {
      raw.remove_prefix(p.size());
      break;
    }
  }
  constexpr std::string_view suffixes[] = {"_not_issued", "_per_issue_active.ratio",
                                           "_per_warp_active.ratio"};
  for (std::string_view s : suffixes) {
    if (ends_with(raw, s)) {
      raw.remove_suffix(s.size());
      break;
    }
  }
  // PC sampling says no_instructions where the counters say no_instruction: one name, so that the
  // ratios and the samples can be compared.
  if (raw == "no_instructions") return "no_instruction";
  return raw;
}

bool is_issue_state_not_stall(std::string_view reason) {
  reason = canonical_stall_reason(reason);
  return reason == "selected" || reason == "not_selected";
}

std::optional<std::string_view> stall_next_action(std::string_view reason) {
  reason = canonical_stall_reason(reason);
  for (const StallAction& a : kStallActions) {
    if (a.reason == reason) return a.action;
  }
  return std::nullopt;
}

std::vector<Rule> make_d3_rules() {
  std::vector<Rule> rules;
  rules.push_back(issue_starved());
  rules.push_back(low_eligible_warps());
  rules.push_back(dominant_stall());
  rules.push_back(warp_divergence());
  rules.push_back(predication());
  rules.push_back(occupancy_resource_limit());
  rules.push_back(achieved_below_theoretical());
  rules.push_back(bytes_in_flight());
  return rules;
}

}  // namespace cutriage::triage::detail
