// An example service for always-on cutriage (issue 6): it links libcutriage.so through the
// installed CMake package and serves "requests" for a number of seconds, each a realistic mix of
// kernel families on two streams (a tiled matrix multiply, an elementwise activation, a row
// reduction, a normalisation), with a CUDA graph replayed every 10th request. It configures the
// agent with cutriage_init() from SERVICE_CUTRIAGE (a configuration string), starts it before its
// first CUDA call, and calls cutriage_flush() every 5 seconds.
//
//   cutriage_service [SECONDS]     # prints requests per second and a checksum of the results
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cutriage/cutriage.h"

#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "service: %s in %s\n", cudaGetErrorString(err_), #call);          \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace {

constexpr int kN = 1024;  // matrices are kN x kN floats
constexpr int kTile = 16;

__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < n; t += kTile) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc = fmaf(ta[threadIdx.y][k], tb[k][threadIdx.x], acc);
    __syncthreads();
  }
  c[row * n + col] = acc;
}

__global__ void gelu(float* x, int count) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

__global__ void row_sum(const float* x, float* out, int n) {
  __shared__ float partial[256];
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) s += x[blockIdx.x * n + j];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

__global__ void normalize_rows(float* x, const float* sums, int n) {
  const int row = blockIdx.x;
  const float inv = 1.f / (fabsf(sums[row]) + 1.f);
  for (int j = threadIdx.x; j < n; j += blockDim.x) x[row * n + j] *= inv;
}

__global__ void scale(float* x, float f, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) x[i] *= f;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 20.0;
  if (const char* cfg = std::getenv("SERVICE_CUTRIAGE")) {
    if (cutriage_init(cfg) != 1) std::fprintf(stderr, "service: cutriage configuration refused\n");
  }
  const int active = cutriage_start();  // before the first CUDA call

  const int count = kN * kN;
  float *a, *b, *c, *d, *sums;
  CHECK(cudaMalloc(&a, count * sizeof(float)));
  CHECK(cudaMalloc(&b, count * sizeof(float)));
  CHECK(cudaMalloc(&c, count * sizeof(float)));
  CHECK(cudaMalloc(&d, count * sizeof(float)));
  CHECK(cudaMalloc(&sums, kN * sizeof(float)));
  std::vector<float> host(count);
  for (int i = 0; i < count; ++i) host[i] = float((i * 37) % 101) / 101.f - 0.5f;
  CHECK(cudaMemcpy(a, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t main_stream, side_stream;
  CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking));

  // A graph of three small kernels, captured once and replayed.
  cudaGraph_t graph;
  cudaGraphExec_t graph_exec;
  CHECK(cudaStreamBeginCapture(side_stream, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 3; ++k) scale<<<(count + 255) / 256, 256, 0, side_stream>>>(d, 1.0001f, count);
  CHECK(cudaStreamEndCapture(side_stream, &graph));
  CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));

  // SERVICE_DEEP_AFTER=S: after S seconds, ask the agent for a deep capture of its top families
  // (what an operator does through the C API, the control file or the signal).
  const char* deep_after_env = std::getenv("SERVICE_DEEP_AFTER");
  double deep_after = deep_after_env != nullptr ? std::atof(deep_after_env) : -1.0;

  // SERVICE_WINDOW_MS=N: every N ms, a line "window <steady clock ns> <requests>" on stdout, for
  // benchmarks that compare the throughput of stretches of one run (bench/trace_split.py). The
  // steady clock is CLOCK_MONOTONIC, the clock of the agent's debug lines.
  const char* window_env = std::getenv("SERVICE_WINDOW_MS");
  const long window_ms = window_env != nullptr ? std::atol(window_env) : 0;

  const auto start = std::chrono::steady_clock::now();
  auto last_flush = start;
  auto window_start = start;
  long window_requests = 0;
  long requests = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    matmul_tiled<<<dim3(kN / kTile, kN / kTile), dim3(kTile, kTile), 0, main_stream>>>(a, b, c, kN);
    gelu<<<264, 256, 0, main_stream>>>(c, count);
    row_sum<<<kN, 256, 0, main_stream>>>(c, sums, kN);
    normalize_rows<<<kN, 256, 0, side_stream>>>(d, sums, kN);
    if (requests % 10 == 0) CHECK(cudaGraphLaunch(graph_exec, side_stream));
    CHECK(cudaStreamSynchronize(main_stream));
    CHECK(cudaStreamSynchronize(side_stream));
    ++requests;
    const auto now = std::chrono::steady_clock::now();
    elapsed = std::chrono::duration<double>(now - start).count();
    ++window_requests;
    if (window_ms > 0 && now - window_start >= std::chrono::milliseconds(window_ms)) {
      // Requests finished since the previous line (the first window starts before the loop).
      std::printf("window %lld %ld\n",
                  static_cast<long long>(
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()),
                  window_requests);
      window_start = now;
      window_requests = 0;
    }
    if (deep_after >= 0 && elapsed >= deep_after) {
      const unsigned long long id = cutriage_request_deep_capture(nullptr, 0);
      std::fprintf(stderr, "service: deep capture requested after %.1f s: request %llu\n", elapsed, id);
      deep_after = -1.0;
    }
    if (now - last_flush > std::chrono::seconds(5)) {
      cutriage_flush();  // the trace collected and the Prometheus file rewritten now
      last_flush = now;
    }
  }
  std::vector<float> out(kN);
  CHECK(cudaMemcpy(out.data(), sums, kN * sizeof(float), cudaMemcpyDeviceToHost));
  double checksum = 0;
  for (float v : out) checksum += v;
  std::printf("service: %ld requests in %.1f s, %.1f requests/s, agent %s, checksum %.3f\n", requests, elapsed,
              double(requests) / elapsed, active ? "on" : "off", checksum);
  CHECK(cudaGraphExecDestroy(graph_exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}
