// Adaptive collection on real captures: for every zoo kernel captured on the H200, pretend the
// first profiled launch read only the counters Decisions 0-2 ask for, let the engine's route name
// what it still needs, "collect" those from the full capture, and check that the staged diagnosis
// reaches the same verdict as the one made from everything at once. This is what the agent does
// across two launches of one kernel; if the planner forgot a counter a visited decision reads,
// the staged verdict would differ.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "capture_support.h"
#include "zoo_captures.h"
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/plan.h"
#include "import.h"
#include "ncu_csv.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_adaptive_plan {

using namespace cutriage;
using cutriage::testing::slurp;

namespace {

std::vector<wire::KernelRecord> zoo_records() { return testing::zoo_ncu_records(); }

}  // namespace

TEST_CASE("plan: the routing set covers Decisions 0-2 and holds only counters", "[plan]") {
  std::vector<std::string> routing = triage::counters_for_decisions(triage::routing_decisions());
  REQUIRE(routing.size() > 5);
  for (const std::string& n : routing) {
    INFO(n);
    CHECK(n.rfind("launch__", 0) != 0);
    CHECK(n.rfind("device__", 0) != 0);
    CHECK(n.rfind("cutriage__", 0) != 0);
    CHECK(n.find('.') != std::string::npos);  // CUPTI needs a rollup
  }
  // Decision 2 reads the speed-of-light pair.
  CHECK(std::count(routing.begin(), routing.end(),
                   "sm__throughput.avg.pct_of_peak_sustained_elapsed") == 1);
  CHECK(std::count(routing.begin(), routing.end(),
                   "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") == 1);
}

TEST_CASE("plan: derived ratios expand to the counters behind them", "[plan]") {
  CHECK(triage::counter_inputs("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio") ==
        std::vector<std::string>{"smsp__warps_issue_stalled_long_scoreboard.sum", "smsp__issue_active.sum"});
  CHECK(triage::counter_inputs("smsp__issue_active.avg.per_cycle_active") ==
        std::vector<std::string>{"smsp__issue_active.sum", "smsp__cycles_active.sum"});
  CHECK(triage::counter_inputs("launch__waves_per_multiprocessor").empty());
  CHECK(triage::counter_inputs("dram__throughput.avg.pct_of_peak_sustained_elapsed") ==
        std::vector<std::string>{"dram__throughput.avg.pct_of_peak_sustained_elapsed"});
}

TEST_CASE("plan: staged collection on the H200 captures reaches the one-shot verdict", "[plan]") {
  std::vector<wire::KernelRecord> records = zoo_records();
  REQUIRE(records.size() >= 12);
  std::vector<std::string> routing = triage::counters_for_decisions(triage::routing_decisions());
  size_t needed_second_stage = 0;
  for (const wire::KernelRecord& rec : records) {
    INFO(rec.input.function_name);
    triage::KernelInput staged = rec.input;
    std::set<std::string> collected(routing.begin(), routing.end());
    staged.metrics = testing::collected_view(rec.input.metrics, collected);
    triage::Diagnosis d = triage::triage_kernel(staged);
    // Up to two follow-up launches, as the agent's default of three profiles per kernel allows.
    for (int stage = 0; stage < 2; ++stage) {
      std::vector<std::string> more = triage::counters_still_needed(
          d, staged.metrics, {collected.begin(), collected.end()});
      if (more.empty()) break;
      if (stage == 0) ++needed_second_stage;
      collected.insert(more.begin(), more.end());
      staged.metrics = testing::collected_view(rec.input.metrics, collected);
      d = triage::triage_kernel(staged);
    }
    CHECK(to_string(d.classification) == to_string(rec.diagnosis.classification));
    if (rec.diagnosis.classification == triage::Classification::kUntrusted) {
      // Decision 0 stops the route; which of its blocking checks speaks first depends on how many
      // metrics it could scan for out-of-range values, so only the verdict must agree.
      continue;
    }
    CHECK(d.primary_rule == rec.diagnosis.primary_rule);
    CHECK(to_string(d.primary_limiter) == to_string(rec.diagnosis.primary_limiter));
    // The staged plan never asks for more than the union of what the rules read.
    CHECK(collected.size() <= triage::counters_for_decisions({triage::Decision::kD0Trust,
        triage::Decision::kD1WorkloadSize, triage::Decision::kD2Regime, triage::Decision::kD3IssueStalls,
        triage::Decision::kD4ComputePipe, triage::Decision::kD5MemoryMechanism,
        triage::Decision::kD7HardwareLimit}).size());
  }
  // Most kernels route past Decision 2 and need a second stage; if none did, the routing set
  // would already hold everything and adaptive collection would save nothing.
  CHECK(needed_second_stage >= records.size() / 2);
}

}  // namespace test_adaptive_plan
