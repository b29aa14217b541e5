// cutriage-plan-stages CHIP --groups: prints the single-pass groups of always-on collection, as
// the table in agent/src/groups_table.cpp (first fit over every counter a route may want,
// multi-pass throughputs as their breakdown parts; seconds of plan calls, so offline too).
//
// cutriage-plan-stages CHIP: prints the counters that ride along with the routing counters
// (Decisions 0-2) at no extra replay pass on CHIP, as the C++ table agent/src/stages.cpp holds.
//
// Adaptive collection reads the routing counters on a kernel's first profiled launch. On GH100
// they take 9 passes (sm__throughput alone needs 8), and those passes have room for most of what
// Decisions 3, 4, 5 and 7 read. Finding what fits is a greedy search over the Profiler Host API
// (one config build per candidate, ~70 ms each: seconds in all), too slow to run inside the
// application, so it runs here, offline, and the result is committed. A CI test checks that the
// committed table still costs no pass beyond the routing counters.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cutriage/collectors/range_profiler.h"
#include "cutriage/triage/plan.h"
#include "groups.h"
#include "stages.h"

using namespace cutriage;

namespace {

int print_groups(collectors::ProfilerHost& host, const char* chip) {
  const std::vector<std::string> universe = agent::always_on_counters(chip);
  // The routing counters first: a family is routed after the fewest group switches.
  const agent::MetricGroups g =
      agent::pack_first_fit(host, universe, agent::in_every_group(), agent::routing_counters_expanded());
  std::printf("// %s: %zu counters in %zu single-pass groups (%u plan calls); need replay:", chip, universe.size(),
              g.plans.size(), g.plan_calls);
  for (const auto& u : g.unreachable) std::printf(" %s", u.name.c_str());
  std::printf("\n");
  for (const collectors::MetricPlan& p : g.plans) {
    std::printf("    {");
    bool first = true;
    for (const std::string& m : p.metrics) {
      if (m == "gpu__time_duration.sum") continue;
      std::printf("%s\"%s\"", first ? "" : ", ", m.c_str());
      first = false;
    }
    std::printf("},\n");
  }
  return 0;
}

// How many single-pass groups the routing counters (Decisions 0-2, breakdowns expanded) touch in
// the chip's offline table, and how many they take packed alone: what a route-first packing
// could save before a family can be routed.
int print_routing(collectors::ProfilerHost& host, const char* chip) {
  const std::vector<std::string>& routing = agent::routing_counters_expanded();
  const std::string chip_name(chip);  // named: offline_groups keeps no reference to it
  const std::vector<std::vector<std::string>>& table = agent::offline_groups(chip_name);
  size_t touched = 0;
  for (const std::vector<std::string>& g : table) {
    touched += std::any_of(g.begin(), g.end(), [&](const std::string& m) {
      return std::binary_search(routing.begin(), routing.end(), m);
    }) ? 1 : 0;
  }
  const agent::MetricGroups alone = agent::pack_first_fit(host, routing, agent::in_every_group());
  std::printf("%s: %zu routing counters; in %zu of the %zu table groups; %zu groups packed alone\n", chip,
              routing.size(), touched, table.size(), alone.plans.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool groups = argc == 3 && std::string(argv[2]) == "--groups";
  const bool routing_only = argc == 3 && std::string(argv[2]) == "--routing";
  if (argc != 2 && !groups && !routing_only) {
    std::fprintf(stderr, "usage: cutriage-plan-stages CHIP [--groups]   (e.g. GH100)\n");
    return 1;
  }
  auto host_or = collectors::make_cupti_profiler_host(argv[1]);
  if (!host_or.is_ok()) {
    std::fprintf(stderr, "%s\n", host_or.status().message().c_str());
    return 2;
  }
  collectors::ProfilerHost& host = *host_or.value();
  if (groups) return print_groups(host, argv[1]);
  if (routing_only) return print_routing(host, argv[1]);
  auto passes = [&](const std::vector<std::string>& m) -> int {
    auto p = host.plan(m);
    return p.is_ok() && p.value().rejected.empty() ? static_cast<int>(p.value().passes) : -1;
  };
  using D = triage::Decision;
  std::vector<std::string> routing = triage::counters_for_decisions(triage::routing_decisions());
  // Names the chip rejects cannot ride along; drop them from the routing set for the search.
  auto plan = host.plan(routing);
  if (!plan.is_ok()) {
    std::fprintf(stderr, "%s\n", plan.status().message().c_str());
    return 2;
  }
  std::vector<std::string> stage = plan.value().metrics;
  const int base = static_cast<int>(plan.value().passes);
  std::vector<std::string> riders;
  for (const std::string& c : triage::counters_for_decisions(
           {D::kD3IssueStalls, D::kD4ComputePipe, D::kD5MemoryMechanism, D::kD7HardwareLimit})) {
    if (std::find(routing.begin(), routing.end(), c) != routing.end()) continue;
    std::vector<std::string> trial = stage;
    trial.push_back(c);
    int p = passes(trial);
    if (p > 0 && p <= base) {
      stage = std::move(trial);
      riders.push_back(c);
    }
  }
  std::printf("// %s: %zu counters ride along with the routing counters in %d passes.\n", argv[1],
              riders.size(), base);
  for (const std::string& r : riders) std::printf("    \"%s\",\n", r.c_str());
  return 0;
}
