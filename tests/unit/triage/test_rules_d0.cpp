// Decision 0 rules, one at a time. Inputs are synthetic.
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d0 {

using namespace cutriage::triage;

namespace {

CheckResult run_one(std::string_view id, const KernelInput& k, const Thresholds& t = {}) {
  const Rule* r = find_rule(id);
  REQUIRE(r != nullptr);
  MetricSet m = k.metrics;
  auto lr = add_launch_metrics(k, m);
  add_derived_metrics(m);
  return run_rule(*r, k, m, lr.stats, t);
}

KernelInput with_duration(double ns, std::string unit = "nsecond") {
  KernelInput k;
  k.metrics.set("gpu__time_duration.sum", ns, std::move(unit));
  return k;
}

}  // namespace

TEST_CASE("d0.duration_divergence (synthetic)", "[d0]") {
  const Rule* r = find_rule("d0.duration_divergence");
  REQUIRE(r != nullptr);
  CHECK(r->blocking);
  KernelInput k = with_duration(3000);
  k.unprofiled_durations_ns = {1000, 1100, 900};
  auto c = run_one("d0.duration_divergence", k);
  CHECK(c.outcome == Outcome::kFired);
  REQUIRE(c.finding.has_value());
  CHECK(c.finding->limiter == Limiter::kUntrustedMetrics);

  k = with_duration(1500);
  k.unprofiled_durations_ns = {1000};
  CHECK(run_one("d0.duration_divergence", k).outcome == Outcome::kNotFired);

  // Units: 3 us against 1000 ns is 3x.
  k = with_duration(3.0, "usecond");
  k.unprofiled_durations_ns = {1000};
  CHECK(run_one("d0.duration_divergence", k).outcome == Outcome::kFired);

  // Override: 3x tolerated.
  Thresholds t;
  t.set("d0.duration_divergence.max_ratio", 4.0);
  CHECK(run_one("d0.duration_divergence", k, t).outcome == Outcome::kNotFired);
}

TEST_CASE("d0.duration_divergence not evaluated without unprofiled timing or duration", "[d0]") {
  auto c = run_one("d0.duration_divergence", with_duration(3000));
  CHECK(c.outcome == Outcome::kNotEvaluated);
  CHECK(c.reason.find("unprofiled") != std::string::npos);
  KernelInput k;
  k.unprofiled_durations_ns = {1000};
  auto c2 = run_one("d0.duration_divergence", k);
  CHECK(c2.outcome == Outcome::kNotEvaluated);
  CHECK(c2.reason.find("gpu__time_duration.sum") != std::string::npos);
}

TEST_CASE("d0.metric_out_of_range (synthetic)", "[d0]") {
  KernelInput k;
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 150, "%");
  auto c = run_one("d0.metric_out_of_range", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("sm__throughput") != std::string::npos);

  // A negative counter the verdict rests on blocks; one no rule reads does not (real H200
  // captures show small negative derived counters, e.g. lts__t_requests_op_red.sum = -3072).
  KernelInput neg;
  neg.metrics.set("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", -5);
  CHECK(run_one("d0.metric_out_of_range", neg).outcome == Outcome::kFired);
  KernelInput unused_neg;
  unused_neg.metrics.set("lts__t_requests_op_red.sum", -3072);
  CHECK(run_one("d0.metric_out_of_range", unused_neg).outcome == Outcome::kNotFired);

  // Max rollups overshoot on tiny grids (seen: 229.6% on a 32-block launch): noted, not blocking.
  KernelInput max_rollup;
  max_rollup.metrics.set("sm__pipe_alu_cycles_active.max.pct_of_peak_sustained_active", 229.6, "%");
  CHECK(run_one("d0.metric_out_of_range", max_rollup).outcome == Outcome::kNotFired);
  // Said, but no caveat: no verdict reads a max rollup (issue 23).
  const CheckResult noted = run_one("d0.metric_slight_overshoot", max_rollup);
  CHECK(noted.outcome == Outcome::kNotFired);
  CHECK(noted.reason.find("sm__pipe_alu_cycles_active.max.pct_of_peak_sustained_active = 229.6") != std::string::npos);

  KernelInput slight;
  slight.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 104, "%");
  CHECK(run_one("d0.metric_out_of_range", slight).outcome == Outcome::kNotFired);

  CHECK(run_one("d0.metric_out_of_range", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d0.metric_slight_overshoot (synthetic)", "[d0]") {
  KernelInput k;
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 104, "%");
  CHECK(run_one("d0.metric_slight_overshoot", k).outcome == Outcome::kFired);
  CHECK_FALSE(find_rule("d0.metric_slight_overshoot")->blocking);
  KernelInput ok;
  ok.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 99, "%");
  CHECK(run_one("d0.metric_slight_overshoot", ok).outcome == Outcome::kNotFired);
  // A hit rate a hair above 100% (a cuBLAS GEMM's L2 write hit rate on the H200) is no caveat.
  KernelInput hit;
  hit.metrics.set("lts__t_sector_op_write_hit_rate.pct", 100.02, "%");
  CHECK(run_one("d0.metric_slight_overshoot", hit).outcome == Outcome::kNotFired);
  CHECK(run_one("d0.metric_slight_overshoot", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d0.metric_contradiction (synthetic)", "[d0]") {
  KernelInput k;
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 70, "%");
  k.metrics.set("smsp__issue_active.avg.pct_of_peak_sustained_active", 0.2, "%");
  CHECK(run_one("d0.metric_contradiction", k).outcome == Outcome::kFired);

  k.metrics.set("smsp__issue_active.avg.pct_of_peak_sustained_active", 30, "%");
  CHECK(run_one("d0.metric_contradiction", k).outcome == Outcome::kNotFired);

  KernelInput mem;
  mem.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 80, "%");
  mem.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 0.1, "%");
  mem.metrics.set("lts__throughput.avg.pct_of_peak_sustained_elapsed", 0.2, "%");
  mem.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 0.3, "%");
  CHECK(run_one("d0.metric_contradiction", mem).outcome == Outcome::kFired);

  CHECK(run_one("d0.metric_contradiction", KernelInput{}).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d0.collection_settings", "[d0]") {
  KernelInput k;
  CHECK(run_one("d0.collection_settings", k).outcome == Outcome::kNotEvaluated);
  k.collection.replay_mode = ReplayMode::kRange;
  k.collection.clock_control = ClockControl::kLocked;
  CHECK(run_one("d0.collection_settings", k).outcome == Outcome::kFired);
  k.collection.replay_mode = ReplayMode::kKernel;
  k.collection.clock_control = ClockControl::kNone;
  auto c = run_one("d0.collection_settings", k);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(c.reason.find("clock control none") != std::string::npos);
  k.collection.cache_control = "none";
  k.collection.passes = 12;
  CHECK(run_one("d0.collection_settings", k).outcome == Outcome::kFired);
  CHECK_FALSE(find_rule("d0.collection_settings")->blocking);
}

