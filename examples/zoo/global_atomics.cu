// zoo global_atomics: heavy atomic contention on 8 global counters.
// 8 Mi threads each perform 2 atomicAdd()s into counter[(lane + k) % 8]
// (64-bit, counters 256 B apart so each sits in its own L2 line); the return
// value is used (so the compiler emits ATOM, not RED), and the address differs
// across the warp (so no warp-uniform aggregation). All 16 Mi atomics of a
// launch serialize on 8 addresses (~2 Mi same-address atomics each):
// ~3 ms per launch on the H200.
// Limiter: atomic contention (Decision 5: lts__t_requests_op_atom.sum a large
// share of lts__t_requests.sum with low L2/DRAM throughput; Decision 3: warps
// stalled on long_scoreboard / lg_throttle, issue starved).
#include "zoo_common.cuh"

#include <cstdint>

static const char* kProgram = "global_atomics";
static constexpr int kCounters = 8;
static constexpr int kPerThread = 2;
static constexpr int kStride = 32;  // u64 slots between counters (256 B)

__global__ void zoo_global_atomics(unsigned long long* __restrict__ counters,
                                   unsigned* __restrict__ sentinel, unsigned n) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= n) return;
  unsigned long long seen = 0;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const unsigned long long v = ((tid + k) & 0xFFu) + 1u;
    seen |= atomicAdd(&counters[((threadIdx.x + k) % kCounters) * kStride], v);
  }
  // Counter values never reach 2^62: this store never happens, but it keeps
  // the atomics' return values (ATOM instead of fire-and-forget RED).
  if (seen >> 62) *sentinel = tid;  // cutriage-hot: long_scoreboard (waits on line 28's atomics)
}
// Hot line: the warps wait for the atomics where their results are first used;
// PC samples sit on that consuming instruction, not on the atomic (seen on the H200).

int main() {
  const unsigned n = 8u << 20;
  const unsigned block = 256, grid = zoo_blocks(n, block);
  unsigned long long* counters;
  unsigned* sentinel;
  ZOO_CHECK(cudaMalloc(&counters, kCounters * kStride * sizeof(unsigned long long)));
  ZOO_CHECK(cudaMalloc(&sentinel, sizeof(unsigned)));
  ZOO_CHECK(cudaMemset(counters, 0, kCounters * kStride * sizeof(unsigned long long)));
  ZOO_CHECK(cudaMemset(sentinel, 0, sizeof(unsigned)));

  auto launch = [&] { zoo_global_atomics<<<grid, block>>>(counters, sentinel, n); };
  const int warmup = 1, timed = 5;
  for (int it = 0; it < warmup; ++it) {
    launch();
    ZOO_CHECK_LAUNCH();
  }
  ZooTimer timer(kProgram, "zoo_global_atomics");
  for (int it = 0; it < timed; ++it) timer.time(launch);
  ZOO_CHECK(cudaDeviceSynchronize());
  timer.report();

  unsigned long long want[kCounters] = {};
  for (unsigned tid = 0; tid < n; ++tid)
    for (int k = 0; k < kPerThread; ++k)
      want[((tid % block) + k) % kCounters] += ((tid + k) & 0xFFu) + 1u;
  unsigned long long got[kCounters * kStride];
  unsigned sent = 0;
  ZOO_CHECK(cudaMemcpy(got, counters, sizeof(got), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCounters * kStride; ++i)
    if (i % kStride != 0 && got[i] != 0) zoo_fail(kProgram, "padding slot %d written", i);
  ZOO_CHECK(cudaMemcpy(&sent, sentinel, sizeof(sent), cudaMemcpyDeviceToHost));
  if (sent != 0) zoo_fail(kProgram, "sentinel written (%u)", sent);
  const int launches = warmup + timed;
  for (int c = 0; c < kCounters; ++c)
    if (got[c * kStride] != want[c] * launches)
      zoo_fail(kProgram, "counter %d = %llu, expected %llu", c, got[c * kStride],
               want[c] * launches);
  ZOO_CHECK(cudaFree(counters));
  ZOO_CHECK(cudaFree(sentinel));
  zoo_ok(kProgram);
  return 0;
}
