// zoo tiny_kernels: 20,000 tiny kernels back to back on one stream.
// Each launch is 1 block of 32 threads doing one increment (a few microseconds
// of GPU time at most, most of it launch overhead). The GPU spends most of the
// wall time between kernels waiting for the next launch.
// Limiter: dispatch / launch rate (Decision 1: launch__grid_size 1,
// launch__waves_per_multiprocessor ~0.008; Decision 2A: idle gaps between
// kernels dominate; per-kernel gpu__time_duration ~2-3 us, total wall time per
// launch set by the host launch rate).
// Timing: every 100th launch is wrapped in a cudaEvent pair (200 timed launches).
#include "zoo_common.cuh"

#include <chrono>

static const char* kProgram = "tiny_kernels";

__global__ void zoo_tiny_kernel(unsigned* __restrict__ counters) {
  counters[threadIdx.x] += 1u;
}

int main() {
  const int launches = 20000, time_every = 100;
  unsigned* counters;
  ZOO_CHECK(cudaMalloc(&counters, 32 * sizeof(unsigned)));
  ZOO_CHECK(cudaMemset(counters, 0, 32 * sizeof(unsigned)));

  auto launch = [&] { zoo_tiny_kernel<<<1, 32>>>(counters); };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZOO_CHECK(cudaDeviceSynchronize());

  ZooTimer timer(kProgram, "zoo_tiny_kernel");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    if (i % time_every == time_every - 1) {
      timer.time(launch);
    } else {
      launch();
    }
  }
  ZOO_CHECK_LAUNCH();
  ZOO_CHECK(cudaDeviceSynchronize());
  const double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  timer.report();
  std::fprintf(stderr, "zoo %s: %d launches in %.0f us (%.2f us per launch)\n", kProgram,
               launches, wall_us, wall_us / launches);

  unsigned h[32];
  ZOO_CHECK(cudaMemcpy(h, counters, sizeof(h), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i)
    if (h[i] != unsigned(launches + 1))
      zoo_fail(kProgram, "counter %d = %u, expected %d", i, h[i], launches + 1);
  ZOO_CHECK(cudaFree(counters));
  zoo_ok(kProgram);
  return 0;
}
