// Golden tests on real captures: every example-zoo kernel, profiled on an H200 with
// `tests/data/ncu/capture.sh` (see tests/data/ncu/README.md), must reach the verdict it was built
// to show. Where the engine's verdict differs from the program's intent, the test says which one
// is right and why.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "capture_support.h"
#include "catch.h"
#include "file_reader.h"
#include "import.h"
#include "ncu_csv.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_golden_zoo {

using namespace cutriage;
using cutriage::testing::slurp;
using triage::Classification;
using triage::Limiter;

namespace {

// Diagnoses of every captured launch, by function name (several launches of one kernel keep
// their order in the vector).
const std::map<std::string, std::vector<wire::KernelRecord>>& zoo() {
  static const auto result = [] {
    std::map<std::string, std::vector<wire::KernelRecord>> by_name;
    const std::filesystem::path dir = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "ncu";
    std::vector<tools::NcuImport> imports;
    std::vector<std::filesystem::path> csvs;
    for (const auto& e : std::filesystem::directory_iterator(dir / "zoo")) {
      if (e.path().extension() == ".csv") csvs.push_back(e.path());
    }
    std::sort(csvs.begin(), csvs.end());
    for (const auto& p : csvs) {
      tools::NcuCsvResult r = tools::parse_ncu_csv(slurp(p));
      if (r.import) imports.push_back(std::move(*r.import));
    }
    tools::ImportOptions options;
    options.clock_control = triage::ClockControl::kNone;  // capture.sh runs ncu --clock-control none
    std::vector<std::string> warnings;
    options.timings = tools::parse_timings(slurp(dir / "timings.csv"), warnings);
    tools::TriageRun run = tools::triage_imports(std::move(imports), options);
    for (wire::KernelRecord& k : run.kernels) by_name[k.input.function_name].push_back(std::move(k));
    return by_name;
  }();
  return result;
}

// Takes a C string: GCC 13 warns (-Wdangling-reference) when a reference-returning function gets a
// temporary std::string.
const triage::Diagnosis& diagnosis_of(const char* function) {
  const auto& all = zoo();
  auto it = all.find(function);
  if (it == all.end() || it->second.empty()) FAIL("no capture of " << function);
  return it->second.front().diagnosis;
}

const triage::Diagnosis& gemm() {
  for (const auto& [name, records] : zoo()) {
    if (name.rfind("nvjet_", 0) == 0) return records.front().diagnosis;
  }
  FAIL("no cuBLAS GEMM kernel (nvjet_*) in the captures");
  throw;  // unreachable
}

}  // namespace

TEST_CASE("golden: every zoo program's capture is present and triaged", "[golden]") {
  const auto& all = zoo();
  for (const char* name : {"zoo_vector_add", "zoo_small_grid", "zoo_odd_block_saxpy", "zoo_strided_load",
                           "zoo_transpose_naive", "zoo_transpose_padded", "zoo_register_spill",
                           "zoo_warp_divergence", "zoo_global_atomics", "zoo_fp64_heavy",
                           "zoo_fma_chain", "zoo_tiny_kernel"}) {
    INFO(name);
    CHECK(all.count(name) == 1);
  }
  for (const auto& [name, records] : all) {
    for (const auto& k : records) {
      INFO(name);
      CHECK(k.diagnosis.classification != Classification::kUnspecified);
      CHECK(k.diagnosis.classification != Classification::kInconclusive);
      CHECK_FALSE(k.diagnosis.headline.empty());
    }
  }
}

TEST_CASE("golden: vector_add is DRAM-bandwidth bound at the hardware limit", "[golden]") {
  const auto& d = diagnosis_of("zoo_vector_add");
  CHECK(d.classification == Classification::kMemoryBound);
  CHECK(d.primary_rule == "d5.dram_bound");
  CHECK(d.primary_limiter == Limiter::kDramBandwidth);
  CHECK(d.at_hardware_limit);
  // float4 loads: 16 sectors per request is the ideal, not uncoalesced.
  CHECK_FALSE(d.fired("d5.uncoalesced_global_loads"));
  CHECK_FALSE(d.fired("d5.uncoalesced_global_stores"));
}

