#include "graph_profiler.h"

#include "graph_profiler_state.h"

#include <algorithm>
#include <cstdio>

#include "cutriage/triage/plan.h"
#include "pm_nodes.h"
#include "stages.h"

namespace cutriage::agent {

using collectors::LaunchEvent;
using collectors::StatusCode;

namespace {

std::atomic<uint64_t> g_next_graph_profiler_id{1};

constexpr std::string_view kDuration = "gpu__time_duration.sum";
// A family's PM samples replace its graph's counters from this many (d0.node_sampling warns below 3).
constexpr uint32_t kMinNodeSamples = 1;
// Execs whose launches are counted for bridging; a process instantiating more is rare (one
// graph per batch size), and beyond it new execs are neither bridged nor profiled.
constexpr size_t kMaxCountedExecs = 4096;
// Retargeting reads every graph's summary: at most this often.
constexpr uint64_t kRetargetIntervalNs = 50'000'000;

}  // namespace

GraphProfiler::GraphProfiler(Parts parts)
    : p_(std::move(parts)), instance_id_(g_next_graph_profiler_id.fetch_add(1)), start_mono_ns_(p_.monotonic_ns()) {}

GraphProfiler::~GraphProfiler() = default;

std::unique_ptr<GraphProfiler::Active>& GraphProfiler::active_slot() {
  thread_local std::unique_ptr<Active> slot;
  return slot;
}

bool GraphProfiler::owns_slot(uint64_t correlation_id) const {
  const std::unique_ptr<Active>& slot = active_slot();
  return slot && slot->owner == instance_id_ && slot->correlation_id == correlation_id;
}

bool GraphProfiler::enter(const LaunchEvent& fast_event) {
  try {
    const uint32_t exec = fast_event.graph_exec_id;
    if (exec == 0) return false;
    bool bridge = false;
    Target* target = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto counted = launches_.find(exec);
      if (counted == launches_.end() && launches_.size() < kMaxCountedExecs) {
        counted = launches_.emplace(exec, 0).first;
      }
      if (counted != launches_.end()) {
        const uint64_t n = ++counted->second;
        bridge = (n & (n - 1)) == 0;  // the 1st, 2nd, 4th, 8th... launch, until bridged
        if (n == kDeepTargetLaunches && p_.always_on == nullptr && p_.config.select != SelectMode::kNone &&
            targets_.size() < kMaxTargets && targets_.count(exec) == 0) {
          // Deep mode: a graph launched again is profiled from its next launch on, before the
          // trace can rank it: a short program's replays may all be over by the time its records
          // come back (CUPTI returns a buffer when it is full). Its kernels are named when the
          // trace has them (at the latest at the end).
          auto t = std::make_unique<Target>();
          t->exec_id = exec;
          targets_.emplace(exec, std::move(t));
          any_target_.store(true, std::memory_order_relaxed);
          p_.log.info("profiling graph exec " + std::to_string(exec) + " over its next launches: it is launched again");
        }
      }
      if (any_target_.load(std::memory_order_relaxed)) {
        if (auto it = targets_.find(exec); it != targets_.end() && it->second->phase != Target::Phase::kDone &&
                                           !it->second->in_flight) {
          target = it->second.get();
          target->in_flight = true;  // one launch of it at a time
        }
      }
    }
    // A repeated correlation id names more than one launch: no bridge, no profiled launch.
    if (bridge && !fast_event.correlation_repeated && p_.graphs.graph_of(exec) == 0) {
      p_.graphs.note_launch(exec, fast_event.correlation_id);
    }
    if (target == nullptr) return false;
    bool started = false;
    if (fast_event.correlation_repeated) {
      p_.log.log_once(LogLevel::kInfo, "graph-repeated-" + std::to_string(exec),
                      "graph exec " + std::to_string(exec) +
                          ": a launch of it repeated its thread's previous correlation id; launches like it are "
                          "not profiled, since their records cannot be told apart");
    } else if (!p_.paused.load(std::memory_order_relaxed) && p_.trace_started.load()) {
      LaunchEvent event = fast_event;
      p_.platform.fill_launch_details(event);
      // A graph launched into a capturing stream becomes a node of another graph: nothing runs.
      if (event.stream_capturing) {
        p_.log.log_once(LogLevel::kInfo, "graph-capturing-" + std::to_string(exec),
                        "graph exec " + std::to_string(exec) + ": launched into a capturing stream, left alone");
      } else {
        const uint64_t started_mono = p_.monotonic_ns();
        Target::Phase phase = Target::Phase::kDone;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          phase = target->phase;
        }
        started = phase == Target::Phase::kCounters       ? begin_pass(event, *target, started_mono)
                  : phase == Target::Phase::kNodeSampling ? begin_node_sampling(event, *target, started_mono)
                  : phase == Target::Phase::kSampling     ? begin_sampling(event, *target, started_mono)
                                                          : false;
      }
    }
    if (!started) {
      std::lock_guard<std::mutex> lock(mutex_);
      target->in_flight = false;
    }
    return started;
  } catch (const std::exception& e) {
    p_.log.log_once(LogLevel::kError, "graph-enter", std::string("internal error at a graph launch: ") + e.what());
  } catch (...) {
    p_.log.log_once(LogLevel::kError, "graph-enter", "internal error at a graph launch");
  }
  try {
    // The exit will not come: the target must not stay taken, nor its context held.
    std::unique_ptr<Active>& slot = active_slot();
    if (slot && slot->owner == instance_id_ && slot->context) {
      slot->context->graph_exec.store(0);
      slot->context->busy.store(false);
    }
    slot.reset();
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = targets_.find(fast_event.graph_exec_id); it != targets_.end()) it->second->in_flight = false;
  } catch (...) {
  }
  return false;
}

