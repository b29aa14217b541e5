#include "launch_profiler.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "launch_active.h"

namespace cutriage::agent {

using collectors::LaunchEvent;
using collectors::StatusCode;

namespace {

std::atomic<uint64_t> g_next_launch_profiler_id{1};

}  // namespace

LaunchProfiler::LaunchProfiler(Parts parts)
    : p_(std::move(parts)),
      single_pass_(p_.always_on != nullptr ? static_cast<SinglePassPolicy*>(p_.always_on) : p_.app_replay),
      instance_id_(g_next_launch_profiler_id.fetch_add(1)) {}

std::unique_ptr<LaunchProfiler::Active>& LaunchProfiler::active_slot() {
  thread_local std::unique_ptr<Active> slot;
  return slot;
}

bool LaunchProfiler::owns_slot(uint64_t correlation_id) const {
  const std::unique_ptr<Active>& slot = active_slot();
  return slot && slot->owner == instance_id_ && slot->correlation_id == correlation_id;
}

std::unique_ptr<LaunchProfiler::Active> LaunchProfiler::new_active(const std::shared_ptr<ContextState>& ctx,
                                                                   Family& family, const LaunchEvent& event,
                                                                   uint64_t launch_index) const {
  auto active = std::make_unique<Active>();
  active->owner = instance_id_;
  active->context = ctx;
  active->family = &family;
  active->launch_index = launch_index;
  active->correlation_id = event.correlation_id;
  active->event = event;
  active->event.mangled_name = family.mangled;  // the callback's string is gone by the exit
  return active;
}

bool LaunchProfiler::enter(const LaunchEvent& fast_event, Family& family, uint64_t launch_index) {
  try {
    // The slow path: a launch the selection may want. Only now the driver is asked about the stream.
    const uint64_t entered = p_.monotonic_ns();
    const uint64_t started_mono = p_.always_on ? entered : 0;
    LaunchEvent event = fast_event;
    p_.platform.fill_launch_details(event);
    if (!p_.nvtx.allows(p_.config.nvtx_include, p_.config.nvtx_exclude)) {
      family.nvtx_excluded.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (single_pass_ != nullptr && event.launch && family.resume_pending.load(std::memory_order_relaxed)) {
      // The record of a family resumed here routes on this process's launch (Decision 1's
      // occupancy needs the function's registers and shared memory); once per resumed family.
      (void)p_.platform.complete_launch_config(event, &*event.launch);
    }
    // The chip decides the first stage's counters; device facts are cached after the first call.
    std::string chip;
    if (!event.stream_capturing) {
      if (std::optional<collectors::DeviceInfo> dev = p_.devices.info(event.device)) chip = dev->limits.chip;
    }
    std::shared_ptr<const MetricGroups> groups;
    ContextGroups context;
    if (single_pass_ != nullptr && !chip.empty()) {
      // Always-on plans on the flush thread when there is one (about 100 ms of Profiler Host calls,
      // once per chip: on the H200 that was 0.65% of a 20 s service run when the application
      // thread paid it). Application replay has no budget, and a launch left without a group is
      // one a short program may never make again: planned here, now.
      groups = single_pass_->groups_for(chip, p_.always_on == nullptr || !p_.flush_running.load());
      const std::shared_ptr<ContextState> ctx = p_.contexts.for_launch(event);
      context.groups = groups.get();
      context.configured = ctx->configured_group.load();
      context.configured_since_ns = ctx->configured_mono_ns.load();
      context.stage_family = ctx->stage_family.load();
      context.stage_pass_ns = ctx->stage_pass_mono_ns.load();
    }
    Selection selection = p_.selector.select(event, launch_index, chip, family, context);
    if (family.resumed_unwritten.exchange(false)) {
      std::optional<wire::KernelRecord> resumed;
      {
        std::lock_guard<std::mutex> lock(p_.families.mutex());
        resumed.swap(family.resumed_record);
      }
      if (resumed) p_.output.write_kernel(*resumed);
      note_complete(family);
    }
    if (selection.kind == Selection::Kind::kSkip) {
      note_complete(family);  // the selection may have found nothing left to collect
      return false;
    }
    if (selection.kind == Selection::Kind::kNoReplay) {  // never replayed
      const std::string why =
          event.cooperative ? "cooperative launch: its blocks may wait on each other, so it is never replayed"
                            : "communication kernel: it may wait on other GPUs or the host, so it is never replayed";
      record_unprofiled(event, family, wire::ProfileStatus::kNotProfiledNoReplay, why, launch_index);
      return false;
    }
    if (selection.kind == Selection::Kind::kPcSampling) {
      begin_sampling(event, family, launch_index, selection.deep);
    } else {
      begin_counters(event, family, launch_index, selection, groups, started_mono);
    }
    // What an admitted launch reserved is trued up with its measured cost when it ends, or here
    // when it does not happen after all.
    const bool budgeted = p_.always_on && selection.deep == 0;
    if (owns_slot(event.correlation_id)) {
      Active& active = *active_slot();
      active.started_mono_ns = started_mono;
      active.budgeted = budgeted;
      active.cost = selection.cost;
      active.entered_ns = entered;
      active.entry_done_ns = p_.monotonic_ns();
      return true;
    }
    // Not profiled after all (the context was taken, the profiler did not start): what the budget
    // reserved is returned, what the attempt took is spent.
    if (budgeted) p_.always_on->cancel_since(selection.cost, started_mono);
    return false;
  } catch (const std::exception& e) {
    p_.log.log_once(LogLevel::kError, "launch-enter", std::string("internal error at launch: ") + e.what());
  } catch (...) {
    p_.log.log_once(LogLevel::kError, "launch-enter", "internal error at launch");
  }
  active_slot().reset();
  return false;
}

void LaunchProfiler::queue_plans(const std::string& chip, const std::vector<std::vector<std::string>>& lists) {
  for (const std::vector<std::string>& list : lists) {
    if (!list.empty()) p_.plans.queue(chip, list);
  }
  if (p_.plans_queued) p_.plans_queued();
}

size_t LaunchProfiler::make_queued_plans() {
  const uint64_t t0 = p_.monotonic_ns();
  bool any = false;
  const size_t ready = p_.plans.make_queued([&](const std::string& chip) {
    any = true;
    std::string error;  // a chip without a host is said by the launch that needs it
    return p_.devices.host(chip, &error);
  });
  if (any) {
    p_.log.debug(std::to_string(ready) + " metric plan(s) made ahead, off the application's thread, in " +
                std::to_string((p_.monotonic_ns() - t0) / 1000000) + " ms");
  }
  return ready;
}

void LaunchProfiler::begin_counters(const LaunchEvent& event, Family& family, uint64_t launch_index,
                                    const Selection& selection, const std::shared_ptr<const MetricGroups>& groups,
                                    uint64_t started_mono) {
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, 0, p_.monotonic_ns(), family.family_id);
  if (!ctx) {
    // Undo the selection's bookkeeping: this launch ends up unprofiled after all.
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    --family.profiles_started;
    --p_.families.totals_locked().profiles_started;
    // Nothing was collected after all: the next launch may ask for the same counters again (in
    // deep mode too, where they were the route's next ones: kept as attempted, they were lost).
    for (const std::string& m : selection.metrics) family.attempted.erase(m);
    if (selection.stage_pass) family.ao_stage_pass_begun_ns = 0;  // no pass in flight after all
    if (selection.deep != 0 && p_.selector.deep_locked()) p_.selector.deep_locked()->captured.erase(family.family_id);
    p_.selector.update_candidate_locked(family);
    return;
  }
  ClaimGuard claim(ctx.get());
  std::unique_ptr<Active> active = new_active(ctx, family, event, launch_index);
  active->group = selection.group;
  active->stage_pass = selection.stage_pass;
  active->stage_collection = selection.stage_collection;
  active->deep = selection.deep;

  auto give_up = [&](wire::ProfileStatus status, const std::string& detail) {
    claim.release();
    record_unprofiled(event, family, status, detail, launch_index);
  };
  std::optional<collectors::DeviceInfo> dev = p_.devices.info(event.device);
  if (!dev || dev->limits.chip.empty()) {
    give_up(wire::ProfileStatus::kFailed, "chip of device " + std::to_string(event.device) + " unknown");
    return;
  }
  std::string error;
  const uint64_t plan_begun = p_.monotonic_ns();  // the host (made once per chip) and the plan
  active->host = p_.devices.host(dev->limits.chip, &error);
  if (!active->host) {
    give_up(wire::ProfileStatus::kFailed, "profiler host: " + error);
    return;
  }
  if (selection.group >= 0 && groups) {
    active->plan = groups->plans[static_cast<size_t>(selection.group)];  // planned once, one pass, no replay
    active->groups = groups;
  } else if (p_.app_replay != nullptr) {
    // Application replay never replays a launch: a plan of its own could take several passes.
    give_up(wire::ProfileStatus::kFailed, "application replay: no single-pass metric group for this launch");
    return;
  } else {
    collectors::Result<collectors::MetricPlan> plan = p_.plans.plan(*active->host, dev->limits.chip, selection.metrics);
    if (!plan.is_ok()) {
      give_up(wire::ProfileStatus::kFailed, "metric plan: " + plan.status().message());
      return;
    }
    active->plan = std::move(plan).value();
    // A stage's pass: one on this launch as the application issued it, the next ones on the
    // family's next launches (nothing replayed, saved or restored).
    if (selection.stage_pass) {
      active->plan.replay = collectors::PlanReplay::kLaunches;
      active->plan.collection = selection.stage_collection;
    }
  }
  active->plan_ns = p_.monotonic_ns() - plan_begun;
  if (active->event.launch) {
    collectors::Status s = p_.platform.complete_launch_config(event, &*active->event.launch);
    if (!s.is_ok()) {
      p_.log.log_once(LogLevel::kWarn, "func-attr",
                      "registers and shared memory of " + family.names->function + " unavailable (" + s.message() +
                          "); occupancy checks will be missing");
    }
  }

  active->gate = std::shared_lock<std::shared_mutex>(p_.gate);
  {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    bool failed_now = false;
    const collectors::Status made = ctx->ensure_range_profiler_locked(p_.platform, &failed_now);
    if (failed_now && made.code() == StatusCode::kPermissionDenied) {
      p_.set_inactive(wire::AgentState::kPermissionDenied, made.message());
      claim.release();
      record_unprofiled(event, family, wire::ProfileStatus::kNotProfiledPermission, made.message(), launch_index);
      return;
    }
    if (failed_now) {
      p_.notify(wire::Severity::kError, "range_profiler_failed",
                "range profiler unavailable on context " + std::to_string(event.context_id) + ": " + made.message(), 0);
    }
    if (!made.is_ok()) {
      claim.release();
      record_unprofiled(event, family, wire::ProfileStatus::kFailed, "range profiler unavailable on this context",
                        launch_index);
      return;
    }
    active->start_ns = p_.monotonic_ns();
    collectors::Status s = ctx->profiler->begin(active->plan);
    active->started_ns = p_.monotonic_ns();
    if (!s.is_ok() || ctx->configured_group.load() != selection.group) ctx->configured_mono_ns.store(started_mono);
    ctx->configured_group.store(s.is_ok() ? selection.group : -1);
    // A stage holds the context for its family between its passes; any other configuration ends
    // a stage that was in progress on it.
    ctx->stage_family.store(s.is_ok() && selection.stage_pass ? family.family_id : 0);
    if (s.is_ok() && selection.stage_pass) active->stage_pass_index = ctx->profiler->pass_in_progress();
    if (s.is_ok() && selection.stage_pass) ctx->stage_pass_mono_ns.store(started_mono);
    if (s.is_ok() && selection.group >= 0 && p_.config.release_ms > 0 && p_.always_on) {
      // The profiler stays configured until release_ms after this launch: other families may take
      // the group on credit meanwhile, so their launches must reach the selection.
      p_.always_on->extend_credit(p_.monotonic_ns() + uint64_t{p_.config.release_ms} * 1'000'000);
    }
    if (!s.is_ok()) {
      claim.release();
      if (s.code() == StatusCode::kPermissionDenied) {
        p_.set_inactive(wire::AgentState::kPermissionDenied, s.message());
        record_unprofiled(event, family, wire::ProfileStatus::kNotProfiledPermission, s.message(), launch_index);
      } else {
        record_unprofiled(event, family, wire::ProfileStatus::kFailed, "range profiler start: " + s.message(),
                          launch_index);
      }
      return;
    }
  }
  try {
    if (p_.trace_started.load()) {
      // Its execution(s) in the trace are replays: counted, kept out of the duration statistics.
      p_.trace.mark_replayed(event);
      active->begin_trace_ns = p_.platform.timestamp_ns();
    }
    claim.hand_over();
    active_slot() = std::move(active);
  } catch (...) {
    // Begun but never handed over (an allocation failed): the profile is ended unread, so the
    // context's profiler is not left started; the claim goes back as the exception leaves.
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    (void)ctx->profiler->end();
    throw;
  }
}

void LaunchProfiler::begin_sampling(const LaunchEvent& event, Family& family, uint64_t launch_index, uint64_t deep) {
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, 0, p_.monotonic_ns());
  if (!ctx) {  // this launch is not sampled after all: the next one will be
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    family.pc_started = false;
    if (deep != 0 && p_.selector.deep_locked()) p_.selector.deep_locked()->sampled.erase(family.family_id);
    p_.selector.update_candidate_locked(family);
    return;
  }
  ClaimGuard claim(ctx.get());
  collectors::PcSamplingOptions options;
  options.period_log2 = p_.config.pc_sampling_period_log2;
  if (options.period_log2 == 0) {
    double duration_ns = 0;
    {
      std::lock_guard<std::mutex> lock(p_.families.mutex());
      if (auto d = family.measured.get("gpu__time_duration.sum")) duration_ns = *d;
    }
    triage::DeviceLimits limits;
    if (std::optional<collectors::DeviceInfo> d = p_.devices.known(event.device)) limits = d->limits;
    options.period_log2 = auto_sampling_period_log2(duration_ns, limits.sm_clock_hz, limits.sm_count);
  }

