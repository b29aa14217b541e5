// Can CUPTI's PM sampling (cupti_pmsampling.h) give per-kernel-node counters for a CUDA graph?
// Device-level counters are sampled at a fixed interval across cuGraphLaunch, and each sample is
// attributed to the graph node that ran at that time, by the kernel activity records' GPU start and
// end (the graph's nodes run one after another). One way per child process, as graph_probe.cu:
// a way that crashes takes only its child down. Standalone (raw CUPTI, no project library), built
// and run by tests/gpu/run_pm_probe.sh; the output goes under tests/data/graphs/.
//
//   nvcc -std=c++17 -O2 -arch=sm_90 tests/gpu/pm_probe.cu -o pm_probe -lcupti -lnvperf_host
//   ./pm_probe [WAY...]            (none: every way but the ones run by name only)
//   ./pm_probe --selftest          (the attribution on made-up samples; no GPU needed)
// The driver is reached through the runtime's entry points (no -lcuda), so the binary starts where
// there is none: it says "skipped" (exit 77), and --selftest runs.
//
// The graph (captured from one stream, a chain): pm_add (DRAM, read+write), pm_stream (DRAM),
// a memset node, pm_fma (FP32 FMA pipe), pm_tiny (one block, shorter than a sample), pm_dfma
// (FP64 pipe), pm_mma (tensor pipe, WMMA), pm_l2 (L2-resident reads, __ldcg), pm_add again.
// About 1 ms per replay. Every replay adds 2 to each element of `counter`; the other outputs are
// idempotent and compared bit for bit with a plain launch of each kernel made before any profiling
// (the outputs are overwritten with garbage after that reference, so a node that does not run shows).
//
// Ways:
//   trace_5us, trace_20us  kernel trace (CONCURRENT_KERNEL + MEMSET activity) on, PM sampling every
//                          5 / 20 us across 10 graph launches; samples attributed to nodes
//   notrace_10us           the same without the trace: whole-window values and the timeline only
//   stream_10us            the same kernels launched one by one on a stream (no graph), trace on
//   reference              range profiler, auto range + kernel replay, each kernel launched plainly:
//                          the PM set's names and the rules' own names per kernel (ground truth)
//   after_rp_10us          `reference`, then an agent-like graph collection (user range + user
//                          replay, one pass, over one cuGraphLaunch), range profiler disabled, then
//                          trace_10us in the same process; per node PM next to the range profiler
//   during_rp              range profiler enabled and configured on the context (user range, user
//                          replay) while PM sampling runs; both collect over one graph launch
//   pm_then_rp             PM sampling (trace on), disabled, then `reference` in the same process
//   trace_10us             run by name (after_rp_10us contains it)
// Environment: PM_METRICS=name,name,... replaces the PM set; PM_LAUNCHES (10); PM_HWBUF_MB (256).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <mma.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

// ---- checks -----------------------------------------------------------------------------------

#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("  FAIL %s: %s\n", #call, cudaGetErrorString(e_));                 \
      std::fflush(stdout);                                                           \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

const char* cupti_string(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "?";
}

// Every CUPTI call goes through here: its result string is printed when it fails (and, with
// `verbose`, when it succeeds).
bool cp(CUptiResult r, const char* what, bool verbose = false) {
  if (r != CUPTI_SUCCESS || verbose) std::printf("  cupti %s -> %s\n", what, cupti_string(r));
  return r == CUPTI_SUCCESS;
}
#define CP(call) cp((call), #call)
#define CPV(call) cp((call), #call, true)

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
uint64_t cupti_now() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : fallback;
}

// ---- the kernels --------------------------------------------------------------------------------

extern "C" __global__ void pm_add(int* c, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    c[i] += 1;
  }
}
extern "C" __global__ void pm_stream(float* y, const float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    y[i] = 2.0f * x[i] + 1.0f;
  }
}
extern "C" __global__ void pm_fma(float* y, const float* x, int iters) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = x[i] + 0.125f * j;
  for (int k = 0; k < iters; ++k) {
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], 0.9999f, 0.0001f);
  }
  float s = 0;
  for (int j = 0; j < 8; ++j) s += a[j];
  y[i] = s;
}
extern "C" __global__ void pm_dfma(double* y, const float* x, int iters) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  double a[8];
  for (int j = 0; j < 8; ++j) a[j] = x[i] + 0.125 * j;
  for (int k = 0; k < iters; ++k) {
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = fma(a[j], 0.9999, 0.0001);
  }
  double s = 0;
  for (int j = 0; j < 8; ++j) s += a[j];
  y[i] = s;
}
extern "C" __global__ void pm_mma(float* y, int iters) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1;
  wmma::fill_fragment(a, __float2half(0.01f));
  wmma::fill_fragment(b, __float2half(0.01f));
  wmma::fill_fragment(c0, 0.0f);
  wmma::fill_fragment(c1, 0.0f);
  for (int k = 0; k < iters; ++k) {
    wmma::mma_sync(c0, a, b, c0);
    wmma::mma_sync(c1, a, b, c1);
  }
  for (int t = 0; t < c0.num_elements; ++t) c0.x[t] += c1.x[t];
  const size_t warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) / 32;
  wmma::store_matrix_sync(y + warp * 256, c0, 16, wmma::mem_row_major);
}
extern "C" __global__ void pm_l2(float* out, const float* src, size_t n, int reps) {
  const size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  float s = 0;
  for (int r = 0; r < reps; ++r) {
    for (size_t i = tid; i < n; i += stride) s += __ldcg(src + i);
  }
  out[tid] = s;
}
extern "C" __global__ void pm_tiny(int* c) {
  if (threadIdx.x == 0 && c[0] < 0) c[0] = 0;
}
extern "C" __global__ void pm_init(float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    x[i] = static_cast<float>(i % 1000) * 0.001f;
  }
}

// ---- the workload -------------------------------------------------------------------------------

constexpr size_t kStreamN = size_t(32) << 20;  // floats: 128 MB read, 128 MB written
constexpr size_t kAddN = size_t(32) << 20;     // ints: 128 MB read and written
constexpr size_t kScratchBytes = size_t(64) << 20;
constexpr size_t kL2N = size_t(2) << 20;  // 8 MB, L2-resident
constexpr int kFmaIters = 3072, kDfmaIters = 1024, kMmaIters = 512, kL2Reps = 128;

// Kernels in launch order (the memset between pm_stream and pm_fma is not a kernel).
const std::vector<std::string> kKernelOrder = {"pm_add", "pm_stream", "pm_fma", "pm_tiny",
                                               "pm_dfma", "pm_mma", "pm_l2", "pm_add"};

struct Workload {
  int sms = 0;
  int* counter = nullptr;
  float *x = nullptr, *y_stream = nullptr, *y_fma = nullptr, *l2src = nullptr, *y_l2 = nullptr, *y_mma = nullptr;
  double* y_dfma = nullptr;
  unsigned char* scratch = nullptr;
  size_t n_threads = 0, n_mma = 0;
  cudaStream_t stream{};
  cudaGraph_t graph{};
  cudaGraphExec_t exec{};
  int sequences = 0;  // each adds 2 to counter
  std::vector<unsigned char> ref_stream, ref_fma, ref_dfma, ref_mma, ref_l2;

