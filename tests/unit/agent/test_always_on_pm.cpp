// Always-on's PM routing window (agent/src/pm_window.*, docs/always-on.md "The PM routing window")
// on the fake platform. Synthetic throughout: a workload of three zoo kernels (their H200 ncu
// captures give the range profiler's counters and the durations) launched every 7 ms of a fake
// clock, and made-up PM values per kernel that the fake hands out for samples lying wholly inside
// that kernel's executions (999 for any other sample, which must never be used).
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "agent_harness.h"
#include "contexts.h"
#include "cutriage/triage/engine.h"
#include "pm_names.h"
#include "pm_nodes.h"
#include "pm_window.h"
#include "record_support.h"
#include "report.h"
#include "report_model.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_always_on_pm {

using namespace cutriage;
using namespace cutriage::testing;

namespace {

// Synthetic workload: a GEMM, a strided load twice and a transpose a step, each as long as its
// capture says (so the range profiler's durations agree with the traced ones).
struct Workload {
  Captured gemm = capture_of("cublas_gemm");
  Captured load = capture_of("strided_load");
  Captured transpose = capture_of("transpose");
  uint64_t launches = 0;

  void configure(FakePlatform& p) const {
    // Synthetic PM values: the GEMM compute-bound (FMA busy), the load and transpose memory-bound.
    p.config.pm_values[gemm.mangled] = {{kPmSm, 91}, {kPmDram, 20}, {kPmL1, 30}, {kPmFma, 85}, {kPmClock, 1.98e9}};
    p.config.pm_values[load.mangled] = {{kPmSm, 18}, {kPmDram, 88}, {kPmL1, 35}, {kPmFma, 2}, {kPmClock, 1.98e9}};
    p.config.pm_values[transpose.mangled] = {{kPmSm, 22}, {kPmDram, 81}, {kPmL1, 40}, {kPmFma, 1}, {kPmClock, 1.98e9}};
    p.config.deliver_each_launch = false;  // delivered by the flushes, in batches
    p.config.switch_after_disable = true;
  }
  FakeCounters counters() const { return counters_for({&gemm, &load, &transpose}); }

  // `seconds` of steps of 7 ms, cutriage_flush every 100 ms (standing for the flush thread).
  void run(Harness& h, double seconds) {
    const uint64_t end = h.platform.mono_ns.load() + static_cast<uint64_t>(seconds * 1e9);
    uint64_t next_flush = h.platform.mono_ns.load() + 100'000'000;
    while (h.platform.mono_ns.load() < end) {
      const uint64_t step = h.platform.mono_ns.load();
      h.platform.launch(make_launch(gemm.mangled, ++launches, gemm.launch.grid, gemm.launch.block));
      for (int i = 0; i < 2; ++i) {
        h.platform.launch(make_launch(load.mangled, ++launches, load.launch.grid, load.launch.block));
      }
      h.platform.launch(make_launch(transpose.mangled, ++launches, transpose.launch.grid, transpose.launch.block));
      h.platform.mono_ns.store(std::max(h.platform.mono_ns.load(), step + 7'000'000));
      if (h.platform.mono_ns.load() >= next_flush) {
        h.ag->flush();
        next_flush = h.platform.mono_ns.load() + 100'000'000;
      }
    }
  }
};

AgentConfig always_on_default() {
  AgentConfig c;
  c.mode = agent::AgentMode::kAlwaysOn;  // the default budget, 0.4%
  c.summary = false;
  c.trace_flush_ms = 0;  // no flush thread: the loop's cutriage_flush stands for it
  c.pc_sampling = false;
  return c;
}

const v1::KernelProfile* pm_record_of(const tools::ReadResult& r, const std::vector<const v1::KernelProfile*>& ks,
                                      const std::string& mangled) {
  for (const v1::KernelProfile* k : ks) {
    if (k->has_pm_window() && tools::lookup(r, k->mangled_name_iid()) == mangled) return k;
  }
  return nullptr;
}

// Seconds in "...routed 12.3 s after the agent started..." (-1 when absent).
double seconds_in(const std::string& m) {
  const size_t at = m.find(" s after the agent started");
  if (at == std::string::npos) return -1;
  const size_t begin = m.rfind(' ', at - 1) + 1;
  return std::stod(m.substr(begin, at - begin));
}

}  // namespace

