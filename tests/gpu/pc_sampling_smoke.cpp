// GPU smoke test of the PC sampler (collectors/src/pc_sampling.cpp) and of the cubin helpers PC
// samples are read with: the first time that code meets a GPU, so every step prints what it did
// and what came back. Exit 0 ok, 1 failure, 77 skipped (no usable GPU or driver, or PC sampling
// not permitted for this user), which CTest reports as skipped (SKIP_RETURN_CODE).
//
// The kernels (pc_sampling_smoke_kernel.cu) are compiled at build time into two cubins, with and
// without -lineinfo, which this binary embeds together with the kernel's source. The -lineinfo
// cubin is loaded with cuModuleLoadData, so the same bytes feed cubin_crc and sass_to_source.
//
// Steps (each prints a line; failed checks are counted, and the exit status is 1 if any failed):
//   A. offline, before looking for a GPU (so they also run where the test is skipped):
//      inspect_cubin and function_code on the embedded cubin, cubin_crc, sass_to_source over every
//      instruction of pcs_chase (the marked hot line must be among the lines), and the error paths
//      (no line table, unknown function, not a cubin)
//   B. GPU: context, module, buffers, an unsampled warm-up launch of pcs_chase (results checked)
//   C. session 1 through make_cupti_pc_sampler: begin, launch, end; print the batch (reason table,
//      totals, top 5 PCs with their top reason and source line) and the drain report (retries,
//      records left by Disable); the hottest PC must be in pcs_chase, carry the module's CRC and map
//      to the hot line
//   D. session 2 through Platform::make_pc_sampler on the same context (enable again after a
//      disable; do CUPTI's function-name strings repeat?), with API misuse checks: end() without
//      begin(), begin() twice, max_pcs 0
//   E. a session with no launch in it: end() must come back within the retry bound, empty
//   F. the range profiler on the same context afterwards: end() must have disabled PC sampling
//   G. only with PCS_COST_SWEEP=1 (bench/pc_sampler_cost.sh): what a sampled launch costs, phase by
//      phase (begin, the launch call, end), for several hardware-buffer sizes, 3 rounds each
//   H. only with PCS_BESIDE_RP=1: PC sampling while the range profiler stays enabled (idle) on the
//      context, and the range profiler's next begin() after it: whether a sampled launch needs
//      the range profiler disabled (and its next Start to pay for a new object) at all
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/collectors/cubin.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/collectors/range_profiler.h"
#include "pc_sampling.h"

// The embedded files: CUTRIAGE_PCS_CUBIN (-lineinfo), CUTRIAGE_PCS_PLAIN_CUBIN (no line table) and
// CUTRIAGE_PCS_KERNEL_SOURCE, paths set by tests/CMakeLists.txt, which also rebuilds this file when
// they change (OBJECT_DEPENDS).
asm(".pushsection .rodata\n"
    ".balign 16\n"
    ".globl cutriage_pcs_cubin_begin\n.hidden cutriage_pcs_cubin_begin\n"
    ".globl cutriage_pcs_cubin_end\n.hidden cutriage_pcs_cubin_end\n"
    "cutriage_pcs_cubin_begin:\n"
    ".incbin \"" CUTRIAGE_PCS_CUBIN "\"\n"
    "cutriage_pcs_cubin_end:\n"
    ".balign 16\n"
    ".globl cutriage_pcs_plain_cubin_begin\n.hidden cutriage_pcs_plain_cubin_begin\n"
    ".globl cutriage_pcs_plain_cubin_end\n.hidden cutriage_pcs_plain_cubin_end\n"
    "cutriage_pcs_plain_cubin_begin:\n"
    ".incbin \"" CUTRIAGE_PCS_PLAIN_CUBIN "\"\n"
    "cutriage_pcs_plain_cubin_end:\n"
    ".globl cutriage_pcs_source_begin\n.hidden cutriage_pcs_source_begin\n"
    ".globl cutriage_pcs_source_end\n.hidden cutriage_pcs_source_end\n"
    "cutriage_pcs_source_begin:\n"
    ".incbin \"" CUTRIAGE_PCS_KERNEL_SOURCE "\"\n"
    "cutriage_pcs_source_end:\n"
    ".popsection\n");
extern "C" const uint8_t cutriage_pcs_cubin_begin[];
extern "C" const uint8_t cutriage_pcs_cubin_end[];
extern "C" const uint8_t cutriage_pcs_plain_cubin_begin[];
extern "C" const uint8_t cutriage_pcs_plain_cubin_end[];
extern "C" const char cutriage_pcs_source_begin[];
extern "C" const char cutriage_pcs_source_end[];

