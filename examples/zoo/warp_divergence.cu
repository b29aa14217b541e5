// zoo warp_divergence: heavy per-lane divergent branches.
// Each thread runs a long integer recurrence whose body depends on lane % 8:
// eight structurally different loops (LCG, xorshift, rotate-add, multiply-xor,
// ...), so every warp executes all eight loops one after another with only 4 of
// 32 lanes active. Limiter: thread divergence (Decision 3:
// smsp__thread_inst_executed_per_inst_executed.ratio ~4, far below 24;
// smsp__thread_inst_executed_pred_on_per_inst_executed.ratio likewise low).
// ~1 ms per launch.
#include "zoo_common.cuh"

#include <cstdint>

static const char* kProgram = "warp_divergence";

__host__ __device__ inline uint32_t divergent_work(uint32_t lane_case, uint32_t x, int iters) {
  switch (lane_case) {
    case 0:
      for (int i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
      break;
    case 1:
      for (int i = 0; i < iters; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
      }
      break;
    case 2:
      for (int i = 0; i < iters; ++i) x = ((x << 7) | (x >> 25)) + 0x9E3779B9u;
      break;
    case 3:
      for (int i = 0; i < iters; ++i) {
        x *= 0x85EBCA6Bu;
        x ^= x >> 16;
      }
      break;
    case 4:
      for (int i = 0; i < iters; ++i) x = x + (x >> 3) * 5u + 17u;
      break;
    case 5:
      for (int i = 0; i < iters; ++i) x = (x ^ 0xDEADBEEFu) * 2246822519u + (x >> 11);
      break;
    case 6:
      for (int i = 0; i < iters; ++i) x = x * x + 7u;
      break;
    default:
      for (int i = 0; i < iters; ++i) x = (x + 0x7F4A7C15u) ^ (x >> 9) ^ (x << 3);
      break;
  }
  return x;
}

__host__ __device__ inline uint32_t divergence_seed(uint32_t tid) { return tid * 2654435761u + 1u; }

__global__ void zoo_warp_divergence(uint32_t* __restrict__ out, int iters) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  out[tid] = divergent_work(threadIdx.x & 7u, divergence_seed(tid), iters);
}

int main() {
  const unsigned block = 256, grid = 132 * 8 * 4;  // 4 full waves
  const unsigned n = grid * block;
  const int iters = 1024;
  uint32_t* out;
  ZOO_CHECK(cudaMalloc(&out, n * sizeof(uint32_t)));
  ZOO_CHECK(cudaMemset(out, 0, n * sizeof(uint32_t)));

  auto launch = [&] { zoo_warp_divergence<<<grid, block>>>(out, iters); };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZooTimer timer(kProgram, "zoo_warp_divergence");
  for (int it = 0; it < 5; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  std::vector<uint32_t> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  // Replay a sample on the host: the first 2 blocks completely, then every 257th thread.
  auto check = [&](uint32_t t) {
    const uint32_t want = divergent_work((t % block) & 7u, divergence_seed(t), iters);
    if (h[t] != want) zoo_fail(kProgram, "out[%u] = %u, expected %u", t, h[t], want);
  };
  for (uint32_t t = 0; t < 2 * block; ++t) check(t);
  for (uint32_t t = 2 * block; t < n; t += 257) check(t);
  check(n - 1);
  ZOO_CHECK(cudaFree(out));
  zoo_ok(kProgram);
  return 0;
}
