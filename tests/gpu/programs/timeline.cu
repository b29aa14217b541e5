// A program with the shapes the application view must recognise, for the agent's trace tests:
// NVTX ranges around "training steps" (push/pop, nested), two streams whose kernels overlap, a
// pageable host-to-device copy serialized with compute, a pinned copy overlapping a kernel, and a
// burst of tiny kernels launched back to back (launch-rate bound). The results are checked: the
// agent must not change them.
#include <nvtx3/nvToolsExt.h>

#include <cmath>
#include <vector>

#include "common.cuh"

__global__ void gt_spin(float* x, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < rounds; ++r) v = v * 0.999f + 0.001f;
  x[i] = v;
}

__global__ void gt_tiny(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

int main() {
  gt_require_gpu();
  constexpr int kN = 1 << 22, kSteps = 6, kTiny = 400;
  float *a = nullptr, *b = nullptr;
  int* counter = nullptr;
  GT_CHECK(cudaMalloc(&a, kN * sizeof(float)));
  GT_CHECK(cudaMalloc(&b, kN * sizeof(float)));
  GT_CHECK(cudaMalloc(&counter, sizeof(int)));
  GT_CHECK(cudaMemset(counter, 0, sizeof(int)));
  std::vector<float> pageable(kN, 1.0f);
  float* pinned = nullptr;
  GT_CHECK(cudaMallocHost(&pinned, kN * sizeof(float)));
  for (int i = 0; i < kN; ++i) pinned[i] = 2.0f;
  cudaStream_t s1, s2;
  GT_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  GT_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

  for (int step = 0; step < kSteps; ++step) {
    nvtxRangePushA("train_step");
    nvtxRangePushA("load");
    // Pageable copy on the legacy stream: synchronous, nothing else runs meanwhile.
    GT_CHECK(cudaMemcpy(a, pageable.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
    nvtxRangePop();
    nvtxRangePushA("compute");
    // Two streams: the kernels can overlap; the pinned copy on s2 overlaps s1's kernel.
    gt_spin<<<kN / 256, 256, 0, s1>>>(a, kN, 2000);
    GT_CHECK(cudaMemcpyAsync(b, pinned, kN * sizeof(float), cudaMemcpyHostToDevice, s2));
    gt_spin<<<kN / 256, 256, 0, s2>>>(b, kN, 2000);
    GT_CHECK(cudaStreamSynchronize(s1));
    GT_CHECK(cudaStreamSynchronize(s2));
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxRangePushA("tiny_burst");
  for (int i = 0; i < kTiny; ++i) gt_tiny<<<1, 32, 0, s1>>>(counter);
  GT_CHECK(cudaStreamSynchronize(s1));
  nvtxRangePop();

  int count = 0;
  GT_CHECK(cudaMemcpy(&count, counter, sizeof(int), cudaMemcpyDeviceToHost));
  std::vector<float> ha(kN), hb(kN);
  GT_CHECK(cudaMemcpy(ha.data(), a, kN * sizeof(float), cudaMemcpyDeviceToHost));
  GT_CHECK(cudaMemcpy(hb.data(), b, kN * sizeof(float), cudaMemcpyDeviceToHost));
  if (count != kTiny) gt_fail("tiny kernel count");
  // Both arrays converge towards 1 from their start values; compare one element against the host.
  float va = 1.0f, vb = 2.0f;
  for (int r = 0; r < 2000; ++r) {
    va = va * 0.999f + 0.001f;
    vb = vb * 0.999f + 0.001f;
  }
  if (std::abs(ha[12345] - va) > 1e-4f || std::abs(hb[12345] - vb) > 1e-4f) gt_fail("values");
  GT_CHECK(cudaFreeHost(pinned));
  GT_CHECK(cudaFree(a));
  GT_CHECK(cudaFree(b));
  GT_CHECK(cudaFree(counter));
  std::printf("timeline: OK (%d tiny kernels, a=%.5f b=%.5f)\n", count, ha[12345], hb[12345]);
  return 0;
}