namespace cc = cutriage::collectors;

namespace {

constexpr int kSkip = 77;
constexpr const char* kChase = "pcs_chase";
constexpr const char* kInit = "pcs_init_chain";
constexpr const char* kSourceFile = "pc_sampling_smoke_kernel.cu";
constexpr unsigned kChainLength = 64u << 20;  // unsigned entries: 256 MiB, far beyond the 50 MB L2
constexpr unsigned kStride = 1000003;         // odd, so one cycle through all 2^26 entries; 4 MB hops
constexpr int kSteps = 2000;                  // dependent loads per thread
constexpr unsigned kBlock = 256;
constexpr size_t kTopPcs = 5;

int g_failures = 0;

struct Fatal {  // a step that later steps cannot do without
  std::string what;
};
struct Skip {  // PC sampling is not available to this process
  std::string why;
};

void check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

std::string describe(const cc::Status& s) {
  if (s.is_ok()) return "ok";
  return std::string("[") + cc::to_string(s.code()) + "] " + s.message();
}

template <typename T>
T take(cc::Result<T> r, const std::string& what) {
  std::printf("  %s: %s\n", what.c_str(), describe(r.status()).c_str());
  if (!r.is_ok()) throw Fatal{what + ": " + describe(r.status())};
  return std::move(r).value();
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::vector<uint8_t> embedded(const uint8_t* begin, const uint8_t* end) { return {begin, end}; }

// Line number (1-based) of the hot-line marker in the embedded kernel source; 0 when absent.
uint32_t hot_line() {
  const std::string_view source(cutriage_pcs_source_begin,
                                static_cast<size_t>(cutriage_pcs_source_end - cutriage_pcs_source_begin));
  const size_t at = source.find("// PCS_HOT_LINE");
  if (at == std::string_view::npos) return 0;
  return 1 + static_cast<uint32_t>(std::count(source.begin(), source.begin() + static_cast<long>(at), '\n'));
}

bool is_kernel_source(const std::string& file) {
  const std::string_view f(file);
  return f.size() >= std::strlen(kSourceFile) && f.substr(f.size() - std::strlen(kSourceFile)) == kSourceFile;
}

// ---- A. offline --------------------------------------------------------------------------------

void offline_checks(cc::Platform& platform, const std::vector<uint8_t>& cubin, const std::vector<uint8_t>& plain,
                    uint32_t line) {
  std::printf("A. offline: embedded cubin %zu bytes (-lineinfo), %zu bytes (plain); hot line %s:%u\n",
              cubin.size(), plain.size(), kSourceFile, line);
  check(line != 0, "the kernel source has the hot-line marker");
  const cc::CubinInfo info = take(cc::inspect_cubin(cubin.data(), cubin.size()), "inspect_cubin");
  std::printf("  %s, line info %s, kernels:", cc::sm_arch_name(info.sm_arch).c_str(),
              info.has_line_info ? "yes" : "no");
  for (const std::string& k : info.kernels) std::printf(" %s", k.c_str());
  std::printf("\n");
  check(info.has_line_info, "the -lineinfo cubin has a line table");
  const std::vector<uint8_t> code = take(cc::function_code(cubin.data(), cubin.size(), kChase), "function_code(pcs_chase)");
  std::printf("  pcs_chase: %zu bytes of code (%zu instructions)\n", code.size(), code.size() / 16);
  check(!code.empty() && code.size() % 16 == 0, "pcs_chase's code is a whole number of 16-byte instructions");

  const uint64_t crc = take(platform.cubin_crc(cubin), "cubin_crc");
  std::printf("  cubin CRC 0x%016" PRIx64 "\n", crc);
  const uint64_t crc_again = take(platform.cubin_crc(cubin), "cubin_crc (again)");
  check(crc == crc_again && crc != 0, "cubin_crc is non-zero and stable");

  // Every instruction of pcs_chase: which lines do they map to?
  size_t mapped = 0;
  size_t on_hot_line = 0;
  std::string first_error;
  for (uint64_t pc = 0; pc < code.size(); pc += 16) {
    cc::Result<cc::SourceLine> l = platform.sass_to_source(cubin, kChase, pc);
    if (!l.is_ok()) {
      if (first_error.empty()) first_error = "pc 0x" + std::to_string(pc) + ": " + describe(l.status());
      continue;
    }
    ++mapped;
    if (l.value().line == line && is_kernel_source(l.value().file)) ++on_hot_line;
    if (pc == 0) std::printf("  pc 0x0 -> %s:%u\n", l.value().file.c_str(), l.value().line);
  }
  std::printf("  sass_to_source: %zu of %zu instructions mapped, %zu on the hot line%s%s\n", mapped,
              code.size() / 16, on_hot_line, first_error.empty() ? "" : "; first failure: ",
              first_error.c_str());
  check(mapped > 0, "sass_to_source maps pcs_chase's instructions to lines");
  check(on_hot_line > 0, "some instruction of pcs_chase maps to the hot line");

  const cc::Result<cc::SourceLine> no_table = platform.sass_to_source(plain, kChase, 0);
  std::printf("  plain cubin (no -lineinfo): %s\n", describe(no_table.status()).c_str());
  check(no_table.status().code() == cc::StatusCode::kNotSupported, "no line table -> kNotSupported");
  const cc::Result<cc::SourceLine> unknown = platform.sass_to_source(cubin, "no_such_function", 0);
  std::printf("  unknown function: %s\n", describe(unknown.status()).c_str());
  check(unknown.status().code() == cc::StatusCode::kInvalidArgument, "an unknown function -> kInvalidArgument");
  const cc::Result<cc::SourceLine> past_end = platform.sass_to_source(cubin, kChase, code.size());
  std::printf("  pc past the function's end: %s\n", describe(past_end.status()).c_str());
  check(past_end.status().code() == cc::StatusCode::kInvalidArgument, "a PC past the end -> kInvalidArgument");
  check(platform.sass_to_source(cubin, "", 0).status().code() == cc::StatusCode::kInvalidArgument,
        "an empty function name -> kInvalidArgument");
  const std::vector<uint8_t> garbage(256, 0xab);
  const cc::Result<uint64_t> garbage_crc = platform.cubin_crc(garbage);
  std::printf("  not a cubin: cubin_crc %s\n", describe(garbage_crc.status()).c_str());
  check(garbage_crc.status().code() == cc::StatusCode::kInvalidArgument, "cubin_crc of garbage -> kInvalidArgument");
  check(platform.sass_to_source(garbage, kChase, 0).status().code() == cc::StatusCode::kInvalidArgument,
        "sass_to_source of garbage -> kInvalidArgument");
}

// ---- B. the GPU side -----------------------------------------------------------------------------

template <typename F>
F driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, CUDART_VERSION, cudaEnableDefault, &found);
  if (err != cudaSuccess || fn == nullptr || found != cudaDriverEntryPointSuccess) {
    throw Fatal{std::string("driver entry point ") + name + " not found"};
  }
  return reinterpret_cast<F>(fn);
}

