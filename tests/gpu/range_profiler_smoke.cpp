// GPU smoke test of the range profiler and the profiler host, without the callback machinery:
// begin() before a kernel launch, end() after it, evaluate, print, check the numbers against what
// the kernel must have done. Exit 0 ok, 1 failure, 77 skipped (no usable GPU or driver, or
// counters not accessible to this user), which CTest reports as skipped (SKIP_RETURN_CODE).
//
// What it exercises, in order (each step prints a line; the first failure stops it):
//   1. chip name, host, two plans (A: speed of light + bytes, with one name CUPTI rejects;
//      B: other units, to force a counter-data image of another size)
//   2. keep_enabled profiler (the default): first warm_up() (always-on's start-up paid ahead on
//      an empty range, nothing decoded: CUTRIAGE_WARMUP), then A twice on one enabled object
//      (SetConfig again on an object kept enabled; A #1's Start is then a later one's, not the
//      process's first), then B and A again (a plan change enables a new object: a second
//      config on one object crashed), then disable() and A again (re-enable)
//   3. keep_enabled = false profiler: Enable/Disable around one launch (the sequence the shared
//      notes saw working on the H200)
//   4. a multi-pass plan over the kernel's consecutive launches, one pass each (always-on's
//      stages, PlanReplay::kLaunches), an unprofiled launch between two passes; then a collection
//      abandoned after two passes by one with another id (MetricPlan::collection), which must
//      start over at pass 0 and give the same counts
//   5. with --probe-empty-range: begin()/end() with no kernel in between (the H200 crashed once
//      in DecodeData there: opt-in, last)
//   6. with --probe-pc-sampling: a launch PC-sampled while a keep_enabled profiler stays enabled
//      (stopped, its configuration set), then the same plan again on that profiler: whether deep
//      mode could keep one profiler enabled across its PC-sampled launches instead of paying the
//      first Start again after each (issue 21; the agent disables it today)
//   7. with --probe-steps: passes over "steps" of three launches of two kernels (auto range + user
//      replay, several ranges a pass), for plan A and for every counter the rules read: whether
//      CUPTI gives one range per launch with that launch's own counts (against kernel replay of
//      each launch alone), and what a pass costs. Whether one always-on stage could serve every
//      family of a training step with one configuration (issue 22). Then a pass with one launch
//      fewer: what CUPTI does when a step differs. Last: it leaves y unchecked.
//   8. with --probe-step-shapes: steps shaped like the example service's (two streams, a graph
//      launch in the step) and the variants without either: which shape CUPTI refuses.
// After every profiled launch the in-place kernel's output is checked: kernel replay must restore
// device memory between passes.
#include <cuda.h>
#include <cuda_runtime.h>  // the typed cudaMalloc overload

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cupti_range_profiler.h>  // the steps probe names its ranges

#include "cutriage/collectors/range_profiler.h"
#include "cutriage/triage/plan.h"  // the rules' counters, for the steps probe
#include "pc_sampling.h"  // collectors/src: make_cupti_pc_sampler (the --probe-pc-sampling step)
#include "range_profiler_smoke_kernel.h"

namespace cc = cutriage::collectors;
namespace triage = cutriage::triage;

namespace {

constexpr int kSkip = 77;
constexpr size_t kN = size_t{32} << 20;  // floats per array: 128 MiB, well beyond the 50 MB L2

struct Failure {
  std::string what;
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw Failure{std::string(what) + ": " + cudaGetErrorString(err)};
}

void check_status(const cc::Status& s, const char* what) {
  if (!s.is_ok()) throw Failure{std::string(what) + ": [" + cc::to_string(s.code()) + "] " + s.message()};
}

template <typename T>
T take(cc::Result<T> r, const char* what) {
  check_status(r.status(), what);
  return std::move(r).value();
}

// The CUcontext of the runtime's primary context, through the runtime's driver entry points, so
// that this binary does not link libcuda and still starts (and skips) where there is no driver.
void* current_context() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  check_cuda(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, CUDART_VERSION, cudaEnableDefault, &found),
             "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent)");
  if (fn == nullptr || found != cudaDriverEntryPointSuccess) throw Failure{"cuCtxGetCurrent not found"};
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  CUcontext ctx = nullptr;
  const CUresult res = reinterpret_cast<CtxGetCurrent>(fn)(&ctx);
  if (res != CUDA_SUCCESS || ctx == nullptr) throw Failure{"cuCtxGetCurrent failed"};
  return ctx;
}

struct Buffers {
  float* x = nullptr;
  float* y = nullptr;
  std::vector<float> host_y;  // what y must hold now
  ~Buffers() {
    cudaFree(x);
    cudaFree(y);
  }
};

