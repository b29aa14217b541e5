// Everything the agent needs from CUDA and CUPTI, as one interface of plain values: launch and
// context events in, device facts and profilers out. The CUPTI implementation lives in
// collectors/src/cupti_platform.cpp; the agent's tests drive the agent through a fake.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/base/copy_kind.h"
#include "cutriage/base/device_limits.h"
#include "cutriage/base/launch_config.h"
#include "cutriage/collectors/range_profiler.h"
#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// Which driver entry point launched the work.
enum class LaunchApi : uint8_t {
  kLaunchKernel,           // cuLaunchKernel (also what <<<>>> and cudaLaunchKernel reach)
  kLaunchKernelEx,         // cuLaunchKernelEx
  kLaunchCooperative,      // cuLaunchCooperativeKernel
  kLaunchLegacy,           // cuLaunch, cuLaunchGrid, cuLaunchGridAsync: block shape unknown
  kGraphLaunch,            // cuGraphLaunch: the graph's kernels are not seen one by one here
};
inline const char* to_string(LaunchApi api) {
  switch (api) {
    case LaunchApi::kLaunchKernel: return "cuLaunchKernel";
    case LaunchApi::kLaunchKernelEx: return "cuLaunchKernelEx";
    case LaunchApi::kLaunchCooperative: return "cuLaunchCooperativeKernel";
    case LaunchApi::kLaunchLegacy: return "cuLaunch (legacy)";
    case LaunchApi::kGraphLaunch: return "cuGraphLaunch";
  }
  return "unknown";
}

struct ContextEvent {
  uint64_t context_id = 0;  // CUPTI's context id, unique in the process
  void* context = nullptr;  // CUcontext, opaque
  uint32_t device = 0;
};

struct ModuleEvent {
  uint64_t context_id = 0;
  uint32_t module_id = 0;
  std::vector<uint8_t> cubin;  // copied during the callback; PC samples are correlated with it
};

// One launch as the callback saw it. Valid only during the callback that delivers it (the name
// points into CUPTI's callback data).
//
// Built on every launch of the application, so it holds only what costs no driver call: the
// stream's capture state and CUPTI stream id are filled by Platform::fill_launch_details, which the
// agent calls for the few launches it considers profiling.
struct LaunchEvent {
  uint64_t context_id = 0;
  void* context = nullptr;
  uint32_t device = 0;
  void* stream = nullptr;  // CUstream as passed (null = the legacy or per-thread default stream)
  uint64_t correlation_id = 0;
  // The thread's previous launch had the same correlation id: CUPTI gave the id to more than one
  // call, so records under it cannot be told apart (seen under always-on on the H200,
  // docs/graphs.md). Launches so marked are not profiled.
  bool correlation_repeated = false;
  LaunchApi api = LaunchApi::kLaunchKernel;
  bool per_thread_stream = false;  // the _ptsz variant
  // cooperative launch, or cuLaunchKernelEx with the cooperative attribute: its blocks may wait
  // on each other, so it must never be replayed.
  bool cooperative = false;
  // Set by fill_launch_details: CUPTI's stream id, and whether the stream is being captured into
  // a graph (the launch then records a node and runs nothing now).
  bool details_filled = false;
  uint64_t stream_id = 0;
  bool stream_capturing = false;
  std::string_view mangled_name;  // empty for graph launches
  // Grid, block, cluster and dynamic shared memory from the call's parameters; registers, static
  // shared and local memory are filled by Platform::complete_launch_config for selected launches
  // only (they cost driver calls).
  std::optional<base::LaunchConfig> launch;
  void* function = nullptr;  // CUfunction, opaque; null for graph launches
  // Graph launches: the CUgraphExec (opaque) and CUPTI's id of it (cuptiGetGraphExecId; 0 =
  // unknown). The same id on every launch of one executable graph.
  void* graph_exec = nullptr;
  uint32_t graph_exec_id = 0;
};

