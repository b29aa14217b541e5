// zoo fp64_heavy: FP64-dominated arithmetic.
// Each thread runs 8 independent chains of DFMA (acc = fma(acc, a, b)) for
// 4096 iterations entirely in registers. The chains differ only in their start
// value; sharing a and b keeps the kernel at 25 registers (full occupancy).
// 540,672 threads x 8 x 4096 = 17.7 G DFMA per launch, ~1 ms at the H200's
// ~17 T DFMA/s (64 FP64 lanes per SM).
// No memory traffic besides one 8-byte store per thread.
// Limiter: FP64 pipe (Decision 4: sm__pipe_fp64_cycles_active /
// sm__inst_executed_pipe_fp64 .avg.pct_of_peak_sustained_elapsed highest,
// ~80-100%; sass__inst_executed_per_opcode dominated by DFMA).
#include "zoo_common.cuh"

#include <cmath>

static const char* kProgram = "fp64_heavy";
static constexpr int kChains = 8;

__host__ __device__ inline double fp64_init(unsigned tid, int j) {
  return double(tid % 4099u) * 1e-3 + double(j);
}

__global__ void zoo_fp64_heavy(double* __restrict__ out, double a, double b, int iters) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  double acc[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) acc[j] = fp64_init(tid, j);
#pragma unroll 4
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) acc[j] = fma(acc[j], a, b);
  }
  double s = 0.0;
#pragma unroll
  for (int j = 0; j < kChains; ++j) s += acc[j];
  out[tid] = s;
}

int main() {
  const unsigned block = 256, grid = 132 * 8 * 2;  // 2 full waves at 2048 threads/SM
  const unsigned n = grid * block;
  const int iters = 4096;
  const double a = 0.99993, b = 1.25e-4;
  double* out;
  ZOO_CHECK(cudaMalloc(&out, n * sizeof(double)));
  ZOO_CHECK(cudaMemset(out, 0, n * sizeof(double)));

  auto launch = [&] { zoo_fp64_heavy<<<grid, block>>>(out, a, b, iters); };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZooTimer timer(kProgram, "zoo_fp64_heavy");
  for (int it = 0; it < 5; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  std::vector<double> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), out, n * sizeof(double), cudaMemcpyDeviceToHost));
  auto check = [&](unsigned t) {
    double acc[kChains];
    for (int j = 0; j < kChains; ++j) acc[j] = fp64_init(t, j);
    for (int i = 0; i < iters; ++i)
      for (int j = 0; j < kChains; ++j) acc[j] = std::fma(acc[j], a, b);
    double s = 0.0;
    for (int j = 0; j < kChains; ++j) s += acc[j];
    if (!zoo_close(h[t], s, 1e-12, 1e-12))
      zoo_fail(kProgram, "out[%u] = %.17g, expected %.17g", t, h[t], s);
  };
  for (unsigned t = 0; t < n; t += 4099) check(t);
  check(n - 1);
  ZOO_CHECK(cudaFree(out));
  zoo_ok(kProgram);
  return 0;
}
