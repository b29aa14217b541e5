// The kernel of gpu_jit_ptx (jit_ptx.cu): compiled to PTX only (nvcc -ptx -lineinfo) at build
// time, so the driver compiles it when the program loads it. PC sampling must map its samples to
// these lines through the module's JIT-compiled cubin. Keep the marked line where it is: the
// H200 capture in tests/data/pcsampling/ holds its number.
extern "C" __global__ void jit_gather(const float* __restrict__ in, float* __restrict__ out, unsigned n,
                                      unsigned stride) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned j = (i * stride) & (n - 1);  // n a power of 2, stride odd: a scattered permutation
  out[i] = in[j] * 3.0f - 1.0f;  // cutriage-hot: long_scoreboard
}
