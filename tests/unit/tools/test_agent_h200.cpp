// The agent's own output from the H200 (tests/data/agent/, made by tests/gpu/run_agent_tests.sh;
// see the README there), replayed on CI:
//  - every zoo kernel's final diagnosis is the verdict the program was built to show;
//  - re-running today's engine on the recorded metrics reproduces the recorded verdict;
//  - the agent's counter values agree with Nsight Compute's on the same kernels
//    (tests/data/ncu/zoo, `ncu --clock-control none`), within the tolerances, with the
//    exceptions explained;
//  - the graph, capture and multithreaded runs recorded what the agent must record.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "capture_support.h"
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "file_reader.h"
#include "ncu_csv.h"
#include "record_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_agent_h200 {

using namespace cutriage;
using cutriage::testing::slurp;

namespace {

std::filesystem::path data(const std::string& rel) {
  return std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / rel;
}

struct AgentFile {
  tools::ReadResult read;
  // The record to show per kernel function: the latest profile (it combines the earlier ones).
  std::map<std::string, const v1::KernelProfile*> final_by_function;
  const v1::SessionEnd* end = nullptr;
  const v1::SessionHeader* header = nullptr;
};

AgentFile load(const std::string& name) {
  AgentFile f;
  f.read = tools::read_cutriage_file(data("agent/" + name).string());
  REQUIRE(f.read.status == tools::ReadStatus::kOk);
  for (const v1::Record& r : f.read.file.records()) {
    if (r.has_session()) f.header = &r.session();
    if (r.has_session_end()) f.end = &r.session_end();
    if (r.has_kernel() && r.kernel().status() == v1::PROFILE_STATUS_PROFILED) {
      f.final_by_function[std::string(tools::lookup(f.read, r.kernel().function_name_iid()))] = &r.kernel();
    }
  }
  return f;
}

// Takes a C string: GCC 13 warns (-Wdangling-reference) when a reference-returning function gets a
// temporary std::string.
const v1::KernelProfile& final_of(const AgentFile& f, const char* function) {
  auto it = f.final_by_function.find(function);
  REQUIRE(it != f.final_by_function.end());
  return *it->second;
}

// The engine's input rebuilt from a record, with the device limits the session header recorded.
triage::KernelInput input_from(const AgentFile& f, const v1::KernelProfile& k) {
  REQUIRE(f.header != nullptr);
  return testing::input_from_record(f.read, k, testing::device_limits_from_header(*f.header));
}

struct Expected {
  const char* file;
  const char* function;
  v1::Classification classification;
  v1::Limiter limiter;  // LIMITER_UNSPECIFIED: not checked
};

// What each zoo program was built to show, as the agent sees it on its own (no unprofiled timing
// yet: that comes with the trace, so tiny_kernels is judged by its size, not by Decision 0).
const Expected kExpected[] = {
    {"zoo_vector_add.pb", "zoo_vector_add", v1::CLASSIFICATION_MEMORY_BOUND, v1::LIMITER_DRAM_BANDWIDTH},
    {"zoo_small_grid.pb", "zoo_small_grid", v1::CLASSIFICATION_UNDERSIZED, v1::LIMITER_SMALL_GRID},
    {"zoo_odd_block.pb", "zoo_odd_block_saxpy", v1::CLASSIFICATION_LATENCY_BOUND, v1::LIMITER_LOW_ACHIEVED_OCCUPANCY},
    {"zoo_strided_load.pb", "zoo_strided_load", v1::CLASSIFICATION_MEMORY_BOUND, v1::LIMITER_UNCOALESCED_GLOBAL},
    {"zoo_transpose.pb", "zoo_transpose_naive", v1::CLASSIFICATION_MEMORY_BOUND, v1::LIMITER_SHARED_BANK_CONFLICTS},
    {"zoo_register_spill.pb", "zoo_register_spill", v1::CLASSIFICATION_MEMORY_BOUND, v1::LIMITER_LOCAL_MEMORY_SPILLS},
    {"zoo_warp_divergence.pb", "zoo_warp_divergence", v1::CLASSIFICATION_COMPUTE_BOUND, v1::LIMITER_WARP_DIVERGENCE},
    {"zoo_global_atomics.pb", "zoo_global_atomics", v1::CLASSIFICATION_LATENCY_BOUND, v1::LIMITER_ATOMIC_CONTENTION},
    {"zoo_fp64_heavy.pb", "zoo_fp64_heavy", v1::CLASSIFICATION_COMPUTE_BOUND, v1::LIMITER_UNSPECIFIED},
    {"zoo_fma_chain.pb", "zoo_fma_chain", v1::CLASSIFICATION_COMPUTE_BOUND, v1::LIMITER_PIPE_FMA},
    {"zoo_cublas_gemm.pb", "nvjet_sm90_tss_320x128_64x3_1x2_h_bz_coopB_NNT", v1::CLASSIFICATION_SATURATED,
     v1::LIMITER_UNSPECIFIED},
    {"zoo_tiny_kernels.pb", "zoo_tiny_kernel", v1::CLASSIFICATION_UNDERSIZED, v1::LIMITER_SMALL_GRID},
};

}  // namespace

