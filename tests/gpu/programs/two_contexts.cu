// Launches the same kernel in the primary context and in a second context created with the driver
// API (the runtime launches into whichever context is current), and checks both results. The
// agent keeps one range profiler per context.
#include <vector>

#include "common.cuh"

__global__ void gt_fill(int* x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + i % 7;
}

// The second context runs its own kernel: the agent profiles a kernel a few times in all, so with
// one kernel everywhere the second context's launches would go unprofiled.
__global__ void gt_fill_second(int* x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + i % 7;
}

static void run_in_current_context(int value, bool second = false) {
  constexpr int kN = 1 << 22;
  int* d = nullptr;
  GT_CHECK(cudaMalloc(&d, kN * sizeof(int)));
  for (int i = 0; i < 3; ++i) {
    if (second) {
      gt_fill_second<<<(kN + 255) / 256, 256>>>(d, value, kN);
    } else {
      gt_fill<<<(kN + 255) / 256, 256>>>(d, value, kN);
    }
  }
  GT_CHECK(cudaGetLastError());
  std::vector<int> h(kN);
  GT_CHECK(cudaMemcpy(h.data(), d, kN * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) {
    if (h[i] != value + i % 7) gt_fail("wrong value");
  }
  GT_CHECK(cudaFree(d));
}

int main() {
  gt_require_gpu();
  GT_CHECK(cudaFree(nullptr));  // primary context
  run_in_current_context(10);

  // Driver entry points through the runtime, so the program links only cudart (and starts, to
  // report "skipped", on machines without a driver).
  auto entry = [](const char* name) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    GT_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &q));
    if (fn == nullptr) gt_fail(name);
    return fn;
  };
  auto ctx_create = reinterpret_cast<decltype(&cuCtxCreate_v4)>(entry("cuCtxCreate"));
  auto ctx_pop = reinterpret_cast<decltype(&cuCtxPopCurrent_v2)>(entry("cuCtxPopCurrent"));
  auto ctx_destroy = reinterpret_cast<decltype(&cuCtxDestroy_v2)>(entry("cuCtxDestroy"));

  CUcontext second = nullptr;
  CUctxCreateParams params{};
  GT_CHECK_DRV(ctx_create(&second, &params, 0, /*device*/ 0));  // made current
  run_in_current_context(20, /*second=*/true);
  GT_CHECK_DRV(ctx_pop(nullptr));
  run_in_current_context(30);  // back in the primary context
  GT_CHECK_DRV(ctx_destroy(second));
  std::printf("two_contexts: OK\n");
  return 0;
}
