// Kernels inside CUDA graphs get verdicts: the agent profiles a graph launch as one workload over
// the application's own launches of its exec (docs/graphs.md), on the fake platform. The counters
// are a real H200 capture (cublas_gemm, from the zoo) standing for the graph's; the graph's shape
// (a GEMM node holding most of its time, a norm node the rest) and the PC sample batch are
// synthetic, labelled as such.
#include <string>
#include <vector>

#include "agent_harness.h"
#include "file_reader.h"
#include "report.h"
#include "run.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_graph_profiler {

using namespace cutriage;
using namespace cutriage::testing;

namespace {

constexpr uint32_t kExec = 5;
constexpr uint32_t kGraph = 9;
const char* const kGemm = "_Z4gemmPf";
const char* const kNorm = "_Z4normPf";
const char* const kKey = "graph:9";  // what the fake profiler reads around the graph launch

AgentConfig top(uint32_t n) {
  AgentConfig c;
  c.select = agent::SelectMode::kTop;
  c.select_top = n;
  return c;
}

// Always-on at the default budget, the two top families, no summary and no periodic flush (the
// tests deliver records themselves).
AgentConfig always_on_top2() {
  AgentConfig c = top(2);
  c.mode = agent::AgentMode::kAlwaysOn;
  c.budget_fraction = 0.004;
  c.summary = false;
  c.trace_flush_ms = 0;
  return c;
}

// Synthetic: samples of both kernels in one continuous collection, as the H200 returned them for a
// graph launch (correlation id 0, attributed by function only).
collectors::PcSampleBatch graph_batch() {
  collectors::PcSampleBatch b;
  b.reason_names = {"smsp__pcsamp_warps_issue_stalled_selected", "smsp__pcsamp_warps_issue_stalled_long_scoreboard"};
  auto pc = [&](const char* function, uint64_t off, uint64_t selected, uint64_t long_sb) {
    collectors::PcSampleRecord r;
    r.function = function;
    r.pc_offset = off;
    r.stalls = {{0, selected}, {1, long_sb}};
    b.pcs.push_back(r);
    b.total_samples += selected + long_sb;
  };
  pc(kGemm, 0x100, 800, 200);
  pc(kGemm, 0x180, 300, 100);
  pc(kNorm, 0x40, 50, 450);
  return b;
}

struct GraphRun {
  Captured gemm = capture_of("cublas_gemm");
  FakeCounters counters() const {
    FakeCounters c;
    c.by_kernel[kKey] = gemm.metrics;
    return c;
  }
};

std::vector<FakePlatform::GraphNode> nodes() {
  // Synthetic graph: GEMM 800 us, norm 200 us, per replay.
  return {{kGemm, 800000, 100, {132, 1, 1}, {256, 1, 1}}, {kNorm, 200000, 101, {4096, 1, 1}, {128, 1, 1}}};
}

const v1::KernelProfile* record_of(const tools::ReadResult& r, const std::vector<const v1::KernelProfile*>& ks,
                                   const std::string& mangled) {
  for (const v1::KernelProfile* k : ks) {
    if (tools::lookup(r, k->mangled_name_iid()) == mangled) return k;
  }
  return nullptr;
}

// Replays the graph until the agent has nothing more to do with it (or `max` launches).
int replay(Harness& h, uint64_t& correlation, int max) {
  int n = 0;
  for (; n < max; ++n) h.platform.launch_graph(kExec, kGraph, ++correlation, nodes(), kKey);
  return n;
}

}  // namespace