// An NVTX call of the application, seen through CUPTI's NVTX callbacks. Strings are valid only
// during the callback. Push/pop ranges nest per thread; start/end ranges may cross threads and are
// matched by range_id.
struct NvtxEvent {
  enum class Kind : uint8_t { kPush, kPop, kStart, kEnd, kMark };
  Kind kind = Kind::kPush;
  uint64_t timestamp_ns = 0;  // the trace clock (Platform::timestamp_ns)
  uint32_t thread_id = 0;     // OS thread id of the caller
  uint64_t range_id = 0;      // kStart / kEnd only
  std::string_view message;   // kPush / kStart / kMark; may be empty (unnamed range)
  std::string_view domain;    // empty for the default domain
};

// How the application builds its CUDA graphs, from CUPTI's resource callbacks. Ids are CUPTI's:
// the graph and node ids kernel activity records carry. Instantiation clones the captured graph,
// and the records name the clones (seen on the H200, docs/graphs.md), so kNodeCloned links each
// clone to the node it was made from.
struct GraphEvent {
  enum class Kind : uint8_t {
    kNodeCreated,  // a node added to a graph (by stream capture or the graph API)
    kNodeCloned,   // node_id cloned from original_node_id (graph instantiation, cudaGraphClone)
    kExecCreated,  // exec_id instantiated from graph_id
  };
  Kind kind = Kind::kNodeCreated;
  uint32_t graph_id = 0;
  uint64_t node_id = 0;
  uint64_t original_node_id = 0;  // kNodeCloned
  uint32_t exec_id = 0;           // kExecCreated
  // kNodeCreated inside a launch callback, i.e. a kernel launch being captured: that launch's
  // correlation id (0 otherwise). The callback runs on the capturing thread, so whatever that
  // thread has open (NVTX ranges) was open at capture.
  uint64_t capture_correlation_id = 0;
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
  // Returns whether this launch's on_launch_exit is wanted; the platform skips building the exit
  // event otherwise (the common case: a launch that is only traced).
  virtual bool on_launch_enter(const LaunchEvent& event) = 0;
  virtual void on_launch_exit(const LaunchEvent& event) = 0;
  virtual void on_nvtx(const NvtxEvent& /*event*/) {}
  virtual void on_graph(const GraphEvent& /*event*/) {}
  // The application waits for the GPU: cuCtxSynchronize (`whole_context`), cuStreamSynchronize or
  // cuEventSynchronize, at the call's entry and at its exit, on the waiting thread. Best effort:
  // waits inside other calls (a synchronous copy) are not reported.
  virtual void on_synchronize(bool /*enter*/, bool /*whole_context*/) {}
};

// One kernel execution from the Activity API, translated at the collector's edge. The name is
// valid only during the delivery call (CUPTI owns it).
struct KernelActivity {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;  // matches LaunchEvent::correlation_id of the launch
  base::Dim3 grid;
  base::Dim3 block;
  base::Dim3 cluster;
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;
  uint32_t graph_id = 0;         // 0 = not launched from a graph
  uint64_t graph_node_id = 0;
  bool device_launched = false;  // CUDA dynamic parallelism
  std::string_view mangled_name;
};

struct CopyActivity {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t device = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t bytes = 0;
  base::CopyKind kind = base::CopyKind::kUnspecified;
  bool pageable = false;  // one side is pageable host memory
  uint32_t graph_id = 0;
};

// What one delivered Activity API buffer held, in record order.
struct ActivityBatch {
  std::vector<KernelActivity> kernels;
  std::vector<CopyActivity> copies;
  uint64_t dropped_records = 0;  // CUPTI could not record these (buffers full); since last batch
  // Records without timestamps (start or end 0, or end before start), left out of the batch. The
  // launches the range profiler replays come back this way (seen on the H200).
  uint64_t untimed_records = 0;
};