TEST_CASE("d0.build_config", "[d0]") {
  KernelInput k;
  CHECK(run_one("d0.build_config", k).outcome == Outcome::kNotEvaluated);
  k.collection.debug_build = false;
  k.collection.has_line_info = true;
  CHECK(run_one("d0.build_config", k).outcome == Outcome::kNotFired);
  k.collection.has_line_info = false;
  CHECK(run_one("d0.build_config", k).outcome == Outcome::kFired);
  k.collection.has_line_info = true;
  k.collection.debug_build = true;
  CHECK(run_one("d0.build_config", k).outcome == Outcome::kFired);
  CHECK_FALSE(find_rule("d0.build_config")->blocking);
}

TEST_CASE("d0.duration_divergence names the likely causes, with the clock when measured (synthetic)", "[d0]") {
  KernelInput k = with_duration(5000);
  k.unprofiled_durations_ns = {1000, 1000};
  DeviceLimits d;
  d.sm_clock_hz = 1.98e9;
  k.device_limits = d;
  k.metrics.set("sm__cycles_elapsed.avg.per_second", 1.2e9, "/second");
  auto c = run_one("d0.duration_divergence", k);
  REQUIRE(c.outcome == Outcome::kFired);
  REQUIRE(c.finding.has_value());
  CHECK(c.finding->next_action.find("1200 MHz under the profiler, peak 1980 MHz") != std::string::npos);
  CHECK(c.finding->next_action.find("caches") != std::string::npos);
  CHECK(c.finding->next_action.find("overlapped other kernels") != std::string::npos);
}

