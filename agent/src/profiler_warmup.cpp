#include "profiler_warmup.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost_text.h"

namespace cutriage::agent {

void ProfilerWarmup::warm_up(const collectors::LaunchEvent& fast_event) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread pays it now
  const uint32_t device = fast_event.device;
  if ((done_.load() & (uint64_t{1} << device)) != 0) return;
  collectors::LaunchEvent event = fast_event;
  p_.platform.fill_launch_details(event);
  // A launch being captured runs nothing now; the next one on the device tries again.
  if (event.stream_capturing) return;
  const uint64_t started = p_.monotonic_ns();
  std::optional<collectors::DeviceInfo> dev = p_.devices.info(device);
  if (!dev || dev->limits.chip.empty()) {
    finish(device);
    return;
  }
  const std::string& chip = dev->limits.chip;
  std::string error;
  std::shared_ptr<collectors::ProfilerHost> host = p_.devices.host(chip, &error);
  if (!host) {
    finish(device);
    p_.log.debug("start-up not paid ahead on device " + std::to_string(device) + ": profiler host: " + error);
    return;
  }
  collectors::Result<collectors::MetricPlan> planned = p_.plans.plan(*host, chip, {kMetric});
  if (!planned.is_ok() || planned.value().passes != 1) {
    finish(device);
    p_.log.debug("start-up not paid ahead on device " + std::to_string(device) + ": metric plan: " +
                 (planned.is_ok() ? "more than one pass" : planned.status().message()));
    return;
  }
  collectors::MetricPlan plan = std::move(planned).value();
  plan.replay = collectors::PlanReplay::kNone;
  // Before the device's first profile: nothing else profiles there yet, but a claim keeps it so.
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, 0, started, 0);
  if (!ctx) return;  // a profile holds the device: the next launch tries again
  const ClaimGuard claim(ctx.get());
  collectors::Status s;
  collectors::RangeProfilerSteps steps;
  {
    // An object of its own, gone before the context's profiler is made: a failure here (no
    // permission) is left to the first launch that wants the profiler, which says so and sets
    // the agent's state, as without the warm-up.
    std::lock_guard<std::mutex> plock(ctx->profiler_mutex);
    if (ctx->profiler) (void)ctx->profiler->disable();
    ctx->configured_group.store(-1);
    collectors::Result<std::unique_ptr<collectors::RangeProfiler>> made =
        p_.platform.make_range_profiler(ctx->event, ctx->max_ranges);
    s = made.status();
    if (made.is_ok()) {
      s = made.value()->warm_up(plan);
      steps = made.value()->last_steps();
    }
  }
  finish(device);
  if (s.code() == collectors::StatusCode::kNotSupported) return;  // nothing to pay ahead
  // Paid whether or not it went through: the time is the application's all the same.
  p_.always_on.startup_paid_since(started);
  const uint64_t spent = p_.monotonic_ns() - started;
  if (!s.is_ok()) {
    // Said again, with its consequences, by the first launch that wants the profiler.
    p_.log.debug("start-up not paid ahead on device " + std::to_string(device) + " (" + ms_text(spent) +
                 "): " + s.message());
    return;
  }
  p_.log.info("CUPTI's range-profiler start-up paid ahead of the first profile on device " + std::to_string(device) + ": " +
              ms_text(spent) + " (Start " + ms_text(steps.start_ns) + "), reported apart from the budget " +
              "(CUTRIAGE_WARMUP=0 leaves it to the first profiled launch)");
}

}  // namespace cutriage::agent