  std::unique_ptr<Active> active = new_active(ctx, family, event, launch_index);
  active->pc_sampling = true;
  active->deep = deep;
  active->gate = std::shared_lock<std::shared_mutex>(p_.gate);
  collectors::Status started;
  {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    bool failed_now = false;
    active->start_ns = p_.monotonic_ns();
    started = ctx->begin_sampling_locked(p_.platform, options, &failed_now);
    active->started_ns = p_.monotonic_ns();
    if (failed_now) {
      p_.log.log_once(LogLevel::kWarn, "pc-sampler",
                      "PC sampling unavailable (" + ctx->sampler_error + "): Decisions 3 and 6 go without source lines");
    }
  }
  if (!started.is_ok()) {
    claim.release();
    active.reset();  // releases the gate before writing
    PcSummary failed;
    failed.summary.error = "PC sampling could not start: " + started.message();
    failed.summary.from_launch_index = launch_index;
    failed.summary.sampling_period_log2 = options.period_log2;
    finish_sampling(family, std::move(failed));
    return;
  }
  // The sampled launch runs serialized and is waited for: keep it out of the duration statistics
  // like a replayed one (its record comes back timed, marked "replayed").
  try {
    if (p_.trace_started.load()) p_.trace.mark_replayed(event);
    claim.hand_over();
    active_slot() = std::move(active);
  } catch (...) {
    // Begun but never handed over: the sampler is stopped unread (see begin_counters).
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    (void)ctx->sampler->end();
    throw;
  }
}