TEST_CASE("d0.profiled_clock (synthetic)", "[d0]") {
  const Rule* r = find_rule("d0.profiled_clock");
  REQUIRE(r != nullptr);
  CHECK_FALSE(r->blocking);  // a slow clock makes times suspect, not the percent-of-peak numbers
  KernelInput k;
  DeviceLimits d;
  d.sm_clock_hz = 1.98e9;
  k.device_limits = d;
  k.metrics.set("sm__cycles_elapsed.avg.per_second", 1.0e9, "/second");
  auto c = run_one("d0.profiled_clock", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("1000 MHz") != std::string::npos);
  k.metrics.set("sm__cycles_elapsed.avg.per_second", 1.9e9, "/second");
  CHECK(run_one("d0.profiled_clock", k).outcome == Outcome::kNotFired);
  k.device_limits.reset();  // peak unknown
  auto n = run_one("d0.profiled_clock", k);
  CHECK(n.outcome == Outcome::kNotEvaluated);
  CHECK(n.reason.find("peak") != std::string::npos);
  KernelInput none;  // not measured
  CHECK(run_one("d0.profiled_clock", none).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d0.duration_divergence tolerates the profiler's fixed cost on tiny kernels (synthetic)", "[d0]") {
  // The H200 case: 1.70 us profiled, 0.80 us traced: 2.1x, but 0.9 us apart.
  KernelInput k = with_duration(1700);
  k.unprofiled_durations_ns = {800, 790, 810};
  auto c = run_one("d0.duration_divergence", k);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(c.reason.find("fixed cost") != std::string::npos);
  // The same ratio on a longer kernel is a real divergence.
  k = with_duration(17000);
  k.unprofiled_durations_ns = {8000};
  CHECK(run_one("d0.duration_divergence", k).outcome == Outcome::kFired);
}

TEST_CASE("d0.pc_samples_dropped (synthetic)", "[d0][pc]") {
  const Rule* r = find_rule("d0.pc_samples_dropped");
  REQUIRE(r != nullptr);
  CHECK_FALSE(r->blocking);  // lost samples make the per-line shares approximate, not the counters

  PcSampleSummary s;
  s.total_samples = 100000;
  s.sampling_period_log2 = 10;
  PcSampleLine line;
  line.samples_by_reason = {{"long_scoreboard", 90000}, {"selected", 8000}};
  s.lines.push_back(line);

  // 2,000 of 100,000 dropped: 2% > 1%.
  KernelInput k;
  s.dropped_samples = 2000;
  k.pc_samples = s;
  auto c = run_one("d0.pc_samples_dropped", k);
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("2000 of 100000 PC samples dropped (2.00%)") != std::string::npos);
  CHECK(c.reason.find("2^10 cycles") != std::string::npos);
  REQUIRE(c.finding.has_value());
  CHECK(c.finding->limiter == Limiter::kUntrustedMetrics);
  CHECK(c.finding->next_action.find("2^11 cycles or more") != std::string::npos);

  // 500 of 100,000: 0.5%, below the threshold; named but not firing.
  k.pc_samples->dropped_samples = 500;
  auto ok = run_one("d0.pc_samples_dropped", k);
  CHECK(ok.outcome == Outcome::kNotFired);
  CHECK(ok.reason.find("500 of 100000") != std::string::npos);
  Thresholds strict;
  strict.set("d0.pc_samples_dropped.max_dropped_share", 0.001);
  CHECK(run_one("d0.pc_samples_dropped", k, strict).outcome == Outcome::kFired);

  // A full hardware buffer fires whatever the count.
  k.pc_samples->dropped_samples = 0;
  k.pc_samples->hardware_buffer_full = true;
  auto full = run_one("d0.pc_samples_dropped", k);
  CHECK(full.outcome == Outcome::kFired);
  CHECK(full.reason.find("hardware buffer was full") != std::string::npos);

  // A writer that left the total out: the share is of what was kept plus what was lost.
  KernelInput no_total;
  PcSampleSummary s2 = s;
  s2.total_samples = 0;
  s2.dropped_samples = 2000;
  no_total.pc_samples = s2;
  CHECK(run_one("d0.pc_samples_dropped", no_total).reason.find("2000 of 100000") != std::string::npos);

  // No samples: nothing to lose (not a caveat on every kernel); failed sampling: not evaluated.
  CHECK(run_one("d0.pc_samples_dropped", KernelInput{}).outcome == Outcome::kNotFired);
  KernelInput failed;
  PcSampleSummary f;
  f.error = "CUPTI_ERROR_OUT_OF_MEMORY";
  failed.pc_samples = f;
  auto fc = run_one("d0.pc_samples_dropped", failed);
  CHECK(fc.outcome == Outcome::kNotEvaluated);
  CHECK(fc.reason == "PC sampling failed: CUPTI_ERROR_OUT_OF_MEMORY");
}

