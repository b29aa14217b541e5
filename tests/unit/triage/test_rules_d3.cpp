// Decision 3 rules, one at a time. All inputs here are synthetic: hand-picked metric values that put
// each check on either side of its threshold.
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "catch.h"
#include "cutriage/triage/rule.h"
#include "rule_test_support.h"

using namespace cutriage::triage;
using namespace cutriage::triage::test_support;

namespace {

constexpr std::string_view kStall = "smsp__average_warps_issue_stalled_";

std::string stall(std::string_view reason) {
  return std::string(kStall) + std::string(reason) + "_per_issue_active.ratio";
}

}  // namespace

TEST_CASE("d3 rules are well formed", "[d3]") {
  auto rules = rules_for(Decision::kD3IssueStalls);
  REQUIRE(rules.size() >= 8);
  for (const Rule* r : rules) {
    INFO(r->id);
    CHECK(r->id.substr(0, 3) == "d3.");
    CHECK(!r->title.empty());
    CHECK(!r->finding.empty());
    CHECK(!r->next_action.empty());
    CHECK(r->evaluate);
    for (const ThresholdDef& t : r->thresholds) CHECK(!t.note.empty());
  }
}

TEST_CASE("d3 rules are not evaluated without their required metrics", "[d3]") {
  KernelInput empty = kernel_with({});
  for (const Rule* r : rules_for(Decision::kD3IssueStalls)) {
    INFO(r->id);
    CheckResult c = run(r->id, empty);
    CHECK(c.outcome == Outcome::kNotEvaluated);
    for (const MetricNeed& m : r->metrics) {
      if (m.required) {
        CHECK(contains(c.reason, m.name));
        break;
      }
    }
  }
}

