// A kernel the driver JIT-compiles: jit_kernel.cu is built to PTX only, this program loads the
// PTX with cuModuleLoadDataEx and launches it 8 times with the driver API. Under the agent, PC
// sampling must still name jit_kernel.cu's lines (the module-load callback hands over the cubin
// the driver compiled). Checks its results; exit 77 without a GPU. The driver API is reached
// through dlopen, so that the program starts (and skips) on machines without libcuda.so.1.
#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common.cuh"

int main() {
  gt_require_gpu();
  std::ifstream f(CUTRIAGE_JIT_PTX);
  if (!f) gt_fail("cannot read the PTX file " CUTRIAGE_JIT_PTX);
  std::stringstream text;
  text << f.rdbuf();
  const std::string ptx = text.str();
  GT_CHECK(cudaFree(nullptr));  // the runtime's primary context, current on this thread
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libcuda == nullptr) gt_fail("dlopen libcuda.so.1");
  auto sym = [&](const char* name) {
    void* p = dlsym(libcuda, name);
    if (p == nullptr) gt_fail(name);
    return p;
  };
  auto cuModuleLoadDataEx = reinterpret_cast<decltype(&::cuModuleLoadDataEx)>(sym("cuModuleLoadDataEx"));
  auto cuModuleGetFunction = reinterpret_cast<decltype(&::cuModuleGetFunction)>(sym("cuModuleGetFunction"));
  auto cuLaunchKernel = reinterpret_cast<decltype(&::cuLaunchKernel)>(sym("cuLaunchKernel"));
  auto cuModuleUnload = reinterpret_cast<decltype(&::cuModuleUnload)>(sym("cuModuleUnload"));
  CUmodule module = nullptr;
  CUjit_option opts[] = {CU_JIT_GENERATE_LINE_INFO};
  void* values[] = {reinterpret_cast<void*>(static_cast<uintptr_t>(1))};
  GT_CHECK_DRV(cuModuleLoadDataEx(&module, ptx.c_str(), 1, opts, values));
  CUfunction fn = nullptr;
  GT_CHECK_DRV(cuModuleGetFunction(&fn, module, "jit_gather"));

  const unsigned n = 16u << 20, stride = 4099;  // n a power of 2, stride odd: a permutation
  float *in = nullptr, *out = nullptr;
  GT_CHECK(cudaMalloc(&in, n * sizeof(float)));
  GT_CHECK(cudaMalloc(&out, n * sizeof(float)));
  std::vector<float> h(n);
  for (unsigned i = 0; i < n; ++i) h[i] = float(i & 0xFFFF);
  GT_CHECK(cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  unsigned nn = n, ss = stride;
  void* args[] = {&in, &out, &nn, &ss};
  for (int it = 0; it < 8; ++it) {
    GT_CHECK_DRV(cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    GT_CHECK(cudaDeviceSynchronize());
  }
  GT_CHECK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < n; ++i) {
    const unsigned j = (i * stride) & (n - 1);  // the kernel's 32-bit arithmetic
    const float want = float(j & 0xFFFF) * 3.0f - 1.0f;
    if (h[i] != want) gt_fail("jit_gather gave a wrong value");
  }
  GT_CHECK(cudaFree(in));
  GT_CHECK(cudaFree(out));
  GT_CHECK_DRV(cuModuleUnload(module));
  std::printf("gpu_jit_ptx: OK\n");
  return 0;
}