void LaunchProfiler::exit(const LaunchEvent& event) {
  if (!owns_slot(event.correlation_id)) return;
  std::unique_ptr<Active>& slot = active_slot();
  slot->exit_ns = p_.monotonic_ns();
  try {
    if (slot->pc_sampling) {
      complete_sampling(*slot);
    } else {
      complete_counters(*slot);
    }
  } catch (const std::exception& e) {
    p_.log.log_once(LogLevel::kError, "launch-exit", std::string("internal error after launch: ") + e.what());
  } catch (...) {
    p_.log.log_once(LogLevel::kError, "launch-exit", "internal error after launch");
  }
  if (slot->context) slot->context->busy.store(false);
  try {
    if (slot->budgeted && p_.always_on) p_.always_on->charge_since(slot->cost, slot->started_mono_ns);
  } catch (...) {
  }
  if (p_.trace_started.load() && slot->begin_trace_ns != 0) {
    try {
      p_.trace.add_replay_window(*slot->family, slot->event, slot->begin_trace_ns, p_.platform.timestamp_ns());
    } catch (...) {
    }
  }
  slot.reset();  // releases the flush gate
  if (p_.trace_started.load() && !p_.finished.load()) {
    // A replayed launch's record never completes (no timestamps), and CUPTI returns a buffer only
    // when all its records are complete: without a forced flush here the buffer stays with CUPTI
    // until exit and every later flush strands another one, until CUPTI drops records (seen on the
    // H200: 326 of 302 launches' records lost in a PyTorch run). The replay has synchronized, so
    // little else is in flight; what is comes back untimed.
    try {
      std::unique_lock<std::shared_mutex> gate(p_.gate, std::try_to_lock);
      if (gate.owns_lock()) p_.platform.flush_trace(true);
    } catch (...) {
    }
  }
}

