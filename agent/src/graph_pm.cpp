// The graph profiler's PM-sampling phase (docs/graphs.md, "PM sampling per node"): after a graph's
// counter stages, one of the application's own later launches of the exec is PM-sampled (never
// replayed; the trace stays on), and write_records (graph_profiler.cpp) attributes the samples to
// the launch's kernel executions once the trace has them (pm_nodes.h). PM sampling and the range
// profiler are never enabled on a context at once: the context is claimed like a pass (busy, the
// device's other contexts' range profilers disabled) and its own range profiler disabled first.
#include <string>

#include "graph_profiler.h"
#include "graph_profiler_state.h"
#include "pm_nodes.h"

namespace cutriage::agent {

using collectors::LaunchEvent;
using collectors::StatusCode;

void GraphProfiler::after_counters_locked(Target& t) {
  // Always one PM-sampled launch when enabled: which families need it is the trace's to say
  // (their share), read in write_records; the trace's lock may not be taken under mutex_.
  if (p_.config.graph_pm_sampling) {
    t.phase = Target::Phase::kNodeSampling;
    return;
  }
  after_node_sampling_locked(t);
}

void GraphProfiler::after_node_sampling_locked(Target& t) const {
  if (p_.config.pc_sampling && !p_.config.graph_pc_sampling) {
    t.sample_error =
        "not PC-sampled: CUPTI 13.0 hands over no PC across a graph launch while the kernel trace runs "
        "(docs/graphs.md); CUTRIAGE_GRAPH_PC_SAMPLING=1 tries";
  }
  t.phase = p_.config.pc_sampling && p_.config.graph_pc_sampling ? Target::Phase::kSampling : Target::Phase::kDone;
}

bool GraphProfiler::begin_node_sampling(const LaunchEvent& event, Target& t, uint64_t started_mono) {
  // Samples are attributed through the launch's traced executions, which always-on's duty cycle
  // does not record while it has the trace paused: a launch in the next traced window is sampled
  // instead.
  if (p_.trace.paused_now()) return false;
  std::string chip;
  if (std::optional<collectors::DeviceInfo> d = p_.devices.known(event.device)) chip = d->limits.chip;
  if (p_.always_on && !p_.always_on->admit_graph(CostKind::kPcSampling)) return false;
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, t.exec_id, started_mono);
  if (!ctx) {
    if (p_.always_on) p_.always_on->charge_since(CostKind::kPcSampling, started_mono);
    return false;
  }
  double replay_ns = 0;
  {
    std::unique_lock<std::mutex> trace_lock = p_.trace.lock();
    for (const triage::GraphStats& g : p_.trace.graphs_locked()) {
      if (g.exec_id == t.exec_id) replay_ns = g.mean_replay_ns();
    }
  }
  const PmPlan plan = plan_pm_sampling(replay_ns, kPmMaxSamples);
  collectors::PmSamplingOptions options;
  options.metrics = pm_node_metrics();
  options.interval_ns = plan.interval_ns;
  options.max_samples = plan.max_samples;
  std::unique_ptr<Active> active = new_active(event, t, ctx, started_mono, CostKind::kPcSampling);
  active->pm = true;
  collectors::Status started;
  if (chip.empty()) {
    started = collectors::Status(StatusCode::kUnavailable, "chip of device " + std::to_string(event.device) + " unknown");
  } else {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    started = ctx->begin_pm_sampling_locked(p_.platform, chip, options);
  }
  if (!started.is_ok()) {
    ctx->busy.store(false);
    active.reset();
    if (p_.always_on) p_.always_on->charge_since(CostKind::kPcSampling, started_mono);
    const std::string why = "PM sampling could not start: " + started.message();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      t.pm_error = why;
      after_node_sampling_locked(t);
    }
    p_.log.log_once(LogLevel::kWarn, "graph-pm-" + std::to_string(t.exec_id),
                    "graph exec " + std::to_string(t.exec_id) + ": " + why);
    p_.notify(wire::Severity::kWarning, "graph_pm_sampling_failed", "graph exec " + std::to_string(t.exec_id) + ": " + why, 0);
    write_records(t.exec_id);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    t.pm_correlation_id = event.correlation_id;
  }
  if (p_.trace_started.load()) {
    p_.trace.watch_graph_nodes(event.correlation_id);
    p_.trace.watch_graph_launch(event.correlation_id);
  }
  active_slot() = std::move(active);
  return true;
}

void GraphProfiler::complete_node_sampling(Active& active) {
  collectors::Result<collectors::PmSampleBatch> batch = [&] {
    std::lock_guard<std::mutex> lock(active.context->profiler_mutex);
    return active.context->pm_sampler->end();
  }();
  std::string error;
  std::shared_ptr<const collectors::PmSampleBatch> kept;
  if (!batch.is_ok()) {
    error = "PM sampling failed: " + batch.status().message();
  } else if (batch.value().samples.empty()) {
    error = "PM sampling returned no sample for the graph launch";
  } else {
    kept = std::make_shared<const collectors::PmSampleBatch>(std::move(batch).value());
  }
  const std::shared_ptr<const collectors::PmSampleBatch> batch_samples = kept;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = targets_.find(active.exec_id);
    if (it == targets_.end()) return;
    it->second->pm_batch = std::move(kept);
    it->second->pm_error = error;
    after_node_sampling_locked(*it->second);
  }
  if (error.empty()) {
    const collectors::PmSampleBatch& b = *batch_samples;
    p_.log.log_once(LogLevel::kInfo, "graph-pm-" + std::to_string(active.exec_id),
                    "graph exec " + std::to_string(active.exec_id) + ": PM-sampled one launch, " +
                        std::to_string(b.samples.size()) + " samples every " + std::to_string(b.interval_ns / 1000) +
                        " us (" + std::to_string(b.samples_dropped) + " dropped)");
  }
  if (!error.empty()) {
    p_.log.log_once(LogLevel::kWarn, "graph-pm-" + std::to_string(active.exec_id),
                    "graph exec " + std::to_string(active.exec_id) + ": " + error);
    p_.notify(wire::Severity::kWarning, "graph_pm_sampling_failed",
              "graph exec " + std::to_string(active.exec_id) + ": " + error, 0);
  }
}

}  // namespace cutriage::agent
