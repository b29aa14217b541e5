// Decision 1 rules, one at a time. Inputs are synthetic.
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d1 {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

using namespace cutriage::triage;

namespace {

CheckResult run_one(std::string_view id, const KernelInput& k, const Thresholds& t = {}) {
  const Rule* r = find_rule(id);
  REQUIRE(r != nullptr);
  MetricSet m = k.metrics;
  auto lr = add_launch_metrics(k, m);
  add_derived_metrics(m);
  return run_rule(*r, k, m, lr.stats, t);
}

KernelInput launch(uint32_t grid, uint32_t block, uint32_t regs = 32, bool limits = true) {
  KernelInput k;
  LaunchConfig c;
  c.grid = {grid, 1, 1};
  c.block = {block, 1, 1};
  c.registers_per_thread = regs;
  k.launch = c;
  if (limits) k.device_limits = known_device_limits("GH100");
  return k;
}

}  // namespace

TEST_CASE("d1.waves_below_one (synthetic)", "[d1]") {
  auto c = run_one("d1.waves_below_one", launch(32, 256));
  CHECK(c.outcome == Outcome::kFired);
  REQUIRE(c.finding.has_value());
  CHECK(c.finding->limiter == Limiter::kSmallGrid);
  REQUIRE(c.finding->estimated_speedup.has_value());
  CHECK(*c.finding->estimated_speedup == Approx(132.0 / 32.0));

  CHECK(run_one("d1.waves_below_one", launch(4224, 256)).outcome == Outcome::kNotFired);

  // Nsight Compute input: launch__* measured, no launch configuration.
  KernelInput ncu;
  ncu.metrics.set("launch__waves_per_multiprocessor", 0.5);
  ncu.metrics.set("launch__grid_size", 264);
  ncu.metrics.set("launch__sm_count", 132);
  auto c2 = run_one("d1.waves_below_one", ncu);
  CHECK(c2.outcome == Outcome::kFired);
  CHECK_FALSE(c2.finding->estimated_speedup.has_value());  // every SM got a block

  // torch_loop.pb's multi_tensor_apply_kernel (issue 23 read "UNDERSIZED - 0.25 waves" with a
  // gain of 1.02x): 130 blocks on 132 SMs, four fit per SM, SM 20%, memory 25%. Filling the block
  // slots is the gain, bounded where the busier side reaches its peak (synthetic copy of its numbers).
  KernelInput slots;
  slots.metrics.set("launch__waves_per_multiprocessor", 0.246);
  slots.metrics.set("launch__grid_size", 130);
  slots.metrics.set("launch__sm_count", 132);
  slots.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 20, "%");
  slots.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 25, "%");
  auto s = run_one("d1.waves_below_one", slots);
  REQUIRE(s.outcome == Outcome::kFired);
  REQUIRE(s.finding->estimated_speedup.has_value());
  CHECK(*s.finding->estimated_speedup == Approx(4.0));
  CHECK(s.finding->estimate_basis.find("100% / 25.0%") != std::string::npos);
  CHECK(s.evidence.front().metric == "launch__waves_per_multiprocessor");
  slots.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 10, "%");
  CHECK(*run_one("d1.waves_below_one", slots).finding->estimated_speedup == Approx(1.0 / 0.246));

  auto c3 = run_one("d1.waves_below_one", KernelInput{});
  CHECK(c3.outcome == Outcome::kNotEvaluated);
  CHECK(c3.reason.find("launch__waves_per_multiprocessor") != std::string::npos);
}