TEST_CASE("agent on the H200: every zoo kernel gets its expected verdict", "[agent-h200]") {
  for (const Expected& e : kExpected) {
    INFO(e.file << " " << e.function);
    AgentFile f = load(e.file);
    const v1::KernelProfile& k = final_of(f, e.function);
    CHECK(v1::Classification_Name(k.diagnosis().classification()) == v1::Classification_Name(e.classification));
    if (e.limiter != v1::LIMITER_UNSPECIFIED) {
      CHECK(v1::Limiter_Name(k.diagnosis().primary_limiter()) == v1::Limiter_Name(e.limiter));
    }
    CHECK(k.launch().registers_per_thread() > 0);  // from the function attributes
    CHECK(k.passes() > 0);
    REQUIRE(f.end != nullptr);
    CHECK(f.end->state() == v1::AGENT_STATE_ACTIVE);
  }
}

TEST_CASE("agent on the H200: today's engine reproduces the recorded verdicts", "[agent-h200]") {
  for (const Expected& e : kExpected) {
    INFO(e.file);
    AgentFile f = load(e.file);
    const v1::KernelProfile& k = final_of(f, e.function);
    triage::Diagnosis d = triage::triage_kernel(input_from(f, k));
    CHECK(static_cast<int>(d.classification) == static_cast<int>(k.diagnosis().classification()));
    CHECK(d.primary_rule == k.diagnosis().primary_rule_id());
  }
}

TEST_CASE("agent on the H200: counters agree with Nsight Compute on the same kernels", "[agent-h200]") {
  // Tolerances (issue 3): throughput percentages within 5 points, counts within 2%. Counters below
  // 1e6 are left out: there the kernel's own traffic is swamped by per-launch housekeeping
  // (sysmem-aperture sectors, membar requests ~1e4 per launch, which differ between a CUPTI
  // replay and ncu's), and rates are compared only above 1 GB/s for the same reason.
  // Explained exceptions, each checked to stay within its own wider bound:
  //   register_spill lts__t_sectors_srcunit_tex{,_op_read}.sum: L2 reads of spilled locals depend
  //   on what L1 still holds; ncu flushes caches before every pass (--cache-control all), the
  //   range profiler's kernel replay does not, so fewer spill reads reach L2 (seen: -15%, -2.2%).
  // Durations and cycle counts (durations in disguise) move with the clocks, which neither tool
  // locked (seen: 3.2% on small_grid), so they get the 5% of a throughput ratio. Rates
  // are compared from 10 GB/s up: tiny_kernel's 1.6 GB/s is a few kilobytes over microseconds.
  const std::map<std::pair<std::string, std::string>, double> kExplained = {
      {{"zoo_register_spill", "lts__t_sectors_srcunit_tex_op_read.sum"}, 0.20},
      {{"zoo_register_spill", "lts__t_sectors_srcunit_tex.sum"}, 0.05},
  };
  size_t compared = 0, agreed = 0;
  for (const Expected& e : kExpected) {
    std::string program = std::string(e.file).substr(4, std::string(e.file).size() - 7);  // zoo_X.pb -> X
    auto csv_path = data("ncu/zoo/" + program + ".csv");
    if (!std::filesystem::exists(csv_path)) continue;
    tools::NcuCsvResult ncu = tools::parse_ncu_csv(slurp(csv_path));
    REQUIRE(ncu.import);
    const triage::MetricSet* ref = nullptr;
    for (const wire::KernelRecord& r : ncu.import->kernels) {
      if (r.input.function_name == e.function) {
        ref = &r.input.metrics;
        break;
      }
    }
    if (ref == nullptr) continue;
    AgentFile f = load(e.file);
    const v1::KernelProfile& k = final_of(f, e.function);
    for (const v1::Metric& m : k.metrics()) {
      if (m.derived()) continue;
      std::string name(tools::lookup(f.read, m.name_iid()));
      std::optional<double> want = ref->get(name);
      if (!want) continue;
      const double got = m.value();
      bool pct = name.find("pct") != std::string::npos;
      bool rate = name.find("per_second") != std::string::npos;
      if (!pct && !rate && std::fabs(*want) < 1e6) continue;
      if (rate && std::fabs(*want) < 1e10) continue;
      ++compared;
      bool cycles = (name.find("cycles") != std::string::npos || name.find("time_duration") != std::string::npos) && !pct;
      double tolerance = pct ? 5.0 : ((rate || cycles) ? 0.05 : 0.02);
      double diff = pct ? std::fabs(got - *want) : std::fabs(got - *want) / std::fabs(*want);
      auto explained = kExplained.find({e.function, name});
      if (explained != kExplained.end()) tolerance = explained->second;
      INFO(e.function << " " << name << ": agent " << got << ", ncu " << *want);
      CHECK(diff <= tolerance);
      if (diff <= tolerance) ++agreed;
    }
  }
  // Most of what the agent collects is also in the captures; a handful of comparisons would mean
  // the names drifted apart.
  CHECK(compared >= 150);
  CHECK(agreed == compared);
}

