// zoo small_grid: a grid of far less than one wave.
// 32 blocks x 256 threads on a 132-SM H200: at most 32 SMs get any work, each
// with 8 warps. Every thread runs a long dependent integer recurrence
// (x = x * A + C; x ^= x >> 13; a non-linear step the compiler cannot fold
// across iterations), ~1 ms per launch. Limiter: workload too small
// (Decision 1: launch__waves_per_multiprocessor ~ 0.03 < 1, launch__grid_size 32
// < launch__sm_count 132, low achieved occupancy; Decision 2: both
// sm__throughput and gpu__compute_memory_throughput very low).
#include "zoo_common.cuh"

#include <cstdint>

static const char* kProgram = "small_grid";
static constexpr uint32_t kA = 1664525u;
static constexpr uint32_t kC = 1013904223u;

__host__ __device__ inline uint32_t step(uint32_t x) {
  x = x * kA + kC;
  return x ^ (x >> 13);
}

__global__ void zoo_small_grid(uint32_t* __restrict__ out, int iters) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t x = tid * 2654435761u + 12345u;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) x = step(x);
  out[tid] = x;
}

int main() {
  const unsigned blocks = 32, block = 256;
  const unsigned n = blocks * block;
  // 3 dependent ALU ops per step (IMAD, SHF, LOP3), ~12 cycles -> ~1 ms at ~1.9 GHz
  const int iters = 150000;
  uint32_t* out;
  ZOO_CHECK(cudaMalloc(&out, n * sizeof(uint32_t)));
  ZOO_CHECK(cudaMemset(out, 0, n * sizeof(uint32_t)));

  auto launch = [&] { zoo_small_grid<<<blocks, block>>>(out, iters); };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZooTimer timer(kProgram, "zoo_small_grid");
  for (int it = 0; it < 5; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  std::vector<uint32_t> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  // Replaying all 8192 threads on the host would take ~1 s: check every 61st
  // thread (covers every block and many lanes) plus the last one.
  auto check = [&](uint32_t t) {
    uint32_t want = t * 2654435761u + 12345u;
    for (int i = 0; i < iters; ++i) want = step(want);
    if (h[t] != want) zoo_fail(kProgram, "out[%u] = %u, expected %u", t, h[t], want);
  };
  for (uint32_t t = 0; t < n; t += 61) check(t);
  check(n - 1);
  ZOO_CHECK(cudaFree(out));
  zoo_ok(kProgram);
  return 0;
}
