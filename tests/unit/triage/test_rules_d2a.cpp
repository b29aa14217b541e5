// Decision 2A rules. The cutriage__* timeline quantities are synthetic: no collector produces them yet.
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d2a {

using namespace cutriage::triage;

namespace {

CheckResult run_one(std::string_view id, const KernelInput& k) {
  const Rule* r = find_rule(id);
  REQUIRE(r != nullptr);
  MetricSet m = k.metrics;
  add_derived_metrics(m);
  return run_rule(*r, k, m, std::nullopt, Thresholds{});
}

KernelInput with(std::string name, double v) {
  KernelInput k;
  k.metrics.set(std::move(name), v, "%");
  return k;
}

}  // namespace

TEST_CASE("d2a.dispatch_gap (synthetic)", "[d2a]") {
  auto c = run_one("d2a.dispatch_gap", with("cutriage__dispatch_gap_pct", 30));
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kDispatchGaps);
  CHECK(run_one("d2a.dispatch_gap", with("cutriage__dispatch_gap_pct", 3)).outcome == Outcome::kNotFired);
  auto n = run_one("d2a.dispatch_gap", KernelInput{});
  CHECK(n.outcome == Outcome::kNotEvaluated);
  CHECK(n.reason.find("cutriage__dispatch_gap_pct") != std::string::npos);
}

TEST_CASE("d2a.gpu_idle (synthetic)", "[d2a]") {
  CHECK(run_one("d2a.gpu_idle", with("cutriage__gpu_idle_pct", 15)).outcome == Outcome::kFired);
  CHECK(run_one("d2a.gpu_idle", with("cutriage__gpu_idle_pct", 5)).outcome == Outcome::kNotFired);
  CHECK(run_one("d2a.gpu_idle", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d2a.serialized_copy_compute (synthetic)", "[d2a]") {
  KernelInput k = with("cutriage__copy_compute_overlap_pct", 2);
  k.metrics.set("cutriage__copy_time_pct", 30, "%");
  auto c = run_one("d2a.serialized_copy_compute", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kSerializedCopyCompute);
  k.metrics.set("cutriage__copy_time_pct", 1, "%");  // copies too short to matter
  CHECK(run_one("d2a.serialized_copy_compute", k).outcome == Outcome::kNotFired);
  CHECK(run_one("d2a.serialized_copy_compute", with("cutriage__copy_compute_overlap_pct", 60)).outcome ==
        Outcome::kNotFired);
  CHECK(run_one("d2a.serialized_copy_compute", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

}  // namespace test_rules_d2a