// Receives activity batches on whatever thread CUPTI delivers buffers on (its own worker, or the
// thread calling Platform::flush_trace). Must not throw and must not call back into CUDA.
class ActivityObserver {
 public:
  virtual ~ActivityObserver() = default;
  virtual void on_activity(const ActivityBatch& batch) = 0;
};

struct TraceOptions {
  size_t buffer_bytes = size_t{4} << 20;  // one CUPTI activity buffer
  size_t max_buffers = 16;  // buffers handed to CUPTI at once; beyond that CUPTI drops records
  bool copies = true;       // memcpy and memset records too
};

// ---- PC sampling (warp-state samples per instruction) ----------------------------------------

struct PcSamplingOptions {
  // One sample per SM every 2^period_log2 cycles, 5..31 (CUPTI's range). The agent derives it
  // from the kernel's duration so that a short kernel still yields enough samples.
  uint32_t period_log2 = 12;
  // Distinct PCs the output buffer holds per collection; beyond it CUPTI returns the rest in
  // further drains (remainingNumPcs), which end() performs.
  size_t max_pcs = 10000;
  // Scratch buffer CUPTI fills before handing samples over, and the hardware buffer the sampler
  // writes into; when either fills, samples are dropped and end() reports it. The hardware buffer
  // is set up again for every sampled launch, and its size is paid in the launch call and in
  // end(); CUPTI's worker drains it while the kernel runs, so a small one loses nothing at the
  // agent's sample targets (bench/pc_sampler_cost.sh: the same samples and PCs from 4 MiB to
  // 256 MiB).
  size_t scratch_buffer_bytes = size_t{4} << 20;
  size_t hardware_buffer_bytes = size_t{16} << 20;
  // false: kernel-serialized, every sample belongs to one launch (records carry its correlation
  // id); it gives nothing for a graph launch. true: continuous, every kernel that runs on the
  // context between begin() and end() is sampled, concurrently, and a sample is attributed by its
  // function only: the way to sample the kernels of a graph launch.
  bool continuous = false;
};

struct PcStallCount {
  uint32_t reason = 0;  // index into PcSampleBatch::reason_names
  uint64_t samples = 0;
};

// One sampled instruction, translated from CUPTI's record at the collector's edge.
struct PcSampleRecord {
  uint64_t cubin_crc = 0;    // CRC of the cubin holding it (Platform::cubin_crc of a module)
  uint64_t pc_offset = 0;    // byte offset in its function
  std::string function;      // mangled function name
  uint32_t correlation_id = 0;
  std::vector<PcStallCount> stalls;
};

// What one kernel-serialized collection returned.
struct PcSampleBatch {
  // Reason index -> name as the device reports it (names differ between architectures).
  std::vector<std::string> reason_names;
  std::vector<PcSampleRecord> pcs;
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t non_user_samples = 0;  // samples in driver-internal kernels, not attributed
  bool hardware_buffer_full = false;
  uint32_t period_log2 = 0;        // the period actually configured
};

// Samples one launch at a time on one context, apart from the range profiler (CUPTI refuses the
// range profiler while PC sampling is enabled on a context, and the reverse). begin() on launch
// entry, end() on launch exit of the same thread. end() waits for the launch to finish
// (kernel-serialized mode hands samples over when the kernel completes) and disables PC sampling
// again, so the range profiler can run on the context afterwards. Not thread-safe; the agent
// serializes use per context. Destroy before the context is destroyed.
class PcSampler {
 public:
  virtual ~PcSampler() = default;
  virtual Status begin(const PcSamplingOptions& options) = 0;
  // Called once after every successful begin(), also when the launch failed.
  virtual Result<PcSampleBatch> end() = 0;
};

// ---- PM sampling (device-wide counters read at a fixed interval) ------------------------------

