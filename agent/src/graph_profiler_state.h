// Internal to the graph profiler's translation units (graph_profiler.cpp, graph_pm.cpp): what it
// keeps per target graph and per launch in flight.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "graph_profiler.h"

namespace cutriage::agent {

struct GraphProfiler::Target {
  uint32_t exec_id = 0;
  uint32_t graph_id = 0;
  uint32_t device = 0;
  enum class Phase : uint8_t { kCounters, kNodeSampling, kSampling, kDone } phase = Phase::kCounters;
  bool in_flight = false;  // a pass or sampled launch between entry and exit
  // The stage in progress: its plan (made at its first pass) and the passes run so far.
  std::shared_ptr<const collectors::MetricPlan> plan;
  std::shared_ptr<collectors::ProfilerHost> host;
  uint32_t stages = 0;
  uint32_t passes_in_stage = 0;
  // Everything collected, over every stage.
  uint64_t replays_profiled = 0;
  triage::MetricSet measured;
  std::set<std::string> attempted;
  std::vector<std::string> rejected;
  struct Pass {
    uint64_t correlation_id = 0;
    uint32_t stage = 0;  // 1-based
    uint32_t metrics = 0;
  };
  std::vector<Pass> passes;
  std::optional<triage::Diagnosis> workload;  // the graph routed as one workload
  // PC samples of one launch, by kernel (mangled name), and why there are none.
  std::map<std::string, PcSummary> samples;
  std::string sample_error;
  uint32_t sample_period_log2 = 0;
  // PM sampling of one launch (Phase::kNodeSampling): its samples until the trace has the launch's
  // executions, and why there are none.
  std::shared_ptr<const collectors::PmSampleBatch> pm_batch;
  uint64_t pm_correlation_id = 0;
  std::string pm_error;
  std::string failure;
};

struct GraphProfiler::Active {
  uint64_t owner = 0;
  uint64_t correlation_id = 0;
  uint32_t exec_id = 0;
  std::shared_ptr<ContextState> context;
  std::shared_lock<std::shared_mutex> gate;
  bool sampling = false;
  bool pm = false;  // a PM-sampled launch
  uint64_t started_mono_ns = 0;
  bool budgeted = false;
  CostKind cost = CostKind::kSameGroup;
  uint64_t begin_trace_ns = 0;
};

}  // namespace cutriage::agent
