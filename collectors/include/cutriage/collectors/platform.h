// Everything the agent needs from CUDA and CUPTI, as one interface of plain values: launch and
// context events in, device facts and profilers out. The CUPTI implementation lives in
// collectors/src/cupti_platform.cpp; the agent's tests drive the agent through a fake.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cutriage/collectors/range_profiler.h"
#include "cutriage/collectors/status.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::collectors {

// Which driver entry point launched the work.
enum class LaunchApi : uint8_t {
  kLaunchKernel,           // cuLaunchKernel (also what <<<>>> and cudaLaunchKernel reach)
  kLaunchKernelEx,         // cuLaunchKernelEx
  kLaunchCooperative,      // cuLaunchCooperativeKernel
  kLaunchLegacy,           // cuLaunch, cuLaunchGrid, cuLaunchGridAsync: block shape unknown
  kGraphLaunch,            // cuGraphLaunch: the graph's kernels are not seen one by one here
};
const char* to_string(LaunchApi api);

struct ContextEvent {
  uint64_t context_id = 0;  // CUPTI's context id, unique in the process
  void* context = nullptr;  // CUcontext, opaque
  uint32_t device = 0;
};

struct ModuleEvent {
  uint64_t context_id = 0;
  uint32_t module_id = 0;
  std::vector<uint8_t> cubin;  // copied during the callback (later issues correlate PCs with it)
};

// One launch as the callback saw it. Valid only during the callback that delivers it.
struct LaunchEvent {
  uint64_t context_id = 0;
  void* context = nullptr;
  uint32_t device = 0;
  uint64_t stream_id = 0;
  uint64_t correlation_id = 0;
  LaunchApi api = LaunchApi::kLaunchKernel;
  bool per_thread_stream = false;  // the _ptsz variant
  // The stream is being captured into a graph: the launch records a node and runs nothing now.
  bool stream_capturing = false;
  // cooperative launch, or cuLaunchKernelEx with the cooperative attribute: its blocks may wait
  // on each other, so it must never be replayed.
  bool cooperative = false;
  std::string mangled_name;  // empty for graph launches
  // Grid, block, cluster and dynamic shared memory from the call's parameters; registers, static
  // shared and local memory are filled by Platform::complete_launch_config for selected launches
  // only (they cost driver calls).
  std::optional<triage::LaunchConfig> launch;
  void* function = nullptr;  // CUfunction, opaque; null for graph launches
};

// Receives the callbacks. Implementations must not throw (the CUPTI side also catches) and must
// tolerate calls from several threads at once; on_launch_exit comes on the thread of its
// on_launch_enter, with nothing launched in between on that thread.
class LaunchObserver {
 public:
  virtual ~LaunchObserver() = default;
  virtual void on_context_created(const ContextEvent& event) = 0;
  virtual void on_context_destroying(const ContextEvent& event) = 0;
  virtual void on_module_loaded(const ModuleEvent& event) = 0;
  virtual void on_launch_enter(const LaunchEvent& event) = 0;
  virtual void on_launch_exit(const LaunchEvent& event) = 0;
};

struct DeviceInfo {
  uint32_t device = 0;
  std::string name;   // "NVIDIA H200"
  std::string uuid;   // "GPU-..."
  triage::DeviceLimits limits;  // chip, SM count, clocks, memory and occupancy limits
};

struct VersionInfo {
  std::string driver;  // "13.0" (cuDriverGetVersion)
  std::string cupti;   // "13.0.0" / API version
};

class Platform {
 public:
  virtual ~Platform() = default;
  // Subscribes to CUPTI and enables the callbacks. kAlreadySubscribed when another tool holds
  // CUPTI, kUnavailable without driver or device. `observer` must outlive the subscription.
  virtual Status subscribe(LaunchObserver* observer) = 0;
  // Stops delivering callbacks (best effort; at process exit it may be skipped).
  virtual void unsubscribe() = 0;
  // Number of CUDA devices visible to the process (for the session header's GPU list).
  virtual Result<uint32_t> device_count() = 0;
  virtual Result<DeviceInfo> device_info(uint32_t device) = 0;
  virtual VersionInfo versions() = 0;
  // Fills registers per thread, static shared and local bytes of `event.function` into `config`.
  virtual Status complete_launch_config(const LaunchEvent& event, triage::LaunchConfig* config) = 0;
  virtual Result<std::unique_ptr<ProfilerHost>> make_profiler_host(const std::string& chip) = 0;
  virtual Result<std::unique_ptr<RangeProfiler>> make_range_profiler(const ContextEvent& context) = 0;
};

// The CUPTI-backed platform (needs the toolkit at build time; the driver at run time).
std::unique_ptr<Platform> make_cupti_platform();

}  // namespace cutriage::collectors
