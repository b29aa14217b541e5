// Library kernels recognized by name (library.h) and the next actions their callers get.
// Names marked "real" are copied from the captures (tests/data/agent/torch_loop.pb,
// zoo_cublas_gemm.pb, tests/data/graphs/*.pb); the others are synthetic, in the libraries' naming
// schemes, for libraries no capture holds (NCCL, cuDNN, older cuBLAS kernels).
#include <string>

#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/library.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_library {

using namespace cutriage::triage;

namespace {

struct Named {
  const char* function;  // base name ("" when only the mangled name is known)
  const char* mangled;
  const char* library;   // nullptr: not a library kernel
  LibraryFamily family;
};

const Named kNames[] = {
    // Real names.
    {"nvjet_sm90_tss_320x128_64x3_1x2_h_bz_coopB_NNT", "nvjet_sm90_tss_320x128_64x3_1x2_h_bz_coopB_NNT", "cuBLAS",
     LibraryFamily::kGemm},
    {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", "", "cuBLAS", LibraryFamily::kGemm},
    {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_"
     "kernel__5x_cublas",
     "", "cuBLAS", LibraryFamily::kGemm},
    {"cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>",
     "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_128x256_8x4_nt_align1EEvNT_6ParamsE", "CUTLASS",
     LibraryFamily::kGemm},
    {"", "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nt_align1EEvNT_6ParamsE", "CUTLASS",
     LibraryFamily::kGemm},
    {"at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >", "",
     "PyTorch", LibraryFamily::kTorchElementwise},
    {"", "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_15mse_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE_"
     "clEvENKUlvE0_clEvEUlffE_St5arrayIPcLm3EEEEviT0_T1_",
     "PyTorch", LibraryFamily::kTorchElementwise},
    {"at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::mse_backward_cuda_kernel",
     "", "PyTorch", LibraryFamily::kTorchElementwise},
    {"", "_ZN2at6native55_GLOBAL__N__d25d856e_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_apply_kernelINS1_"
     "18TensorListMetadataILi2EEENS1_24BinaryOpListAlphaFunctorIfLi2ELi2ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_",
     "PyTorch", LibraryFamily::kTorchElementwise},
    {"at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, float, 4, 4> >",
     "", "PyTorch", LibraryFamily::kTorchReduction},
    {"", "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_"
     "14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
     "PyTorch", LibraryFamily::kTorchReduction},
    {"at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, false>", "", "PyTorch",
     LibraryFamily::kTorchOther},
    {"triton_poi_fused_gelu_1", "triton_poi_fused_gelu_1", "Triton", LibraryFamily::kTritonGenerated},
    {"triton_red_fused_add_native_layer_norm_2", "", "Triton", LibraryFamily::kTritonGenerated},
    // Synthetic names in the libraries' schemes.
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "", "NCCL", LibraryFamily::kCollective},
    {"ncclKernel_AllGather_RING_LL_Sum_int8_t", "", "NCCL", LibraryFamily::kCollective},
    {"sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_"
     "tensor16x8x16_execute_kernel__5x_cudnn",
     "", "cuDNN", LibraryFamily::kConvolution},  // an xmma kernel, but cuDNN's convolution
    {"implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>", "", "cuDNN",
     LibraryFamily::kConvolution},
    {"cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>", "", "cuDNN",
     LibraryFamily::kConvolution},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
     "5x_cublas",
     "", "cuBLAS", LibraryFamily::kGemm},
    {"ampere_sgemm_128x64_nn", "", "cuBLAS", LibraryFamily::kGemm},
    {"volta_h884gemm_64x64_ldg8_nn", "", "cuBLAS", LibraryFamily::kGemm},
    {"turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "", "cuBLAS", LibraryFamily::kGemm},
    {"gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, false, "
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const float>, float>, float>",
     "", "cuBLAS", LibraryFamily::kGemm},
    {"gemmSN_TN_kernel<float, 128, 16, 2, 4, 2, 2, false>", "", "cuBLAS", LibraryFamily::kGemm},
    {"cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, false, false>", "", "cuBLAS",
     LibraryFamily::kGemm},
    // The program's own kernels, including names that only resemble a library's.
    {"zoo_vector_add", "_Z14zoo_vector_addPK6float4S1_PS_i", nullptr, LibraryFamily::kGemm},
    {"zoo_fma_chain", "", nullptr, LibraryFamily::kGemm},
    {"my_reduce_kernel<float>", "", nullptr, LibraryFamily::kGemm},  // reduce_kernel outside at::native
    {"ampere_tiled_copy", "", nullptr, LibraryFamily::kGemm},         // an architecture prefix, no GEMM
    {"gemm_tiled<64>", "", nullptr, LibraryFamily::kGemm},            // a hand-written GEMM
    {"my_triton_like_kernel", "", nullptr, LibraryFamily::kGemm},     // triton_ not at the start
};

Diagnosis verdict(Classification c, Limiter l, bool at_limit = false) {
  Diagnosis d;
  d.classification = c;
  d.primary_limiter = l;
  d.at_hardware_limit = at_limit;
  return d;
}

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("library: kernels recognized by name, real and synthetic", "[library]") {
  for (const Named& n : kNames) {
    INFO(n.function << " / " << n.mangled);
    std::optional<LibraryKernel> k = recognize_library(n.function, "", n.mangled);
    if (n.library == nullptr) {
      CHECK_FALSE(k.has_value());
      continue;
    }
    REQUIRE(k.has_value());
    CHECK(k->library == n.library);
    CHECK(k->family == n.family);
  }
  // The base name is taken from the demangled name when none is given.
  std::optional<LibraryKernel> d = recognize_library("", "void splitKreduce_kernel<32, 16, int, float>(cublasSplitKParams<float>)", "");
  REQUIRE(d.has_value());
  CHECK(d->library == "cuBLAS");
  CHECK_FALSE(recognize_library("", "", "").has_value());
}

TEST_CASE("library: next actions are the caller's, by limiter (synthetic verdicts)", "[library]") {
  const LibraryKernel cublas{"cuBLAS", LibraryFamily::kGemm, "nvjet_"};
  // An fp32 GEMM on the FMA pipe (torch_loop's sm80_xmma ffma kernels): Tensor Cores through TF32.
  std::string fma = library_next_action(cublas, verdict(Classification::kComputeBound, Limiter::kPipeFma, true));
  CHECK(has(fma, "TF32"));
  CHECK(has(fma, "multiples of 8"));
  // At the roof on the Tensor Cores: less or cheaper work.
  std::string roof = library_next_action(cublas, verdict(Classification::kSaturated, Limiter::kNearHardwareLimit, true));
  CHECK(has(roof, "lower precision"));
  CHECK(has(roof, "fp8"));
  // Bandwidth: batching and epilogue fusion.
  std::string mem = library_next_action(cublas, verdict(Classification::kMemoryBound, Limiter::kDramBandwidth));
  CHECK(has(mem, "epilogue"));
  CHECK(has(mem, "batched"));
  // Access pattern: alignment and layout.
  std::string access = library_next_action(cublas, verdict(Classification::kLatencyBound, Limiter::kUncoalescedGlobal));
  CHECK(has(access, "16-byte"));
  CHECK(has(access, "leading dimensions"));
  // Geometry: batching, tile-friendly shapes, split-K.
  for (Limiter l : {Limiter::kSmallGrid, Limiter::kTailWave, Limiter::kLoadImbalance}) {
    std::string geo = library_next_action(cublas, verdict(Classification::kLatencyBound, l));
    CHECK(has(geo, "split-K"));
  }
  CHECK(has(library_next_action(cublas, verdict(Classification::kUndersized, Limiter::kUnspecified)), "batch"));
  // Nothing specific: the caller's levers, the library named.
  std::string other = library_next_action(cublas, verdict(Classification::kLatencyBound, Limiter::kStallDominant));
  CHECK(has(other, "cuBLAS's kernel is not yours to change"));

  const LibraryKernel torch_ew{"PyTorch", LibraryFamily::kTorchElementwise, "vectorized_elementwise_kernel"};
  std::string ew = library_next_action(torch_ew, verdict(Classification::kMemoryBound, Limiter::kDramBandwidth));
  CHECK(has(ew, "torch.compile"));
  CHECK(has(ew, "contiguous"));
  CHECK(has(ew, "bf16"));
  CHECK(has(library_next_action(torch_ew, verdict(Classification::kUndersized, Limiter::kSmallGrid)), "CUDA graphs"));
  const LibraryKernel torch_red{"PyTorch", LibraryFamily::kTorchReduction, "reduce_kernel"};
  CHECK(has(library_next_action(torch_red, verdict(Classification::kMemoryBound, Limiter::kDramBandwidth)),
            "contiguous (last) dimension"));

  const LibraryKernel triton{"Triton", LibraryFamily::kTritonGenerated, "triton_"};
  std::string tr = library_next_action(triton, verdict(Classification::kLatencyBound, Limiter::kOccupancyRegisters));
  CHECK(has(tr, "num_warps"));
  CHECK(has(tr, "num_stages"));
  CHECK(has(tr, "max-autotune"));

  const LibraryKernel nccl{"NCCL", LibraryFamily::kCollective, "ncclDevKernel"};
  std::string coll = library_next_action(nccl, verdict(Classification::kLatencyBound, Limiter::kStallDominant));
  CHECK(has(coll, "overlap"));
  CHECK(has(coll, "bucket"));
  CHECK(has(coll, "topo"));

  const LibraryKernel cudnn{"cuDNN", LibraryFamily::kConvolution, "cudnn"};
  std::string conv = library_next_action(cudnn, verdict(Classification::kComputeBound, Limiter::kPipeFma));
  CHECK(has(conv, "channels_last"));
  CHECK(has(conv, "cudnn.benchmark"));
}

TEST_CASE("library: the engine keeps the verdict and gives the caller's next action (synthetic)", "[library]") {
  // The same counters under a user kernel's name and under a cuBLAS kernel's name.
  KernelInput k;
  k.function_name = "gemm_tiled";
  k.metrics.set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 30, "%");
  k.metrics.set("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 85, "%");
  k.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 88, "%");
  k.metrics.set("sm__warps_active.avg.pct_of_peak_sustained_active", 75, "%");
  const Diagnosis own = triage_kernel(k);
  CHECK(own.library.empty());
  REQUIRE(own.classification == Classification::kMemoryBound);

