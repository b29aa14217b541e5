// zoo many_kernels: eleven distinct kernels in one process, each launched REPS times (default 3),
// over 1 GiB buffers. The benchmark program for "every kernel of a many-kernel program fully
// triaged" (bench/agent_vs_ncu.sh): one process, so that per-process costs (the agent's start,
// its first metric plan, CUDA's own start) are paid once, as in a real application, and each
// kernel's own cost shows. The kernels differ in limiter on purpose: streaming, gather, transpose,
// reduction with atomics, FP32 and FP64 arithmetic chains, divergence, shared-memory atomics, a
// stencil and a grid too small for the GPU.
//
// Prints one checksum line over every output, so that a run under a profiler can be compared with
// a plain run byte for byte, then "zoo many_kernels: OK".
//
//   zoo_many_kernels [REPS]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "zoo_common.cuh"

static const char* kProgram = "many_kernels";

namespace {

constexpr size_t kN = size_t{1} << 28;  // floats per buffer: 1 GiB
constexpr int kBlock = 256;
constexpr int kSide = 8192;  // the transpose's square (256 MiB of the buffer)

__global__ void zoo_mk_copy(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) c[i] = a[i];
}

__global__ void zoo_mk_saxpy(float s, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                         size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    c[i] = s * a[i] + b[i];
}

// Neighbouring threads read 33 floats apart: every load its own sector.
__global__ void zoo_mk_gather(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i < n) c[i] = a[(i * 33) % kN];
}

// Reads rows, writes columns: the writes are uncoalesced.
__global__ void zoo_mk_transpose(const float* __restrict__ a, float* __restrict__ c) {
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) c[size_t(x) * kSide + (y + j)] = a[size_t(y + j) * kSide + x];
}

__global__ void zoo_mk_reduce(const float* __restrict__ a, size_t n, float* sum) {
  __shared__ float part[kBlock];
  float acc = 0.f;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) acc += a[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, part[0]);
}

__global__ void zoo_mk_fma(const float* __restrict__ a, float* __restrict__ c, size_t n, int iters) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = 1.0001f, z = 0.9999f;
  for (int k = 0; k < iters; ++k) {
    x = fmaf(x, y, z);
    y = fmaf(y, z, x * 1e-7f);
    z = fmaf(z, x * 1e-7f, y * 1e-7f);
  }
  c[i] = x + y + z;
}

__global__ void zoo_mk_fp64(const float* __restrict__ a, float* __restrict__ c, size_t n, int iters) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = 1.000001;
  for (int k = 0; k < iters; ++k) x = fma(x, y, 1e-9);
  c[i] = static_cast<float>(x);
}

// Odd and even lanes take different loops of different lengths.
__global__ void zoo_mk_divergent(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  if (threadIdx.x & 1) {
    for (int k = 0; k < 96; ++k) x = x * 0.999f + 0.001f;
  } else {
    for (int k = 0; k < 32; ++k) x = sqrtf(x * x + 1.0f) - 0.5f;
  }
  c[i] = x;
}

