// Single-pass metric groups for always-on collection: the counters a diagnosis may need, packed
// into groups the range profiler collects in one pass each, so a launch is profiled without
// replay. Made once per chip with the Profiler Host API (pass counts are a host-side property of
// the config, no GPU involved).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/collectors/range_profiler.h"

namespace cutriage::agent {

// Every counter a route may read on `chip` (all_counters() and the first stage's riders), the
// multi-pass throughputs as their single-pass breakdown parts: what the groups cover.
std::vector<std::string> always_on_counters(std::string_view chip);
// What every group also reads: the launch's duration, so that Decision 0 can compare the launches
// a diagnosis is assembled from (d0.assembled_launches).
const std::vector<std::string>& in_every_group();

struct MetricGroups {
  std::vector<collectors::MetricPlan> plans;  // one pass each, PlanReplay::kNone
  // Asked for but in no group: rejected by the chip, or more than one pass even alone.
  std::vector<collectors::RejectedMetric> unreachable;
  uint32_t plan_calls = 0;  // host.plan() calls the packing took (its cost)
};

// Packs `metrics` (sorted first, so one hardware unit's counters sit together and share passes)
// greedily: each group is the longest run of the remaining names that still plans in one pass,
// found by doubling then bisecting (pass counts never drop when names are added). Every group also
// holds each name of `in_every_group` (the launch's duration, for Decision 0's comparison of the
// launches a diagnosis is assembled from).
MetricGroups pack_single_pass(collectors::ProfilerHost& host, std::vector<std::string> metrics,
                              const std::vector<std::string>& in_every_group);

// Tighter and slower: first fit, each name into the first group it still fits in one pass with
// (about names x groups plan calls: seconds on GH100). For tables made offline
// (`cutriage-plan-stages --groups`), never on an application thread. The names of `first` are
// placed before the others, so they take the fewest groups (the routing counters: a family is
// routed after fewer group switches).
MetricGroups pack_first_fit(collectors::ProfilerHost& host, std::vector<std::string> metrics,
                            const std::vector<std::string>& in_every_group,
                            const std::vector<std::string>& first = {});
// The routing counters (Decisions 0-2, as a verdict rests on them: triage::verdict_counters_for,
// without d2.sysmem_peer_traffic's optional PCIe, aperture and DRAM counters, collected after the
// route) with the multi-pass throughputs as their single-pass parts, sorted: what a family's first
// always-on launches collect.
const std::vector<std::string>& routing_counters_expanded();

// The chip's groups for always-on collection: the table made offline for the chips it has
// (GH100), planned again here (one plan call per group); otherwise pack_single_pass over
// `universe`. A table group that no longer plans in one pass (another CUDA version) is split by
// pack_single_pass.
MetricGroups chip_groups(collectors::ProfilerHost& host, const std::string& chip,
                         const std::vector<std::string>& universe, const std::vector<std::string>& in_every_group);

// The offline table for `chip`, group by group (empty when there is none).
const std::vector<std::vector<std::string>>& offline_groups(const std::string& chip);

}  // namespace cutriage::agent
