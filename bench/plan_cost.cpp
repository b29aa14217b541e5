// What the Profiler Host's side of a profiled launch costs on the CPU: creating the chip's host and
// making a metric plan (name checks and the configuration image) for the counter lists deep mode
// asks for. Needs CUPTI's library only (no GPU, no driver), so it runs on the development machine
// and on the GPU machine's CPU alike. Built with the tests as cutriage_bench_plan_cost; never run by
// CTest.
//
//   build/tests/cutriage_bench_plan_cost [CHIP] [ROUNDS]      (bench/plan_cost.sh runs it)
//
// Each round is a fresh host (a new process pays it once, as the agent does): the host, then the
// first-stage list, the rest of the full list (the most a later stage asks for), the full list,
// and the full list again on the same host (what CUPTI keeps between two plans of one host).
// Prints every round and the medians, in milliseconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cutriage/collectors/range_profiler.h"
#include "stages.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cutriage;
  const std::string chip = argc > 1 ? argv[1] : "GH100";
  const int rounds = argc > 2 ? std::max(1, static_cast<int>(std::strtol(argv[2], nullptr, 10))) : 5;
  const std::vector<std::string> first = agent::first_stage_counters(chip);
  const std::vector<std::string> full = agent::all_counters();
  std::vector<std::string> rest;
  for (const std::string& m : full) {
    if (std::find(first.begin(), first.end(), m) == first.end()) rest.push_back(m);
  }
  std::vector<double> host_ms, first_ms, rest_ms, full_ms, again_ms;
  std::printf("chip %s: first stage %zu counters, the rest %zu, full %zu\n", chip.c_str(), first.size(), rest.size(),
              full.size());
  std::printf("round host_ms first_stage_ms (passes) rest_ms (passes) full_ms (passes) full_again_ms\n");
  for (int round = 0; round < rounds; ++round) {
    Clock::time_point t0 = Clock::now();
    collectors::Result<std::unique_ptr<collectors::ProfilerHost>> host = collectors::make_cupti_profiler_host(chip);
    host_ms.push_back(ms_since(t0));
    if (!host.is_ok()) {
      std::fprintf(stderr, "profiler host for %s: %s\n", chip.c_str(), host.status().message().c_str());
      return 1;
    }
    t0 = Clock::now();
    collectors::Result<collectors::MetricPlan> a = host.value()->plan(first);
    first_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    collectors::Result<collectors::MetricPlan> r = host.value()->plan(rest);
    rest_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    collectors::Result<collectors::MetricPlan> b = host.value()->plan(full);
    full_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    collectors::Result<collectors::MetricPlan> c = host.value()->plan(full);
    again_ms.push_back(ms_since(t0));
    for (const collectors::Result<collectors::MetricPlan>* p : {&a, &r, &b, &c}) {
      if (!p->is_ok()) {
        std::fprintf(stderr, "plan failed: %s\n", p->status().message().c_str());
        return 1;
      }
    }
    std::printf("%d %.1f %.1f (%u) %.1f (%u) %.1f (%u) %.1f\n", round + 1, host_ms.back(), first_ms.back(),
                a.value().passes, rest_ms.back(), r.value().passes, full_ms.back(), b.value().passes, again_ms.back());
  }
  std::printf("median host_ms %.1f first_stage_ms %.1f rest_ms %.1f full_ms %.1f full_again_ms %.1f\n",
              median(host_ms), median(first_ms), median(rest_ms), median(full_ms), median(again_ms));
  return 0;
}