std::vector<std::string> GraphProfiler::next_stage_locked(Target& t, const std::string& chip) const {
  std::vector<std::string> wanted;
  if (t.stages == 0) {
    switch (p_.config.metric_mode) {
      case MetricMode::kFull: wanted = all_counters(); break;
      case MetricMode::kBase: wanted = triage::counters_for_decisions(triage::routing_decisions()); break;
      case MetricMode::kList: wanted = p_.config.metric_list; break;
      case MetricMode::kAdaptive: wanted = first_stage_counters(chip); break;
    }
    // Decision 0 compares the graph's profiled duration with its traced replays.
    if (std::find(wanted.begin(), wanted.end(), kDuration) == wanted.end()) wanted.emplace_back(kDuration);
    return wanted;
  }
  if (p_.config.metric_mode != MetricMode::kAdaptive || !t.workload) return {};
  if (t.stages >= std::max<uint32_t>(p_.config.max_profiles_per_kernel, 1)) return {};
  return triage::counters_still_needed(*t.workload, t.measured, {t.attempted.begin(), t.attempted.end()});
}

std::unique_ptr<GraphProfiler::Active> GraphProfiler::new_active(const LaunchEvent& event, const Target& t,
                                                                 const std::shared_ptr<ContextState>& ctx,
                                                                 uint64_t started_mono, CostKind cost) const {
  auto active = std::make_unique<Active>();
  active->owner = instance_id_;
  active->correlation_id = event.correlation_id;
  active->exec_id = t.exec_id;
  active->context = ctx;
  active->started_mono_ns = started_mono;
  active->budgeted = p_.always_on != nullptr;
  active->cost = cost;
  active->gate = std::shared_lock<std::shared_mutex>(p_.gate);  // no activity flush until it ends
  return active;
}

