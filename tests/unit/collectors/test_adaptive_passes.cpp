// Replay passes of adaptive collection, per zoo kernel, from the real GH100 Profiler Host API
// (offline): the first stage (agent/src/stages.cpp), then what each kernel's route still lacks,
// with the route decided on the kernel's real H200 capture (tests/data/ncu/zoo). The issue's
// target is a complete diagnosis in at most half of `ncu --set full`'s 38 passes per kernel.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "capture_support.h"
#include "catch.h"
#include "host_api_guard.h"
#include "cutriage/collectors/range_profiler.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/plan.h"
#include "ncu_csv.h"
#include "stages.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_adaptive_passes {

using namespace cutriage;
using cutriage::testing::slurp;


namespace {

}  // namespace

TEST_CASE("adaptive collection: at most half of ncu's passes per zoo kernel on GH100", "[passes]") {
#if defined(CUTRIAGE_HOST_API_BLOCKED)
  std::cout << "CUTRIAGE_SKIPPED: the Profiler Host API cannot load under ASan/TSan\n";
  return;
#else
  auto made = collectors::make_cupti_profiler_host("GH100");
  INFO(made.status().message());
  REQUIRE(made.is_ok());
  collectors::ProfilerHost& host = *made.value();
  auto passes = [&](const std::vector<std::string>& m) -> uint32_t {
    auto p = host.plan(m);
    REQUIRE(p.is_ok());
    return p.value().passes;
  };
  constexpr uint32_t kNcuFullPasses = 38;  // `ncu --set full` on the H200 (tests/data/ncu)

  const auto dir = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "ncu" / "zoo";
  std::vector<std::filesystem::path> csvs;
  for (const auto& e : std::filesystem::directory_iterator(dir)) csvs.push_back(e.path());
  std::sort(csvs.begin(), csvs.end());
  size_t kernels = 0;
  for (const auto& path : csvs) {
    tools::NcuCsvResult r = tools::parse_ncu_csv(slurp(path));
    REQUIRE(r.import);
    for (const wire::KernelRecord& k : r.import->kernels) {
      INFO(path.filename().string() << " " << k.input.function_name);
      std::vector<std::string> stage = agent::first_stage_counters("GH100");
      std::set<std::string> collected(stage.begin(), stage.end());
      uint32_t total = passes(stage);
      triage::KernelInput in = k.input;
      in.metrics = testing::collected_view(k.input.metrics, collected);
      triage::Diagnosis d = triage::triage_kernel(in);
      int launches = 1;
      for (; launches < 3; ++launches) {  // the agent's default: at most 3 profiles per kernel
        std::vector<std::string> more =
            triage::counters_still_needed(d, in.metrics, {collected.begin(), collected.end()});
        // Names the chip cannot collect are asked for once, rejected, and never again.
        auto plan = host.plan(more);
        if (more.empty() || !plan.is_ok()) break;
        total += plan.value().passes;
        if (std::getenv("CUTRIAGE_DEBUG_PASSES") != nullptr) {
          std::cout << "  stage " << launches + 1 << ": " << more.size() << " counters, "
                    << plan.value().passes << " passes:";
          for (const std::string& m : more) std::cout << " " << m;
          std::cout << "\n";
        }
        collected.insert(more.begin(), more.end());
        in.metrics = testing::collected_view(k.input.metrics, collected);
        d = triage::triage_kernel(in);
      }
      std::cout << k.input.function_name << ": " << total << " passes over " << launches << " launches\n";
      CHECK(total * 2 <= kNcuFullPasses);
      ++kernels;
    }
  }
  CHECK(kernels >= 12);
#endif
}

}  // namespace test_adaptive_passes
