// Always-on collection on GH100 with the real Profiler Host API (offline, no GPU): every counter a
// route may want, multi-pass throughputs as their breakdown parts, packed into single-pass groups.
// The premise is checked here: without replay, everything but the parts that need
// replay even alone is collectable, one group per launch.
#include <algorithm>
#include <iostream>
#include <set>

#include "catch.h"
#include "host_api_guard.h"
#include "cutriage/collectors/range_profiler.h"
#include "cutriage/triage/plan.h"
#include "groups.h"
#include "stages.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_always_on_groups {

using namespace cutriage;


TEST_CASE("always-on groups on GH100: one pass each, only replay-bound parts left out", "[groups]") {
#if defined(CUTRIAGE_HOST_API_BLOCKED)
  std::cout << "CUTRIAGE_SKIPPED: the Profiler Host API cannot load under ASan/TSan\n";
  return;
#else
  auto made = collectors::make_cupti_profiler_host("GH100");
  INFO(made.status().message());
  REQUIRE(made.is_ok());
  collectors::ProfilerHost& host = *made.value();
  const std::vector<std::string> universe = agent::always_on_counters("GH100");
  // What the agent uses: the offline table (agent/src/groups_table.cpp), planned again.
  REQUIRE(!agent::offline_groups("GH100").empty());
  const agent::MetricGroups g = agent::chip_groups(host, "GH100", universe, agent::in_every_group());
  // Each table group still plans in one pass as it is (none had to be split).
  CHECK(g.plans.size() == agent::offline_groups("GH100").size());
  std::cout << "GH100: " << universe.size() << " counters in " << g.plans.size() << " single-pass groups, "
            << g.plan_calls << " plan calls; need replay:";
  for (const auto& u : g.unreachable) std::cout << " " << u.name;
  std::cout << "\n";
  std::set<std::string> grouped;
  for (const collectors::MetricPlan& p : g.plans) {
    CHECK(p.passes == 1);
    CHECK(p.rejected.empty());
    for (const std::string& m : p.metrics) grouped.insert(m);
    // Re-planning a group gives one pass too (the packing did not depend on a lucky prefix).
    auto again = host.plan(p.metrics);
    REQUIRE(again.is_ok());
    CHECK(again.value().passes == 1);
  }
  // Every name is grouped or said to need replay; the multi-pass throughputs never appear.
  std::set<std::string> unreachable;
  for (const auto& u : g.unreachable) unreachable.insert(u.name);
  for (const std::string& m : universe) {
    INFO(m);
    CHECK((grouped.count(m) + unreachable.count(m)) == 1);
  }
  for (const triage::ThroughputBreakdown& b : triage::throughput_breakdowns()) CHECK(grouped.count(b.metric) == 0);
  // What needs replay even alone on GH100 is few: the *sass* instrumented metrics and a handful of
  // multi-pass counters. Most of the route is collectable without replay.
  CHECK(unreachable.size() * 10 < universe.size());
  CHECK(g.plans.size() <= 24);
  // The fast runtime packing (chips without a table) covers the same names, in more groups.
  const agent::MetricGroups fast = agent::pack_single_pass(host, universe, agent::in_every_group());
  CHECK(fast.unreachable.size() == g.unreachable.size());
  CHECK(fast.plans.size() >= g.plans.size());
#endif
}

}  // namespace test_always_on_groups
