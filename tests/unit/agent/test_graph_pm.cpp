// Graph nodes with less than half of their graph's time get counters of their own from PM sampling
// of one of the graph's launches (docs/graphs.md, "PM sampling per node"), on the fake platform.
// Synthetic throughout: the graph (a GEMM node holding 70% of it, a norm and a GELU node the rest),
// the graph's counters (a real H200 capture of cublas_gemm standing for them) and the PM values
// the fake hands out per node are made up, labelled as such.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "agent_harness.h"
#include "cutriage/triage/engine.h"
#include "pm_names.h"
#include "pm_nodes.h"
#include "record_support.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_graph_pm {

using namespace cutriage;
using namespace cutriage::testing;

namespace {

constexpr uint32_t kExec = 6;
constexpr uint32_t kGraph = 11;
const char* const kGemm = "_Z4gemmPf";
const char* const kNorm = "_Z4normPf";
const char* const kGelu = "_Z4geluPf";
const char* const kKey = "graph:11";

AgentConfig top(uint32_t n) {
  AgentConfig c;
  c.select = agent::SelectMode::kTop;
  c.select_top = n;
  return c;
}

// Synthetic graph: GEMM 700 us, norm 180 us, GELU 120 us per replay.
std::vector<FakePlatform::GraphNode> nodes() {
  return {{kGemm, 700000, 100, {132, 1, 1}, {256, 1, 1}},
          {kNorm, 180000, 101, {4096, 1, 1}, {128, 1, 1}},
          {kGelu, 120000, 102, {8192, 1, 1}, {256, 1, 1}}};
}

// Synthetic PM values per node: the norm memory-bound (DRAM 80%, SM 20%), the GELU compute-bound
// (SM 88%, DRAM 12%, the FMA pipe busy); L2 set high on both to show that it never reaches the rules.
void set_pm_values(FakeConfig& c) {
  c.pm_values[kNorm] = {{kPmSm, 20}, {kPmDram, 80}, {kPmL1, 30}, {kPmL2, 95}, {kPmFma, 5}, {kPmClock, 1.98e9}};
  c.pm_values[kGelu] = {{kPmSm, 88}, {kPmDram, 12}, {kPmL1, 15}, {kPmL2, 95}, {kPmFma, 80}, {kPmClock, 1.98e9}};
  c.pm_values[kGemm] = {{kPmSm, 90}, {kPmDram, 30}, {kPmL1, 20}, {kPmL2, 40}, {kPmClock, 1.98e9}};
}

const v1::KernelProfile* record_of(const tools::ReadResult& r, const std::vector<const v1::KernelProfile*>& ks,
                                   const std::string& mangled) {
  for (const v1::KernelProfile* k : ks) {
    if (tools::lookup(r, k->mangled_name_iid()) == mangled) return k;
  }
  return nullptr;
}

std::optional<double> metric(const tools::ReadResult& r, const v1::KernelProfile& k, const std::string& name) {
  for (const v1::Metric& m : k.metrics()) {
    if (tools::lookup(r, m.name_iid()) == name) return m.value();
  }
  return std::nullopt;
}

void replay(Harness& h, uint64_t& correlation, int n) {
  for (int i = 0; i < n; ++i) h.platform.launch_graph(kExec, kGraph, ++correlation, nodes(), kKey);
}

struct Run {
  Captured gemm = capture_of("cublas_gemm");
  FakeCounters counters() const {
    FakeCounters c;
    c.by_kernel[kKey] = gemm.metrics;
    return c;
  }
};

}  // namespace

