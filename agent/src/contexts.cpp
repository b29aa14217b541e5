#include "contexts.h"

namespace cutriage::agent {

void ContextState::release_locked() {
  if (profiler) (void)profiler->disable();
  configured_group.store(-1);
  profiled_end_mono_ns.store(0);
  stage_family.store(0);
}

collectors::Status ContextState::ensure_range_profiler_locked(collectors::Platform& platform, bool* failed_now) {
  *failed_now = false;
  if (!profiler && !profiler_failed) {
    collectors::Result<std::unique_ptr<collectors::RangeProfiler>> made = platform.make_range_profiler(event, max_ranges);
    if (made.is_ok()) {
      profiler = std::move(made).value();
    } else {
      profiler_failed = true;
      *failed_now = true;
      return made.status();
    }
  }
  if (!profiler) return {collectors::StatusCode::kUnavailable, "range profiler unavailable on this context"};
  return collectors::Status::ok();
}

collectors::Status ContextState::begin_sampling_locked(collectors::Platform& platform,
                                                      const collectors::PcSamplingOptions& options, bool* failed_now) {
  *failed_now = false;
  if (profiler) (void)profiler->disable();
  configured_group.store(-1);
  stage_family.store(0);
  if (!sampler && !sampler_failed) {
    collectors::Result<std::unique_ptr<collectors::PcSampler>> made = platform.make_pc_sampler(event);
    if (made.is_ok()) {
      sampler = std::move(made).value();
    } else {
      sampler_failed = true;
      sampler_error = made.status().message();
      *failed_now = true;
    }
  }
  return sampler ? sampler->begin(options) : collectors::Status(collectors::StatusCode::kNotSupported, sampler_error);
}

collectors::Status ContextState::begin_pm_sampling_locked(collectors::Platform& platform, const std::string& chip,
                                                         const collectors::PmSamplingOptions& options) {
  if (profiler) (void)profiler->disable();
  configured_group.store(-1);
  profiled_end_mono_ns.store(0);
  stage_family.store(0);
  if (!pm_sampler && !pm_failed) {
    collectors::Result<std::unique_ptr<collectors::PmSampler>> made = platform.make_pm_sampler(event, chip);
    if (made.is_ok()) {
      pm_sampler = std::move(made).value();
    } else {
      pm_failed = true;
      pm_error = made.status().message();
    }
  }
  return pm_sampler ? pm_sampler->begin(options) : collectors::Status(collectors::StatusCode::kNotSupported, pm_error);
}

void ContextTable::created(const collectors::ContextEvent& event) {
  auto ctx = std::make_shared<ContextState>();
  ctx->event = event;
  std::lock_guard<std::mutex> lock(mutex_);
  ctx->max_ranges = max_ranges_;
  contexts_[event.context_id] = std::move(ctx);
  ++seen_;
}

void ContextTable::destroying(const collectors::ContextEvent& event) {
  std::shared_ptr<ContextState> ctx;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = contexts_.find(event.context_id);
    if (it == contexts_.end()) return;
    ctx = std::move(it->second);
    contexts_.erase(it);
  }
  if (!ctx->busy.load()) {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    ctx->profiler.reset();
    ctx->sampler.reset();
    ctx->pm_sampler.reset();
  }
}

std::shared_ptr<ContextState> ContextTable::for_launch(const collectors::LaunchEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<ContextState>& ctx = contexts_[event.context_id];
  if (!ctx) {  // a context created before the agent subscribed
    ++seen_;
    ctx = std::make_shared<ContextState>();
    ctx->max_ranges = max_ranges_;
    ctx->event = collectors::ContextEvent{event.context_id, event.context, event.device};
  }
  return ctx;
}

std::shared_ptr<ContextState> ContextTable::claim(const collectors::LaunchEvent& event, uint32_t graph_exec,
                                                  uint64_t now_ns, uint64_t family) {
  std::shared_ptr<ContextState> ctx = for_launch(event);
  if (ctx->held_by_graph(graph_exec, now_ns) || ctx->held_by_stage(graph_exec != 0 ? 0 : family, now_ns)) {
    return nullptr;
  }
  bool expected = false;
  if (!ctx->busy.compare_exchange_strong(expected, true)) return nullptr;
  if (!claim_device(ctx, now_ns)) {
    ctx->busy.store(false);
    return nullptr;
  }
  return ctx;
}

std::shared_ptr<ContextState> ContextTable::claim_for_window(uint32_t device, uint64_t now_ns) {
  std::shared_ptr<ContextState> pick;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, ctx] : contexts_) {
      if (!ctx || ctx->event.device != device) continue;
      // A range profiler not yet released (a stage may still be collecting on it), a graph
      // stage's hold, or a launch in flight: not now.
      if (ctx->profiled_end_mono_ns.load() != 0 || ctx->busy.load() || ctx->held_by_graph(0, now_ns) ||
          ctx->held_by_stage(0, now_ns)) {
        return nullptr;
      }
      if (!pick && ctx->event.context != nullptr) pick = ctx;
    }
  }
  if (!pick) return nullptr;
  bool expected = false;
  if (!pick->busy.compare_exchange_strong(expected, true)) return nullptr;
  if (!claim_device(pick, now_ns) || pick->profiled_end_mono_ns.load() != 0) {
    pick->busy.store(false);
    return nullptr;
  }
  return pick;
}

bool ContextTable::claim_device(const std::shared_ptr<ContextState>& ctx, uint64_t now_ns) {
  std::vector<std::shared_ptr<ContextState>> others;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, other] : contexts_) {
      if (other && other != ctx && other->event.device == ctx->event.device) others.push_back(other);
    }
  }
  for (const std::shared_ptr<ContextState>& other : others) {
    // busy is re-read under the other context's lock: its owner sets busy before taking the
    // lock to begin, so a profile that started meanwhile is seen here and never disabled.
    std::lock_guard<std::mutex> lock(other->profiler_mutex);
    if (other->busy.load() || other->held_by_graph(0, now_ns) || other->held_by_stage(0, now_ns)) return false;
    if (other->profiler) (void)other->profiler->disable();
    other->configured_group.store(-1);
    other->stage_family.store(0);
  }
  return true;
}

std::vector<std::shared_ptr<ContextState>> ContextTable::idle_since(uint64_t now_ns, uint64_t idle_ns) const {
  std::vector<std::shared_ptr<ContextState>> idle;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, ctx] : contexts_) {
    const uint64_t ended = ctx ? ctx->profiled_end_mono_ns.load() : 0;
    if (ended != 0 && now_ns >= ended + idle_ns && !ctx->held_by_graph(UINT32_MAX, now_ns) &&
        !ctx->held_by_stage(0, now_ns)) {
      idle.push_back(ctx);
    }
  }
  return idle;
}

bool ContextTable::release_pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, ctx] : contexts_) {
    if (ctx && ctx->profiled_end_mono_ns.load() != 0) return true;
  }
  return false;
}

bool ContextTable::follows_launches(uint64_t now_ns, uint64_t quiet_stage_family) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, ctx] : contexts_) {
    if (!ctx) continue;
    if (ctx->busy.load()) return true;
    if (ctx->graph_exec.load() != 0 && now_ns < ctx->graph_pass_mono_ns.load() + ContextState::kGraphHoldNs) {
      return true;
    }
    const uint64_t stage = ctx->stage_family.load();
    if (stage != 0 && stage != quiet_stage_family && now_ns < ctx->stage_pass_mono_ns.load() + ContextState::kGraphHoldNs) {
      return true;
    }
  }
  return false;
}

uint64_t ContextTable::seen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seen_;
}

}  // namespace cutriage::agent