TEST_CASE("graphs: a graph's kernels get verdicts from its counters, over the application's own launches",
          "[agent][graphs]") {
  GraphRun run;
  AgentConfig c = top(2);
  c.graph_pc_sampling = true;  // the fake hands over PCs across a graph launch (CUPTI 13.0 does not)
  Harness h(c, run.counters());
  h.platform.config.pc_batches[kKey] = graph_batch();
  REQUIRE(h.ag->start());
  uint64_t correlation = 100;
  replay(h, correlation, 40);
  h.ag->finish();

  tools::ReadResult r = h.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  const v1::KernelProfile* gemm = record_of(r, ks, kGemm);
  const v1::KernelProfile* norm = record_of(r, ks, kNorm);
  REQUIRE(gemm != nullptr);
  REQUIRE(norm != nullptr);
  CHECK(gemm->status() == v1::PROFILE_STATUS_PROFILED);
  CHECK(gemm->launch_api() == v1::LAUNCH_API_GRAPH);
  CHECK(gemm->replay_mode() == v1::REPLAY_MODE_APPLICATION);
  REQUIRE(gemm->has_graph_scope());
  CHECK(gemm->graph_scope().graph_id() == kGraph);
  CHECK(gemm->graph_scope().exec_id() == kExec);
  CHECK(gemm->graph_scope().share_of_graph() == Approx(0.8).epsilon(0.01));
  CHECK(gemm->graph_scope().other_families() == 1);
  CHECK(gemm->graph_scope().replays_profiled() >= 1);
  // Every pass ran on a launch of the application, never replayed: one assembled entry each,
  // with the graph's traced span for Decision 0.
  CHECK(gemm->assembled_launches_size() == static_cast<int>(gemm->graph_scope().replays_profiled()));
  for (const v1::AssembledLaunch& a : gemm->assembled_launches()) CHECK(a.duration_ns() > 1e6 * 0.99);
  // The kernel's own shape, from its traced records.
  CHECK(gemm->launch().grid().x() == 132);
  CHECK(gemm->launch().block().x() == 256);
  // The verdict rests on the graph's counters and says so; the GEMM holds 80%: trusted, noted.
  CHECK(gemm->diagnosis().trust() != v1::TRUST_UNTRUSTED);
  CHECK(gemm->diagnosis().classification() != v1::CLASSIFICATION_UNSPECIFIED);
  CHECK(gemm->diagnosis().headline().find("graph 9 as a whole (this kernel 80% of it): ") != std::string::npos);
  bool scope_noted = false;
  for (const std::string& n : gemm->diagnosis().trust_notes()) scope_noted = scope_noted || n.find("d0.graph_scope") != std::string::npos;
  CHECK(scope_noted);
  // Its own PC samples, split from the graph launch's by function.
  REQUIRE(gemm->has_pc_sampling());
  CHECK(gemm->pc_sampling().total_samples() == 1400);

  // The norm holds 20% of the graph: the graph's counters are not its own, so no verdict from them.
  REQUIRE(norm->has_graph_scope());
  CHECK(norm->graph_scope().share_of_graph() == Approx(0.2).epsilon(0.01));
  CHECK(norm->diagnosis().trust() == v1::TRUST_UNTRUSTED);
  CHECK(norm->diagnosis().headline().find("graph") != std::string::npos);
  REQUIRE(norm->has_pc_sampling());
  CHECK(norm->pc_sampling().total_samples() == 500);

  // Only kApplication plans went to the profiler, and its passes came from graph launches.
  {
    std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
    REQUIRE(!h.platform.stats.begin_replays.empty());
    for (collectors::PlanReplay rp : h.platform.stats.begin_replays) CHECK(rp == collectors::PlanReplay::kApplication);
  }
  CHECK(h.platform.stats.pc_begins.load() == 1);
  CHECK(h.platform.stats.pc_options.back().continuous);

  const std::string text = tools::render_report(r, {});
  CHECK(text.find("the whole graph 9's (exec 5), as one workload") != std::string::npos);
}

TEST_CASE("graphs: a deep-mode graph takes the metric plan made ahead as its context was created",
          "[agent][graphs][plan]") {
  GraphRun run;
  AgentConfig c = top(2);
  c.metric_mode = agent::MetricMode::kFull;  // deep mode's default, as parse_config resolves it
  c.pc_sampling = false;
  c.trace_flush_ms = 5;  // the flush thread makes the plans queued at the context
  Harness h(c, run.counters());
  REQUIRE(h.ag->start());
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an opaque fake handle, never dereferenced.
  h.ag->on_context_created(collectors::ContextEvent{1, reinterpret_cast<void*>(uintptr_t{0x1001}), 0});
  REQUIRE(wait_for_plans(h.platform, 1));
  uint64_t correlation = 100;
  replay(h, correlation, 40);
  h.ag->finish();

  // The graph was profiled over its own launches, and no list was planned twice in the process:
  // its stage used the list made ahead instead of making it again on the application's thread.
  {
    std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
    REQUIRE_FALSE(h.platform.stats.begin_replays.empty());
    for (collectors::PlanReplay rp : h.platform.stats.begin_replays) CHECK(rp == collectors::PlanReplay::kApplication);
    const std::vector<std::vector<std::string>>& planned = h.platform.stats.planned;
    for (size_t i = 0; i < planned.size(); ++i) {
      for (size_t j = i + 1; j < planned.size(); ++j) CHECK(planned[i] != planned[j]);
    }
  }
  tools::ReadResult r = h.read();
  const v1::KernelProfile* gemm = record_of(r, kernel_records(r), kGemm);
  REQUIRE(gemm != nullptr);
  CHECK(gemm->status() == v1::PROFILE_STATUS_PROFILED);
  REQUIRE(gemm->has_graph_scope());
}

