// Engine routing: one test per branch of Decision 2, the D5 -> D3 re-entry, trust, inconclusive
// inputs and threshold overrides. Inputs are synthetic metric sets on a GH100 launch.
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "catch.h"
#include "cutriage/triage/engine.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_engine_routing {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

using namespace cutriage::triage;

namespace {

// 4 full waves of 256-thread blocks on GH100, with the D0 inputs that make it trusted.
KernelInput kernel(double sm, double mem, double occ = 75, double issue = 40, uint32_t grid = 4224) {
  KernelInput k;
  LaunchConfig c;
  c.grid = {grid, 1, 1};
  c.block = {256, 1, 1};
  c.registers_per_thread = 32;
  k.launch = c;
  k.device_limits = known_device_limits("GH100");
  k.device_limits->sm_clock_hz = 1.98e9;  // the H200's peak (CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", sm, "%");
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", mem, "%");
  k.metrics.set("sm__warps_active.avg.pct_of_peak_sustained_active", occ, "%");
  k.metrics.set("smsp__issue_active.avg.pct_of_peak_sustained_active", issue, "%");
  k.metrics.set("gpu__time_duration.sum", 10000, "nsecond");
  // Near the peak clock, as a trusted run would be (d0.profiled_clock).
  k.metrics.set("sm__cycles_elapsed.avg.per_second", 0.95 * k.device_limits->sm_clock_hz, "/second");
  k.unprofiled_durations_ns = {9500, 10200};
  k.collection.replay_mode = ReplayMode::kKernel;
  k.collection.clock_control = ClockControl::kNone;
  k.collection.debug_build = false;
  k.collection.has_line_info = true;
  return k;
}

std::vector<Decision> decisions(const Diagnosis& d) {
  std::vector<Decision> out;
  for (const auto& v : d.path) out.push_back(v.decision);
  return out;
}

bool before(const Diagnosis& d, Decision a, Decision b) {
  auto p = decisions(d);
  auto ia = std::find(p.begin(), p.end(), a);
  auto ib = std::find(p.begin(), p.end(), b);
  return ia != p.end() && ib != p.end() && ia < ib;
}

std::string because(const Diagnosis& d, Decision dec) {
  for (const auto& v : d.path) {
    if (v.decision == dec) return v.entered_because;
  }
  return "(not visited)";
}

}  // namespace

TEST_CASE("route: both low -> Decision 3, latency-bound", "[routing]") {
  Diagnosis d = triage_kernel(kernel(30, 25));
  CHECK(d.trust == Trust::kTrusted);
  CHECK(d.classification == Classification::kLatencyBound);
  CHECK(d.visited(Decision::kD3IssueStalls));
  CHECK_FALSE(d.visited(Decision::kD4ComputePipe));
  CHECK_FALSE(d.visited(Decision::kD5MemoryMechanism));
  CHECK(before(d, Decision::kD2Regime, Decision::kD3IssueStalls));
  CHECK(before(d, Decision::kD3IssueStalls, Decision::kD6SourceLines));
  CHECK(decisions(d).back() == Decision::kD7HardwareLimit);
  CHECK(because(d, Decision::kD3IssueStalls).find("30.0%") != std::string::npos);
  CHECK(d.headline.rfind("latency_bound: ", 0) == 0);
}

TEST_CASE("route: compute >> memory -> Decision 4, compute-bound", "[routing]") {
  Diagnosis d = triage_kernel(kernel(75, 30));
  CHECK(d.classification == Classification::kComputeBound);
  CHECK(d.visited(Decision::kD4ComputePipe));
  CHECK_FALSE(d.visited(Decision::kD3IssueStalls));
  CHECK_FALSE(d.visited(Decision::kD5MemoryMechanism));
  CHECK(d.headline.rfind("compute_bound: ", 0) == 0);
}