TEST_CASE("d0.assembled_launches (synthetic)", "[d0]") {
  const Rule* r = find_rule("d0.assembled_launches");
  REQUIRE(r != nullptr);
  CHECK(r->blocking);
  KernelInput k = with_duration(100000);
  CHECK(run_one("d0.assembled_launches", k).outcome == Outcome::kNotFired);  // one replayed launch
  auto launch = [](uint64_t index, uint32_t grid_x, double ns) {
    AssembledLaunch l;
    l.launch_index = index;
    l.grid = Dim3{grid_x, 1, 1};
    l.block = Dim3{256, 1, 1};
    l.duration_ns = ns;
    l.metric_group = static_cast<uint32_t>(index);
    return l;
  };
  k.assembled_launches = {launch(10, 100, 100000), launch(20, 100, 120000), launch(30, 100, 95000)};
  CheckResult c = run_one("d0.assembled_launches", k);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(c.reason.find("3 launches") != std::string::npos);

  k.assembled_launches[1].duration_ns = 400000;  // 4.2x the shortest
  c = run_one("d0.assembled_launches", k);
  CHECK(c.outcome == Outcome::kFired);
  REQUIRE(c.finding.has_value());
  CHECK(c.finding->limiter == Limiter::kUntrustedMetrics);

  k.assembled_launches[1].duration_ns = 100000;
  k.assembled_launches[2].grid.x = 50;  // another launch configuration
  c = run_one("d0.assembled_launches", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("launch 30 grid (50,1,1)") != std::string::npos);

  // Tiny kernels: 1.5x apart but within the fixed cost.
  k.assembled_launches = {launch(1, 100, 800), launch(2, 100, 1600)};
  CHECK(run_one("d0.assembled_launches", k).outcome == Outcome::kNotFired);
  // Some durations missing (graph launches while the trace was paused): compared among those
  // measured, and the reason says how many those are.
  k.assembled_launches = {launch(1, 100, 100000), launch(2, 100, 0), launch(3, 100, 101000)};
  c = run_one("d0.assembled_launches", k);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(c.reason.find("3 launches of one launch configuration (2 with a measured duration), durations 100.00 to "
                      "101.00 us") != std::string::npos);
  // Durations missing: cannot tell.
  k.assembled_launches = {launch(1, 100, 0), launch(2, 100, 0)};
  CHECK(run_one("d0.assembled_launches", k).outcome == Outcome::kNotEvaluated);

  // Launches of an earlier process (resumed): counted in the reason, and held to the same test.
  k.assembled_launches = {launch(10, 100, 100000), launch(20, 100, 101000), launch(5, 100, 99000)};
  k.assembled_launches[0].earlier_pid = 4242;
  k.assembled_launches[1].earlier_pid = 4242;
  c = run_one("d0.assembled_launches", k);
  CHECK(c.outcome == Outcome::kNotFired);
  CHECK(c.reason.find("3 launches (2 in an earlier process)") != std::string::npos);
  k.assembled_launches[2].duration_ns = 300000;  // this process's launch took 3x as long
  CHECK(run_one("d0.assembled_launches", k).outcome == Outcome::kFired);
}

TEST_CASE("d0.graph_share and d0.graph_scope (synthetic)", "[d0][graphs]") {
  const Rule* share = find_rule("d0.graph_share");
  const Rule* scope = find_rule("d0.graph_scope");
  REQUIRE(share != nullptr);
  REQUIRE(scope != nullptr);
  CHECK(share->blocking);
  CHECK(!scope->blocking);
  KernelInput k = with_duration(100000);
  // Counters of the kernel's own launch: neither applies.
  CHECK(run_one("d0.graph_share", k).outcome == Outcome::kNotFired);
  CHECK(run_one("d0.graph_scope", k).outcome == Outcome::kNotFired);

  GraphScope g;
  g.graph_id = 7;
  g.exec_id = 3;
  g.replays_profiled = 9;
  g.other_families = 2;
  g.share_of_graph = 0.2;  // a minority of the graph's kernel time
  k.graph_scope = g;
  CheckResult c = run_one("d0.graph_share", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("graph 7") != std::string::npos);
  CHECK(c.reason.find("20.0%") != std::string::npos);
  CHECK(run_one("d0.graph_scope", k).outcome == Outcome::kFired);

  k.graph_scope->share_of_graph = 0.76;  // the graph's dominant kernel: trusted, but noted
  CHECK(run_one("d0.graph_share", k).outcome == Outcome::kNotFired);
  c = run_one("d0.graph_scope", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("over 9 replays") != std::string::npos);

  k.graph_scope->share_of_graph = 0.97;  // practically alone in its graph
  CHECK(run_one("d0.graph_scope", k).outcome == Outcome::kNotFired);

  // The threshold is the rule's, overridable like any other.
  Thresholds strict;
  strict.set("d0.graph_share.min_share", 0.8);
  k.graph_scope->share_of_graph = 0.76;
  CHECK(run_one("d0.graph_share", k, strict).outcome == Outcome::kFired);

  // Through the engine: the minority kernel's diagnosis is untrusted, the dominant one's headline
  // names the graph.
  k.graph_scope->share_of_graph = 0.2;
  CHECK(triage_kernel(k).trust == Trust::kUntrusted);
  k.graph_scope->share_of_graph = 0.76;
  const Diagnosis d = triage_kernel(k);
  REQUIRE(d.trust != Trust::kUntrusted);
  CHECK(d.headline.find("graph 7 as a whole (this kernel 76% of it)") != std::string::npos);
}

