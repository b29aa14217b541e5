// What a metric-group switch costs on the range profiler, call by call, and which ways of
// switching work (bench/switch_cost.sh runs each mode in its own process: a mode that crashes
// the process is a finding, not a lost run).
//
// Always-on collection rotates single-pass groups across launches of a family; each switch cost
// about 140 ms on the application's thread on the H200 (Disable + Enable + SetConfig of a new
// config). The modes tell where that time goes and whether it can go elsewhere:
//   fresh    every group on a newly enabled object: Disable, Enable, size, init, SetConfig, Start,
//            launch, Stop, Decode, each timed (what the agent does today)
//   inplace  one object enabled once; every group SetConfig'd on it under user replay, with its
//            own counter-data image (what a cheaper switch would do)
//   warm-*   a worker makes the object's first Start (an empty range, or one around a small
//            kernel of its own) while the main thread keeps launching; the main thread then
//            collects on the warmed object
//   idle     launches per second with no object, with one enabled and configured but idle (between
//            profiled launches), and after Disable: what keeping an object enabled costs
//   thread   a worker thread enables and configures the next group while the main thread keeps
//            launching kernels; the main thread then only starts, launches and stops (whether the
//            switch can leave the application's thread, and what it does to the launches meanwhile)
// Every mode checks the counts against what the kernel must have done (exact sector counts,
// DRAM bytes within 2x of the traffic) and prints every value, so modes can be compared.
//
// Build: with the examples (bench/CMakeLists.txt). Needs a GPU with counters readable.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kN = size_t{32} << 20;  // floats per array: 128 MiB, beyond the 50 MB L2

