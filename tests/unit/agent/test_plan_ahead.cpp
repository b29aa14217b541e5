// Deep mode makes the first profiled launch's metric plan ahead, on the flush thread, as soon as a
// context's chip is known (issue 21: the plan was most of a profiled launch's set-up on the H200),
// and a launch that asks for a plan being made waits for it instead of making it twice. Driven
// through the fake platform; its profiler host stands for CUPTI's (synthetic plans).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent_harness.h"
#include "groups.h"
#include "plan_cache.h"
#include "stages.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_plan_ahead {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::make_launch;
using testing::wait_for_plans;

namespace {

collectors::ContextEvent context_on(uint32_t device) {
  return collectors::ContextEvent{1, reinterpret_cast<void*>(uintptr_t{0x1001}), device};  // NOLINT(performance-no-int-to-ptr)
}

// What the fake host plans of `metrics`: the names it accepts, in order.
std::vector<std::string> accepted(const std::vector<std::string>& metrics, const testing::FakePlatform& platform) {
  std::vector<std::string> out;
  for (const std::string& m : metrics) {
    if (platform.config.chip_rejects.count(m) == 0) out.push_back(m);
  }
  return out;
}

std::vector<std::vector<std::string>> planned(testing::FakePlatform& platform) {
  std::lock_guard<std::mutex> lock(platform.stats.mutex);
  return platform.stats.planned;
}

size_t times_planned(testing::FakePlatform& platform, const std::vector<std::string>& list) {
  size_t n = 0;
  for (const std::vector<std::string>& p : planned(platform)) n += p == list ? 1 : 0;
  return n;
}

AgentConfig deep_with_flush_thread() {
  AgentConfig c;
  c.select = agent::SelectMode::kAll;
  c.pc_sampling = false;
  c.trace_flush_ms = 5;
  return c;
}

// A profiler host whose plan() blocks until released, so that a second thread can ask for the same
// plan while the first is making it.
class GatedHost final : public collectors::ProfilerHost {
 public:
  [[nodiscard]] const std::string& chip() const override { return chip_; }
  collectors::Result<collectors::MetricPlan> plan(const std::vector<std::string>& metrics) override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++calls_;
    entered_.notify_all();
    released_cv_.wait(lock, [&] { return released_; });
    collectors::MetricPlan p;
    p.chip = chip_;
    p.metrics = metrics;
    p.passes = 1;
    return p;
  }
  collectors::Result<std::vector<collectors::MetricReading>> evaluate(const collectors::MetricPlan&,
                                                                      const collectors::CounterData&,
                                                                      uint32_t) override {
    return std::vector<collectors::MetricReading>{};
  }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(mutex_);
    entered_.wait(lock, [&] { return calls_ > 0; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    released_cv_.notify_all();
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  std::string chip_ = "GH100";
  std::mutex mutex_;
  std::condition_variable entered_, released_cv_;
  bool released_ = false;
  int calls_ = 0;
};

}  // namespace

TEST_CASE("plan ahead: the first stage's plan is made on the flush thread before any launch", "[agent][plan]") {
  Captured a = capture_of("vector_add");
  Harness h(deep_with_flush_thread(), counters_for({&a}));
  REQUIRE(h.ag->start());
  h.ag->on_context_created(context_on(0));
  // No launch yet: only the flush thread can have made it.
  REQUIRE(wait_for_plans(h.platform, 1));
  const std::vector<std::string> first = accepted(agent::first_stage_counters("GH100"), h.platform);
  CHECK(planned(h.platform).front() == first);
  CHECK(h.platform.stats.host_calls.load() == 1);

  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  h.ag->finish();
  // The launch used that plan: the first stage was planned once in the process, and profiled.
  CHECK(times_planned(h.platform, first) == 1);
  CHECK(h.platform.stats.begins.load() >= 1);
  tools::ReadResult r = h.read();
  REQUIRE_FALSE(r.kernel_records.empty());
  CHECK(r.file.records(r.kernel_records.front()).kernel().status() == v1::PROFILE_STATUS_PROFILED);
}

TEST_CASE("plan ahead: the list follows CUTRIAGE_METRICS and CUTRIAGE_SELECT", "[agent][plan]") {
  Captured a = capture_of("vector_add");
  SECTION("full: every counter") {
    AgentConfig c = deep_with_flush_thread();
    c.metric_mode = agent::MetricMode::kFull;
    Harness h(c, counters_for({&a}));
    REQUIRE(h.ag->start());
    h.ag->on_context_created(context_on(0));
    REQUIRE(wait_for_plans(h.platform, 1));
    CHECK(planned(h.platform).front() == accepted(agent::all_counters(), h.platform));
    h.ag->finish();
  }
  SECTION("trace only: nothing is planned") {
    AgentConfig c = deep_with_flush_thread();
    c.select = agent::SelectMode::kNone;
    Harness h(c, counters_for({&a}));
    REQUIRE(h.ag->start());
    h.ag->on_context_created(context_on(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // twenty flush ticks
    h.ag->finish();
    CHECK(h.platform.stats.plans.load() == 0);
    CHECK(h.platform.stats.host_calls.load() == 0);
  }
  SECTION("no flush thread: the launch plans on its own thread, as before") {
    AgentConfig c = deep_with_flush_thread();
    c.trace_flush_ms = 0;
    Harness h(c, counters_for({&a}));
    REQUIRE(h.ag->start());
    h.ag->on_context_created(context_on(0));
    CHECK(h.platform.stats.plans.load() == 0);
    h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
    CHECK(h.platform.stats.plans.load() == 1);
    h.ag->finish();
  }
  SECTION("always-on plans its groups, not deep mode's lists") {
    AgentConfig c = deep_with_flush_thread();
    c.mode = agent::AgentMode::kAlwaysOn;
    Harness h(c, counters_for({&a}));
    REQUIRE(h.ag->start());
    h.ag->on_context_created(context_on(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    h.ag->finish();
    CHECK(times_planned(h.platform, accepted(agent::first_stage_counters("GH100"), h.platform)) == 0);
  }
}

TEST_CASE("plan ahead: a run whose earlier ranking launched the top family once plans every counter too",
          "[agent][plan][ranking]") {
  // The earlier run: one launch of the family, ranked (its file is the ranking of the next).
  Captured a = capture_of("fma_chain");
  std::string earlier;
  {
    AgentConfig c;
    c.select = agent::SelectMode::kTop;
    c.select_top = 1;
    c.pc_sampling = false;
    c.trace_flush_ms = 0;
    Harness h(c, counters_for({&a}));
    REQUIRE(h.ag->start());
    h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
    h.ag->finish();
    earlier = h.bytes;
  }
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("cutriage-plan-ahead-" + std::to_string(::getpid()) + ".pb");
  std::ofstream(path, std::ios::binary) << earlier;

  AgentConfig c = deep_with_flush_thread();
  c.select = agent::SelectMode::kTop;
  c.select_top = 1;
  c.ranking_path = path.string();
  Harness h(c, counters_for({&a}));
  REQUIRE(h.ag->start());
  h.ag->on_context_created(context_on(0));
  REQUIRE(wait_for_plans(h.platform, 2));
  const std::vector<std::vector<std::string>> made = planned(h.platform);
  REQUIRE(made.size() >= 2);
  CHECK(made[0] == accepted(agent::first_stage_counters("GH100"), h.platform));
  CHECK(made[1] == accepted(agent::all_counters(), h.platform));
  // Its one launch collects every counter at once, with the plan made ahead.
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  h.ag->finish();
  CHECK(times_planned(h.platform, made[1]) == 1);
  std::filesystem::remove(path);
}

TEST_CASE("plan cache: a plan being made is waited for, not made twice", "[agent][plan]") {
  agent::PlanCache cache;
  GatedHost host;
  const std::vector<std::string> list{"sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  collectors::Result<collectors::MetricPlan> first = collectors::Status(collectors::StatusCode::kInternal, "unset");
  collectors::Result<collectors::MetricPlan> second = first;
  std::thread maker([&] { first = cache.plan(host, "GH100", list); });
  host.wait_entered();
  std::thread asker([&] { second = cache.plan(host, "GH100", list); });
  for (int i = 0; i < 2000 && cache.waits() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(cache.waits() == 1);
  host.release();
  maker.join();
  asker.join();
  CHECK(host.calls() == 1);
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  CHECK(second.value().metrics == list);
}

TEST_CASE("plan cache: queued lists are made once, in order, and a chip without a host drops its own",
          "[agent][plan]") {
  agent::PlanCache cache;
  testing::FakePlatform platform{testing::FakeCounters{}};
  testing::FakeHost host(platform.config, platform.stats);
  const std::vector<std::string> a{"dram__throughput.avg.pct_of_peak_sustained_elapsed"};
  const std::vector<std::string> b{"sm__inst_executed.sum"};
  cache.queue("GH100", a);
  cache.queue("GA100", b);
  cache.queue("GH100", b);
  cache.queue("GH100", a);  // already queued
  std::vector<std::string> asked;
  const size_t ready = cache.make_queued([&](const std::string& chip) -> std::shared_ptr<collectors::ProfilerHost> {
    asked.push_back(chip);
    if (chip != "GH100") return nullptr;
    return std::shared_ptr<collectors::ProfilerHost>(&host, [](collectors::ProfilerHost*) {});
  });
  CHECK(ready == 2);
  CHECK(asked == std::vector<std::string>{"GH100", "GA100", "GH100"});
  CHECK(planned(platform) == std::vector<std::vector<std::string>>{a, b});
  CHECK(cache.size() == 2);
  // Made lists are not queued again, and a second round has nothing to do.
  cache.queue("GH100", a);
  CHECK(cache.make_queued([](const std::string&) { return std::shared_ptr<collectors::ProfilerHost>(); }) == 0);
  CHECK(cache.plan(host, "GH100", a).is_ok());
  CHECK(platform.stats.plans.load() == 2);
}

TEST_CASE("plan ahead: a kernel's next stage is planned on the flush thread before its next launch",
          "[agent][plan]") {
  Captured a = capture_of("vector_add");
  Harness h(deep_with_flush_thread(), counters_for({&a}));
  REQUIRE(h.ag->start());
  h.ag->on_context_created(context_on(0));
  REQUIRE(wait_for_plans(h.platform, 1));
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));  // the first stage
  // Its route asks for more: that list is made before the family launches again.
  REQUIRE(wait_for_plans(h.platform, 2));
  const std::vector<std::string> second = planned(h.platform).at(1);
  h.platform.launch(make_launch(a.mangled, 2, a.launch.grid, a.launch.block));
  h.ag->finish();
  std::vector<std::vector<std::string>> began;
  {
    std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
    began = h.platform.stats.begin_metrics;
  }
  REQUIRE(began.size() >= 2);
  CHECK(began[1] == second);  // the second launch's counters are the list made ahead
  CHECK(times_planned(h.platform, second) == 1);
}

TEST_CASE("plan ahead: always-on's stages are planned on the flush thread, the first when the context comes, the next as a stage ends",
          "[agent][plan][always_on][stages]") {
  // CUTRIAGE_STAGE_PASSES: a stage's first pass made its plan on the launching thread (the H200's
  // 531 ms first pass had it inside). The fake host charges a plan 90 ms on the agent's clock, so a
  // plan made at the launch shows in the stage's first_pass_cost.
  Captured a = capture_of("fma_chain");
  AgentConfig c = deep_with_flush_thread();
  c.mode = agent::AgentMode::kAlwaysOn;
  c.stage_passes = true;
  c.pm_window = false;
  c.summary = false;
  c.budget_fraction = 0.05;
  Harness h(c, counters_for({&a}));
  h.platform.config.cost_switch_ns = 170'000'000;
  h.platform.config.cost_same_ns = 20'000'000;
  REQUIRE(h.ag->start());
  h.ag->on_context_created(context_on(0));
  // The first stage as the policy begins it: deep mode's first stage and the launch's duration.
  std::vector<std::string> first = agent::first_stage_counters("GH100");
  first.insert(first.end(), agent::in_every_group().begin(), agent::in_every_group().end());
  std::sort(first.begin(), first.end());
  first.erase(std::unique(first.begin(), first.end()), first.end());
  first = accepted(first, h.platform);
  for (int i = 0; i < 2000 && times_planned(h.platform, first) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(times_planned(h.platform, first) == 1);  // no launch yet: the flush thread made it
  // The first launch asks the flush thread for the chip's single-pass groups too (the fallback of
  // a family whose stages are abandoned): let it finish them before plans cost anything, since
  // the fake's clock is shared and would charge their time to whatever the launch measures.
  h.platform.mono_ns += 100'000'000;
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  for (int i = 0; i < 2000 && h.log_text().find("single-pass groups") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  h.platform.config.cost_plan_ns = 90'000'000;
  h.platform.config.cost_plan_min_names = 11;  // a stage's lists; the groups (10 names) cost nothing
  // When a stage ends, the flush thread makes the next stage's plan: its turn before the next
  // launch (a fixed 1 ms sleep was not always enough when CTest ran tests side by side).
  size_t stages_ended = 0;
  for (uint64_t i = 2; i <= 600; ++i) {
    h.platform.mono_ns += 100'000'000;
    const int plans_before = h.platform.stats.plans.load();
    h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
    const size_t ended = testing::count_lines_containing(h.log_text(), "a stage of");
    if (ended > stages_ended) {
      stages_ended = ended;
      // The route may want no further stage: then no plan comes, and the wait ends at 1 s.
      for (int w = 0; w < 200 && h.platform.stats.plans.load() == plans_before; ++w) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the flush thread's turn
  }
  h.ag->finish();
  tools::ReadResult r = h.read();
  std::map<uint64_t, const v1::KernelProfile*> stages;  // by the launch of the stage's last pass
  for (const v1::KernelProfile* k : testing::kernel_records(r)) {
    if (k->status() == v1::PROFILE_STATUS_PROFILED && k->has_first_pass_cost()) stages[k->launch_index()] = k;
  }
  INFO(h.log_text());
  REQUIRE(stages.size() >= 2);  // the first stage and one its route asked for
  for (const auto& [launch, k] : stages) {
    INFO("stage ending at launch " << k->launch_index());
    CHECK(k->first_pass_cost().plan_ns() == 0);  // made ahead: nothing planned at its launch
    CHECK(k->first_pass_cost().range_steps().start_ns() == 170'000'000);
  }
  CHECK(times_planned(h.platform, first) == 1);
}

TEST_CASE("plan ahead: the chip's profiler host is made on the thread creating the context", "[agent][plan]") {
  // That thread cannot be exiting while the host library builds its state (collectors/
  // host_lifetime.h): the host is made in the context callback itself, in every mode that
  // profiles, before any launch and whether or not a flush thread runs.
  Captured a = capture_of("vector_add");
  for (agent::AgentMode mode : {agent::AgentMode::kDeep, agent::AgentMode::kAlwaysOn}) {
    for (uint32_t flush_ms : {0U, 5U}) {
      INFO("mode " << static_cast<int>(mode) << ", flush thread every " << flush_ms << " ms");
      AgentConfig c = deep_with_flush_thread();
      c.mode = mode;
      c.trace_flush_ms = flush_ms;
      Harness h(c, counters_for({&a}));
      REQUIRE(h.ag->start());
      CHECK(h.platform.stats.host_calls.load() == 0);
      h.ag->on_context_created(context_on(0));
      CHECK(h.platform.stats.host_calls.load() == 1);  // on return: made on this thread
      h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
      h.ag->finish();
      CHECK(h.platform.stats.host_calls.load() == 1);  // and only once
    }
  }
}

}  // namespace test_plan_ahead