TEST_CASE("graphs: nothing is profiled before the exec is bridged to its records, nor for an unranked graph",
          "[agent][graphs]") {
  GraphRun run;
  SECTION("select none: trace only") {
    AgentConfig c;
    c.select = agent::SelectMode::kNone;
    Harness h(c, run.counters());
    REQUIRE(h.ag->start());
    uint64_t correlation = 100;
    replay(h, correlation, 20);
    h.ag->finish();
    CHECK(h.platform.stats.begins.load() == 0);
    CHECK(h.platform.stats.pc_begins.load() == 0);
  }
  SECTION("launches without an exec id (the platform could not name it)") {
    Harness h(top(2), run.counters());
    REQUIRE(h.ag->start());
    for (uint64_t c = 1; c <= 20; ++c) h.platform.launch_graph(0, kGraph, c, nodes(), kKey);
    h.ag->finish();
    CHECK(h.platform.stats.begins.load() == 0);
  }
}

TEST_CASE("graphs: a kernel launched directly keeps the counters of its own launch", "[agent][graphs]") {
  GraphRun run;
  Harness h(top(2), run.counters());
  REQUIRE(h.ag->start());
  // A graph first, so that the graph profiler targets it; then the GEMM launched directly once
  // profiled on its own launch (select top ranks it).
  uint64_t correlation = 100;
  replay(h, correlation, 30);
  h.platform.config.durations_ns[kGemm] = 800000;
  h.platform.launch(make_launch(kGemm, ++correlation, {132, 1, 1}, {256, 1, 1}));
  h.ag->finish();
  tools::ReadResult r = h.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  for (const v1::KernelProfile* k : ks) {
    if (tools::lookup(r, k->mangled_name_iid()) != kGemm || k->status() != v1::PROFILE_STATUS_PROFILED) continue;
    // Either its graph record, or (when the direct launch was profiled) its own: never the graph's
    // counters relabelled as its own launch's.
    if (k->launch_api() == v1::LAUNCH_API_GRAPH) {
      CHECK(k->has_graph_scope());
    } else {
      CHECK(!k->has_graph_scope());
    }
  }
  // Its direct launch came after its rank: a second run has nothing to add.
  const v1::FamilyStats* g = testing::family_stats(r, kGemm);
  REQUIRE(g != nullptr);
  CHECK(g->direct_launches_before_rank() == 0);
  CHECK(tools::rerun_need(r).families == 0);
}

TEST_CASE("graphs: a kernel launched directly only before its rank was known asks for a run with the ranking",
          "[agent][graphs]") {
  GraphRun run;
  Harness h(top(2), run.counters());
  // A warm-up launch of the GEMM before the capture, its record back only with the graph's (as a
  // warm-up right before a capture has it): ranked after it. Then the graph, profiled as a whole.
  h.platform.config.deliver_each_launch = false;
  h.platform.config.durations_ns[kGemm] = 800000;
  REQUIRE(h.ag->start());
  uint64_t correlation = 100;
  h.platform.launch(make_launch(kGemm, ++correlation, {132, 1, 1}, {256, 1, 1}));
  SECTION("the capture comes before the ranking") {}
  SECTION("the ranking comes between the warm-up and the capture") {
    // The capture's launch of the GEMM is a launch callback after the rank, but not a direct one.
    h.platform.deliver();
    h.ag->flush();
    collectors::LaunchEvent captured = make_launch(kGemm, ++correlation, {132, 1, 1}, {256, 1, 1});
    captured.stream_capturing = true;
    h.platform.launch(captured);
  }
  replay(h, correlation, 40);
  h.platform.deliver();
  h.ag->finish();

  tools::ReadResult r = h.read();
  const v1::KernelProfile* gemm = record_of(r, kernel_records(r), kGemm);
  REQUIRE(gemm != nullptr);
  REQUIRE(gemm->has_graph_scope());  // its counters are the graph's only
  const v1::FamilyStats* g = testing::family_stats(r, kGemm);
  REQUIRE(g != nullptr);
  CHECK(g->selection() == v1::FamilyStats::SELECTION_PROFILED);
  CHECK(g->direct_launches_before_rank() == 1);
  CHECK(g->selection_detail().find("its 1 direct launches all came before its rank was known") != std::string::npos);
  // Never launched directly: nothing a second run could add.
  const v1::FamilyStats* norm = testing::family_stats(r, kNorm);
  REQUIRE(norm != nullptr);
  CHECK(norm->direct_launches_before_rank() == 0);
  // `cutriage run --rerun auto` runs the program again for it.
  const tools::RerunNeed need = tools::rerun_need(r);
  CHECK(need.families == 1);
  CHECK(need.graph_scoped == 1);
  CHECK(need.first == tools::family_name(r, g->family_id()));
}