void LaunchProfiler::complete_counters(Active& active) {
  collectors::Result<collectors::CounterData> data = [&] {
    ContextState& ctx = *active.context;
    std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
    collectors::Result<collectors::CounterData> ended = ctx.profiler->end();
    const bool passes_pending = ended.is_ok() && ended.value().passes_pending > 0;
    // A stage's pass that failed ends the stage: the family starts it again.
    if (active.stage_pass && !ended.is_ok()) ctx.stage_family.store(0);
    if (p_.always_on) {
      // An enabled profiler slows every launch on the context: released now (within this launch's
      // measured cost) or, after release_ms without another profiled launch, by the flush thread
      // (or cutriage_flush; without a flush thread by the first launch after that, see
      // release_if_due; at the latest when the agent finishes).
      // A stage with passes still to run keeps its configuration (ContextTable::idle_since leaves
      // the context alone while the stage holds it).
      if (p_.config.release_ms == 0 && !passes_pending) {
        ctx.release_locked();
      } else {
        const uint64_t now = p_.monotonic_ns();
        ctx.profiled_end_mono_ns.store(now);
        if (!p_.flush_running.load()) release_due_ns_.store(now + uint64_t{p_.config.release_ms} * 1'000'000);
      }
    }
    active.steps = ctx.profiler->last_steps();  // a release's Disable just above included
    return ended;
  }();
  if (!data.is_ok()) {
    record_failure(active, "range profiler stop/decode: " + data.status().message());
    return;
  }
  if (data.value().passes_pending > 0) {
    // A stage's pass with more to come on the family's next launches: no values, no record yet.
    const uint64_t now = p_.monotonic_ns();
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    Family& f = *active.family;
    if (f.reconcile_stage_pass(active.stage_collection, active.stage_pass_index)) {
      // The pass that configured the profiler: its cost goes into the stage's record.
      if (f.ao_stage_launches.empty()) f.ao_stage_first_cost = active.phases(now, 0);
      f.ao_stage_launches.push_back(active.launch_index);
      f.ao_stage_pass_ns.push_back(now > active.entered_ns ? now - active.entered_ns : 0);
    }
    return;
  }
  if (active.stage_pass) {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    // A stage the family gave up meanwhile: nothing to record.
    if (!active.family->reconcile_stage_pass(active.stage_collection, active.stage_pass_index)) return;
  }
  const uint64_t evaluate_begun = p_.monotonic_ns();
  collectors::Result<std::vector<collectors::MetricReading>> readings = active.host->evaluate(active.plan, data.value());
  active.evaluate_ns = p_.monotonic_ns() - evaluate_begun;
  if (!readings.is_ok()) {
    // A stage whose values cannot be read is over: its context no longer holds it, so the family's
    // next launch starts a new one (admitted as one) instead of passing for its next pass.
    if (active.stage_pass) active.context->stage_family.store(0);
    record_failure(active, "metric evaluation: " + readings.status().message());
    return;
  }
  publish_counters(active, readings.value(), p_.monotonic_ns());
}