void init_buffers(Buffers& b) {
  std::vector<float> x(kN);
  b.host_y.resize(kN);
  for (size_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 7);  // small integers: every sum stays exact in float
    b.host_y[i] = static_cast<float>(i % 5);
  }
  check_cuda(cudaMalloc(&b.x, kN * sizeof(float)), "cudaMalloc x");
  check_cuda(cudaMalloc(&b.y, kN * sizeof(float)), "cudaMalloc y");
  check_cuda(cudaMemcpy(b.x, x.data(), kN * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  check_cuda(cudaMemcpy(b.y, b.host_y.data(), kN * sizeof(float), cudaMemcpyHostToDevice), "copy y");
  for (size_t i = 0; i < kN; ++i) b.host_y[i] += x[i];  // the expected y after the next launch
}

// Launches once and checks y (replay must have restored memory between passes), then advances
// the expected y by one more x.
void launch_and_verify(Buffers& b) {
  check_cuda(launch_smoke_accumulate(b.x, b.y, kN), "launch");
  check_cuda(cudaDeviceSynchronize(), "synchronize");
  std::vector<float> y(kN);
  check_cuda(cudaMemcpy(y.data(), b.y, kN * sizeof(float), cudaMemcpyDeviceToHost), "copy y back");
  size_t wrong = 0;
  size_t first = 0;
  for (size_t i = 0; i < kN; ++i) {
    if (y[i] != b.host_y[i]) {
      if (wrong++ == 0) first = i;
    }
  }
  if (wrong != 0) {
    throw Failure{"y is wrong after the launch at " + std::to_string(wrong) + " elements (first " +
                  std::to_string(first) + ": " + std::to_string(y[first]) + ", expected " +
                  std::to_string(b.host_y[first]) + "): kernel replay did not restore memory?"};
  }
  for (size_t i = 0; i < kN; ++i) b.host_y[i] += static_cast<float>(i % 7);
}

double reading(const std::vector<cc::MetricReading>& readings, const std::string& name) {
  for (const auto& r : readings) {
    if (r.name == name) return r.value;
  }
  throw Failure{"no reading for " + name};
}

void expect_range(const std::vector<cc::MetricReading>& readings, const std::string& name, double lo, double hi) {
  const double v = reading(readings, name);
  if (!std::isfinite(v) || v < lo || v > hi) {
    throw Failure{name + " = " + std::to_string(v) + ", expected within [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]"};
  }
}

const std::string kDuration = "gpu__time_duration.sum";
const std::string kDramRead = "dram__bytes_read.sum";
const std::string kDramWrite = "dram__bytes_write.sum";
const std::string kSmInst = "sm__inst_executed.sum";
const std::string kSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const std::string kDramThroughput = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
const std::string kGlobalLoadSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
const std::string kLongScoreboard = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio";
const std::string kL2Sectors = "lts__t_sectors.sum";
const std::string kSmspInst = "smsp__inst_executed.sum";

void check_plan_a(const std::vector<cc::MetricReading>& r) {
  const double bytes = static_cast<double>(kN * sizeof(float));
  expect_range(r, kDuration, 1e3, 1e8);               // ns: tens of microseconds expected
  expect_range(r, kDramRead, 0.5 * 2 * bytes, 2.0 * 2 * bytes);  // x and y read once
  expect_range(r, kDramWrite, 0.5 * bytes, 2.0 * bytes);         // y written once
  expect_range(r, kSmInst, 1.0, 1e12);
  expect_range(r, kSmThroughput, 0.0, 110.0);
  expect_range(r, kDramThroughput, 1.0, 110.0);
}

void check_plan_b(const std::vector<cc::MetricReading>& r) {
  // Two coalesced 4-byte loads per element: 2 * n * 4 / 32 sectors, exactly.
  const double sectors = 2.0 * static_cast<double>(kN) * sizeof(float) / 32.0;
  expect_range(r, kGlobalLoadSectors, 0.99 * sectors, 1.01 * sectors);
  expect_range(r, kL2Sectors, 0.5 * 1.5 * sectors, 3.0 * sectors);  // loads + stores through L2
  expect_range(r, kSmspInst, 1.0, 1e12);
  expect_range(r, kLongScoreboard, 0.0, 1e6);
}

void print_readings(const std::vector<cc::MetricReading>& readings) {
  for (const auto& r : readings) std::printf("    %-72s %.6g\n", r.name.c_str(), r.value);
}

// The range profiler's CUPTI calls of the last begin() and end(), for issue 21/22's breakdown.
void print_steps(const cc::RangeProfiler& profiler) {
  const cc::RangeProfilerSteps s = profiler.last_steps();
  auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  std::printf("    steps: enable %.1f, counter-data image %.1f, set config %.1f, start %.1f, stop %.1f, "
              "decode %.1f, disable %.1f ms\n",
              ms(s.enable_ns), ms(s.counter_data_ns), ms(s.set_config_ns), ms(s.start_ns), ms(s.stop_ns),
              ms(s.decode_ns), ms(s.disable_ns));
}

// One profiled launch: begin, launch (checked), end, evaluate.
std::vector<cc::MetricReading> profile_once(cc::ProfilerHost& host, cc::RangeProfiler& profiler,
                                            const cc::MetricPlan& plan, Buffers& b, const char* label) {
  const auto start = std::chrono::steady_clock::now();
  check_status(profiler.begin(plan), "begin()");
  const double begin_ms = ms_since(start);
  const auto launched = std::chrono::steady_clock::now();
  launch_and_verify(b);
  const double launch_ms = ms_since(launched);
  const auto ended = std::chrono::steady_clock::now();
  cc::CounterData data = take(profiler.end(), "end()");
  const double end_ms = ms_since(ended);
  const auto evaluated = std::chrono::steady_clock::now();
  auto readings = take(host.evaluate(plan, data, 0), "evaluate()");
  const double eval_ms = ms_since(evaluated);
  std::printf("  %s: ranges %u, counter data %zu bytes; begin %.1f ms, launch+check %.1f ms, end %.1f ms, "
              "evaluate %.1f ms\n",
              label, data.ranges, data.image.size(), begin_ms, launch_ms, end_ms, eval_ms);
  print_steps(profiler);
  if (data.ranges != 1) throw Failure{"expected 1 range, got " + std::to_string(data.ranges)};
  print_readings(readings);
  return readings;
}

// --- the steps probe (step 7) ---

// The names CUPTI gave the ranges of a decoded image ("" where it gave none).
std::vector<std::string> range_names(const cc::CounterData& data) {
  std::vector<std::string> names;
  for (uint32_t r = 0; r < data.ranges; ++r) {
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params info{};
    info.structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = data.image.data();
    info.counterDataImageSize = data.image.size();
    info.rangeIndex = r;
    info.rangeDelimiter = "/";
    const CUptiResult res = cuptiRangeProfilerCounterDataGetRangeInfo(&info);
    names.push_back(res == CUPTI_SUCCESS && info.rangeName != nullptr ? info.rangeName
                                                                       : "(error " + std::to_string(res) + ")");
  }
  return names;
}

// One "step": accumulate over n, scale over n, accumulate over n/4. DRAM reads of about 2, 1 and
// 0.5 arrays' bytes tell the three ranges apart. `launches` < 3 leaves the last ones out.
void launch_step(Buffers& b, int launches = 3) {
  if (launches > 0) check_cuda(launch_smoke_accumulate(b.x, b.y, kN), "step launch 1");
  if (launches > 1) check_cuda(launch_smoke_scale(b.x, b.y, kN), "step launch 2");
  if (launches > 2) check_cuda(launch_smoke_accumulate(b.x, b.y, kN / 4), "step launch 3");
  check_cuda(cudaDeviceSynchronize(), "step synchronize");
}

struct StepCollection {
  cc::CounterData data;
  std::vector<double> pass_ms;  // begin + step + end, per pass
};

StepCollection collect_over_steps(void* ctx, Buffers& b, const cc::MetricPlan& plan_in, uint64_t collection,
                                  int short_pass = -1) {
  cc::MetricPlan plan = plan_in;
  plan.replay = cc::PlanReplay::kLaunches;
  plan.collection = collection;
  cc::RangeProfilerOptions options;
  options.max_ranges = 16;
  auto profiler = take(cc::make_cupti_range_profiler(ctx, options), "make_cupti_range_profiler (steps)");
  StepCollection out;
  for (uint32_t pass = 0; pass < plan.passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    check_status(profiler->begin(plan), "begin() (a step)");
    const double begin_ms = ms_since(start);
    launch_step(b, static_cast<int>(pass) == short_pass ? 2 : 3);
    const auto ended = std::chrono::steady_clock::now();
    cc::Result<cc::CounterData> data = profiler->end();
    const double end_ms = ms_since(ended);
    out.pass_ms.push_back(ms_since(start));
    if (!data.is_ok()) {
      std::printf("  pass %u: end() -> %s\n", pass, data.status().message().c_str());
      throw Failure{"end() of a step failed"};
    }
    out.data = std::move(data).value();
    std::printf("  pass %u: begin %.1f ms, step %.1f ms, end %.1f ms, pending %u\n", pass, begin_ms,
                out.pass_ms.back() - begin_ms - end_ms, end_ms, out.data.passes_pending);
    if (pass == 0 || pass + 1 == plan.passes) print_steps(*profiler);
  }
  if (out.data.passes_pending != 0) throw Failure{"passes still pending after the plan's passes"};
  return out;
}

// A reading, or NaN where the plan has no such metric (the rules' list reads no DRAM bytes).
double value_or_nan(const std::vector<cc::MetricReading>& readings, const std::string& name) {
  for (const auto& r : readings) {
    if (r.name == name) return r.value;
  }
  return std::nan("");
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Each launch of a step alone, under kernel replay: the reference values of the three ranges.
std::vector<std::vector<cc::MetricReading>> step_reference(void* ctx, cc::ProfilerHost& host, const cc::MetricPlan& plan,
                                                           Buffers& b) {
  auto profiler = take(cc::make_cupti_range_profiler(ctx), "make_cupti_range_profiler (step reference)");
  std::vector<std::vector<cc::MetricReading>> out;
  for (int i = 0; i < 3; ++i) {
    // The launches before the i-th run unprofiled, so each sees the caches as in a step.
    if (i > 0) check_cuda(launch_smoke_accumulate(b.x, b.y, kN), "reference lead-in 1");
    if (i > 1) check_cuda(launch_smoke_scale(b.x, b.y, kN), "reference lead-in 2");
    check_cuda(cudaDeviceSynchronize(), "reference synchronize");
    check_status(profiler->begin(plan), "begin() (reference)");
    if (i == 0) check_cuda(launch_smoke_accumulate(b.x, b.y, kN), "reference launch 1");
    if (i == 1) check_cuda(launch_smoke_scale(b.x, b.y, kN), "reference launch 2");
    if (i == 2) check_cuda(launch_smoke_accumulate(b.x, b.y, kN / 4), "reference launch 3");
    cc::CounterData data = take(profiler->end(), "end() (reference)");
    out.push_back(take(host.evaluate(plan, data, 0), "evaluate() (reference)"));
  }
  return out;
}

void probe_steps(void* ctx, cc::ProfilerHost& host, const cc::MetricPlan& plan_a, Buffers& b) {
  // The agent's full list (agent/src/stages.cpp, all_counters), which this binary does not link.
  const std::vector<std::string> rules = triage::counters_for_decisions(
      {triage::Decision::kD0Trust, triage::Decision::kD1WorkloadSize, triage::Decision::kD2Regime,
       triage::Decision::kD3IssueStalls, triage::Decision::kD4ComputePipe, triage::Decision::kD5MemoryMechanism,
       triage::Decision::kD7HardwareLimit});
  const cc::MetricPlan plan_rules = take(host.plan(rules), "plan of the rules' counters");
  std::printf("steps probe: plan A %u passes; the rules' counters: %zu accepted, %zu rejected, %u passes\n",
              plan_a.passes, plan_rules.metrics.size(), plan_rules.rejected.size(), plan_rules.passes);
  const double bytes = static_cast<double>(kN) * sizeof(float);
  const double expected_read[3] = {2 * bytes, bytes, 0.5 * bytes};
  uint64_t collection = 100;
  for (const cc::MetricPlan* plan : {&plan_a, &plan_rules}) {
    const bool full = plan == &plan_rules;
    std::printf("== steps of 3 launches, %s (%u passes)\n", full ? "the rules' counters" : "plan A", plan->passes);
    StepCollection c = collect_over_steps(ctx, b, *plan, ++collection);
    std::vector<double> later(c.pass_ms.begin() + 1, c.pass_ms.end());
    std::printf("  first pass %.1f ms, later passes median %.1f ms; ranges %u: ", c.pass_ms.front(), median(later),
                c.data.ranges);
    for (const std::string& n : range_names(c.data)) std::printf("[%s] ", n.c_str());
    std::printf("\n");
    const auto reference = step_reference(ctx, host, *plan, b);
    for (uint32_t r = 0; r < c.data.ranges && r < 3; ++r) {
      auto readings = take(host.evaluate(*plan, c.data, r), "evaluate() (a step's range)");
      size_t compared = 0;
      size_t off = 0;
      std::string worst;
      double worst_rel = 0;
      for (size_t i = 0; i < readings.size() && i < reference[r].size(); ++i) {
        const double v = readings[i].value;
        const double ref = reference[r][i].value;
        if (!std::isfinite(v) || !std::isfinite(ref)) continue;
        ++compared;
        const double rel = std::fabs(v - ref) / std::max(std::fabs(ref), 1e-9);
        if (std::fabs(v - ref) > 1e-6 && rel > 0.10) ++off;
        if (std::fabs(v - ref) > 1e-6 && rel > worst_rel) {
          worst_rel = rel;
          worst = readings[i].name + " " + std::to_string(v) + " vs " + std::to_string(ref);
        }
      }
      const double read = value_or_nan(readings, kDramRead);
      std::printf("  range %u: dram read %.3g (expected about %.3g), duration %.0f ns (alone %.0f); %zu of %zu values "
                  "within 10%% of kernel replay alone; furthest: %s\n",
                  r, read, expected_read[r], value_or_nan(readings, kDuration), value_or_nan(reference[r], kDuration),
                  compared - off, compared, worst.empty() ? "-" : worst.c_str());
      if (!full) {
        for (size_t i = 0; i < readings.size(); ++i) {
          std::printf("    %-72s %.6g (alone %.6g)\n", readings[i].name.c_str(), readings[i].value,
                      reference[r][i].value);
        }
      }
    }
    if (c.data.ranges != 3) std::printf("  NOT one range per launch: %u ranges\n", c.data.ranges);
  }
  std::printf("== steps of 3 launches with pass 1 short of its third launch, plan A\n");
  try {
    StepCollection c = collect_over_steps(ctx, b, plan_a, ++collection, 1);
    std::printf("  ranges %u: ", c.data.ranges);
    for (const std::string& n : range_names(c.data)) std::printf("[%s] ", n.c_str());
    std::printf("\n");
    for (uint32_t r = 0; r < c.data.ranges && r < 3; ++r) {
      auto readings = host.evaluate(plan_a, c.data, r);
      if (!readings.is_ok()) {
        std::printf("  range %u: evaluate -> %s\n", r, readings.status().message().c_str());
        continue;
      }
      std::printf("  range %u: dram read %.3g, duration %.0f ns, sm inst %.3g\n", r,
                  reading(readings.value(), kDramRead), reading(readings.value(), kDuration),
                  reading(readings.value(), kSmInst));
    }
  } catch (const Failure& f) {
    std::printf("  the short pass: %s\n", f.what.c_str());
  }
}

// Steps shaped like the example service's (issue 22: its steps ended in CUPTI_ERROR_UNKNOWN at
// cuptiRangeProfilerStop on an H100, PyTorch's on one stream did not): kRequests requests a step,
// each three launches on stream A, then one on stream B (the anchor: a pass ends and the next
// begins just before it, as at the agent's boundary, A's launches of the request still queued), a
// graph of three launches on B after the step's first anchor, both streams synchronized at each
// request's end. The variants take the graph, the second stream or both out, so that the shape
// CUPTI refuses shows; each runs plan A over its passes with a profiler of its own.
struct StepShape {
  const char* name;
  bool two_streams;
  bool graph;
};

void probe_step_shapes(void* ctx, const cc::MetricPlan& plan_a, Buffers& b) {
  constexpr int kRequests = 3;
  constexpr size_t kPart = kN / 8;
  float* z = nullptr;
  check_cuda(cudaMalloc(&z, kPart * sizeof(float)), "cudaMalloc z");
  cudaStream_t a = nullptr;
  cudaStream_t side = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), "stream A");
  check_cuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "stream B");
  // The graph, captured on B before any profiler exists (as the service does at start).
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int k = 0; k < 3; ++k) check_cuda(launch_smoke_nudge_on(z, kPart, side), "graph node");
  check_cuda(cudaStreamEndCapture(side, &graph), "end capture");
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  const StepShape shapes[] = {{"one stream", false, false},
                              {"one stream, a graph", false, true},
                              {"two streams", true, false},
                              {"two streams, a graph (the service)", true, true}};
  uint64_t collection = 200;
  for (const StepShape& shape : shapes) {
    cudaStream_t bs = shape.two_streams ? side : a;
    cc::MetricPlan plan = plan_a;
    plan.replay = cc::PlanReplay::kLaunches;
    plan.collection = ++collection;
    cc::RangeProfilerOptions options;
    options.max_ranges = 64;
    auto profiler = take(cc::make_cupti_range_profiler(ctx, options), "make_cupti_range_profiler (shapes)");
    const uint32_t per_step = kRequests * 4 + (shape.graph ? 1 : 0);
    uint32_t pass = 0;
    bool begun = false;
    std::string outcome;
    for (int req = 0; outcome.empty() && req < kRequests * static_cast<int>(plan.passes + 2); ++req) {
      for (int k = 0; k < 3; ++k) check_cuda(launch_smoke_accumulate_on(b.x, b.y, kPart, a), "request on A");
      if (req % kRequests == 0) {
        if (begun) {
          cc::Result<cc::CounterData> data = profiler->end();
          if (!data.is_ok()) {
            outcome = "pass " + std::to_string(pass) + " end() -> " + data.status().message();
            break;
          }
          if (data.value().passes_pending == 0) {
            outcome = "ok, " + std::to_string(pass + 1) + " passes, " + std::to_string(data.value().ranges) +
                      " ranges (launches a step: " + std::to_string(per_step) + ")";
            break;
          }
          ++pass;
        }
        const cc::Status s = profiler->begin(plan);
        if (!s.is_ok()) {
          outcome = "pass " + std::to_string(pass) + " begin() -> " + s.message();
          break;
        }
        begun = true;
      }
      check_cuda(launch_smoke_scale_on(b.x, z, kPart, bs), "request on B");
      if (shape.graph && req % kRequests == 0) check_cuda(cudaGraphLaunch(exec, bs), "graph launch");
      check_cuda(cudaStreamSynchronize(a), "sync A");
      check_cuda(cudaStreamSynchronize(bs), "sync B");
    }
    if (outcome.empty()) outcome = "no outcome after " + std::to_string(pass) + " passes";
    std::printf("step shapes: %s, plan A (%u passes): %s\n", shape.name, plan.passes, outcome.c_str());
    profiler.reset();
    const cudaError_t after = cudaDeviceSynchronize();
    if (after != cudaSuccess) {
      std::printf("step shapes: the device after it: %s; no further shapes\n", cudaGetErrorString(after));
      break;
    }
  }
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
  (void)cudaStreamDestroy(a);
  (void)cudaStreamDestroy(side);
  (void)cudaFree(z);
}

