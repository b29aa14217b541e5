// Decision 4 rules, one at a time. All inputs here are synthetic.
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "catch.h"
#include "cutriage/triage/rule.h"
#include "rule_test_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d4 {

using namespace cutriage::triage;
using namespace cutriage::triage::test_support;

namespace {

DeviceLimits device(int cc_major, std::string chip) {
  DeviceLimits d;
  d.cc_major = cc_major;
  d.chip = std::move(chip);
  return d;
}

}  // namespace

TEST_CASE("d4 rules are well formed", "[d4]") {
  auto rules = rules_for(Decision::kD4ComputePipe);
  REQUIRE(rules.size() >= 6);
  for (const Rule* r : rules) {
    INFO(r->id);
    CHECK(r->id.substr(0, 3) == "d4.");
    CHECK(!r->title.empty());
    CHECK(!r->next_action.empty());
    for (const ThresholdDef& t : r->thresholds) CHECK(!t.note.empty());
  }
}

TEST_CASE("d4 rules are not evaluated without their required metrics", "[d4]") {
  KernelInput empty = kernel_with({});
  empty.device_limits = device(9, "GH100");
  for (const Rule* r : rules_for(Decision::kD4ComputePipe)) {
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

TEST_CASE("d4.limiting_pipe maps the busiest pipe (synthetic)", "[d4]") {
  auto fma = run("d4.limiting_pipe",
                 kernel_with({{"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 86.0},
                              {"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", 40.0},
                              {"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", 20.0}}));
  REQUIRE(fma.outcome == Outcome::kFired);
  CHECK(fma.finding->limiter == Limiter::kPipeFma);
  CHECK(fma.finding->detail == "fma");
  CHECK(contains(fma.reason, "binding"));
  CHECK(contains(fma.reason, "86.0%"));

  struct Case {
    std::string_view metric;
    Limiter limiter;
  };
  for (const Case& c : {
           Case{"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", Limiter::kPipeAlu},
           Case{"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", Limiter::kPipeFp64},
           Case{"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                Limiter::kPipeTensor},
           Case{"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", Limiter::kPipeLsu},
           Case{"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", Limiter::kPipeXu},
           Case{"sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active", Limiter::kPipeOther},
           Case{"sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active", Limiter::kPipeFma},
       }) {
    INFO(c.metric);
    auto r = run("d4.limiting_pipe", kernel_with({{c.metric, 70.0},
                                                  {"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
                                                   c.limiter == Limiter::kPipeAlu ? 70.0 : 10.0}}));
    REQUIRE(r.outcome == Outcome::kFired);
    CHECK(r.finding->limiter == c.limiter);
    CHECK(contains(r.reason, "high pressure"));
  }

  auto ok = run("d4.limiting_pipe",
                kernel_with({{"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 45.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  // Variants that are not pipe loads are ignored.
  auto ignored = run("d4.limiting_pipe",
                     kernel_with({{"sm__pipe_shared_cycles_active_realtime.avg.pct_of_peak_sustained_active", 99.0}}));
  CHECK(ignored.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ignored.reason, "sm__pipe_"));
}

TEST_CASE("d4.pipe_instruction_share (synthetic)", "[d4]") {
  auto fired = run("d4.pipe_instruction_share",
                   kernel_with({{"sm__inst_executed.sum", 1000.0},
                                {"sm__inst_executed_pipe_xu.sum", 620.0},
                                {"sm__inst_executed_pipe_fma.sum", 200.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kPipeXu);
  CHECK(fired.finding->detail == "xu");
  CHECK(contains(fired.reason, "62.0%"));

  auto ok = run("d4.pipe_instruction_share",
                kernel_with({{"sm__inst_executed.sum", 1000.0},
                             {"sm__inst_executed_pipe_fma.sum", 400.0},
                             {"sm__inst_executed_pipe_alu.sum", 350.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  auto none = run("d4.pipe_instruction_share", kernel_with({{"sm__inst_executed.sum", 1000.0}}));
  CHECK(none.outcome == Outcome::kNotEvaluated);
  CHECK(contains(none.reason, "sm__inst_executed_pipe_"));
}

TEST_CASE("d4.slow_path_arithmetic (synthetic)", "[d4]") {
  auto fp64 = run("d4.slow_path_arithmetic",
                  kernel_with({{"sm__inst_executed.sum", 1000.0},
                               {"sm__inst_executed_pipe_fp64.sum", 300.0}}));
  REQUIRE(fp64.outcome == Outcome::kFired);
  CHECK(fp64.finding->limiter == Limiter::kSlowPathArithmetic);
  CHECK(fp64.finding->detail == "fp64");
  CHECK(contains(fp64.reason, "30.0%"));

  auto fp16 = run("d4.slow_path_arithmetic",
                  kernel_with({{"sm__inst_executed.sum", 1000.0},
                               {"sm__inst_executed_pipe_fp64.sum", 0.0},
                               {"sm__inst_executed_pipe_fma_type_fp16.sum", 400.0},
                               {"sm__inst_executed_pipe_tensor.sum", 0.0}}));
  REQUIRE(fp16.outcome == Outcome::kFired);
  CHECK(fp16.finding->detail == "fp16_without_tensor");

  auto ok = run("d4.slow_path_arithmetic",
                kernel_with({{"sm__inst_executed.sum", 1000.0},
                             {"sm__inst_executed_pipe_fp64.sum", 5.0},
                             {"sm__inst_executed_pipe_fma_type_fp16.sum", 400.0},
                             {"sm__inst_executed_pipe_tensor.sum", 120.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  auto partial = run("d4.slow_path_arithmetic",
                     kernel_with({{"sm__inst_executed.sum", 1000.0},
                                  {"sm__inst_executed_pipe_fp64.sum", 5.0}}));
  CHECK(partial.outcome == Outcome::kNotFired);
  CHECK(contains(partial.reason, "tensor-core use not checked"));
}

TEST_CASE("d4.issue_rate (synthetic)", "[d4]") {
  auto near = run("d4.issue_rate",
                  kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 75.0}}));
  REQUIRE(near.outcome == Outcome::kFired);
  CHECK(near.finding->limiter == Limiter::kIssueSlots);
  CHECK(near.finding->detail == "near_capacity");

  auto slow = run("d4.issue_rate",
                  kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 8.0},
                               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90.0},
                               {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 88.0}}));
  REQUIRE(slow.outcome == Outcome::kFired);
  CHECK(slow.finding->limiter == Limiter::kPipeTensor);
  CHECK(slow.finding->detail == "slow_pipe:tensor");

  auto mid = run("d4.issue_rate",
                 kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 40.0},
                              {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90.0}}));
  CHECK(mid.outcome == Outcome::kNotFired);

  auto low_latency = run("d4.issue_rate",
                         kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 8.0},
                                      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 30.0}}));
  CHECK(low_latency.outcome == Outcome::kNotFired);
}

TEST_CASE("d4.replay_overhead (synthetic)", "[d4]") {
  auto counts = run("d4.replay_overhead",
                    kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 70.0},
                                 {"sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed", 75.0},
                                 {"sm__inst_issued.sum", 1300.0},
                                 {"sm__inst_executed.sum", 1000.0}}));
  REQUIRE(counts.outcome == Outcome::kFired);
  CHECK(counts.finding->limiter == Limiter::kInstructionReplay);
  CHECK(counts.finding->detail == "replay");
  REQUIRE(counts.finding->estimated_speedup);
  CHECK(std::abs(*counts.finding->estimated_speedup - 1.3) < 1e-9);
  CHECK(!counts.finding->estimate_basis.empty());

  auto gap = run("d4.replay_overhead",
                 kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 30.0},
                              {"sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed", 65.0}}));
  REQUIRE(gap.outcome == Outcome::kFired);
  CHECK(gap.finding->detail == "throughput_gap");
  CHECK(!gap.finding->estimated_speedup);

  auto ok = run("d4.replay_overhead",
                kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 60.0},
                             {"sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed", 65.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  // Counts override the percentage gap.
  auto counted_ok = run("d4.replay_overhead",
                        kernel_with({{"sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 30.0},
                                     {"sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed", 65.0},
                                     {"sm__inst_issued.sum", 1010.0},
                                     {"sm__inst_executed.sum", 1000.0}}));
  CHECK(counted_ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d4.wgmma_count_note on Hopper (synthetic)", "[d4]") {
  const Rule* rule = find_rule("d4.wgmma_count_note");
  REQUIRE(rule != nullptr);
  CHECK(rule->priority >= 90);
  CHECK(rule->limiter == Limiter::kPipeTensor);

  auto k = kernel_with({{"sm__inst_executed_pipe_tensor_op_gmma.sum", 4096.0}});
  k.device_limits = device(9, "GH100");
  auto fired = run("d4.wgmma_count_note", k);
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(contains(fired.reason, "1024"));
  bool saw = false;
  for (const Evidence& e : fired.evidence) {
    if (e.metric == "wgmma_logical_operations") {
      saw = true;
      CHECK(e.value == 1024.0);
    }
  }
  CHECK(saw);

  auto by_chip = kernel_with({{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 55.0}});
  by_chip.device_limits = device(0, "GH100");
  CHECK(run("d4.wgmma_count_note", by_chip).outcome == Outcome::kFired);

  // A barely used tensor pipe (a PM-sampled elementwise node on the H200: 1.2%) is no reason for
  // the note, which would otherwise stand as the kernel's Decision 4 finding.
  auto barely = kernel_with({{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1.2}});
  barely.device_limits = device(9, "GH100");
  auto barely_run = run("d4.wgmma_count_note", barely);
  CHECK(barely_run.outcome == Outcome::kNotFired);
  CHECK(contains(barely_run.reason, "1.2%"));

  auto idle = kernel_with({{"sm__inst_executed_pipe_tensor.sum", 0.0}});
  idle.device_limits = device(9, "GH100");
  CHECK(run("d4.wgmma_count_note", idle).outcome == Outcome::kNotFired);

  auto ampere = kernel_with({{"sm__inst_executed_pipe_tensor.sum", 4096.0}});
  ampere.device_limits = device(8, "GA100");
  CHECK(run("d4.wgmma_count_note", ampere).outcome == Outcome::kNotEvaluated);

  auto no_metrics = kernel_with({});
  no_metrics.device_limits = device(9, "GH100");
  auto ne = run("d4.wgmma_count_note", no_metrics);
  CHECK(ne.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ne.reason, "sm__inst_executed_pipe_tensor_op_gmma.sum"));
}

// Issue 23: zoo_fma_chain's evidence opened with pipe_adu 0.14% and said "next fma 95.4%" for the
// pipe it had just named. The numbers here are that capture's pipes (synthetic input).
TEST_CASE("d4.limiting_pipe: the deciding pipe opens the evidence, the runner-up is another pipe (synthetic)",
          "[d4]") {
  auto c = run("d4.limiting_pipe",
               kernel_with({{"sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active", 0.14},
                            {"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", 6.02},
                            {"sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_active", 0.0},
                            {"sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", 95.4},
                            {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 95.4}}));
  REQUIRE(c.outcome == Outcome::kFired);
  REQUIRE(!c.evidence.empty());
  CHECK(c.evidence.front().deciding);
  CHECK(c.evidence.front().value == Approx(95.4));
  CHECK(contains(c.evidence.front().metric, "fma"));
  for (size_t i = 1; i < c.evidence.size(); ++i) CHECK_FALSE(c.evidence[i].deciding);
  REQUIRE(!c.thresholds.empty());
  CHECK(c.thresholds.front().name == "d4.limiting_pipe.binding_pct");
  CHECK(contains(c.reason, "next alu 6.0%"));
  CHECK_FALSE(contains(c.reason, "next fma"));
}

}  // namespace test_rules_d4