bool GraphProfiler::begin_pass(const LaunchEvent& event, Target& t, uint64_t started_mono) {
  std::optional<collectors::DeviceInfo> dev = p_.devices.info(event.device);
  if (!dev || dev->limits.chip.empty()) {
    fail(t, "chip of device " + std::to_string(event.device) + " unknown");
    return false;
  }
  std::shared_ptr<collectors::ProfilerHost> host;
  std::shared_ptr<const collectors::MetricPlan> plan;
  bool first_pass = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    host = t.host;
    plan = t.plan;
    first_pass = t.passes_in_stage == 0;
  }
  if (!plan) {
    std::string error;
    host = p_.devices.host(dev->limits.chip, &error);
    if (!host) {
      fail(t, "profiler host: " + error);
      return false;
    }
    std::vector<std::string> wanted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      wanted = next_stage_locked(t, dev->limits.chip);
    }
    // From the process's plans: deep mode's first list is made ahead as a context is created, and
    // a later stage's list may be one a launch asked for already.
    collectors::Result<collectors::MetricPlan> planned = p_.plans.plan(*host, dev->limits.chip, wanted);
    if (!planned.is_ok()) {
      fail(t, "metric plan: " + planned.status().message());
      return false;
    }
    collectors::MetricPlan made = std::move(planned).value();
    made.replay = collectors::PlanReplay::kApplication;
    plan = std::make_shared<const collectors::MetricPlan>(std::move(made));
    std::lock_guard<std::mutex> lock(mutex_);
    t.host = host;
    t.plan = plan;
    t.device = event.device;
  }
  // Always-on: a stage's first pass is admitted like a group switch (it configures the profiler);
  // its later passes go on credit (charged all the same), so that a stage is not left halfway.
  const CostKind cost = first_pass ? CostKind::kGroupSwitch : CostKind::kSameGroup;
  if (p_.always_on && !p_.always_on->admit_graph(cost)) {
    const bool step = p_.always_on->step_holds_lane(started_mono);
    p_.log.log_once(LogLevel::kInfo, (step ? "graph-step-" : "graph-budget-") + std::to_string(t.exec_id),
                    "graph exec " + std::to_string(t.exec_id) +
                        (step ? ": its next stage waits for the application's step to be collected (CUTRIAGE_STEP_STAGES)"
                              : ": waiting for the budget to pay for its next stage"));
    return false;
  }
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, t.exec_id, started_mono);
  if (!ctx) {
    if (p_.always_on) p_.always_on->charge_since(cost, started_mono);
    p_.log.log_once(LogLevel::kInfo, "graph-busy-" + std::to_string(t.exec_id),
                    "graph exec " + std::to_string(t.exec_id) +
                        ": a launch ran unprofiled, another profile held its context (a later one is taken)");
    return false;
  }
  std::unique_ptr<Active> active = new_active(event, t, ctx, started_mono, cost);
  collectors::Status s;
  {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    bool failed_now = false;
    s = ctx->ensure_range_profiler_locked(p_.platform, &failed_now);
    if (s.is_ok()) {
      s = ctx->profiler->begin(*plan);
      // The configuration is the graph's now: always-on's group bookkeeping must not reuse it, and
      // a family's stage on it is over (abandoned: its hold had lapsed).
      ctx->configured_group.store(-1);
      ctx->stage_family.store(0);
    }
  }
  if (!s.is_ok()) {
    ctx->graph_exec.store(0);
    ctx->busy.store(false);
    active.reset();
    if (s.code() == StatusCode::kPermissionDenied) p_.set_inactive(wire::AgentState::kPermissionDenied, s.message());
    if (p_.always_on) p_.always_on->charge_since(cost, started_mono);
    fail(t, "range profiler start on a graph launch: " + s.message());
    return false;
  }
  ctx->graph_exec.store(t.exec_id);
  ctx->graph_pass_mono_ns.store(started_mono);
  if (p_.trace_started.load()) {
    // The pass's kernels ran with counters on: kept out of the graph's and families' durations,
    // their span kept for Decision 0's comparison of the passes.
    p_.trace.mark_replayed(event.correlation_id);
    p_.trace.watch_graph_launch(event.correlation_id);
  }
  active_slot() = std::move(active);
  return true;
}

bool GraphProfiler::begin_sampling(const LaunchEvent& event, Target& t, uint64_t started_mono) {
  if (p_.always_on && !p_.always_on->admit_graph(CostKind::kPcSampling)) return false;
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, t.exec_id, started_mono);
  if (!ctx) {
    if (p_.always_on) p_.always_on->charge_since(CostKind::kPcSampling, started_mono);
    return false;
  }
  collectors::PcSamplingOptions options;
  // Continuous: every kernel of the graph launch is sampled, attributed by function (a
  // kernel-serialized collection gives nothing per launch for a graph's kernels).
  options.continuous = true;
  options.period_log2 = p_.config.pc_sampling_period_log2;
  if (options.period_log2 == 0) {
    double replay_ns = 0;
    {
      std::unique_lock<std::mutex> trace_lock = p_.trace.lock();
      for (const triage::GraphStats& g : p_.trace.graphs_locked()) {
        if (g.exec_id == t.exec_id) replay_ns = g.mean_replay_ns();
      }
    }
    triage::DeviceLimits limits;
    if (std::optional<collectors::DeviceInfo> d = p_.devices.known(event.device)) limits = d->limits;
    options.period_log2 = auto_sampling_period_log2(replay_ns, limits.sm_clock_hz, limits.sm_count);
  }
  std::unique_ptr<Active> active = new_active(event, t, ctx, started_mono, CostKind::kPcSampling);
  active->sampling = true;
  collectors::Status started;
  {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    bool failed_now = false;
    started = ctx->begin_sampling_locked(p_.platform, options, &failed_now);
  }
  if (!started.is_ok()) {
    ctx->busy.store(false);
    active.reset();
    if (p_.always_on) p_.always_on->charge_since(CostKind::kPcSampling, started_mono);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      t.sample_error = "PC sampling could not start: " + started.message();
      t.sample_period_log2 = options.period_log2;
      t.phase = Target::Phase::kDone;
    }
    write_records(t.exec_id);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    t.sample_period_log2 = options.period_log2;
  }
  if (p_.trace_started.load()) p_.trace.mark_replayed(event.correlation_id);
  active_slot() = std::move(active);
  return true;
}

