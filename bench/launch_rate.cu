// Host cost of a kernel launch: times the launch calls only (batches of kBatch empty kernels,
// synchronized between batches outside the timed region, so a full launch queue never blocks a
// timed call). Run plain and with the agent injected; the difference of the per-launch times is
// the CPU the agent adds to each launch on the application's thread.
//
//   launch_rate [launches]     prints: launches=N wall_ns_per_launch=X cpu_ns_per_launch=Y
#include <cuda_runtime.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

__global__ void bench_empty(int* sink) {
  if (sink != nullptr && threadIdx.x == 1024) *sink = 1;  // never true: keeps the kernel
}

static double now_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 200000;
  constexpr int kBatch = 256;
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "skipped: no usable GPU\n");
    return 77;
  }
  for (int i = 0; i < 1000; ++i) bench_empty<<<1, 32>>>(nullptr);  // warm-up
  cudaDeviceSynchronize();
  double wall = 0, cpu = 0;
  long done = 0;
  while (done < launches) {
    const double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < kBatch; ++i) bench_empty<<<1, 32>>>(nullptr);
    wall += now_ns(CLOCK_MONOTONIC) - w0;
    cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    done += kBatch;
    cudaDeviceSynchronize();
  }
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::printf("launches=%ld wall_ns_per_launch=%.1f cpu_ns_per_launch=%.1f\n", done, wall / double(done),
              cpu / double(done));
  return 0;
}