TEST_CASE("PM window: every family with 5% of the GPU time routed from its own samples in seconds",
          "[agent][always_on][pm]") {
  Workload w;
  Harness h(always_on_default(), w.counters());
  w.configure(h.platform);
  REQUIRE(h.ag->start());
  w.run(h, 30);
  // No range-profiler verdict yet: the first switch's debt holds the groups back for minutes at 0.4%.
  for (const auto& k : h.ag->kernels()) CHECK(k.stats.profiled <= 2);
  h.ag->finish();

  // One window, on the flush thread's schedule, a time window never beside the range profiler.
  CHECK(h.platform.stats.pm_begins.load() == 1);
  CHECK(h.platform.stats.pm_ends.load() == 1);
  CHECK(h.platform.stats.pm_range_overlaps.load() == 0);
  {
    std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
    REQUIRE(h.platform.stats.pm_options.size() == 1);
    const collectors::PmSamplingOptions& o = h.platform.stats.pm_options[0];
    CHECK_FALSE(o.synchronize);
    CHECK(o.metrics == agent::pm_node_metrics());
    CHECK(o.max_samples <= agent::PmWindow::kMaxSamples);
    // A quarter of the shortest mean execution among the top families, in whole us, at least 5 us.
    uint64_t shortest = UINT64_MAX;
    for (const Captured* c : {&w.gemm, &w.load, &w.transpose}) {
      shortest = std::min(shortest, h.platform.captured_duration(c->mangled));
    }
    CHECK(o.interval_ns == std::max<uint64_t>(5000, shortest / 4 / 1000 * 1000));
  }

  tools::ReadResult r = h.read();
  const std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  const triage::DeviceLimits limits = *triage::known_device_limits("GH100");
  struct Expect {
    const Captured* c;
    v1::Classification classification;
    double sm;
  };
  for (const Expect& e : {Expect{&w.gemm, v1::CLASSIFICATION_COMPUTE_BOUND, 91},
                          Expect{&w.load, v1::CLASSIFICATION_MEMORY_BOUND, 18},
                          Expect{&w.transpose, v1::CLASSIFICATION_MEMORY_BOUND, 22}}) {
    INFO(e.c->mangled);
    const v1::KernelProfile* k = pm_record_of(r, ks, e.c->mangled);
    REQUIRE(k != nullptr);
    CHECK(k->diagnosis().classification() == e.classification);
    CHECK(k->diagnosis().trust() != v1::TRUST_UNTRUSTED);
    CHECK(k->diagnosis().headline().find("own PM samples in a PM window") != std::string::npos);
    bool noted = false;
    for (const std::string& t : k->diagnosis().trust_notes()) noted = noted || t.find("d0.node_sampling") == 0;
    CHECK(noted);
    CHECK(k->pm_window().samples() >= agent::PmWindow::kMinSamples);
    CHECK(k->pm_window().interval_ns() >= 5000);
    CHECK(k->pm_window().window_samples() > k->pm_window().samples());
    CHECK(k->pm_window().executions() > 0);
    CHECK(k->replay_mode() == v1::REPLAY_MODE_NONE);
    // Its own samples' values only: the mixed ones (999) never reach a mean.
    bool sm_seen = false;
    for (const v1::Metric& m : k->metrics()) {
      if (tools::lookup(r, m.name_iid()) == "sm__throughput.avg.pct_of_peak_sustained_elapsed") {
        CHECK(m.value() == Approx(e.sm));
        sm_seen = true;
      }
    }
    CHECK(sm_seen);
    // The tools' path: the record read back and triaged again gives the same verdict.
    const triage::KernelInput in = input_from_record(r, *k, limits);
    REQUIRE(in.pm_window);
    const triage::Diagnosis again = triage::triage_kernel(in, {});
    CHECK(static_cast<int>(again.classification) == static_cast<int>(k->diagnosis().classification()));
    CHECK(again.headline == k->diagnosis().headline());
  }

  // Each routed once from the window, within seconds of the start, before any range-profiler
  // verdict is complete.
  int routed = 0;
  for (const v1::Record& rec : r.file.records()) {
    if (!rec.has_notice()) continue;
    CHECK(rec.notice().code() != "always_on_complete");
    if (rec.notice().code() != "always_on_routed") continue;
    CHECK(rec.notice().message().find("from its own PM samples") != std::string::npos);
    const double s = seconds_in(rec.notice().message());
    CHECK(s >= 0);
    CHECK(s < 10);
    ++routed;
  }
  CHECK(routed == 3);
  CHECK(h.log_text().find("PM window on device 0") != std::string::npos);

  // The report shows the window's verdicts and says whose counters they are.
  std::string text = tools::render_report(r, {});
  for (size_t at = text.find("\n "); at != std::string::npos; at = text.find("\n ", at)) {
    size_t end = at + 1;
    while (end < text.size() && text[end] == ' ') ++end;
    text.replace(at, end - at, " ");
  }
  CHECK(text.find("its own PM samples") != std::string::npos);
  CHECK(text.find("in one PM window of") != std::string::npos);
}

