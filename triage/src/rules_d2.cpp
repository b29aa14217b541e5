// Decision 2: latency-limited or throughput-limited? (guide 3.2.3)
//
// d2.compute_memory_balance and d2.occupancy_utilization_quadrant are classifiers: they fire
// whenever they can be evaluated and carry their class in Finding::detail (names in
// engine_regime.h); the engine routes on that detail. Their priorities are the highest numbers of
// the decision so a real finding always wins over them as the headline.
#include <algorithm>
#include <string>

#include "engine_regime.h"
#include "metric_names.h"
#include "registry.h"
#include "rule_helpers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kSysmemSectors = "lts__t_sectors_aperture_sysmem.sum";
constexpr std::string_view kPeerSectors = "lts__t_sectors_aperture_peer.sum";
constexpr std::string_view kAllSectors = "lts__t_sectors.sum";
constexpr std::string_view kPcieRead = "pcie__read_bytes.sum";
constexpr std::string_view kPcieWrite = "pcie__write_bytes.sum";
// Timeline quantities of a future PM-sampling collector (see rules_d2a.cpp).

RuleVerdict eval_balance(RuleContext& ctx) {
  const double sm = ctx.required(kSmThroughput);
  const double mem = ctx.required(kMemThroughput);
  const double low = ctx.threshold("low_pct");
  const double high = ctx.threshold("high_pct");
  const double gap = ctx.threshold("dominance_gap_pct");
  const Regime r = classify_regime(sm, mem, low, high, gap);
  std::string reading = "SM throughput " + pct(sm) + ", memory throughput " + pct(mem) + ": ";
  switch (r) {
    case Regime::kBothHigh: reading += "both at or above " + pct(high, 0) + " (near the limit)"; break;
    case Regime::kBothLow: reading += "both below " + pct(low, 0) + " (latency-risk regime)"; break;
    case Regime::kComputeDominant: reading += "compute leads memory by more than " + fmt(gap, 0) + " points"; break;
    case Regime::kMemoryDominant: reading += "memory leads compute by more than " + fmt(gap, 0) + " points"; break;
    case Regime::kAmbiguous: reading += "neither clearly low, high nor dominant (ambiguous)"; break;
    case Regime::kUnknown: break;
  }
  RuleVerdict v = RuleVerdict::fired(reading, 0.0);
  v.detail = std::string(regime_name(r));
  return v;
}

RuleVerdict eval_issue(RuleContext& ctx) {
  const double issue = ctx.required(kIssueActivePct);
  const double limit = ctx.threshold("min_issue_pct");
  std::optional<double> sm = ctx.metric(kSmThroughput);
  std::string reading = "schedulers issue on " + pct(issue) + " of active cycles";
  if (sm) reading += " (SM throughput " + pct(*sm) + ")";
  if (!(issue < limit)) return RuleVerdict::not_fired(reading + ", not below " + pct(limit, 0));
  RuleVerdict v = RuleVerdict::fired(reading + ", below " + pct(limit, 0) + ": severe issue starvation",
                                     (limit - issue) / limit);
  if (sm && *sm >= 60.0) v.detail = "a pipe is busy while issue is low: slow-pipe or memory-pipe limited";
  return v;
}

RuleVerdict eval_aperture(RuleContext& ctx) {
  const double mem_high = ctx.threshold("memory_high_pct");
  const double dram_low = ctx.threshold("dram_low_pct");
  const double share_limit = ctx.threshold("aperture_share_pct");
  std::optional<double> mem = ctx.metric(kMemThroughput);
  std::optional<double> dram = ctx.metric(kGpuDram);
  if (!dram) dram = ctx.metric(kDram);
  if (!mem || !dram) {
    return RuleVerdict::not_evaluated("needs gpu__compute_memory_throughput and a DRAM throughput");
  }
  std::string reading = "memory throughput " + pct(*mem) + ", DRAM " + pct(*dram);
  if (!(*mem >= mem_high && *dram < dram_low)) {
    return RuleVerdict::not_fired(reading + ": not the high-memory / low-DRAM shape of off-device traffic");
  }
  std::optional<double> sys = ctx.metric(kSysmemSectors);
  std::optional<double> peer = ctx.metric(kPeerSectors);
  std::optional<double> all = ctx.metric(kAllSectors);
  std::optional<double> pr = ctx.metric(kPcieRead);
  std::optional<double> pw = ctx.metric(kPcieWrite);
  if ((sys || peer) && all && *all > 0) {
    const double share = 100.0 * (sys.value_or(0) + peer.value_or(0)) / *all;
    ctx.note("cutriage__l2_sector_share_sysmem_peer_pct", share, "%");
    reading += "; sysmem+peer carry " + pct(share) + " of L2 sectors";
    if (share > share_limit) {
      return RuleVerdict::fired(reading + " (> " + pct(share_limit, 0) + ")", share / share_limit - 1.0);
    }
    return RuleVerdict::not_fired(reading);
  }
  if (pr || pw) {
    const double bytes = pr.value_or(0) + pw.value_or(0);
    if (bytes > 0) {
      return RuleVerdict::fired(reading + "; " + count(bytes) + " bytes crossed PCIe during the kernel",
                                0.5);
    }
    return RuleVerdict::not_fired(reading + "; no PCIe traffic");
  }
  return RuleVerdict::not_evaluated(reading + ", but neither L2 aperture sectors nor PCIe bytes were collected");
}

