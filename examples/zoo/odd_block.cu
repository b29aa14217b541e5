// zoo odd_block: ordinary elementwise work (y = a * x + y over 64 Mi floats,
// 768 MiB of traffic) launched with 80-thread blocks (~0.5 ms on the H200).
// 80 is not a multiple of 32: every block has 2 full warps and one warp with
// only 16 live lanes, so 1/6 of the warp slots and issue lanes are wasted.
// Limiter to report: block size not a multiple of the warp size
// (Decision 1: launch__block_size = 80, 80 % 32 != 0; also
// smsp__thread_inst_executed_per_inst_executed.ratio below 32, ~26.7).
// The kernel is otherwise DRAM-bound, but with only 80 elements per block the
// SMs are also starved by block launch (seen: achieved occupancy ~32 %, DRAM ~32 %).
#include "zoo_common.cuh"

static const char* kProgram = "odd_block";

__global__ void zoo_odd_block_saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                    size_t n) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void fill_odd_block_inputs(float* x, float* y, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    x[i] = float(i & 1023u);
    y[i] = float(i % 101u);
  }
}

int main() {
  const size_t n = size_t(64) << 20;
  const unsigned block = 80;  // deliberately not a multiple of 32
  const unsigned grid = zoo_blocks(n, block);
  const float a = 0.5f;
  float *x, *y;
  ZOO_CHECK(cudaMalloc(&x, n * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&y, n * sizeof(float)));
  fill_odd_block_inputs<<<132 * 8, 256>>>(x, y, n);
  ZOO_CHECK_LAUNCH();

  auto launch = [&] { zoo_odd_block_saxpy<<<grid, block>>>(a, x, y, n); };
  const int warmup = 1, timed = 5;
  for (int it = 0; it < warmup; ++it) {
    launch();
    ZOO_CHECK_LAUNCH();
  }
  ZooTimer timer(kProgram, "zoo_odd_block_saxpy");
  for (int it = 0; it < timed; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  // y0 = i % 101, each launch adds 0.5 * (i & 1023): all values are multiples of
  // 0.5 below 2^13, so every step is exact in FP32.
  std::vector<float> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  const int launches = warmup + timed;
  for (size_t i = 0; i < n; ++i) {
    const float want = float(i % 101u) + float(launches) * (a * float(i & 1023u));
    if (h[i] != want) zoo_fail(kProgram, "y[%zu] = %f, expected %f", i, h[i], want);
  }
  ZOO_CHECK(cudaFree(x));
  ZOO_CHECK(cudaFree(y));
  zoo_ok(kProgram);
  return 0;
}
