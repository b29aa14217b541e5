// Per-node counters of a CUDA graph from PM sampling (docs/graphs.md, "PM sampling per node"):
// the one-pass PM metric set, its mapping to the rules' metric names, and the attribution of one
// sampled graph launch's samples to the kernel executions the trace saw in it. Pure functions: the
// graph profiler collects, these compute; the tests call them directly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::agent {

// The PM-sampling set: 20 metrics that fit one pass on GH100 (tests/data/graphs/pm-metrics-gh100.txt,
// section 6), the set the H200 probe ran.
const std::vector<std::string>& pm_node_metrics();

// One PM metric the rules may read, under the rules' name (pm_nodes.cpp says why each is the same
// quantity). PM metrics absent from this table are collected but not handed to the rules.
struct PmMapping {
  std::string_view pm_name;
  std::string_view rule_name;
  std::string_view unit;
};
const std::vector<PmMapping>& pm_rule_mapping();

// One kernel execution of the sampled graph launch, from the trace (trace clock).
struct NodeExecution {
  uint64_t family = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// What one family's samples give.
struct FamilyPmValues {
  uint32_t samples = 0;     // samples lying wholly inside one of its executions
  uint32_t executions = 0;  // its executions in the launch
  triage::MetricSet metrics;  // the samples' means, under the rules' names (pm_rule_mapping)
};

// A sample counts for a family when it lies wholly inside one of that family's executions in the
// launch (start >= the execution's start, end <= its end): samples straddling two nodes, idle
// ones and samples longer than a node are dropped. Each mapped metric is the mean over the
// family's samples of its non-NaN values. Families without any sample are present with 0 samples.
std::map<uint64_t, FamilyPmValues> attribute_pm_samples(const collectors::PmSampleBatch& batch,
                                                         const std::vector<NodeExecution>& executions);

// Samples between the launch's first execution start and last execution end (the launch's part of
// the batch: the session also sampled the idle time before the launch ran).
uint32_t samples_in_launch(const collectors::PmSampleBatch& batch, const std::vector<NodeExecution>& executions);

// The sampling interval and counter-data image size for a graph whose traced replay takes
// `replay_ns` (0 = unknown): 5 us (the probe's) unless the replay would not fit `max_samples`
// with room for the wait before it runs, then longer.
struct PmPlan {
  uint64_t interval_ns = 5000;
  uint32_t max_samples = 0;
};
PmPlan plan_pm_sampling(double replay_ns, uint32_t max_samples);

}  // namespace cutriage::agent
