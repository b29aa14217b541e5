// Always-on's start-up paid ahead (CUTRIAGE_WARMUP, agent/src/profiler_warmup.*), on the fake
// platform: the fake's range profiler charges the process's first Start (FakeConfig::
// cost_first_begin_ns, besides a switch's cost) on the agent's clock, as CUPTI's does on the
// application's thread. Costs here are synthetic, of the order the H200 showed.
#include <functional>
#include <memory>
#include <string>

#include "agent_harness.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_profiler_warmup {

using namespace cutriage;
using agent::AgentConfig;
using testing::AgentRig;
using testing::Captured;
using testing::capture_of;
using testing::make_launch;

namespace {

constexpr uint64_t kFirstNs = 600'000'000;   // the process's first Start, besides a switch's
constexpr uint64_t kSwitchNs = 150'000'000;  // a newly enabled object's first Start

struct Run {
  Captured a = capture_of("strided_load");
  std::unique_ptr<AgentRig> rig;
  uint64_t launches = 0;

  // `warm`: CUTRIAGE_WARMUP; `has_startup`: whether the platform has a start-up to pay ahead;
  // `adjust` changes the rest of the configuration.
  explicit Run(bool warm, bool has_startup = true, const std::function<void(AgentConfig&)>& adjust = {}) {
    rig = std::make_unique<AgentRig>(testing::counters_for({&a}), testing::Harness::fresh_log_path());
    rig->platform.config.warm_up = has_startup;
    rig->platform.config.cost_first_begin_ns = kFirstNs;
    rig->platform.config.cost_switch_ns = kSwitchNs;
    rig->platform.config.cost_same_ns = 20'000'000;
    rig->platform.config.switch_after_disable = true;
    AgentConfig cfg = testing::always_on_driven(0.004);
    cfg.warmup = warm;
    if (adjust) adjust(cfg);
    rig->make_agent(std::move(cfg),
                    agent::ProcessInfo{1234, "testhost", {"./app"}, [] { return uint64_t{1700000000000000000}; }, {}});
    REQUIRE(rig->ag->start());
  }
  ~Run() {
    rig->ag.reset();
    std::filesystem::remove(rig->log_path);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  collectors::LaunchEvent next(uint64_t context_id = 1, uint32_t device = 0) {
    collectors::LaunchEvent ev = make_launch(a.mangled.c_str(), ++launches, a.launch.grid, a.launch.block, context_id);
    ev.device = device;
    return ev;
  }
  // `n` launches, `gap_ns` of the application's time before each.
  void serve(int n, uint64_t gap_ns) {
    for (int i = 0; i < n; ++i) {
      rig->platform.mono_ns += gap_ns;
      rig->platform.launch(next());
    }
  }
  [[nodiscard]] wire::OverheadStats stats() const { return *rig->ag->overhead(); }
  [[nodiscard]] std::string log() const { return testing::slurp(rig->log_path); }
};

}  // namespace

TEST_CASE("always-on warm-up: the first launch pays CUPTI's start-up ahead and apart from the budget",
          "[agent][always_on][warmup]") {
  Run warm(true);
  const uint64_t before = warm.rig->platform.mono_ns.load();
  warm.rig->platform.launch(warm.next());
  // Paid once, before the launch was profiled: the start-up and one object's first Start.
  CHECK(warm.rig->platform.stats.warm_ups.load() == 1);
  CHECK(warm.rig->platform.stats.begins.load() == 1);  // the launch itself, on the full allowance
  const wire::OverheadStats first = warm.stats();
  CHECK(first.startup_ns == kFirstNs + kSwitchNs);
  // The profiled launch paid a switch only: the start-up is not in what the budget spent.
  CHECK(first.spent_ns == kSwitchNs);
  CHECK(warm.rig->platform.mono_ns.load() - before == kFirstNs + 2 * kSwitchNs);
  // Dashboards read it in seconds (cutriage_startup_seconds), apart from the overhead.
  CHECK(warm.rig->ag->prometheus_snapshot().startup_seconds == 0.75);
  CHECK(warm.rig->ag->prometheus_snapshot().overhead_seconds == 0.15);
  warm.serve(20, 1'000'000'000);
  CHECK(warm.rig->platform.stats.warm_ups.load() == 1);  // once per device, not per launch
  const std::string log = warm.log();
  INFO(log);
  CHECK(log.find("CUPTI's range-profiler start-up paid ahead of the first profile on device 0: 750.0 ms") != std::string::npos);
}

TEST_CASE("always-on warm-up: more launches are admitted early than when the budget pays the start-up",
          "[agent][always_on][warmup]") {
  // The point of paying ahead: at the default budget the start-up charged to the allowance is a
  // debt of minutes; paid apart, the same two minutes admit more launches.
  const auto admitted_in_two_minutes = [](bool warm) {
    Run r(warm);
    r.serve(120, 1'000'000'000);
    const wire::OverheadStats s = r.stats();
    CHECK(s.startup_ns == (warm ? kFirstNs + kSwitchNs : 0));
    CHECK(r.rig->platform.stats.warm_ups.load() == (warm ? 1 : 0));
    return s.admitted;
  };
  const uint64_t cold = admitted_in_two_minutes(false);
  const uint64_t warm = admitted_in_two_minutes(true);
  INFO("cold " << cold << ", warm " << warm);
  CHECK(cold >= 1);
  CHECK(warm > cold);
}

TEST_CASE("always-on warm-up: off when asked or when the platform has no start-up to pay",
          "[agent][always_on][warmup]") {
  SECTION("CUTRIAGE_WARMUP=0") {
    Run r(false);
    r.serve(3, 1'000'000'000);
    CHECK(r.rig->platform.stats.warm_ups.load() == 0);
    CHECK(r.stats().startup_ns == 0);
    CHECK(r.stats().spent_ns >= kFirstNs + kSwitchNs);  // the first profiled launch paid it
  }
  SECTION("a process with nothing to profile") {
    // No family is a candidate (CUTRIAGE_SELECT=none): a short process or a health check under
    // always-on never pays for a profile it will not make.
    Run r(true, true, [](AgentConfig& c) { c.select = agent::SelectMode::kNone; });
    r.serve(5, 1'000'000'000);
    CHECK(r.rig->platform.stats.warm_ups.load() == 0);
    CHECK(r.stats().startup_ns == 0);
  }
  SECTION("a platform without one") {
    Run r(true, /*has_startup=*/false);
    const int details = r.rig->platform.details_calls.load();
    r.serve(1, 1'000'000'000);
    CHECK(r.stats().startup_ns == 0);
    CHECK(r.rig->platform.details_calls.load() - details <= 1);  // the profiled launch's own
  }
}

TEST_CASE("always-on warm-up: not at a launch into a capturing stream, once per device",
          "[agent][always_on][warmup]") {
  Run r(true);
  collectors::LaunchEvent captured = r.next();
  captured.stream_capturing = true;
  r.rig->platform.launch(captured);
  CHECK(r.rig->platform.stats.warm_ups.load() == 0);  // captured: nothing runs now, nothing paid
  r.rig->platform.mono_ns += 1'000'000'000;
  r.rig->platform.launch(r.next());
  CHECK(r.rig->platform.stats.warm_ups.load() == 1);
  // Another device: paid again there (a switch's cost; the process's start-up is paid once).
  r.rig->platform.mono_ns += 1'000'000'000;
  r.rig->platform.launch(r.next(/*context_id=*/2, /*device=*/1));
  CHECK(r.rig->platform.stats.warm_ups.load() == 2);
  CHECK(r.stats().startup_ns == kFirstNs + 2 * kSwitchNs);
}

}  // namespace test_profiler_warmup