void GraphProfiler::exit(const LaunchEvent& event) {
  if (!owns_slot(event.correlation_id)) return;
  std::unique_ptr<Active>& slot = active_slot();
  try {
    if (slot->pm) {
      complete_node_sampling(*slot);
    } else if (slot->sampling) {
      complete_sampling(*slot);
    } else {
      complete_pass(*slot);
    }
  } catch (const std::exception& e) {
    p_.log.log_once(LogLevel::kError, "graph-exit", std::string("internal error after a graph launch: ") + e.what());
  } catch (...) {
    p_.log.log_once(LogLevel::kError, "graph-exit", "internal error after a graph launch");
  }
  const uint32_t exec = slot->exec_id;
  const bool pm = slot->pm;
  if (slot->context) slot->context->busy.store(false);
  try {
    if (slot->budgeted && p_.always_on) {
      p_.always_on->charge_since(slot->cost, slot->started_mono_ns);
      const uint64_t now = p_.monotonic_ns();
      p_.always_on->graph_spent(now > slot->started_mono_ns ? now - slot->started_mono_ns : 0);
    }
  } catch (...) {
  }
  slot.reset();  // releases the flush gate
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = targets_.find(exec); it != targets_.end()) it->second->in_flight = false;
  }
  if (p_.trace_started.load()) {
    // The pass's records come back complete (nothing was replayed), but CUPTI hands a buffer back
    // only when every record in it is; a forced flush keeps the spans of the passes coming.
    try {
      std::unique_lock<std::shared_mutex> gate(p_.gate, std::try_to_lock);
      if (gate.owns_lock()) p_.platform.flush_trace(true);
    } catch (...) {
    }
  }
  if (pm) {
    // The sampled launch's executions are in (when the flush had them): its families' records.
    try {
      write_records(exec);
    } catch (...) {
    }
  }
}

void GraphProfiler::complete_pass(Active& active) {
  Target* target = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = targets_.find(active.exec_id);
    if (it == targets_.end()) return;
    target = it->second.get();
  }
  ContextState& ctx = *active.context;
  collectors::Result<collectors::CounterData> data = [&] {
    std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
    return ctx.profiler->end();
  }();
  ctx.graph_pass_mono_ns.store(p_.monotonic_ns());
  if (!data.is_ok()) {
    ctx.graph_exec.store(0);
    fail(*target, "range profiler stop on a graph launch: " + data.status().message());
    return;
  }
  std::shared_ptr<const collectors::MetricPlan> plan;
  std::shared_ptr<collectors::ProfilerHost> host;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++target->passes_in_stage;
    ++target->replays_profiled;
    target->passes.push_back(Target::Pass{active.correlation_id, target->stages + 1, 0});
    plan = target->plan;
    host = target->host;
  }
  if (data.value().passes_pending > 0) return;  // the stage goes on at the exec's next launch
  ctx.graph_exec.store(0);                       // the stage is done: the context is free again
  if (p_.always_on) {
    // Released like an always-on launch's profiler: an enabled one slows the context's launches.
    std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
    ctx.release_locked();
  }
  collectors::Result<std::vector<collectors::MetricReading>> readings = host->evaluate(*plan, data.value());
  if (!readings.is_ok()) {
    fail(*target, "metric evaluation: " + readings.status().message());
    return;
  }
  stage_done(*target, readings.value());
}