// What one PM-sampling session collects. CUPTI takes one-pass configurations only (it answers
// NOT_SUPPORTED otherwise): the caller passes a set built to fit one pass for the chip.
struct PmSamplingOptions {
  std::vector<std::string> metrics;  // full names, each with its rollup and submetric
  uint64_t interval_ns = 5000;       // GPU time between samples (the H200 probe's 5 us)
  // The counter-data image holds this many samples; later ones are not decoded (counted in
  // PmSampleBatch::samples_dropped). The image is large per sample (the H200 probe: 1.24 GB for
  // 10,600 samples of 20 metrics), so the caller sizes it to what it samples and keeps it bounded.
  uint32_t max_samples = 1024;
  size_t hardware_buffer_bytes = size_t{64} << 20;  // raw records before decoding
  // true: end() first waits for the context's work (one sampled launch, begun in its callback).
  // false: a time window (always-on's PM routing window): end() stops at once, and the samples are
  // those taken since begin(); begin() and end() then run on the agent's own thread, which has no
  // context current: the collector makes the sampler's context current around its calls.
  bool synchronize = true;
};

// One sample: its span on the trace clock (the H200 probe: the samples' timestamps line up with
// the activity records' at lag 0) and each metric's value, in PmSamplingOptions::metrics order
// (NaN where CUPTI evaluated none).
struct PmSample {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::vector<double> values;
};

struct PmSampleBatch {
  std::vector<std::string> metrics;
  std::vector<PmSample> samples;   // completed samples, in time order
  uint64_t interval_ns = 0;        // the interval configured
  uint64_t samples_dropped = 0;    // beyond the counter-data image
  bool hardware_buffer_overflow = false;
  // What the session cost the calling thread, measured by the collector: begin() (host config,
  // enable, counter-data image, Start), end()'s synchronize and Stop, and its decode and
  // evaluation. 0 where not measured.
  uint64_t start_cost_ns = 0;
  uint64_t stop_cost_ns = 0;
  uint64_t decode_cost_ns = 0;
  // Of start_cost_ns: the host-side configuration (counter availability, the host object, the
  // metrics added, the config image: CPU work only), and the counter-data image (sized,
  // allocated and initialized in host memory). The rest is the device's: enable, set config
  // (the hardware buffer), Start.
  uint64_t start_host_config_ns = 0;
  uint64_t start_counter_data_ns = 0;
};

// Samples the device of one context between begin() (a launch's entry) and end() (its exit, same
// thread): end() waits for the context's work to finish, stops, decodes and evaluates, and
// disables PM sampling again. With PmSamplingOptions::synchronize false, begin() and end() bound a
// time window instead, from any one thread (always-on's routing window, from the flush thread). Never beside an enabled range profiler on the context (the H200
// probe: the range profiler enabled during PM sampling crashed the process): the caller disables
// it first. Not thread-safe; the agent serializes use per context. Destroy before the context.
class PmSampler {
 public:
  virtual ~PmSampler() = default;
  virtual Status begin(const PmSamplingOptions& options) = 0;
  // Called once after every successful begin(), also when the launch failed.
  virtual Result<PmSampleBatch> end() = 0;
};

// A source position of one instruction, from the cubin's line table.
struct SourceLine {
  std::string file;  // directory and file name joined: "/src/kernels/strided.cu"
  uint32_t line = 0;
};

