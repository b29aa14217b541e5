// Decision 3 rules, one at a time. All inputs here are synthetic: hand-picked metric values and PC
// samples (written as text, pc_sample_text.h) that put each check on either side of its threshold.
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "catch.h"
#include "cutriage/triage/rule.h"
#include "pc_sample_text.h"
#include "rule_test_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d3 {

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

// ---- Decision 3 from PC samples ------------------------------------------------------------------

namespace {

// Synthetic: a gather loop. The load at gather.cu:40 (0x100) feeds the FFMA at gather.cu:42
// (0x1a0), which carries the long_scoreboard samples; the device reports each state twice (all
// samples and the _not_issued subset), which must count once. Stall samples: wait 20, long_
// scoreboard 500 + 40 + 60 = 600, barrier 200: 820. Selected 120.
constexpr std::string_view kGather = R"(
%line_info
%period 12
kernel 0x100 gather.cu:40 | LDG.E R2, desc[UR4][R6.64] | selected=50
kernel 0x110 gather.cu:41 | IMAD R3, R0, 0x4, RZ | selected=50 wait=20
kernel 0x140 gather.cu:41 | STG.E desc[UR4][R8.64], R9 | selected=0
kernel 0x1a0 gather.cu:42 | FFMA R4, R2, R3, R4 | smsp__pcsamp_warps_issue_stalled_long_scoreboard=500 smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued=450 smsp__pcsamp_warps_issue_stalled_selected=20
kernel 0x1b0 gather.cu:42 | IADD3 R5, R5, 0x1, RZ | long_scoreboard=40
kernel 0x2c0 gather.cu:57 | BAR.SYNC.DEFER_BLOCKING 0x0 | barrier=200 not_selected=300
kernel 0x300 gather.cu:60 | FADD R9, R2, R8 | long_scoreboard=60
)";

bool has_evidence(const CheckResult& c, std::string_view name, double value) {
  for (const Evidence& e : c.evidence) {
    if (e.metric == name) return std::abs(e.value - value) < 1e-9;
  }
  return false;
}

}  // namespace

TEST_CASE("d3.dominant_stall from PC samples alone names the lines and the producer (synthetic)", "[d3][pc]") {
  auto c = run("d3.dominant_stall", kernel_with_samples(kGather));
  REQUIRE(c.outcome == Outcome::kFired);
  REQUIRE(c.finding);
  CHECK(c.finding->detail == "long_scoreboard");  // the engine's Decision 5 follow-up reads it
  CHECK(c.finding->limiter == Limiter::kStallDominant);
  // 600 of 820: the _not_issued spelling did not count again (it would read 1050 of 1270).
  CHECK(contains(c.reason, "73.2% of 820 stall samples"));
  CHECK(contains(c.reason, "PC sampling"));
  CHECK(contains(c.reason, "5.00 per selected sample"));
  // Tied to its lines, with counts: 540 of the 600 at line 42, then line 60.
  CHECK(contains(c.reason, "gather.cu:42 (540 samples, 90.0%), gather.cu:60 (60 samples, 10.0%)"));
  CHECK(has_evidence(c, "pc_samples.long_scoreboard@gather.cu:42", 540));
  CHECK(has_evidence(c, "pc_stall_samples", 820));
  // The samples sit on the consumer; the producer is the nearest sampled load before it (the STG
  // in between is not a load).
  const std::string& action = c.finding->next_action;
  CHECK(contains(action, "At gather.cu:42 [FFMA R4, R2, R3, R4 @0x1a0]"));
  CHECK(contains(action, "(then gather.cu:60)"));
  CHECK(contains(action, "waits for the result"));
  CHECK(contains(action, "likely producer is LDG.E R2, desc[UR4][R6.64] @0x100 (gather.cu:40)"));
  CHECK(contains(action, "latency"));  // the reason's own action follows
}

