// What to measure: the counters a collector has to read for the rules of given decisions, and,
// after a first diagnosis, the counters the route still lacks. This is how the decision tree
// drives adaptive collection: the first profiled launch of a kernel reads what Decisions 0-2 need,
// its route names the decisions it visited, and the next launch reads what those decisions missed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::triage {

// The hardware counters behind one metric name a rule reads:
//  - a ratio the engine derives (add_derived_metrics) expands to its numerator and denominator;
//  - names no counter backs are dropped: launch__* (launch arithmetic), device__* (device
//    attributes), cutriage__* (the timeline), sm__maximum_warps_per_active_cycle_pct (occupancy
//    calculator);
//  - anything else is returned as is.
std::vector<std::string> counter_inputs(std::string_view metric);

// Every counter the rules of `decisions` read (required and optional), expanded as above, sorted,
// without duplicates.
std::vector<std::string> counters_for_decisions(const std::vector<Decision>& decisions);

// What a verdict of `decisions` rests on: counters_for_decisions() less the optional metrics of
// rules that only refine a routed verdict's detail (they neither block nor classify, and say "not
// evaluated" and why without them: d2.sysmem_peer_traffic's PCIe bytes, L2 aperture sectors and
// DRAM throughput). Always-on routes on these and collects the rest after the route; the same
// counters give the same classification either way.
std::vector<std::string> verdict_counters_for(const std::vector<Decision>& decisions);

// The decisions whose counters the first profiled launch of a kernel collects: 0, 1 and 2 (trust,
// workload size, regime), which decide the route.
const std::vector<Decision>& routing_decisions();

// Counters the rules of the decisions this diagnosis visited read but `have` lacks (after the
// engine's derivations), excluding names in `exclude` (already asked for: rejected by the chip or
// collected before). Decision 6 (PC samples) and 2A (timeline) have no counters and are skipped.
// A route through Decision 3 (unless the kernel is compute-bound or saturated) also asks for
// Decision 5's counters, which its memory-wait follow-up reads, so that follow-up needs no launch
// of its own.
// Empty when nothing more can be learned from counters.
std::vector<std::string> counters_still_needed(const Diagnosis& diagnosis, const MetricSet& have,
                                               const std::vector<std::string>& exclude = {});

// The decisions a verdict of this classification rests on: routing (0-2, as far as the route
// went) and the decision that names its limiter (3 for latency-bound, 4 for compute-bound, 5 for
// memory-bound, 4 and 7 for saturated). Empty for inconclusive.
const std::vector<Decision>& verdict_decisions(Classification classification);
// Whether the diagnosis is a routed verdict: classified (not inconclusive), with every counter of
// verdict_counters_for(verdict_decisions()) measured or in `exclude` (asked for and not collected). Deeper decisions
// (7, the side visits to 3 and 5) may still change the detail, not the classification or limiter.
bool verdict_routed(const Diagnosis& diagnosis, const MetricSet& have, const std::vector<std::string>& exclude = {});

// A throughput Nsight Compute defines as the maximum of sub-unit throughputs (its breakdown), for
// collection without replay: the top-level name takes several passes alone on GH100
// (sm__throughput 8), most parts take one. Names are full (".avg.pct_of_peak_sustained_elapsed").
struct ThroughputBreakdown {
  std::string metric;
  std::vector<std::string> parts;        // one pass each
  std::vector<std::string> unreachable;  // parts that take several passes even alone
};
// GH100's breakdowns (src/breakdown.cpp says where they come from).
const std::vector<ThroughputBreakdown>& throughput_breakdowns();
const ThroughputBreakdown* find_breakdown(std::string_view metric);
// `wanted` with every throughput that has a breakdown replaced by its single-pass parts (order
// kept, duplicates dropped).
std::vector<std::string> expand_breakdowns(const std::vector<std::string>& wanted);

}  // namespace cutriage::triage
