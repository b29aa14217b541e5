// SessionView on its own terms: it owns nothing and reads the other components, so the tests set
// those up directly (families launched through FamilyTable and LaunchProfiler, executions handed
// to TraceFolder) and check what the view makes of them: each traced family's outcome and why it
// was not profiled, the session end's per-kernel counts, the kernel list, the Prometheus snapshot,
// the overhead, and the exit summary.
#include <string>
#include <vector>

#include "component_rig.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_session_view {

using namespace cutriage;
#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;  // Catch2 v3; v2 has it at global scope
#endif
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::ComponentRig;
using testing::counters_for;
using testing::make_launch;
using S = wire::FamilySelection;

namespace {

// `n` executions of `name` for the trace, after whatever the fake's clock says.
void trace(ComponentRig& rig, std::string_view name, int n, uint64_t duration_ns, triage::Dim3 block = {256, 1, 1},
           uint32_t graph_id = 0, uint32_t first_correlation = 0) {
  collectors::ActivityBatch b;
  for (int i = 0; i < n; ++i) {
    collectors::KernelActivity a;
    a.mangled_name = name;
    a.block = block;
    a.grid = {1024, 1, 1};
    a.start_ns = rig.platform.timestamp_ns() + 1000;
    a.end_ns = a.start_ns + duration_ns;
    a.graph_id = graph_id;
    a.correlation_id = first_correlation == 0 ? 0 : first_correlation + static_cast<uint32_t>(i);
    rig.platform.advance_clock(duration_ns + 2000);
    b.kernels.push_back(a);
  }
  rig.trace.on_activity(b);
}

ComponentRig& started(ComponentRig& rig) {
  rig.trace_started.store(true);
  rig.trace.started(rig.platform.timestamp_ns(), rig.platform.mono_ns.load());
  return rig;
}

uint64_t id_of(ComponentRig& rig, const std::string& name, triage::Dim3 block = {256, 1, 1}) {
  std::lock_guard<std::mutex> lock(rig.families.mutex());
  return rig.families.find_or_create_locked(name, 0, block)->family_id;
}

// A copy: callers pass the view's summary as a temporary.
wire::FamilyOutcome outcome(const wire::TraceSummary& s, uint64_t id) {
  auto it = s.outcomes.find(id);
  REQUIRE(it != s.outcomes.end());
  return it->second;
}

AgentConfig deep(agent::SelectMode select) {
  AgentConfig c;
  c.select = select;
  c.metric_mode = agent::MetricMode::kFull;
  c.pc_sampling = false;
  c.summary = true;
  return c;
}

}  // namespace

TEST_CASE("session view: no trace, no application view", "[component][session_view]") {
  ComponentRig rig(deep(agent::SelectMode::kAll));
  (void)rig.count_launch(make_launch("untraced", 1));
  const wire::TraceSummary s = rig.view.trace_summary();
  CHECK(s.outcomes.empty());
  CHECK(s.timeline.families.empty());
  CHECK(rig.view.kernels().size() == 1);
}

TEST_CASE("session view: a profiled family says so, with its launch", "[component][session_view]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep(agent::SelectMode::kAll), counters_for({&k}));
  started(rig);
  trace(rig, k.mangled, 3, 20000, k.launch.block);
  REQUIRE(rig.launch(make_launch(k.mangled, 4, k.launch.grid, k.launch.block)));
  const wire::TraceSummary s = rig.view.trace_summary();
  const wire::FamilyOutcome o = outcome(s, id_of(rig, k.mangled, k.launch.block));
  CHECK(o.selection == S::kProfiled);
  CHECK(o.profiled_launch_index == 1);
  CHECK(s.selection.mode == wire::SelectionMode::kAll);
}

