// Kernels for the cubin inspector's tests (tests/unit/collectors/test_cubin.cpp): nvcc compiles
// this file at build time into cubins with -lineinfo, with -G and with neither. It covers every
// kind of symbol the inspector must tell apart: extern "C", template, static and anonymous-
// namespace kernels (entry points) and a non-inlined device function and a device variable (not).
// Never run: only the ELF images matter.

__device__ float g_scale = 3.0f;

__device__ __noinline__ float scale_one(float x) { return x * g_scale + 1.0f; }

extern "C" __global__ void plain_kernel(float* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = scale_one(p[i]);
}

template <typename T>
__global__ void add_one(T* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += T(1);
}
template __global__ void add_one<int>(int*, int);
template __global__ void add_one<double>(double*, int);

static __global__ void static_kernel(int* p) { p[0] = 1; }

namespace {
__global__ void anonymous_kernel(int* p) { p[1] = 2; }
}  // namespace

// Host code referencing the internal-linkage kernels, so that nvcc keeps them.
void launch_internal(int* p) {
  static_kernel<<<1, 1>>>(p);
  anonymous_kernel<<<1, 1>>>(p);
}