TEST_CASE("graph PM: the small nodes get Decision 2 verdicts from their own PM samples", "[agent][graphs][pm]") {
  Run run;
  Harness h(top(3), run.counters());
  set_pm_values(h.platform.config);
  REQUIRE(h.ag->start());
  uint64_t correlation = 100;
  replay(h, correlation, 40);
  h.ag->finish();

  // One launch PM-sampled, never beside the range profiler.
  CHECK(h.platform.stats.pm_begins.load() == 1);
  CHECK(h.platform.stats.pm_ends.load() == 1);
  CHECK(h.platform.stats.pm_range_overlaps.load() == 0);
  {
    std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
    REQUIRE(h.platform.stats.pm_options.size() == 1);
    CHECK(h.platform.stats.pm_options[0].metrics == agent::pm_node_metrics());
    CHECK(h.platform.stats.pm_options[0].max_samples <= agent::GraphProfiler::kPmMaxSamples);
  }

  tools::ReadResult r = h.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  const v1::KernelProfile* gemm = record_of(r, ks, kGemm);
  const v1::KernelProfile* norm = record_of(r, ks, kNorm);
  const v1::KernelProfile* gelu = record_of(r, ks, kGelu);
  REQUIRE(gemm != nullptr);
  REQUIRE(norm != nullptr);
  REQUIRE(gelu != nullptr);

  // The GEMM holds 70%: it keeps the graph's counters.
  REQUIRE(gemm->has_graph_scope());
  CHECK(!gemm->graph_scope().has_node_sampling());
  CHECK(gemm->diagnosis().headline().find("as a whole") != std::string::npos);

  for (const v1::KernelProfile* k : {norm, gelu}) {
    REQUIRE(k->has_graph_scope());
    CHECK(k->graph_scope().share_of_graph() < 0.5);
    REQUIRE(k->graph_scope().has_node_sampling());
    const v1::NodeSampling& n = k->graph_scope().node_sampling();
    CHECK(n.samples() >= 3);
    CHECK(n.executions() == 1);
    CHECK(n.interval_ns() == 5000);
    CHECK(n.launch_samples() > n.samples());
    CHECK(n.launch_correlation_id() > 100);
    // Its own counters: trusted enough to route, the scope said in the headline and a trust note.
    CHECK(k->diagnosis().trust() != v1::TRUST_UNTRUSTED);
    CHECK(k->diagnosis().headline().find("own PM samples in graph 11") != std::string::npos);
    bool noted = false;
    for (const std::string& t : k->diagnosis().trust_notes()) noted = noted || t.find("d0.node_sampling") == 0;
    CHECK(noted);
    // No L2 value from PM reaches the rules, and nothing of the graph's counters is left.
    CHECK(!metric(r, *k, "lts__throughput.avg.pct_of_peak_sustained_elapsed"));
    CHECK(k->rejected_metrics_size() == 0);
  }
  // Each node's values are its own samples' (the straddling ones, reading 999, were dropped).
  CHECK(metric(r, *norm, "sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(20));
  CHECK(metric(r, *norm, "dram__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(80));
  CHECK(metric(r, *gelu, "sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(88));
  CHECK(metric(r, *gelu, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active") == Approx(80));
  // Decision 2 from them: the norm memory-bound, the GELU compute-bound.
  CHECK(norm->diagnosis().classification() == v1::CLASSIFICATION_MEMORY_BOUND);
  CHECK(gelu->diagnosis().classification() == v1::CLASSIFICATION_COMPUTE_BOUND);

  // Today's engine, on the record read back (as the tools and the capture tests rebuild it), gives
  // the same verdict.
  const triage::DeviceLimits limits = *triage::known_device_limits("GH100");
  for (const v1::KernelProfile* k : {norm, gelu}) {
    const triage::KernelInput in = input_from_record(r, *k, limits);
    REQUIRE(in.graph_scope);
    REQUIRE(in.graph_scope->node_sampling);
    const triage::Diagnosis again = triage::triage_kernel(in, {});
    CHECK(static_cast<int>(again.classification) == static_cast<int>(k->diagnosis().classification()));
    CHECK(again.headline == k->diagnosis().headline());
  }

  // The report says whose counters they are.
  std::string text = tools::render_report(r, {});
  // Wrapped lines joined: "\n" and the continuation indent become one space.
  for (size_t at = text.find("\n "); at != std::string::npos; at = text.find("\n ", at)) {
    size_t end = at + 1;
    while (end < text.size() && text[end] == ' ') ++end;
    text.replace(at, end - at, " ");
  }
  CHECK(text.find("this node's own PM samples") != std::string::npos);
  CHECK(text.find("over one launch of graph 11 (exec 6)") != std::string::npos);
}

TEST_CASE("graph PM: a failing PM enable gives a reason, the graph's counters stay, nothing crashes",
          "[agent][graphs][pm]") {
  Run run;
  SECTION("the sampler cannot be made (HARDWARE_BUSY)") {
    AgentConfig c = top(3);
    c.graph_pc_sampling = true;  // to see that PC sampling still follows
    Harness h(c, run.counters());
    set_pm_values(h.platform.config);
    h.platform.config.pm_sampler_status =
        collectors::Status(collectors::StatusCode::kUnavailable, "cuptiPmSamplingEnable: CUPTI_ERROR_HARDWARE_BUSY");
    REQUIRE(h.ag->start());
    uint64_t correlation = 100;
    replay(h, correlation, 40);
    h.ag->finish();
    CHECK(h.platform.stats.pm_begins.load() == 0);
    tools::ReadResult r = h.read();
    std::vector<const v1::KernelProfile*> ks = kernel_records(r);
    const v1::KernelProfile* norm = record_of(r, ks, kNorm);
    REQUIRE(norm != nullptr);
    CHECK(!norm->graph_scope().has_node_sampling());
    CHECK(norm->diagnosis().trust() == v1::TRUST_UNTRUSTED);  // d0.graph_share, as before
    CHECK(norm->status_detail().find("PM sampling could not start") != std::string::npos);
    CHECK(norm->status_detail().find("HARDWARE_BUSY") != std::string::npos);
    CHECK(h.log_text().find("PM sampling could not start") != std::string::npos);
    // PC sampling still followed.
    CHECK(h.platform.stats.pc_begins.load() == 1);
  }
  SECTION("end() fails") {
    Harness h(top(3), run.counters());
    h.platform.config.pm_end_status =
        collectors::Status(collectors::StatusCode::kInternal, "cuptiPmSamplingDecodeData: CUPTI_ERROR_UNKNOWN");
    REQUIRE(h.ag->start());
    uint64_t correlation = 100;
    replay(h, correlation, 40);
    h.ag->finish();
    CHECK(h.platform.stats.pm_begins.load() == 1);
    tools::ReadResult r = h.read();
    const v1::KernelProfile* gelu = record_of(r, kernel_records(r), kGelu);
    REQUIRE(gelu != nullptr);
    CHECK(!gelu->graph_scope().has_node_sampling());
    CHECK(gelu->status_detail().find("PM sampling failed") != std::string::npos);
  }
  SECTION("CUTRIAGE_GRAPH_PM_SAMPLING=0: no PM sampling") {
    AgentConfig c = top(3);
    c.graph_pm_sampling = false;
    Harness h(c, run.counters());
    REQUIRE(h.ag->start());
    uint64_t correlation = 100;
    replay(h, correlation, 40);
    h.ag->finish();
    CHECK(h.platform.stats.pm_begins.load() == 0);
  }
}

namespace {

// Waits (up to 4 s) for the flush thread to bring the trace to `paused`.
bool wait_for_trace(FakePlatform& p, bool paused) {
  for (int i = 0; i < 2000 && p.trace_paused.load() != paused; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return p.trace_paused.load() == paused;
}

}  // namespace

TEST_CASE("graph PM: always-on samples a launch only while the trace runs, whose executions the samples need",
          "[agent][graphs][pm][trace_duty]") {
  Run run;
  AgentConfig c = top(3);
  c.mode = agent::AgentMode::kAlwaysOn;
  c.budget_fraction = 0.2;
  c.summary = false;
  c.trace_flush_ms = 5;  // the flush thread switches the trace: on 1 s of every 4 s
  c.trace_duty = 0.25;
  c.trace_period_s = 4;
  Harness h(c, run.counters());
  set_pm_values(h.platform.config);
  const uint64_t start = h.platform.mono_ns.load();
  REQUIRE(h.ag->start());
  uint64_t correlation = 100;
  // The first traced second: the graph is traced, ranked and bridged to its exec.
  for (int i = 0; i < 20; ++i) {
    replay(h, correlation, 1);
    h.platform.mono_ns += 10'000'000;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // The pause: the counter stages go on over the application's launches (they read no trace),
  // but a PM-sampled launch there would have no executions to attribute its samples to.
  h.platform.mono_ns = start + 1'500'000'000;
  REQUIRE(wait_for_trace(h.platform, true));
  const int begins_before = h.platform.stats.begins.load();
  for (int i = 0; i < 2000; ++i) {  // two seconds of replays, a millisecond apart
    replay(h, correlation, 1);
    h.platform.mono_ns += 1'000'000;
  }
  CHECK(h.platform.stats.begins.load() > begins_before);  // the stages ran in the pause
  CHECK(h.platform.stats.pm_begins.load() == 0);
  // The next traced window: one launch sampled, and attributed.
  h.platform.mono_ns = start + 4'100'000'000;
  REQUIRE(wait_for_trace(h.platform, false));
  replay(h, correlation, 5);
  h.ag->finish();
  CHECK(h.platform.stats.pm_begins.load() == 1);
  tools::ReadResult r = h.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  for (const char* name : {kNorm, kGelu}) {
    INFO(name);
    const v1::KernelProfile* k = record_of(r, ks, name);
    REQUIRE(k != nullptr);
    REQUIRE(k->has_graph_scope());
    CHECK(k->graph_scope().has_node_sampling());
  }
}

// ---- attribution (pure) ------------------------------------------------------------------------

namespace {

// Synthetic batch: one metric (SM throughput), samples given as (start, end, value).
collectors::PmSampleBatch batch_of(const std::vector<std::tuple<uint64_t, uint64_t, double>>& samples) {
  collectors::PmSampleBatch b;
  b.metrics = {kPmSm, kPmL2};
  b.interval_ns = 10;
  for (const auto& [s, e, v] : samples) b.samples.push_back({s, e, {v, 50.0}});
  return b;
}

}  // namespace

TEST_CASE("graph PM: a sample counts only when it lies wholly inside one execution", "[agent][graphs][pm]") {
  // Synthetic: family 1 runs [100, 200) and [300, 400), family 2 runs [200, 300).
  const std::vector<agent::NodeExecution> ex = {{1, 100, 200}, {2, 200, 300}, {1, 300, 400}};
  const collectors::PmSampleBatch b = batch_of({
      {90, 100, 999},   // before the launch: idle
      {100, 110, 10},   // inside family 1
      {190, 200, 30},   // inside family 1, ending at its end
      {195, 205, 999},  // straddles 1 -> 2: dropped
      {200, 210, 70},   // inside family 2
      {290, 310, 999},  // straddles 2 -> 1: dropped
      {350, 360, 20},   // inside family 1's second execution
      {0, 1000, 999},   // longer than any node (the first sample after Start): dropped
  });
  const std::map<uint64_t, agent::FamilyPmValues> got = agent::attribute_pm_samples(b, ex);
  REQUIRE(got.count(1) == 1);
  REQUIRE(got.count(2) == 1);
  CHECK(got.at(1).samples == 3);
  CHECK(got.at(1).executions == 2);
  CHECK(got.at(2).samples == 1);
  CHECK(got.at(2).executions == 1);
  CHECK(got.at(1).metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(20));
  CHECK(got.at(2).metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(70));
  // PM's L2 is sampled but never mapped to the rules' name.
  CHECK(!got.at(1).metrics.has("lts__throughput.avg.pct_of_peak_sustained_elapsed"));
  CHECK(agent::samples_in_launch(b, ex) == 7);  // every sample overlapping [100, 400)
}

TEST_CASE("graph PM: NaN values are left out of a mean, and a sample inside two families' executions is dropped",
          "[agent][graphs][pm]") {
  const std::vector<agent::NodeExecution> ex = {{1, 0, 100}, {2, 50, 150}};  // synthetic: concurrent nodes
  const collectors::PmSampleBatch b = batch_of({{10, 20, 40}, {20, 30, std::nan("")}, {60, 70, 999}, {110, 120, 60}});
  const auto got = agent::attribute_pm_samples(b, ex);
  CHECK(got.at(1).samples == 2);
  CHECK(got.at(1).metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(40));
  CHECK(got.at(2).samples == 1);
}

TEST_CASE("graph PM: the ALU pipe and the issue rate reach the rules' names, the warps do not",
          "[agent][graphs][pm]") {
  // Synthetic values; the rows' evidence is the H100 probe (tests/data/graphs/pm-probe-alu-issue.txt).
  const std::vector<agent::NodeExecution> ex = {{1, 0, 100}};
  collectors::PmSampleBatch b;
  b.metrics = {kPmSm, kPmAlu, kPmIssue, "TPC.TriageCompute.tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed"};
  b.interval_ns = 10;
  b.samples.push_back({10, 20, {80.0, 70.0, 66.0, 40.0}});
  b.samples.push_back({30, 40, {82.0, 74.0, 70.0, 42.0}});
  const auto got = agent::attribute_pm_samples(b, ex);
  const triage::MetricSet& m = got.at(1).metrics;
  CHECK(m.get("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active") == Approx(72));
  CHECK(m.get("sm__inst_issued.avg.pct_of_peak_sustained_elapsed") == Approx(68));
  // Per elapsed cycle in PM, per active cycle in the rules: not mapped (d2.issue_starvation).
  CHECK(!m.has("smsp__issue_active.avg.pct_of_peak_sustained_active"));
  CHECK(!m.has("sm__warps_active.avg.pct_of_peak_sustained_active"));
}

TEST_CASE("graph PM: a sample inside one family's execution that another family's overlaps in part is dropped",
          "[agent][graphs][pm]") {
  // Synthetic: family 2 starts while family 1 still runs (a concurrent stream, or the next kernel
  // let in early). [40, 55) lies inside family 1's execution, but its last 5 ns are family 2's
  // too; [95, 105) starts inside family 1 and ends inside family 2. Only the clean ones count.
  const std::vector<agent::NodeExecution> ex = {{1, 0, 100}, {2, 50, 150}};
  const collectors::PmSampleBatch b = batch_of({{10, 20, 40}, {40, 55, 999}, {120, 130, 60}, {95, 105, 999}});
  const auto got = agent::attribute_pm_samples(b, ex);
  CHECK(got.at(1).samples == 1);
  CHECK(got.at(1).metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(40));
  CHECK(got.at(2).samples == 1);
  CHECK(got.at(2).metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(60));
}

TEST_CASE("graph PM: the interval grows only when a replay would not fit the image", "[agent][graphs][pm]") {
  CHECK(agent::plan_pm_sampling(1e6, 1024).interval_ns == 5000);   // 200 samples of 5 us
  CHECK(agent::plan_pm_sampling(0, 1024).interval_ns == 5000);     // unknown replay time
  const agent::PmPlan long_graph = agent::plan_pm_sampling(20e6, 1024);  // 20 ms
  CHECK(static_cast<double>(long_graph.interval_ns) >= 20e6 / 512);
  CHECK(long_graph.max_samples == 1024);
}

namespace {
// Set in the child before exit(); read by its exit handler.
bool g_tables_whole = false;
void check_tables_at_exit() {
  const std::vector<agent::PmMapping>& m = agent::pm_rule_mapping();
  // The first row's PM name is what a freed buffer loses first (the allocator's own pointer goes
  // there): on the H200 exactly that row vanished from the end-of-run records.
  g_tables_whole = !m.empty() && m.front().pm_name == "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed" &&
                   m.front().rule_name == "sm__throughput.avg.pct_of_peak_sustained_elapsed" &&
                   agent::pm_node_metrics().front() == m.front().pm_name;
  // The verdict is the child's exit status: 0 only when both tables read whole after the static
  // destructors ran.
  std::_Exit(g_tables_whole ? 0 : 3);
}
}  // namespace

TEST_CASE("graph PM: the agent samples the one-pass set found offline for GH100, and maps only names in it",
          "[agent][graphs][pm]") {
  // tests/data/graphs/pm-metrics-gh100.txt, section 6 (tests/gpu/pm_metrics_list.sh, offline from
  // CUPTI's tables): the greedy one-pass set. A name added to the agent's list without rerunning
  // that tool could make the configuration two passes, which PM sampling refuses.
  std::ifstream in(std::string(CUTRIAGE_TEST_DATA_DIR) + "/graphs/pm-metrics-gh100.txt");
  REQUIRE(in);
  std::vector<std::string> listed;
  bool inside_set = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("greedy one-pass set, ", 0) == 0) {
      inside_set = true;
      continue;
    }
    if (!inside_set) continue;
    if (line.rfind("  ", 0) != 0) break;
    listed.push_back(line.substr(2));
  }
  REQUIRE(listed.size() == 20);
  CHECK(agent::pm_node_metrics() == listed);
  const std::set<std::string> sampled(listed.begin(), listed.end());
  for (const agent::PmMapping& m : agent::pm_rule_mapping()) {
    INFO(m.pm_name);
    CHECK(sampled.count(std::string(m.pm_name)) == 1);
  }
}

TEST_CASE("graph PM: the metric tables outlive static destruction (the agent attributes at exit)",
          "[agent][graphs][pm]") {
  // The injected agent writes its last records from an exit handler, which runs after the static
  // destructors of everything first used after the handler was registered. A child process
  // registers the check first, then uses the tables, then exits: the check runs last.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (std::atexit(check_tables_at_exit) != 0) std::_Exit(4);
    (void)agent::pm_rule_mapping();
    (void)agent::pm_node_metrics();
    std::exit(0);  // NOLINT(concurrency-mt-unsafe): the forked child has one thread; exit() runs the handler under test
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace test_graph_pm
