// zoo strided_load: uncoalesced global loads.
// The input is a row-major [rows][32] float matrix read column by column:
// thread i reads in[(i % rows) * 32 + i / rows], so consecutive lanes of a warp
// read addresses 32 floats (128 B) apart and every lane touches its own 32 B
// sector and 128 B line. Stores are coalesced.
// Limiter: uncoalesced access (Decision 5:
// l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum /
// l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum ~ 32, >> 4; bytes per sector
// ~4 << 16; L2/DRAM read traffic ~8x the useful bytes).
// 64 Mi floats: 256 MiB of useful reads but 2 GiB of 32 B sectors requested
// from L2 (a column of sectors, 64 MiB, does not fit the 50 MB L2): ~4.3 GB
// of DRAM reads, ~1.2 ms on the H200.
#include "zoo_common.cuh"

static const char* kProgram = "strided_load";
static constexpr unsigned kCols = 32;  // stride between consecutive threads, in floats

__global__ void zoo_strided_load(const float* __restrict__ in, float* __restrict__ out,
                                 unsigned rows, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned r = i % rows, c = i / rows;
    out[i] = in[size_t(r) * kCols + c] * 2.0f + 1.0f;  // cutriage-hot: long_scoreboard
  }
}

__global__ void fill_strided_input(float* in, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    in[i] = float(i & 0xFFFFFu);
}

int main() {
  const unsigned n = 64u << 20;
  const unsigned rows = n / kCols;
  float *in, *out;
  ZOO_CHECK(cudaMalloc(&in, size_t(n) * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&out, size_t(n) * sizeof(float)));
  fill_strided_input<<<132 * 8, 256>>>(in, n);
  ZOO_CHECK_LAUNCH();
  ZOO_CHECK(cudaMemset(out, 0, size_t(n) * sizeof(float)));

  const unsigned block = 256, grid = zoo_blocks(n, block);
  auto launch = [&] { zoo_strided_load<<<grid, block>>>(in, out, rows, n); };
  launch();  // warm-up
  ZOO_CHECK_LAUNCH();
  ZooTimer timer(kProgram, "zoo_strided_load");
  for (int it = 0; it < 5; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  std::vector<float> h(n);
  ZOO_CHECK(cudaMemcpy(h.data(), out, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < n; ++i) {
    const unsigned src = (i % rows) * kCols + i / rows;
    const float want = float(src & 0xFFFFFu) * 2.0f + 1.0f;
    if (h[i] != want) zoo_fail(kProgram, "out[%u] = %f, expected %f", i, h[i], want);
  }
  ZOO_CHECK(cudaFree(in));
  ZOO_CHECK(cudaFree(out));
  zoo_ok(kProgram);
  return 0;
}