  void alloc_and_reference() {
    CK(cudaFree(nullptr));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    n_threads = size_t(sms) * 8 * 256;
    n_mma = n_threads / 32 * 256;
    CK(cudaMalloc(&counter, kAddN * sizeof(int)));
    CK(cudaMalloc(&x, kStreamN * sizeof(float)));
    CK(cudaMalloc(&y_stream, kStreamN * sizeof(float)));
    CK(cudaMalloc(&y_fma, n_threads * sizeof(float)));
    CK(cudaMalloc(&y_dfma, n_threads * sizeof(double)));
    CK(cudaMalloc(&y_mma, n_mma * sizeof(float)));
    CK(cudaMalloc(&l2src, kL2N * sizeof(float)));
    CK(cudaMalloc(&y_l2, n_threads * sizeof(float)));
    CK(cudaMalloc(&scratch, kScratchBytes));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaMemsetAsync(counter, 0, kAddN * sizeof(int), stream));
    pm_init<<<sms * 8, 256, 0, stream>>>(x, kStreamN);
    pm_init<<<sms * 8, 256, 0, stream>>>(l2src, kL2N);
    // The reference: one plain launch of each output kernel, before any profiling.
    launch_outputs(stream);
    CK(cudaStreamSynchronize(stream));
    ref_stream = copy(y_stream, kStreamN * sizeof(float));
    ref_fma = copy(y_fma, n_threads * sizeof(float));
    ref_dfma = copy(y_dfma, n_threads * sizeof(double));
    ref_mma = copy(y_mma, n_mma * sizeof(float));
    ref_l2 = copy(y_l2, n_threads * sizeof(float));
    garbage();
  }
  // Outputs and the memset target set to 0xFF: a node that does not run leaves them so.
  void garbage() {
    CK(cudaMemsetAsync(y_stream, 0xFF, kStreamN * sizeof(float), stream));
    CK(cudaMemsetAsync(y_fma, 0xFF, n_threads * sizeof(float), stream));
    CK(cudaMemsetAsync(y_dfma, 0xFF, n_threads * sizeof(double), stream));
    CK(cudaMemsetAsync(y_mma, 0xFF, n_mma * sizeof(float), stream));
    CK(cudaMemsetAsync(y_l2, 0xFF, n_threads * sizeof(float), stream));
    CK(cudaMemsetAsync(scratch, 0xFF, kScratchBytes, stream));
    CK(cudaStreamSynchronize(stream));
  }
  std::vector<unsigned char> copy(const void* p, size_t bytes) {
    std::vector<unsigned char> h(bytes);
    CK(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost));
    return h;
  }
  void launch_outputs(cudaStream_t s) {
    const int blocks = sms * 8;
    pm_stream<<<blocks * 4, 256, 0, s>>>(y_stream, x, kStreamN);
    pm_fma<<<blocks, 256, 0, s>>>(y_fma, x, kFmaIters);
    pm_dfma<<<blocks, 256, 0, s>>>(y_dfma, x, kDfmaIters);
    pm_mma<<<blocks, 256, 0, s>>>(y_mma, kMmaIters);
    pm_l2<<<blocks, 256, 0, s>>>(y_l2, l2src, kL2N, kL2Reps);
  }
  // The graph's sequence, on `s`: captured once, or launched plainly (stream way, reference).
  void launch_sequence(cudaStream_t s) {
    const int blocks = sms * 8;
    pm_add<<<blocks * 4, 256, 0, s>>>(counter, kAddN);
    pm_stream<<<blocks * 4, 256, 0, s>>>(y_stream, x, kStreamN);
    CK(cudaMemsetAsync(scratch, 0, kScratchBytes, s));
    pm_fma<<<blocks, 256, 0, s>>>(y_fma, x, kFmaIters);
    pm_tiny<<<1, 32, 0, s>>>(counter);
    pm_dfma<<<blocks, 256, 0, s>>>(y_dfma, x, kDfmaIters);
    pm_mma<<<blocks, 256, 0, s>>>(y_mma, kMmaIters);
    pm_l2<<<blocks, 256, 0, s>>>(y_l2, l2src, kL2N, kL2Reps);
    pm_add<<<blocks * 4, 256, 0, s>>>(counter, kAddN);
  }
  void capture() {
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    launch_sequence(stream);
    CK(cudaStreamEndCapture(stream, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
  }
  void setup() {
    alloc_and_reference();
    capture();
  }
  void launch_graph() {
    CK(cudaGraphLaunch(exec, stream));
    ++sequences;
  }
  void launch_plain() {
    launch_sequence(stream);
    ++sequences;
  }
  bool check() {
    CK(cudaStreamSynchronize(stream));
    std::vector<int> h(kAddN);
    CK(cudaMemcpy(h.data(), counter, kAddN * sizeof(int), cudaMemcpyDeviceToHost));
    const int want = 2 * sequences;
    size_t wrong = 0;
    for (size_t i = 0; i < kAddN; ++i) wrong += h[i] != want ? 1 : 0;
    bool ok = wrong == 0;
    std::printf("  results: counter[0]=%d expected %d (%d sequences), %zu wrong", h[0], want, sequences, wrong);
    auto same = [&](const char* name, const void* p, const std::vector<unsigned char>& ref) {
      const bool eq = copy(p, ref.size()) == ref;
      std::printf("; %s %s", name, eq ? "same" : "DIFFERENT");
      ok = ok && eq;
    };
    same("stream", y_stream, ref_stream);
    same("fma", y_fma, ref_fma);
    same("dfma", y_dfma, ref_dfma);
    same("mma", y_mma, ref_mma);
    same("l2", y_l2, ref_l2);
    const auto s = copy(scratch, kScratchBytes);
    const bool zero = std::all_of(s.begin(), s.end(), [](unsigned char c) { return c == 0; });
    std::printf("; memset %s\n", zero ? "done" : "NOT DONE");
    ok = ok && (sequences == 0 || zero);
    std::printf("  results %s (as a plain launch)\n", ok ? "OK" : "CHANGED");
    return ok;
  }
};

// ---- the kernel trace --------------------------------------------------------------------------

struct Exec {
  std::string name;
  uint64_t node = 0;
  uint32_t graph = 0;
  uint32_t correlation = 0;
  uint64_t start = 0, end = 0;
};
std::mutex g_trace_mutex;
std::vector<Exec> g_execs;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<Exec> got;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      got.push_back({k->name ? k->name : "?", k->graphNodeId, k->graphId, k->correlationId, k->start, k->end});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      got.push_back({"memset", m->graphNodeId, m->graphId, m->correlationId, m->start, m->end});
    }
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  if (dropped != 0) std::printf("  trace: %zu records dropped\n", dropped);
  free(buffer);
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  g_execs.insert(g_execs.end(), got.begin(), got.end());
}