void LaunchProfiler::complete_sampling(Active& active) {
  collectors::Result<collectors::PcSampleBatch> batch = [&] {
    std::lock_guard<std::mutex> lock(active.context->profiler_mutex);
    return active.context->sampler->end();
  }();
  PcSummary summary;
  if (!batch.is_ok()) {
    summary.summary.error = "PC sampling failed: " + batch.status().message();
  } else {
    collectors::PcSampleBatch& b = batch.value();
    // Kernel-serialized collection covers what ran between start and the end's synchronize: only
    // this launch, unless work queued earlier on other streams ran then too. Keep this launch's
    // PCs when CUPTI tags them with correlation ids.
    const auto mine = [&](const collectors::PcSampleRecord& r) { return r.correlation_id == active.correlation_id; };
    if (std::any_of(b.pcs.begin(), b.pcs.end(), mine)) {
      b.pcs.erase(std::remove_if(b.pcs.begin(), b.pcs.end(), [&](const auto& r) { return !mine(r); }), b.pcs.end());
    }
    summary = build_pc_summary(b, p_.cubins, p_.platform);
    if (!summary.summary.lines.empty()) sampled_launches_.fetch_add(1, std::memory_order_relaxed);
    if (summary.summary.lines.empty()) {
      summary.summary.error = "no samples came back for this launch (" + std::to_string(b.total_samples) +
                              " in all, period 2^" + std::to_string(b.period_log2) + " cycles)";
    }
    if (summary.cubin_missing) {
      p_.log.log_once(LogLevel::kInfo, "pc-cubin",
                      "a sampled kernel's module cubin was not kept (loaded before the agent, or beyond "
                      "CUTRIAGE_CUBIN_CACHE_MB): its samples show SASS offsets only");
    }
  }
  summary.summary.from_launch_index = active.launch_index;
  const uint64_t stopped = p_.monotonic_ns();
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    active.family->pc_sampled_mono_ns = stopped;
  }
  finish_sampling(*active.family, std::move(summary), active.phases(stopped, 0));
  if (active.deep != 0) p_.deep_profiled();
}

