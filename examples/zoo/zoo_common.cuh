// Shared helpers for the cutriage example zoo.
//
// Every zoo program:
//   * checks every CUDA call (ZOO_CHECK),
//   * verifies its results on the host (zoo_fail() -> message on stderr, exit 1),
//   * prints "zoo <program>: OK" on success,
//   * when ZOO_TIMING_FILE is set, appends one CSV line per timed kernel:
//       <program>,<kernel>,<median duration ns>,<number of timed launches>
//     measured with cudaEvents around each timed launch (ZooTimer).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define ZOO_CHECK(call)                                                              \
  do {                                                                               \
    cudaError_t zoo_err_ = (call);                                                   \
    if (zoo_err_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", __FILE__, __LINE__, \
                   cudaGetErrorName(zoo_err_), cudaGetErrorString(zoo_err_), #call); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// Check the launch itself (configuration errors) right after a <<<>>> launch.
#define ZOO_CHECK_LAUNCH() ZOO_CHECK(cudaGetLastError())

// Exit status meaning "skipped: no usable GPU" (CTest's SKIP_RETURN_CODE for the gpu label), so
// CI machines without a driver report the zoo as skipped, never as passed or failed.
constexpr int kZooSkipNoGpu = 77;

inline bool zoo_require_gpu() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "zoo: skipped, no usable GPU (%s)\n",
                 err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    std::exit(kZooSkipNoGpu);
  }
  return true;
}
// Runs before main() in every zoo program (each includes this header once).
static const bool zoo_gpu_present = zoo_require_gpu();

[[noreturn]] inline void zoo_fail(const char* program, const char* fmt, ...) {
  std::fprintf(stderr, "zoo %s: FAILED: ", program);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  std::exit(1);
}

inline void zoo_ok(const char* program) {
  std::printf("zoo %s: OK\n", program);
  std::fflush(stdout);
}

// Relative/absolute tolerance comparison for floating results.
inline bool zoo_close(double got, double want, double rel = 1e-5, double abs_tol = 1e-6) {
  const double diff = got > want ? got - want : want - got;
  const double mag = want < 0 ? -want : want;
  return diff <= abs_tol + rel * mag;
}

// Times individual launches with a cudaEvent pair around each, then reports the
// median. Usage:
//   ZooTimer t("vector_add", "zoo_vector_add");
//   for (int i = 0; i < 5; ++i) t.time([&] { kernel<<<g, b>>>(...); });
//   t.report();   // synchronizes, appends to $ZOO_TIMING_FILE if set
class ZooTimer {
 public:
  ZooTimer(const char* program, const char* kernel, cudaStream_t stream = 0)
      : program_(program), kernel_(kernel), stream_(stream) {}
  ZooTimer(const ZooTimer&) = delete;
  ZooTimer& operator=(const ZooTimer&) = delete;
  ~ZooTimer() {
    for (auto& p : events_) {
      cudaEventDestroy(p.first);
      cudaEventDestroy(p.second);
    }
  }

  template <class Launch>
  void time(Launch&& launch) {
    cudaEvent_t start, stop;
    ZOO_CHECK(cudaEventCreate(&start));
    ZOO_CHECK(cudaEventCreate(&stop));
    ZOO_CHECK(cudaEventRecord(start, stream_));
    launch();
    ZOO_CHECK_LAUNCH();
    ZOO_CHECK(cudaEventRecord(stop, stream_));
    events_.emplace_back(start, stop);
  }

  // Median duration in ns of all timed launches (synchronizes).
  double median_ns() {
    std::vector<double> ns;
    ns.reserve(events_.size());
    for (auto& p : events_) {
      ZOO_CHECK(cudaEventSynchronize(p.second));
      float ms = 0.f;
      ZOO_CHECK(cudaEventElapsedTime(&ms, p.first, p.second));
      ns.push_back(double(ms) * 1e6);
    }
    if (ns.empty()) return 0.0;
    std::sort(ns.begin(), ns.end());
    const size_t n = ns.size();
    return n % 2 ? ns[n / 2] : 0.5 * (ns[n / 2 - 1] + ns[n / 2]);
  }

  size_t count() const { return events_.size(); }

  // Appends "<program>,<kernel>,<median ns>,<count>" to $ZOO_TIMING_FILE (if set)
  // and prints a human-readable line on stderr.
  void report() {
    const double med = median_ns();
    std::fprintf(stderr, "zoo %s: %s median %.0f ns over %zu launches\n", program_.c_str(),
                 kernel_.c_str(), med, events_.size());
    const char* path = std::getenv("ZOO_TIMING_FILE");
    if (path == nullptr || *path == '\0') return;
    FILE* f = std::fopen(path, "a");
    if (f == nullptr) {
      std::fprintf(stderr, "zoo %s: cannot open ZOO_TIMING_FILE '%s'\n", program_.c_str(), path);
      std::exit(1);
    }
    std::fprintf(f, "%s,%s,%.0f,%zu\n", program_.c_str(), kernel_.c_str(), med, events_.size());
    std::fclose(f);
  }

 private:
  std::string program_;
  std::string kernel_;
  cudaStream_t stream_;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;
};

// Grid size for n items with `block` threads per block (1-D).
inline unsigned zoo_blocks(size_t n, unsigned block) {
  return static_cast<unsigned>((n + block - 1) / block);
}