// The driver calls this test makes, through the runtime's entry points: the binary does not link
// libcuda, so that it starts (and skips) where there is no driver.
struct Driver {
  decltype(&cuCtxGetCurrent) ctx_get_current = driver_entry<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent");
  decltype(&cuModuleLoadData) module_load_data = driver_entry<decltype(&cuModuleLoadData)>("cuModuleLoadData");
  decltype(&cuModuleGetFunction) module_get_function =
      driver_entry<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  decltype(&cuModuleUnload) module_unload = driver_entry<decltype(&cuModuleUnload)>("cuModuleUnload");
  decltype(&cuLaunchKernel) launch_kernel = driver_entry<decltype(&cuLaunchKernel)>("cuLaunchKernel");
};

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw Fatal{std::string(what) + ": " + cudaGetErrorString(err)};
}

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Fatal{std::string(what) + ": CUresult " + std::to_string(static_cast<int>(r))};
}

struct Gpu {
  Driver driver;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction init = nullptr;
  CUfunction chase = nullptr;
  unsigned* next = nullptr;
  unsigned* out = nullptr;
  unsigned blocks = 0;
  ~Gpu() {
    cudaFree(next);
    cudaFree(out);
    if (module != nullptr) (void)driver.module_unload(module);
  }

  [[nodiscard]] size_t threads() const { return size_t{blocks} * kBlock; }

  void launch_chase() {
    unsigned n = kChainLength;
    int steps = kSteps;
    void* args[] = {&next, &out, &n, &steps};
    check_cu(driver.launch_kernel(chase, blocks, 1, 1, kBlock, 1, 1, 0, nullptr, args, nullptr),
             "cuLaunchKernel(pcs_chase)");
  }