void GraphProfiler::stage_done(Target& t, const std::vector<collectors::MetricReading>& readings) {
  std::string chip;
  if (std::optional<collectors::DeviceInfo> d = p_.devices.known(t.device)) chip = d->limits.chip;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++t.stages;
    for (const collectors::MetricReading& r : readings) {
      t.measured.set(r.name, r.value, r.name == kDuration ? "nsecond" : "");
    }
    for (Target::Pass& pass : t.passes) {
      if (pass.stage == t.stages) pass.metrics = static_cast<uint32_t>(readings.size());
    }
    for (const std::string& m : t.plan->metrics) {
      t.attempted.insert(m);
      if (!t.measured.has(m) && std::find(t.rejected.begin(), t.rejected.end(), m) == t.rejected.end()) {
        t.rejected.push_back(m);
      }
    }
    for (const collectors::RejectedMetric& rj : t.plan->rejected) {
      t.attempted.insert(rj.name);
      if (std::find(t.rejected.begin(), t.rejected.end(), rj.name) == t.rejected.end()) t.rejected.push_back(rj.name);
    }
    // The graph routed as one workload (no launch shape of its own): its route says which
    // counters the next stage collects.
    triage::KernelInput workload;
    workload.mangled_name = "graph exec " + std::to_string(t.exec_id);
    workload.function_name = workload.mangled_name;
    workload.device = t.device;
    if (std::optional<collectors::DeviceInfo> d = p_.devices.known(t.device)) workload.device_limits = d->limits;
    workload.metrics = t.measured;
    workload.collection.replay_mode = triage::ReplayMode::kApplication;
    workload.collection.clock_control = triage::ClockControl::kNone;
    t.workload = triage::triage_kernel(workload, p_.triage_options);
    t.plan.reset();
    t.passes_in_stage = 0;
    if (next_stage_locked(t, chip).empty()) after_counters_locked(t);
  }
  write_records(t.exec_id);
}

void GraphProfiler::complete_sampling(Active& active) {
  collectors::Result<collectors::PcSampleBatch> batch = [&] {
    std::lock_guard<std::mutex> lock(active.context->profiler_mutex);
    return active.context->sampler->end();
  }();
  std::map<std::string, PcSummary> by_kernel;
  std::string error;
  if (!batch.is_ok()) {
    error = "PC sampling failed: " + batch.status().message();
  } else {
    // Samples of a graph launch carry no correlation id (seen on the H200): split by function.
    std::map<std::string, collectors::PcSampleBatch> split;
    for (collectors::PcSampleRecord& r : batch.value().pcs) {
      collectors::PcSampleBatch& b = split[r.function];
      if (b.reason_names.empty()) {
        b.reason_names = batch.value().reason_names;
        b.period_log2 = batch.value().period_log2;
        b.hardware_buffer_full = batch.value().hardware_buffer_full;
      }
      for (const collectors::PcStallCount& s : r.stalls) b.total_samples += s.samples;
      b.pcs.push_back(std::move(r));
    }
    for (auto& [function, b] : split) {
      PcSummary summary = build_pc_summary(b, p_.cubins, p_.platform);
      // What the sampler dropped is the whole launch's: every kernel's samples are as trustworthy.
      summary.summary.dropped_samples = batch.value().dropped_samples;
      by_kernel.emplace(function, std::move(summary));
    }
    if (by_kernel.empty()) {
      error = "no samples came back for the graph launch (" + std::to_string(batch.value().total_samples) +
              " in all, period 2^" + std::to_string(batch.value().period_log2) + " cycles)";
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = targets_.find(active.exec_id);
    if (it == targets_.end()) return;
    it->second->samples = std::move(by_kernel);
    it->second->sample_error = error;
    it->second->phase = Target::Phase::kDone;
  }
  write_records(active.exec_id);
}

void GraphProfiler::fail(Target& t, const std::string& why) {
  uint32_t graph = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    t.failure = why;
    t.phase = Target::Phase::kDone;
    t.plan.reset();
    graph = t.graph_id;
  }
  const std::string name = "graph " + std::to_string(graph) + " (exec " + std::to_string(t.exec_id) + ")";
  p_.log.log_once(LogLevel::kWarn, "graph-fail-" + std::to_string(t.exec_id), "could not profile " + name + ": " + why);
  p_.notify(wire::Severity::kWarning, "graph_profile_failed", name + ": " + why, 0);
}