int run(bool probe_empty_range, bool probe_pc_sampling, bool probe_steps_too, bool probe_shapes) {
  int devices = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&devices);
  if (count_err != cudaSuccess || devices == 0) {
    std::printf("SKIP: no usable CUDA GPU or driver (%s)\n",
                count_err != cudaSuccess ? cudaGetErrorString(count_err) : "0 devices");
    return kSkip;
  }
  check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
  check_cuda(cudaFree(nullptr), "create the primary context");
  void* ctx = current_context();

  const std::string chip = take(cc::cupti_chip_name(0), "cupti_chip_name(0)");
  std::printf("chip %s\n", chip.c_str());
  auto host = take(cc::make_cupti_profiler_host(chip), "make_cupti_profiler_host");

  const auto planned = std::chrono::steady_clock::now();
  const cc::MetricPlan plan_a = take(
      host->plan({kDuration, kDramRead, kDramWrite, kSmInst, kSmThroughput, kDramThroughput, "launch__grid_size"}),
      "plan A");
  const cc::MetricPlan plan_b = take(host->plan({kGlobalLoadSectors, kLongScoreboard, kL2Sectors, kSmspInst}), "plan B");
  std::printf("plans in %.1f ms: A %zu metrics, %u passes, config %zu bytes; B %zu metrics, %u passes\n",
              ms_since(planned), plan_a.metrics.size(), plan_a.passes, plan_a.config_image.size(),
              plan_b.metrics.size(), plan_b.passes);
  for (const auto& r : plan_a.rejected) std::printf("  A rejected %s: %s\n", r.name.c_str(), r.reason.c_str());
  if (plan_a.metrics.size() != 6 || plan_a.rejected.size() != 1 || plan_b.metrics.size() != 4) {
    throw Failure{"unexpected plan contents"};
  }

  Buffers b;
  init_buffers(b);
  launch_and_verify(b);  // warm-up, unprofiled

  {
    const auto made = std::chrono::steady_clock::now();
    auto created = cc::make_cupti_range_profiler(ctx);
    if (!created.is_ok() && (created.status().code() == cc::StatusCode::kPermissionDenied ||
                             created.status().code() == cc::StatusCode::kAlreadySubscribed)) {
      std::printf("SKIP: %s\n", created.status().message().c_str());
      return kSkip;
    }
    auto profiler = take(std::move(created), "make_cupti_range_profiler (keep_enabled)");
    std::printf("keep_enabled profiler made in %.1f ms\n", ms_since(made));
    cc::MetricPlan warm = take(host->plan({kDuration}), "warm-up plan");
    warm.replay = cc::PlanReplay::kNone;
    const auto warmed = std::chrono::steady_clock::now();
    check_status(profiler->warm_up(warm), "warm_up()");
    std::printf("  warm-up (empty range, not decoded): %.1f ms\n", ms_since(warmed));
    print_steps(*profiler);
    auto a1 = profile_once(*host, *profiler, plan_a, b, "A #1");
    check_plan_a(a1);
    auto a2 = profile_once(*host, *profiler, plan_a, b, "A #2 (same enabled object)");
    check_plan_a(a2);
    auto b1 = profile_once(*host, *profiler, plan_b, b, "B (another plan: enabled anew)");
    check_plan_b(b1);
    auto b2 = profile_once(*host, *profiler, plan_b, b, "B #2 (same enabled object)");
    check_plan_b(b2);
    check_plan_a(profile_once(*host, *profiler, plan_a, b, "A after B (enabled anew)"));
    check_status(profiler->disable(), "disable()");
    auto a3 = profile_once(*host, *profiler, plan_a, b, "A #3 (after disable(): enabled again)");
    check_plan_a(a3);
    const double d1 = reading(a1, kDramRead);
    const double d2 = reading(a2, kDramRead);
    std::printf("  dram bytes read, launch 1 vs 2: %.0f vs %.0f\n", d1, d2);
  }
  {
    cc::RangeProfilerOptions per_launch;
    per_launch.keep_enabled = false;
    auto profiler = take(cc::make_cupti_range_profiler(ctx, per_launch), "make_cupti_range_profiler (per launch)");
    check_plan_a(profile_once(*host, *profiler, plan_a, b, "A (keep_enabled = false)"));
    check_plan_b(profile_once(*host, *profiler, plan_b, b, "B (keep_enabled = false)"));
  }
  {
    // Always-on collection: a single-pass plan under user replay, the launch run once (no memory
    // save and restore). The same counts as under kernel replay; a multi-pass plan is refused.
    cc::MetricPlan plan_c = take(host->plan({kDuration, kDramRead, kDramWrite, kSmInst}), "plan C");
    std::printf("plan C: %zu metrics, %u pass(es)\n", plan_c.metrics.size(), plan_c.passes);
    if (plan_c.passes != 1) throw Failure{"plan C should fit one pass"};
    plan_c.replay = cc::PlanReplay::kNone;
    auto profiler = take(cc::make_cupti_range_profiler(ctx), "make_cupti_range_profiler (no replay)");
    auto c1 = profile_once(*host, *profiler, plan_c, b, "C #1 (no replay: enable and configure)");
    auto c2 = profile_once(*host, *profiler, plan_c, b, "C #2 (no replay, same enabled object)");
    for (const auto* r : {&c1, &c2}) {
      const double bytes = static_cast<double>(kN) * sizeof(float);
      expect_range(*r, kDuration, 1e3, 1e8);
      expect_range(*r, kDramRead, 0.5 * 2 * bytes, 2.0 * 2 * bytes);
      expect_range(*r, kDramWrite, 0.5 * bytes, 2.0 * bytes);
    }
    cc::MetricPlan multi = plan_a;  // several passes
    multi.replay = cc::PlanReplay::kNone;
    const cc::Status refused = profiler->begin(multi);
    std::printf("  multi-pass plan without replay: %s\n", refused.message().c_str());
    if (refused.is_ok() || refused.code() != cc::StatusCode::kInvalidArgument) {
      throw Failure{"a multi-pass plan without replay must be refused"};
    }
    check_plan_a(profile_once(*host, *profiler, plan_a, b, "A after no-replay C (kernel replay again)"));
  }
  {
    // Always-on's stages (CUTRIAGE_STAGE_PASSES): a multi-pass plan collected over the kernel's
    // own consecutive launches, one pass each (auto range + user replay, PlanReplay::kLaunches),
    // an unprofiled launch between two passes. The same counts as kernel replay's.
    cc::MetricPlan stage = plan_a;
    stage.replay = cc::PlanReplay::kLaunches;
    std::printf("plan A over launches: %u passes\n", stage.passes);
    if (stage.passes < 2) throw Failure{"plan A should take several passes"};
    auto profiler = take(cc::make_cupti_range_profiler(ctx), "make_cupti_range_profiler (passes over launches)");
    cc::CounterData data;
    for (uint32_t pass = 0; pass < stage.passes; ++pass) {
      const auto start = std::chrono::steady_clock::now();
      check_status(profiler->begin(stage), "begin() (a pass)");
      const double begin_ms = ms_since(start);
      launch_and_verify(b);
      const auto ended = std::chrono::steady_clock::now();
      data = take(profiler->end(), "end() (a pass)");
      std::printf("  pass %u: begin %.1f ms, end %.1f ms, passes pending %u\n", pass, begin_ms, ms_since(ended),
                  data.passes_pending);
      print_steps(*profiler);
      if (pass + 1 < stage.passes && data.passes_pending == 0) throw Failure{"CUPTI called the stage done early"};
      if (pass == 0) launch_and_verify(b);  // unprofiled, between two passes
    }
    if (data.passes_pending != 0) throw Failure{"passes still pending after the plan's passes"};
    auto readings = take(host->evaluate(stage, data, 0), "evaluate() (passes over launches)");
    print_readings(readings);
    check_plan_a(readings);

    // A stage abandoned halfway (another family's stage with the same counters takes the object):
    // the new collection's id differs, so the collector starts it over from a fresh object.
    cc::MetricPlan first = stage;
    first.collection = 1;
    for (uint32_t pass = 0; pass < 2; ++pass) {
      check_status(profiler->begin(first), "begin() (the stage to abandon)");
      launch_and_verify(b);
      (void)take(profiler->end(), "end() (the stage to abandon)");
    }
    cc::MetricPlan second = stage;
    second.collection = 2;
    for (uint32_t pass = 0; pass < second.passes; ++pass) {
      check_status(profiler->begin(second), "begin() (a new collection)");
      if (profiler->pass_in_progress() != pass) {
        throw Failure{"pass " + std::to_string(profiler->pass_in_progress()) + " begun, " + std::to_string(pass) +
                      " expected: the abandoned collection was continued"};
      }
      launch_and_verify(b);
      data = take(profiler->end(), "end() (a new collection)");
    }
    if (data.passes_pending != 0) throw Failure{"passes still pending after the new collection's passes"};
    auto again = take(host->evaluate(second, data, 0), "evaluate() (the new collection)");
    std::printf("  after an abandoned collection:\n");
    print_readings(again);
    check_plan_a(again);
  }
  launch_and_verify(b);  // unprofiled again after the profilers are gone

  if (probe_empty_range) {
    auto profiler = take(cc::make_cupti_range_profiler(ctx), "make_cupti_range_profiler (probe)");
    check_status(profiler->begin(plan_a), "begin() (probe)");
    auto empty = profiler->end();
    std::printf("empty range probe: end() -> %s\n",
                empty.is_ok() ? ("ok, " + std::to_string(empty.value().ranges) + " ranges").c_str()
                              : empty.status().message().c_str());
    check_plan_a(profile_once(*host, *profiler, plan_a, b, "A after the empty range"));
  }
  if (probe_pc_sampling) {
    auto profiler = take(cc::make_cupti_range_profiler(ctx), "make_cupti_range_profiler (pc probe)");
    check_plan_a(profile_once(*host, *profiler, plan_a, b, "A before PC sampling"));
    auto sampler = cc::make_cupti_pc_sampler(ctx);
    if (!sampler.is_ok()) {
      std::printf("pc probe: make_cupti_pc_sampler: %s\n", sampler.status().message().c_str());
    } else {
      const auto began = std::chrono::steady_clock::now();
      cc::Status s = sampler.value()->begin(cc::PcSamplingOptions{});
      std::printf("pc probe: PC sampling begin with the profiler enabled: %s (%.1f ms)\n",
                  s.is_ok() ? "ok" : s.message().c_str(), ms_since(began));
      launch_and_verify(b);
      if (s.is_ok()) {
        auto batch = sampler.value()->end();
        std::printf("pc probe: end: %s\n", batch.is_ok() ? (std::to_string(batch.value().total_samples) + " samples, " +
                                                             std::to_string(batch.value().pcs.size()) + " PCs")
                                                                .c_str()
                                                          : batch.status().message().c_str());
      }
      sampler.value().reset();
    }
    // The profiler was never disabled: a begin() of ~0 ms means its configuration survived.
    check_plan_a(profile_once(*host, *profiler, plan_a, b, "A after PC sampling (never disabled)"));
  }
  if (probe_steps_too) probe_steps(ctx, *host, plan_a, b);  // last: y is no longer tracked
  if (probe_shapes) probe_step_shapes(ctx, plan_a, b);
  std::printf("range_profiler_smoke: OK\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  (void)std::setvbuf(stdout, nullptr, _IOLBF, 0);  // every line reaches the log, even if CUPTI crashes
  bool probe_empty_range = false;
  bool probe_pc_sampling = false;
  bool probe_steps_too = false;
  bool probe_shapes = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--probe-step-shapes") == 0) probe_shapes = true;
    if (std::strcmp(argv[i], "--probe-empty-range") == 0) probe_empty_range = true;
    if (std::strcmp(argv[i], "--probe-pc-sampling") == 0) probe_pc_sampling = true;
    if (std::strcmp(argv[i], "--probe-steps") == 0) probe_steps_too = true;
  }
  try {
    return run(probe_empty_range, probe_pc_sampling, probe_steps_too, probe_shapes);
  } catch (const Failure& f) {
    std::printf("FAIL: %s\n", f.what.c_str());
    return 1;
  }
}