RuleVerdict eval_dispatch(RuleContext& ctx) {
  std::optional<double> gap = ctx.metric(kDispatchGapPct);
  std::optional<double> idle = ctx.metric(kGpuIdlePct);
  if (!gap && !idle) {
    return RuleVerdict::not_evaluated("no PM-sampling timeline was collected (dispatch and idle "
                                      "rows are needed)");
  }
  const double limit = ctx.threshold("max_gap_pct");
  const double worst = std::max(gap.value_or(0), idle.value_or(0));
  std::string reading;
  if (gap) reading = "dispatch-to-launch gaps " + pct(*gap) + " of active time";
  if (idle) reading += std::string(reading.empty() ? "" : ", ") + "idle/wait " + pct(*idle) + " of the range";
  if (worst > limit) return RuleVerdict::fired(reading + " (> " + pct(limit, 0) + ")", worst / limit - 1.0);
  return RuleVerdict::not_fired(reading);
}

RuleVerdict eval_quadrant(RuleContext& ctx) {
  const double sm = ctx.required(kSmThroughput);
  const double util = sm;  // SM pipeline utilization (guide 3.2.3: "peak pipeline SOL")
  const std::optional<double> occupancy = ctx.metric(kAchievedOccupancy);
  if (!occupancy) {
    // Utilization alone picks the half of the 2x2, and both quadrants of a half route the same
    // way (engine_regime.h); the reading says the occupancy was not measured.
    const double util_t = ctx.threshold("utilization_pct");
    const bool high = util >= util_t;
    RuleVerdict v = RuleVerdict::fired(
        std::string(high ? "high" : "low") + " SM utilization (" + pct(util) + (high ? " >= " : " < ") +
            pct(util_t, 0) + ") with the achieved occupancy not measured (" + std::string(kAchievedOccupancy) +
            "): either " + (high ? "high" : "low") + "-utilization quadrant routes the kernel the same way",
        0.0);
    v.detail = std::string(quadrant_name(high ? Quadrant::kUnknownOccHighUtil : Quadrant::kUnknownOccLowUtil));
    return std::move(v).decided_by(std::string(kSmThroughput), "utilization_pct");
  }
  const double occ = *occupancy;
  const double occ_t = ctx.threshold("occupancy_pct");
  const double util_t = ctx.threshold("utilization_pct");
  const Quadrant q = classify_quadrant(occ, util, occ_t, util_t);
  std::string reading = std::string(occ >= occ_t ? "high" : "low") + " occupancy (" + pct(occ) + ") with " +
                        (util >= util_t ? "high" : "low") + " SM utilization (" + pct(util) + ")";
  switch (q) {
    case Quadrant::kLowOccLowUtil: reading += ": underfilled, or a resource caps resident warps"; break;
    case Quadrant::kLowOccHighUtil: reading += ": the few warps already keep a unit busy; more warps would compete for it"; break;
    case Quadrant::kHighOccLowUtil: reading += ": warps are resident but not issuing (latency-bound)"; break;
    case Quadrant::kHighOccHighUtil: reading += ": the SM is saturated"; break;
    case Quadrant::kUnknownOccLowUtil:
    case Quadrant::kUnknownOccHighUtil:
    case Quadrant::kUnknown: break;
  }
  RuleVerdict v = RuleVerdict::fired(reading, 0.0);
  v.detail = std::string(quadrant_name(q));
  if (q == Quadrant::kLowOccLowUtil) v.limiter = Limiter::kLowAchievedOccupancy;
  return v;
}

}  // namespace

