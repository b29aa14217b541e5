// zoo fma_chain: FP32 FMA throughput with data resident in registers.
// Each thread runs 8 independent FFMA chains (acc = fmaf(acc, a, b_j)) for
// 4096 iterations: 1,081,344 threads x 8 x 4096 = 35.4 G FFMA per launch,
// ~1 ms at the H200's ~33 T FFMA/s (128 FP32 lanes per SM). High ILP (8
// independent accumulators) plus full occupancy keep the FMA pipe busy; the only
// memory traffic is one 4-byte store per thread.
// Limiter: FMA pipe (Decision 2: sm__throughput >> gpu__compute_memory_throughput;
// Decision 4: sm__pipe_fma_cycles_active / sm__inst_executed_pipe_fma
// .avg.pct_of_peak_sustained_elapsed highest, ~90%+; issue active near 100%).
#include "zoo_common.cuh"

#include <cmath>

static const char* kProgram = "fma_chain";
static constexpr int kChains = 8;

__host__ __device__ inline float fma_init(unsigned tid, int j) {
  return float(tid % 1021u) * 1e-3f + float(j);
}

__global__ void zoo_fma_chain(float* __restrict__ out, float a, float b, int iters) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[kChains], add[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) {
    acc[j] = fma_init(tid, j);
    add[j] = b * float(j + 1);
  }
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) acc[j] = fmaf(acc[j], a, add[j]);
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kChains; ++j) s += acc[j];
  out[tid] = s;
}

int main() {
  const unsigned block = 256, grid = 132 * 8 * 4;  // 4 full waves at 2048 threads/SM
  const unsigned n = grid * block;
  const int iters = 4096;
  const float a = 0.9993f, b = 1.5e-3f;
  float* out;
  ZOO_CHECK(cudaMalloc(&out, n * sizeof(float)));
  ZOO_CHECK(cudaMemset(out, 0, n * sizeof(float)));

  auto launch = [&] { zoo_fma_chain<<<grid, block>>>(out, a, b, iters); };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZooTimer timer(kProgram, "zoo_fma_chain");
  for (int it = 0; it < 5; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  std::vector<float> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  auto check = [&](unsigned t) {
    float acc[kChains];
    for (int j = 0; j < kChains; ++j) acc[j] = fma_init(t, j);
    for (int i = 0; i < iters; ++i)
      for (int j = 0; j < kChains; ++j) acc[j] = std::fmaf(acc[j], a, b * float(j + 1));
    float s = 0.f;
    for (int j = 0; j < kChains; ++j) s += acc[j];
    if (!zoo_close(h[t], s, 1e-5, 1e-5))
      zoo_fail(kProgram, "out[%u] = %.9g, expected %.9g", t, h[t], s);
  };
  for (unsigned t = 0; t < n; t += 4111) check(t);
  check(n - 1);
  ZOO_CHECK(cudaFree(out));
  zoo_ok(kProgram);
  return 0;
}
