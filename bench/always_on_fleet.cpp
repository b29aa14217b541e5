// Prints the fleet simulation (tests/support/always_on_sim.h, run_fleet): N replicas of the
// issue's synthetic service at the default budget for T simulated seconds each, their files merged
// by `cutriage merge`, then a process resumed from the merged file: which families were complete
// across the fleet. Arguments: SECONDS (600), the replica counts (1 2 4 8), "stages"
// (CUTRIAGE_STAGE_PASSES=1) and switch_ms=N / same_ms=N (the cost model, as always_on_sim's).
// bench/always_on_fleet.sh builds and runs it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "always_on_sim.h"

int main(int argc, char** argv) {
  namespace sim = cutriage::testing::sim;
  sim::Options o;
  if (argc > 1) {
    char* end = nullptr;
    o.seconds = std::strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || o.seconds == 0) {
      std::fprintf(stderr, "always_on_fleet: SECONDS must be a whole number above 0\n");
      return 1;
    }
  }
  std::vector<uint32_t> counts;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "stages") {  // CUTRIAGE_STAGE_PASSES=1
      o.stage_passes = true;
      continue;
    }
    if (std::string error; sim::parse_cost_arg(argv[i], o, &error)) {  // switch_ms=N, same_ms=N
      if (!error.empty()) {
        std::fprintf(stderr, "always_on_fleet: %s\n", error.c_str());
        return 1;
      }
      continue;
    }
    const long n = std::strtol(argv[i], nullptr, 10);
    if (n < 1 || n > 64) {
      std::fprintf(stderr, "always_on_fleet: a replica count must be from 1 to 64\n");
      return 1;
    }
    counts.push_back(static_cast<uint32_t>(n));
  }
  if (counts.empty()) counts = {1, 2, 4, 8};
  const std::vector<sim::FamilySpec> specs = sim::issue_workload();
  std::printf("Simulated fleet (synthetic workload, fake platform): budget %.2f%%, %llu s per replica, switch %.0f ms%s\n\n",
              100.0 * o.budget, static_cast<unsigned long long>(o.seconds), static_cast<double>(o.switch_ns) / 1e6,
              o.stage_passes ? ", stages over launches" : "");
  std::printf("| replicas | families merged | across replicas | complete after the merge |\n");
  std::printf("|---|---|---|---|\n");
  for (uint32_t n : counts) {
    const sim::FleetResult f = sim::run_fleet(o, specs, n);
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
      return s.empty() ? std::string("none") : s;
    };
    std::printf("| %u | %zu | %zu | %s |\n", n, f.merged_families, f.across_processes, list(f.complete).c_str());
  }
  return 0;
}
