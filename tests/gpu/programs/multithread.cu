// Eight host threads, each with its own stream, launch two different kernels many times at once
// and check every result. Under the agent, selected launches of one context are profiled one at a
// time while the other threads keep launching; the results must not change.
#include <thread>
#include <vector>

#include "common.cuh"

__global__ void gt_scale(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * s;
}

__global__ void gt_offset(float* x, float d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + d;
}

int main() {
  gt_require_gpu();
  constexpr int kThreads = 8, kIters = 50, kN = 1 << 20;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      cudaStream_t s;
      GT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      float* d = nullptr;
      GT_CHECK(cudaMalloc(&d, kN * sizeof(float)));
      std::vector<float> h(kN, 1.0f);
      GT_CHECK(cudaMemcpyAsync(d, h.data(), kN * sizeof(float), cudaMemcpyHostToDevice, s));
      for (int i = 0; i < kIters; ++i) {
        gt_scale<<<(kN + 255) / 256, 256, 0, s>>>(d, 1.0f, kN);
        gt_offset<<<(kN + 255) / 256, 256, 0, s>>>(d, 1.0f, kN);
      }
      GT_CHECK(cudaMemcpyAsync(h.data(), d, kN * sizeof(float), cudaMemcpyDeviceToHost, s));
      GT_CHECK(cudaStreamSynchronize(s));
      for (int i = 0; i < kN; ++i) {
        if (h[i] != 1.0f + kIters) {
          failures[t] = 1;
          break;
        }
      }
      GT_CHECK(cudaFree(d));
      GT_CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    if (failures[t]) gt_fail("a thread's buffer is wrong");
  }
  std::printf("multithread: OK (%d threads x %d launches)\n", kThreads, 2 * kIters);
  return 0;
}