TEST_CASE("route: memory >> compute -> Decision 5, memory-bound", "[routing]") {
  Diagnosis d = triage_kernel(kernel(30, 75));
  CHECK(d.classification == Classification::kMemoryBound);
  CHECK(d.visited(Decision::kD5MemoryMechanism));
  CHECK_FALSE(d.visited(Decision::kD4ComputePipe));
}

TEST_CASE("route: both high -> Decisions 4 and 7, saturated, D7 confirms the limit", "[routing]") {
  KernelInput k = kernel(85, 90);
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 91, "%");
  Diagnosis d = triage_kernel(k);
  CHECK(d.classification == Classification::kSaturated);
  CHECK(d.visited(Decision::kD4ComputePipe));
  CHECK(d.visited(Decision::kD7HardwareLimit));
  CHECK_FALSE(d.visited(Decision::kD5MemoryMechanism));
  CHECK(d.at_hardware_limit);
  CHECK(d.fired("d7.limiter_near_peak"));
}

TEST_CASE("route: ambiguous throughputs use the occupancy x utilization quadrant", "[routing]") {
  // SM 58%, memory 70%: neither low, high nor 20 points apart.
  Diagnosis lowlow = triage_kernel(kernel(58, 70, 40));
  CHECK(lowlow.check("d2.occupancy_utilization_quadrant")->finding->detail == "low_occupancy_low_utilization");
  CHECK(lowlow.classification == Classification::kLatencyBound);
  CHECK(lowlow.visited(Decision::kD3IssueStalls));

  Diagnosis highlow = triage_kernel(kernel(58, 70, 80));
  CHECK(highlow.classification == Classification::kLatencyBound);

  Diagnosis lowhigh = triage_kernel(kernel(70, 65, 40));
  CHECK(lowhigh.classification == Classification::kComputeBound);
  CHECK(lowhigh.visited(Decision::kD4ComputePipe));

  Diagnosis highhigh_mem = triage_kernel(kernel(70, 75, 80));
  CHECK(highhigh_mem.classification == Classification::kMemoryBound);
  CHECK(highhigh_mem.visited(Decision::kD5MemoryMechanism));

  Diagnosis highhigh = triage_kernel(kernel(75, 70, 80));
  CHECK(highhigh.classification == Classification::kComputeBound);
}

// PM samples of a graph node carry no achieved occupancy: the utilization half of the 2x2 routes
// them, the same way either quadrant of that half would.
TEST_CASE("route: ambiguous throughputs without occupancy route by SM utilization alone", "[routing]") {
  auto without_occupancy = [](KernelInput k) {
    MetricSet m;
    for (const auto& [n, v] : k.metrics.all()) {
      if (n != "sm__warps_active.avg.pct_of_peak_sustained_active") m.set(n, v.value, v.unit);
    }
    k.metrics = m;
    return k;
  };
  // SM 70%, memory 65%: the high half; compute is the busier side.
  Diagnosis compute = triage_kernel(without_occupancy(kernel(70, 65)));
  CHECK(compute.classification == triage_kernel(kernel(70, 65, 40)).classification);
  CHECK(compute.classification == Classification::kComputeBound);
  CHECK(compute.visited(Decision::kD4ComputePipe));
  CHECK(compute.check("d2.occupancy_utilization_quadrant")->finding->detail == "unknown_occupancy_high_utilization");
  // SM 70%, memory 75%: the high half, memory busier.
  Diagnosis memory = triage_kernel(without_occupancy(kernel(70, 75)));
  CHECK(memory.classification == Classification::kMemoryBound);
  CHECK(memory.visited(Decision::kD5MemoryMechanism));
  // SM 58%, memory 70%: the low half, Decision 3, and no occupancy limiter claimed.
  Diagnosis latency = triage_kernel(without_occupancy(kernel(58, 70)));
  CHECK(latency.classification == Classification::kLatencyBound);
  CHECK(latency.visited(Decision::kD3IssueStalls));
  CHECK(latency.primary_limiter != Limiter::kLowAchievedOccupancy);
}

