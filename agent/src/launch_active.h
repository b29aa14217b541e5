// Internal to the launch profiler's files (launch_profiler.cpp, launch_publish.cpp): the state of
// one profiled launch from its entry callback to its exit, and the wire name of its launch API.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "launch_profiler.h"

namespace cutriage::agent {

inline wire::LaunchApi launch_api_of(collectors::LaunchApi api) {
  using collectors::LaunchApi;
  switch (api) {
    case LaunchApi::kLaunchKernel: return wire::LaunchApi::kKernel;
    case LaunchApi::kLaunchKernelEx: return wire::LaunchApi::kKernelEx;
    case LaunchApi::kLaunchCooperative: return wire::LaunchApi::kCooperative;
    case LaunchApi::kLaunchLegacy: return wire::LaunchApi::kLegacy;
    case LaunchApi::kGraphLaunch: return wire::LaunchApi::kGraph;
  }
  return wire::LaunchApi::kUnspecified;
}

// The profiled launch in flight on this thread, from launch entry to launch exit.
struct LaunchProfiler::Active {
  uint64_t owner = 0;  // instance id of the profiler
  std::shared_ptr<ContextState> context;
  Family* family = nullptr;
  std::shared_ptr<collectors::ProfilerHost> host;
  collectors::MetricPlan plan;
  uint64_t launch_index = 0;
  uint64_t correlation_id = 0;
  collectors::LaunchEvent event;  // a copy: the callback's data is gone by the exit callback's time
  std::shared_lock<std::shared_mutex> gate;  // no activity flush until this profile ends
  uint64_t begin_trace_ns = 0;  // trace clock when the range profiler started
  bool pc_sampling = false;     // PC sampling instead of the range profiler
  // Always-on accounting: when launch entry began (monotonic), what the budget reserved.
  uint64_t started_mono_ns = 0;
  bool budgeted = false;
  CostKind cost = CostKind::kSameGroup;
  int group = -1;     // single-pass group (always-on, application replay), -1 otherwise
  bool stage_pass = false;  // one pass of the family's stage (CUTRIAGE_STAGE_PASSES)
  uint64_t stage_collection = 0;  // that stage's collection id
  uint32_t stage_pass_index = 0;  // the pass CUPTI began (RangeProfiler::pass_in_progress)
  // A step's launch (step_profiler.h): its values come from the step's collection; step_launches
  // are the family's launch in each pass.
  bool step = false;
  std::vector<uint64_t> step_launches;
  std::vector<double> step_traced_ns;  // each pass's launch's traced duration (0: none)
  std::shared_ptr<const MetricGroups> groups;  // the chip's single-pass groups, when group >= 0
  uint64_t deep = 0;  // deep-capture request id, 0 = none
  // ProfileCost's phases (monotonic ns): launch entry, the collector's start and its return, the
  // entry callback's return, the exit callback.
  uint64_t entered_ns = 0;
  uint64_t start_ns = 0;
  uint64_t started_ns = 0;
  uint64_t entry_done_ns = 0;
  uint64_t exit_ns = 0;

  // Inside the phases: the metric plan made on this thread (setup), the range profiler's CUPTI
  // calls (start and stop; from RangeProfiler::last_steps after end()), the evaluation (stop).
  uint64_t plan_ns = 0;
  std::optional<collectors::RangeProfilerSteps> steps;
  uint64_t evaluate_ns = 0;

  // The phases up to `stopped_ns` (the collector's end returned), and the triage's.
  [[nodiscard]] wire::ProfileCost phases(uint64_t stopped_ns, uint64_t triage_ns) const {
    auto span = [](uint64_t from, uint64_t to) { return from != 0 && to > from ? to - from : 0; };
    wire::ProfileCost c;
    c.setup_ns = span(entered_ns, start_ns);
    c.start_ns = span(start_ns, started_ns);
    c.launch_ns = span(entry_done_ns, exit_ns);
    c.stop_ns = span(exit_ns, stopped_ns);
    c.triage_ns = triage_ns;
    c.passes = plan.passes;
    c.plan_ns = plan_ns;
    if (steps) {
      c.range_steps = wire::RangeProfilerSteps{steps->enable_ns,  steps->counter_data_ns, steps->set_config_ns,
                                               steps->start_ns,   steps->stop_ns,         steps->decode_ns,
                                               steps->disable_ns};
    }
    c.evaluate_ns = evaluate_ns;
    return c;
  }
};

}  // namespace cutriage::agent