TEST_CASE("agent on the H200: graphs and captured launches are recorded, never profiled", "[agent-h200]") {
  AgentFile f = load("prog_graphs.pb");
  REQUIRE(f.end != nullptr);
  CHECK(f.end->graph_launches() == 3);
  CHECK(f.end->captured_launches() == 3);
  CHECK(f.end->kernel_launches() == 5);  // 2 ordinary + 3 captured
  // Only the two ordinary launches can have been profiled.
  CHECK(f.end->profiled_launches() <= 2);
}

TEST_CASE("agent on the H200: several threads and two contexts", "[agent-h200]") {
  AgentFile mt = load("prog_multithread.pb");
  REQUIRE(mt.end != nullptr);
  CHECK(mt.end->kernel_launches() == uint64_t{8} * 100);
  CHECK(mt.final_by_function.count("gt_scale") == 1);
  CHECK(mt.final_by_function.count("gt_offset") == 1);
  for (const auto& ks : mt.end->kernels()) CHECK(ks.profiled() <= 3);

  AgentFile two = load("prog_two_contexts.pb");
  REQUIRE(two.end != nullptr);
  CHECK(two.end->kernel_launches() == 9);  // 3 in the primary context, 3 in the second, 3 back
  std::set<uint64_t> contexts;
  for (const v1::Record& r : two.read.file.records()) {
    if (r.has_kernel() && r.kernel().status() == v1::PROFILE_STATUS_PROFILED) contexts.insert(r.kernel().context_id());
  }
  // The second context runs its own kernel, so each context's range profiler serves a launch.
  CHECK(contexts.size() == 2);
}

TEST_CASE("agent on the H200: library kernels get next actions their callers can take", "[agent-h200]") {
  // Issue 23, today's engine on the recorded counters. The verdict is the recorded one; the next
  // action names what the caller controls instead of the kernel's code.
  AgentFile f = load("torch_loop.pb");
  size_t seen = 0;
  for (const auto& [fn, k] : f.final_by_function) {
    INFO(fn);
    const triage::Diagnosis d = triage::triage_kernel(input_from(f, *k));
    CHECK(d.primary_rule == k->diagnosis().primary_rule_id());
    if (fn.rfind("sm80_xmma_gemm_f32f32", 0) == 0) {
      // cuBLAS's fp32 GEMM on the FMA pipe: the caller can let it use the Tensor Cores.
      ++seen;
      CHECK(d.library == "cuBLAS");
      CHECK(d.primary_limiter == triage::Limiter::kPipeFma);
      CHECK(d.next_action.find("TF32") != std::string::npos);
      CHECK(d.next_action.find("cut FP32 instructions") == std::string::npos);  // D4's advice for own code
    } else if (fn.rfind("at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor", 0) == 0) {
      // PyTorch's DRAM-bound elementwise op: fuse it, move fewer bytes.
      ++seen;
      CHECK(d.library == "PyTorch");
      CHECK(d.classification == triage::Classification::kMemoryBound);
      CHECK(d.next_action.find("torch.compile") != std::string::npos);
    } else if (fn.rfind("cutlass::", 0) == 0) {
      ++seen;
      CHECK(d.library == "CUTLASS");
    }
  }
  CHECK(seen == 5);  // two cuBLAS fp32 GEMMs, two CUTLASS SIMT GEMMs, one elementwise op

  AgentFile g = load("zoo_cublas_gemm.pb");
  const v1::KernelProfile& k = final_of(g, "nvjet_sm90_tss_320x128_64x3_1x2_h_bz_coopB_NNT");
  const triage::Diagnosis d = triage::triage_kernel(input_from(g, k));
  CHECK(d.library == "cuBLAS");
  CHECK(static_cast<int>(d.classification) == static_cast<int>(k.diagnosis().classification()));
  CHECK(d.next_action != k.diagnosis().next_action());  // was: "Stop micro-tuning; change the algorithm ..."
  CHECK(d.next_action.find("lower precision") != std::string::npos);
}

TEST_CASE("agent on the H200: the PyTorch loop's kernels are profiled and diagnosed", "[agent-h200]") {
  AgentFile f = load("torch_loop.pb");
  REQUIRE(f.end != nullptr);
  CHECK(f.end->kernel_launches() > 100);
  CHECK(f.final_by_function.size() >= 8);
  bool gemm = false;
  for (const auto& [fn, k] : f.final_by_function) {
    INFO(fn);
    CHECK(k->diagnosis().classification() != v1::CLASSIFICATION_UNSPECIFIED);
    gemm |= fn.find("gemm") != std::string::npos || fn.find("nvjet") != std::string::npos ||
            fn.find("sm90") != std::string::npos;
  }
  CHECK(gemm);  // cuBLAS's GEMMs arrive through cuLaunchKernelEx and are profiled too
}

}  // namespace test_agent_h200