TEST_CASE("PM window: samples only families still launched, not one that ran only at the start",
          "[agent][always_on][pm]") {
  // Synthetic: a long kernel runs a few times at the start (a model's random init) and is ranked
  // first before the loop's records come back; then only the loop runs. The window must wait for
  // the loop's families, not spend itself on the init kernel (the H200 run did: 0 samples in it,
  // and the budget's credit gone).
  Workload w;
  Captured init = capture_of("fp64_heavy");
  FakeCounters counters = counters_for({&w.gemm, &w.load, &w.transpose, &init});
  Harness h(always_on_default(), counters);
  w.configure(h.platform);
  h.platform.config.durations_ns[init.mangled] = 400'000'000;  // 0.4 s each: ranked first
  REQUIRE(h.ag->start());
  for (int i = 0; i < 3; ++i) h.platform.launch(make_launch(init.mangled, ++w.launches, init.launch.grid, init.launch.block));
  h.ag->flush();
  h.platform.mono_ns.store(h.platform.mono_ns.load() + 200'000'000);
  h.ag->flush();
  w.run(h, 30);
  h.ag->finish();
  REQUIRE(h.platform.stats.pm_begins.load() >= 1);
  tools::ReadResult r = h.read();
  const std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  CHECK(pm_record_of(r, ks, init.mangled) == nullptr);
  CHECK(pm_record_of(r, ks, w.gemm.mangled) != nullptr);
  CHECK(h.log_text().find("too few samples or not routed") == std::string::npos);
}