void GraphProfiler::write_records(uint32_t exec_id, bool write) {
  // A copy of what the target collected: the records are built without its lock.
  Target t;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = targets_.find(exec_id);
    if (it == targets_.end() || it->second->stages == 0) return;
    const Target& src = *it->second;
    t.exec_id = src.exec_id;
    t.graph_id = src.graph_id;
    t.device = src.device;
    t.phase = src.phase;
    t.stages = src.stages;
    t.replays_profiled = src.replays_profiled;
    t.measured = src.measured;
    t.rejected = src.rejected;
    t.passes = src.passes;
    t.samples = src.samples;
    t.sample_error = src.sample_error;
    t.sample_period_log2 = src.sample_period_log2;
    t.pm_batch = src.pm_batch;
    t.pm_correlation_id = src.pm_correlation_id;
    t.pm_error = src.pm_error;
    if (it->second->graph_id == 0) it->second->graph_id = p_.graphs.graph_of(exec_id);
    t.graph_id = it->second->graph_id;
  }
  if (t.graph_id == 0) return;  // its records have not come back yet: written when they have
  // The passes' spans, for Decision 0's comparison of the replays the counters come from.
  // A pass without a usable span (two launches under its id among them: TraceFolder's watch) has
  // 0, which Decision 0 leaves out.
  std::vector<std::pair<Target::Pass, double>> spans;
  for (const Target::Pass& pass : t.passes) {
    if (pass.stage == 0) continue;  // a pass of a stage that did not complete
    spans.emplace_back(pass, p_.trace.graph_launch_span(pass.correlation_id).value_or(0));
  }
  std::optional<triage::DeviceLimits> limits;
  if (std::optional<collectors::DeviceInfo> d = p_.devices.known(t.device)) limits = d->limits;
  // The PM-sampled launch's samples, per family, once the trace has its executions.
  std::map<uint64_t, FamilyPmValues> pm;
  uint32_t pm_launch_samples = 0;
  std::optional<double> pm_span;
  bool pm_untraced = false;  // the sampled launch has no traced execution (yet)
  std::string pm_unusable;  // why the sampled launch's records cannot be used
  if (t.pm_batch) {
    const std::vector<NodeExecution> executions = p_.trace.graph_launch_executions(t.pm_correlation_id);
    pm_unusable = p_.trace.graph_launch_unusable(t.pm_correlation_id);
    pm_untraced = executions.empty() && pm_unusable.empty();
    if (!executions.empty()) {
      pm = attribute_pm_samples(*t.pm_batch, executions);
      pm_launch_samples = samples_in_launch(*t.pm_batch, executions);
      pm_span = p_.trace.graph_launch_span(t.pm_correlation_id);
    }
  }

  std::vector<wire::KernelRecord> records;
  {
    std::unique_lock<std::mutex> trace_lock = p_.trace.lock();
    const triage::GraphAccumulator& graphs = p_.trace.graph_accumulator_locked();
    std::vector<triage::GraphStats> all = graphs.summary();
    const triage::GraphStats* stats = nullptr;
    for (const triage::GraphStats& g : all) {
      if (g.graph_id == t.graph_id) stats = &g;
    }
    if (stats == nullptr) return;
    double kernel_ns = 0;
    for (const triage::GraphFamilyTime& f : stats->families) kernel_ns += f.total_ns;
    std::lock_guard<std::mutex> flock(p_.families.mutex());
    size_t written = 0;
    for (const triage::GraphFamilyTime& ft : stats->families) {
      if (written >= kMaxFamiliesPerGraph || !(kernel_ns > 0) || ft.total_ns / kernel_ns < kMinRecordShare) break;
      Family* f = p_.families.by_id_locked(ft.family);
      if (f == nullptr) continue;
      // A family profiled on its own launches keeps those counters: they are its alone. Unless
      // they could not route (always-on's first group over a warm-up launch before the capture,
      // never launched directly again): then the graph's counters are the better verdict, and a
      // later complete record of its own launches takes the family back.
      if (f->last_record && f->last_record->status == wire::ProfileStatus::kProfiled &&
          !f->last_record->input.graph_scope &&
          f->last_record->diagnosis.classification != triage::Classification::kInconclusive) {
        continue;
      }
      wire::KernelRecord record;
      triage::KernelInput& in = record.input;
      in.mangled_name = f->mangled;
      in.demangled_name = f->names->demangled;
      in.function_name = f->names->function;
      in.device = f->device;
      in.launch = p_.trace.graph_launch_locked(f->family_id);
      in.device_limits = limits;
      in.metrics = t.measured;
      in.collection.replay_mode = triage::ReplayMode::kApplication;
      in.collection.clock_control = triage::ClockControl::kNone;
      in.collection.collector = triage::Collector::kAgent;
      in.collection.cache_control = "none";
      in.collection.passes = static_cast<uint32_t>(spans.size());
      p_.builds.fill(f->mangled, in);
      for (const auto& [pass, span] : spans) {
        triage::AssembledLaunch a;
        a.launch_index = pass.correlation_id;
        if (in.launch) {
          a.grid = in.launch->grid;
          a.block = in.launch->block;
          a.dynamic_shared_bytes = in.launch->dynamic_shared_bytes;
        }
        a.duration_ns = span;
        a.metric_group = pass.stage;
        a.metrics = pass.metrics;
        in.assembled_launches.push_back(a);
      }
      triage::GraphScope scope;
      scope.graph_id = t.graph_id;
      scope.exec_id = t.exec_id;
      scope.replays_profiled = t.replays_profiled;
      in.graph_scope = scope;
      p_.trace.fill_inputs_locked(f->family_id, in);  // the graph's replays, the kernel's share
      const double share = ft.total_ns / kernel_ns;
      std::string pm_reason;
      if (share < kNodeSamplingShare && p_.config.graph_pm_sampling) {
        // Below half of the graph: its own PM samples, when it has enough, replace the graph's
        // counters (which d0.graph_share would block).
        const auto own = pm.find(f->family_id);
        if (own != pm.end() && own->second.samples >= kMinNodeSamples && own->second.metrics.size() > 0) {
          in.metrics = own->second.metrics;
          if (pm_span) in.metrics.set(std::string(kDuration), *pm_span, "nsecond");
          in.assembled_launches.clear();
          in.collection.passes = 1;
          triage::NodeSampling ns;
          ns.samples = own->second.samples;
          ns.interval_ns = t.pm_batch->interval_ns;
          ns.launch_correlation_id = t.pm_correlation_id;
          ns.launch_samples = pm_launch_samples;
          ns.executions = own->second.executions;
          in.graph_scope->node_sampling = ns;
          in.graph_scope->replays_profiled = 1;
        } else if (!t.pm_error.empty()) {
          pm_reason = t.pm_error;
        } else if (!pm_unusable.empty()) {
          pm_reason = "PM sampling: the sampled launch (graph launch " + std::to_string(t.pm_correlation_id) +
                      ") cannot be used: " + pm_unusable;
        } else if (pm_untraced) {
          pm_reason = "PM sampling: the trace holds no execution of the sampled launch (graph launch " +
                      std::to_string(t.pm_correlation_id) + ") yet, so its samples are not attributed";
        } else if (t.pm_batch && !pm.empty()) {
          const uint32_t n = own != pm.end() ? own->second.samples : 0;
          pm_reason = n < kMinNodeSamples
                          ? "PM sampling: no sample lay wholly inside this kernel's executions in the sampled launch "
                            "(graph launch " + std::to_string(t.pm_correlation_id) + ", " +
                                std::to_string(pm_launch_samples) + " samples across it)"
                          : "PM sampling: none of the metrics the rules read came back in this kernel's " +
                                std::to_string(n) + " samples";
        }
      }
      if (auto s = t.samples.find(f->mangled); s != t.samples.end()) {
        in.pc_samples = s->second.summary;
        record.pc_code = s->second.code;
        record.pc_sm_arch = s->second.sm_arch;
      } else if (t.phase == Target::Phase::kDone && (!t.sample_error.empty() || !t.samples.empty())) {
        triage::PcSampleSummary none;
        none.error = !t.sample_error.empty() ? t.sample_error : "no samples of this kernel in the sampled graph launch";
        none.sampling_period_log2 = t.sample_period_log2;
        in.pc_samples = none;
      }
      record.family_id = p_.trace_started.load() ? f->family_id : 0;
      record.status = wire::ProfileStatus::kProfiled;
      record.launch_api = wire::LaunchApi::kGraph;
      record.correlation_id = t.passes.empty() ? 0 : t.passes.back().correlation_id;
      record.profile_number = t.stages;
      record.rejected_metrics = in.graph_scope->node_sampling ? std::vector<std::string>{} : t.rejected;
      if (!pm_reason.empty()) record.status_detail = pm_reason;
      if (auto d = in.metrics.get(kDuration)) record.duration_ns = *d;
      record.diagnosis = triage::triage_kernel(in, p_.triage_options);
      const bool first = !f->last_record || !f->last_record->input.graph_scope;
      record.revision = f->last_record ? f->last_record->revision + 1 : 0;
      if (first) ++f->stats.profiled;
      f->last_record = record;
      f->diagnosis = record.diagnosis;
      f->last_status = record.status;
      f->last_detail.clear();
      f->complete = t.phase == Target::Phase::kDone;
      if (write) records.push_back(std::move(record));
      ++written;
    }
  }
  for (const wire::KernelRecord& r : records) p_.output.write_kernel(r);
  if (!write || records.empty()) return;
  const uint64_t now = p_.monotonic_ns();
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f", now > start_mono_ns_ ? static_cast<double>(now - start_mono_ns_) * 1e-9 : 0.0);
  const std::string message = "graph " + std::to_string(t.graph_id) + " (exec " + std::to_string(t.exec_id) +
                              "): verdicts for " + std::to_string(records.size()) + " kernel(s) from its counters over " +
                              std::to_string(t.replays_profiled) + " of its launches (" + std::to_string(t.stages) +
                              (t.stages == 1 ? " stage" : " stages") +
                              (t.phase == Target::Phase::kDone ? ", complete" : ", more to come") + "), " + elapsed +
                              " s after the agent started";
  p_.log.info(message);
  p_.notify(wire::Severity::kInfo, "graph_verdicts", message, 0);
}