TEST_CASE("session view: outcomes say why a family was not profiled", "[component][session_view]") {
  SECTION("select=none: trace only") {
    ComponentRig rig(deep(agent::SelectMode::kNone));
    started(rig);
    (void)rig.count_launch(make_launch("traced_only", 1));
    trace(rig, "traced_only", 2, 10000);
    const wire::TraceSummary s = rig.view.trace_summary();
    CHECK(outcome(s, id_of(rig, "traced_only")).selection == S::kTraceOnly);
    CHECK(s.selection.mode == wire::SelectionMode::kNone);
  }
  SECTION("the kernel-name filter") {
    AgentConfig c = deep(agent::SelectMode::kAll);
    REQUIRE(c.kernel_filter.set("regex:^kept", agent::NameBase::kFunction).empty());
    ComponentRig rig(c);
    started(rig);
    (void)rig.count_launch(make_launch("dropped_kernel", 1));
    trace(rig, "dropped_kernel", 2, 10000);
    const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "dropped_kernel"));
    CHECK(o.selection == S::kFiltered);
    CHECK(o.selection_detail.find(c.kernel_filter.spec()) != std::string::npos);
  }
  SECTION("select=top: below the cut, and ranked but not launched again") {
    AgentConfig c = deep(agent::SelectMode::kTop);
    c.select_top = 1;
    ComponentRig rig(c);
    started(rig);
    (void)rig.count_launch(make_launch("ranked_big", 1));
    (void)rig.count_launch(make_launch("ranked_small", 2));
    trace(rig, "ranked_big", 3, 50000);
    trace(rig, "ranked_small", 3, 5000);
    const wire::TraceSummary s = rig.view.trace_summary();
    const wire::FamilyOutcome small = outcome(s, id_of(rig, "ranked_small"));
    CHECK(small.selection == S::kNotRanked);
    CHECK(small.selection_detail.find("rank #2") != std::string::npos);
    const wire::FamilyOutcome big = outcome(s, id_of(rig, "ranked_big"));
    CHECK(big.selection == S::kRankedAfterLastLaunch);
    CHECK(big.selection_detail.find("ranked #1 only after its last launch") != std::string::npos);
    CHECK(s.selection.top_k == 1);
  }
  SECTION("select=top: ranked, launched again, and those launches limited") {
    AgentConfig c = deep(agent::SelectMode::kTop);
    c.select_top = 1;
    c.launch_skip = 100;  // every launch is skipped: ranked, launched after that, never profiled
    ComponentRig rig(c);
    started(rig);
    (void)rig.count_launch(make_launch("ranked_skipped", 1));
    trace(rig, "ranked_skipped", 1, 50000);
    CHECK_FALSE(rig.launch(make_launch("ranked_skipped", 2)));
    const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "ranked_skipped"));
    CHECK(o.selection == S::kTooFewLaunches);
    // The reason, exact: how many came after the rank, and what happened to them.
    CHECK(o.selection_detail.find("ranked #1; 1 of its launches came after its rank was known, none profiled") !=
          std::string::npos);
    CHECK(o.selection_detail.find("; 1 were skipped (CUTRIAGE_LAUNCH_SKIP=100") != std::string::npos);
    CHECK(o.selection_detail.find("capturing stream") == std::string::npos);
    CHECK(o.selection_detail.find("CUTRIAGE_LAUNCH_COUNT") == std::string::npos);
  }
  SECTION("select=top: ranked, and its later launches captured into a graph") {
    AgentConfig c = deep(agent::SelectMode::kTop);
    c.select_top = 1;
    ComponentRig rig(c);
    started(rig);
    (void)rig.count_launch(make_launch("ranked_captured", 1));
    trace(rig, "ranked_captured", 1, 50000);
    collectors::LaunchEvent captured = make_launch("ranked_captured", 2);
    captured.stream_capturing = true;
    CHECK_FALSE(rig.launch(captured));
    const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "ranked_captured"));
    CHECK(o.selection == S::kTooFewLaunches);
    CHECK(o.selection_detail.find("; 1 of its launches were made into a capturing stream") != std::string::npos);
    CHECK(o.selection_detail.find("skipped") == std::string::npos);
  }
  SECTION("select=top: ranked, its later launches past CUTRIAGE_LAUNCH_COUNT") {
    AgentConfig c = deep(agent::SelectMode::kTop);
    c.select_top = 2;
    c.launch_count = 1;
    ComponentRig rig(c);
    started(rig);
    (void)rig.count_launch(make_launch("first_profiled", 1));
    (void)rig.count_launch(make_launch("second_limited", 2));
    trace(rig, "first_profiled", 1, 50000);
    trace(rig, "second_limited", 1, 40000);
    CHECK(rig.launch(make_launch("first_profiled", 3)));  // takes the one launch the count allows
    CHECK_FALSE(rig.launch(make_launch("second_limited", 4)));
    const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "second_limited"));
    CHECK(o.selection == S::kTooFewLaunches);
    CHECK(o.selection_detail.find("CUTRIAGE_LAUNCH_COUNT=1 was reached") != std::string::npos);
  }
  SECTION("launched only from graphs") {
    ComponentRig rig(deep(agent::SelectMode::kAll));
    started(rig);
    trace(rig, "graph_node_kernel", 4, 10000, {256, 1, 1}, 3);
    CHECK(outcome(rig.view.trace_summary(), id_of(rig, "graph_node_kernel")).selection == S::kGraphOnly);
  }
  SECTION("never replayed") {
    ComponentRig rig(deep(agent::SelectMode::kAll));
    started(rig);
    collectors::LaunchEvent coop = make_launch("coop_kernel", 1);
    coop.cooperative = true;
    CHECK_FALSE(rig.launch(coop));
    trace(rig, "coop_kernel", 1, 10000);
    const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "coop_kernel"));
    CHECK(o.selection == S::kNotReplayable);
    CHECK(o.selection_detail.find("cooperative") != std::string::npos);
  }
  SECTION("a failed profile") {
    ComponentRig rig(deep(agent::SelectMode::kAll));
    rig.platform.config.range_profiler_status =
        collectors::Status(collectors::StatusCode::kNotSupported, "no range profiler (fake)");
    started(rig);
    CHECK_FALSE(rig.launch(make_launch("failing_kernel", 1)));
    trace(rig, "failing_kernel", 1, 10000);
    const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "failing_kernel"));
    CHECK(o.selection == S::kFailed);
    CHECK(!o.selection_detail.empty());
  }
  SECTION("counters not permitted") {
    ComponentRig rig(deep(agent::SelectMode::kAll));
    started(rig);
    (void)rig.count_launch(make_launch("forbidden_kernel", 1));
    trace(rig, "forbidden_kernel", 1, 10000);
    rig.state.store(wire::AgentState::kPermissionDenied);
    CHECK(outcome(rig.view.trace_summary(), id_of(rig, "forbidden_kernel")).selection == S::kNotPermitted);
  }
}

