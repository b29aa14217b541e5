// The CUPTI-backed Platform: callback subscription (launches, contexts, modules, NVTX), device
// and function facts from the driver, the Activity API trace (activity_trace.cpp), NVTX
// translation (nvtx_trace.cpp), the range profiler and profiler host from range_profiler.cpp
// and profiler_host.cpp, and PC sampling with cubin source correlation from pc_sampling.cpp.
//
// Driver entry points are looked up with dlsym in the already-loaded libcuda.so.1 rather than
// linked: binaries holding this code (the collector tests) must start on machines without a
// driver, and in an injected process the driver is loaded before InitializeInjection runs.
//
// Everything reachable from the CUPTI callback is noexcept in effect: the callback catches all
// and the observer contract forbids throwing.
//
// The launch callback runs on every kernel launch of the application, so it makes no driver
// call: it decodes the parameters CUPTI already holds, reads the context ids from a per-thread
// cache, and leaves the stream queries to fill_launch_details (the agent calls it for the few
// launches it considers profiling). The exit callback builds its event only when the enter's
// observer asked for it.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "activity_trace.h"
#include "cuda_driver_probe.h"
#include "cupti_check.h"
#include "cutriage/collectors/platform.h"
#include "nvtx_trace.h"
#include "pc_sampling.h"
#include "pm_sampling.h"

namespace cutriage::collectors {

namespace {

// The few driver functions the platform calls, from the loaded driver.
struct Driver {
  decltype(&cuDeviceGetCount) device_get_count = nullptr;
  decltype(&cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&cuDeviceGetName) device_get_name = nullptr;
  decltype(&cuDeviceTotalMem_v2) device_total_mem = nullptr;
  decltype(&cuDeviceGetUuid_v2) device_get_uuid = nullptr;
  decltype(&cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&cuFuncGetName) func_get_name = nullptr;
  decltype(&cuStreamIsCapturing) stream_is_capturing = nullptr;
  decltype(&cuKernelGetFunction) kernel_get_function = nullptr;  // optional, CUDA 12.0+
  std::string error;

  [[nodiscard]] bool ok() const { return error.empty(); }
};

template <typename F>
void bind(void* lib, const char* name, F& fn, std::string& error) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr && error.empty()) error = std::string("libcuda.so.1 lacks ") + name;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    void* lib = cuda_driver_library().handle;
    if (lib == nullptr) {
      r.error = cuda_driver_library().error;
      return r;
    }
    bind(lib, "cuDeviceGetCount", r.device_get_count, r.error);
    bind(lib, "cuDeviceGetAttribute", r.device_get_attribute, r.error);
    bind(lib, "cuDeviceGetName", r.device_get_name, r.error);
    bind(lib, "cuDeviceTotalMem_v2", r.device_total_mem, r.error);
    bind(lib, "cuDeviceGetUuid_v2", r.device_get_uuid, r.error);
    bind(lib, "cuDriverGetVersion", r.driver_get_version, r.error);
    bind(lib, "cuFuncGetAttribute", r.func_get_attribute, r.error);
    bind(lib, "cuStreamIsCapturing", r.stream_is_capturing, r.error);
    // Optional (CUDA 12.3+ drivers): only a fallback for launches without a symbol name.
    r.func_get_name = reinterpret_cast<decltype(&cuFuncGetName)>(dlsym(lib, "cuFuncGetName"));
    r.kernel_get_function =
        reinterpret_cast<decltype(&cuKernelGetFunction)>(dlsym(lib, "cuKernelGetFunction"));
    return r;
  }();
  return d;
}

Status driver_status(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return Status::ok();
  return Status(StatusCode::kInternal, std::string(call) + ": CUresult " + std::to_string(static_cast<int>(r)));
}

base::Dim3 dim(unsigned x, unsigned y, unsigned z) { return base::Dim3{x, y, z}; }