struct DeviceInfo {
  uint32_t device = 0;
  std::string name;   // "NVIDIA H200"
  std::string uuid;   // "GPU-..."
  base::DeviceLimits limits;  // chip, SM count, clocks, memory and occupancy limits
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
  // Turns the launch and wait callbacks off (false) or on again (true) after subscribe(): while
  // off, CUPTI calls the observer at no kernel launch, graph launch or wait, and the launches cost
  // what they cost without the callbacks; the context, module, graph-structure and NVTX callbacks
  // stay on. An enter delivered before the switch may lose its exit. kNotSupported where the
  // platform cannot (the default).
  virtual Status set_launch_callbacks(bool /*on*/) {
    return Status(StatusCode::kNotSupported, "the launch callbacks cannot be switched on this platform");
  }
  // Waits until every launch made so far on the launch's context has finished (cuCtxSynchronize),
  // from the launch's entry callback: the results are the application's as before, only its
  // queue is drained once. Never for a launch into a capturing stream. kNotSupported where the
  // platform cannot (the default).
  virtual Status synchronize_context(const LaunchEvent& /*event*/) {
    return Status(StatusCode::kNotSupported, "this platform cannot wait for a context");
  }
  // Number of CUDA devices visible to the process (for the session header's GPU list).
  virtual Result<uint32_t> device_count() = 0;
  virtual Result<DeviceInfo> device_info(uint32_t device) = 0;
  virtual VersionInfo versions() = 0;
  // Fills registers per thread, static shared and local bytes of `event.function` into `config`.
  virtual Status complete_launch_config(const LaunchEvent& event, base::LaunchConfig* config) = 0;
  // Fills stream_id and stream_capturing (driver calls); call from the launch callback only. A
  // capture query that fails reports "capturing": never risk replaying a captured launch.
  virtual void fill_launch_details(LaunchEvent& event) = 0;
  // Starts the Activity API trace of kernel executions (and copies). `observer` must outlive it.
  virtual Status start_trace(ActivityObserver* observer, const TraceOptions& options) = 0;
  // Delivers completed records to the observer (forced: also records of work not yet finished,
  // for the end of the process). Never from a CUPTI callback.
  virtual void flush_trace(bool forced) = 0;
  // Turns the started trace's record kinds off (paused) or on again, for a duty-cycled trace:
  // while paused CUPTI neither instruments kernels nor writes records, so the per-kernel cost of
  // the trace is gone; records of work before the pause still arrive with later flushes. No-op
  // when the trace is not started or already in that state.
  virtual Status pause_trace(bool paused) = 0;
  virtual void stop_trace() = 0;
  // The clock of activity records and NVTX events, in nanoseconds.
  virtual uint64_t timestamp_ns() = 0;
  virtual Result<std::unique_ptr<ProfilerHost>> make_profiler_host(const std::string& chip) = 0;
  // `max_ranges`: the auto ranges (launches) one pass may record (RangeProfilerOptions::max_ranges);
  // 1 for one launch between begin() and end(), more for always-on's steps (CUTRIAGE_STEP_STAGES).
  virtual Result<std::unique_ptr<RangeProfiler>> make_range_profiler(const ContextEvent& context,
                                                                     uint32_t max_ranges) = 0;
  // Whether the range profiler's first Start in the process costs a start-up worth paying ahead
  // (RangeProfiler::warm_up); false where there is none (the default).
  [[nodiscard]] virtual bool range_profiler_has_startup() const { return false; }
  // PC sampling on one context. kNotSupported on devices or builds without it.
  virtual Result<std::unique_ptr<PcSampler>> make_pc_sampler(const ContextEvent& context) = 0;
  // PM sampling on the device of one context; the chip names the one-pass configuration CUPTI
  // builds. kNotSupported where the platform has none (the default).
  virtual Result<std::unique_ptr<PmSampler>> make_pm_sampler(const ContextEvent& /*context*/,
                                                             const std::string& /*chip*/) {
    return Status(StatusCode::kNotSupported, "PM sampling is not available on this platform");
  }
  // The CRC CUPTI puts in PC-sampling records for a cubin (cuptiGetCubinCrc). Needs no GPU.
  virtual Result<uint64_t> cubin_crc(const std::vector<uint8_t>& cubin) = 0;
  // File and line of the instruction at `pc_offset` in `function` of `cubin`
  // (cuptiGetSassToSourceCorrelation). kNotSupported when the cubin has no line information for it.
  virtual Result<SourceLine> sass_to_source(const std::vector<uint8_t>& cubin, const std::string& function,
                                            uint64_t pc_offset) = 0;
};

// The CUPTI-backed platform (needs the toolkit at build time; the driver at run time).
std::unique_ptr<Platform> make_cupti_platform();

}  // namespace cutriage::collectors