TEST_CASE("graphs: always-on profiles a ranked graph within its budget, stages spaced by their cost",
          "[agent][graphs][always-on]") {
  GraphRun run;
  AgentConfig c = always_on_top2();
  c.graph_pc_sampling = true;
  Harness h(c, run.counters());
  h.platform.config.pc_batches[kKey] = graph_batch();
  REQUIRE(h.ag->start());
  // A service replaying its graph every millisecond of the fake clock, for ten fake minutes, with
  // a direct launch before each replay (the input copy of graph_mlp.py) that always-on profiles
  // on the same budget: as on the H200, its launches keep the allowance near zero.
  uint64_t correlation = 100;
  const uint64_t start = h.platform.mono_ns.load();
  uint64_t first_pass_at = 0;
  for (int i = 0; i < 600000 && h.platform.mono_ns.load() - start < 600'000'000'000ULL; ++i) {
    h.platform.launch(make_launch("_Z4copyPf", ++correlation, {4, 1, 1}, {256, 1, 1}));
    const int before = h.platform.stats.begins.load();
    h.platform.launch_graph(kExec, kGraph, ++correlation, nodes(), kKey);
    if (first_pass_at == 0 && h.platform.stats.begins.load() > before) first_pass_at = h.platform.mono_ns.load();
    h.platform.mono_ns += 1'000'000;
  }
  h.ag->finish();
  REQUIRE(first_pass_at != 0);
  tools::ReadResult r = h.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  const v1::KernelProfile* gemm = record_of(r, ks, kGemm);
  REQUIRE(gemm != nullptr);
  CHECK(gemm->status() == v1::PROFILE_STATUS_PROFILED);
  REQUIRE(gemm->has_graph_scope());
  CHECK(gemm->diagnosis().trust() != v1::TRUST_UNTRUSTED);
  REQUIRE(gemm->has_pc_sampling());
  // What the graph's passes and sampling cost, against the budget: the profiled launches' time
  // (the fake's begin costs) over the run stays near the budget's share.
  const v1::SessionEnd* end = nullptr;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_session_end()) end = &rec.session_end();
  }
  REQUIRE(end != nullptr);
  REQUIRE(end->has_overhead());
  CHECK(end->overhead().spent_ns() > 0);
  const double elapsed = static_cast<double>(h.platform.mono_ns.load() - start);
  CHECK(static_cast<double>(end->overhead().spent_ns()) / elapsed < 0.004 * 1.5);
}

TEST_CASE("graphs: no PC sampling across a graph launch unless asked, and the records say why", "[agent][graphs]") {
  // CUPTI 13.0 hands over no PC across a graph launch while the kernel trace runs (docs/graphs.md):
  // by default the agent does not spend a launch on it, and says so where the samples would be.
  GraphRun run;
  Harness h(top(2), run.counters());
  h.platform.config.pc_batches[kKey] = graph_batch();  // would be handed over if asked
  REQUIRE(h.ag->start());
  uint64_t correlation = 100;
  replay(h, correlation, 40);
  h.ag->finish();
  CHECK(h.platform.stats.pc_begins.load() == 0);
  tools::ReadResult r = h.read();
  const v1::KernelProfile* gemm = record_of(r, kernel_records(r), kGemm);
  REQUIRE(gemm != nullptr);
  REQUIRE(gemm->has_graph_scope());
  REQUIRE(gemm->has_pc_sampling());
  CHECK(gemm->pc_sampling().total_samples() == 0);
  CHECK(gemm->pc_sampling().error().find("CUTRIAGE_GRAPH_PC_SAMPLING=1") != std::string::npos);
  // The graph's verdicts are complete without it.
  bool complete = false;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_notice() && rec.notice().code() == "graph_verdicts" &&
        rec.notice().message().find("complete") != std::string::npos) {
      complete = true;
    }
  }
  CHECK(complete);
}