// Per-thread state of the launch callback, in one thread_local (one TLS lookup per callback).
struct LaunchThreadState {
  // The last context a launch on this thread used, with its CUPTI ids: repeated launches on one
  // context cost a compare instead of two CUPTI calls. Valid only while context_generation
  // equals g_context_generation (a new context may reuse a destroyed one's address).
  CUcontext context = nullptr;
  uint64_t context_generation = 0;
  uint32_t context_id = 0;
  uint32_t device = 0;
  // Whether on_launch_enter asked for the exit of the launch with this correlation id. The exit
  // callback comes on the same thread with nothing launched in between, so one slot suffices;
  // the id guards against an exit whose enter never reached the observer.
  bool exit_wanted = false;
  uint32_t exit_correlation = 0;
  // The kernel launch whose callbacks this thread is between (0 = none): a graph node created
  // meanwhile was captured from it (GraphEvent::capture_correlation_id).
  uint32_t in_launch = 0;
  // The correlation id of this thread's latest launch entry (LaunchEvent::correlation_repeated).
  uint32_t last_enter_correlation = 0;
};
thread_local LaunchThreadState t_launch;

// Bumped on every context creation and destruction; invalidates every thread's cached ids.
std::atomic<uint64_t> g_context_generation{1};

// CUPTI's ids of a context; false when CUPTI does not know it.
bool cupti_context_ids(CUcontext ctx, uint32_t* context_id, uint32_t* device) {
  *context_id = 0;
  *device = 0;
  if (!CUTRIAGE_CUPTI_STATUS(cuptiGetContextId(ctx, context_id)).is_ok()) return false;
  return CUTRIAGE_CUPTI_STATUS(cuptiGetDeviceId(ctx, device)).is_ok();
}

// cuLaunchKernel, cuLaunchCooperativeKernel and their _ptsz forms: four parameter structs with
// the same grid, block, shared memory and stream fields.
template <typename Params>
void decode_grid_launch(const void* raw, LaunchEvent& ev, base::LaunchConfig& lc) {
  const auto* p = static_cast<const Params*>(raw);
  ev.function = p->f;
  ev.stream = p->hStream;
  lc.grid = dim(p->gridDimX, p->gridDimY, p->gridDimZ);
  lc.block = dim(p->blockDimX, p->blockDimY, p->blockDimZ);
  lc.dynamic_shared_bytes = p->sharedMemBytes;
}

// cuLaunchKernelEx(_ptsz): the shape is in the CUlaunchConfig, cooperation and clusters in its
// attributes. False when the call passed no config.
template <typename Params>
bool decode_launch_ex(const void* raw, LaunchEvent& ev, base::LaunchConfig& lc) {
  const auto* p = static_cast<const Params*>(raw);
  ev.function = p->f;
  if (p->config == nullptr) return false;
  const CUlaunchConfig& c = *p->config;
  ev.stream = c.hStream;
  lc.grid = dim(c.gridDimX, c.gridDimY, c.gridDimZ);
  lc.block = dim(c.blockDimX, c.blockDimY, c.blockDimZ);
  lc.dynamic_shared_bytes = c.sharedMemBytes;
  for (unsigned i = 0; c.attrs != nullptr && i < c.numAttrs; ++i) {
    const CUlaunchAttribute& a = c.attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.cooperative != 0) ev.cooperative = true;
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      lc.cluster = dim(a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z);
    }
  }
  return true;
}

