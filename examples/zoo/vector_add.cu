// zoo vector_add: large streaming vector add, c = a + b, float4 loads/stores.
// Limiter: DRAM bandwidth. 3 arrays x 90 Mi floats x 4 B = 1080 MiB of traffic
// per launch (~0.25 ms at ~4.3 TB/s achievable on an H200). Each element is
// touched once, so nothing stays in the 50 MB L2: dram__throughput ~ 90%+ of
// peak, sm__throughput low (Decision 2: memory >> compute; Decision 5/7:
// gpu__dram_throughput near peak).
#include "zoo_common.cuh"

static const char* kProgram = "vector_add";

__global__ void zoo_vector_add(const float4* __restrict__ a, const float4* __restrict__ b,
                               float4* __restrict__ c, size_t n4) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 x = a[i];
    float4 y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

// Helper (not a zoo_ kernel, so "-k regex:^zoo_" in ncu skips it).
__global__ void fill_vector_inputs(float* a, float* b, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    a[i] = float(i % 1000u) * 0.5f;
    b[i] = float(i % 777u) * 0.25f;
  }
}

int main() {
  const size_t n = size_t(90) << 20;  // 90 Mi floats per array
  const size_t n4 = n / 4;
  float *a, *b, *c;
  ZOO_CHECK(cudaMalloc(&a, n * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&b, n * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&c, n * sizeof(float)));
  fill_vector_inputs<<<132 * 8, 256>>>(a, b, n);
  ZOO_CHECK_LAUNCH();
  ZOO_CHECK(cudaMemset(c, 0, n * sizeof(float)));

  const unsigned block = 256;
  const unsigned grid = zoo_blocks(n4, block);
  auto launch = [&] {
    zoo_vector_add<<<grid, block>>>(reinterpret_cast<const float4*>(a),
                                    reinterpret_cast<const float4*>(b),
                                    reinterpret_cast<float4*>(c), n4);
  };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZooTimer timer(kProgram, "zoo_vector_add");
  for (int it = 0; it < 5; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  std::vector<float> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), c, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) {
    const float want = float(i % 1000u) * 0.5f + float(i % 777u) * 0.25f;
    if (h[i] != want) zoo_fail(kProgram, "c[%zu] = %f, expected %f", i, h[i], want);
  }
  ZOO_CHECK(cudaFree(a));
  ZOO_CHECK(cudaFree(b));
  ZOO_CHECK(cudaFree(c));
  zoo_ok(kProgram);
  return 0;
}