TEST_CASE("route: issue starvation adds Decision 3", "[routing]") {
  Diagnosis d = triage_kernel(kernel(75, 30, 75, 10));
  CHECK(d.classification == Classification::kComputeBound);
  CHECK(d.visited(Decision::kD4ComputePipe));
  CHECK(d.visited(Decision::kD3IssueStalls));
  CHECK(because(d, Decision::kD3IssueStalls).find("d2.issue_starvation") != std::string::npos);
}

TEST_CASE("route: d5.no_tier_near_peak firing re-enters Decision 3 [needs d5 rules]", "[routing][d5-reentry]") {
  if (find_rule("d5.no_tier_near_peak") == nullptr) {
    WARN("d5.no_tier_near_peak not registered yet: re-entry not exercised");
    return;
  }
  // Memory-dominant (65 vs 30), every tier below the overridden 70% sub-peak line.
  KernelInput k = kernel(30, 65);
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 40, "%");
  k.metrics.set("lts__throughput.avg.pct_of_peak_sustained_elapsed", 50, "%");
  k.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 45, "%");
  TriageOptions o;
  o.thresholds.set("d5.no_tier_near_peak.sub_peak_pct", 70);
  Diagnosis d = triage_kernel(k, o);
  REQUIRE(d.fired("d5.no_tier_near_peak"));
  CHECK(before(d, Decision::kD5MemoryMechanism, Decision::kD3IssueStalls));
  CHECK(because(d, Decision::kD3IssueStalls).find("d5.no_tier_near_peak") != std::string::npos);
  CHECK(d.classification == Classification::kLatencyBound);
  // Without the override the memory tier counts as busy: no re-entry.
  Diagnosis plain = triage_kernel(k);
  CHECK(plain.classification == Classification::kMemoryBound);
  CHECK_FALSE(plain.visited(Decision::kD3IssueStalls));
}

TEST_CASE("untrusted metrics stop routing after Decision 0", "[routing]") {
  KernelInput k = kernel(150, 30);
  Diagnosis d = triage_kernel(k);
  CHECK(d.trust == Trust::kUntrusted);
  CHECK(d.classification == Classification::kUntrusted);
  CHECK(d.primary_limiter == Limiter::kUntrustedMetrics);
  REQUIRE(d.path.size() == 1);
  CHECK(d.path[0].decision == Decision::kD0Trust);
  CHECK(d.headline.rfind("untrusted: ", 0) == 0);
  CHECK(d.headline.find("sm__throughput") != std::string::npos);

  KernelInput slow = kernel(30, 25);
  slow.unprofiled_durations_ns = {2000};
  CHECK(triage_kernel(slow).classification == Classification::kUntrusted);
}

TEST_CASE("trust: suspect with notes when checks cannot run or non-blocking ones fire", "[routing]") {
  KernelInput k = kernel(30, 25);
  k.unprofiled_durations_ns.clear();
  k.collection.has_line_info = false;
  Diagnosis d = triage_kernel(k);
  CHECK(d.trust == Trust::kSuspect);
  CHECK(d.classification == Classification::kLatencyBound);
  bool duration_note = false, build_note = false;
  for (const auto& n : d.trust_notes) {
    duration_note = duration_note || n.find("d0.duration_divergence not evaluated") != std::string::npos;
    build_note = build_note || n.find("d0.build_config") != std::string::npos;
  }
  CHECK(duration_note);
  CHECK_FALSE(build_note);  // source mapping is said apart (next test)
}