// Fills api, per_thread_stream, cooperative, function, stream and launch from the call's
// parameters (no driver call). False for callback ids that are not launches.
bool decode_launch(CUpti_CallbackId cbid, const void* params, LaunchEvent& ev) {
  base::LaunchConfig lc;
  bool have_config = true;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      ev.api = LaunchApi::kLaunchKernel;
      decode_grid_launch<cuLaunchKernel_params>(params, ev, lc);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      ev.api = LaunchApi::kLaunchKernel;
      ev.per_thread_stream = true;
      decode_grid_launch<cuLaunchKernel_ptsz_params>(params, ev, lc);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      ev.api = LaunchApi::kLaunchCooperative;
      ev.cooperative = true;
      decode_grid_launch<cuLaunchCooperativeKernel_params>(params, ev, lc);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      ev.api = LaunchApi::kLaunchCooperative;
      ev.cooperative = true;
      ev.per_thread_stream = true;
      decode_grid_launch<cuLaunchCooperativeKernel_ptsz_params>(params, ev, lc);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      ev.api = LaunchApi::kLaunchKernelEx;
      have_config = decode_launch_ex<cuLaunchKernelEx_params>(params, ev, lc);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      ev.api = LaunchApi::kLaunchKernelEx;
      ev.per_thread_stream = true;
      have_config = decode_launch_ex<cuLaunchKernelEx_ptsz_params>(params, ev, lc);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
      // Deprecated entry points: the block shape was set by cuFuncSetBlockShape, which the
      // callback does not carry. All three structs start with the function.
      ev.api = LaunchApi::kLaunchLegacy;
      ev.function = static_cast<const cuLaunch_params*>(params)->f;
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync) {
        ev.stream = static_cast<const cuLaunchGridAsync_params*>(params)->hStream;
      }
      have_config = false;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      ev.api = LaunchApi::kGraphLaunch;
      ev.stream = static_cast<const cuGraphLaunch_params*>(params)->hStream;
      ev.graph_exec = static_cast<const cuGraphLaunch_params*>(params)->hGraph;
      have_config = false;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      ev.api = LaunchApi::kGraphLaunch;
      ev.per_thread_stream = true;
      ev.stream = static_cast<const cuGraphLaunch_ptsz_params*>(params)->hStream;
      ev.graph_exec = static_cast<const cuGraphLaunch_ptsz_params*>(params)->hGraphExec;
      have_config = false;
      break;
    default:
      return false;
  }
  if (have_config) ev.launch = lc;
  return true;
}

class CuptiPlatform final : public Platform {
 public:
  ~CuptiPlatform() override = default;

