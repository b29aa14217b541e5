// The agent's own share of the launch callback: Agent::on_launch_enter timed on the CPU, driven
// through the fake platform (no CUDA, no CUPTI), so that CUPTI's cost and the agent's can be told
// apart (BENCHMARKS.md). Built with the tests as cutriage_bench_launch_enter; never run by CTest.
//
//   build/tests/cutriage_bench_launch_enter [calls]
//
// Two cases, each the median of 5 rounds of `calls` (default 1000000) enter callbacks over four
// families launched in turn, the real monotonic clock:
//   always-on  the four families traced, ranked and candidates; the budget closed (its first
//              allowance takes a minute), which is where nearly every launch of a long run goes
//   trace-only CUTRIAGE_SELECT=none: counted and traced, never a candidate
// The exit callback is not timed: it returns at once for launches whose enter did not ask for it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "agent.h"
#include "fake_platform.h"
#include "null_sink.h"

namespace {

using namespace cutriage;

double median_ns_per_call(agent::AgentConfig cfg, int calls) {
  cfg.summary = false;
  cfg.trace_flush_ms = 0;  // no flush thread: the records are delivered below
  testing::FakePlatform platform;
  agent::Logger log;
  (void)log.configure(agent::LogLevel::kOff, "");
  agent::ProcessInfo process{42, "bench", {"./service"}, [] { return uint64_t{1700000000000000000}; }, {}};
  agent::Agent ag(cfg, platform, std::make_unique<testing::NullSink>(), log, process);
  if (!ag.start()) return -1;
  // The example service's four families (mangled as nvcc names them).
  std::vector<collectors::LaunchEvent> events;
  for (const char* name : {"_ZN12_GLOBAL__N_112matmul_tiledEPKfS1_Pfi", "_ZN12_GLOBAL__N_14geluEPfi",
                           "_ZN12_GLOBAL__N_17row_sumEPKfPfi", "_ZN12_GLOBAL__N_114normalize_rowsEPfPKfi"}) {
    events.push_back(testing::make_launch(name, 1));
  }
  uint64_t correlation = 0;
  for (int i = 0; i < 4000; ++i) {  // traced and ranked
    collectors::LaunchEvent e = events[static_cast<size_t>(i) % events.size()];
    e.correlation_id = ++correlation;
    platform.launch(e);
  }
  platform.flush_trace(false);
  collectors::LaunchObserver* observer = platform.observer();
  std::vector<double> rounds;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      collectors::LaunchEvent& e = events[static_cast<size_t>(i) & 3];
      e.correlation_id = ++correlation;
      if (observer->on_launch_enter(e)) observer->on_launch_exit(e);
    }
    const auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  ag.finish();
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long requested = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1000000;
  if (requested <= 0 || requested > 1000000000) {
    std::fprintf(stderr, "usage: cutriage_bench_launch_enter [calls, 1 to 1000000000]\n");
    return 2;
  }
  const int calls = static_cast<int>(requested);
  agent::AgentConfig always_on;
  always_on.mode = agent::AgentMode::kAlwaysOn;
  agent::AgentConfig trace_only;
  trace_only.mode = agent::AgentMode::kAlwaysOn;
  trace_only.select = agent::SelectMode::kNone;
  std::printf("on_launch_enter, always-on, candidates, budget closed: %.1f ns per call\n",
              median_ns_per_call(always_on, calls));
  std::printf("on_launch_enter, always-on, CUTRIAGE_SELECT=none: %.1f ns per call\n",
              median_ns_per_call(trace_only, calls));
  return 0;
}
