// Trace first, rank by impact (issue 4), driven through the fake platform: the fake "GPU" reports
// an execution record for every launch (durations set per kernel below, in nanoseconds, synthetic
// timings); counter values are the real H200 captures the other agent tests use.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_agent_trace {

using namespace cutriage;
#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;  // Catch2 v3; v2 has it at global scope
#endif
using agent::AgentConfig;
using agent::SelectMode;
using testing::Captured;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::kernel_records;
using testing::make_launch;

namespace {

AgentConfig top(uint32_t k) {
  AgentConfig c;
  c.select = SelectMode::kTop;
  c.select_top = k;
  c.trace_flush_ms = 0;  // the fake delivers each launch's record itself
  return c;
}

struct TraceView {
  std::map<uint64_t, const v1::KernelFamily*> families;
  std::vector<const v1::KernelExecution*> kernels;
  std::vector<const v1::NvtxRange*> nvtx;
  const v1::TraceSummary* summary = nullptr;
  const v1::SessionEnd* end = nullptr;
  std::vector<const v1::KernelProfile*> profiles;
};

TraceView view(const tools::ReadResult& r) {
  TraceView v;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_family()) v.families[rec.family().id()] = &rec.family();
    if (rec.has_trace()) {
      for (const v1::KernelExecution& e : rec.trace().kernels()) v.kernels.push_back(&e);
      for (const v1::NvtxRange& n : rec.trace().nvtx_ranges()) v.nvtx.push_back(&n);
    }
    if (rec.has_trace_summary()) v.summary = &rec.trace_summary();
    if (rec.has_session_end()) v.end = &rec.session_end();
    if (rec.has_kernel()) v.profiles.push_back(&rec.kernel());
  }
  return v;
}
TraceView view(const tools::ReadResult&& r) = delete;

// Mangled names of the kernels with a profiled record.
std::set<std::string> profiled_kernels(const tools::ReadResult& r, const TraceView& v) {
  std::set<std::string> out;
  for (const v1::KernelProfile* p : v.profiles) {
    if (p->status() == v1::PROFILE_STATUS_PROFILED) out.insert(std::string(tools::lookup(r, p->mangled_name_iid())));
  }
  return out;
}

std::string name_of(const tools::ReadResult& r, const TraceView& v, uint64_t family) {
  auto it = v.families.find(family);
  REQUIRE(it != v.families.end());
  return std::string(tools::lookup(r, it->second->mangled_name_iid()));
}