TEST_CASE("d0.node_sampling: a graph node's own PM samples (synthetic)", "[d0][graphs][pm]") {
  const Rule* rule = find_rule("d0.node_sampling");
  REQUIRE(rule != nullptr);
  CHECK(!rule->blocking);
  // Synthetic: a node with 18% of its graph, its counters its own PM samples (SM 20%, DRAM 80%,
  // L1 30%), no gpu__compute_memory_throughput and no L2, as the agent maps them.
  KernelInput k = with_duration(180000);
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 20, "%");
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 80, "%");
  k.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 30, "%");
  GraphScope g;
  g.graph_id = 7;
  g.exec_id = 3;
  g.share_of_graph = 0.18;
  g.other_families = 2;
  g.replays_profiled = 1;
  k.graph_scope = g;
  CHECK(run_one("d0.node_sampling", k).outcome == Outcome::kNotFired);  // the graph's counters: not this rule's
  CHECK(triage_kernel(k).trust == Trust::kUntrusted);                   // d0.graph_share blocks them

  NodeSampling n;
  n.samples = 30;
  n.interval_ns = 5000;
  n.launch_correlation_id = 77;
  n.launch_samples = 210;
  n.executions = 1;
  k.graph_scope->node_sampling = n;
  // Its own samples: the share no longer blocks, the graph-scope note does not apply, the trust
  // note says how many samples.
  CHECK(run_one("d0.graph_share", k).outcome == Outcome::kNotFired);
  CHECK(run_one("d0.graph_scope", k).outcome == Outcome::kNotFired);
  CheckResult c = run_one("d0.node_sampling", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("30 samples of 5.0 us") != std::string::npos);
  CHECK(c.reason.find("graph 7") != std::string::npos);
  CHECK(c.reason.find("L2 not sampled") != std::string::npos);

  const Diagnosis d = triage_kernel(k);
  REQUIRE(d.trust != Trust::kUntrusted);
  CHECK(d.classification == Classification::kMemoryBound);  // DRAM 80 stands for memory, SM 20
  CHECK(d.headline.find("own PM samples in graph 7 (30 samples)") != std::string::npos);
  bool stand_in = false;
  for (const std::string& t : d.trust_notes) stand_in = stand_in || t.find("stood in for by the larger") != std::string::npos;
  CHECK(stand_in);

  // Compute-bound from the same scope: SM 88, DRAM 12, L1 15.
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 88, "%");
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 12, "%");
  k.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 15, "%");
  CHECK(triage_kernel(k).classification == Classification::kComputeBound);

  // Too few samples: a caveat with the count, still not blocking.
  k.graph_scope->node_sampling->samples = 2;
  c = run_one("d0.node_sampling", k);
  CHECK(c.outcome == Outcome::kFired);
  CHECK(c.reason.find("(< 3)") != std::string::npos);
  CHECK(triage_kernel(k).trust != Trust::kUntrusted);
  // One sample: the headline's count reads in the singular.
  k.graph_scope->node_sampling->samples = 1;
  CHECK(triage_kernel(k).headline.find("own PM samples in graph 7 (1 sample)") != std::string::npos);

  // A measured memory throughput is never replaced by the stand-in.
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40, "%");
  MetricSet m = k.metrics;
  CHECK(add_node_sampling_stand_ins(k, m).empty());
  CHECK(m.get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") == Approx(40));
}

}  // namespace test_rules_d0