__global__ void accumulate(const float* __restrict__ x, float* __restrict__ y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

void launch(const float* x, float* y, size_t n, cudaStream_t stream = nullptr) {
  constexpr unsigned kBlock = 256;
  accumulate<<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(x, y, n);
}

[[noreturn]] void die(const std::string& what) {
  std::printf("FAIL: %s\n", what.c_str());
  std::exit(1);
}

void cupti(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  die(std::string(call) + ": " + (text != nullptr ? text : "?"));
}
#define CUPTI_CALL(call) cupti((call), #call)

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

double ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A metric group: its names, its config image (compiled on its own host object, kept for
// evaluation) and one pass, checked.
struct Group {
  std::string label;
  std::vector<std::string> names;
  std::vector<const char*> cnames;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> config;
};

void compile(const std::string& chip, Group& g) {
  for (const auto& n : g.names) g.cnames.push_back(n.c_str());
  CUpti_Profiler_Host_Initialize_Params init{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = chip.c_str();
  CUPTI_CALL(cuptiProfilerHostInitialize(&init));
  g.host = init.pHostObject;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = g.host;
  add.ppMetricNames = g.cnames.data();
  add.numMetrics = g.cnames.size();
  CUPTI_CALL(cuptiProfilerHostConfigAddMetrics(&add));
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = g.host;
  CUPTI_CALL(cuptiProfilerHostGetConfigImageSize(&size));
  g.config.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = g.host;
  image.configImageSize = g.config.size();
  image.pConfigImage = g.config.data();
  CUPTI_CALL(cuptiProfilerHostGetConfigImage(&image));
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = g.config.size();
  passes.pConfigImage = g.config.data();
  CUPTI_CALL(cuptiProfilerHostGetNumOfPasses(&passes));
  if (passes.numOfPasses != 1) die(g.label + " takes " + std::to_string(passes.numOfPasses) + " passes");
}

std::vector<double> evaluate(Group& g, std::vector<uint8_t>& image) {
  std::vector<double> values(g.names.size(), NAN);
  CUpti_Profiler_Host_EvaluateToGpuValues_Params p{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  p.pHostObject = g.host;
  p.pCounterDataImage = image.data();
  p.counterDataImageSize = image.size();
  p.rangeIndex = 0;
  p.ppMetricNames = g.cnames.data();
  p.numMetrics = g.cnames.size();
  p.pMetricValues = values.data();
  CUPTI_CALL(cuptiProfilerHostEvaluateToGpuValues(&p));
  return values;
}

// What the kernel must have done, for the names the groups hold; a wrong count fails the mode.
void check(const Group& g, const std::vector<double>& v) {
  const double bytes = static_cast<double>(kN) * sizeof(float);
  const double load_sectors = 2.0 * bytes / 32.0;
  for (size_t i = 0; i < g.names.size(); ++i) {
    const std::string& n = g.names[i];
    const auto within = [&](double lo, double hi) {
      if (!(v[i] >= lo && v[i] <= hi)) {
        die(g.label + ": " + n + " = " + std::to_string(v[i]) + ", expected in [" + std::to_string(lo) + ", " +
            std::to_string(hi) + "]");
      }
    };
    if (n == "gpu__time_duration.sum") within(1e3, 1e8);
    if (n == "dram__bytes_read.sum") within(0.5 * 2 * bytes, 2.0 * 2 * bytes);
    if (n == "dram__bytes_write.sum") within(0.5 * bytes, 2.0 * bytes);
    if (n == "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") within(0.999 * load_sectors, 1.001 * load_sectors);
    if (n == "lts__t_sectors.sum") within(0.75 * load_sectors, 3.0 * load_sectors);
    if (!std::isfinite(v[i])) die(g.label + ": " + n + " is not finite");
  }
}

// One enabled range-profiler object and the counter-data image of the group it was last given.
struct Profiler {
  CUcontext ctx = nullptr;
  CUpti_RangeProfiler_Object* object = nullptr;
  std::vector<uint8_t> image;
};

struct Times {
  double disable = 0, enable = 0, size = 0, init = 0, setconfig = 0, start = 0, launch = 0, stop = 0, decode = 0;
};

void disable(Profiler& p, Times& t) {
  if (p.object == nullptr) return;
  const auto t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_Disable_Params d{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  d.pRangeProfilerObject = p.object;
  CUPTI_CALL(cuptiRangeProfilerDisable(&d));
  p.object = nullptr;
  t.disable = ms(t0);
}

void enable(Profiler& p, Times& t) {
  const auto t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_Enable_Params e{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  e.ctx = p.ctx;
  CUPTI_CALL(cuptiRangeProfilerEnable(&e));
  p.object = e.pRangeProfilerObject;
  t.enable = ms(t0);
}

// Sizes and initializes a fresh image for `g` and SetConfigs the object with it (user replay:
// one pass, the launch runs once).
void configure(Profiler& p, Group& g, Times& t) {
  auto t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_GetCounterDataSize_Params s{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  s.pRangeProfilerObject = p.object;
  s.pMetricNames = g.cnames.data();
  s.numMetrics = g.cnames.size();
  s.maxNumOfRanges = 1;
  s.maxNumRangeTreeNodes = 1;
  CUPTI_CALL(cuptiRangeProfilerGetCounterDataSize(&s));
  t.size = ms(t0);
  t0 = std::chrono::steady_clock::now();
  p.image.assign(s.counterDataSize, 0);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params i{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  i.pRangeProfilerObject = p.object;
  i.counterDataSize = p.image.size();
  i.pCounterData = p.image.data();
  CUPTI_CALL(cuptiRangeProfilerCounterDataImageInitialize(&i));
  t.init = ms(t0);
  t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_SetConfig_Params c{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  c.pRangeProfilerObject = p.object;
  c.configSize = g.config.size();
  c.pConfig = g.config.data();
  c.counterDataImageSize = p.image.size();
  c.pCounterDataImage = p.image.data();
  c.range = CUPTI_AutoRange;
  c.replayMode = CUPTI_UserReplay;
  c.maxRangesPerPass = 1;
  c.numNestingLevels = 1;
  c.minNestingLevel = 1;
  c.passIndex = 0;
  c.targetNestingLevel = 1;
  CUPTI_CALL(cuptiRangeProfilerSetConfig(&c));
  t.setconfig = ms(t0);
}

// Start, one launch, Stop, Decode; returns the values.
std::vector<double> collect(Profiler& p, Group& g, const float* x, float* y, Times& t) {
  auto t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = p.object;
  CUPTI_CALL(cuptiRangeProfilerStart(&st));
  t.start = ms(t0);
  t0 = std::chrono::steady_clock::now();
  launch(x, y, kN);
  cuda(cudaGetLastError(), "launch");
  cuda(cudaDeviceSynchronize(), "synchronize");
  t.launch = ms(t0);
  t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  sp.pRangeProfilerObject = p.object;
  CUPTI_CALL(cuptiRangeProfilerStop(&sp));
  if (sp.isAllPassSubmitted != 1) die(g.label + ": Stop says not all passes were submitted");
  t.stop = ms(t0);
  t0 = std::chrono::steady_clock::now();
  CUpti_RangeProfiler_DecodeData_Params d{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  d.pRangeProfilerObject = p.object;
  CUPTI_CALL(cuptiRangeProfilerDecodeData(&d));
  t.decode = ms(t0);
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = p.image.data();
  info.counterDataImageSize = p.image.size();
  CUPTI_CALL(cuptiRangeProfilerGetCounterDataInfo(&info));
  if (info.numTotalRanges != 1) die(g.label + ": " + std::to_string(info.numTotalRanges) + " ranges, expected 1");
  std::vector<double> v = evaluate(g, p.image);
  check(g, v);
  return v;
}

void report(const char* mode, int round, const Group& g, const Times& t, const std::vector<double>& v) {
  std::printf("%s round %d %s: disable %.2f enable %.2f size %.2f init %.2f setconfig %.2f start %.2f "
              "launch %.2f stop %.2f decode %.2f ms\n",
              mode, round, g.label.c_str(), t.disable, t.enable, t.size, t.init, t.setconfig, t.start, t.launch,
              t.stop, t.decode);
  for (size_t i = 0; i < v.size(); ++i) {
    if (g.names[i] == "gpu__time_duration.sum" || g.names[i].find(".sum") != std::string::npos) {
      std::printf("    %-70s %.6g\n", g.names[i].c_str(), v[i]);
    }
  }
}

std::vector<Group> groups(const std::string& chip) {
  std::vector<Group> gs(3);
  gs[0].label = "G1";
  gs[0].names = {"gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "sm__inst_executed.sum"};
  gs[1].label = "G2";
  gs[1].names = {"gpu__time_duration.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "lts__t_sectors.sum",
                 "smsp__inst_executed.sum"};
  // The first group of the agent's GH100 table (agent/src/groups_table.cpp): a full-size group.
  gs[2].label = "G3";
  gs[2].names = {"gpu__time_duration.sum",
                 "dram__bytes.sum.per_second",
                 "dram__cycles_active.avg.pct_of_peak_sustained_elapsed",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                 "fbpa__dram_sectors.avg.pct_of_peak_sustained_elapsed",
                 "gpu__compute_memory_access_throughput_internal_activity.avg.pct_of_peak_sustained_elapsed",
                 "gpu__compute_memory_request_throughput_internal_activity.avg.pct_of_peak_sustained_elapsed",
                 "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                 "idc__request_cycles_active.avg.pct_of_peak_sustained_elapsed",
                 "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                 "l1tex__tmain_requests.avg.pct_of_peak_sustained_elapsed",
                 "lts__throughput_internal_activity.avg.pct_of_peak_sustained_elapsed",
                 "sm__cycles_elapsed.avg.per_second",
                 "sm__inst_executed.avg.pct_of_peak_sustained_elapsed",
                 "sm__inst_executed.sum",
                 "sm__inst_executed_pipe_tma.sum",
                 "smsp__inst_executed.sum"};
  for (Group& g : gs) compile(chip, g);
  return gs;
}

}  // namespace

int main(int argc, char** argv) {
  (void)std::setvbuf(stdout, nullptr, _IOLBF, 0);  // every line out before a crash
  const std::string mode = argc > 1 ? argv[1] : "fresh";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  cuda(cudaSetDevice(0), "cudaSetDevice");
  cuda(cudaFree(nullptr), "context");
  Profiler p;
  if (cuCtxGetCurrent(&p.ctx) != CUDA_SUCCESS || p.ctx == nullptr) die("cuCtxGetCurrent");
  // Before any other profiler call, the chip name included (CUPTI crashes there without it).
  auto t0 = std::chrono::steady_clock::now();
  CUpti_Profiler_Initialize_Params pi{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUPTI_CALL(cuptiProfilerInitialize(&pi));
  std::printf("%s: cuptiProfilerInitialize %.2f ms\n", mode.c_str(), ms(t0));
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  CUPTI_CALL(cuptiDeviceGetChipName(&chip));
  std::vector<Group> gs = groups(chip.pChipName);

  float* x = nullptr;
  float* y = nullptr;
  cuda(cudaMalloc(&x, kN * sizeof(float)), "malloc x");
  cuda(cudaMalloc(&y, kN * sizeof(float)), "malloc y");
  cuda(cudaMemset(x, 0, kN * sizeof(float)), "memset x");
  cuda(cudaMemset(y, 0, kN * sizeof(float)), "memset y");
  launch(x, y, kN);
  cuda(cudaDeviceSynchronize(), "warm-up");

  if (mode == "fresh") {
    for (int r = 0; r < rounds; ++r) {
      for (Group& g : gs) {
        Times t;
        disable(p, t);
        enable(p, t);
        configure(p, g, t);
        report("fresh", r, g, t, collect(p, g, x, y, t));
      }
    }
  } else if (mode == "inplace") {
    Times first;
    enable(p, first);
    std::printf("inplace: enable %.2f ms\n", first.enable);
    for (int r = 0; r < rounds; ++r) {
      for (Group& g : gs) {
        Times t;
        configure(p, g, t);
        report("inplace", r, g, t, collect(p, g, x, y, t));
        // The same group again on the same object: the cost of a launch without a switch.
        Times again;
        configure(p, g, again);
        report("inplace-same", r, g, again, collect(p, g, x, y, again));
      }
    }
  } else if (mode == "warm-empty" || mode == "warm-kernel") {
    // A worker makes the object's first Start (the expensive one) with no launch of the
    // application's in it: warm-empty starts and stops an empty range (no decode), warm-kernel
    // runs a small kernel of its own in the range and decodes it. The main thread keeps launching
    // meanwhile (counted), then collects for real on the warmed object.
    const bool with_kernel = mode == "warm-kernel";
    constexpr size_t kSmall = size_t{1} << 16;
    cudaStream_t app = nullptr;
    cudaStream_t own = nullptr;
    cuda(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking), "app stream");
    cuda(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "own stream");
    for (int r = 0; r < rounds; ++r) {
      for (Group& g : gs) {
        Times w;
        double warm_start = 0, warm_stop = 0, warm_decode = 0;
        std::atomic<bool> done{false};
        std::thread worker([&] {
          if (cuCtxSetCurrent(p.ctx) != CUDA_SUCCESS) die("worker cuCtxSetCurrent");
          disable(p, w);
          enable(p, w);
          configure(p, g, w);
          auto t0 = std::chrono::steady_clock::now();
          CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
          st.pRangeProfilerObject = p.object;
          CUPTI_CALL(cuptiRangeProfilerStart(&st));
          warm_start = ms(t0);
          if (with_kernel) {
            launch(x, y, kSmall, own);
            cuda(cudaStreamSynchronize(own), "warm kernel");
          }
          t0 = std::chrono::steady_clock::now();
          CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
          sp.pRangeProfilerObject = p.object;
          CUPTI_CALL(cuptiRangeProfilerStop(&sp));
          warm_stop = ms(t0);
          if (with_kernel) {
            t0 = std::chrono::steady_clock::now();
            CUpti_RangeProfiler_DecodeData_Params d{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
            d.pRangeProfilerObject = p.object;
            CUPTI_CALL(cuptiRangeProfilerDecodeData(&d));
            warm_decode = ms(t0);
          }
          done = true;
        });
        size_t n = 0;
        double longest = 0;
        const auto w0 = std::chrono::steady_clock::now();
        while (!done.load()) {
          const auto b0 = std::chrono::steady_clock::now();
          for (int k = 0; k < 16; ++k) launch(x, y, kSmall, app);
          cuda(cudaStreamSynchronize(app), "sync during warm-up");
          longest = std::max(longest, ms(b0));
          n += 16;
        }
        const double window = ms(w0);
        worker.join();
        std::printf("%s round %d %s: worker disable %.2f enable %.2f setconfig %.2f start %.2f stop %.2f decode %.2f ms; "
                    "main %zu launches in %.1f ms (%.0f/s), slowest 16 in %.2f ms\n",
                    mode.c_str(), r, g.label.c_str(), w.disable, w.enable, w.setconfig, warm_start, warm_stop,
                    warm_decode, n, window, window > 0 ? n * 1e3 / window : 0.0, longest);
        Times t;
        configure(p, g, t);
        report(mode.c_str(), r, g, t, collect(p, g, x, y, t));
        Times again;
        configure(p, g, again);
        report((mode + "-again").c_str(), r, g, again, collect(p, g, x, y, again));
      }
    }
  } else if (mode == "idle") {
    // What an enabled range-profiler object costs launches it does not profile: launches per
    // second with no object, with an object enabled and configured (one collection done, then
    // idle), and after Disable. Tiny kernels (launch-bound) and 1M-element ones.
    cudaStream_t app = nullptr;
    cuda(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking), "app stream");
    const auto rate = [&](size_t n_elems, double seconds) {
      size_t n = 0;
      const auto b0 = std::chrono::steady_clock::now();
      while (ms(b0) < seconds * 1e3) {
        for (int k = 0; k < 64; ++k) launch(x, y, n_elems, app);
        cuda(cudaStreamSynchronize(app), "idle burst");
        n += 64;
      }
      return static_cast<double>(n) / seconds;
    };
    for (int r = 0; r < rounds; ++r) {
      const double none_small = rate(size_t{1} << 12, 1.0);
      const double none_big = rate(size_t{1} << 20, 1.0);
      Times t;
      enable(p, t);
      configure(p, gs[0], t);
      (void)collect(p, gs[0], x, y, t);
      const double on_small = rate(size_t{1} << 12, 1.0);
      const double on_big = rate(size_t{1} << 20, 1.0);
      Times d;
      disable(p, d);
      const double off_small = rate(size_t{1} << 12, 1.0);
      const double off_big = rate(size_t{1} << 20, 1.0);
      std::printf("idle round %d: launches/s tiny %.0f -> enabled idle %.0f (%+.1f%%) -> disabled %.0f; "
                  "1M elements %.0f -> %.0f (%+.1f%%) -> %.0f; disable %.2f ms\n",
                  r, none_small, on_small, 100.0 * (on_small / none_small - 1), off_small, none_big, on_big,
                  100.0 * (on_big / none_big - 1), off_big, d.disable);
    }
  } else if (mode == "thread") {
    // Short launches on a stream of their own, counted while the worker switches.
    constexpr size_t kSmall = size_t{1} << 16;
    cudaStream_t stream = nullptr;
    cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    const auto burst = [&](double seconds) {
      size_t n = 0;
      const auto b0 = std::chrono::steady_clock::now();
      while (ms(b0) < seconds * 1e3) {
        for (int k = 0; k < 64; ++k) launch(x, y, kSmall, stream);
        cuda(cudaStreamSynchronize(stream), "burst sync");
        n += 64;
      }
      return static_cast<double>(n) / seconds;
    };
    std::printf("thread: baseline %.0f launches/s\n", burst(0.5));
    for (int r = 0; r < rounds; ++r) {
      for (Group& g : gs) {
        Times t;
        std::atomic<bool> done{false};
        std::thread worker([&] {
          if (cuCtxSetCurrent(p.ctx) != CUDA_SUCCESS) die("worker cuCtxSetCurrent");
          disable(p, t);
          enable(p, t);
          configure(p, g, t);
          done = true;
        });
        size_t n = 0;
        const auto w0 = std::chrono::steady_clock::now();
        while (!done.load()) {
          for (int k = 0; k < 16; ++k) launch(x, y, kSmall, stream);
          cuda(cudaStreamSynchronize(stream), "sync during switch");
          n += 16;
        }
        const double window = ms(w0);
        worker.join();
        std::printf("thread round %d %s: %zu launches in %.1f ms during the switch (%.0f/s)\n", r, g.label.c_str(),
                    n, window, window > 0 ? n * 1e3 / window : 0.0);
        report("thread", r, g, t, collect(p, g, x, y, t));
      }
    }
    std::printf("thread: after %.0f launches/s\n", burst(0.5));
  } else {
    die("mode: fresh, inplace, thread, warm-empty, warm-kernel or idle");
  }
  cuda(cudaDeviceSynchronize(), "final sync");
  std::printf("%s: OK\n", mode.c_str());
  return 0;
}
