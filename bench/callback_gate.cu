// What CUPTI's launch callbacks cost a launch in each state the agent could leave them in, and
// what switching them costs: can always-on turn the launch callbacks off while it has no use for
// them (budget closed, trace paused) and win the launch's CPU back?
//
//   callback_gate [launches]
//
// Phases, in this order in one process (launch calls timed only, batches of empty kernels as in
// launch_rate.cu), each printed as `phase=NAME cpu_ns_per_launch=X wall_ns_per_launch=Y calls=N`
// where N counts the callbacks that reached the subscriber during the phase:
//   plain        before any CUPTI call
//   enabled      subscribed, the agent's launch and wait callbacks enabled
//   disabled     the same callbacks disabled again (the subscriber stays)
//   enabled2     enabled again
//   disabled2    disabled again
//   toggling     enabled and disabled after every batch (the cost of the switch, amortized)
//   traced, paused, paused_off, paused_on_again, resumed: the kernel trace on, paused, the
//                callbacks off and on while it is paused, the trace resumed (repeated_ids: launch
//                entries that carried their thread's previous correlation id)
// then `toggle_ns=X` (one enable or disable of the whole set, median of 200) and a race check: a
// second thread launches while the first switches the callbacks 2,000 times (`race=ok calls=N`).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

__global__ void gate_empty(int* sink) {
  if (sink != nullptr && threadIdx.x == 1024) *sink = 1;  // never true: keeps the kernel
}

std::atomic<long> g_calls{0};
std::atomic<long> g_repeats{0};  // launch entries with the thread's previous entry's correlation id
thread_local uint32_t t_last_correlation = 0;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb == nullptr || cb->callbackSite != CUPTI_API_ENTER) return;
  if (cb->correlationId != 0 && cb->correlationId == t_last_correlation) g_repeats.fetch_add(1);
  t_last_correlation = cb->correlationId;
}

// The kernel trace as the agent runs it (concurrent-kernel records), to pause and resume it.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = size_t{1} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) { std::free(buffer); }
void set_trace(bool on) {
  if (on) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  } else {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
}

double now_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// The driver callbacks the agent enables (collectors/src/cupti_platform.cpp): launches and waits.
const CUpti_CallbackId kIds[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
};

CUpti_SubscriberHandle g_sub;

bool set_all(uint32_t on) {
  for (CUpti_CallbackId id : kIds) {
    const CUptiResult r = cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (r != CUPTI_SUCCESS) {
      const char* s = nullptr;
      cuptiGetResultString(r, &s);
      std::fprintf(stderr, "cuptiEnableCallback(%u, %u): %s\n", on, id, s ? s : "?");
      return false;
    }
  }
  return true;
}

void phase(const char* name, long launches, bool toggle) {
  constexpr int kBatch = 256;
  const long calls0 = g_calls.load();
  const long repeats0 = g_repeats.load();
  double wall = 0, cpu = 0;
  long done = 0;
  while (done < launches) {
    if (toggle) set_all(1);
    const double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < kBatch; ++i) gate_empty<<<1, 32>>>(nullptr);
    wall += now_ns(CLOCK_MONOTONIC) - w0;
    cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (toggle) set_all(0);
    done += kBatch;
    cudaDeviceSynchronize();
  }
  std::printf("phase=%s cpu_ns_per_launch=%.1f wall_ns_per_launch=%.1f calls=%ld repeated_ids=%ld\n", name,
              cpu / double(done), wall / double(done), g_calls.load() - calls0, g_repeats.load() - repeats0);
}

}  // namespace

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 200000;
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "skipped: no usable GPU\n");
    return 77;
  }
  for (int i = 0; i < 1000; ++i) gate_empty<<<1, 32>>>(nullptr);
  cudaDeviceSynchronize();
  phase("plain", launches, false);
  if (cuptiSubscribe(&g_sub, reinterpret_cast<CUpti_CallbackFunc>(&on_callback), nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cuptiSubscribe failed\n");
    return 1;
  }
  if (!set_all(1)) return 1;
  phase("enabled", launches, false);
  set_all(0);
  phase("disabled", launches, false);
  set_all(1);
  phase("enabled2", launches, false);
  set_all(0);
  phase("disabled2", launches, false);
  phase("toggling", launches, true);

  std::vector<double> t;
  for (int i = 0; i < 200; ++i) {
    const double t0 = now_ns(CLOCK_MONOTONIC);
    set_all(i % 2 == 0 ? 1 : 0);
    t.push_back(now_ns(CLOCK_MONOTONIC) - t0);
  }
  std::sort(t.begin(), t.end());
  std::printf("toggle_ns=%.0f (one set of %zu callbacks; max %.0f)\n", t[t.size() / 2],
              sizeof(kIds) / sizeof(kIds[0]), t.back());

  // Switching while another thread launches: no crash, no error, launches all complete.
  std::atomic<bool> stop{false};
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const long calls0 = g_calls.load();
  std::thread launcher([&] {
    while (!stop.load()) {
      for (int i = 0; i < 64; ++i) gate_empty<<<1, 32, 0, s>>>(nullptr);
      cudaStreamSynchronize(s);
    }
  });
  bool ok = true;
  for (int i = 0; i < 2000 && ok; ++i) ok = set_all(i % 2 == 0 ? 1 : 0);
  set_all(0);
  stop.store(true);
  launcher.join();
  const bool clean = cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess;
  std::printf("race=%s calls=%ld\n", ok && clean ? "ok" : "FAILED", g_calls.load() - calls0);
  // As the agent's duty cycle and launch gate run them (issue: after the callbacks were switched
  // off and on again, the agent saw launches repeat their thread's previous correlation id on the
  // H100 with PyTorch): the trace on, paused, the callbacks off and on again while it is paused,
  // then the trace resumed.
  cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  set_all(1);
  set_trace(true);
  phase("traced", launches / 4, false);
  set_trace(false);
  phase("paused", launches / 4, false);
  set_all(0);
  phase("paused_off", launches / 4, false);
  set_all(1);
  phase("paused_on_again", launches / 4, false);
  set_trace(true);
  phase("resumed", launches / 4, false);
  set_trace(false);
  cuptiActivityFlushAll(1);
  cuptiUnsubscribe(g_sub);
  phase("unsubscribed", launches, false);
  return ok && clean ? 0 : 1;
}