// Synthetic input. Issue 23: missing line info limits source mapping; it never makes the
// counters doubtful, so it is said in source_notes and leaves trust alone.
TEST_CASE("trust: no line table, a -G build or unrecorded build flags never make a verdict suspect", "[routing]") {
  KernelInput k = kernel(30, 25);  // carries an unprofiled duration: every data check can run
  k.collection.has_line_info = true;
  k.collection.debug_build = false;
  const Diagnosis clean = triage_kernel(k);
  REQUIRE(clean.trust == Trust::kTrusted);
  CHECK(clean.source_notes.empty());

  k.collection.has_line_info = false;
  Diagnosis d = triage_kernel(k);
  CHECK(d.trust == Trust::kTrusted);
  REQUIRE(d.source_notes.size() == 1);
  CHECK(d.source_notes[0].rfind("d0.build_config: ", 0) == 0);
  CHECK(d.source_notes[0].find("no line table") != std::string::npos);
  for (const auto& n : d.trust_notes) CHECK(n.find("d0.build_config") == std::string::npos);

  k.collection.debug_build = true;
  d = triage_kernel(k);
  CHECK(d.trust == Trust::kTrusted);
  REQUIRE(d.source_notes.size() == 1);
  CHECK(d.source_notes[0].find("-G") != std::string::npos);

  k.collection.debug_build.reset();
  k.collection.has_line_info.reset();
  d = triage_kernel(k);  // an ncu import: the CSV carries no build flags
  CHECK(d.trust == Trust::kTrusted);
  REQUIRE(d.source_notes.size() == 1);
  CHECK(d.source_notes[0].find("d0.build_config not evaluated") == 0);
  CHECK(d.classification == clean.classification);
  CHECK(d.primary_rule == clean.primary_rule);
}

TEST_CASE("missing routing metrics: inconclusive, other checks still run", "[routing]") {
  KernelInput k = kernel(30, 25, 75, 40, 32);
  MetricSet m;
  m.set("sm__warps_active.avg.pct_of_peak_sustained_active", 40, "%");
  m.set("sm__cycles_active.max", 1500);
  m.set("sm__cycles_active.avg", 1000);
  k.metrics = m;
  Diagnosis d = triage_kernel(k);
  CHECK(d.classification == Classification::kInconclusive);
  CHECK(d.headline.rfind("inconclusive: ", 0) == 0);
  CHECK(d.headline.find("sm__throughput.avg.pct_of_peak_sustained_elapsed") != std::string::npos);
  // The next action names what routing lacks, both throughputs here, and not the occupancy it has.
  CHECK(d.next_action.find("sm__throughput.avg.pct_of_peak_sustained_elapsed and "
                           "gpu__compute_memory_throughput") != std::string::npos);
  CHECK(d.next_action.find("warps_active") == std::string::npos);
  KernelInput memory_only = k;
  memory_only.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 25, "%");
  const Diagnosis lacking_sm = triage_kernel(memory_only);
  CHECK(lacking_sm.classification == Classification::kInconclusive);
  CHECK(lacking_sm.next_action == "Collect sm__throughput.avg.pct_of_peak_sustained_elapsed, then triage again.");
  CHECK(d.visited(Decision::kD1WorkloadSize));
  CHECK(d.visited(Decision::kD6SourceLines));
  CHECK(d.visited(Decision::kD7HardwareLimit));
  CHECK(d.fired("d1.waves_below_one"));
  CHECK(d.fired("d7.sm_load_imbalance"));
}

TEST_CASE("threshold override changes the route", "[routing]") {
  KernelInput k = kernel(75, 75, 80);
  CHECK(triage_kernel(k).classification == Classification::kComputeBound);  // ambiguous -> quadrant
  TriageOptions o;
  o.thresholds.set("d2.compute_memory_balance.high_pct", 70);
  Diagnosis d = triage_kernel(k, o);
  CHECK(d.classification == Classification::kSaturated);
}

TEST_CASE("undersized: under one wave and nothing saturated", "[routing]") {
  Diagnosis d = triage_kernel(kernel(30, 25, 75, 40, 32));
  CHECK(d.classification == Classification::kUndersized);
  CHECK(d.primary_limiter == Limiter::kSmallGrid);
  REQUIRE(d.estimated_speedup.has_value());
  CHECK(*d.estimated_speedup == Approx(132.0 / 32.0));
  CHECK(d.headline.rfind("undersized: ", 0) == 0);
  // A saturated unit outranks the small grid.
  Diagnosis sat = triage_kernel(kernel(85, 90, 75, 40, 32));
  CHECK(sat.classification == Classification::kSaturated);
}

