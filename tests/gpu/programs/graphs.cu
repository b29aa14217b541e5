// Captures three kernels into a CUDA graph and replays it, with ordinary launches of the same
// kernel before and after. The captured launches raise launch callbacks but run nothing; the
// graph's kernels run at cuGraphLaunch. The agent must profile neither, and the results must be
// exact: each replay adds 3 to every element.
#include <vector>

#include "common.cuh"

__global__ void gt_add_one(int* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1;
}

int main() {
  gt_require_gpu();
  constexpr int kN = 1 << 20, kReplays = 3;
  int* d = nullptr;
  GT_CHECK(cudaMalloc(&d, kN * sizeof(int)));
  GT_CHECK(cudaMemset(d, 0, kN * sizeof(int)));
  cudaStream_t s;
  GT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  gt_add_one<<<(kN + 255) / 256, 256, 0, s>>>(d, kN);  // +1, ordinary launch

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  GT_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 3; ++k) gt_add_one<<<(kN + 255) / 256, 256, 0, s>>>(d, kN);
  GT_CHECK(cudaStreamEndCapture(s, &graph));
  GT_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < kReplays; ++r) GT_CHECK(cudaGraphLaunch(exec, s));  // +9

  gt_add_one<<<(kN + 255) / 256, 256, 0, s>>>(d, kN);  // +1, ordinary launch
  GT_CHECK(cudaStreamSynchronize(s));

  std::vector<int> h(kN);
  GT_CHECK(cudaMemcpy(h.data(), d, kN * sizeof(int), cudaMemcpyDeviceToHost));
  const int want = 1 + 3 * kReplays + 1;
  for (int i = 0; i < kN; ++i) {
    if (h[i] != want) {
      std::fprintf(stderr, "x[%d] = %d, expected %d\n", i, h[i], want);
      gt_fail("graph results changed");
    }
  }
  GT_CHECK(cudaGraphExecDestroy(exec));
  GT_CHECK(cudaGraphDestroy(graph));
  GT_CHECK(cudaStreamDestroy(s));
  GT_CHECK(cudaFree(d));
  std::printf("graphs: OK (value %d)\n", want);
  return 0;
}
