// Always-on's launch gate (launch_gate.h) through the agent on the fake platform, with its flush
// thread: the callbacks go off while the trace is paused and nothing is due, come back before the
// trace resumes or the budget's next admission, and the time off is reported.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_launch_gate {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::Harness;
using testing::make_launch;

namespace {

struct Service {
  Captured a;
  std::unique_ptr<Harness> h;
  uint64_t launches = 0;
};

Service make_service(AgentConfig cfg) {
  Service s;
  s.a = capture_of("strided_load");
  s.h = std::make_unique<Harness>(std::move(cfg), testing::counters_for({&s.a}));
  REQUIRE(s.h->ag->start());
  return s;
}

void serve(Service& s, int n, uint64_t gap_ns) {
  for (int i = 0; i < n; ++i) {
    s.h->platform.mono_ns += gap_ns;
    s.h->platform.launch(make_launch(s.a.mangled.c_str(), ++s.launches, s.a.launch.grid, s.a.launch.block));
  }
}

// The trace on 1 s of every 4 s, the flush thread every 5 ms (the gate's lead is then its floor,
// 300 ms).
AgentConfig gated(agent::SelectMode select) {
  AgentConfig cfg = testing::always_on_driven(0.004);
  cfg.select = select;
  cfg.trace_flush_ms = 5;
  cfg.trace_duty = 0.25;
  cfg.trace_period_s = 4;
  cfg.launch_gate = true;
  return cfg;
}

// Waits (up to 4 s) for `flag` to read `want`.
template <typename Flag>
bool wait_for(const Flag& flag, bool want) {
  for (int i = 0; i < 2000 && flag.load() != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return flag.load() == want;
}

// Waits for two more rounds of the flush thread (it has seen the clock where it is now).
void two_ticks(testing::FakePlatform& p) {
  const int seen = p.flushes.load();
  for (int w = 0; w < 10000 && p.flushes.load() < seen + 2; ++w) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Ten launches traced, the trace paused, ten more, the end: for a gate that must not close, every
// launch reached the agent.
void serve_across_pause_with_callbacks_on(Service& s) {
  testing::FakePlatform& p = s.h->platform;
  serve(s, 10, 50'000'000);
  p.mono_ns += 1'000'000'000;
  REQUIRE(wait_for(p.trace_paused, true));
  two_ticks(p);
  serve(s, 10, 50'000'000);
  two_ticks(p);
  s.h->ag->finish();
  CHECK(p.callbacks_off.load() == 0);
  CHECK(p.launch_callbacks.load());
  CHECK(s.h->ag->session_end().kernel_launches == 20);
}

}  // namespace

TEST_CASE("launch gate: the callbacks are off while the trace is paused and on again before it resumes",
          "[agent][always_on][launch_gate]") {
  // Nothing selected: only the trace wants the callbacks.
  AgentConfig cfg = gated(agent::SelectMode::kNone);
  const std::filesystem::path prom =
      std::filesystem::temp_directory_path() / ("cutriage-gate-" + std::to_string(::getpid()) + ".prom");
  cfg.prometheus_file = prom.string();
  Service s = make_service(cfg);
  testing::FakePlatform& p = s.h->platform;
  const uint64_t t0 = p.mono_ns.load();  // the duty cycle's windows count from here
  serve(s, 10, 50'000'000);  // 0.5 s, traced
  two_ticks(p);
  CHECK(p.launch_callbacks.load());
  CHECK(p.callbacks_off.load() == 0);
  p.mono_ns += 1'000'000'000;  // 1.5 s: the trace pauses, and then the callbacks go off
  REQUIRE(wait_for(p.trace_paused, true));
  REQUIRE(wait_for(p.launch_callbacks, false));
  serve(s, 10, 50'000'000);  // 2.0 s: these reach the agent no more
  two_ticks(p);
  CHECK_FALSE(p.launch_callbacks.load());
  p.mono_ns = t0 + 3'750'000'000;  // within the lead of the next window (4 s): on, the trace still paused
  REQUIRE(wait_for(p.launch_callbacks, true));
  CHECK(p.trace_paused.load());
  p.mono_ns = t0 + 4'050'000'000;
  REQUIRE(wait_for(p.trace_paused, false));
  serve(s, 10, 10'000'000);
  s.h->ag->finish();
  CHECK(p.callbacks_off.load() == 1);
  CHECK(p.callbacks_on.load() == 1);

  const wire::SessionEnd end = s.h->ag->session_end();
  CHECK(end.kernel_launches == 20);  // the ten made while the callbacks were off are in no count
  REQUIRE(end.overhead.has_value());
  // Off from the tick that saw the pause (1.5-2.0 s) to the one that saw 3.75 s.
  CHECK(end.overhead->launch_callbacks_off_ns >= 1'750'000'000);
  CHECK(end.overhead->launch_callbacks_off_ns <= 2'250'000'000);
  // Dashboards see the same time off.
  const std::string exported = testing::slurp(prom);
  std::filesystem::remove(prom);
  const size_t at = exported.find("\ncutriage_launch_callbacks_off_seconds_total{Hostname=\"testhost\"} ");
  REQUIRE(at != std::string::npos);
  const double off_s = std::stod(exported.substr(exported.find("} ", at) + 2));
  CHECK(off_s >= 1.75);
  CHECK(off_s <= 2.25);
  const tools::ReadResult r = s.h->read();
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const std::string text = tools::render_report(r, {});
  CHECK(text.find("launch callbacks off ") != std::string::npos);
  CHECK(text.find("launches then are not counted") != std::string::npos);
}

TEST_CASE("launch gate: a profile the budget may admit keeps the callbacks on through the pause",
          "[agent][always_on][launch_gate]") {
  // Profiling paused: the family stays a candidate and the budget, never spent, stays ready.
  Service s = make_service(gated(agent::SelectMode::kAll));
  s.h->ag->set_paused(true);
  serve_across_pause_with_callbacks_on(s);
}

TEST_CASE("launch gate: profiling goes on through the pauses, the callbacks off between admissions",
          "[agent][always_on][launch_gate]") {
  AgentConfig cfg = gated(agent::SelectMode::kAll);
  cfg.budget_fraction = 0.01;
  Service s = make_service(cfg);
  testing::FakePlatform& p = s.h->platform;
  // A profiled launch costs the application 50 ms: the budget then waits seconds between two.
  p.config.while_profiled = [&p] { p.mono_ns += 50'000'000; };
  int before = 0;
  for (int i = 0; i < 120; ++i) {
    serve(s, 5, 1'000'000'000);  // ten minutes of traffic, a launch a second
    two_ticks(p);
    if (i == 59) before = p.callbacks_off.load();
  }
  s.h->ag->finish();
  CHECK(before > 0);
  CHECK(p.callbacks_off.load() > before);
  const wire::SessionEnd end = s.h->ag->session_end();
  REQUIRE(end.overhead.has_value());
  CHECK(end.overhead->admitted >= 2);
  CHECK(end.overhead->launch_callbacks_off_ns > 60'000'000'000ULL);
  CHECK(end.kernel_launches < 600);
  const tools::ReadResult r = s.h->read();
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(tools::render_report(r, {}).find("    complete  yes, ") != std::string::npos);
}

TEST_CASE("launch gate: a repeated correlation id after a closing keeps the callbacks on for good",
          "[agent][always_on][launch_gate]") {
  Service s = make_service(gated(agent::SelectMode::kNone));
  testing::FakePlatform& p = s.h->platform;
  const uint64_t t0 = p.mono_ns.load();
  // Synthetic: the launch after `n` more carries the correlation id of the one before it, as
  // CUPTI's did after the callbacks came back on (PyTorch on an H100).
  const auto repeat_one = [&s] {
    serve(s, 1, 10'000'000);
    collectors::LaunchEvent again =
        make_launch(s.a.mangled.c_str(), s.launches, s.a.launch.grid, s.a.launch.block);
    again.correlation_repeated = true;
    s.h->platform.launch(again);
  };
  SECTION("before any closing: not the gate's doing, it goes on closing") {
    repeat_one();
    p.mono_ns = t0 + 1'500'000'000;
    REQUIRE(wait_for(p.trace_paused, true));
    REQUIRE(wait_for(p.launch_callbacks, false));
    s.h->ag->finish();
    CHECK(s.h->log_text().find("stay on for the rest of the run") == std::string::npos);
  }
  SECTION("after a closing: on from the next tick, through the next pause") {
    p.mono_ns = t0 + 1'500'000'000;
    REQUIRE(wait_for(p.trace_paused, true));
    REQUIRE(wait_for(p.launch_callbacks, false));
    p.mono_ns = t0 + 4'050'000'000;  // the next window: on again, the trace resumed
    REQUIRE(wait_for(p.launch_callbacks, true));
    REQUIRE(wait_for(p.trace_paused, false));
    repeat_one();
    two_ticks(p);
    p.mono_ns = t0 + 5'500'000'000;  // paused again: the gate stays open
    REQUIRE(wait_for(p.trace_paused, true));
    two_ticks(p);
    two_ticks(p);
    CHECK(p.launch_callbacks.load());
    s.h->ag->finish();
    CHECK(p.callbacks_off.load() == 1);
    const std::string log = s.h->log_text();
    CHECK(log.find("launches carried their thread's previous correlation id after the launch callbacks had been off 1 "
                   "time(s): they stay on for the rest of the run") != std::string::npos);
    CHECK(log.find("cuLaunchKernel, after the launch gate had the callbacks off") != std::string::npos);
  }
}

namespace {

// Always-on's steps (CUTRIAGE_STEP_STAGES=4) behind the gate: a step of the zoo's fma_chain,
// strided_load, vector_add and strided_load again, 50 ms apart. A pass after the first costs the
// application 50 ms, so at 1% the step waits about 5 s between two, long enough for the gate.
struct GatedSteps {
  Captured fma = capture_of("fma_chain");
  Captured strided = capture_of("strided_load");
  Captured vadd = capture_of("vector_add");
  std::unique_ptr<Harness> h;
  uint64_t launches = 0;
  int steps_run = 0;

  GatedSteps() {
    AgentConfig cfg = gated(agent::SelectMode::kAll);
    cfg.budget_fraction = 0.01;
    cfg.pc_sampling = false;
    cfg.pm_window = false;
    cfg.step_launches = 4;
    cfg.log_level = agent::LogLevel::kInfo;
    h = std::make_unique<Harness>(std::move(cfg), testing::counters_for({&fma, &strided, &vadd}));
    h->platform.config.cost_same_ns = 50'000'000;
    REQUIRE(h->ag->start());
  }
  void launch(const Captured& k) {
    h->platform.launch(make_launch(k.mangled.c_str(), ++launches, k.launch.grid, k.launch.block));
  }
  // One step each (`changed`: vector_add left out), the flush thread seeing the clock every four
  // (200 ms, within the gate's 300 ms lead).
  void run(int steps, bool changed = false) {
    for (int i = 0; i < steps; ++i) {
      h->platform.mono_ns += 50'000'000;
      launch(fma);
      launch(strided);
      if (!changed) launch(vadd);
      launch(strided);
      if (++steps_run % 4 == 0) two_ticks(h->platform);
    }
  }
  [[nodiscard]] size_t passes_begun() const {
    std::lock_guard<std::mutex> lock(h->platform.stats.mutex);
    return static_cast<size_t>(std::count(h->platform.stats.begin_replays.begin(), h->platform.stats.begin_replays.end(),
                                          collectors::PlanReplay::kLaunches));
  }
};

}  // namespace

TEST_CASE("launch gate: a step waiting between two passes lets the callbacks off and rejoins the application's "
          "steps",
          "[agent][always_on][launch_gate][steps]") {
  GatedSteps s;
  testing::FakePlatform& p = s.h->platform;
  for (int i = 0; i < 400 && s.passes_begun() == 0; ++i) s.run(1);
  REQUIRE(s.passes_begun() == 1);
  const int off_at_first_pass = p.callbacks_off.load();
  SECTION("the same steps: every pass rejoins them and the step completes") {
    for (int i = 0; i < 4000 && s.h->log_text().find("step at ") == std::string::npos; i += 8) s.run(8);
    const int off_during_step = p.callbacks_off.load() - off_at_first_pass;
    s.h->ag->finish();
    const std::string log = s.h->log_text();
    INFO(log);
    CHECK(log.find("passes over 4 launches, counters for 3 kernel families") != std::string::npos);
    CHECK(log.find("given up") == std::string::npos);
    // Off several times between the passes (the step held them on throughout before).
    CHECK(off_during_step >= 3);
    const tools::ReadResult r = s.h->read();
    REQUIRE(r.status == tools::ReadStatus::kOk);
    // Each family's counters are its own kernel's: the fake's ranges hold the counters of the
    // kernel launched at their place in the pass, so a rejoined pass begun anywhere but at a
    // step's first launch would give a family another kernel's values. (Launch indices count
    // only the launches the agent saw, so they do not show it.)
    int checked = 0;
    for (const v1::KernelProfile* k : testing::kernel_records(r)) {
      if (k->status() != v1::PROFILE_STATUS_PROFILED || k->replay_mode() != v1::REPLAY_MODE_APPLICATION) continue;
      const std::string name(tools::lookup(r, k->mangled_name_iid()));
      INFO(name);
      const Captured& own = name == s.fma.mangled ? s.fma : name == s.strided.mangled ? s.strided : s.vadd;
      REQUIRE(name == own.mangled);
      const std::optional<double> want = own.metrics.get("gpu__time_duration.sum");
      REQUIRE(want);
      bool found = false;
      for (const v1::Metric& m : k->metrics()) {
        if (tools::lookup(r, m.name_iid()) != "gpu__time_duration.sum") continue;
        CHECK(m.value() == Approx(*want));
        found = true;
      }
      CHECK(found);
      ++checked;
    }
    CHECK(checked >= 3);
  }
  SECTION("the application's step changed while the callbacks were off: given up when they are back") {
    // Wait for the gate to close between the passes, then change the step.
    for (int i = 0; i < 400 && p.launch_callbacks.load(); ++i) s.run(1);
    REQUIRE_FALSE(p.launch_callbacks.load());
    s.run(400, true);
    s.h->ag->finish();
    const std::string log = s.h->log_text();
    INFO(log);
    CHECK(log.find("was given up: after the launch callbacks were off between passes 1 and 2, the 4 launches that "
                   "followed were not the step's in its order") != std::string::npos);
  }
}

TEST_CASE("launch gate: off by CUTRIAGE_LAUNCH_GATE=0, and left on when the platform cannot switch",
          "[agent][always_on][launch_gate]") {
  for (int variant = 0; variant < 2; ++variant) {
    INFO(variant);
    AgentConfig cfg = gated(agent::SelectMode::kNone);
    if (variant == 0) cfg.launch_gate = false;
    Service s;
    s.a = capture_of("strided_load");
    s.h = std::make_unique<Harness>(std::move(cfg), testing::counters_for({&s.a}));
    if (variant == 1) {
      s.h->platform.config.launch_callbacks_status =
          collectors::Status(collectors::StatusCode::kInternal, "cuptiEnableCallback: CUPTI_ERROR_UNKNOWN (fake)");
    }
    REQUIRE(s.h->ag->start());
    serve_across_pause_with_callbacks_on(s);
    CHECK(s.h->ag->session_end().overhead->launch_callbacks_off_ns == 0);
    const std::string log = s.h->log_text();
    CHECK((log.find("the launch callbacks could not be switched (cuptiEnableCallback: CUPTI_ERROR_UNKNOWN (fake))") !=
           std::string::npos) == (variant == 1));
  }
}

}  // namespace test_launch_gate
