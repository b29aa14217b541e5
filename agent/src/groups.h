// Single-pass metric groups for always-on collection: the counters a diagnosis may need, packed
// into groups the range profiler collects in one pass each, so a launch is profiled without
// replay. Made once per chip with the Profiler Host API (pass counts are a host-side property of
// the config, no GPU involved).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cutriage/collectors/range_profiler.h"

namespace cutriage::agent {

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

}  // namespace cutriage::agent