std::vector<Rule> make_d2_rules() {
  std::vector<Rule> rules;
  rules.push_back(Rule{
      .id = "d2.compute_memory_balance",
      .decision = Decision::kD2Regime,
      .title = "SM and memory throughput compared",
      .parent = {},
      .metrics = {{kSmThroughput, true}, {kMemThroughput, true}},
      .thresholds = {{"low_pct", 60.0, "guide 3.2.3: below ~60% is low"},
                     {"high_pct", 80.0, "guide 3.2.3: above ~80% is high"},
                     {"dominance_gap_pct", 20.0,
                      "cutriage: one side 'dominates' ('>>') when it leads by more than this many "
                      "percentage points"}},
      .finding = "Classifies the kernel's regime from SM and memory throughput.",
      .next_action = "Follow the regime's decision.",
      .priority = 95,
      .evaluate = eval_balance,
  });
  rules.push_back(Rule{
      .id = "d2.issue_starvation",
      .decision = Decision::kD2Regime,
      .title = "Schedulers issue often enough",
      .parent = {},
      .metrics = {{kIssueActivePct, true}, {kSmThroughput, false}},
      .thresholds = {{"min_issue_pct", 20.0, "guide 3.2.3: below ~20% is severe issue starvation"}},
      .limiter = Limiter::kIssueStarvation,
      .finding = "Warp schedulers sit idle most cycles: nothing is ready to issue.",
      .next_action = "Find what the warps wait on (Decision 3 stall breakdown) and add independent "
                     "work per warp or more warps.",
      .priority = 30,
      .evaluate = eval_issue,
  });
  rules.push_back(Rule{
      .id = "d2.sysmem_peer_traffic",
      .decision = Decision::kD2Regime,
      .title = "Memory traffic targets device DRAM, not system or peer memory",
      .parent = {},
      .metrics = {{kMemThroughput, false},
                  {kGpuDram, false},
                  {kDram, false},
                  {kSysmemSectors, false},
                  {kPeerSectors, false},
                  {kAllSectors, false},
                  {kPcieRead, false},
                  {kPcieWrite, false}},
      .thresholds = {{"memory_high_pct", 60.0, "memory system busy (guide 3.2.3 'high' starts at ~60-80%)"},
                     {"dram_low_pct", 40.0, "DRAM clearly below the memory system's load"},
                     {"aperture_share_pct", 10.0, "share of L2 sectors to sysmem/peer that counts as dominant"}},
      .limiter = Limiter::kSysmemPeerTraffic,
      .finding = "Memory traffic goes to system or peer memory over the interconnect.",
      .next_action = "Keep hot data in device memory (explicit copies or prefetch of managed "
                     "memory) and avoid zero-copy access in the kernel's inner loop.",
      .priority = 20,
      .evaluate = eval_aperture,
  });
  rules.push_back(Rule{
      .id = "d2.dispatch_gaps",
      .decision = Decision::kD2Regime,
      .title = "No dispatch, queue or synchronization gaps on the timeline",
      .parent = {},
      .metrics = {{kDispatchGapPct, false}, {kGpuIdlePct, false}},
      .thresholds = {{"max_gap_pct", 10.0, "guide 3.2.4: idle or wait above ~10% of the range"}},
      .limiter = Limiter::kDispatchGaps,
      .finding = "The timeline shows the GPU waiting on dispatch or synchronization.",
      .next_action = "Investigate orchestration first (Decision 2A).",
      .priority = 25,
      .evaluate = eval_dispatch,
  });
  rules.push_back(Rule{
      .id = "d2.occupancy_utilization_quadrant",
      .decision = Decision::kD2Regime,
      .title = "Occupancy versus utilization quadrant",
      .parent = {},
      .metrics = {{kAchievedOccupancy, false}, {kSmThroughput, true}},
      .thresholds = {{"occupancy_pct", 60.0, "guide 3.2.3: achieved occupancy >= 60% is high"},
                     {"utilization_pct", 60.0, "guide 3.2.3: peak pipeline SOL >= 60% is high"}},
      .finding = "Places the kernel in the occupancy x utilization 2x2.",
      .next_action = "Follow the quadrant's decision.",
      .priority = 90,
      .evaluate = eval_quadrant,
  });
  return rules;
}

}  // namespace cutriage::triage::detail