__global__ void zoo_mk_histogram(const float* __restrict__ a, size_t n, unsigned* bins) {
  __shared__ unsigned local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    atomicAdd(&local[static_cast<unsigned>(a[i] * 256.0f) & 255u], 1u);
  __syncthreads();
  atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

__global__ void zoo_mk_stencil(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  __shared__ float tile[kBlock + 6];
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  tile[threadIdx.x + 3] = i < n ? a[i] : 0.f;
  if (threadIdx.x < 3) {
    tile[threadIdx.x] = i >= 3 ? a[i - 3] : 0.f;
    const size_t r = i + kBlock;
    tile[threadIdx.x + kBlock + 3] = r < n ? a[r] : 0.f;
  }
  __syncthreads();
  if (i >= n) return;
  float s = 0.f;
  for (int k = 0; k < 7; ++k) s += tile[threadIdx.x + k];
  c[i] = s * (1.0f / 7.0f);
}

// Eight blocks on a 132-SM GPU, each walking its slice serially.
__global__ void zoo_mk_small_grid(const float* __restrict__ a, float* __restrict__ c, size_t n) {
  const size_t per = n / gridDim.x;
  const size_t begin = blockIdx.x * per;
  for (size_t i = begin + threadIdx.x; i < begin + per; i += blockDim.x) c[i] = a[i] * 2.0f + 1.0f;
}

// One float in every 4096, copied as a strided 2D copy: the whole buffer is not brought back.
double checksum(const float* d, size_t n) {
  constexpr size_t kStride = 4096;
  std::vector<float> h(n / kStride);
  ZOO_CHECK(cudaMemcpy2D(h.data(), sizeof(float), d, kStride * sizeof(float), sizeof(float), h.size(),
                         cudaMemcpyDeviceToHost));
  double s = 0;
  for (size_t i = 0; i < h.size(); ++i) s += h[i] * double(i % 7 + 1);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  if (reps < 1) zoo_fail(kProgram, "REPS must be at least 1");
  float *a = nullptr, *b = nullptr, *c = nullptr, *sum = nullptr;
  unsigned* bins = nullptr;
  ZOO_CHECK(cudaMalloc(&a, kN * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&b, kN * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&c, kN * sizeof(float)));
  ZOO_CHECK(cudaMalloc(&sum, sizeof(float)));
  ZOO_CHECK(cudaMalloc(&bins, 256 * sizeof(unsigned)));
  {
    // A 1 Mi-element pattern copied over the buffer: the host fills 4 MiB, not 1 GiB.
    constexpr size_t kChunk = size_t{1} << 20;
    std::vector<float> h(kChunk), half(kChunk, 0.5f);
    for (size_t i = 0; i < kChunk; ++i) h[i] = float((i * 2654435761u) % 1000) / 1000.0f;  // in [0, 1)
    for (size_t off = 0; off < kN; off += kChunk) {
      ZOO_CHECK(cudaMemcpy(a + off, h.data(), kChunk * sizeof(float), cudaMemcpyHostToDevice));
      ZOO_CHECK(cudaMemcpy(b + off, half.data(), kChunk * sizeof(float), cudaMemcpyHostToDevice));
    }
  }
  const int sms = [] {
    int dev = 0, n = 0;
    ZOO_CHECK(cudaGetDevice(&dev));
    ZOO_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  const int grid_stride = sms * 8;
  auto blocks = [](size_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); };

  // Each kernel's results feed the checksum; c is overwritten by every kernel, so each kernel's
  // output is summed right after its last launch.
  double total = 0;
  float reduced = 0;
  std::vector<unsigned> hist(256);
  for (int k = 0; k < 11; ++k) {
    for (int r = 0; r < reps; ++r) {
      switch (k) {
        case 0: zoo_mk_copy<<<grid_stride, kBlock>>>(a, c, kN); break;
        case 1: zoo_mk_saxpy<<<grid_stride, kBlock>>>(2.0f, a, b, c, kN); break;
        case 2: zoo_mk_gather<<<blocks(kN / 8), kBlock>>>(a, c, kN / 8); break;
        case 3: zoo_mk_transpose<<<dim3(kSide / 32, kSide / 32), dim3(32, 8)>>>(a, c); break;
        case 4:
          ZOO_CHECK(cudaMemset(sum, 0, sizeof(float)));
          zoo_mk_reduce<<<grid_stride, kBlock>>>(a, kN, sum);
          break;
        case 5: zoo_mk_fma<<<blocks(kN / 16), kBlock>>>(a, c, kN / 16, 256); break;
        case 6: zoo_mk_fp64<<<blocks(kN / 64), kBlock>>>(a, c, kN / 64, 2048); break;
        case 7: zoo_mk_divergent<<<blocks(kN / 4), kBlock>>>(a, c, kN / 4); break;
        case 8:
          ZOO_CHECK(cudaMemset(bins, 0, 256 * sizeof(unsigned)));
          zoo_mk_histogram<<<grid_stride, kBlock>>>(a, kN, bins);
          break;
        case 9: zoo_mk_stencil<<<blocks(kN), kBlock>>>(a, c, kN); break;
        default: zoo_mk_small_grid<<<8, kBlock>>>(a, c, kN / 16); break;
      }
      ZOO_CHECK_LAUNCH();
    }
    ZOO_CHECK(cudaDeviceSynchronize());
    if (k == 4) {
      ZOO_CHECK(cudaMemcpy(&reduced, sum, sizeof(float), cudaMemcpyDeviceToHost));
    } else if (k == 8) {
      ZOO_CHECK(cudaMemcpy(hist.data(), bins, 256 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    } else {
      total += checksum(c, kN);
    }
  }
  // Checks that need no host recomputation of the whole buffer: the histogram counts every
  // element once, and the mean of a is close to 0.4995.
  uint64_t counted = 0;
  for (unsigned v : hist) counted += v;
  if (counted != kN) zoo_fail(kProgram, "histogram counted %llu of %zu elements", (unsigned long long)counted, kN);
  if (!zoo_close(reduced / double(kN), 0.4995, 0.01)) zoo_fail(kProgram, "mean %.6f, expected about 0.4995", reduced / double(kN));
  // The reduction adds floats atomically in no fixed order: its last digits vary from run to run.
  std::printf("zoo many_kernels: checksum %.9e reduce %.3e\n", total, double(reduced));
  zoo_ok(kProgram);
  ZOO_CHECK(cudaFree(a));
  ZOO_CHECK(cudaFree(b));
  ZOO_CHECK(cudaFree(c));
  ZOO_CHECK(cudaFree(sum));
  ZOO_CHECK(cudaFree(bins));
  return 0;
}