bool g_trace = false;
void trace_on() {
  CP(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  g_trace = true;
}
std::vector<Exec> trace_take() {
  if (g_trace) CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  std::vector<Exec> out;
  out.swap(g_execs);
  std::sort(out.begin(), out.end(), [](const Exec& a, const Exec& b) { return a.start < b.start; });
  return out;
}

// ---- profiler host -------------------------------------------------------------------------------

std::string g_chip;

struct HostConfig {
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> image;
  size_t passes = 0;
  std::vector<std::string> metrics;  // accepted, in order
  ~HostConfig() {
    if (host == nullptr) return;
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = host;
    CP(cuptiProfilerHostDeinitialize(&p));
  }
};

CUpti_Profiler_Host_Object* host_init(CUpti_ProfilerType type, const uint8_t* availability, bool quiet) {
  CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  p.profilerType = type;
  p.pChipName = g_chip.c_str();
  p.pCounterAvailabilityImage = availability;
  const CUptiResult r = cuptiProfilerHostInitialize(&p);
  if (r != CUPTI_SUCCESS || !quiet) cp(r, "cuptiProfilerHostInitialize", !quiet);
  return r == CUPTI_SUCCESS ? p.pHostObject : nullptr;
}
void host_free(CUpti_Profiler_Host_Object* h) {
  if (h == nullptr) return;
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = h;
  CP(cuptiProfilerHostDeinitialize(&p));
}
// Whether the chip accepts `name` for `type` (a fresh host object: a rejected name spoils the
// object for later names).
bool accepted(CUpti_ProfilerType type, const uint8_t* availability, const std::string& name, CUptiResult* why) {
  CUpti_Profiler_Host_Object* h = host_init(type, availability, true);
  if (h == nullptr) return false;
  const char* n = name.c_str();
  CUpti_Profiler_Host_ConfigAddMetrics_Params a{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  a.pHostObject = h;
  a.ppMetricNames = &n;
  a.numMetrics = 1;
  *why = cuptiProfilerHostConfigAddMetrics(&a);
  host_free(h);
  return *why == CUPTI_SUCCESS;
}

// A config for `wanted` (names the chip rejects left out, and said). For PM sampling, names are
// dropped from the end until the config is one pass.
bool build_config(CUpti_ProfilerType type, const uint8_t* availability, std::vector<std::string> wanted,
                  HostConfig& out) {
  const char* kind = type == CUPTI_PROFILER_TYPE_PM_SAMPLING ? "PM sampling" : "range profiler";
  std::vector<std::string> ok;
  for (const std::string& n : wanted) {
    CUptiResult why = CUPTI_SUCCESS;
    if (accepted(type, availability, n, &why)) {
      ok.push_back(n);
    } else {
      std::printf("  %s: %s rejected (%s), left out\n", kind, n.c_str(), cupti_string(why));
    }
  }
  while (!ok.empty()) {
    CUpti_Profiler_Host_Object* h = host_init(type, availability, true);
    if (h == nullptr) return false;
    std::vector<const char*> names;
    for (const auto& n : ok) names.push_back(n.c_str());
    CUpti_Profiler_Host_ConfigAddMetrics_Params a{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    a.pHostObject = h;
    a.ppMetricNames = names.data();
    a.numMetrics = names.size();
    if (!CP(cuptiProfilerHostConfigAddMetrics(&a))) {
      host_free(h);
      return false;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params s{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    s.pHostObject = h;
    if (!CP(cuptiProfilerHostGetConfigImageSize(&s))) {
      host_free(h);
      return false;
    }
    std::vector<uint8_t> image(s.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params g{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    g.pHostObject = h;
    g.configImageSize = image.size();
    g.pConfigImage = image.data();
    if (!CP(cuptiProfilerHostGetConfigImage(&g))) {
      host_free(h);
      return false;
    }
    CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = image.size();
    np.pConfigImage = image.data();
    if (!CP(cuptiProfilerHostGetNumOfPasses(&np))) {
      host_free(h);
      return false;
    }
    if (type == CUPTI_PROFILER_TYPE_PM_SAMPLING && np.numOfPasses > 1) {
      std::printf("  PM sampling: %zu metrics take %zu passes; %s left out\n", ok.size(), np.numOfPasses,
                  ok.back().c_str());
      host_free(h);
      ok.pop_back();
      continue;
    }
    out.host = h;
    out.image = std::move(image);
    out.passes = np.numOfPasses;
    out.metrics = ok;
    std::printf("  %s config: %zu metrics, %zu pass(es), image %zu B\n", kind, ok.size(), out.passes,
                out.image.size());
    return true;
  }
  return false;
}

bool evaluate(const HostConfig& c, const std::vector<uint8_t>& counter_data, size_t index, std::vector<double>& values) {
  std::vector<const char*> names;
  for (const auto& n : c.metrics) names.push_back(n.c_str());
  values.assign(names.size(), NAN);
  CUpti_Profiler_Host_EvaluateToGpuValues_Params e{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  e.pHostObject = c.host;
  e.pCounterDataImage = counter_data.data();
  e.counterDataImageSize = counter_data.size();
  e.rangeIndex = index;
  e.ppMetricNames = names.data();
  e.numMetrics = names.size();
  e.pMetricValues = values.data();
  return CP(cuptiProfilerHostEvaluateToGpuValues(&e));
}

// Through the runtime's driver entry points, so that the binary starts (and skips, or runs
// --selftest) where there is no libcuda.so.1.
CUcontext current_context() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, CUDART_VERSION, cudaEnableDefault, &found));
  CUcontext ctx = nullptr;
  if (fn != nullptr) reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&ctx);
  return ctx;
}

// ---- the PM sampling set -------------------------------------------------------------------------

// How a metric is shown per node: a percentage or a clock is averaged; a counter (.sum) is turned
// into a rate (per ns of sample: bytes/ns = GB/s).
enum class Kind { kMean, kPerNs };
struct PmMetric {
  std::string label;
  std::string name;
  Kind kind;
};

// The one-pass set tests/data/graphs/pm-metrics-gh100.txt (section 6) found for GH100, in order of
// use: Decision 2 (SM vs memory throughput, % of peak), pipes, DRAM bytes.
std::vector<PmMetric> pm_metrics() {
  std::vector<PmMetric> m = {
      {"sm_tput", "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"dramc_tput", "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"dram_tput", "dram__throughput.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"l2_tput", "LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"l1_tput", "SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"issue", "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"sm_active", "TPC.TriageCompute.sm__cycles_active.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"tensor", "TPC.TriageCompute.sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
       Kind::kMean},
      {"fma", "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"fp64", "TPC.TriageCompute.sm__pipe_fp64_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
       Kind::kMean},
      {"alu", "TPC.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"lsu_wf", "SM_A.TriageCompute.l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"dram_rd_GBps", "dram__bytes_read.sum", Kind::kPerNs},
      {"dram_wr_GBps", "dram__bytes_write.sum", Kind::kPerNs},
      {"warps", "TPC.TriageCompute.tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed", Kind::kMean},
      {"sm_clk_Hz", "sm__cycles_elapsed.avg.per_second", Kind::kMean},
      {"duration_ns", "gpu__time_duration.sum", Kind::kMean},
      {"issue_act_ns", "smsp__issue_active.sum", Kind::kPerNs},
      {"l2_sect_ns", "lts__t_sectors.sum", Kind::kPerNs},
      {"gr_active", "gr__cycles_active.sum.pct_of_peak_sustained_elapsed", Kind::kMean},
  };
  if (const char* env = std::getenv("PM_METRICS"); env != nullptr && *env != 0) {
    m.clear();
    std::string s(env);
    size_t pos = 0;
    while (pos <= s.size()) {
      const size_t comma = std::min(s.find(',', pos), s.size());
      const std::string name = s.substr(pos, comma - pos);
      if (!name.empty()) {
        const bool counter = name.size() > 4 && name.compare(name.size() - 4, 4, ".sum") == 0;
        m.push_back({name.substr(name.rfind("__") == std::string::npos ? 0 : name.rfind("__") + 2, 14), name,
                     counter ? Kind::kPerNs : Kind::kMean});
      }
      pos = comma + 1;
    }
  }
  return m;
}

// ---- PM sampling session -------------------------------------------------------------------------

struct Sample {
  uint64_t start = 0, end = 0;
  std::vector<double> values;  // in the set's order (PmSession::metrics)
};

struct PmSession {
  std::vector<PmMetric> metrics;  // accepted ones, the config's order
  HostConfig config;
  CUpti_PmSampling_Object* obj = nullptr;
  std::vector<uint8_t> availability;
  std::vector<uint8_t> counter_data;
  uint64_t interval_ns = 0;
  uint64_t t_start = 0, t_stop = 0;  // cuptiGetTimestamp() just before Start, just after Stop
  bool started = false;

  bool begin(uint64_t interval, size_t max_samples) {
    interval_ns = interval;
    // Counter availability first: "may fail if any profiling or sampling session is active".
    CUpti_PmSampling_GetCounterAvailability_Params av{CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
    av.deviceIndex = 0;
    if (CP(cuptiPmSamplingGetCounterAvailability(&av))) {
      availability.resize(av.counterAvailabilityImageSize);
      av.pCounterAvailabilityImage = availability.data();
      if (!CP(cuptiPmSamplingGetCounterAvailability(&av))) availability.clear();
    }
    std::printf("  counter availability image: %zu B%s\n", availability.size(),
                availability.empty() ? " (none: host objects built without one)" : "");
    const uint8_t* avail = availability.empty() ? nullptr : availability.data();
    std::vector<PmMetric> wanted = pm_metrics();
    std::vector<std::string> names;
    for (const auto& m : wanted) names.push_back(m.name);
    if (!build_config(CUPTI_PROFILER_TYPE_PM_SAMPLING, avail, names, config)) return false;
    for (const auto& n : config.metrics) {
      for (const auto& m : wanted) {
        if (m.name == n) metrics.push_back(m);
      }
    }
    CUpti_PmSampling_Enable_Params en{CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
    en.deviceIndex = 0;
    if (!CPV(cuptiPmSamplingEnable(&en))) return false;
    obj = en.pPmSamplingObject;
    const size_t hw_mb = static_cast<size_t>(env_int("PM_HWBUF_MB", 256));
    CUpti_PmSampling_SetConfig_Params sc{CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
    sc.pPmSamplingObject = obj;
    sc.configSize = config.image.size();
    sc.pConfig = config.image.data();
    sc.hardwareBufferSize = hw_mb << 20;
    sc.samplingInterval = interval;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    const CUptiResult r = cuptiPmSamplingSetConfig(&sc);
    std::printf("  cuptiPmSamplingSetConfig(GPU_TIME_INTERVAL %" PRIu64 " ns, hardware buffer %zu MB, keep oldest) -> %s\n",
                interval, hw_mb, cupti_string(r));
    if (r != CUPTI_SUCCESS) {
      // GH100 should take the fixed-frequency trigger; if not, SYS clock cycles (about 1.6 GHz).
      sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL;
      sc.samplingInterval = interval * 16 / 10;
      if (!CPV(cuptiPmSamplingSetConfig(&sc))) return false;
      std::printf("  (fell back to GPU_SYSCLK_INTERVAL, %" PRIu64 " cycles)\n", sc.samplingInterval);
    }
    std::vector<const char*> cn;
    for (const auto& n : config.metrics) cn.push_back(n.c_str());
    CUpti_PmSampling_GetCounterDataSize_Params ds{CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pPmSamplingObject = obj;
    ds.pMetricNames = cn.data();
    ds.numMetrics = cn.size();
    ds.maxSamples = static_cast<uint32_t>(max_samples);
    if (!CP(cuptiPmSamplingGetCounterDataSize(&ds))) return false;
    counter_data.resize(ds.counterDataSize);
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci{
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pPmSamplingObject = obj;
    ci.counterDataSize = counter_data.size();
    ci.pCounterData = counter_data.data();
    if (!CP(cuptiPmSamplingCounterDataImageInitialize(&ci))) return false;
    std::printf("  counter data image: %zu B for %zu samples\n", counter_data.size(), max_samples);
    CUpti_PmSampling_Start_Params st{CUpti_PmSampling_Start_Params_STRUCT_SIZE};
    st.pPmSamplingObject = obj;
    t_start = cupti_now();
    const double t0 = now_ms();
    if (!CP(cuptiPmSamplingStart(&st))) return false;
    std::printf("  cuptiPmSamplingStart: %.2f ms\n", now_ms() - t0);
    started = true;
    return true;
  }

  // Stop (after the caller synchronized), decode everything, evaluate every completed sample.
  bool end(std::vector<Sample>& samples) {
    if (!started) return false;
    CUpti_PmSampling_Stop_Params sp{CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    sp.pPmSamplingObject = obj;
    const double t0 = now_ms();
    const bool stopped = CP(cuptiPmSamplingStop(&sp));
    t_stop = cupti_now();
    started = false;
    std::printf("  cuptiPmSamplingStop: %.2f ms\n", now_ms() - t0);
    if (!stopped) return false;
    const double t1 = now_ms();
    for (int round = 0; round < 64; ++round) {
      CUpti_PmSampling_DecodeData_Params de{CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
      de.pPmSamplingObject = obj;
      de.pCounterDataImage = counter_data.data();
      de.counterDataImageSize = counter_data.size();
      if (!CP(cuptiPmSamplingDecodeData(&de))) {
        // OUT_OF_MEMORY is a hardware-buffer overflow: what was decoded before is still read.
        std::printf("  decode %d failed (overflow %u); reading what was decoded\n", round,
                    static_cast<unsigned>(de.overflow));
        break;
      }
      std::printf("  decode %d: stop reason %s, overflow %u\n", round,
                  de.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS     ? "end of records"
                  : de.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL ? "COUNTER DATA FULL"
                                                                                                 : "other",
                  static_cast<unsigned>(de.overflow));
      if (de.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER) break;
    }
    CUpti_PmSampling_GetCounterDataInfo_Params inf{CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
    inf.pCounterDataImage = counter_data.data();
    inf.counterDataImageSize = counter_data.size();
    if (!CP(cuptiPmSamplingGetCounterDataInfo(&inf))) return false;
    std::printf("  samples: %zu total, %zu populated, %zu completed; decode %.1f ms\n", inf.numTotalSamples,
                inf.numPopulatedSamples, inf.numCompletedSamples, now_ms() - t1);
    const double t2 = now_ms();
    size_t failed = 0;
    for (size_t i = 0; i < inf.numCompletedSamples; ++i) {
      CUpti_PmSampling_CounterData_GetSampleInfo_Params si{CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
      si.pPmSamplingObject = obj;
      si.pCounterDataImage = counter_data.data();
      si.counterDataImageSize = counter_data.size();
      si.sampleIndex = i;
      if (!CP(cuptiPmSamplingCounterDataGetSampleInfo(&si))) {
        ++failed;
        continue;
      }
      Sample s;
      s.start = si.startTimestamp;
      s.end = si.endTimestamp;
      if (!evaluate(config, counter_data, i, s.values)) {
        ++failed;
        if (failed > 3) break;
        continue;
      }
      samples.push_back(std::move(s));
    }
    std::printf("  evaluated %zu samples in %.1f ms (%zu failed)\n", samples.size(), now_ms() - t2, failed);
    return true;
  }

  ~PmSession() {
    if (obj == nullptr) return;
    if (started) {
      CUpti_PmSampling_Stop_Params sp{CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
      sp.pPmSamplingObject = obj;
      CP(cuptiPmSamplingStop(&sp));
    }
    CUpti_PmSampling_Disable_Params di{CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
    di.pPmSamplingObject = obj;
    CPV(cuptiPmSamplingDisable(&di));
  }
};

// ---- attribution ------------------------------------------------------------------------------------

double overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  const uint64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? static_cast<double>(hi - lo) : 0.0;
}

double value_of(const PmMetric& m, const Sample& s, size_t i) {
  const double v = s.values[i];
  if (m.kind == Kind::kPerNs) {
    const double dur = static_cast<double>(s.end - s.start);
    return dur > 0 ? v / dur : NAN;
  }
  return v;
}

struct Node {
  std::string label;
  std::string name;
  uint64_t key = 0;
  int execs = 0;
  double busy_ns = 0;
  int pure = 0;          // samples with >= 90% of their time inside one execution of this node
  double weight = 0;     // sum of overlaps (ns)
  std::vector<double> pure_sum, weighted_sum;
  std::vector<int> pure_n;
};

void print_row(const char* label, const std::vector<std::string>& cells, int width = 11) {
  std::printf("  %-13s", label);
  for (const auto& c : cells) std::printf(" %*s", width, c.c_str());
  std::printf("\n");
}
std::string fmt(double v) {
  char b[32];
  if (std::isnan(v)) return "-";
  if (std::fabs(v) >= 1e6) {
    std::snprintf(b, sizeof b, "%.4g", v);
  } else {
    std::snprintf(b, sizeof b, "%.2f", v);
  }
  return b;
}

// Per node means, the whole graph, the clock check and a timeline of the first launch.
void attribute(const PmSession& pm, std::vector<Sample> samples, const std::vector<Exec>& execs, uint64_t t0,
               int sequences, std::map<std::string, std::vector<double>>* per_name_pure = nullptr) {
  const auto& ms = pm.metrics;
  const size_t nm = ms.size();
  size_t sm = nm;  // the SM-active metric, for the clock checks
  for (size_t i = 0; i < nm; ++i) {
    if (ms[i].label == "sm_active") sm = i;
  }
  // Clocks: every range relative to t0 (cuptiGetTimestamp just before cuptiPmSamplingStart).
  auto rel = [t0](uint64_t t) { return (static_cast<double>(t) - static_cast<double>(t0)) / 1000.0; };
  std::printf("  clocks (us from cuptiGetTimestamp() before Start): stop at %.1f", rel(pm.t_stop));
  if (!samples.empty()) {
    std::printf("; PM samples %.1f .. %.1f (raw first start %" PRIu64 ")", rel(samples.front().start),
                rel(samples.back().end), samples.front().start);
  }
  if (!execs.empty()) {
    std::printf("; traced executions %.1f .. %.1f (raw first start %" PRIu64 ")", rel(execs.front().start),
                rel(execs.back().end), execs.front().start);
  }
  std::printf("\n");
  if (samples.empty()) return;
  {
    std::vector<double> d;
    size_t gaps = 0, overlaps = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      d.push_back(static_cast<double>(samples[i].end - samples[i].start));
      if (i > 0 && samples[i].start > samples[i - 1].end) ++gaps;
      if (i > 0 && samples[i].start < samples[i - 1].end) ++overlaps;
    }
    std::sort(d.begin(), d.end());
    std::printf("  sample length ns: min %.0f median %.0f max %.0f; %zu gaps and %zu overlaps between samples\n",
                d.front(), d[d.size() / 2], d.back(), gaps, overlaps);
  }
  // Whole-window means (every sample).
  {
    std::vector<std::string> cells;
    std::printf("  whole window, %zu samples (mean per sample; counters per ns):\n", samples.size());
    for (size_t i = 0; i < nm; ++i) {
      double s = 0;
      int n = 0;
      for (const auto& x : samples) {
        const double v = value_of(ms[i], x, i);
        if (!std::isnan(v)) s += v, ++n;
      }
      std::printf("    %-13s %s\n", ms[i].label.c_str(), fmt(n ? s / n : NAN).c_str());
    }
  }
  if (execs.empty()) {
    // No trace: a timeline of the first 1.5 ms of activity (SM active over 5%) is all there is.
    size_t first = 0;
    while (first < samples.size() && sm < nm && !(samples[first].values[sm] > 5.0)) ++first;
    std::printf("  timeline from the first sample with SM activity (no trace to attribute it):\n");
    std::printf("    %9s %7s", "t_us", "len_us");
    for (size_t i = 0; i < nm && i < 12; ++i) std::printf(" %10s", ms[i].label.c_str());
    std::printf("\n");
    const uint64_t t_first = first < samples.size() ? samples[first].start : 0;
    size_t lines = 0;
    for (size_t k = first; k < samples.size() && lines < 160; ++k) {
      const Sample& s = samples[k];
      if (s.start > t_first + 1500000) break;
      std::printf("    %9.1f %7.2f", (s.start - t_first) / 1000.0, (s.end - s.start) / 1000.0);
      for (size_t i = 0; i < nm && i < 12; ++i) std::printf(" %10s", fmt(value_of(ms[i], s, i)).c_str());
      std::printf("\n");
      ++lines;
    }
    return;
  }

  // If the samples' clock and the trace's clock are far apart (different bases), line them up by
  // the first sample with SM activity and the first traced execution, and say so.
  if (sm < nm) {
    const Sample* first_active = nullptr;
    for (const Sample& s : samples) {
      if (s.values[sm] > 5.0) {
        first_active = &s;
        break;
      }
    }
    if (first_active != nullptr) {
      const int64_t coarse = static_cast<int64_t>(execs.front().start) - static_cast<int64_t>(first_active->start);
      std::printf("  first sample with sm_active > 5%% starts %+.1f us from the first traced execution\n",
                  -coarse / 1000.0);
      if (coarse > 200000 || coarse < -200000) {
        std::printf("  CLOCKS DIFFER: every sample shifted by %+.1f us before attribution\n", coarse / 1000.0);
        for (Sample& s : samples) {
          s.start = static_cast<uint64_t>(static_cast<int64_t>(s.start) + coarse);
          s.end = static_cast<uint64_t>(static_cast<int64_t>(s.end) + coarse);
        }
      }
    }
  }

  // Nodes: by graph node id (graph launches) or by name (plain launches).
  std::vector<Node> nodes;
  std::map<uint64_t, size_t> by_key;
  std::map<std::string, size_t> by_name;
  std::vector<size_t> exec_node(execs.size());
  for (size_t e = 0; e < execs.size(); ++e) {
    const Exec& x = execs[e];
    size_t idx;
    if (x.node != 0) {
      auto it = by_key.find(x.node);
      if (it == by_key.end()) {
        it = by_key.emplace(x.node, nodes.size()).first;
        nodes.push_back({});
      }
      idx = it->second;
    } else {
      auto it = by_name.find(x.name);
      if (it == by_name.end()) {
        it = by_name.emplace(x.name, nodes.size()).first;
        nodes.push_back({});
      }
      idx = it->second;
    }
    Node& n = nodes[idx];
    if (n.execs == 0) {
      n.name = x.name;
      n.key = x.node;
      n.pure_sum.assign(nm, 0);
      n.weighted_sum.assign(nm, 0);
      n.pure_n.assign(nm, 0);
    }
    ++n.execs;
    n.busy_ns += static_cast<double>(x.end - x.start);
    exec_node[e] = idx;
  }
  {
    std::map<std::string, int> seen;
    for (Node& n : nodes) {
      std::string base = n.name.rfind("pm_", 0) == 0 ? n.name.substr(3) : n.name;
      const int k = ++seen[n.name];
      n.label = k > 1 ? base + "#" + std::to_string(k) : base;
    }
  }
  // Graph launches: executions grouped by correlation id (the cuGraphLaunch's), else one group per
  // run of the sequence.
  const bool graph = std::any_of(execs.begin(), execs.end(), [](const Exec& x) { return x.node != 0; });
  std::vector<uint32_t> group(execs.size());
  for (size_t e = 0; e < execs.size(); ++e) {
    group[e] = graph ? execs[e].correlation
                     : static_cast<uint32_t>(e * static_cast<size_t>(std::max(1, sequences)) / execs.size());
  }
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> launches;
  for (size_t e = 0; e < execs.size(); ++e) {
    auto& r = launches[group[e]];
    r.first = r.first == 0 ? execs[e].start : std::min(r.first, execs[e].start);
    r.second = std::max(r.second, execs[e].end);
  }
  std::printf("  trace: %zu executions of %zu nodes; %zu %s\n", execs.size(), nodes.size(), launches.size(),
              graph ? "graph launches (by correlation id)" : "sequences (plain launches, in order)");

  // The clock check: the lag L that best lines up "some traced execution covers the sample" with
  // the sample's SM-active value. 0 when both clocks agree.
  {
    if (sm < nm) {
      auto corr_at = [&](int64_t lag_ns) {
        std::vector<double> a, b;
        for (const Sample& s : samples) {
          double cov = 0;
          const uint64_t s0 = static_cast<uint64_t>(static_cast<int64_t>(s.start) + lag_ns);
          const uint64_t s1 = static_cast<uint64_t>(static_cast<int64_t>(s.end) + lag_ns);
          for (const Exec& x : execs) cov += overlap(s0, s1, x.start, x.end);
          const double len = static_cast<double>(s.end - s.start);
          a.push_back(len > 0 ? std::min(1.0, cov / len) : 0);
          b.push_back(s.values[sm]);
        }
        double ma = 0, mb = 0;
        for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
        ma /= a.size();
        mb /= b.size();
        double sab = 0, saa = 0, sbb = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          sab += (a[i] - ma) * (b[i] - mb);
          saa += (a[i] - ma) * (a[i] - ma);
          sbb += (b[i] - mb) * (b[i] - mb);
        }
        return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
      };
      int64_t best = 0;
      double best_c = -2;
      const int64_t step = std::max<int64_t>(500, static_cast<int64_t>(pm.interval_ns) / 4);
      for (int64_t lag = -200000; lag <= 200000; lag += step) {
        const double c = corr_at(lag);
        if (c > best_c) best_c = c, best = lag;
      }
      std::printf("  clock check: correlation of traced busy fraction with sm_active: %.3f at lag 0; best %.3f at "
                  "lag %+.1f us (sample time + lag = trace time; searched +-200 us in %.1f us steps)\n",
                  corr_at(0), best_c, best / 1000.0, step / 1000.0);
    }
  }

  // Per sample: which executions it overlaps.
  int idle = 0, mixed = 0;
  std::vector<double> graph_sum(nm, 0);
  double graph_w = 0;
  for (const Sample& s : samples) {
    const double len = static_cast<double>(s.end - s.start);
    if (len <= 0) continue;
    double best = 0, total = 0;
    size_t best_node = 0;
    std::map<size_t, double> per_node;
    for (size_t e = 0; e < execs.size(); ++e) {
      const double o = overlap(s.start, s.end, execs[e].start, execs[e].end);
      if (o <= 0) continue;
      per_node[exec_node[e]] += o;
      total += o;
    }
    for (const auto& [n, o] : per_node) {
      Node& node = nodes[n];
      node.weight += o;
      for (size_t i = 0; i < nm; ++i) {
        const double v = value_of(ms[i], s, i);
        if (!std::isnan(v)) node.weighted_sum[i] += o * v;
      }
      if (o > best) best = o, best_node = n;
    }
    if (per_node.empty()) {
      ++idle;
    } else if (best >= 0.9 * len) {
      Node& node = nodes[best_node];
      ++node.pure;
      for (size_t i = 0; i < nm; ++i) {
        const double v = value_of(ms[i], s, i);
        if (!std::isnan(v)) node.pure_sum[i] += v, ++node.pure_n[i];
      }
    } else {
      ++mixed;
    }
    // Whole graph: samples weighted by their overlap with the launches' spans.
    double in_launch = 0;
    for (const auto& [c, r] : launches) in_launch += overlap(s.start, s.end, r.first, r.second);
    if (in_launch > 0) {
      graph_w += in_launch;
      for (size_t i = 0; i < nm; ++i) {
        const double v = value_of(ms[i], s, i);
        if (!std::isnan(v)) graph_sum[i] += in_launch * v;
      }
    }
    (void)total;
  }
  std::printf("  samples: %zu; pure (>=90%% in one node) %d, mixed %d, idle (no traced execution) %d\n",
              samples.size(), static_cast<int>(samples.size()) - mixed - idle, mixed, idle);

  std::vector<std::string> head, execs_row, dur_row, pure_row, w_row;
  for (const Node& n : nodes) {
    head.push_back(n.label);
    execs_row.push_back(std::to_string(n.execs));
    dur_row.push_back(fmt(n.busy_ns / n.execs / 1000.0));
    pure_row.push_back(std::to_string(n.pure));
    w_row.push_back(fmt(n.weight / pm.interval_ns));
  }
  head.push_back(graph ? "GRAPH" : "SEQUENCE");
  execs_row.push_back(std::to_string(launches.size()));
  double span = 0;
  for (const auto& [c, r] : launches) span += static_cast<double>(r.second - r.first);
  dur_row.push_back(fmt(launches.empty() ? NAN : span / launches.size() / 1000.0));
  pure_row.push_back("-");
  w_row.push_back(fmt(graph_w / pm.interval_ns));
  std::printf("  per node (columns), PM means over the node's pure samples:\n");
  print_row("node", head);
  {
    std::vector<std::string> ids;
    for (const Node& n : nodes) ids.push_back(std::to_string(n.key));
    ids.push_back("-");
    print_row("graph node id", ids);
  }
  print_row("executions", execs_row);
  print_row("mean dur us", dur_row);
  print_row("pure samples", pure_row);
  print_row("overlap/intvl", w_row);
  for (size_t i = 0; i < nm; ++i) {
    std::vector<std::string> cells;
    for (const Node& n : nodes) cells.push_back(fmt(n.pure_n[i] ? n.pure_sum[i] / n.pure_n[i] : NAN));
    cells.push_back(fmt(graph_w > 0 ? graph_sum[i] / graph_w : NAN));
    print_row(ms[i].label.c_str(), cells);
  }
  std::printf("  per node, PM means weighted by overlap (every sample that touches the node; neighbours mix in):\n");
  print_row("node", head);
  for (size_t i = 0; i < nm; ++i) {
    std::vector<std::string> cells;
    for (const Node& n : nodes) cells.push_back(fmt(n.weight > 0 ? n.weighted_sum[i] / n.weight : NAN));
    cells.push_back(fmt(graph_w > 0 ? graph_sum[i] / graph_w : NAN));
    print_row(ms[i].label.c_str(), cells);
  }
  // DRAM MB per execution: the node's weighted read+write rate (GB/s = B/ns) times its traced time.
  {
    size_t rd = nm, wr = nm;
    for (size_t i = 0; i < nm; ++i) {
      if (ms[i].label == "dram_rd_GBps") rd = i;
      if (ms[i].label == "dram_wr_GBps") wr = i;
    }
    if (rd < nm && wr < nm) {
      std::vector<std::string> cells;
      for (const Node& n : nodes) {
        const double per_exec_ns = n.busy_ns / n.execs;
        cells.push_back(n.weight > 0 ? fmt((n.weighted_sum[rd] + n.weighted_sum[wr]) / n.weight * per_exec_ns / 1e6)
                                     : "-");
      }
      cells.push_back("-");
      std::printf("  DRAM MB per execution (weighted rate x traced duration); expected: add 256, stream 256, memset 64,\n"
                  "  l2 8 at most, fma/dfma/mma/tiny about 0:\n");
      print_row("dram MB", cells);
    }
  }
  // Time-weighted mean of the nodes (weighted means x traced time) against the graph's own mean.
  {
    std::vector<std::string> cells;
    for (size_t i = 0; i < nm; ++i) {
      double num = 0, den = 0;
      for (const Node& n : nodes) {
        if (n.weight <= 0) continue;
        num += n.weighted_sum[i] / n.weight * n.busy_ns;
        den += n.busy_ns;
      }
      cells.push_back(fmt(den > 0 ? num / den : NAN));
    }
    std::printf("  nodes' means weighted by their traced time (against the GRAPH column; idle gaps make them differ):\n   ");
    for (size_t i = 0; i < nm; ++i) std::printf(" %s=%s", ms[i].label.c_str(), cells[i].c_str());
    std::printf("\n");
  }
  if (per_name_pure != nullptr) {
    for (const Node& n : nodes) {
      if (per_name_pure->count(n.name)) continue;
      std::vector<double> v;
      for (size_t i = 0; i < nm; ++i) v.push_back(n.pure_n[i] ? n.pure_sum[i] / n.pure_n[i] : NAN);
      (*per_name_pure)[n.name] = v;
    }
  }
  // Timeline of the first launch (at most 120 lines).
  if (!launches.empty()) {
    uint64_t l0 = UINT64_MAX, l1 = 0;
    {
      const auto& r = launches[group.front()];
      l0 = r.first;
      l1 = r.second;
    }
    std::vector<const Sample*> in;
    for (const Sample& s : samples) {
      if (s.end + 20000 >= l0 && s.start <= l1 + 20000) in.push_back(&s);
    }
    const size_t every = in.size() > 120 ? (in.size() + 119) / 120 : 1;
    std::printf("  timeline of the first launch (%zu samples%s; t from the launch's first execution; node = most overlap):\n",
                in.size(), every > 1 ? ", every few shown" : "");
    std::printf("    %8s %6s %-9s", "t_us", "len_us", "node");
    const size_t cols = std::min<size_t>(nm, 12);
    for (size_t i = 0; i < cols; ++i) std::printf(" %10s", ms[i].label.c_str());
    std::printf("\n");
    for (size_t k = 0; k < in.size(); k += every) {
      const Sample& s = *in[k];
      double best = 0;
      std::string who = "-";
      for (size_t e = 0; e < execs.size(); ++e) {
        const double o = overlap(s.start, s.end, execs[e].start, execs[e].end);
        if (o > best) best = o, who = nodes[exec_node[e]].label;
      }
      std::printf("    %8.1f %6.2f %-9s", (static_cast<double>(s.start) - static_cast<double>(l0)) / 1000.0,
                  (s.end - s.start) / 1000.0, who.c_str());
      for (size_t i = 0; i < cols; ++i) std::printf(" %10s", fmt(value_of(ms[i], s, i)).c_str());
      std::printf("\n");
    }
    std::printf("    executions of that launch (t_us from its first):");
    for (size_t e = 0; e < execs.size(); ++e) {
      if (group[e] != group.front()) continue;
      const Exec& x = execs[e];
      std::printf(" %s %.1f-%.1f", x.name.c_str(), (static_cast<double>(x.start) - l0) / 1000.0,
                  (static_cast<double>(x.end) - l0) / 1000.0);
    }
    std::printf("\n");
  }
}

// ---- range profiler (agent-like, raw CUPTI) -----------------------------------------------------------

bool g_profiler_initialized = false;
void profiler_initialize() {
  if (g_profiler_initialized) return;
  CUpti_Profiler_Initialize_Params pi{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  g_profiler_initialized = CPV(cuptiProfilerInitialize(&pi));
}

struct RpRanges {
  std::vector<std::string> kernels;  // what each range is, in order
  std::vector<std::string> metrics;
  std::vector<std::string> names;
  std::vector<std::vector<double>> values;
};

// One collection on the current context. kernel_replay: auto range + kernel replay, `work` once.
// Otherwise user range (one range around each call of `work`) + user replay, `work` once per pass.
bool rp_collect(const std::vector<std::string>& wanted, bool kernel_replay, const std::function<void()>& work,
                RpRanges& out) {
  profiler_initialize();
  HostConfig config;
  if (!build_config(CUPTI_PROFILER_TYPE_RANGE_PROFILER, nullptr, wanted, config)) return false;
  CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = current_context();
  if (!CPV(cuptiRangeProfilerEnable(&en))) return false;
  CUpti_RangeProfiler_Object* obj = en.pRangeProfilerObject;
  bool ok = true;
  std::vector<const char*> names;
  for (const auto& m : config.metrics) names.push_back(m.c_str());
  constexpr size_t kRanges = 32;
  CUpti_RangeProfiler_GetCounterDataSize_Params sz{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  sz.pRangeProfilerObject = obj;
  sz.pMetricNames = names.data();
  sz.numMetrics = names.size();
  sz.maxNumOfRanges = kRanges;
  sz.maxNumRangeTreeNodes = kRanges;
  std::vector<uint8_t> image;
  if ((ok = CP(cuptiRangeProfilerGetCounterDataSize(&sz)))) {
    image.resize(sz.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ini{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ini.pRangeProfilerObject = obj;
    ini.counterDataSize = image.size();
    ini.pCounterData = image.data();
    ok = CP(cuptiRangeProfilerCounterDataImageInitialize(&ini));
  }
  if (ok) {
    CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = obj;
    sc.configSize = config.image.size();
    sc.pConfig = config.image.data();
    sc.counterDataImageSize = image.size();
    sc.pCounterDataImage = image.data();
    sc.range = kernel_replay ? CUPTI_AutoRange : CUPTI_UserRange;
    sc.replayMode = kernel_replay ? CUPTI_KernelReplay : CUPTI_UserReplay;
    sc.maxRangesPerPass = kRanges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    ok = CP(cuptiRangeProfilerSetConfig(&sc));
  }
  bool all = false;
  int rounds = 0;
  const double t0 = now_ms();
  while (ok && !all && rounds < 64) {
    CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = obj;
    if (!(ok = CP(cuptiRangeProfilerStart(&st)))) break;
    if (!kernel_replay) {
      CUpti_RangeProfiler_PushRange_Params pu{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
      pu.pRangeProfilerObject = obj;
      pu.pRangeName = "graph";
      CP(cuptiRangeProfilerPushRange(&pu));
    }
    work();
    if (!kernel_replay) {
      CUpti_RangeProfiler_PopRange_Params po{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
      po.pRangeProfilerObject = obj;
      CP(cuptiRangeProfilerPopRange(&po));
    }
    CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = obj;
    ok = CP(cuptiRangeProfilerStop(&sp));
    all = sp.isAllPassSubmitted != 0;
    ++rounds;
  }
  std::printf("  range profiler: %d round(s), %zu pass(es), all submitted %d, %.1f ms\n", rounds, config.passes,
              all ? 1 : 0, now_ms() - t0);
  if (ok && all) {
    CUpti_RangeProfiler_DecodeData_Params de{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    de.pRangeProfilerObject = obj;
    if ((ok = CP(cuptiRangeProfilerDecodeData(&de)))) {
      CUpti_RangeProfiler_GetCounterDataInfo_Params inf{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
      inf.pCounterDataImage = image.data();
      inf.counterDataImageSize = image.size();
      CP(cuptiRangeProfilerGetCounterDataInfo(&inf));
      std::printf("  decoded %zu ranges, %zu dropped\n", inf.numTotalRanges, de.numOfRangeDropped);
      out.metrics = config.metrics;
      for (size_t r = 0; r < inf.numTotalRanges; ++r) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri{
            CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
        ri.pCounterDataImage = image.data();
        ri.counterDataImageSize = image.size();
        ri.rangeIndex = r;
        ri.rangeDelimiter = "/";
        CP(cuptiRangeProfilerCounterDataGetRangeInfo(&ri));
        std::vector<double> v;
        evaluate(config, image, r, v);
        out.names.push_back(ri.rangeName ? ri.rangeName : "?");
        out.values.push_back(v);
      }
    }
  }
  CUpti_RangeProfiler_Disable_Params di{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  di.pRangeProfilerObject = obj;
  CPV(cuptiRangeProfilerDisable(&di));
  return ok && all;
}

// The rules' own names, for the ground truth per kernel (range profiler, kernel replay).
const std::vector<std::string> kRuleNames = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
    // Decision 3's achieved occupancy: the agent derives it from PM's warps and SM active cycles.
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    // Decision 4's ALU pipe and issue rate, for PM's alu and issue columns (kPmAgainstRules).
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    "sm__inst_issued.avg.pct_of_peak_sustained_elapsed",
};

// PM columns held against the rules' names they might stand for (pm_then_rp prints each pair).
const std::vector<std::pair<std::string, std::string>> kPmAgainstRules = {
    {"alu", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"},
    {"alu", "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"},
    {"issue", "sm__inst_issued.avg.pct_of_peak_sustained_elapsed"},
    {"issue", "smsp__issue_active.avg.pct_of_peak_sustained_active"},
};

// Per kernel: the PM set's names and the rules' names by the range profiler, each kernel launched
// plainly (auto range + kernel replay: the ground truth the PM values are compared with).
bool reference(Workload& w, RpRanges& out) {
  std::vector<std::string> names;
  for (const auto& m : pm_metrics()) names.push_back(m.name);
  for (const auto& n : kRuleNames) names.push_back(n);
  const bool ok = rp_collect(names, true, [&] { w.launch_plain(); }, out);
  if (!ok) return false;
  out.kernels = kKernelOrder;
  // The memset is not a kernel launch; if it got a range all the same, it is the third.
  if (out.names.size() == kKernelOrder.size() + 1) out.kernels.insert(out.kernels.begin() + 2, "memset");
  std::printf("  reference (range profiler, kernel replay, plain launches): %zu ranges for %zu kernels%s\n",
              out.names.size(), kKernelOrder.size(),
              out.kernels.size() != kKernelOrder.size() ? " (the memset has a range: third)" : "");
  std::vector<std::string> head;
  for (size_t r = 0; r < out.names.size(); ++r) {
    const std::string k = r < out.kernels.size() ? out.kernels[r] : "?";
    head.push_back((k.rfind("pm_", 0) == 0 ? k.substr(3) : k) + "(" + out.names[r] + ")");
  }
  std::printf("  %-52s", "metric \\ kernel(range)");
  for (const auto& h : head) std::printf(" %11s", h.c_str());
  std::printf("\n");
  for (size_t i = 0; i < out.metrics.size(); ++i) {
    std::vector<std::string> cells;
    for (const auto& v : out.values) cells.push_back(fmt(v[i]));
    std::string label = out.metrics[i];
    for (const auto& m : pm_metrics()) {
      if (m.name == label) label = "pm:" + m.label;
    }
    if (label.rfind("pm:", 0) != 0) label = label.substr(0, label.find('.')) + label.substr(label.rfind('.'));
    std::printf("  %-52s", label.c_str());
    for (const auto& c : cells) std::printf(" %11s", c.c_str());
    std::printf("\n");
  }
  return true;
}

// ---- ways ---------------------------------------------------------------------------------------------

void chip_name() {
  CUpti_Device_GetChipName_Params p{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  p.deviceIndex = 0;
  if (CP(cuptiDeviceGetChipName(&p)) && p.pChipName != nullptr) g_chip = p.pChipName;
  std::printf("  chip %s\n", g_chip.c_str());
}

// PM sampling across `launches` of the graph (or of the plain sequence).
int pm_way(Workload& w, uint64_t interval_ns, bool plain, std::map<std::string, std::vector<double>>* pure = nullptr,
           PmSession** keep = nullptr) {
  const int launches = env_int("PM_LAUNCHES", 10);
  trace_take();  // earlier records (setup, reference) out of the way
  auto* pm = new PmSession;
  // Samples: the launches take about 1 ms each; room for 4x that at this interval.
  const size_t max_samples = static_cast<size_t>(launches + 2) * 4000000ull / interval_ns + 1000;
  if (!pm->begin(interval_ns, max_samples)) {
    delete pm;
    w.check();
    return 1;
  }
  const double t0 = now_ms();
  for (int i = 0; i < launches; ++i) plain ? w.launch_plain() : w.launch_graph();
  CK(cudaStreamSynchronize(w.stream));
  const double t1 = now_ms();
  std::printf("  %d %s in %.2f ms (host, to synchronize)\n", launches, plain ? "plain sequences" : "graph launches",
              t1 - t0);
  std::vector<Sample> samples;
  const bool ended = pm->end(samples);
  const std::vector<Exec> execs = trace_take();
  if (ended) attribute(*pm, samples, execs, pm->t_start, launches, pure);
  if (keep != nullptr) {
    *keep = pm;
  } else {
    delete pm;
  }
  const bool ok = w.check();
  return ended && ok && !samples.empty() ? 0 : 1;
}

int run_way(const std::string& way) {
  std::printf("== %s\n", way.c_str());
  std::fflush(stdout);
  const bool trace = way != "notrace_10us" && way != "reference" && way != "during_rp";
  if (trace) trace_on();
  Workload w;
  w.setup();
  chip_name();
  if (g_chip.empty()) return 1;
  w.launch_graph();  // one plain replay first
  CK(cudaStreamSynchronize(w.stream));
  profiler_initialize();

  if (way == "trace_5us") return pm_way(w, 5000, false);
  if (way == "trace_10us") return pm_way(w, 10000, false);
  if (way == "trace_20us") return pm_way(w, 20000, false);
  if (way == "notrace_10us") return pm_way(w, 10000, false);
  if (way == "stream_10us") return pm_way(w, 10000, true);
  if (way == "reference") {
    RpRanges ref;
    const bool ok = reference(w, ref);
    return w.check() && ok ? 0 : 1;
  }
  if (way == "after_rp_10us") {
    RpRanges ref;
    if (!reference(w, ref)) std::printf("  the reference collection failed; going on\n");
    // As the agent's graph route: user range + user replay, one pass, over one cuGraphLaunch.
    RpRanges g;
    const bool gok = rp_collect({"gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
                                 "sm__cycles_elapsed.max"},
                                false, [&] { w.launch_graph(); }, g);
    if (gok && !g.values.empty()) {
      std::printf("  graph range '%s':", g.names[0].c_str());
      for (size_t i = 0; i < g.metrics.size(); ++i) std::printf(" %s=%s", g.metrics[i].c_str(), fmt(g.values[0][i]).c_str());
      std::printf("\n");
    }
    CK(cudaStreamSynchronize(w.stream));
    std::map<std::string, std::vector<double>> pure;
    PmSession* pm = nullptr;
    const int rc = pm_way(w, 10000, false, &pure, &pm);
    // PM (pure samples) next to the range profiler, per kernel, for the PM set's names.
    if (pm != nullptr && !ref.values.empty()) {
      std::printf("  PM sampling (pure-sample mean) / range profiler (kernel replay), per kernel:\n");
      std::vector<std::string> head;
      for (const auto& k : kKernelOrder) {
        if (std::find(head.begin(), head.end(), k.substr(3)) == head.end()) head.push_back(k.substr(3));
      }
      print_row("metric", head, 19);
      for (size_t i = 0; i < pm->metrics.size(); ++i) {
        const auto it = std::find(ref.metrics.begin(), ref.metrics.end(), pm->metrics[i].name);
        std::vector<std::string> cells;
        for (const auto& h : head) {
          const std::string name = "pm_" + h;
          const auto p = pure.find(name);
          const double pv = p != pure.end() ? p->second[i] : NAN;
          double rv = NAN;
          const size_t r = std::find(ref.kernels.begin(), ref.kernels.end(), name) - ref.kernels.begin();
          if (it != ref.metrics.end() && r < ref.values.size()) rv = ref.values[r][it - ref.metrics.begin()];
          if (pm->metrics[i].kind == Kind::kPerNs && r < ref.values.size()) {
            // The range profiler's counter is per kernel: turned into a rate with its duration.
            const auto d = std::find(ref.metrics.begin(), ref.metrics.end(), "gpu__time_duration.sum");
            if (d != ref.metrics.end()) rv /= ref.values[r][d - ref.metrics.begin()];
          }
          cells.push_back(fmt(pv) + "/" + fmt(rv));
        }
        print_row(pm->metrics[i].label.c_str(), cells, 19);
      }
      // Decision 2 as the rules read it: SM throughput, and memory as gpu__compute_memory_throughput
      // (the largest of its breakdown, here stood in for by the largest of PM's L1, L2 and DRAM).
      auto pm_index = [&](const char* label) {
        for (size_t i = 0; i < pm->metrics.size(); ++i) {
          if (pm->metrics[i].label == label) return i;
        }
        return pm->metrics.size();
      };
      auto ref_index = [&](const char* name) {
        return static_cast<size_t>(std::find(ref.metrics.begin(), ref.metrics.end(), name) - ref.metrics.begin());
      };
      const size_t p_sm = pm_index("sm_tput"), p_l1 = pm_index("l1_tput"), p_l2 = pm_index("l2_tput"),
                   p_dr = pm_index("dramc_tput");
      const size_t r_sm = ref_index("sm__throughput.avg.pct_of_peak_sustained_elapsed");
      const size_t r_mem = ref_index("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
      std::vector<std::string> sm_cells, mem_cells;
      for (const auto& h : head) {
        const auto p = pure.find("pm_" + h);
        const size_t r = std::find(ref.kernels.begin(), ref.kernels.end(), "pm_" + h) - ref.kernels.begin();
        const bool have_ref = r < ref.values.size();
        auto pv = [&](size_t i) { return p != pure.end() && i < p->second.size() ? p->second[i] : NAN; };
        double mem = NAN;
        for (const double v : {pv(p_l1), pv(p_l2), pv(p_dr)}) {
          if (!std::isnan(v)) mem = std::isnan(mem) ? v : std::max(mem, v);
        }
        sm_cells.push_back(fmt(pv(p_sm)) + "/" + fmt(have_ref && r_sm < ref.metrics.size() ? ref.values[r][r_sm] : NAN));
        mem_cells.push_back(fmt(mem) + "/" +
                            fmt(have_ref && r_mem < ref.metrics.size() ? ref.values[r][r_mem] : NAN));
      }
      std::printf("  Decision 2: PM stand-in / the rules' own name by the range profiler:\n");
      print_row("D2 sm__tput", sm_cells, 19);
      print_row("D2 mem max", mem_cells, 19);
      std::printf("  PM column / a rules' name by the range profiler (candidates for the PM mapping):\n");
      for (const auto& [label, rule] : kPmAgainstRules) {
        const size_t pi = pm_index(label.c_str());
        const size_t ri = ref_index(rule.c_str());
        std::vector<std::string> cells;
        for (const auto& h : head) {
          const auto p = pure.find("pm_" + h);
          const size_t r = std::find(ref.kernels.begin(), ref.kernels.end(), "pm_" + h) - ref.kernels.begin();
          const double pv = p != pure.end() && pi < p->second.size() ? p->second[pi] : NAN;
          const double rv = r < ref.values.size() && ri < ref.metrics.size() ? ref.values[r][ri] : NAN;
          cells.push_back(fmt(pv) + "/" + fmt(rv));
        }
        std::printf("    %s vs %s\n", label.c_str(), rule.c_str());
        print_row(label.c_str(), cells, 19);
      }
    }
    delete pm;
    return rc;
  }
  if (way == "during_rp") {
    // The range profiler enabled and configured on the context while PM sampling runs.
    HostConfig rp_config;
    if (!build_config(CUPTI_PROFILER_TYPE_RANGE_PROFILER, nullptr,
                      {"gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum"}, rp_config)) {
      return 1;
    }
    CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = current_context();
    if (!CPV(cuptiRangeProfilerEnable(&en))) return 1;
    CUpti_RangeProfiler_Object* obj = en.pRangeProfilerObject;
    std::vector<const char*> names;
    for (const auto& m : rp_config.metrics) names.push_back(m.c_str());
    CUpti_RangeProfiler_GetCounterDataSize_Params sz{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    sz.pRangeProfilerObject = obj;
    sz.pMetricNames = names.data();
    sz.numMetrics = names.size();
    sz.maxNumOfRanges = 4;
    sz.maxNumRangeTreeNodes = 4;
    CPV(cuptiRangeProfilerGetCounterDataSize(&sz));
    std::vector<uint8_t> image(sz.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ini{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ini.pRangeProfilerObject = obj;
    ini.counterDataSize = image.size();
    ini.pCounterData = image.data();
    CPV(cuptiRangeProfilerCounterDataImageInitialize(&ini));
    CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = obj;
    sc.configSize = rp_config.image.size();
    sc.pConfig = rp_config.image.data();
    sc.counterDataImageSize = image.size();
    sc.pCounterDataImage = image.data();
    sc.range = CUPTI_UserRange;
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = 4;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.targetNestingLevel = 1;
    CPV(cuptiRangeProfilerSetConfig(&sc));
    PmSession pm;
    const bool begun = pm.begin(10000, 20000);
    std::printf("  PM sampling begun while the range profiler is enabled and configured: %s\n", begun ? "yes" : "no");
    CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = obj;
    const bool rp_started = CPV(cuptiRangeProfilerStart(&st));
    if (rp_started) {
      CUpti_RangeProfiler_PushRange_Params pu{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
      pu.pRangeProfilerObject = obj;
      pu.pRangeName = "graph";
      CPV(cuptiRangeProfilerPushRange(&pu));
    }
    w.launch_graph();
    if (rp_started) {
      CUpti_RangeProfiler_PopRange_Params po{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
      po.pRangeProfilerObject = obj;
      CPV(cuptiRangeProfilerPopRange(&po));
      CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
      sp.pRangeProfilerObject = obj;
      CPV(cuptiRangeProfilerStop(&sp));
      std::printf("  range profiler stop: all passes submitted %u\n", static_cast<unsigned>(sp.isAllPassSubmitted));
    }
    CK(cudaStreamSynchronize(w.stream));
    std::vector<Sample> samples;
    if (begun) {
      pm.end(samples);
      attribute(pm, samples, {}, pm.t_start, 1);
    }
    if (rp_started) {
      CUpti_RangeProfiler_DecodeData_Params de{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
      de.pRangeProfilerObject = obj;
      if (CPV(cuptiRangeProfilerDecodeData(&de))) {
        std::vector<double> v;
        if (evaluate(rp_config, image, 0, v)) {
          std::printf("  range profiler's graph range:");
          for (size_t i = 0; i < v.size(); ++i) std::printf(" %s=%s", rp_config.metrics[i].c_str(), fmt(v[i]).c_str());
          std::printf("\n");
        }
      }
    }
    CUpti_RangeProfiler_Disable_Params di{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = obj;
    CPV(cuptiRangeProfilerDisable(&di));
    return w.check() ? 0 : 1;
  }
  if (way == "pm_then_rp") {
    const int rc = pm_way(w, 10000, false);
    std::printf("  PM sampling disabled; now the range profiler on the same context:\n");
    RpRanges ref;
    const bool ok = reference(w, ref);
    return w.check() && ok && rc == 0 ? 0 : 1;
  }
  std::printf("unknown way %s\n", way.c_str());
  return 2;
}

// The attribution on made-up samples and executions (no GPU): a graph of three nodes, A (100 us),
// B (50 us) and C (3 us), 10 us apart, launched three times; 10 us samples whose values are the
// node's (A: sm 80, B: sm 20; idle 0). With `shift_ns`, the samples' clock is offset.
int selftest(int64_t shift_ns) {
  std::printf("== selftest (samples' clock offset %+.1f us)\n", shift_ns / 1000.0);
  PmSession pm;
  pm.interval_ns = 10000;
  pm.metrics = {{"sm_tput", "a", Kind::kMean}, {"sm_active", "b", Kind::kMean}, {"dram_rd_GBps", "c", Kind::kPerNs},
                {"dram_wr_GBps", "d", Kind::kPerNs}};
  const uint64_t base = 1000000000000ull;
  std::vector<Exec> execs;
  struct Spec {
    const char* name;
    uint64_t node;
    uint64_t len;
    double sm, active, rd;
  };
  const Spec specs[] = {{"pm_A", 11, 100000, 80, 95, 0.5}, {"pm_B", 12, 50000, 20, 60, 3.0}, {"pm_C", 13, 3000, 1, 2, 0}};
  uint64_t t = base + 20000;
  for (uint32_t launch = 0; launch < 3; ++launch) {
    for (const Spec& sp : specs) {
      execs.push_back({sp.name, sp.node, 7, 100 + launch, t, t + sp.len});
      t += sp.len + 10000;
    }
    t += 50000;
  }
  std::vector<Sample> samples;
  for (uint64_t s = base; s < t + 40000; s += 10000) {
    double sm = 0, active = 0, rd = 0, cov = 0;
    for (const Exec& x : execs) {
      const double o = overlap(s, s + 10000, x.start, x.end) / 10000.0;
      for (const Spec& sp : specs) {
        if (x.node == sp.node) sm += o * sp.sm, active += o * sp.active, rd += o * sp.rd * 10000.0;
      }
      cov += o;
    }
    const uint64_t st = static_cast<uint64_t>(static_cast<int64_t>(s) + shift_ns);
    samples.push_back({st, st + 10000, {sm, active, rd, 0.0}});
  }
  pm.t_start = base;
  pm.t_stop = t + 40000;
  std::map<std::string, std::vector<double>> pure;
  attribute(pm, samples, execs, base, 3, &pure);
  const bool ok = std::fabs(pure["pm_A"][0] - 80) < 1e-9 && std::fabs(pure["pm_B"][0] - 20) < 1e-9 &&
                  std::fabs(pure["pm_A"][2] - 0.5) < 1e-9;
  std::printf("  selftest %s: pure A sm %.2f (80), B sm %.2f (20), A rd %.3f B/ns (0.5)\n", ok ? "OK" : "FAILED",
              pure["pm_A"][0], pure["pm_B"][0], pure["pm_A"][2]);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--selftest") == 0) return selftest(0) | selftest(5000000000ll);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("pm_probe: no usable GPU or driver; skipped\n");
    return 77;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc > 2 && std::strcmp(argv[1], "--child") == 0) {
    alarm(90);  // a way that hangs (SIGALRM) does not hold up the others
    return run_way(argv[2]);
  }
  std::vector<std::string> ways = {"trace_20us", "trace_5us", "notrace_10us", "stream_10us",
                                   "reference",  "after_rp_10us", "during_rp", "pm_then_rp"};
  if (argc > 1) ways.assign(argv + 1, argv + argc);
  int failed = 0;
  for (const std::string& way : ways) {
    std::fflush(stdout);
    const double t0 = now_ms();
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "--child", way.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const double s = (now_ms() - t0) / 1000.0;
    if (WIFSIGNALED(status)) {
      std::printf("-- %s: killed by signal %d (%.1f s)\n", way.c_str(), WTERMSIG(status), s);
      ++failed;
    } else {
      std::printf("-- %s: exit %d (%.1f s)\n", way.c_str(), WEXITSTATUS(status), s);
      failed += WEXITSTATUS(status) != 0 ? 1 : 0;
    }
  }
  return failed == 0 ? 0 : 1;
}