  Status subscribe(LaunchObserver* observer) override {
    if (!driver().ok()) return Status(StatusCode::kUnavailable, "no CUDA driver: " + driver().error);
    observer_.store(observer);
    const CUptiResult subscribed =
        cuptiSubscribe(&subscriber_, reinterpret_cast<CUpti_CallbackFunc>(&CuptiPlatform::callback), this);
    if (subscribed != CUPTI_SUCCESS) {
      // CUDA's stub libcuda.so.1 found first on the library path (or a driver without a device)
      // makes cuptiSubscribe fail with CUPTI_ERROR_UNKNOWN: say what is wrong instead.
      if (subscribed != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        CUTRIAGE_RETURN_IF_ERROR(driver_unusable_reason());
      }
      return cupti_status(subscribed, "cuptiSubscribe");
    }
    subscribed_ = true;
    for (CUpti_CallbackId cbid : kLaunches) {
      CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
    }
    // The application's waits tell the agent when its launches have finished (QuietTracker):
    // best effort, their absence only keeps the trace's flushes unforced.
    for (CUpti_CallbackId cbid : kWaits) {
      (void)CUTRIAGE_CUPTI_STATUS(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
    }
    const CUpti_CallbackId resources[] = {
        CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_MODULE_LOADED,
    };
    for (CUpti_CallbackId cbid : resources) {
      CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid));
    }
    // Graph structure is attribution (which capture a graph kernel comes from): best effort, like
    // NVTX below.
    const CUpti_CallbackId graph_resources[] = {
        CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
        CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
        CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
    };
    for (CUpti_CallbackId cbid : graph_resources) {
      (void)CUTRIAGE_CUPTI_STATUS(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid));
    }
    // NVTX is annotation: best effort, its absence must not cost the launch callbacks. The
    // callbacks only fire when the application's NVTX loaded CUPTI as its tool, which
    // point_nvtx_at_cupti arranges for NVTX calls made from now on (nvtx_trace.cpp says when
    // that is too late). Only after cuptiSubscribe succeeded: with another CUPTI client in the
    // process, NVTX stays that client's business.
    (void)point_nvtx_at_cupti();
    for (uint32_t cbid : NvtxTranslator::callback_ids()) {
      (void)CUTRIAGE_CUPTI_STATUS(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid));
    }
    return Status::ok();
  }

  Status set_launch_callbacks(bool on) override {
    if (!subscribed_) return Status::ok();
    const uint32_t enable = on ? 1 : 0;
    for (CUpti_CallbackId cbid : kLaunches) {
      CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiEnableCallback(enable, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
    }
    // The waits as at subscribe(): best effort.
    for (CUpti_CallbackId cbid : kWaits) {
      (void)CUTRIAGE_CUPTI_STATUS(cuptiEnableCallback(enable, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
    }
    return Status::ok();
  }

  Status synchronize_context(const LaunchEvent& event) override {
    if (event.context == nullptr) return Status(StatusCode::kInvalidArgument, "the launch names no context");
    return synchronize_cu_context(event.context);
  }

  void unsubscribe() override {
    observer_.store(nullptr);
    if (subscribed_) {
      (void)cuptiUnsubscribe(subscriber_);
      subscribed_ = false;
    }
  }

  Result<uint32_t> device_count() override {
    const Driver& d = driver();
    if (!d.ok()) return Status(StatusCode::kUnavailable, "no CUDA driver: " + d.error);
    int n = 0;
    CUTRIAGE_RETURN_IF_ERROR(driver_status(d.device_get_count(&n), "cuDeviceGetCount"));
    return static_cast<uint32_t>(n > 0 ? n : 0);
  }

  Result<DeviceInfo> device_info(uint32_t device) override {
    const Driver& d = driver();
    if (!d.ok()) return Status(StatusCode::kUnavailable, "no CUDA driver: " + d.error);
    auto dev = static_cast<CUdevice>(device);
    DeviceInfo info;
    info.device = device;
    char name[256] = {};
    CUTRIAGE_RETURN_IF_ERROR(driver_status(d.device_get_name(name, sizeof(name) - 1, dev), "cuDeviceGetName"));
    info.name = name;
    CUuuid uuid{};
    if (d.device_get_uuid(&uuid, dev) == CUDA_SUCCESS) info.uuid = format_uuid(uuid);

    Result<std::string> chip = cupti_chip_name(static_cast<int>(device));
    if (!chip.is_ok()) return chip.status();
    base::DeviceLimits limits = base::known_device_limits(chip.value()).value_or(base::DeviceLimits{});
    limits.chip = chip.value();
    auto attr = [&](CUdevice_attribute a) -> int {
      int v = 0;
      return d.device_get_attribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
    };
    auto u = [](int v) { return v > 0 ? static_cast<uint32_t>(v) : 0u; };
    limits.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    limits.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    limits.sm_count = u(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    limits.warp_size = u(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
    limits.max_threads_per_sm = u(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
    if (limits.warp_size > 0) limits.max_warps_per_sm = limits.max_threads_per_sm / limits.warp_size;
    limits.max_blocks_per_sm = u(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR));
    limits.max_threads_per_block = u(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
    limits.registers_per_sm = u(attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR));
    limits.shared_bytes_per_sm = u(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
    limits.shared_bytes_per_block_optin = u(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    limits.reserved_shared_bytes_per_block = u(attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK));
    const double sm_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    const double mem_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    const double bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    if (sm_khz > 0) limits.sm_clock_hz = sm_khz * 1e3;
    if (mem_khz > 0) limits.memory_clock_hz = mem_khz * 1e3;
    // HBM and GDDR move data on both clock edges.
    if (mem_khz > 0 && bus_bits > 0) limits.dram_peak_bytes_per_second = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;
    size_t bytes = 0;
    if (d.device_total_mem(&bytes, dev) == CUDA_SUCCESS) limits.memory_bytes = bytes;
    info.limits = limits;
    return info;
  }

  VersionInfo versions() override {
    VersionInfo v;
    int drv = 0;
    if (driver().ok() && driver().driver_get_version(&drv) == CUDA_SUCCESS) {
      v.driver = std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
    }
    uint32_t api = 0;
    if (cuptiGetVersion(&api) == CUPTI_SUCCESS) v.cupti = "API " + std::to_string(api);
    return v;
  }

  Status complete_launch_config(const LaunchEvent& event, base::LaunchConfig* config) override {
    const Driver& d = driver();
    if (!d.ok() || event.function == nullptr) return Status(StatusCode::kUnavailable, "no function handle");
    auto f = static_cast<CUfunction>(event.function);
    // Since CUDA 12 the runtime launches through context-independent CUkernel handles cast to
    // CUfunction (cuLaunchKernel accepts both); cuFuncGetAttribute rejects those, so resolve the
    // kernel to its function in the current context first.
    int probe = 0;
    if (d.func_get_attribute(&probe, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS &&
        d.kernel_get_function != nullptr) {
      CUfunction resolved = nullptr;
      if (d.kernel_get_function(&resolved, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS &&
          resolved != nullptr) {
        f = resolved;
      }
    }
    auto get = [&](CUfunction_attribute a, const char* what, uint32_t* out) -> Status {
      int v = 0;
      CUresult r = d.func_get_attribute(&v, a, f);
      if (r != CUDA_SUCCESS) return driver_status(r, what);
      *out = v > 0 ? static_cast<uint32_t>(v) : 0;
      return Status::ok();
    };
    CUTRIAGE_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_NUM_REGS, "cuFuncGetAttribute(NUM_REGS)",
                                 &config->registers_per_thread));
    CUTRIAGE_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "cuFuncGetAttribute(SHARED_SIZE_BYTES)",
                                 &config->static_shared_bytes));
    CUTRIAGE_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "cuFuncGetAttribute(LOCAL_SIZE_BYTES)",
                                 &config->local_bytes_per_thread));
    return Status::ok();
  }


  void fill_launch_details(LaunchEvent& event) override {
    event.details_filled = true;
    // Pessimistic until the driver answers: never risk replaying a captured launch.
    event.stream_capturing = true;
    auto stream = static_cast<CUstream>(event.stream);
    const Driver& d = driver();
    if (d.ok()) {
      // The null stream of a _ptsz call is this thread's per-thread default stream.
      CUstream query = stream;
      if (query == nullptr && event.per_thread_stream) query = CU_STREAM_PER_THREAD;
      CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
      const CUresult cr = d.stream_is_capturing(query, &capture);
      // A legacy-stream query during a global-mode capture elsewhere reports an error: treat any
      // answer but "not capturing" as capturing.
      event.stream_capturing = cr != CUDA_SUCCESS || capture != CU_STREAM_CAPTURE_STATUS_NONE;
    }
    uint32_t sid = 0;
    if (CUTRIAGE_CUPTI_STATUS(cuptiGetStreamIdEx(static_cast<CUcontext>(event.context), stream,
                                                 event.per_thread_stream ? 1 : 0, &sid))
            .is_ok()) {
      event.stream_id = sid;
    }
  }

  Status start_trace(ActivityObserver* observer, const TraceOptions& options) override {
    return ActivityTrace::instance().start(observer, options);
  }

  void flush_trace(bool forced) override { ActivityTrace::instance().flush(forced); }
  Status pause_trace(bool paused) override { return ActivityTrace::instance().set_paused(paused); }

  void stop_trace() override { ActivityTrace::instance().stop(); }

  uint64_t timestamp_ns() override {
    uint64_t now = 0;
    if (!CUTRIAGE_CUPTI_STATUS(cuptiGetTimestamp(&now)).is_ok()) return 0;
    return now;
  }

  Result<std::unique_ptr<ProfilerHost>> make_profiler_host(const std::string& chip) override {
    return make_cupti_profiler_host(chip);
  }

  // The process's first Start on a newly enabled object (bench/switch_cost.sh "fresh").
  [[nodiscard]] bool range_profiler_has_startup() const override { return true; }
  Result<std::unique_ptr<RangeProfiler>> make_range_profiler(const ContextEvent& context, uint32_t max_ranges) override {
    RangeProfilerOptions options;
    options.max_ranges = max_ranges;
    return make_cupti_range_profiler(context.context, options);
  }

  // PC sampling and source correlation: pc_sampling.cpp.
  Result<std::unique_ptr<PcSampler>> make_pc_sampler(const ContextEvent& context) override {
    return make_cupti_pc_sampler(context.context);
  }
  // PM sampling on the context's device: pm_sampling.cpp.
  Result<std::unique_ptr<PmSampler>> make_pm_sampler(const ContextEvent& context, const std::string& chip) override {
    return make_cupti_pm_sampler(context.context, context.device, chip);
  }
  Result<uint64_t> cubin_crc(const std::vector<uint8_t>& cubin) override { return cupti_cubin_crc(cubin); }
  Result<SourceLine> sass_to_source(const std::vector<uint8_t>& cubin, const std::string& function,
                                    uint64_t pc_offset) override {
    return cupti_sass_to_source(cubin, function, pc_offset);
  }

 private:
  static std::string format_uuid(const CUuuid& u) {
    static const char* hex = "0123456789abcdef";
    std::string s = "GPU-";
    for (int i = 0; i < 16; ++i) {
      auto b = static_cast<unsigned char>(u.bytes[i]);
      s += hex[b >> 4];
      s += hex[b & 15];
      if (i == 3 || i == 5 || i == 7 || i == 9) s += '-';
    }
    return s;
  }

  static constexpr CUpti_CallbackId kLaunches[] = {
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
  };
  static constexpr CUpti_CallbackId kWaits[] = {
      CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
      CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
      CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
      CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
  };
  static bool is_wait(CUpti_CallbackId cbid) {
    for (CUpti_CallbackId w : kWaits) {
      if (w == cbid) return true;
    }
    return false;
  }

  static void CUPTIAPI callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void* data) {
    try {
      auto* self = static_cast<CuptiPlatform*>(userdata);
      LaunchObserver* observer = self->observer_.load(std::memory_order_acquire);
      if (observer == nullptr) return;
      if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        if (is_wait(cbid)) {
          const auto* cb = static_cast<const CUpti_CallbackData*>(data);
          if (cb != nullptr) {
            observer->on_synchronize(cb->callbackSite == CUPTI_API_ENTER,
                                     cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize ||
                                         cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2);
          }
          return;
        }
        self->on_launch(*observer, cbid, static_cast<const CUpti_CallbackData*>(data));
      } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        self->on_resource(*observer, cbid, static_cast<const CUpti_ResourceData*>(data));
      } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
        NvtxEvent event;
        if (self->nvtx_.translate(cbid, data, &event)) observer->on_nvtx(event);
      }
    } catch (...) {
      // Nothing may reach the driver. The observer logs its own errors.
    }
  }

  static ContextEvent context_event(CUcontext ctx) {
    ContextEvent e;
    e.context = ctx;
    uint32_t id = 0;
    uint32_t dev = 0;
    (void)cupti_context_ids(ctx, &id, &dev);
    e.context_id = id;
    e.device = dev;
    return e;
  }

  void on_resource(LaunchObserver& observer, CUpti_CallbackId cbid, const CUpti_ResourceData* r) {
    if (r == nullptr) return;
    switch (cbid) {
      case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
        g_context_generation.fetch_add(1, std::memory_order_acq_rel);
        observer.on_context_created(context_event(r->context));
        break;
      case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
        g_context_generation.fetch_add(1, std::memory_order_acq_rel);
        observer.on_context_destroying(context_event(r->context));
        break;
      case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
        ModuleEvent m;
        m.context_id = context_event(r->context).context_id;
        const auto* mod = static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor);
        if (mod != nullptr) {
          m.module_id = mod->moduleId;
          if (mod->pCubin != nullptr && mod->cubinSize > 0) {
            m.cubin.assign(reinterpret_cast<const uint8_t*>(mod->pCubin),
                           reinterpret_cast<const uint8_t*>(mod->pCubin) + mod->cubinSize);
          }
        }
        observer.on_module_loaded(m);
        break;
      }
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
        on_graph_resource(observer, cbid, static_cast<const CUpti_GraphData*>(r->resourceDescriptor));
        break;
      default:
        break;
    }
  }

  static void on_graph_resource(LaunchObserver& observer, CUpti_CallbackId cbid, const CUpti_GraphData* g) {
    if (g == nullptr) return;
    GraphEvent e;
    if (g->graph != nullptr) (void)cuptiGetGraphId(g->graph, &e.graph_id);
    switch (cbid) {
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
        e.kind = GraphEvent::Kind::kNodeCreated;
        if (g->node == nullptr || cuptiGetGraphNodeId(g->node, &e.node_id) != CUPTI_SUCCESS) return;
        e.capture_correlation_id = t_launch.in_launch;
        break;
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
        e.kind = GraphEvent::Kind::kNodeCloned;
        if (g->node == nullptr || g->originalNode == nullptr ||
            cuptiGetGraphNodeId(g->node, &e.node_id) != CUPTI_SUCCESS ||
            cuptiGetGraphNodeId(g->originalNode, &e.original_node_id) != CUPTI_SUCCESS) {
          return;
        }
        break;
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
        e.kind = GraphEvent::Kind::kExecCreated;
        if (g->graphExec == nullptr || cuptiGetGraphExecId(g->graphExec, &e.exec_id) != CUPTI_SUCCESS) return;
        break;
      default:
        return;
    }
    observer.on_graph(e);
  }

  // The hot path: runs on every launch of the application (enter), and on the exit of the few
  // launches whose enter asked for it.
  static void on_launch(LaunchObserver& observer, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
    if (cb == nullptr) return;
    LaunchThreadState& t = t_launch;
    const bool enter = cb->callbackSite == CUPTI_API_ENTER;
    t.in_launch = enter && cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch &&
                          cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz
                      ? cb->correlationId
                      : 0;
    // Compared on entry only: an exit carries its entry's id.
    const bool repeated = enter && cb->correlationId != 0 && cb->correlationId == t.last_enter_correlation;
    if (enter) t.last_enter_correlation = cb->correlationId;
    if (!enter && (!t.exit_wanted || t.exit_correlation != cb->correlationId)) return;
    t.exit_wanted = false;
    if (cb->functionParams == nullptr) return;
    LaunchEvent ev;
    if (!decode_launch(cbid, cb->functionParams, ev)) return;
    ev.correlation_id = cb->correlationId;
    ev.correlation_repeated = repeated;

    const uint64_t generation = g_context_generation.load(std::memory_order_acquire);
    if (t.context != cb->context || t.context_generation != generation) {
      uint32_t id = 0;
      uint32_t dev = 0;
      if (cupti_context_ids(cb->context, &id, &dev)) {
        t.context = cb->context;
        t.context_generation = generation;
      } else {
        t.context = nullptr;  // not cached: asked again on the next launch
      }
      t.context_id = id;
      t.device = dev;
    }
    ev.context = cb->context;
    ev.context_id = t.context_id;
    ev.device = t.device;

    if (ev.api == LaunchApi::kGraphLaunch) {
      // CUPTI's id of the executable graph (a lookup, no driver call): what the agent profiles
      // a graph by, one launch of it after another.
      if (ev.graph_exec == nullptr ||
          cuptiGetGraphExecId(static_cast<CUgraphExec>(ev.graph_exec), &ev.graph_exec_id) != CUPTI_SUCCESS) {
        ev.graph_exec_id = 0;
      }
    } else {
      if (cb->symbolName != nullptr) {
        // Points into CUPTI's callback data: valid during this callback, as LaunchEvent says.
        ev.mangled_name = cb->symbolName;
      } else if (ev.function != nullptr && driver().func_get_name != nullptr) {
        // The driver keeps the name for the function's lifetime.
        const char* name = nullptr;
        if (driver().func_get_name(&name, static_cast<CUfunction>(ev.function)) == CUDA_SUCCESS &&
            name != nullptr) {
          ev.mangled_name = name;
        }
      }
    }

    if (enter) {
      const bool wants_exit = observer.on_launch_enter(ev);
      t.exit_wanted = wants_exit;
      t.exit_correlation = cb->correlationId;
    } else {
      observer.on_launch_exit(ev);
    }
  }

  std::atomic<LaunchObserver*> observer_{nullptr};
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool subscribed_ = false;
  NvtxTranslator nvtx_;
};

}  // namespace

std::unique_ptr<Platform> make_cupti_platform() { return std::make_unique<CuptiPlatform>(); }

}  // namespace cutriage::collectors
