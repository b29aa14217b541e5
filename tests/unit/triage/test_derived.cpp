// add_derived_metrics: ncu-named ratios from CUPTI counters, never replacing measured values.
#include "catch.h"
#include "cutriage/triage/engine.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_derived {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

using namespace cutriage::triage;

TEST_CASE("stall-per-issue ratios for every stall reason present", "[derived]") {
  MetricSet m;
  m.set("smsp__issue_active.sum", 1000);
  m.set("smsp__warps_issue_stalled_long_scoreboard.sum", 5000);
  m.set("smsp__warps_issue_stalled_barrier.sum", 250);
  add_derived_metrics(m);
  const MetricValue* ls = m.find("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio");
  REQUIRE(ls != nullptr);
  CHECK(ls->value == Approx(5.0));
  CHECK(ls->source == MetricSource::kDerived);
  CHECK(*m.get("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio") == Approx(0.25));
  CHECK_FALSE(m.has("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"));
}

TEST_CASE("no ratio without its denominator, or with a zero one", "[derived]") {
  MetricSet m;
  m.set("smsp__warps_issue_stalled_long_scoreboard.sum", 5000);
  add_derived_metrics(m);
  CHECK_FALSE(m.has("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"));
  m.set("smsp__issue_active.sum", 0);
  add_derived_metrics(m);
  CHECK_FALSE(m.has("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"));
}

TEST_CASE("issue rate, warp execution and memory-table ratios", "[derived]") {
  MetricSet m;
  m.set("smsp__issue_active.sum", 300);
  m.set("smsp__cycles_active.sum", 1000);
  m.set("smsp__warps_eligible.sum", 500);
  m.set("smsp__warps_active.sum", 8000);
  m.set("smsp__thread_inst_executed.sum", 2400);
  m.set("smsp__inst_executed.sum", 100);
  m.set("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 800);
  m.set("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 100);
  m.set("sm__sass_data_bytes_mem_global_op_ld.sum", 800 * 8);
  add_derived_metrics(m);
  CHECK(*m.get("smsp__issue_active.avg.per_cycle_active") == Approx(0.3));
  CHECK(*m.get("smsp__issue_active.avg.pct_of_peak_sustained_active") == Approx(30.0));
  CHECK(*m.get("smsp__warps_eligible.avg.per_cycle_active") == Approx(0.5));
  CHECK(*m.get("smsp__warps_active.avg.per_cycle_active") == Approx(8.0));
  CHECK(*m.get("smsp__thread_inst_executed_per_inst_executed.ratio") == Approx(24.0));
  CHECK(*m.get("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio") == Approx(8.0));
  CHECK(*m.get("l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_ld.ratio") == Approx(8.0));
}

TEST_CASE("a measured value is never overwritten", "[derived]") {
  MetricSet m;
  m.set("smsp__issue_active.sum", 300);
  m.set("smsp__cycles_active.sum", 1000);
  m.set("smsp__issue_active.avg.per_cycle_active", 0.42, "inst/cycle");
  add_derived_metrics(m);
  CHECK(m.get("smsp__issue_active.avg.per_cycle_active") == 0.42);
  CHECK(m.find("smsp__issue_active.avg.per_cycle_active")->source == MetricSource::kMeasured);
}

}  // namespace test_derived
