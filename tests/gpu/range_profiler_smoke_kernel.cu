// The kernel the range-profiler smoke test profiles: y += x, in place, so that a kernel replay
// that failed to restore device memory between passes would show up as a wrong y.
#include "range_profiler_smoke_kernel.h"

namespace {

__global__ void smoke_accumulate(const float* __restrict__ x, float* __restrict__ y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void smoke_scale(const float* __restrict__ x, float* __restrict__ y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

}  // namespace

cudaError_t launch_smoke_accumulate(const float* x, float* y, size_t n) {
  constexpr unsigned kBlock = 256;
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  smoke_accumulate<<<grid, kBlock>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_smoke_scale(const float* x, float* y, size_t n) {
  constexpr unsigned kBlock = 256;
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  smoke_scale<<<grid, kBlock>>>(x, y, n);
  return cudaGetLastError();
}
