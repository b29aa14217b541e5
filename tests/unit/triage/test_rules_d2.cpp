// Decision 2 rules, one at a time. Inputs are synthetic.
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d2 {

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

KernelInput sol(double sm, double mem) {
  KernelInput k;
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", sm, "%");
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", mem, "%");
  return k;
}

std::string regime(const KernelInput& k, const Thresholds& t = {}) {
  auto c = run_one("d2.compute_memory_balance", k, t);
  REQUIRE(c.outcome == Outcome::kFired);
  return c.finding->detail;
}

}  // namespace

TEST_CASE("d2.compute_memory_balance classifies every regime (synthetic)", "[d2]") {
  CHECK(regime(sol(30, 20)) == "both_low");
  CHECK(regime(sol(75, 30)) == "compute_dominant");
  CHECK(regime(sol(30, 75)) == "memory_dominant");
  CHECK(regime(sol(85, 90)) == "both_high");
  CHECK(regime(sol(70, 65)) == "ambiguous");
  Thresholds t;
  t.set("d2.compute_memory_balance.high_pct", 60);
  CHECK(regime(sol(70, 65), t) == "both_high");
  auto c = run_one("d2.compute_memory_balance", KernelInput{});
  CHECK(c.outcome == Outcome::kNotEvaluated);
  CHECK(c.reason.find("sm__throughput") != std::string::npos);
}

TEST_CASE("d2.issue_starvation (synthetic)", "[d2]") {
  KernelInput k;
  k.metrics.set("smsp__issue_active.avg.pct_of_peak_sustained_active", 10, "%");
  auto c = run_one("d2.issue_starvation", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kIssueStarvation);
  k.metrics.set("smsp__issue_active.avg.pct_of_peak_sustained_active", 35, "%");
  CHECK(run_one("d2.issue_starvation", k).outcome == Outcome::kNotFired);
  // Derived from CUPTI counters when the ratio itself is absent: 150 / 1000 = 15%.
  KernelInput cupti;
  cupti.metrics.set("smsp__issue_active.sum", 150);
  cupti.metrics.set("smsp__cycles_active.sum", 1000);
  CHECK(run_one("d2.issue_starvation", cupti).outcome == Outcome::kFired);
  CHECK(run_one("d2.issue_starvation", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d2.sysmem_peer_traffic (synthetic)", "[d2]") {
  KernelInput k = sol(30, 70);
  k.metrics.set("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 10, "%");
  // The shape matches but no aperture or PCIe counter: not evaluated.
  CHECK(run_one("d2.sysmem_peer_traffic", k).outcome == Outcome::kNotEvaluated);
  k.metrics.set("lts__t_sectors_aperture_sysmem.sum", 300);
  k.metrics.set("lts__t_sectors.sum", 1000);
  auto c = run_one("d2.sysmem_peer_traffic", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kSysmemPeerTraffic);
  k.metrics.set("lts__t_sectors_aperture_sysmem.sum", 10);
  CHECK(run_one("d2.sysmem_peer_traffic", k).outcome == Outcome::kNotFired);
  KernelInput busy_dram = sol(30, 70);
  busy_dram.metrics.set("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 65, "%");
  CHECK(run_one("d2.sysmem_peer_traffic", busy_dram).outcome == Outcome::kNotFired);
  CHECK(run_one("d2.sysmem_peer_traffic", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d2.dispatch_gaps (synthetic timeline quantities)", "[d2]") {
  auto c = run_one("d2.dispatch_gaps", KernelInput{});
  CHECK(c.outcome == Outcome::kNotEvaluated);
  CHECK(c.reason.find("PM-sampling") != std::string::npos);
  KernelInput k;
  k.metrics.set("cutriage__gpu_idle_pct", 25, "%");
  CHECK(run_one("d2.dispatch_gaps", k).outcome == Outcome::kFired);
  KernelInput ok;
  ok.metrics.set("cutriage__dispatch_gap_pct", 4, "%");
  CHECK(run_one("d2.dispatch_gaps", ok).outcome == Outcome::kNotFired);
}

TEST_CASE("d2.occupancy_utilization_quadrant (synthetic)", "[d2]") {
  auto quad = [](double occ, double sm) {
    KernelInput k = sol(sm, 10);
    k.metrics.set("sm__warps_active.avg.pct_of_peak_sustained_active", occ, "%");
    auto c = run_one("d2.occupancy_utilization_quadrant", k);
    REQUIRE(c.outcome == Outcome::kFired);
    return c.finding->detail;
  };
  CHECK(quad(40, 30) == "low_occupancy_low_utilization");
  CHECK(quad(40, 70) == "low_occupancy_high_utilization");
  CHECK(quad(80, 30) == "high_occupancy_low_utilization");
  CHECK(quad(80, 70) == "high_occupancy_high_utilization");
  // Without the occupancy, utilization picks the half of the 2x2 (both of its quadrants route alike).
  const auto half = run_one("d2.occupancy_utilization_quadrant", sol(70, 10));
  REQUIRE(half.outcome == Outcome::kFired);
  CHECK(half.finding->detail == "unknown_occupancy_high_utilization");
  CHECK(half.reason.find("not measured") != std::string::npos);
  CHECK(run_one("d2.occupancy_utilization_quadrant", sol(30, 30)).finding->detail ==
        "unknown_occupancy_low_utilization");
  // Without the SM throughput nothing is placed.
  KernelInput none;
  none.metrics.set("sm__warps_active.avg.pct_of_peak_sustained_active", 80, "%");
  CHECK(run_one("d2.occupancy_utilization_quadrant", none).outcome == Outcome::kNotEvaluated);
}

}  // namespace test_rules_d2