TEST_CASE("Decision 2A: visited only with timeline data, a firing check classifies", "[routing]") {
  CHECK_FALSE(triage_kernel(kernel(30, 25)).visited(Decision::kD2ADispatch));
  KernelInput k = kernel(30, 25);
  k.metrics.set("cutriage__gpu_idle_pct", 25, "%");
  Diagnosis d = triage_kernel(k);
  CHECK(d.visited(Decision::kD2ADispatch));
  CHECK(before(d, Decision::kD2ADispatch, Decision::kD3IssueStalls));
  CHECK(d.classification == Classification::kDispatchBound);
  CHECK(d.primary_limiter == Limiter::kDispatchGaps);
}

TEST_CASE("ncu input without a launch configuration still routes", "[routing]") {
  KernelInput k = kernel(30, 25);
  k.launch.reset();
  k.device_limits.reset();
  k.metrics.set("launch__waves_per_multiprocessor", 0.25);
  k.metrics.set("launch__grid_size", 33);
  k.metrics.set("launch__sm_count", 132);
  k.metrics.set("launch__block_size", 256);
  Diagnosis d = triage_kernel(k);
  CHECK(d.fired("d1.waves_below_one"));
  CHECK(d.classification == Classification::kUndersized);
}

TEST_CASE("Amdahl ceiling from the time share", "[routing]") {
  KernelInput k = kernel(30, 25);
  k.time_share = 0.5;
  Diagnosis d = triage_kernel(k);
  REQUIRE(d.amdahl_ceiling.has_value());
  CHECK(*d.amdahl_ceiling == Approx(2.0));
  CHECK_FALSE(triage_kernel(kernel(30, 25)).amdahl_ceiling.has_value());
}