TEST_CASE("golden: small_grid is undersized (less than one wave)", "[golden]") {
  const auto& d = diagnosis_of("zoo_small_grid");
  CHECK(d.classification == Classification::kUndersized);
  CHECK(d.primary_rule == "d1.waves_below_one");
  CHECK(d.trust != triage::Trust::kUntrusted);
}

TEST_CASE("golden: odd_block's block size is flagged", "[golden]") {
  const auto& d = diagnosis_of("zoo_odd_block_saxpy");
  CHECK(d.fired("d1.block_not_warp_multiple"));
  // Intent vs verdict: the program was built to show an 80-thread block. The partial warp is
  // reported (above), but on the H200 the larger effect is that 80-thread blocks leave achieved
  // occupancy at a third of theoretical (32% vs 98%) and DRAM at 32%: the engine's latency-bound
  // verdict is the right one, the block size is a contributing finding.
  CHECK(d.classification == Classification::kLatencyBound);
  CHECK(d.primary_rule == "d3.achieved_below_theoretical");
}

TEST_CASE("golden: strided_load is uncoalesced", "[golden]") {
  const auto& d = diagnosis_of("zoo_strided_load");
  CHECK(d.classification == Classification::kMemoryBound);
  CHECK(d.primary_rule == "d5.uncoalesced_global_loads");
  CHECK(d.primary_limiter == Limiter::kUncoalescedGlobal);
  REQUIRE(d.estimated_speedup.has_value());
  CHECK(*d.estimated_speedup > 4.0);  // 32 sectors per request where 4 would do
  CHECK(d.fired("d5.low_bytes_per_sector"));
}

TEST_CASE("golden: the naive transpose has bank conflicts, the padded one does not", "[golden]") {
  const auto& naive = diagnosis_of("zoo_transpose_naive");
  CHECK(naive.classification == Classification::kMemoryBound);
  CHECK(naive.primary_rule == "d5.shared_bank_conflicts");
  CHECK(naive.primary_limiter == Limiter::kSharedBankConflicts);
  const auto& padded = diagnosis_of("zoo_transpose_padded");
  CHECK_FALSE(padded.fired("d5.shared_bank_conflicts"));
  CHECK(padded.classification == Classification::kMemoryBound);
}

TEST_CASE("golden: register_spill is dominated by local-memory traffic", "[golden]") {
  const auto& d = diagnosis_of("zoo_register_spill");
  CHECK(d.classification == Classification::kMemoryBound);
  CHECK(d.primary_rule == "d5.local_memory_traffic");
  CHECK(d.primary_limiter == Limiter::kLocalMemorySpills);
}

TEST_CASE("golden: warp_divergence wastes the busy pipe on inactive lanes", "[golden]") {
  const auto& d = diagnosis_of("zoo_warp_divergence");
  // The divergent branches run long integer loops, so the ALU pipe is busy (87%) and the kernel
  // routes as compute-bound; the root cause named is the 4-of-32 active lanes.
  CHECK(d.classification == Classification::kComputeBound);
  CHECK(d.primary_rule == "d4.divergent_lanes_on_busy_pipe");
  CHECK(d.primary_limiter == Limiter::kWarpDivergence);
}

TEST_CASE("golden: global_atomics is limited by atomic serialization", "[golden]") {
  const auto& d = diagnosis_of("zoo_global_atomics");
  // Atomics on 8 addresses keep every memory tier under 7% of peak, so Decision 2 routes the
  // kernel as latency-bound; long_scoreboard dominates, Decision 5's access-pattern checks run,
  // and the L2 atomic share (100% of requests) is the cause. The guide names this case
  // ("moderate L2 throughput and high latency stalls").
  CHECK(d.classification == Classification::kLatencyBound);
  CHECK(d.primary_rule == "d5.l2_atomic_pressure");
  CHECK(d.primary_limiter == Limiter::kAtomicContention);
}