TEST_CASE("PM window: charged to the always-on budget", "[agent][always_on][pm]") {
  Workload w;
  Harness h(always_on_default(), w.counters());
  w.configure(h.platform);
  h.platform.config.pm_start_cost_ns = 3'000'000'000;  // synthetic: a Start of 3 s
  REQUIRE(h.ag->start());
  w.run(h, 20);
  CHECK(h.platform.stats.pm_begins.load() == 1);
  h.ag->finish();
  // The first window goes on credit; its cost (3 s + Stop 10 ms + the drag) is spent all the same.
  CHECK(h.ag->overhead()->spent_ns >= 3'010'000'000);
}

TEST_CASE("PM window: the decode on the flush thread is not charged to the application", "[agent][always_on][pm]") {
  Workload w;
  Harness h(always_on_default(), w.counters());
  w.configure(h.platform);
  h.platform.config.pm_decode_cost_ns = 2'000'000'000;  // synthetic: 2 s decoding inside end()
  REQUIRE(h.ag->start());
  w.run(h, 20);
  REQUIRE(h.platform.stats.pm_begins.load() == 1);
  h.ag->finish();
  // Start 50 ms + Stop 10 ms + the drag, and the range profiler's first launch on credit; the
  // 2 s of decoding are not among them.
  CHECK(h.ag->overhead()->spent_ns < 2'000'000'000);
  CHECK(h.log_text().find("PM window costs: Start 50 ms, Stop 10 ms") != std::string::npos);
  CHECK(h.log_text().find("decode and evaluation 2e+03 ms on the flush thread") != std::string::npos);
  // Where the collector does not split the Start, the line says nothing of its parts.
  CHECK(h.log_text().find("host config") == std::string::npos);
}

TEST_CASE("PM window: the Start's host-side parts are logged and not charged", "[agent][always_on][pm]") {
  Workload w;
  Harness h(always_on_default(), w.counters());
  w.configure(h.platform);
  // Synthetic: a Start of 3 s, 2 s of them building the configuration and 0.9 s the counter-data
  // image (the split the collector measures on a GPU), so 100 ms are the device's.
  h.platform.config.pm_start_cost_ns = 3'000'000'000;
  h.platform.config.pm_start_host_config_ns = 2'000'000'000;
  h.platform.config.pm_start_counter_data_ns = 900'000'000;
  REQUIRE(h.ag->start());
  w.run(h, 20);
  REQUIRE(h.platform.stats.pm_begins.load() == 1);
  h.ag->finish();
  CHECK(h.log_text().find("PM window costs: Start 3e+03 ms (of it, host config 2e+03 ms and counter-data image 900 ms "
                          "on the flush thread, not charged), Stop 10 ms") != std::string::npos);
  // Charged: the device's 100 ms, the Stop and the drag (the whole Start is charged when the
  // collector does not split it: "charged to the always-on budget" above).
  CHECK(h.log_text().find("; charged 1") != std::string::npos);
  CHECK(h.ag->overhead()->spent_ns < 1'000'000'000);
}

TEST_CASE("PM window: a failing PM enable leaves always-on as before", "[agent][always_on][pm]") {
  Workload w;
  SECTION("HARDWARE_BUSY at begin: a reason, tried again later, the range profiler goes on") {
    Harness h(always_on_default(), w.counters());
    w.configure(h.platform);
    h.platform.config.pm_begin_status =
        collectors::Status(collectors::StatusCode::kUnavailable, "cuptiPmSamplingEnable: CUPTI_ERROR_HARDWARE_BUSY");
    REQUIRE(h.ag->start());
    w.run(h, 200);
    h.ag->finish();
    CHECK(h.platform.stats.pm_begins.load() == 0);
    CHECK(h.platform.stats.pm_range_overlaps.load() == 0);
    tools::ReadResult r = h.read();
    const std::vector<const v1::KernelProfile*> ks = kernel_records(r);
    for (const v1::KernelProfile* k : ks) CHECK_FALSE(k->has_pm_window());
    bool failed = false;
    for (const v1::Record& rec : r.file.records()) {
      failed = failed || (rec.has_notice() && rec.notice().code() == "pm_window_failed" &&
                          rec.notice().message().find("HARDWARE_BUSY") != std::string::npos);
    }
    CHECK(failed);
    CHECK(h.log_text().find("PM window could not start") != std::string::npos);
    // The range profiler's groups went on: assembled launches on the top family.
    bool assembled = false;
    for (const v1::KernelProfile* k : ks) assembled = assembled || k->assembled_launches_size() > 0;
    CHECK(assembled);
  }
  SECTION("PM sampling not supported: one reason, never tried again") {
    Harness h(always_on_default(), w.counters());
    w.configure(h.platform);
    h.platform.config.pm_sampler_status =
        collectors::Status(collectors::StatusCode::kNotSupported, "PM sampling is not available (fake)");
    REQUIRE(h.ag->start());
    w.run(h, 200);
    h.ag->finish();
    CHECK(h.platform.stats.pm_begins.load() == 0);
    const std::string log = h.log_text();
    CHECK(log.find("range profiler's groups alone") != std::string::npos);
    CHECK(log.find("PM window could not start", log.find("PM window could not start") + 1) == std::string::npos);
  }
  SECTION("CUTRIAGE_PM_WINDOW=0: no window") {
    AgentConfig c = always_on_default();
    c.pm_window = false;
    Harness h(c, w.counters());
    w.configure(h.platform);
    REQUIRE(h.ag->start());
    w.run(h, 30);
    h.ag->finish();
    CHECK(h.platform.stats.pm_begins.load() == 0);
  }
}

TEST_CASE("PM window: never while a range profiler is still enabled on the device", "[agent][always_on][pm]") {
  SECTION("through the agent: the range profiler never released, no window") {
    Workload w;
    AgentConfig c = always_on_default();
    c.release_ms = 600'000;  // the range profiler stays enabled after the first profiled launch
    Harness h(c, w.counters());
    w.configure(h.platform);
    REQUIRE(h.ag->start());
    w.run(h, 30);
    h.ag->finish();
    CHECK(h.platform.stats.begins.load() > 0);
    CHECK(h.platform.stats.pm_begins.load() == 0);
  }
  SECTION("the context table's claim") {
    agent::ContextTable contexts;
    collectors::ContextEvent a{1, reinterpret_cast<void*>(uintptr_t{0x1001}), 0};  // NOLINT(performance-no-int-to-ptr)
    collectors::ContextEvent b{2, reinterpret_cast<void*>(uintptr_t{0x1002}), 0};  // NOLINT(performance-no-int-to-ptr)
    contexts.created(a);
    contexts.created(b);
    collectors::LaunchEvent on_b = make_launch("k", 1, {1, 1, 1}, {32, 1, 1}, 2);
    std::shared_ptr<agent::ContextState> other = contexts.for_launch(on_b);
    other->profiled_end_mono_ns.store(5);  // a profiled launch ended; its range profiler not released yet
    CHECK(contexts.claim_for_window(0, 10) == nullptr);
    other->profiled_end_mono_ns.store(0);  // released
    other->busy.store(true);               // a launch in flight, profiled
    CHECK(contexts.claim_for_window(0, 10) == nullptr);
    other->busy.store(false);
    other->graph_exec.store(7);  // a graph stage holds it
    other->graph_pass_mono_ns.store(10);
    CHECK(contexts.claim_for_window(0, 10) == nullptr);
    other->graph_exec.store(0);
    std::shared_ptr<agent::ContextState> got = contexts.claim_for_window(0, 10);
    REQUIRE(got != nullptr);
    CHECK(got->busy.load());
    CHECK(contexts.claim_for_window(0, 10) == nullptr);  // held by the window itself
    CHECK(contexts.claim(on_b) == nullptr);              // and no launch profiles the device meanwhile
    CHECK(contexts.claim_for_window(1, 10) == nullptr);  // no context on device 1
  }
}

TEST_CASE("PM window: the range profiler's complete verdict supersedes the window's", "[agent][always_on][pm]") {
  Workload w;
  AgentConfig c = always_on_default();
  c.budget_fraction = 0.05;  // synthetic: enough for the range profiler to complete within the run
  Harness h(c, w.counters());
  w.configure(h.platform);
  REQUIRE(h.ag->start());
  w.run(h, 600);
  h.ag->finish();
  CHECK(h.platform.stats.pm_range_overlaps.load() == 0);
  tools::ReadResult r = h.read();
  const std::vector<const v1::KernelProfile*> all = kernel_records(r);
  // The window's record of the GEMM was written; a complete range-profiler record names it among
  // its combined launches, so a reader showing one verdict per kernel keeps the range profiler's.
  const v1::KernelProfile* pm = pm_record_of(r, all, w.gemm.mangled);
  REQUIRE(pm != nullptr);
  bool superseded = false;
  for (const v1::KernelProfile* k : all) {
    if (k->has_pm_window() || tools::lookup(r, k->mangled_name_iid()) != w.gemm.mangled) continue;
    for (uint64_t li : k->combined_launch_indices()) superseded = superseded || li == pm->launch_index();
    if (superseded) {
      CHECK(k->assembled_launches_size() > 0);
      break;
    }
  }
  CHECK(superseded);
  const tools::model::ReportKernels shown = tools::model::report_kernels(r);
  for (const v1::KernelProfile* k : shown.current) {
    if (tools::lookup(r, k->mangled_name_iid()) == w.gemm.mangled) CHECK_FALSE(k->has_pm_window());
  }
  bool complete = false;
  for (const v1::Record& rec : r.file.records()) {
    complete = complete || (rec.has_notice() && rec.notice().code() == "always_on_complete" &&
                            rec.notice().message().find("nvjet") != std::string::npos);
  }
  CHECK(complete);
}

// At exit the host library goes before the agent's own exit handler (collectors/host_lifetime.h):
// the hook that runs before it must close an open window while its samples can be evaluated (on
// CUPTI the decode evaluates through the host; the fake counts the ends).
TEST_CASE("PM window: the hook before the host library goes closes an open window, evaluated",
          "[agent][always_on][pm]") {
  Workload w;
  Harness h(always_on_default(), w.counters());
  w.configure(h.platform);
  REQUIRE(h.ag->start());
  for (int i = 0; i < 300 && h.platform.stats.pm_begins.load() == 0; ++i) w.run(h, 0.1);
  REQUIRE(h.platform.stats.pm_begins.load() == 1);
  REQUIRE(h.platform.stats.pm_ends.load() == 0);  // open: the exit comes now
  h.ag->before_host_unload();
  CHECK(h.platform.stats.pm_ends.load() == 1);
  h.ag->before_host_unload();  // a second call (or none at all) changes nothing
  h.ag->finish();
  CHECK(h.platform.stats.pm_ends.load() == 1);  // ended once, by the hook
}

TEST_CASE("PM window: with stages, a routed family's first stage (its verdict's route too) is planned on the flush thread",
          "[agent][always_on][pm][stages][plan]") {
  // CUTRIAGE_STAGE_PASSES: a family the window routes takes its verdict's decisions into its first
  // stage, a list of its own; the window queues that list's plan for the flush thread, so that
  // the stage's first pass does not make it on the launching thread. The fake host charges a
  // stage's plan 90 ms on the agent's clock; the stage's record says where it was made.
  AgentConfig cfg = always_on_default();
  cfg.stage_passes = true;
  cfg.budget_fraction = 0.05;
  cfg.trace_flush_ms = 5;  // the flush thread runs the window and makes the plans
  Workload w;
  Harness h(cfg, w.counters());
  w.configure(h.platform);
  h.platform.config.cost_plan_ns = 90'000'000;
  h.platform.config.cost_plan_min_names = 11;  // stage lists; the groups (10 names) cost nothing
  REQUIRE(h.ag->start());
  // Steps of 7 ms, slowed to real time a little so the flush thread keeps up with the fake clock
  // (a sleep every 64 launches left the window unrouted once in about a dozen ThreadSanitizer runs;
  // one every 16 let the stage's first pass come before the flush thread's plan in an ASan run).
  const uint64_t end = h.platform.mono_ns.load() + 60'000'000'000;
  while (h.platform.mono_ns.load() < end) {
    const uint64_t step = h.platform.mono_ns.load();
    h.platform.launch(make_launch(w.gemm.mangled, ++w.launches, w.gemm.launch.grid, w.gemm.launch.block));
    h.platform.launch(make_launch(w.load.mangled, ++w.launches, w.load.launch.grid, w.load.launch.block));
    h.platform.mono_ns.store(std::max(h.platform.mono_ns.load(), step + 7'000'000));
    if (w.launches % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  h.ag->finish();
  tools::ReadResult r = h.read();
  const std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(pm_record_of(r, ks, w.gemm.mangled) != nullptr);  // routed by the window
  const v1::KernelProfile* stage = nullptr;  // the GEMM's first stage
  for (const v1::KernelProfile* k : ks) {
    if (k->has_first_pass_cost() && tools::lookup(r, k->mangled_name_iid()) == w.gemm.mangled &&
        (stage == nullptr || k->launch_index() < stage->launch_index())) {
      stage = k;
    }
  }
  INFO(h.log_text());
  REQUIRE(stage != nullptr);
  CHECK(stage->first_pass_cost().plan_ns() == 0);
}

TEST_CASE("PM window: the log says why a family's samples did not route it", "[agent][always_on][pm]") {
  // The H200's PyTorch run left the top GEMM "not routed" from 582 samples, with no word on why:
  // the window's verdict is not written, so the log carries its headline. Synthetic PM values that
  // cannot route the GEMM: its samples lack the SM and DRAM throughputs (the fake reads NaN).
  Workload w;
  Harness h(always_on_default(), w.counters());
  w.configure(h.platform);
  h.platform.config.pm_values[w.gemm.mangled] = {{kPmL1, 30}, {kPmFma, 35}, {kPmClock, 1.98e9}};
  REQUIRE(h.ag->start());
  w.run(h, 30);
  h.ag->finish();
  tools::ReadResult r = h.read();
  CHECK(pm_record_of(r, kernel_records(r), w.gemm.mangled) == nullptr);  // not written
  CHECK(pm_record_of(r, kernel_records(r), w.load.mangled) != nullptr);
  const std::string log = h.log_text();
  INFO(log);
  const std::string line = "PM window: " + w.gemm.mangled + " not routed from its ";  // cuBLAS's names are plain
  const size_t at = log.find(line);
  REQUIRE(at != std::string::npos);
  const std::string why = log.substr(at, log.find('\n', at) - at);
  CHECK(why.find("samples: inconclusive: ") != std::string::npos);
  CHECK(why.find("missing sm__throughput") != std::string::npos);  // what it lacked
  CHECK(log.find("PM window: zoo_strided_load not routed") == std::string::npos);  // routed
}

}  // namespace test_always_on_pm