const v1::FamilyStats* stats_of(const tools::ReadResult& r, const TraceView& v, const std::string& mangled) {
  REQUIRE(v.summary != nullptr);
  for (const v1::FamilyStats& f : v.summary->families()) {
    if (name_of(r, v, f.family_id()) == mangled) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("trace: top-1 selection profiles the family with the most GPU time, after ranking", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  Captured b = capture_of("fma_chain");
  Harness h(top(1), counters_for({&a, &b}));
  // b launches less often but each launch is much longer: 3 x 900 us > 6 x 100 us.
  h.platform.config.durations_ns[a.mangled] = 100000;
  h.platform.config.durations_ns[b.mangled] = 900000;
  REQUIRE(h.ag->start());
  uint64_t corr = 0;
  for (int i = 0; i < 6; ++i) {
    h.platform.launch(make_launch(a.mangled, ++corr, a.launch.grid, a.launch.block));
    if (i % 2 == 0) h.platform.launch(make_launch(b.mangled, ++corr, b.launch.grid, b.launch.block));
  }
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);

  // Only b was profiled, and not on its first launch (no duration was known then).
  for (const v1::KernelProfile* p : v.profiles) CHECK(p->correlation_id() != 2);  // b's first launch
  CHECK(profiled_kernels(r, v) == std::set<std::string>{b.mangled});

  // The ranking agrees with the sum of the unreplayed durations in the timeline.
  REQUIRE(v.summary != nullptr);
  std::map<uint64_t, double> sums;
  for (const v1::KernelExecution* e : v.kernels) {
    if (!e->replayed()) sums[e->family_id()] += double(e->end_ns() - e->start_ns());
  }
  REQUIRE(v.summary->families_size() == 2);
  double previous = 1e300;
  for (const v1::FamilyStats& f : v.summary->families()) {
    CHECK(f.total_ns() == Approx(sums[f.family_id()]));
    CHECK(f.total_ns() <= previous);
    previous = f.total_ns();
  }
  CHECK(name_of(r, v, v.summary->families(0).family_id()) == b.mangled);
  const v1::FamilyStats* fa = stats_of(r, v, a.mangled);
  REQUIRE(fa != nullptr);
  CHECK(fa->selection() == v1::FamilyStats::SELECTION_NOT_RANKED);
  CHECK(fa->selection_detail().find("top 1") != std::string::npos);
  CHECK(fa->launches() == 6);
  CHECK(fa->mean_ns() == Approx(100000));
  const v1::FamilyStats* fb = stats_of(r, v, b.mangled);
  REQUIRE(fb != nullptr);
  CHECK(fb->selection() == v1::FamilyStats::SELECTION_PROFILED);
  CHECK(fb->time_share() == Approx(fb->total_ns() / (fa->total_ns() + fb->total_ns())));
  CHECK(fb->amdahl_ceiling() == Approx(1.0 / (1.0 - fb->time_share())));
}

TEST_CASE("trace: profiled launches are marked replayed and kept out of the statistics", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  Harness h(top(5), counters_for({&a}));
  h.platform.config.durations_ns[a.mangled] = 50000;
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 6; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  std::set<uint64_t> profiled_corr;
  std::set<uint64_t> sampled_corr;  // the PC-sampled launch: serialized and waited for, so perturbed
  for (const v1::KernelProfile* p : v.profiles) {
    if (p->status() == v1::PROFILE_STATUS_PROFILED) profiled_corr.insert(p->correlation_id());
    // Launch i has correlation id i in this test.
    if (p->pc_sampling().from_launch_index() != 0) sampled_corr.insert(p->pc_sampling().from_launch_index());
  }
  REQUIRE(!profiled_corr.empty());
  CHECK(sampled_corr.size() == 1);
  size_t replayed = 0;
  for (const v1::KernelExecution* e : v.kernels) {
    const bool perturbed = profiled_corr.count(e->correlation_id()) + sampled_corr.count(e->correlation_id()) > 0;
    CHECK(e->replayed() == perturbed);
    replayed += e->replayed() ? 1 : 0;
    // CUPTI returns a replayed launch's record untimed (the fake does too): the timeline holds
    // the profiler's window instead, which spans the replay passes. The sampled launch keeps its
    // own record.
    if (profiled_corr.count(e->correlation_id())) CHECK(e->end_ns() - e->start_ns() >= 500000);
  }
  CHECK(replayed == profiled_corr.size() + sampled_corr.size());
  const v1::FamilyStats* f = stats_of(r, v, a.mangled);
  REQUIRE(f != nullptr);
  CHECK(f->launches() == 6);
  CHECK(f->replayed_launches() == replayed);
  CHECK(f->total_ns() == Approx(50000.0 * double(6 - replayed)));
}

TEST_CASE("trace: Decision 0 compares the replayed duration with the traced ones", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  const double profiled_ns = *a.metrics.get("gpu__time_duration.sum");
  for (double factor : {1.0, 4.0}) {
    INFO("unprofiled = profiled / " << factor);
    Harness h(top(5), counters_for({&a}));
    h.platform.config.durations_ns[a.mangled] = static_cast<uint64_t>(profiled_ns / factor);
    REQUIRE(h.ag->start());
    for (uint64_t i = 1; i <= 6; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
    h.ag->finish();
    tools::ReadResult r = h.read();
    TraceView v = view(r);
    // The record written at the end (highest revision) holds every unprofiled duration.
    const v1::KernelProfile* last = nullptr;
    for (const v1::KernelProfile* p : v.profiles) {
      if (p->status() == v1::PROFILE_STATUS_PROFILED && (!last || p->revision() >= last->revision())) last = p;
    }
    REQUIRE(last != nullptr);
    CHECK(last->revision() >= 1);
    CHECK(last->family_id() != 0);
    bool evaluated = false;
    for (const v1::DecisionVisit& d : last->diagnosis().path()) {
      for (const v1::Check& c : d.checks()) {
        if (c.rule_id() != "d0.duration_divergence") continue;
        evaluated = true;
        CHECK(c.outcome() == (factor > 2 ? v1::OUTCOME_FIRED : v1::OUTCOME_NOT_FIRED));
      }
    }
    CHECK(evaluated);
    if (factor > 2) CHECK(last->diagnosis().trust() == v1::TRUST_UNTRUSTED);
  }
}

TEST_CASE("trace: a launch the selection does not want costs no driver call and no exit callback", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  AgentConfig cfg = top(1);
  cfg.select = SelectMode::kNone;
  Harness h(std::move(cfg), counters_for({&a}));
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 20; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
  CHECK(h.platform.details_calls.load() == 0);
  CHECK(h.platform.exits_wanted.load() == 0);
  CHECK(h.platform.stats.begins.load() == 0);
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  CHECK(v.kernels.size() == 20);
  const v1::FamilyStats* f = stats_of(r, v, a.mangled);
  REQUIRE(f != nullptr);
  CHECK(f->selection() == v1::FamilyStats::SELECTION_TRACE_ONLY);
  REQUIRE(v.end != nullptr);
  CHECK(v.end->kernel_launches() == 20);
}

TEST_CASE("trace: kernels launched only from graphs are ranked, and say why they are not profiled", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  Harness h(top(5), counters_for({&a}));
  REQUIRE(h.ag->start());
  collectors::LaunchEvent g = make_launch("", 1);
  g.api = collectors::LaunchApi::kGraphLaunch;
  g.mangled_name = {};
  g.launch.reset();
  h.platform.launch(g);
  h.platform.queue_kernel("_Z10graph_nodePf", 300000, {64, 1, 1}, {128, 1, 1}, /*graph_id=*/3);
  h.platform.queue_kernel("_Z10graph_nodePf", 300000, {64, 1, 1}, {128, 1, 1}, /*graph_id=*/3);
  h.platform.deliver();
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  const v1::FamilyStats* f = stats_of(r, v, "_Z10graph_nodePf");
  REQUIRE(f != nullptr);
  CHECK(f->launches() == 2);
  CHECK(f->graph_launches() == 2);
  CHECK(f->selection() == v1::FamilyStats::SELECTION_GRAPH_ONLY);
  CHECK(f->selection_detail().find("graph") != std::string::npos);
  for (const v1::KernelExecution* e : v.kernels) CHECK(e->graph_id() == 3);
  REQUIRE(v.end != nullptr);
  CHECK(v.end->graph_launches() == 1);
}

// How a captured graph reaches the agent (the order seen on the H200, tests/data/graphs/probe.txt):
// each captured launch creates its node inside its own launch callback; instantiation creates the
// clones, each followed by its clone event; the records name the clones (graph 2 here).
TEST_CASE("trace: graph kernels name their graph, node and capture-time NVTX path, each graph is a workload",
          "[agent][trace][graphs]") {
  Captured a = capture_of("vector_add");
  AgentConfig c = top(1);
  Harness h(c, counters_for({&a}));
  REQUIRE(h.ag->start());
  collectors::LaunchObserver& obs = *h.platform.observer();
  auto nvtx = [&](collectors::NvtxEvent::Kind kind, std::string_view name = {}) {
    collectors::NvtxEvent e;
    e.kind = kind;
    e.message = name;
    obs.on_nvtx(e);
  };
  auto node_event = [&](collectors::GraphEvent::Kind kind, uint32_t graph, uint64_t node, uint64_t original,
                        uint64_t capture) {
    collectors::GraphEvent e;
    e.kind = kind;
    e.graph_id = graph;
    e.node_id = node;
    e.original_node_id = original;
    e.capture_correlation_id = capture;
    obs.on_graph(e);
  };
  using K = collectors::GraphEvent::Kind;
  nvtx(collectors::NvtxEvent::Kind::kPush, "forward");
  nvtx(collectors::NvtxEvent::Kind::kPush, "linear1");
  node_event(K::kNodeCreated, 1, 100, 0, /*capture=*/11);  // the GEMM, captured under forward/linear1
  nvtx(collectors::NvtxEvent::Kind::kPop);
  node_event(K::kNodeCreated, 1, 101, 0, /*capture=*/12);  // the norm, under forward
  nvtx(collectors::NvtxEvent::Kind::kPop);
  node_event(K::kNodeCreated, 2, 200, 0, 0);  // instantiation: clones, outside any range
  node_event(K::kNodeCloned, 2, 200, 100, 0);
  node_event(K::kNodeCreated, 2, 201, 0, 0);
  node_event(K::kNodeCloned, 2, 201, 101, 0);
  collectors::GraphEvent exec;
  exec.kind = K::kExecCreated;
  exec.graph_id = 1;
  exec.exec_id = 2;
  obs.on_graph(exec);

  // Three replays: GEMM 300 us then norm 50 us (the fake puts 1 us between records, its gap).
  for (uint64_t replay = 0; replay < 3; ++replay) {
    collectors::LaunchEvent g = make_launch("", 40 + replay);
    g.api = collectors::LaunchApi::kGraphLaunch;
    g.mangled_name = {};
    g.launch.reset();
    h.platform.launch(g);
    h.platform.queue_kernel("_Z4gemmPf", 300000, {64, 1, 1}, {128, 1, 1}, /*graph_id=*/2, 7, 40 + replay, 200);
    h.platform.queue_kernel("_Z4normPf", 50000, {64, 1, 1}, {128, 1, 1}, /*graph_id=*/2, 7, 40 + replay, 201);
  }
  h.platform.deliver();
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  REQUIRE(v.summary != nullptr);
  REQUIRE(v.summary->graphs_size() == 1);
  const v1::GraphStats& g = v.summary->graphs(0);
  CHECK(g.graph_id() == 2);
  CHECK(g.replays() == 3);
  CHECK(g.kernel_nodes() == 2);
  CHECK(g.kernel_executions() == 6);
  CHECK(g.kernel_busy_ns() == Approx(3 * 350000.0));
  CHECK(g.idle_between_nodes_ns() == Approx(g.span_ns() - g.kernel_busy_ns()));
  CHECK(g.idle_between_nodes_ns() > 0);  // the gap between the two nodes of each replay
  REQUIRE(g.families_size() == 2);
  CHECK(family_name(r, g.families(0).family_id()).find("gemm") != std::string::npos);

  const v1::FamilyStats* gemm = stats_of(r, v, "_Z4gemmPf");
  REQUIRE(gemm != nullptr);
  CHECK(gemm->selection() == v1::FamilyStats::SELECTION_GRAPH_ONLY);
  CHECK(gemm->selection_detail().find("3 of them inside CUDA graph launches") != std::string::npos);
  REQUIRE(gemm->graph_nodes_size() == 1);
  const v1::GraphNodeRef& n = gemm->graph_nodes(0);
  CHECK(n.graph_id() == 2);
  CHECK(n.node_id() == 200);
  CHECK(n.created_node_id() == 100);
  CHECK(n.captured());
  CHECK(tools::lookup(r, n.capture_nvtx_path_iid()) == "forward/linear1");
  // The capture-time path is also the family's NVTX path (its records carry the graph launch's
  // correlation id, which no range was open around).
  REQUIRE(gemm->nvtx_path_iids_size() == 1);
  CHECK(tools::lookup(r, gemm->nvtx_path_iids(0)) == "forward/linear1");
  const v1::FamilyStats* norm = stats_of(r, v, "_Z4normPf");
  REQUIRE(norm != nullptr);
  REQUIRE(norm->graph_nodes_size() == 1);
  CHECK(tools::lookup(r, norm->graph_nodes(0).capture_nvtx_path_iid()) == "forward");

  const std::string text = tools::render_report(r, {});
  CHECK(text.find("CUDA graphs as workloads") != std::string::npos);
  CHECK(text.find("graph 2: 3 replays") != std::string::npos);
  CHECK(text.find("graph 2 node 200 (captured under NVTX 'forward/linear1')") != std::string::npos);
  // The report's other path (the summary recomputed from the trace chunks) folds the same graph.
  const std::optional<v1::TraceSummary> again = tools::recompute_summary(r);
  REQUIRE(again.has_value());
  REQUIRE(again->graphs_size() == 1);
  CHECK(again->graphs(0).replays() == g.replays());
  CHECK(again->graphs(0).span_ns() == Approx(g.span_ns()));
  CHECK(again->graphs(0).kernel_busy_ns() == Approx(g.kernel_busy_ns()));
}

TEST_CASE("trace: a family mostly inside graphs says how many ran directly and when", "[agent][trace][graphs]") {
  Captured a = capture_of("vector_add");
  Harness h(top(1), counters_for({&a}));
  // One direct (warm-up) launch whose record comes only with the graph's, as a warm-up right
  // before the capture has it: ranked after its direct launch. Then six graph executions.
  h.platform.config.deliver_each_launch = false;
  REQUIRE(h.ag->start());
  h.platform.launch(make_launch("_Z6warmedPf", 1, {64, 1, 1}, {128, 1, 1}));
  for (uint64_t i = 0; i < 6; ++i) {
    h.platform.queue_kernel("_Z6warmedPf", 200000, {64, 1, 1}, {128, 1, 1}, /*graph_id=*/5, 7, 100 + i / 2, 9);
  }
  h.platform.deliver();
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  const v1::FamilyStats* f = stats_of(r, v, "_Z6warmedPf");
  REQUIRE(f != nullptr);
  CHECK(f->launches() == 7);
  CHECK(f->graph_launches() == 6);
  CHECK(f->selection() == v1::FamilyStats::SELECTION_MOSTLY_IN_GRAPHS);
  CHECK(f->selection_detail().find("ran 7 times, 6 of them inside CUDA graph launches and 1 directly") !=
        std::string::npos);
  CHECK(f->selection_detail().find("its direct launches all came before its rank was known") != std::string::npos);
}

TEST_CASE("trace: NVTX ranges name the launches inside them and filter what is profiled", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  Captured b = capture_of("fma_chain");
  AgentConfig cfg = top(5);
  REQUIRE(cfg.nvtx_include.set("train_step", agent::NameBase::kFunction).empty());
  Harness h(std::move(cfg), counters_for({&a, &b}));
  REQUIRE(h.ag->start());
  auto nvtx = [&](collectors::NvtxEvent::Kind kind, const char* name) {
    collectors::NvtxEvent e;
    e.kind = kind;
    e.message = name;
    e.timestamp_ns = h.platform.timestamp_ns();
    e.thread_id = 42;
    h.ag->on_nvtx(e);
  };
  uint64_t corr = 0;
  for (int step = 0; step < 4; ++step) {
    nvtx(collectors::NvtxEvent::Kind::kPush, "train_step");
    nvtx(collectors::NvtxEvent::Kind::kPush, "forward");
    h.platform.launch(make_launch(a.mangled, ++corr, a.launch.grid, a.launch.block));
    nvtx(collectors::NvtxEvent::Kind::kPop, "");
    nvtx(collectors::NvtxEvent::Kind::kPop, "");
    h.platform.launch(make_launch(b.mangled, ++corr, b.launch.grid, b.launch.block));  // outside
  }
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  CHECK(profiled_kernels(r, v) == std::set<std::string>{a.mangled});
  for (const v1::KernelExecution* e : v.kernels) {
    const std::string name = name_of(r, v, e->family_id());
    const std::string path = e->nvtx_path_iid() ? std::string(tools::lookup(r, e->nvtx_path_iid())) : "";
    CHECK(path == (name == a.mangled ? "train_step/forward" : ""));
  }
  const v1::FamilyStats* fa = stats_of(r, v, a.mangled);
  REQUIRE(fa != nullptr);
  REQUIRE(fa->nvtx_path_iids_size() == 1);
  CHECK(tools::lookup(r, fa->nvtx_path_iids(0)) == "train_step/forward");
  // 8 closed ranges, inner ones at depth 1 inside their outer one.
  REQUIRE(v.nvtx.size() == 8);
  for (const v1::NvtxRange* n : v.nvtx) {
    CHECK(n->end_ns() >= n->start_ns());
    CHECK(n->thread_id() == 42);
    CHECK(n->depth() == (tools::lookup(r, n->name_iid()) == "forward" ? 1U : 0U));
  }
}

TEST_CASE("trace: a trace that cannot start leaves profiling by name, with one notice", "[agent][trace][failure]") {
  Captured a = capture_of("vector_add");
  Harness h(top(1), counters_for({&a}));
  h.platform.config.trace_status = collectors::Status(collectors::StatusCode::kInternal, "cuptiActivityEnable: injected");
  REQUIRE(h.ag->start());
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  CHECK(v.summary == nullptr);
  CHECK(v.kernels.empty());
  size_t profiled = 0;
  for (const v1::KernelProfile* p : v.profiles) profiled += p->status() == v1::PROFILE_STATUS_PROFILED;
  CHECK(profiled == 1);  // first launch: nothing to rank on, every kernel is a candidate
  size_t notices = 0;
  for (const v1::Record& rec : r.file.records()) notices += rec.has_notice() && rec.notice().code() == "trace_failed";
  CHECK(notices == 1);
  CHECK(testing::count_lines_containing(h.log_text(), "kernel trace could not start") == 1);
}

TEST_CASE("trace: the timeline cap keeps statistics for every execution", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  AgentConfig cfg = top(1);
  cfg.select = SelectMode::kNone;
  cfg.trace_max_events = 5;
  Harness h(std::move(cfg), counters_for({&a}));
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 12; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
  h.ag->finish();
  tools::ReadResult r = h.read();
  TraceView v = view(r);
  CHECK(v.kernels.size() == 5);
  REQUIRE(v.summary != nullptr);
  CHECK(v.summary->kernel_executions() == 12);
  CHECK(v.summary->timeline_kernel_events() == 5);
}

TEST_CASE("trace: the exit summary opens with the application view", "[agent][trace]") {
  Captured a = capture_of("vector_add");
  Captured b = capture_of("fma_chain");
  Harness h(top(1), counters_for({&a, &b}));
  h.platform.config.durations_ns[a.mangled] = 100000;
  h.platform.config.durations_ns[b.mangled] = 10000;
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 8; i += 2) {
    h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
    h.platform.launch(make_launch(b.mangled, i + 1, b.launch.grid, b.launch.block));
  }
  h.ag->finish();
  const std::string log = h.log_text();
  CHECK(log.find("2 kernel families traced") != std::string::npos);
  CHECK(log.find("GPU 0: busy") != std::string::npos);
  CHECK(log.find("#1") != std::string::npos);
  CHECK(log.find("not profiled: outside the top 1") != std::string::npos);
}

TEST_CASE("trace: the end-of-session rewrite of a kernel that owns all GPU time triages cleanly", "[agent][trace]") {
  // The shape of tests/gpu/programs/graphs.cu: one kernel, launched plainly, captured, and from a
  // graph; it holds 100% of the traced time (a time share of 1: no finite Amdahl ceiling).
  Captured a = capture_of("vector_add");
  AgentConfig cfg = top(1);
  cfg.select = SelectMode::kAll;
  Harness h(std::move(cfg), counters_for({&a}));
  REQUIRE(h.ag->start());
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  for (uint64_t c = 2; c <= 4; ++c) {
    collectors::LaunchEvent e = make_launch(a.mangled, c, a.launch.grid, a.launch.block);
    e.stream_capturing = true;
    h.platform.launch(e);
  }
  for (int g = 0; g < 3; ++g) {
    for (int n = 0; n < 3; ++n) h.platform.queue_kernel(a.mangled, 250000, a.launch.grid, a.launch.block, 1);
  }
  h.platform.deliver();
  h.platform.launch(make_launch(a.mangled, 5, a.launch.grid, a.launch.block));
  h.ag->finish();
  tools::ReadResult r = h.read();
  for (const v1::KernelProfile* p : kernel_records(r)) {
    INFO(p->diagnosis().headline());
    CHECK(p->diagnosis().headline().find("internal error") == std::string::npos);
    if (p->revision() > 0) CHECK(p->time_share() == Approx(1.0));
  }
}

TEST_CASE("trace: the second launch of an untraced family collects the first's record, then is profiled", "[agent][trace]") {
  // CUPTI returns a buffer only when all its records are complete: the agent flushes before the
  // launch is recorded. The fake keeps records until a flush, like CUPTI.
  // The unforced flush is the path here; the wait at the second launch that CUTRIAGE_RANK_EARLY
  // adds before it has its own tests (test_rank_early.cpp).
  Captured a = capture_of("vector_add");
  AgentConfig cfg = top(5);
  cfg.rank_early = false;
  Harness h(cfg, counters_for({&a}));
  h.platform.config.deliver_each_launch = false;
  REQUIRE(h.ag->start());
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  CHECK(h.platform.flushes.load() == 0);  // nothing to rank on yet, and nothing asked
  h.platform.launch(make_launch(a.mangled, 2, a.launch.grid, a.launch.block));
  CHECK(h.platform.flushes.load() == 1);
  CHECK(h.platform.stats.begins.load() == 1);  // launch 2 itself
  // After a replayed launch: a forced flush, so its never-completing record does not hold the
  // buffer (and everything after it) until exit.
  CHECK(h.platform.forced_flushes.load() == 1);
  h.platform.launch(make_launch(a.mangled, 3, a.launch.grid, a.launch.block));
  CHECK(h.platform.flushes.load() == 1);  // traced now: no more flushes from the callback
  h.ag->finish();
  tools::ReadResult r = h.read();
  std::set<uint64_t> profiled;
  for (const v1::KernelProfile* p : kernel_records(r)) {
    if (p->status() == v1::PROFILE_STATUS_PROFILED) profiled.insert(p->correlation_id());
  }
  CHECK(profiled.count(2) == 1);
  CHECK(profiled.count(1) == 0);
}

TEST_CASE("trace: how a kernel was built (line table, -G) comes from its module's cubin", "[agent][trace]") {
  // Real nvcc cubins (tests/fuzz/seeds/cubin, from tests/data/cubin/kernels.cu): the agent reads
  // them at module load; the profiled record's Decision 0 says whether lines can be named.
  Captured a = capture_of("vector_add");
  const std::string kernel = "plain_kernel";  // extern "C" in kernels.cu: the mangled name
  for (const char* variant : {"plain", "lineinfo", "debug"}) {
    INFO(variant);
    testing::FakeCounters counters;
    counters.by_kernel[kernel] = a.metrics;
    Harness h(testing::select_all(), counters);
    REQUIRE(h.ag->start());
    collectors::ModuleEvent m;
    m.context_id = 1;
    m.module_id = 1;
    const std::string bytes = testing::slurp(std::filesystem::path(CUTRIAGE_SOURCE_DIR) / "tests/fuzz/seeds/cubin" /
                                             (std::string(variant) + ".cubin"));
    REQUIRE(!bytes.empty());
    m.cubin.assign(bytes.begin(), bytes.end());
    h.ag->on_module_loaded(m);
    h.platform.launch(make_launch(kernel, 1, a.launch.grid, a.launch.block));
    h.ag->finish();
    tools::ReadResult r = h.read();
    auto ks = kernel_records(r);
    REQUIRE(!ks.empty());
    std::string reading;
    for (const v1::DecisionVisit& d : ks.back()->diagnosis().path()) {
      for (const v1::Check& c : d.checks()) {
        if (c.rule_id() == "d0.build_config") reading = c.reason();
      }
    }
    INFO(reading);
    CHECK(reading.find("not recorded") == std::string::npos);  // the build was known
    if (std::string(variant) == "plain") CHECK(reading.find("line") != std::string::npos);
    if (std::string(variant) == "debug") CHECK(reading.find("-G") != std::string::npos);
  }
}

}  // namespace test_agent_trace