TEST_CASE("d1.block_not_warp_multiple (synthetic)", "[d1]") {
  auto c = run_one("d1.block_not_warp_multiple", launch(100, 48, 32, false));
  CHECK(c.outcome == Outcome::kFired);
  REQUIRE(c.finding->estimated_speedup.has_value());
  CHECK(*c.finding->estimated_speedup == Approx(64.0 / 48.0));
  CHECK(run_one("d1.block_not_warp_multiple", launch(100, 256, 32, false)).outcome == Outcome::kNotFired);
  CHECK(run_one("d1.block_not_warp_multiple", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d1.block_too_small (synthetic)", "[d1]") {
  // GH100: 32 block slots x 1 warp = 32 of 64 warps.
  auto c = run_one("d1.block_too_small", launch(10000, 32));
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("50.0%") != std::string::npos);
  CHECK(run_one("d1.block_too_small", launch(10000, 64)).outcome == Outcome::kNotFired);
  // Device limits unknown: the guide's 32-thread rule of thumb.
  CHECK(run_one("d1.block_too_small", launch(10000, 16, 32, false)).outcome == Outcome::kFired);
  CHECK(run_one("d1.block_too_small", launch(10000, 32, 32, false)).outcome == Outcome::kNotFired);
  CHECK(run_one("d1.block_too_small", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d1.low_achieved_occupancy (synthetic)", "[d1]") {
  KernelInput k;
  k.metrics.set("sm__warps_active.avg.pct_of_peak_sustained_active", 40, "%");
  auto c = run_one("d1.low_achieved_occupancy", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kLowAchievedOccupancy);

  KernelInput tensor = k;
  tensor.metrics.set("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 70, "%");
  CHECK(run_one("d1.low_achieved_occupancy", tensor).outcome == Outcome::kNotFired);

  KernelInput sol = k;
  sol.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 85, "%");
  CHECK(run_one("d1.low_achieved_occupancy", sol).outcome == Outcome::kNotFired);

  KernelInput high;
  high.metrics.set("sm__warps_active.avg.pct_of_peak_sustained_active", 75, "%");
  CHECK(run_one("d1.low_achieved_occupancy", high).outcome == Outcome::kNotFired);

  CHECK(run_one("d1.low_achieved_occupancy", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d1.kernel_isolated (synthetic)", "[d1]") {
  KernelInput k = launch(32, 256);
  CHECK(run_one("d1.kernel_isolated", k).outcome == Outcome::kNotEvaluated);
  k.ran_concurrently = false;
  CHECK(run_one("d1.kernel_isolated", k).outcome == Outcome::kFired);
  k.ran_concurrently = true;
  CHECK(run_one("d1.kernel_isolated", k).outcome == Outcome::kNotFired);
  KernelInput big = launch(4224, 256);
  big.ran_concurrently = false;
  CHECK(run_one("d1.kernel_isolated", big).outcome == Outcome::kNotFired);
}

TEST_CASE("d1.tail_wave (synthetic)", "[d1]") {
  // GH100, 256 threads and 32 registers: 8 blocks per SM, 1056 block slots. 1120 blocks are 1.06
  // waves: the second wave holds 64 blocks (6% full) and takes half the kernel's time.
  auto c = run_one("d1.tail_wave", launch(1120, 256));
  CHECK(c.outcome == Outcome::kFired);
  REQUIRE(c.finding.has_value());
  CHECK(c.finding->limiter == Limiter::kTailWave);
  REQUIRE(c.finding->estimated_speedup.has_value());
  CHECK(*c.finding->estimated_speedup == Approx(2.0 * 1056.0 / 1120.0));
  CHECK(c.reason.find("6.1% full") != std::string::npos);
  CHECK(c.reason.find("64 blocks for 1056 block slots") != std::string::npos);
  bool fill_noted = false;
  for (const Evidence& e : c.evidence) fill_noted = fill_noted || e.metric == "cutriage__last_wave_fill";
  CHECK(fill_noted);

  // Nsight Compute input: the measured waves alone.
  KernelInput ncu;
  ncu.metrics.set("launch__waves_per_multiprocessor", 1.06);
  auto m = run_one("d1.tail_wave", ncu);
  CHECK(m.outcome == Outcome::kFired);
  CHECK(*m.finding->estimated_speedup == Approx(2.0 / 1.06));
  // The tail is 1/ceil(W) of the time: at 5 waves (20%) it still counts, at 6 it does not.
  ncu.metrics.set("launch__waves_per_multiprocessor", 4.1);
  CHECK(run_one("d1.tail_wave", ncu).outcome == Outcome::kFired);
  ncu.metrics.set("launch__waves_per_multiprocessor", 5.1);
  CHECK(run_one("d1.tail_wave", ncu).outcome == Outcome::kNotFired);
  ncu.metrics.set("launch__waves_per_multiprocessor", 31.03);  // zoo_global_atomics' grid
  CHECK(run_one("d1.tail_wave", ncu).outcome == Outcome::kNotFired);
  // A last wave at least half full, or no partial wave at all.
  ncu.metrics.set("launch__waves_per_multiprocessor", 1.6);
  CHECK(run_one("d1.tail_wave", ncu).outcome == Outcome::kNotFired);
  CHECK(run_one("d1.tail_wave", launch(4224, 256)).outcome == Outcome::kNotFired);
  // Under one wave it is d1.waves_below_one's case.
  CHECK(run_one("d1.tail_wave", launch(32, 256)).outcome == Outcome::kNotEvaluated);
  CHECK(run_one("d1.tail_wave", KernelInput{}).outcome == Outcome::kNotEvaluated);

  // The named thresholds decide.
  Thresholds small_fill;
  small_fill.set("d1.tail_wave.max_fill", 0.05);
  CHECK(run_one("d1.tail_wave", launch(1120, 256), small_fill).outcome == Outcome::kNotFired);
  Thresholds large_share;
  large_share.set("d1.tail_wave.min_tail_share", 0.6);
  CHECK(run_one("d1.tail_wave", launch(1120, 256), large_share).outcome == Outcome::kNotFired);
  bool dominant_recorded = false;
  for (const ThresholdUse& t : c.thresholds) dominant_recorded = dominant_recorded || t.name == "d1.tail_wave.dominant_ratio";
  CHECK(dominant_recorded);
}

}  // namespace test_rules_d1