void GraphProfiler::retarget_locked(const triage::TimelineAccumulator& timeline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (targets_.size() >= kMaxTargets) return;
  }
  if (p_.trace.graph_accumulator_locked().empty()) return;
  // The scan reads every graph's summary: at most every kRetargetIntervalNs once it has found
  // families to target (a short program's replays may all run within a second of the first).
  const uint64_t now = p_.monotonic_ns();
  const uint64_t last = last_retarget_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now < last + kRetargetIntervalNs) return;
  // The families wanted: ranked (top:N or share), or every one under CUTRIAGE_SELECT=all.
  std::set<uint64_t> wanted;
  {
    std::lock_guard<std::mutex> flock(p_.families.mutex());
    for (Family* f : p_.families.all_locked()) {
      const bool selected = p_.config.select == SelectMode::kAll || f->ranked;
      if (!selected) continue;
      if (f->last_record && f->last_record->status == wire::ProfileStatus::kProfiled &&
          !f->last_record->input.graph_scope) {
        continue;  // counters of its own launches already
      }
      const triage::FamilyTimeStats* s = timeline.family(f->family_id);
      if (s == nullptr || s->graph_launches == 0 || 2 * s->graph_launches < s->launches) continue;
      wanted.insert(f->family_id);
    }
  }
  if (wanted.empty()) return;
  last_retarget_ns_.store(now, std::memory_order_relaxed);
  const std::vector<triage::GraphStats> graphs = p_.trace.graph_accumulator_locked().summary();
  std::vector<std::pair<uint32_t, uint32_t>> picks;  // (graph, exec)
  for (uint64_t family : wanted) {
    const triage::GraphStats* best = nullptr;
    double best_ns = 0;
    for (const triage::GraphStats& g : graphs) {
      for (const triage::GraphFamilyTime& ft : g.families) {
        if (ft.family == family && ft.total_ns > best_ns) {
          best = &g;
          best_ns = ft.total_ns;
        }
      }
    }
    if (best == nullptr) continue;
    const uint32_t exec = p_.graphs.exec_of(best->graph_id);
    if (exec != 0) picks.emplace_back(best->graph_id, exec);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [graph, exec] : picks) {
    if (targets_.size() >= kMaxTargets) break;
    if (targets_.count(exec) != 0) continue;
    auto t = std::make_unique<Target>();
    t->exec_id = exec;
    t->graph_id = graph;
    targets_.emplace(exec, std::move(t));
    p_.log.info("profiling graph " + std::to_string(graph) + " (exec " + std::to_string(exec) +
                ") over its next launches: it holds a ranked kernel's time");
  }
  any_target_.store(!targets_.empty(), std::memory_order_relaxed);
}

void GraphProfiler::finish() {
  std::vector<uint32_t> execs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [exec, t] : targets_) {
      if (t->stages > 0) execs.push_back(exec);
    }
  }
  // The passes' spans arrived with the last flush: the families' records take them, unwritten
  // (the agent's end of session rewrites every record with the trace's last word).
  for (uint32_t exec : execs) write_records(exec, false);
}

}  // namespace cutriage::agent