void LaunchProfiler::finish_sampling(Family& f, PcSummary summary, std::optional<wire::ProfileCost> cost) {
  wire::KernelRecord record;
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    if (!f.last_record) return;
    record = *f.last_record;
  }
  record.input.pc_samples = std::move(summary.summary);
  record.pc_code = std::move(summary.code);
  record.pc_sm_arch = std::move(summary.sm_arch);
  if (p_.trace_started.load()) p_.trace.fill_inputs(f.family_id, record.input);
  const uint64_t triage_begin = p_.monotonic_ns();
  record.diagnosis = triage::triage_kernel(record.input, p_.triage_options);
  if (cost) {
    cost->triage_ns = p_.monotonic_ns() - triage_begin;
    record.pc_cost = cost;
  }
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    // The record of the profiled launch, written again with the samples: readers keep the highest
    // revision of a launch.
    record.revision = f.last_record ? f.last_record->revision + 1 : record.revision + 1;
    f.diagnosis = record.diagnosis;
    f.last_record = record;
  }
  p_.output.write_kernel(record);
}

void LaunchProfiler::record_failure(Active& active, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    if (active.stage_pass) active.family->ao_stage_pass_begun_ns = 0;
    ++active.family->stats.failed;
    ++p_.families.totals_locked().totals.failed_profiles;
  }
  record_unprofiled(active.event, *active.family, wire::ProfileStatus::kFailed, what, active.launch_index);
}