TEST_CASE("graphs: launches under a repeated correlation id are not profiled and the file says why",
          "[agent][graphs]") {
  // The H200 case (tests/data/graphs/graph_mlp-always-on-repeated-ids.txt), here from the first
  // launch on, with synthetic graph timings: every launch of the exec carries correlation id 101.
  GraphRun run;
  Harness h(top(2), run.counters());
  REQUIRE(h.ag->start());
  for (int i = 0; i < 40; ++i) h.platform.launch_graph(kExec, kGraph, 101, nodes(), kKey);
  h.ag->finish();

  {
    std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
    CHECK(h.platform.stats.begin_replays.empty());  // no range profiled over the graph
  }
  tools::ReadResult r = h.read();
  int notices = 0;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_notice() && rec.notice().code() == "correlation_repeated") {
      ++notices;
      CHECK(rec.notice().message().find("correlation id of its thread's previous launch (101, cuGraphLaunch)") != std::string::npos);
    }
  }
  CHECK(notices == 1);
  for (const v1::KernelProfile* kp : kernel_records(r)) CHECK(kp->status() != v1::PROFILE_STATUS_PROFILED);
  // The graph view still counts each launch as a replay (a node seen twice starts the next one).
  const v1::TraceSummary* s = tools::trace_summary(r);
  REQUIRE(s != nullptr);
  REQUIRE(s->graphs_size() == 1);
  CHECK(s->graphs(0).replays() == 40);
  // Its "not profiled" reason names the repeated ids, not only the usual causes.
  const v1::FamilyStats* g = testing::family_stats(r, kGemm);
  REQUIRE(g != nullptr);
  CHECK(g->selection_detail().find("39 launches in this process came with their thread's previous correlation id") !=
        std::string::npos);
}

TEST_CASE("graphs: always-on gives a graph's counters to a kernel whose own warm-up launch left it inconclusive",
          "[agent][graphs][always-on]") {
  // graph_mlp on the H100 (2026-12-05): the GEMM's warm-up launches before the capture were
  // launched directly; always-on profiled one of them with its first single-pass group, which
  // cannot route, and the graph's counters then skipped the GEMM for the rest of the run. Here:
  // warm-up launches of the GEMM, ranked, then only graph replays (synthetic timings).
  GraphRun run;
  AgentConfig c = always_on_top2();
  Harness h(c, run.counters());
  h.platform.config.durations_ns[kGemm] = 800000;
  REQUIRE(h.ag->start());
  uint64_t correlation = 100;
  for (int i = 0; i < 3; ++i) {
    h.platform.launch(make_launch(kGemm, ++correlation, {132, 1, 1}, {256, 1, 1}));
    h.platform.mono_ns += 1'000'000;
  }
  h.platform.deliver();
  h.ag->flush();
  for (int i = 0; i < 3; ++i) {
    h.platform.launch(make_launch(kGemm, ++correlation, {132, 1, 1}, {256, 1, 1}));
    h.platform.mono_ns += 1'000'000;
  }
  const uint64_t start = h.platform.mono_ns.load();
  while (h.platform.mono_ns.load() - start < 300'000'000'000ULL) {
    h.platform.launch_graph(kExec, kGraph, ++correlation, nodes(), kKey);
    h.platform.mono_ns += 1'000'000;
  }
  h.ag->finish();
  tools::ReadResult r = h.read();
  bool own_inconclusive = false;
  const v1::KernelProfile* last = nullptr;
  for (const v1::KernelProfile* k : kernel_records(r)) {
    if (tools::lookup(r, k->mangled_name_iid()) != kGemm || k->status() != v1::PROFILE_STATUS_PROFILED) continue;
    if (!k->has_graph_scope() && k->diagnosis().classification() == v1::CLASSIFICATION_INCONCLUSIVE) {
      own_inconclusive = true;
    }
    last = k;
  }
  CHECK(own_inconclusive);  // the case this test is about: its own launch could not route
  REQUIRE(last != nullptr);
  CHECK(last->has_graph_scope());
  CHECK(last->diagnosis().classification() != v1::CLASSIFICATION_INCONCLUSIVE);
  CHECK(last->diagnosis().classification() != v1::CLASSIFICATION_UNSPECIFIED);
}

}  // namespace test_graph_profiler