TEST_CASE("d3.dominant_stall from samples: thresholds (synthetic)", "[d3][pc]") {
  // Flat: four reasons at 25% each.
  auto flat = run("d3.dominant_stall", kernel_with_samples(R"(
kernel 0x10 - | | long_scoreboard=100 wait=100 barrier=100 mio_throttle=100 selected=50
)"));
  CHECK(flat.outcome == Outcome::kNotFired);
  CHECK(contains(flat.reason, "25.0%"));

  // Dominant by share but fewer stalled samples than issuing ones: not what limits issue.
  auto busy = run("d3.dominant_stall", kernel_with_samples(R"(
kernel 0x10 - | | long_scoreboard=150 wait=50 selected=400
)"));
  CHECK(busy.outcome == Outcome::kNotFired);
  CHECK(contains(busy.reason, "0.38 per selected sample"));

  // Just over the share threshold fires; an override moves it.
  auto just = kernel_with_samples(R"(
kernel 0x10 - | | long_scoreboard=31 wait=23 barrier=23 misc=23
)");
  CHECK(run("d3.dominant_stall", just).outcome == Outcome::kFired);
  Thresholds t;
  t.set("d3.dominant_stall.dominant_share", 0.35);
  CHECK(run("d3.dominant_stall", just, t).outcome == Outcome::kNotFired);
}

TEST_CASE("d3.dominant_stall: too few samples, failed sampling, no samples (synthetic)", "[d3][pc]") {
  auto few = run("d3.dominant_stall", kernel_with_samples(R"(
kernel 0x10 a.cu:1 | FFMA R1, R2, R3, R1 | long_scoreboard=60 selected=5000
)"));
  CHECK(few.outcome == Outcome::kNotEvaluated);
  CHECK(contains(few.reason, "only 60 stall samples (< 100)"));

  auto failed = run("d3.dominant_stall", kernel_with_samples("%error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"));
  CHECK(failed.outcome == Outcome::kNotEvaluated);
  CHECK(contains(failed.reason, "PC sampling failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));

  auto none = run("d3.dominant_stall", kernel_with({}));
  CHECK(none.outcome == Outcome::kNotEvaluated);
  CHECK(contains(none.reason, "no PC samples"));
  CHECK(contains(none.reason, "smsp__average_warps_issue_stalled_"));
}

TEST_CASE("d3.dominant_stall with ratios and samples: agreement and disagreement (synthetic)", "[d3][pc]") {
  // The ratios say long_scoreboard (75%); the samples agree.
  KernelInput agree = kernel_with_samples(kGather);
  agree.metrics.set(stall("long_scoreboard"), 6.0);
  agree.metrics.set(stall("wait"), 2.0);
  auto a = run("d3.dominant_stall", agree);
  REQUIRE(a.outcome == Outcome::kFired);
  CHECK(a.finding->detail == "long_scoreboard");
  CHECK(contains(a.reason, "75.0% of stalls"));
  CHECK(contains(a.reason, "PC samples agree (73.2% of 820 stall samples)"));
  CHECK(contains(a.reason, "gather.cu:42 (540 samples"));

  // The ratios say barrier; the samples put long_scoreboard first. The ratios decide, the reading
  // says so, and the lines are the barrier's.
  KernelInput disagree = kernel_with_samples(kGather);
  disagree.metrics.set(stall("barrier"), 6.0);
  disagree.metrics.set(stall("long_scoreboard"), 2.0);
  auto d = run("d3.dominant_stall", disagree);
  REQUIRE(d.outcome == Outcome::kFired);
  CHECK(d.finding->detail == "barrier");
  CHECK(contains(d.reason, "PC samples disagree: they put long_scoreboard first (73.2% of 820 stall samples) "
                           "and barrier at 24.4%"));
  CHECK(has_evidence(d, "pc_sample_stall_share.long_scoreboard", 600.0 / 820.0));
  CHECK(has_evidence(d, "pc_sample_stall_share.barrier", 200.0 / 820.0));
  CHECK(contains(d.reason, "its samples sit on gather.cu:57 (200 samples, 100.0%)"));
  CHECK(contains(d.finding->next_action, "At gather.cu:57"));
  CHECK_FALSE(contains(d.finding->next_action, "producer"));  // not a scoreboard wait

  // Ratios with too few samples, or failed sampling: evaluated on the ratios, lines not named.
  KernelInput few = kernel_with_samples("kernel 0x10 a.cu:1 | | long_scoreboard=60\n");
  few.metrics.set(stall("long_scoreboard"), 6.0);
  auto f = run("d3.dominant_stall", few);
  REQUIRE(f.outcome == Outcome::kFired);
  CHECK(contains(f.reason, "lines not named: only 60 stall samples"));
  KernelInput failed = kernel_with_samples("%error CUPTI_ERROR_NOT_SUPPORTED\n");
  failed.metrics.set(stall("long_scoreboard"), 6.0);
  auto x = run("d3.dominant_stall", failed);
  REQUIRE(x.outcome == Outcome::kFired);
  CHECK(contains(x.reason, "lines not named: PC sampling failed: CUPTI_ERROR_NOT_SUPPORTED"));
  // No samples at all (an ncu CSV): nothing said about lines; Decision 6 says it once.
  KernelInput csv = kernel_with({});
  csv.metrics.set(stall("long_scoreboard"), 6.0);
  auto n = run("d3.dominant_stall", csv);
  REQUIRE(n.outcome == Outcome::kFired);
  CHECK_FALSE(contains(n.reason, "samples"));
}

TEST_CASE("d3.dominant_stall: producer of a scoreboard wait from SASS text (synthetic)", "[d3][pc]") {
  // short_scoreboard: the nearest preceding shared-memory load, not the global load before it, not
  // a load after the consumer, not one in another function.
  auto s = run("d3.dominant_stall", kernel_with_samples(R"(
%line_info
kernel 0x080 mm.cu:20 | LDG.E.128 R8, desc[UR4][R2.64] | selected=10
kernel 0x0c0 mm.cu:30 | LDS.U.128 R12, [R0+0x10] | selected=10
kernel 0x0d0 mm.cu:30 | @!P0 LDSM.16.M88.4 R16, [R1] | selected=10
kernel 0x0e0 mm.cu:31 | HMMA.16816.F32 R20, R16, R12, R20 | short_scoreboard=300 wait=20
kernel 0x0f0 mm.cu:33 | LDS R4, [R0] | selected=10
helper 0x0d8 mm.cu:90 | LDS R5, [R7] | selected=10
)"));
  REQUIRE(s.outcome == Outcome::kFired);
  CHECK(s.finding->detail == "short_scoreboard");
  CHECK(contains(s.finding->next_action, "likely producer is @!P0 LDSM.16.M88.4 R16, [R1] @0xd0 (mm.cu:30)"));

  // No SASS text: the producer is an earlier load on this or a preceding line.
  auto bare = run("d3.dominant_stall", kernel_with_samples(R"(
%line_info
kernel 0x1a0 gather.cu:42 | | long_scoreboard=500 selected=20
)"));
  REQUIRE(bare.outcome == Outcome::kFired);
  CHECK(contains(bare.finding->next_action, "@0x1a0"));
  CHECK(contains(bare.finding->next_action, "the producer is an earlier global/local/texture load on this or a "
                                            "preceding line"));

  // No line information: the site is the function and PC offset.
  auto nolines = run("d3.dominant_stall", kernel_with_samples(R"(
kernel 0x100 - | LDG.E R2, [R6.64] | selected=50
kernel 0x1a0 - | FFMA R4, R2, R3, R4 | long_scoreboard=500 selected=20
)"));
  REQUIRE(nolines.outcome == Outcome::kFired);
  CHECK(contains(nolines.reason, "kernel pc 0x1a0 (500 samples, 100.0%)"));
  CHECK(contains(nolines.reason, "-lineinfo"));
  CHECK(contains(nolines.finding->next_action, "likely producer is LDG.E R2, [R6.64] @0x100 (no line information)"));
}

TEST_CASE("d3.low_eligible_warps from PC samples when the counters are missing (synthetic)", "[d3][pc]") {
  // 120 selected + 300 not_selected of 1240 warp-state samples: 33.9% eligible.
  auto c = run("d3.low_eligible_warps", kernel_with_samples(kGather));
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(c.finding->detail == "sampled");
  CHECK(contains(c.reason, "sampled: 33.9% of 1240 warp-state samples"));
  CHECK(contains(c.reason, "selected 120, not_selected 300"));
  CHECK(has_evidence(c, "pc_sample_eligible_share", 420.0 / 1240.0));

  auto busy = run("d3.low_eligible_warps", kernel_with_samples(R"(
kernel 0x10 - | | long_scoreboard=100 selected=80 not_selected=60
)"));
  CHECK(busy.outcome == Outcome::kNotFired);
  CHECK(contains(busy.reason, "58.3%"));

  // Samples without the issue states (a stall-reason subset was collected): no share, not 0%.
  auto stalls_only = run("d3.low_eligible_warps", kernel_with_samples("kernel 0x10 - | | long_scoreboard=900\n"));
  CHECK(stalls_only.outcome == Outcome::kNotEvaluated);
  CHECK(contains(stalls_only.reason, "no selected or not_selected states"));

  auto few = run("d3.low_eligible_warps", kernel_with_samples("kernel 0x10 - | | long_scoreboard=90\n"));
  CHECK(few.outcome == Outcome::kNotEvaluated);
  CHECK(contains(few.reason, "only 90 warp-state samples"));

  auto failed = run("d3.low_eligible_warps", kernel_with_samples("%error sampler busy\n"));
  CHECK(failed.outcome == Outcome::kNotEvaluated);
  CHECK(contains(failed.reason, "PC sampling failed: sampler busy"));
  CHECK(contains(failed.reason, "smsp__warps_eligible.avg.per_cycle_active"));

  // The counters win when measured: 5 of 8 eligible does not fire whatever the samples say.
  KernelInput both = kernel_with_samples(kGather);
  both.metrics.set("smsp__warps_eligible.avg.per_cycle_active", 5.0);
  both.metrics.set("smsp__warps_active.avg.per_cycle_active", 8.0);
  auto m = run("d3.low_eligible_warps", both);
  CHECK(m.outcome == Outcome::kNotFired);
  CHECK_FALSE(contains(m.reason, "sampled"));
}

TEST_CASE("d3.bytes_in_flight reads the long_scoreboard share from samples without ratios (synthetic)", "[d3][pc]") {
  KernelInput k = kernel_with_samples(kGather);
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20);
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 15);
  auto c = run("d3.bytes_in_flight", k);
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(contains(c.reason, "long_scoreboard 73.2% of 820 stall samples (PC sampling)"));

  KernelInput other = kernel_with_samples("kernel 0x10 - | | barrier=300 long_scoreboard=20\n");
  other.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 20);
  other.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 15);
  CHECK(run("d3.bytes_in_flight", other).outcome == Outcome::kNotFired);
}

}  // namespace test_rules_d3
