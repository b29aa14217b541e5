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

__global__ void smoke_nudge(float* __restrict__ y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 1.0001f;
}

constexpr unsigned kBlock = 256;
unsigned grid_for(size_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

}  // namespace

cudaError_t launch_smoke_accumulate(const float* x, float* y, size_t n) { return launch_smoke_accumulate_on(x, y, n, 0); }

cudaError_t launch_smoke_scale(const float* x, float* y, size_t n) { return launch_smoke_scale_on(x, y, n, 0); }

cudaError_t launch_smoke_accumulate_on(const float* x, float* y, size_t n, cudaStream_t stream) {
  smoke_accumulate<<<grid_for(n), kBlock, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_smoke_scale_on(const float* x, float* y, size_t n, cudaStream_t stream) {
  smoke_scale<<<grid_for(n), kBlock, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_smoke_nudge_on(float* y, size_t n, cudaStream_t stream) {
  smoke_nudge<<<grid_for(n), kBlock, 0, stream>>>(y, n);
  return cudaGetLastError();
}