TEST_CASE("d3.issue_starved (synthetic)", "[d3]") {
  auto fired = run("d3.issue_starved", kernel_with({{"smsp__issue_active.avg.per_cycle_active", 0.15}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(contains(fired.reason, "0.15"));
  CHECK(contains(fired.reason, "severe"));
  REQUIRE(fired.finding);
  CHECK(fired.finding->limiter == Limiter::kIssueStarvation);
  CHECK(fired.finding->detail == "severe");
  CHECK(fired.finding->severity > 0.6);
  REQUIRE(fired.thresholds.size() == 2);
  CHECK(fired.thresholds[0].name == "d3.issue_starved.starved");

  auto mild = run("d3.issue_starved", kernel_with({{"smsp__issue_active.avg.per_cycle_active", 0.35}}));
  REQUIRE(mild.outcome == Outcome::kFired);
  CHECK(mild.finding->detail == "starved");

  auto ok = run("d3.issue_starved", kernel_with({{"smsp__issue_active.avg.per_cycle_active", 0.7}}));
  CHECK(ok.outcome == Outcome::kNotFired);
  CHECK(contains(ok.reason, "0.70"));

  Thresholds t;
  t.set("d3.issue_starved.starved", 0.8);
  CHECK(run("d3.issue_starved", kernel_with({{"smsp__issue_active.avg.per_cycle_active", 0.7}}), t)
            .outcome == Outcome::kFired);
}

TEST_CASE("d3.low_eligible_warps (synthetic)", "[d3]") {
  auto fired = run("d3.low_eligible_warps",
                   kernel_with({{"smsp__warps_eligible.avg.per_cycle_active", 1.0},
                                {"smsp__warps_active.avg.per_cycle_active", 8.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kLowEligibleWarps);
  CHECK(contains(fired.reason, "0.12"));
  CHECK(contains(fired.reason, "fewer than 4"));

  auto ok = run("d3.low_eligible_warps",
                kernel_with({{"smsp__warps_eligible.avg.per_cycle_active", 5.0},
                             {"smsp__warps_active.avg.per_cycle_active", 8.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  auto missing = run("d3.low_eligible_warps",
                     kernel_with({{"smsp__warps_eligible.avg.per_cycle_active", 1.0}}));
  CHECK(missing.outcome == Outcome::kNotEvaluated);
  CHECK(contains(missing.reason, "smsp__warps_active.avg.per_cycle_active"));
}

TEST_CASE("d3.dominant_stall names the reason and its action (synthetic)", "[d3]") {
  auto k = kernel_with({});
  k.metrics.set(stall("long_scoreboard"), 6.0);
  k.metrics.set(stall("wait"), 1.0);
  k.metrics.set(stall("barrier"), 1.0);
  // Issue states, not stalls: must not count, even when large.
  k.metrics.set(stall("selected"), 1.0);
  k.metrics.set(stall("not_selected"), 30.0);
  auto c = run("d3.dominant_stall", k);
  REQUIRE(c.outcome == Outcome::kFired);
  REQUIRE(c.finding);
  CHECK(c.finding->detail == "long_scoreboard");
  CHECK(c.finding->limiter == Limiter::kStallDominant);
  CHECK(contains(c.reason, "75.0%"));
  CHECK(contains(c.finding->next_action, "latency"));
  bool saw_not_selected = false;
  for (const Evidence& e : c.evidence) saw_not_selected |= contains(e.metric, "not_selected");
  CHECK_FALSE(saw_not_selected);
}

TEST_CASE("d3.dominant_stall maps gmma and every listed reason to an action (synthetic)", "[d3]") {
  for (std::string_view reason :
       {"long_scoreboard", "short_scoreboard", "wait", "math_pipe_throttle", "lg_throttle",
        "tex_throttle", "mio_throttle", "barrier", "membar", "gmma", "drain", "imc_miss",
        "no_instruction", "branch_resolving", "sleeping", "dispatch_stall", "misc"}) {
    INFO(reason);
    auto k = kernel_with({});
    k.metrics.set(stall(reason), 4.0);
    k.metrics.set(stall("wait"), reason == "wait" ? 4.0 : 0.5);
    auto c = run("d3.dominant_stall", k);
    REQUIRE(c.outcome == Outcome::kFired);
    CHECK(c.finding->detail == reason);
    CHECK(c.finding->next_action != "Act on the dominant stall reason (see detail).");
  }
}

TEST_CASE("d3.dominant_stall stays silent on a flat breakdown (synthetic)", "[d3]") {
  auto k = kernel_with({});
  for (std::string_view r : {"long_scoreboard", "wait", "barrier", "mio_throttle"}) k.metrics.set(stall(r), 1.0);
  k.metrics.set(stall("selected"), 10.0);
  auto c = run("d3.dominant_stall", k);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(contains(c.reason, "25.0%"));

  // Dominant by share, but fewer than one stalled warp per issue: not what limits issue.
  auto small = kernel_with({});
  small.metrics.set(stall("long_scoreboard"), 0.6);
  small.metrics.set(stall("wait"), 0.2);
  CHECK(run("d3.dominant_stall", small).outcome == Outcome::kNotFired);
}

TEST_CASE("d3.dominant_stall without stall ratios is not evaluated", "[d3]") {
  auto k = kernel_with({{"smsp__issue_active.avg.per_cycle_active", 0.3}});
  k.metrics.set(stall("selected"), 1.0);
  auto c = run("d3.dominant_stall", k);
  CHECK(c.outcome == Outcome::kNotEvaluated);
  CHECK(contains(c.reason, "smsp__average_warps_issue_stalled_"));
}

TEST_CASE("d3.warp_divergence (synthetic)", "[d3]") {
  auto fired = run("d3.warp_divergence",
                   kernel_with({{"smsp__thread_inst_executed_per_inst_executed.ratio", 12.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kWarpDivergence);
  CHECK(contains(fired.reason, "12.0"));
  auto ok = run("d3.warp_divergence",
                kernel_with({{"smsp__thread_inst_executed_per_inst_executed.ratio", 31.5}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d3.predication_overhead (synthetic)", "[d3]") {
  auto fired = run("d3.predication_overhead",
                   kernel_with({{"smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", 18.0},
                                {"smsp__thread_inst_executed_per_inst_executed.ratio", 31.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kPredication);
  CHECK(contains(fired.reason, "13.0 predicated off"));

  auto ok = run("d3.predication_overhead",
                kernel_with({{"smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", 30.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  // Low because of divergence, not predication: left to d3.warp_divergence.
  auto divergent = run("d3.predication_overhead",
                       kernel_with({{"smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", 11.5},
                                    {"smsp__thread_inst_executed_per_inst_executed.ratio", 12.0}}));
  CHECK(divergent.outcome == Outcome::kNotFired);
}

TEST_CASE("d3.occupancy_resource_limit picks the limiting resource (synthetic)", "[d3]") {
  auto make = [](double regs, double smem, double warps, double blocks, double theo) {
    return kernel_with({{"sm__maximum_warps_per_active_cycle_pct", theo},
                        {"launch__occupancy_limit_registers", regs},
                        {"launch__occupancy_limit_shared_mem", smem},
                        {"launch__occupancy_limit_warps", warps},
                        {"launch__occupancy_limit_blocks", blocks},
                        {"sm__warps_active.avg.pct_of_peak_sustained_active", 22.0}});
  };
  auto regs = run("d3.occupancy_resource_limit", make(2, 7, 8, 32, 25.0));
  REQUIRE(regs.outcome == Outcome::kFired);
  CHECK(regs.finding->limiter == Limiter::kOccupancyRegisters);
  CHECK(regs.finding->detail == "registers");
  CHECK(contains(regs.reason, "25.0%"));

  auto smem = run("d3.occupancy_resource_limit", make(8, 1, 8, 32, 12.5));
  REQUIRE(smem.outcome == Outcome::kFired);
  CHECK(smem.finding->limiter == Limiter::kOccupancySharedMemory);

  auto warps = run("d3.occupancy_resource_limit", make(4, 4, 1, 32, 37.5));
  REQUIRE(warps.outcome == Outcome::kFired);
  CHECK(warps.finding->limiter == Limiter::kOccupancyWarpSlots);

  auto blocks = run("d3.occupancy_resource_limit", make(64, 64, 64, 32, 25.0));
  REQUIRE(blocks.outcome == Outcome::kFired);
  CHECK(blocks.finding->limiter == Limiter::kOccupancyBlockSlots);

  // The launch arithmetic's own verdict wins on ties.
  {
    auto k = make(2, 7, 2, 32, 25.0);
    LaunchStats stats;
    stats.limiter = OccupancyLimiter::kRegisters;
    auto tie = run_rule(*find_rule("d3.occupancy_resource_limit"), k, k.metrics, stats, Thresholds{});
    REQUIRE(tie.outcome == Outcome::kFired);
    CHECK(tie.finding->limiter == Limiter::kOccupancyRegisters);
    auto tie_default = run("d3.occupancy_resource_limit", k);
    CHECK(tie_default.finding->limiter == Limiter::kOccupancyWarpSlots);
  }

  auto ok = run("d3.occupancy_resource_limit", make(4, 4, 8, 32, 100.0));
  CHECK(ok.outcome == Outcome::kNotFired);
  CHECK(contains(ok.reason, "registers"));
}

TEST_CASE("d3.achieved_below_theoretical (synthetic)", "[d3]") {
  auto fired = run("d3.achieved_below_theoretical",
                   kernel_with({{"sm__warps_active.avg.pct_of_peak_sustained_active", 30.0},
                                {"sm__maximum_warps_per_active_cycle_pct", 75.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kLowAchievedOccupancy);
  CHECK(contains(fired.reason, "40.0%"));
  auto ok = run("d3.achieved_below_theoretical",
                kernel_with({{"sm__warps_active.avg.pct_of_peak_sustained_active", 70.0},
                             {"sm__maximum_warps_per_active_cycle_pct", 75.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d3.bytes_in_flight (synthetic)", "[d3]") {
  auto base = [] {
    auto k = kernel_with({{"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35.0},
                          {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 30.0},
                          {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 28.0},
                          {"l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 33.0},
                          {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20.0}});
    k.metrics.set(stall("long_scoreboard"), 8.0);
    k.metrics.set(stall("wait"), 1.0);
    return k;
  };
  auto fired = run("d3.bytes_in_flight", base());
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kBytesInFlight);
  CHECK(contains(fired.reason, "DRAM 30.0%"));
  CHECK(contains(fired.reason, "long_scoreboard 88.9%"));

  auto busy_l1 = base();
  busy_l1.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 85.0);
  auto c = run("d3.bytes_in_flight", busy_l1);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(contains(c.reason, "L1TEX"));

  auto dram_busy = base();
  dram_busy.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 90.0);
  CHECK(run("d3.bytes_in_flight", dram_busy).outcome == Outcome::kNotFired);

  auto not_memory = base();
  not_memory.metrics.set(stall("long_scoreboard"), 0.1);
  CHECK(run("d3.bytes_in_flight", not_memory).outcome == Outcome::kNotFired);

  auto no_dram = kernel_with({{"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35.0}});
  auto ne = run("d3.bytes_in_flight", no_dram);
  CHECK(ne.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ne.reason, "dram__throughput.avg.pct_of_peak_sustained_elapsed"));
}