  // Every thread's final index is known in closed form.
  void verify_chase(const char* when) {
    std::vector<unsigned> got(threads());
    check_cuda(cudaMemcpy(got.data(), out, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost), "copy out back");
    size_t wrong = 0;
    for (size_t t = 0; t < got.size(); ++t) {
      const uint64_t start = (t * 7919ULL) % kChainLength;
      const auto expected = static_cast<unsigned>((start + uint64_t{kSteps} * kStride) % kChainLength);
      if (got[t] != expected) ++wrong;
    }
    check(wrong == 0, std::string("pcs_chase results ") + when + " (" + std::to_string(wrong) + " of " +
                          std::to_string(got.size()) + " threads wrong)");
  }
};

void setup_gpu(Gpu& gpu, const std::vector<uint8_t>& cubin) {
  std::printf("B. GPU setup\n");
  check_cuda(cudaSetDevice(0), "cudaSetDevice(0)");
  check_cuda(cudaFree(nullptr), "create the primary context");
  check_cu(gpu.driver.ctx_get_current(&gpu.context), "cuCtxGetCurrent");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("  device 0: %s, sm_%d%d, %d SMs; context %p\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, static_cast<void*>(gpu.context));
  // Loaded before any sampler exists, as in the agent (modules load long before a launch is
  // sampled): CUPTI must still name the function and the cubin in the records.
  check_cu(gpu.driver.module_load_data(&gpu.module, cubin.data()), "cuModuleLoadData(embedded cubin)");
  check_cu(gpu.driver.module_get_function(&gpu.init, gpu.module, kInit), "cuModuleGetFunction(pcs_init_chain)");
  check_cu(gpu.driver.module_get_function(&gpu.chase, gpu.module, kChase), "cuModuleGetFunction(pcs_chase)");
  gpu.blocks = static_cast<unsigned>(std::max(1, prop.multiProcessorCount)) * 4;
  check_cuda(cudaMalloc(&gpu.next, size_t{kChainLength} * sizeof(unsigned)), "cudaMalloc next");
  check_cuda(cudaMalloc(&gpu.out, gpu.threads() * sizeof(unsigned)), "cudaMalloc out");
  unsigned n = kChainLength;
  unsigned stride = kStride;
  void* args[] = {&gpu.next, &n, &stride};
  check_cu(gpu.driver.launch_kernel(gpu.init, 1024, 1, 1, kBlock, 1, 1, 0, nullptr, args, nullptr),
           "cuLaunchKernel(pcs_init_chain)");
  check_cuda(cudaDeviceSynchronize(), "synchronize after init");
  const auto start = std::chrono::steady_clock::now();
  gpu.launch_chase();
  check_cuda(cudaDeviceSynchronize(), "synchronize after the warm-up launch");
  std::printf("  warm-up launch of pcs_chase (%u blocks x %u threads, %d dependent loads each): %.1f ms\n",
              gpu.blocks, kBlock, kSteps, ms_since(start));
  gpu.verify_chase("after the unsampled warm-up");
}

// ---- C, D. sampled launches ------------------------------------------------------------------------

void print_report(const cc::PcSampler& sampler) {
  const cc::PcDrainReport* r = cc::last_drain_report(sampler);
  if (r == nullptr) {
    std::printf("  drain report: none (not a CUPTI sampler?)\n");
    return;
  }
  std::printf("  drain report: synchronized %s, GetData calls %u, empty retries %u (%.0f ms slept), PC records "
              "from drains %zu, left by Disable %zu (its totalSamples %" PRIu64 "), last rangeId %" PRIu64
              ", CUPTI function-name strings retained (process) %zu\n",
              r->synchronized ? "yes" : "NO", r->get_data_calls, r->empty_retries, r->waited_ms, r->pcs_from_drains,
              r->pcs_from_disable, r->samples_from_disable, r->last_range_id, r->function_names_retained);
}

uint64_t pc_total(const cc::PcSampleRecord& pc) {
  uint64_t total = 0;
  for (const cc::PcStallCount& s : pc.stalls) total += s.samples;
  return total;
}

// Prints the batch and checks what a sampled pcs_chase launch must give.
void check_batch(cc::Platform& platform, const cc::PcSampleBatch& batch, const std::vector<uint8_t>& cubin,
                 uint64_t module_crc, uint32_t line, const char* label) {
  // Each warp state comes twice on the H200, as "..._<reason>" (all samples) and
  // "..._<reason>_not_issued" (the subset where the scheduler issued nothing), next to
  // smsp__pcsamp_sample_count and smsp__pcsamp_samples_data_dropped, which are not states (seen:
  // the sum over every name was 199.7% of totalSamples). Count each sample once: the plain states.
  auto plain_state = [&](uint32_t reason) {
    if (reason >= batch.reason_names.size()) return false;
    const std::string& n = batch.reason_names[reason];
    const std::string suffix = "_not_issued";
    const bool not_issued = n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
    return n.find("warps_issue_stalled_") != std::string::npos && !not_issued;
  };
  uint64_t in_records = 0;
  for (const cc::PcSampleRecord& pc : batch.pcs) {
    for (const cc::PcStallCount& st : pc.stalls) {
      if (plain_state(st.reason)) in_records += st.samples;
    }
  }
  std::printf("  %s: period 2^%u cycles, %zu stall reasons, %zu PCs; samples: total %" PRIu64 ", in PC records %" PRIu64
              ", dropped %" PRIu64 ", non-user %" PRIu64 "; hardware buffer full: %s\n",
              label, batch.period_log2, batch.reason_names.size(), batch.pcs.size(), batch.total_samples, in_records,
              batch.dropped_samples, batch.non_user_samples, batch.hardware_buffer_full ? "YES" : "no");
  std::printf("  stall reasons (position: name):");
  for (size_t i = 0; i < batch.reason_names.size(); ++i) std::printf(" %zu:%s", i, batch.reason_names[i].c_str());
  std::printf("\n");
  check(batch.total_samples > 0 && !batch.pcs.empty(), std::string(label) + ": samples came back");
  // totalSamples also counts non-user kernels, dropped samples and unselected reasons (header), so
  // the records hold at most that many; most of it for a kernel this simple.
  check(in_records <= batch.total_samples, "the samples in PC records (plain warp states) do not exceed totalSamples");
  if (batch.total_samples > 0) {
    std::printf("  share of totalSamples in PC records: %.1f%%\n",
                100.0 * static_cast<double>(in_records) / static_cast<double>(batch.total_samples));
  }
  for (size_t i = 0; i < batch.pcs.size() && i < kTopPcs; ++i) {
    const cc::PcSampleRecord& pc = batch.pcs[i];
    const cc::PcStallCount* top = nullptr;
    for (const cc::PcStallCount& s : pc.stalls) {
      if (top == nullptr || s.samples > top->samples) top = &s;
    }
    std::string where = "(no line)";
    cc::Result<cc::SourceLine> l = platform.sass_to_source(cubin, pc.function, pc.pc_offset);
    if (l.is_ok()) {
      where = l.value().file + ":" + std::to_string(l.value().line);
    } else {
      where = describe(l.status());
    }
    std::printf("  #%zu %s+0x%" PRIx64 " crc 0x%016" PRIx64 " corr %u: %" PRIu64 " samples, top %s (%" PRIu64
                "), %zu reasons; %s\n",
                i + 1, pc.function.c_str(), pc.pc_offset, pc.cubin_crc, pc.correlation_id, pc_total(pc),
                top != nullptr && top->reason < batch.reason_names.size() ? batch.reason_names[top->reason].c_str()
                                                                          : "(none)",
                top != nullptr ? top->samples : 0, pc.stalls.size(), where.c_str());
  }
  bool reasons_in_range = true;
  for (const cc::PcSampleRecord& pc : batch.pcs) {
    for (const cc::PcStallCount& s : pc.stalls) reasons_in_range = reasons_in_range && s.reason < batch.reason_names.size();
  }
  check(reasons_in_range, "every stall's reason is a position in reason_names");
  if (batch.pcs.empty()) return;
  const cc::PcSampleRecord& hottest = batch.pcs.front();
  check(hottest.function == kChase, "the hottest PC is in pcs_chase (got '" + hottest.function + "')");
  check(hottest.cubin_crc == module_crc, "the hottest PC's cubin CRC is cubin_crc of the loaded cubin");
  cc::Result<cc::SourceLine> l = platform.sass_to_source(cubin, hottest.function, hottest.pc_offset);
  check(l.is_ok() && l.value().line == line && is_kernel_source(l.value().file),
        "the hottest PC maps to the hot line " + std::string(kSourceFile) + ":" + std::to_string(line));
}

bool permission_problem(const cc::Status& s) {
  return s.code() == cc::StatusCode::kPermissionDenied || s.code() == cc::StatusCode::kAlreadySubscribed;
}

cc::PcSampleBatch sample_once(cc::PcSampler& sampler, Gpu& gpu, const char* label) {
  cc::PcSamplingOptions options;  // the defaults the agent starts from
  auto started = std::chrono::steady_clock::now();
  const cc::Status begun = sampler.begin(options);
  std::printf("  begin(period 2^%u, max_pcs %zu, scratch %zu, hardware %zu bytes): %s (%.1f ms)\n", options.period_log2,
              options.max_pcs, options.scratch_buffer_bytes, options.hardware_buffer_bytes, describe(begun).c_str(),
              ms_since(started));
  // Without the privilege (or with another CUPTI client) PC sampling is unavailable: a skip.
  if (permission_problem(begun)) throw Skip{describe(begun)};
  if (!begun.is_ok()) throw Fatal{std::string(label) + ": begin(): " + describe(begun)};
  gpu.launch_chase();
  started = std::chrono::steady_clock::now();
  cc::Result<cc::PcSampleBatch> batch = sampler.end();
  std::printf("  end(): %s (%.1f ms, launch time included)\n", describe(batch.status()).c_str(), ms_since(started));
  print_report(sampler);
  gpu.verify_chase(label);
  if (!batch.is_ok()) throw Fatal{std::string(label) + ": end(): " + describe(batch.status())};
  return std::move(batch).value();
}

// ---- G. the cost of a sampled launch, by hardware-buffer size (opt-in) ---------------------------

void cost_sweep(Gpu& gpu) {
  std::printf("G. cost of a sampled launch by hardware buffer (begin / launch call / end, ms)\n");
  // The unsampled launch and its completion, as the baseline of the launch and end columns.
  for (int r = 0; r < 3; ++r) {
    auto t = std::chrono::steady_clock::now();
    gpu.launch_chase();
    const double launch_ms = ms_since(t);
    t = std::chrono::steady_clock::now();
    check_cuda(cudaDeviceSynchronize(), "synchronize");
    std::printf("  unsampled round %d: launch %.2f, synchronize %.2f\n", r, launch_ms, ms_since(t));
  }
  cc::Result<std::unique_ptr<cc::PcSampler>> made = cc::make_cupti_pc_sampler(gpu.context);
  if (!made.is_ok()) throw Fatal{"make_cupti_pc_sampler: " + describe(made.status())};
  std::unique_ptr<cc::PcSampler> sampler = std::move(made).value();
  for (size_t mib : {size_t{256}, size_t{64}, size_t{16}, size_t{4}}) {
    for (int r = 0; r < 3; ++r) {
      cc::PcSamplingOptions options;
      options.hardware_buffer_bytes = mib << 20;
      auto t = std::chrono::steady_clock::now();
      const cc::Status begun = sampler->begin(options);
      const double begin_ms = ms_since(t);
      if (!begun.is_ok()) throw Fatal{"cost sweep begin(): " + describe(begun)};
      t = std::chrono::steady_clock::now();
      gpu.launch_chase();
      const double launch_ms = ms_since(t);
      t = std::chrono::steady_clock::now();
      cc::Result<cc::PcSampleBatch> batch = sampler->end();
      const double end_ms = ms_since(t);
      if (!batch.is_ok()) throw Fatal{"cost sweep end(): " + describe(batch.status())};
      std::printf("  hardware %3zu MiB round %d: begin %.2f, launch %.2f, end %.2f; %" PRIu64 " samples, %zu PCs%s\n",
                  mib, r, begin_ms, launch_ms, end_ms, batch.value().total_samples, batch.value().pcs.size(),
                  batch.value().hardware_buffer_full ? ", hardware buffer FULL" : "");
    }
  }
  gpu.verify_chase("after the cost sweep");
}

// ---- H. PC sampling beside an enabled, idle range profiler (opt-in) --------------------------------

void beside_enabled_range_profiler(Gpu& gpu) {
  std::printf("H. PC sampling while the range profiler stays enabled on the context\n");
  const std::string chip = take(cc::cupti_chip_name(0), "cupti_chip_name(0)");
  auto host = take(cc::make_cupti_profiler_host(chip), "make_cupti_profiler_host(" + chip + ")");
  const cc::MetricPlan plan = take(host->plan({"gpu__time_duration.sum", "dram__bytes_read.sum"}), "plan");
  auto profiler = take(cc::make_cupti_range_profiler(gpu.context), "make_cupti_range_profiler");
  auto collect = [&](const char* label) {
    auto t = std::chrono::steady_clock::now();
    const cc::Status begun = profiler->begin(plan);
    const double begin_ms = ms_since(t);
    if (!begun.is_ok()) {
      std::printf("  range profiler %s: begin() %s (%.1f ms)\n", label, describe(begun).c_str(), begin_ms);
      return false;
    }
    gpu.launch_chase();
    t = std::chrono::steady_clock::now();
    cc::Result<cc::CounterData> data = profiler->end();
    const double end_ms = ms_since(t);
    std::printf("  range profiler %s: begin %.1f ms, end %.1f ms: %s\n", label, begin_ms, end_ms,
                describe(data.status()).c_str());
    if (!data.is_ok()) return false;
    const auto readings = host->evaluate(plan, data.value(), 0);
    if (readings.is_ok()) {
      for (const auto& r : readings.value()) std::printf("    %-40s %.6g\n", r.name.c_str(), r.value);
    }
    return true;
  };
  collect("first (enable and configure)");
  collect("second (kept enabled)");
  cc::Result<std::unique_ptr<cc::PcSampler>> made = cc::make_cupti_pc_sampler(gpu.context);
  if (!made.is_ok()) {
    std::printf("  make_cupti_pc_sampler beside it: %s\n", describe(made.status()).c_str());
  } else {
    std::unique_ptr<cc::PcSampler> sampler = std::move(made).value();
    cc::PcSamplingOptions options;
    options.hardware_buffer_bytes = size_t{16} << 20;
    auto t = std::chrono::steady_clock::now();
    const cc::Status begun = sampler->begin(options);
    std::printf("  PC sampling begin() beside the enabled range profiler: %s (%.1f ms)\n", describe(begun).c_str(),
                ms_since(t));
    if (begun.is_ok()) {
      gpu.launch_chase();
      t = std::chrono::steady_clock::now();
      cc::Result<cc::PcSampleBatch> batch = sampler->end();
      std::printf("  PC sampling end(): %s (%.1f ms)", describe(batch.status()).c_str(), ms_since(t));
      if (batch.is_ok()) {
        std::printf("; %" PRIu64 " samples, %zu PCs", batch.value().total_samples, batch.value().pcs.size());
      }
      std::printf("\n");
    }
  }
  collect("after PC sampling, never disabled");
  check_cuda(cudaDeviceSynchronize(), "synchronize");
  gpu.verify_chase("after PC sampling beside the range profiler");
}

// ---- F. the range profiler after PC sampling -------------------------------------------------------

void range_profiler_after(Gpu& gpu) {
  std::printf("F. range profiler on the same context after PC sampling\n");
  const std::string chip = take(cc::cupti_chip_name(0), "cupti_chip_name(0)");
  auto host = take(cc::make_cupti_profiler_host(chip), "make_cupti_profiler_host(" + chip + ")");
  const cc::MetricPlan plan = take(host->plan({"gpu__time_duration.sum", "dram__bytes_read.sum"}), "plan");
  auto profiler = take(cc::make_cupti_range_profiler(gpu.context), "make_cupti_range_profiler");
  const cc::Status begun = profiler->begin(plan);
  std::printf("  begin(): %s\n", describe(begun).c_str());
  check(begun.is_ok(), "the range profiler starts after PC sampling's end() (PC sampling disabled again)");
  if (!begun.is_ok()) return;
  gpu.launch_chase();
  const cc::CounterData data = take(profiler->end(), "end()");
  const auto readings = take(host->evaluate(plan, data, 0), "evaluate");
  for (const auto& r : readings) std::printf("    %-40s %.6g\n", r.name.c_str(), r.value);
  check(data.ranges == 1, "one range recorded");
  check_cuda(cudaDeviceSynchronize(), "synchronize after the profiled launch");
  gpu.verify_chase("after the range-profiled launch (kernel replay)");
}

int run() {
  auto platform = cc::make_cupti_platform();
  const std::vector<uint8_t> cubin = embedded(cutriage_pcs_cubin_begin, cutriage_pcs_cubin_end);
  const std::vector<uint8_t> plain = embedded(cutriage_pcs_plain_cubin_begin, cutriage_pcs_plain_cubin_end);
  const uint32_t line = hot_line();
  offline_checks(*platform, cubin, plain, line);

  int devices = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&devices);
  if (count_err != cudaSuccess || devices == 0) {
    std::printf("SKIP: no usable CUDA GPU or driver (%s); offline checks: %d failed\n",
                count_err != cudaSuccess ? cudaGetErrorString(count_err) : "0 devices", g_failures);
    return g_failures == 0 ? kSkip : 1;
  }

  Gpu gpu;
  setup_gpu(gpu, cubin);
  const uint64_t module_crc = take(platform->cubin_crc(cubin), "cubin_crc of the loaded cubin");

  std::printf("C. session 1: make_cupti_pc_sampler\n");
  cc::Result<std::unique_ptr<cc::PcSampler>> made = cc::make_cupti_pc_sampler(gpu.context);
  std::printf("  make_cupti_pc_sampler: %s\n", describe(made.status()).c_str());
  if (!made.is_ok()) throw Fatal{"make_cupti_pc_sampler: " + describe(made.status())};
  std::unique_ptr<cc::PcSampler> sampler = std::move(made).value();
  const cc::PcSampleBatch first = sample_once(*sampler, gpu, "session 1");
  check_batch(*platform, first, cubin, module_crc, line, "session 1");
  const size_t names_after_first = cc::retained_function_name_count();

  std::printf("D. session 2: Platform::make_pc_sampler on the same context, and misuse\n");
  cc::ContextEvent context;
  context.context = gpu.context;
  std::unique_ptr<cc::PcSampler> second = take(platform->make_pc_sampler(context), "Platform::make_pc_sampler");
  const cc::Result<cc::PcSampleBatch> early_end = second->end();
  std::printf("  end() without begin(): %s\n", describe(early_end.status()).c_str());
  check(!early_end.is_ok(), "end() without begin() is an error");
  cc::PcSamplingOptions zero;
  zero.max_pcs = 0;
  const cc::Status zero_begin = second->begin(zero);
  std::printf("  begin(max_pcs 0): %s\n", describe(zero_begin).c_str());
  check(zero_begin.code() == cc::StatusCode::kInvalidArgument, "begin(max_pcs 0) is kInvalidArgument");
  check(second->begin(cc::PcSamplingOptions{}).is_ok(), "begin() after the refused one");
  const cc::Status twice = second->begin(cc::PcSamplingOptions{});
  std::printf("  begin() while a session is open: %s\n", describe(twice).c_str());
  check(!twice.is_ok(), "begin() twice is an error");
  gpu.launch_chase();
  cc::Result<cc::PcSampleBatch> after_twice = second->end();
  std::printf("  end() of that session: %s\n", describe(after_twice.status()).c_str());
  check(after_twice.is_ok(), "the open session still ends normally");
  print_report(*second);
  if (after_twice.is_ok()) check_batch(*platform, after_twice.value(), cubin, module_crc, line, "session 2");
  gpu.verify_chase("after session 2");
  const size_t names_after_second = cc::retained_function_name_count();
  std::printf("  CUPTI function-name strings retained: %zu after session 1, %zu after session 2 (%s)\n",
              names_after_first, names_after_second,
              names_after_second == names_after_first
                  ? "the same strings again: CUPTI reuses them, freeing them at end() would have been a double free"
                  : "new strings each session");

  std::printf("E. a session with no launch in it\n");
  const auto started = std::chrono::steady_clock::now();
  check(sampler->begin(cc::PcSamplingOptions{}).is_ok(), "begin()");
  cc::Result<cc::PcSampleBatch> empty = sampler->end();
  const double empty_ms = ms_since(started);
  std::printf("  end(): %s, %zu PCs, %" PRIu64 " samples, %.1f ms\n", describe(empty.status()).c_str(),
              empty.is_ok() ? empty.value().pcs.size() : 0, empty.is_ok() ? empty.value().total_samples : 0, empty_ms);
  print_report(*sampler);
  check(empty.is_ok() && empty.value().pcs.empty(), "an empty session gives an empty batch");
  check(empty_ms < 1000, "an empty session's end() returns within the retry bound (about 200 ms)");
  sampler.reset();
  second.reset();

  range_profiler_after(gpu);
  if (const char* sweep = std::getenv("PCS_COST_SWEEP"); sweep != nullptr && std::string_view(sweep) == "1") {
    cost_sweep(gpu);
  }
  if (const char* beside = std::getenv("PCS_BESIDE_RP"); beside != nullptr && std::string_view(beside) == "1") {
    beside_enabled_range_profiler(gpu);
  }

  std::printf("pc_sampling_smoke: %s (%d failed checks)\n", g_failures == 0 ? "OK" : "FAILED", g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main() {
  (void)std::setvbuf(stdout, nullptr, _IOLBF, 0);  // every line reaches the log, even if CUPTI crashes
  try {
    return run();
  } catch (const Fatal& f) {
    std::printf("FAIL: %s (%d failed checks before)\n", f.what.c_str(), g_failures);
    return 1;
  } catch (const Skip& s) {
    std::printf("SKIP: PC sampling not available to this process: %s (%d failed checks before)\n", s.why.c_str(),
                g_failures);
    return g_failures == 0 ? kSkip : 1;
  }
}