TEST_CASE("WGMMA note is not duplicated when Decision 4 owns it", "[routing]") {
  KernelInput k = kernel(75, 30);
  k.metrics.set("sm__inst_executed_pipe_tensor_op_gmma.sum", 4000);
  k.metrics.set("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 60, "%");
  Diagnosis d = triage_kernel(k);
  size_t notes = 0;
  for (const auto& n : d.trust_notes) notes += n.find("WGMMA") != std::string::npos ? 1 : 0;
  if (find_rule("d4.wgmma_count_note") != nullptr) {
    CHECK(d.check("d4.wgmma_count_note") != nullptr);
    CHECK(notes == 0);
  } else {
    CHECK(notes == 1);
  }
}

TEST_CASE("the WGMMA note is never the headline of a compute-bound kernel below every pipe threshold", "[routing]") {
  // A pointwise kernel as PM sampling saw it in a graph: compute leads, no pipe reaches 60%, the
  // tensor pipe shows some activity. The note fires (how to read tensor counts) but says nothing
  // about what limits the kernel: Decision 7's "no pipe near the expected limit" is the verdict.
  KernelInput k = kernel(84.5, 25.8);
  k.metrics.set("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 38.8, "%");
  k.metrics.set("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 18.4, "%");
  const Diagnosis d = triage_kernel(k);
  CHECK(d.classification == Classification::kComputeBound);
  CHECK(d.fired("d4.wgmma_count_note"));
  CHECK(d.primary_rule != "d4.wgmma_count_note");
  CHECK(d.primary_limiter != Limiter::kPipeTensor);
  CHECK(d.headline.find("warp-group MMA") == std::string::npos);
  CHECK(d.primary_rule == "d7.expected_resource");
}

TEST_CASE("never throws on odd input", "[routing]") {
  KernelInput k;
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", std::nan(""), "%");
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 1e300, "%");
  Diagnosis d;
  REQUIRE_NOTHROW(d = triage_kernel(k));
  CHECK(d.classification != Classification::kUnspecified);
  REQUIRE_NOTHROW(triage_kernel(KernelInput{}));
  CHECK(triage_kernel(KernelInput{}).classification == Classification::kInconclusive);
}

TEST_CASE("enum names are stable lower_snake", "[routing]") {
  CHECK(to_string(Decision::kD1WorkloadSize) == "d1_workload_size");
  CHECK(to_string(Classification::kMemoryBound) == "memory_bound");
  CHECK(to_string(Limiter::kDramBandwidth) == "dram_bandwidth");
  CHECK(to_string(Outcome::kFired) == "fired");
  CHECK(to_string(Outcome::kNotEvaluated) == "not_evaluated");
  CHECK(to_string(Trust::kSuspect) == "suspect");
}

TEST_CASE("every rule has an id with its decision's prefix and unique", "[routing]") {
  std::vector<std::string> ids;
  for (const Rule& r : all_rules()) ids.emplace_back(r.id);
  auto sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
}

TEST_CASE("PC samples alone carry a latency-bound kernel to Decision 5 and name its line (synthetic)", "[routing][pc]") {
  KernelInput k = kernel(30, 25);  // both low: Decision 3
  PcSampleSummary s;
  s.has_line_info = true;
  s.total_samples = 1400;  // CUPTI's total counts dropped samples too
  auto pc = [](uint64_t offset, uint32_t line, std::string sass, std::map<std::string, uint64_t> states) {
    PcSampleLine l;
    l.function = "kernel";
    l.file = "gather.cu";
    l.line = line;
    l.pc_offset = offset;
    l.sass = std::move(sass);
    l.samples_by_reason = std::move(states);
    return l;
  };
  s.lines.push_back(pc(0x100, 40, "LDG.E R2, desc[UR4][R6.64]", {{"selected", 100}}));
  s.lines.push_back(pc(0x1a0, 42, "FFMA R4, R2, R3, R4", {{"long_scoreboard", 900}, {"wait", 100}}));
  k.pc_samples = s;
  Diagnosis d = triage_kernel(k);
  CHECK(d.trust == Trust::kTrusted);  // nothing dropped: no caveat
  REQUIRE(d.fired("d3.dominant_stall"));
  CHECK(d.check("d3.dominant_stall")->finding->detail == "long_scoreboard");
  CHECK(d.check("d3.dominant_stall")->reason.find("gather.cu:42 (900 samples") != std::string::npos);
  // The memory-wait follow-up is taken on the sampled verdict as on the measured one.
  CHECK(d.visited(Decision::kD5MemoryMechanism));
  CHECK(because(d, Decision::kD5MemoryMechanism).find("long_scoreboard dominates") != std::string::npos);

  // Dropped samples: a trust note, not a block.
  k.pc_samples->dropped_samples = 300;
  Diagnosis dropped = triage_kernel(k);
  CHECK(dropped.trust == Trust::kSuspect);
  CHECK(dropped.classification == Classification::kLatencyBound);
  bool noted = false;
  for (const auto& n : dropped.trust_notes) noted = noted || n.find("d0.pc_samples_dropped: 300 of 1400") != std::string::npos;
  CHECK(noted);
}

// Synthetic input with the numbers of issue 23's GEMM: SM 95%, and memory measured in another pass
// as 70% while l1tex__throughput, a part of it, reads 92.9%. A throughput is never below its own
// part, so both sides are high: Decision 7's "both high", on every path.
TEST_CASE("a memory throughput below its own breakdown part is raised, and the route follows", "[routing]") {
  KernelInput k = kernel(95, 70, 40, 90);
  const Diagnosis before = triage_kernel(k);
  CHECK(before.classification != Classification::kSaturated);
  k.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 92.9, "%");
  const Diagnosis d = triage_kernel(k);
  CHECK(d.classification == Classification::kSaturated);
  bool raised = false;
  for (const std::string& n : d.trust_notes) {
    raised = raised || (n.rfind("gpu__compute_memory_throughput raised from 70.0% to 92.9%: l1tex__throughput", 0) == 0);
  }
  CHECK(raised);
  // Consistent counters are left alone: no note, the same route as before the part was known.
  k.metrics.set("l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 69.0, "%");
  const Diagnosis consistent = triage_kernel(k);
  CHECK(consistent.classification == before.classification);
  for (const std::string& n : consistent.trust_notes) CHECK(n.find("raised from") == std::string::npos);
}

TEST_CASE("a severe SM imbalance is the verdict, the routed classification stays (synthetic, issue 23)", "[routing]") {
  // Issue 23's kernel, rebuilt from synthetic counters: blocks of 64x uneven work, the busiest SM
  // active 6.7x the average, achieved occupancy 32.9%. It was headlined by the occupancy with the
  // imbalance only under "also".
  KernelInput k = kernel(30, 25, 32.9);
  k.metrics.set("sm__cycles_active.max", 6700, "cycle");
  k.metrics.set("sm__cycles_active.avg", 1000, "cycle");
  Diagnosis d = triage_kernel(k);
  CHECK(d.classification == Classification::kLatencyBound);
  CHECK(d.primary_rule == "d7.sm_load_imbalance");
  CHECK(d.primary_limiter == Limiter::kLoadImbalance);
  CHECK(d.headline.rfind("latency_bound: busiest sm active 6.70x the average", 0) == 0);
  REQUIRE(d.estimated_speedup.has_value());
  CHECK(*d.estimated_speedup == Approx(6.7));
  CHECK(d.next_action.find("Even out the work per block") != std::string::npos);

  // Imbalanced below dominant_ratio: the routed finding keeps the verdict.
  KernelInput mild = k;
  mild.metrics.set("sm__cycles_active.max", 1500, "cycle");
  Diagnosis m = triage_kernel(mild);
  CHECK(m.fired("d7.sm_load_imbalance"));
  CHECK(m.primary_rule != "d7.sm_load_imbalance");
  CHECK_FALSE(m.primary_rule.empty());

  // The named threshold decides.
  TriageOptions o;
  o.thresholds.set("d7.sm_load_imbalance.dominant_ratio", 8);
  CHECK(triage_kernel(k, o).primary_rule == m.primary_rule);

  // Under one wave the idle SMs are the grid's size: Decision 1 keeps the verdict.
  KernelInput small = kernel(30, 25, 32.9, 40, 32);
  small.metrics.set("sm__cycles_active.max", 4130, "cycle");
  small.metrics.set("sm__cycles_active.avg", 1000, "cycle");
  Diagnosis s = triage_kernel(small);
  CHECK(s.classification == Classification::kUndersized);
  CHECK(s.primary_rule == "d1.waves_below_one");
}

TEST_CASE("a mostly empty last wave of a short grid is the verdict (synthetic, issue 23)", "[routing]") {
  // 1120 blocks of 256 threads on GH100 (1056 block slots): 1.06 waves, the second 6% full.
  Diagnosis d = triage_kernel(kernel(30, 25, 75, 40, 1120));
  CHECK(d.classification == Classification::kLatencyBound);
  CHECK(d.primary_rule == "d1.tail_wave");
  CHECK(d.primary_limiter == Limiter::kTailWave);
  CHECK(d.headline.find("the last of 2 waves is 6.1% full") != std::string::npos);
  REQUIRE(d.estimated_speedup.has_value());
  CHECK(*d.estimated_speedup == Approx(2.0 * 1056 / 1120));

  // 2.06 waves: the tail fires (a third of the time) but 3/2.06 = 1.46x is below dominant_ratio.
  Diagnosis t = triage_kernel(kernel(30, 25, 75, 40, 2176));
  CHECK(t.fired("d1.tail_wave"));
  CHECK(t.primary_rule != "d1.tail_wave");
  // A last wave over half full: no tail finding.
  CHECK_FALSE(triage_kernel(kernel(30, 25, 75, 40, 1690)).fired("d1.tail_wave"));
}

}  // namespace test_engine_routing
