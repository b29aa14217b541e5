// Decision 7 rules, one at a time. Inputs are synthetic; cutriage__routed_regime is normally set by
// the engine (1 latency, 2 compute, 3 memory, 4 saturated).
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d7 {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

using namespace cutriage::triage;

namespace {

CheckResult run_one(std::string_view id, const KernelInput& k) {
  const Rule* r = find_rule(id);
  REQUIRE(r != nullptr);
  MetricSet m = k.metrics;
  add_derived_metrics(m);
  return run_rule(*r, k, m, std::nullopt, Thresholds{});
}

KernelInput routed(double regime, double sm, double mem) {
  KernelInput k;
  k.metrics.set("cutriage__routed_regime", regime, "", MetricSource::kDerived);
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", sm, "%");
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", mem, "%");
  return k;
}

}  // namespace

TEST_CASE("d7.expected_resource (synthetic)", "[d7]") {
  KernelInput mem = routed(3, 30, 75);
  mem.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 30, "%");
  mem.metrics.set("lts__throughput.avg.pct_of_peak_sustained_elapsed", 40, "%");
  CHECK(run_one("d7.expected_resource", mem).outcome == Outcome::kFired);
  mem.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 85, "%");
  CHECK(run_one("d7.expected_resource", mem).outcome == Outcome::kNotFired);

  KernelInput comp = routed(2, 75, 30);
  comp.metrics.set("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 30, "%");
  CHECK(run_one("d7.expected_resource", comp).outcome == Outcome::kFired);
  comp.metrics.set("sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", 88, "%");
  CHECK(run_one("d7.expected_resource", comp).outcome == Outcome::kNotFired);

  auto latency = run_one("d7.expected_resource", routed(1, 20, 20));
  CHECK(latency.outcome == Outcome::kNotEvaluated);
  KernelInput none;
  none.metrics.set("cutriage__routed_regime", 3);
  CHECK(run_one("d7.expected_resource", none).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d7.limiter_near_peak (synthetic)", "[d7]") {
  KernelInput k = routed(3, 30, 92);
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 90, "%");
  auto c = run_one("d7.limiter_near_peak", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kDramBandwidth);
  REQUIRE(c.finding->estimated_speedup.has_value());
  CHECK(*c.finding->estimated_speedup == Approx(100.0 / 90.0));

  KernelInput pipe = routed(2, 85, 20);
  pipe.metrics.set("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 91, "%");
  auto p = run_one("d7.limiter_near_peak", pipe);
  CHECK(p.outcome == Outcome::kFired);
  CHECK(p.finding->limiter == Limiter::kNearHardwareLimit);
  // The unit that decided opens the evidence (issue 23), whatever order the units were read in.
  REQUIRE(!p.evidence.empty());
  CHECK(p.evidence.front().metric == "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active");
  CHECK(p.evidence.front().deciding);
  REQUIRE(!p.thresholds.empty());
  CHECK(p.thresholds.front().name == "d7.limiter_near_peak.near_peak_pct");

  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 50, "%");
  CHECK(run_one("d7.limiter_near_peak", k).outcome == Outcome::kNotFired);
  CHECK(run_one("d7.limiter_near_peak", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d7.sm_load_imbalance and d7.smsp_load_imbalance (synthetic)", "[d7]") {
  for (std::string unit : {"sm", "smsp"}) {
    const std::string id = "d7." + unit + "_load_imbalance";
    KernelInput k;
    k.metrics.set(unit + "__cycles_active.max", 1500);
    k.metrics.set(unit + "__cycles_active.avg", 1000);
    auto c = run_one(id, k);
    CHECK(c.outcome == Outcome::kFired);
    CHECK(c.finding->limiter == Limiter::kLoadImbalance);
    REQUIRE(c.finding->estimated_speedup.has_value());
    CHECK(*c.finding->estimated_speedup == Approx(1.5));
    k.metrics.set(unit + "__cycles_active.max", 1100);
    CHECK(run_one(id, k).outcome == Outcome::kNotFired);
    CHECK(run_one(id, KernelInput{}).outcome == Outcome::kNotEvaluated);
  }
}

TEST_CASE("d7.sm_load_imbalance: the dominant_ratio threshold (synthetic)", "[d7]") {
  // Blocks of very uneven work: the busiest SM active 6.7x the average (issue 23's kernel).
  KernelInput k;
  k.metrics.set("sm__cycles_active.max", 6700);
  k.metrics.set("sm__cycles_active.avg", 1000);
  auto c = run_one("d7.sm_load_imbalance", k);
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(*c.finding->estimated_speedup == Approx(6.7));
  CHECK(c.reason.find("lasts as long as its busiest sm") != std::string::npos);
  bool recorded = false;
  for (const ThresholdUse& t : c.thresholds) {
    if (t.name == "d7.sm_load_imbalance.dominant_ratio") {
      recorded = true;
      CHECK(t.value == Approx(2.0));
    }
  }
  CHECK(recorded);  // the engine reads it from the check to make the finding the verdict
  // Imbalanced but below dominance: the reading does not claim it sets the time.
  k.metrics.set("sm__cycles_active.max", 1500);
  auto mild = run_one("d7.sm_load_imbalance", k);
  CHECK(mild.outcome == Outcome::kFired);
  CHECK(mild.reason.find("lasts as long") == std::string::npos);
  // The warp level has no dominance of its own.
  KernelInput w;
  w.metrics.set("smsp__cycles_active.max", 6700);
  w.metrics.set("smsp__cycles_active.avg", 1000);
  auto smsp = run_one("d7.smsp_load_imbalance", w);
  CHECK(smsp.outcome == Outcome::kFired);
  for (const ThresholdUse& t : smsp.thresholds) CHECK(t.name != "d7.smsp_load_imbalance.dominant_ratio");
}

}  // namespace test_rules_d7
