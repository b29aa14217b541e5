// Prints the always-on simulation's table (tests/support/always_on_sim.h): the issue's synthetic
// workload at the default budget on the fake platform. Optional arguments: BUDGET (a fraction,
// 0.004), SECONDS (900), "nopm" (without the PM routing window), "stages" (CUTRIAGE_STAGE_PASSES=1)
// "warmup" (CUTRIAGE_WARMUP's start-up paid at the first launch) and switch_ms=N / same_ms=N /
// pm_start_ms=N / pm_host_ms=N / first_ms=N (the cost model: a new configuration's first pass, a
// configured one's, a PM window's Start and its host-side part, the process's first Start besides
// a switch's).
// bench/always_on_sim.sh builds and runs it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "always_on_sim.h"

int main(int argc, char** argv) {
  cutriage::testing::sim::Options o;
  // A bad argument is a usage error, not a silent 0.
  if (argc > 1) {
    char* end = nullptr;
    o.budget = std::strtod(argv[1], &end);
    if (end == argv[1] || *end != '\0' || !(o.budget > 0)) {
      std::fprintf(stderr, "always_on_sim: BUDGET must be a fraction above 0, such as 0.004\n");
      return 1;
    }
  }
  if (argc > 2) o.seconds = std::strtoull(argv[2], nullptr, 10);
  // Further arguments: "nopm" (without the PM routing window, CUTRIAGE_PM_WINDOW=0) and "stages"
  // (CUTRIAGE_STAGE_PASSES=1), for comparison.
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "nopm") {
      o.pm_window = false;
    } else if (a == "warmup") {  // CUTRIAGE_WARMUP: the first Start paid at the first launch
      o.warm_up = true;
    } else if (a == "stages") {
      o.stage_passes = true;
    } else if (a.rfind("steps=", 0) == 0) {  // CUTRIAGE_STEP_STAGES=N
      char* end = nullptr;
      o.step_stages = static_cast<uint32_t>(std::strtoul(a.c_str() + 6, &end, 10));
      if (end == a.c_str() + 6 || *end != '\0' || o.step_stages < 2 || o.step_stages > 512) {
        std::fprintf(stderr, "always_on_sim: steps=N takes a step's launches, 2 to 512\n");
        return 1;
      }
    } else if (std::string error; cutriage::testing::sim::parse_cost_arg(a, o, &error)) {
      // What a cheaper switch (a stage's first pass) would change.
      if (!error.empty()) {
        std::fprintf(stderr, "always_on_sim: %s\n", error.c_str());
        return 1;
      }
    } else {
      std::fprintf(stderr, "always_on_sim: unknown argument '%s' (nopm, stages, steps=N, warmup, switch_ms=N, same_ms=N, pm_start_ms=N, pm_host_ms=N, first_ms=N)\n", argv[i]);
      return 1;
    }
  }
  if (const char* log = std::getenv("SIM_LOG"); log != nullptr) o.log_path = log;  // the agent's, at debug
  const cutriage::testing::sim::Result r = cutriage::testing::sim::run(o, cutriage::testing::sim::issue_workload());
  std::fputs(cutriage::testing::sim::table(o, r).c_str(), stdout);
  if (std::getenv("SIM_VERBOSE") != nullptr) {  // every assembled launch, and the notices
    for (const auto& f : r.families) {
      std::printf("\n%s (%u a step):", f.program.c_str(), f.launches_per_step);
      for (const auto& [t, g] : f.steps) std::printf(" %.0fs:g%u", t, g);
    }
    std::printf("\n");
    for (const std::string& n : r.notices) std::printf("%s\n", n.c_str());
  }
  return 0;
}