TEST_CASE("golden: fp64_heavy and fma_chain are pipe-bound", "[golden]") {
  const auto& fp64 = diagnosis_of("zoo_fp64_heavy");
  CHECK(fp64.classification == Classification::kComputeBound);
  const auto* pipe = fp64.check("d4.limiting_pipe");
  REQUIRE(pipe != nullptr);
  REQUIRE(pipe->finding.has_value());
  CHECK(pipe->finding->limiter == Limiter::kPipeFp64);
  // The verdict names FP64 itself as the slow path (91% of instructions): the actionable form of
  // the same finding. The FP64 pipe's throughput-above-issue gap is not reported as replays.
  CHECK(fp64.primary_rule == "d4.slow_path_arithmetic");
  CHECK_FALSE(fp64.fired("d4.replay_overhead"));
  CHECK(fp64.at_hardware_limit);

  const auto& fma = diagnosis_of("zoo_fma_chain");
  CHECK(fma.classification == Classification::kComputeBound);
  CHECK(fma.primary_rule == "d4.limiting_pipe");
  CHECK(fma.primary_limiter == Limiter::kPipeFma);
  CHECK(fma.at_hardware_limit);
}

TEST_CASE("golden: the cuBLAS tensor-core GEMM is saturated near the hardware limit", "[golden]") {
  const auto& d = gemm();
  CHECK(d.classification == Classification::kSaturated);
  CHECK(d.at_hardware_limit);
  CHECK(d.fired("d4.wgmma_count_note"));
  const auto* pipe = d.check("d4.limiting_pipe");
  REQUIRE(pipe != nullptr);
  CHECK(pipe->outcome == triage::Outcome::kFired);
}

TEST_CASE("golden: the cuBLAS GEMM gets advice its caller can take, in the diagnosis and the report", "[golden]") {
  // Issue 23: nobody can restructure cuBLAS's code. The verdict stays (saturated, at the limit);
  // the next action is about what the caller controls, and the report says which library it is.
  const auto& d = gemm();
  CHECK(d.library == "cuBLAS");
  CHECK(d.classification == Classification::kSaturated);
  const auto* primary = d.check(d.primary_rule);
  REQUIRE(primary != nullptr);
  REQUIRE(primary->finding.has_value());
  CHECK(d.next_action != primary->finding->next_action);  // the rule's "change the algorithm"
  CHECK(d.next_action.find("lower precision") != std::string::npos);
  for (const auto& [name, records] : zoo()) {
    if (name.rfind("zoo_", 0) == 0) CHECK(records.front().diagnosis.library.empty());
  }

  tools::TriageRun run;
  for (const auto& [name, records] : zoo()) {
    if (name.rfind("nvjet_", 0) == 0) run.kernels.push_back(records.front());
  }
  const tools::ReadResult file = tools::read_cutriage_bytes(tools::encode_run(run));
  REQUIRE(file.status == tools::ReadStatus::kOk);
  const std::string text = tools::render_report(file, tools::ReportOptions{});
  INFO(text);
  CHECK(text.find("    library   cuBLAS kernel, recognized by name") != std::string::npos);
  CHECK(text.find("    next      The GEMM runs near its hardware roof in cuBLAS") != std::string::npos);
}

TEST_CASE("golden: tiny_kernels are not trusted per kernel", "[golden]") {
  // Intent vs verdict: the program is dispatch-bound, which only a timeline shows (Decision 2A,
  // the agent's trace). Per-kernel counters see a 1-block grid that runs 2 us under ncu while the
  // application spends 5.3 us per launch: Decision 0's duration check (> 2x) and the implausible
  // values of a 1-block launch make the engine refuse a verdict, which is the honest answer from
  // this data. The launch-rate finding belongs to the timeline work (issue 4).
  const auto& all = zoo();
  auto it = all.find("zoo_tiny_kernel");
  REQUIRE(it != all.end());
  REQUIRE(it->second.size() == 3);
  int duration_flags = 0;
  for (const auto& k : it->second) {
    CHECK(k.diagnosis.classification == Classification::kUntrusted);
    CHECK(k.diagnosis.trust == triage::Trust::kUntrusted);
    CHECK_FALSE(k.diagnosis.visited(triage::Decision::kD2ADispatch));
    duration_flags += k.diagnosis.fired("d0.duration_divergence") ? 1 : 0;
  }
  CHECK(duration_flags >= 2);
}

}  // namespace test_golden_zoo