TEST_CASE("session view: a family's NVTX paths, most launches first", "[component][session_view]") {
  ComponentRig rig(deep(agent::SelectMode::kNone));
  started(rig);
  auto push = [&](std::string_view name) {
    collectors::NvtxEvent e;
    e.kind = collectors::NvtxEvent::Kind::kPush;
    e.message = name;
    rig.nvtx.on_event(e);
  };
  auto pop = [&] {
    collectors::NvtxEvent e;
    e.kind = collectors::NvtxEvent::Kind::kPop;
    rig.nvtx.on_event(e);
  };
  push("eval");
  rig.nvtx.note_launch(1);
  pop();
  push("train");
  for (uint64_t c = 2; c <= 4; ++c) rig.nvtx.note_launch(c);
  pop();
  trace(rig, "pathed_kernel", 4, 10000, {256, 1, 1}, 0, 1);
  const wire::FamilyOutcome o = outcome(rig.view.trace_summary(), id_of(rig, "pathed_kernel"));
  CHECK(o.nvtx_paths == std::vector<std::string>{"train", "eval"});
}

TEST_CASE("session view: the session end counts launches per kernel, block shapes together", "[component][session_view]") {
  Captured k = capture_of("fma_chain");
  ComponentRig rig(deep(agent::SelectMode::kAll), counters_for({&k}));
  started(rig);
  // One kernel with two block shapes (two families): one launch profiled, three more not.
  REQUIRE(rig.launch(make_launch(k.mangled, 1, k.launch.grid, k.launch.block)));
  for (uint64_t c = 2; c <= 3; ++c) (void)rig.count_launch(make_launch(k.mangled, c, k.launch.grid, k.launch.block));
  (void)rig.count_launch(make_launch(k.mangled, 4, k.launch.grid, {32, 1, 1}));
  collectors::LaunchEvent captured = make_launch("captured_kernel", 5);
  captured.stream_capturing = true;
  CHECK_FALSE(rig.launch(captured));
  // A graph kernel: traced, never launched through a callback.
  trace(rig, "graph_only_kernel", 2, 10000, {256, 1, 1}, 9);
  const wire::SessionEnd end = rig.view.session_end("all well");
  CHECK(end.state == wire::AgentState::kActive);
  CHECK(end.state_detail == "all well");
  CHECK(end.kernel_launches == 5);
  CHECK(end.profiled_launches == 1);
  CHECK(end.captured_launches == 1);
  CHECK_FALSE(end.overhead);
  REQUIRE(end.kernels.size() == 2);  // the graph kernel was never launched here
  const wire::KernelLaunchStats* fma = nullptr;
  const wire::KernelLaunchStats* cap = nullptr;
  for (const wire::KernelLaunchStats& s : end.kernels) (s.mangled_name == k.mangled ? fma : cap) = &s;
  REQUIRE(fma != nullptr);
  REQUIRE(cap != nullptr);
  CHECK(fma->launches == 4);
  CHECK(fma->profiled == 1);
  CHECK(fma->filtered == 3);  // launched, neither profiled nor accounted otherwise
  CHECK(cap->captured == 1);
  CHECK(cap->filtered == 0);

  // The kernel list keeps the families apart.
  const std::vector<agent::KernelSummary> ks = rig.view.kernels();
  CHECK(ks.size() == 4);
  size_t with_diagnosis = 0;
  for (const agent::KernelSummary& s : ks) with_diagnosis += s.diagnosis ? 1 : 0;
  CHECK(with_diagnosis == 1);
}

