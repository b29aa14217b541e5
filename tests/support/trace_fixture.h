// A small cutriage file with a trace, made with the agent's encoder (RecordEncoder) from SYNTHETIC
// inputs: every name, time and number below is made up for the tests, not measured on a GPU.
// It holds what the trace views must handle: two GPUs with the same stream id, a family on each,
// a profiled (replayed) launch whose KernelProfile was rewritten at the end of the session
// (revision 1), two graph kernels of one stream that ran at the same time, a pageable copy and a
// memset, a trace chunk that arrives out of time order, NVTX ranges nested three deep with equal
// start times, a start/end range that crosses a push/pop range, non-ASCII and JSON-special
// characters in names, and a TraceSummary with fired, not-evaluated and not-fired findings.
//
// Used by the Catch2 tests (report, reader) and by tests/cli/make_trace_file.cpp, which writes it
// for the `cutriage trace` test.
#pragma once

#include <cstdint>
#include <string>

#include "cutriage/triage/timeline.h"
#include "cutriage/wire/writer.h"

namespace cutriage::testing {

struct SyntheticTrace {
  static constexpr uint64_t kClock = 5'000'000'000'000ULL;  // trace clock at the first event
  static constexpr const char* kLongName =
      "very_long_kernel_name_for_width_checks<cutlass::gemm::GemmShape<128, 256, 64>, "
      "cutlass::epilogue::thread::LinearCombination<float, 4>>";
  static constexpr const char* kQuotedName = "elementwise<\"q\\x\">";
  static constexpr uint64_t kProfiledLaunch = 102;
};

inline wire::SessionInfo synthetic_trace_session() {
  wire::SessionInfo s;
  s.agent_version = "synthetic";
  s.host = "synthetic-host";
  s.pid = 4242;
  s.command_line = {"./synthetic_app", "--steps", "2"};
  s.start_time_unix_ns = 1'700'000'000'000'000'000ULL;
  s.trace_clock_at_start_ns = SyntheticTrace::kClock - 1'000;
  for (uint32_t d = 0; d < 2; ++d) {
    wire::GpuInfo g;
    g.device = d;
    g.name = "NVIDIA H200";
    g.limits.chip = "GH100";
    g.limits.sm_count = 132;
    g.limits.cc_major = 9;
    s.gpus.push_back(g);
  }
  s.source = wire::SessionSource::kAgent;
  return s;
}

inline triage::FamilyTimeStats synthetic_family_stats(uint64_t id, uint32_t device, uint64_t launches,
                                                      uint64_t replayed, std::initializer_list<double> durations) {
  triage::FamilyTimeStats f;
  f.family = id;
  f.device = device;
  f.launches = launches;
  f.replayed_launches = replayed;
  for (double d : durations) {
    f.durations.add(d);
    f.total_ns += d;
  }
  return f;
}

// The summary the agent would write for the trace below (numbers chosen by hand, consistent with
// the trace: families ranked by total, shares of 573 us of kernel time).
inline wire::TraceSummary synthetic_trace_summary() {
  using triage::FamilyTimeStats;
  constexpr uint64_t T = SyntheticTrace::kClock;
  wire::TraceSummary s;
  triage::TimelineSummary& t = s.timeline;
  t.families.push_back(synthetic_family_stats(3, 1, 1, 0, {250'000}));
  t.families.push_back(synthetic_family_stats(1, 0, 5, 1, {50'000, 51'000, 53'000, 54'000}));
  FamilyTimeStats graph = synthetic_family_stats(4, 0, 2, 0, {60'000, 40'000});
  graph.graph_launches = 2;
  graph.concurrent_launches = 2;
  t.families.push_back(graph);
  t.families.push_back(synthetic_family_stats(2, 0, 2, 0, {10'000, 5'000}));
  t.total_kernel_ns = 573'000;
  t.kernel_executions = 10;
  t.copy_executions = 2;
  triage::DeviceTimeStats d0;
  d0.device = 0;
  d0.first_start_ns = T + 10'000;
  d0.last_end_ns = T + 1'301'000;
  d0.busy_ns = 483'000;
  d0.kernel_busy_ns = 412'000;
  d0.copy_busy_ns = 71'000;
  d0.copy_only_ns = 70'000;
  d0.copy_overlapped_ns = 1'000;
  d0.pageable_copy_ns = 70'000;
  d0.kernels = 9;
  d0.copies = 2;
  d0.gaps = 6;
  d0.gap_ns = 808'000;
  d0.largest_gaps.push_back({T + 954'000, T + 1'200'000});
  t.devices.push_back(d0);
  triage::DeviceTimeStats d1;
  d1.device = 1;
  d1.first_start_ns = T + 150'000;
  d1.last_end_ns = T + 400'000;
  d1.busy_ns = 250'000;
  d1.kernel_busy_ns = 250'000;
  d1.kernels = 1;
  t.devices.push_back(d1);

  wire::FamilyOutcome profiled;
  profiled.selection = wire::FamilySelection::kProfiled;
  profiled.profiled_launch_index = SyntheticTrace::kProfiledLaunch;
  profiled.nvtx_paths = {"train/step/forward", "train/step"};
  s.outcomes[1] = profiled;
  wire::FamilyOutcome not_ranked;
  not_ranked.selection = wire::FamilySelection::kNotRanked;
  not_ranked.selection_detail = "outside the top 1";
  s.outcomes[3] = not_ranked;
  wire::FamilyOutcome graph_only;
  graph_only.selection = wire::FamilySelection::kGraphOnly;
  s.outcomes[4] = graph_only;
  wire::FamilyOutcome filtered;
  filtered.selection = wire::FamilySelection::kFiltered;
  filtered.selection_detail = "name filter regex:gemm";
  s.outcomes[2] = filtered;

  triage::CheckResult fired;
  fired.rule_id = "d2a.idle_gaps";
  fired.decision = triage::Decision::kD2ADispatch;
  fired.title = "GPU idle between kernels";
  fired.outcome = triage::Outcome::kFired;
  fired.reason = "GPU 0 idle 62.5% of its span";
  fired.evidence.push_back({"cutriage__gpu_idle_pct", 62.5, "%", true});
  fired.evidence.push_back({"idle_gaps", 6, "", true});
  fired.thresholds.push_back({"d2a.idle_gaps.max_idle_pct", 20});
  triage::Finding f;
  f.limiter = triage::Limiter::kDispatchGaps;
  f.summary = "GPU 0 idle 62.5% of the span in 6 gaps";
  f.next_action = "Keep the GPU fed: batch small launches, use CUDA graphs";
  f.estimated_speedup = 2.67;
  f.estimate_basis = "1 / (1 - 0.625)";
  fired.finding = f;
  s.findings.push_back(fired);
  triage::CheckResult not_fired;
  not_fired.rule_id = "d1.isolated_kernels";
  not_fired.decision = triage::Decision::kD1WorkloadSize;
  not_fired.outcome = triage::Outcome::kNotFired;
  not_fired.reason = "kernels overlap";
  s.findings.push_back(not_fired);
  triage::CheckResult not_evaluated;
  not_evaluated.rule_id = "d2a.copy_compute_overlap";
  not_evaluated.decision = triage::Decision::kD2ADispatch;
  not_evaluated.outcome = triage::Outcome::kNotEvaluated;
  not_evaluated.reason = "no copy ran next to a kernel";
  s.findings.push_back(not_evaluated);

  s.dropped_records = 0;
  s.timeline_kernel_events = 10;
  s.selection.mode = wire::SelectionMode::kTop;
  s.selection.top_k = 1;
  return s;
}

inline wire::KernelRecord synthetic_profiled_gemm(uint32_t revision, const std::string& headline) {
  wire::KernelRecord k;
  k.input.mangled_name = "_Z4gemmILi128EEvPKfS1_Pf";
  k.input.demangled_name = "void gemm<128>(float const*, float const*, float*)";
  k.input.function_name = "gemm<128>";
  k.input.launch_index = SyntheticTrace::kProfiledLaunch;
  triage::LaunchConfig lc;
  lc.grid = {264, 1, 1};
  lc.block = {256, 1, 1};
  k.input.launch = lc;
  k.input.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.0, "%");
  k.status = wire::ProfileStatus::kProfiled;
  k.duration_ns = 60'000;
  k.correlation_id = SyntheticTrace::kProfiledLaunch;
  k.stream_id = 7;
  k.family_id = 1;
  k.revision = revision;
  k.profile_number = 1;
  k.diagnosis.classification = triage::Classification::kMemoryBound;
  k.diagnosis.headline = headline;
  k.diagnosis.next_action = "Move fewer bytes: fuse the epilogue";
  return k;
}

// The whole file. `with_summary = false`: as if the process was killed before the session end.
inline std::string synthetic_trace_file(bool with_summary = true) {
  constexpr uint64_t T = SyntheticTrace::kClock;
  wire::RecordEncoder enc;
  std::string bytes = enc.session(synthetic_trace_session());
  bytes += enc.family({1, "_Z4gemmILi128EEvPKfS1_Pf", "gemm<128>", 0, {256, 1, 1}});
  bytes += enc.family({2, "_Z6reducePf", "reduce", 0, {512, 1, 1}});
  bytes += enc.family({3, "_Z4longv", SyntheticTrace::kLongName, 1, {128, 1, 1}});
  bytes += enc.family({4, "_Z11elementwisev", SyntheticTrace::kQuotedName, 0, {128, 1, 1}});

  wire::TraceChunk first;
  for (uint64_t i = 0; i < 5; ++i) {
    wire::KernelExecution k;
    k.family_id = 1;
    k.start_ns = T + 100'000 + i * 200'000;
    k.end_ns = k.start_ns + (i == 2 ? 60'000 : 50'000 + i * 1'000);
    k.stream_id = 7;
    k.context_id = 1;
    k.correlation_id = 100 + i;
    k.grid = {264, 1, 1};
    k.replayed = 100 + i == SyntheticTrace::kProfiledLaunch;
    if (i < 2) k.nvtx_path = "train/step/forward";
    first.kernels.push_back(k);
  }
  // Two nodes of one CUDA graph on stream 7, the second inside the first's time span.
  first.kernels.push_back({4, T + 1'200'000, T + 1'260'000, 7, 1, 200, {64, 1, 1}, 3, 11, false, ""});
  first.kernels.push_back({4, T + 1'210'000, T + 1'250'000, 7, 1, 201, {64, 1, 1}, 3, 12, false, ""});
  first.kernels.push_back({2, T + 160'000, T + 170'000, 13, 1, 105, {1, 1, 1}, 0, 0, false, ""});
  // Device 1 uses stream id 7 too: a different process in the output.
  first.kernels.push_back({3, T + 150'000, T + 400'000, 7, 2, 106, {1024, 1, 1}, 0, 0, false, ""});
  first.copies.push_back({triage::CopyKind::kHostToDevice, T + 20'000, T + 90'000, 1 << 20, 0, 14, 1, 90,
                          true, 0});
  first.copies.push_back({triage::CopyKind::kMemset, T + 1'300'000, T + 1'301'000, 4096, 0, 7, 1, 300,
                          false, 0});
  bytes += enc.trace_chunk(first);

  // Delivered later, yet holding the earliest events (CUPTI hands buffers over per context).
  wire::TraceChunk second;
  second.kernels.push_back({2, T + 10'000, T + 15'000, 13, 1, 80, {1, 1, 1}, 0, 0, false, ""});
  second.nvtx_ranges.push_back({"train", T + 0, T + 2'000'000, 4242, 0, ""});
  second.nvtx_ranges.push_back({"forward", T + 5'000, T + 400'000, 4242, 2, ""});  // same start as step
  second.nvtx_ranges.push_back({"step", T + 5'000, T + 1'000'000, 4242, 1, ""});
  // A start/end range: begins inside "step", ends after it.
  second.nvtx_ranges.push_back({"io", T + 900'000, T + 1'500'000, 4242, 0, "loader"});
  second.nvtx_ranges.push_back({"pr\xC3\xA9" "fetch \xE2\x9C\x93", T + 30'000, T + 80'000, 4243, 0, ""});
  second.dropped_records = 0;
  bytes += enc.trace_chunk(second);

  bytes += enc.kernel(synthetic_profiled_gemm(0, "memory_bound: first write"));
  if (with_summary) {
    bytes += enc.kernel(synthetic_profiled_gemm(1, "memory_bound: DRAM at 91% of peak (revised)"));
    bytes += enc.trace_summary(synthetic_trace_summary());
    wire::SessionEnd end;
    end.end_time_unix_ns = 1'700'000'000'002'000'000ULL;
    end.state = wire::AgentState::kActive;
    end.kernel_launches = 8;
    end.graph_launches = 1;
    end.profiled_launches = 1;
    bytes += enc.session_end(end);
  }
  return bytes;
}

}  // namespace cutriage::testing