void LaunchProfiler::record_unprofiled(const LaunchEvent& event, Family& f, wire::ProfileStatus status,
                                       const std::string& detail, uint64_t launch_index) {
  wire::KernelRecord record;
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    if (launch_index == 0) launch_index = p_.launch_counter.load();
    f.last_status = status;
    f.last_detail = detail;
    if (status == wire::ProfileStatus::kFailed && f.stats.failed == 0) {
      ++f.stats.failed;
      ++p_.families.totals_locked().totals.failed_profiles;
    }
    // Kernels that are never profiled get one record saying why, not one per launch.
    if (status != wire::ProfileStatus::kFailed) {
      if (f.wrote_unprofiled) return;
      f.wrote_unprofiled = true;
      p_.selector.update_candidate_locked(f);
    }
    fill_launch_input(f, event, launch_index, p_.devices, record.input);
  }
  if (status == wire::ProfileStatus::kFailed) {
    p_.log.log_once(LogLevel::kWarn, "fail-" + f.mangled, "could not profile " + f.names->function + ": " + detail);
  }
  record.context_id = event.context_id;
  record.stream_id = event.stream_id;
  record.correlation_id = event.correlation_id;
  record.launch_api = launch_api_of(event.api);
  record.family_id = p_.trace_started.load() ? f.family_id : 0;
  record.status = status;
  record.status_detail = detail;
  record.diagnosis.headline = "not profiled: " + detail;
  p_.output.write_kernel(record);
}

void LaunchProfiler::note_complete(Family& f) {
  if (!p_.always_on) return;
  std::string routed;
  std::string complete;
  std::optional<wire::KernelRecord> superseding;
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    routed = p_.always_on->routed_message_locked(f);
    complete = p_.always_on->completion_message_locked(f);
    // The PM window's record (pm_window.h) gives way to the complete range-profiler counters: their
    // record, written again, names it among its combined launches.
    if (f.complete && f.pm_record && !f.pm_superseded && f.last_record &&
        f.last_record->status == wire::ProfileStatus::kProfiled) {
      f.last_record->revision += 1;
      f.last_record->combined_launch_indices.push_back(f.pm_record->input.launch_index);
      f.pm_superseded = true;
      superseding = f.last_record;
    }
  }
  if (superseding) p_.output.write_kernel(*superseding);
  const uint64_t family = p_.trace_started.load() ? f.family_id : 0;
  if (!routed.empty()) {
    p_.log.info(routed);
    p_.notify(wire::Severity::kInfo, "always_on_routed", routed, family);
  }
  if (complete.empty()) return;
  p_.log.info(complete);
  p_.notify(wire::Severity::kInfo, "always_on_complete", complete, family);
}

void LaunchProfiler::release_idle_profilers() {
  if (!p_.always_on) return;
  const uint64_t idle_ns = uint64_t{p_.config.release_ms} * 1'000'000;
  const uint64_t now = p_.monotonic_ns();
  for (const std::shared_ptr<ContextState>& ctx : p_.contexts.idle_since(now, idle_ns)) release(*ctx);
  // Without a flush thread the release falls to a launch (release_if_due), scheduled once per
  // profiled launch: a profiler left because a graph's or a stage's hold kept it is looked at
  // again when that hold can have ended.
  if (!p_.flush_running.load() && p_.contexts.release_pending()) {
    uint64_t none = 0;
    (void)release_due_ns_.compare_exchange_strong(none, now + std::max(idle_ns, ContextState::kGraphHoldNs));
  }
}

void LaunchProfiler::release(ContextState& ctx) {
  // Claimed like a profiled launch: a launch being profiled on the context keeps it (and a launch
  // that arrives meanwhile runs unprofiled, as when another profile holds the context).
  bool expected = false;
  if (!ctx.busy.compare_exchange_strong(expected, true)) return;
  const uint64_t started = p_.monotonic_ns();
  {
    std::shared_lock<std::shared_mutex> gate(p_.gate);
    std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
    ctx.release_locked();
  }
  ctx.busy.store(false);
  // The Disable stalls the application's launches on the context meanwhile: charged.
  p_.always_on->charge_since(CostKind::kRelease, started);
}

}  // namespace cutriage::agent