TEST_CASE("session view: the Prometheus snapshot lists the traced families with their verdicts", "[component][session_view]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep(agent::SelectMode::kAll), counters_for({&k}));
  started(rig);
  REQUIRE(rig.devices.info(0));
  REQUIRE(rig.launch(make_launch(k.mangled, 1, k.launch.grid, k.launch.block)));
  trace(rig, k.mangled, 2, 40000, k.launch.block);
  trace(rig, "second_kernel", 2, 10000);
  agent::PromSnapshot snap = rig.view.prometheus_snapshot(7);
  CHECK(snap.agent_state == "active");
  CHECK(snap.host == "rig-host");
  CHECK(snap.sampled_launches == 7);
  CHECK(snap.profiled_launches == 1);
  CHECK_FALSE(snap.has_budget);
  REQUIRE(snap.families.size() == 2);
  CHECK(snap.families[0].family_id == id_of(rig, k.mangled, k.launch.block));  // the larger first
  CHECK(snap.families[0].verdict == std::string(triage::to_string(k.reference.classification)));
  CHECK(snap.families[1].kernel == "second_kernel");
  CHECK(snap.families[1].verdict.empty());
  CHECK(snap.families[0].share + snap.families[1].share == Approx(1.0));
  REQUIRE(snap.gpus.size() == 1);
  CHECK(snap.gpus[0].model == "NVIDIA H200");
  CHECK(snap.gpus[0].busy_seconds > 0);
  rig.state.store(wire::AgentState::kPermissionDenied);
  CHECK(rig.view.prometheus_snapshot(0).agent_state == "permission_denied");
}

TEST_CASE("session view: always-on reports its budget", "[component][session_view]") {
  AgentConfig c = deep(agent::SelectMode::kAll);
  c.mode = agent::AgentMode::kAlwaysOn;
  c.budget_fraction = 0.01;
  ComponentRig rig(c);
  ComponentRig deep_rig(deep(agent::SelectMode::kAll));
  CHECK_FALSE(deep_rig.view.overhead());
  rig.platform.mono_ns += 5'000'000'000;
  std::optional<wire::OverheadStats> o = rig.view.overhead();
  REQUIRE(o);
  CHECK(o->budget_fraction == c.budget_fraction);
  CHECK(o->wall_ns == 5'000'000'000);
  CHECK(rig.view.session_end("").overhead.has_value());
  agent::PromSnapshot snap = rig.view.prometheus_snapshot(0);
  CHECK(snap.has_budget);
  CHECK(snap.budget_ratio == c.budget_fraction);
}

TEST_CASE("session view: the exit summary names the traced families and why they were not profiled", "[component][session_view]") {
  AgentConfig c = deep(agent::SelectMode::kTop);
  c.select_top = 1;
  ComponentRig rig(c);
  const auto log_path = std::filesystem::temp_directory_path() /
                        ("cutriage-component-summary-" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(log_path);
  REQUIRE(rig.log.configure(agent::LogLevel::kInfo, log_path.string()).empty());
  started(rig);
  (void)rig.count_launch(make_launch("summary_big", 1));
  (void)rig.count_launch(make_launch("summary_small", 2));
  trace(rig, "summary_big", 2, 80000);
  trace(rig, "summary_small", 2, 8000);
  rig.view.print_summary(rig.log, rig.view.session_end(""), "out.pb");
  const std::string text = testing::slurp(log_path);
  std::filesystem::remove(log_path);
  CHECK(text.find("2 kernel families traced") != std::string::npos);
  CHECK(text.find("cutriage report out.pb") != std::string::npos);
  const size_t big = text.find("summary_big");
  const size_t small = text.find("summary_small");
  REQUIRE(big != std::string::npos);
  REQUIRE(small != std::string::npos);
  CHECK(big < small);  // ranked order
  CHECK(text.find("not profiled: outside the top 1") != std::string::npos);
}

}  // namespace test_component_session_view