  k.function_name = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT";
  const Diagnosis lib = triage_kernel(k);
  CHECK(lib.library == "cuBLAS");
  CHECK(lib.classification == own.classification);
  CHECK(lib.primary_rule == own.primary_rule);
  CHECK(lib.primary_limiter == own.primary_limiter);
  CHECK(lib.headline == own.headline);
  CHECK(lib.estimated_speedup == own.estimated_speedup);
  CHECK(lib.next_action != own.next_action);
  CHECK(has(lib.next_action, "cuBLAS"));
  // The rule's own action stays on its check, for the path.
  const CheckResult* primary = lib.check(lib.primary_rule);
  REQUIRE(primary != nullptr);
  REQUIRE(primary->finding.has_value());
  CHECK(primary->finding->next_action == own.next_action);

  // No verdict (inconclusive: nothing to route on): the action about collection stays.
  KernelInput empty;
  empty.function_name = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT";
  const Diagnosis none = triage_kernel(empty);
  CHECK(none.library == "cuBLAS");
  CHECK(none.classification == Classification::kInconclusive);
  CHECK(has(none.next_action, "Collect"));
}

TEST_CASE("library: communication kernels by name, the rule the agent and the report share", "[library]") {
  CHECK(is_communication_kernel("ncclKernel_AllGather"));
  CHECK(is_communication_kernel("ncclDevKernel_AllReduce_Sum_f32"));
  CHECK(is_communication_kernel("at::native::ncclLaunch"));
  CHECK(is_communication_kernel("nvshmemi_barrier_kernel"));
  CHECK_FALSE(is_communication_kernel("gemm_kernel"));
  CHECK_FALSE(is_communication_kernel("my_nccl_helper"));  // not a prefix, not a namespace
  CHECK_FALSE(is_communication_kernel(""));
}

}  // namespace test_library
