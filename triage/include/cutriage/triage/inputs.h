// Inputs of the triage engine: what one kernel launch looked like and what was measured on it.
//
// Everything here is a plain value type. The collectors (CUPTI, Nsight Compute CSV) translate their
// own records into these at their edge; the engine never sees a CUPTI or protobuf type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/base/device_limits.h"
#include "cutriage/base/launch_config.h"

namespace cutriage::triage {

// The launch shape and the device limits are shared with the collectors and the tool
// (cutriage/base); the engine calls them by their triage:: names.
using base::Dim3;
using base::LaunchConfig;
using base::DeviceLimits;
using base::known_device_limits;

enum class MetricSource : uint8_t {
  kMeasured,  // read from the hardware (ncu, the range profiler)
  kDerived,   // computed by the engine from other values (launch arithmetic, ratios of counters)
};

struct MetricValue {
  double value = 0;
  std::string unit;  // as the producer spelled it, base units ("%", "byte", "nsecond", "")
  MetricSource source = MetricSource::kMeasured;
};

// Metric values by full name (base + rollup + submetric, the names ncu and CUPTI share:
// "sm__throughput.avg.pct_of_peak_sustained_elapsed").
class MetricSet {
 public:
  void set(std::string name, double value, std::string unit = {},
           MetricSource source = MetricSource::kMeasured);
  [[nodiscard]] std::optional<double> get(std::string_view name) const;
  [[nodiscard]] const MetricValue* find(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const { return find(name) != nullptr; }
  [[nodiscard]] const std::map<std::string, MetricValue, std::less<>>& all() const { return values_; }
  [[nodiscard]] size_t size() const { return values_.size(); }

 private:
  std::map<std::string, MetricValue, std::less<>> values_;
};

// One sampled PC after source correlation (Decisions 3 and 6). Optional input.
struct PcSampleLine {
  std::string file;      // "dir/file.cu"; empty when the cubin has no line information
  uint32_t line = 0;
  uint64_t pc_offset = 0;  // byte offset of the instruction in its function
  std::string sass;      // the instruction text, when known (the agent does not disassemble)
  std::string function;  // mangled name of the function holding the PC (a kernel or a helper)
  // Set when the PC lies in a helper inlined into `function` (its line is in another file than
  // the function's own code): file/line above are then the calling line, and these the helper's
  // own position ("device_atomic_functions.hpp", 226).
  std::string inlined_file;
  uint32_t inlined_line = 0;
  // Warp state -> samples, with the names the device reports (smsp__pcsamp_warps_issue_stalled_*
  // or the bare reason); includes the issue states `selected` and `not_selected`.
  std::map<std::string, uint64_t> samples_by_reason;
};

// Warp-state samples of one launch (cutriage's PC sampling, kernel-serialized), or why there are
// none: `error` set and `lines` empty.
struct PcSampleSummary {
  uint64_t total_samples = 0;    // samples of this kernel, every warp state
  uint64_t dropped_samples = 0;  // lost by the sampler (its buffers full): a trust problem
  bool hardware_buffer_full = false;
  bool has_line_info = false;    // the cubin had a line table; otherwise file/line are empty
  uint32_t sampling_period_log2 = 0;  // one sample per SM every 2^N cycles; 0 = unknown
  uint64_t from_launch_index = 0;     // the launch sampled, when not the record's own
  std::string error;                  // collection failed: why
  std::vector<PcSampleLine> lines;
};

enum class ReplayMode : uint8_t { kUnspecified, kKernel, kApplication, kRange, kNone };
enum class ClockControl : uint8_t { kUnspecified, kLocked, kNone };

// How the metrics were collected; Decision 0 reads it.
// Who collected the counters: the advice names that tool's own ways (an ncu import is not told
// to use the agent's options).
enum class Collector : uint8_t {
  kUnspecified = 0,
  kAgent = 1,      // cutriage's agent (deep or always-on)
  kNcuImport = 2,  // Nsight Compute's CSV, imported by `cutriage triage --ncu-csv`
};

struct CollectionSettings {
  Collector collector = Collector::kUnspecified;
  ReplayMode replay_mode = ReplayMode::kUnspecified;
  ClockControl clock_control = ClockControl::kUnspecified;
  uint32_t passes = 0;
  std::string cache_control;  // "all", "none", "" unknown
  std::optional<bool> has_line_info;   // cubin had a line table
  std::optional<bool> debug_build;     // compiled with -G
};

// One launch whose counters went into a diagnosis assembled across launches (always-on mode: one
// single-pass metric group per launch, no replay). Decision 0 checks that they are comparable.
struct AssembledLaunch {
  uint64_t launch_index = 0;
  Dim3 grid;
  Dim3 block;
  uint32_t dynamic_shared_bytes = 0;
  // gpu__time_duration.sum of that launch; for a step's passes (always-on's steps), each pass's
  // launch as the trace timed it, since one counter duration serves them all; 0 = not measured.
  double duration_ns = 0;
  uint32_t metric_group = 0;  // 1-based index of the single-pass group collected on it
  uint32_t metrics = 0;       // values that launch contributed
  // Nonzero: measured by an earlier process of the program (the agent resumed from its output):
  // its pid and start time; launch_index is that process's.
  uint64_t earlier_pid = 0;
  uint64_t earlier_start_unix_ns = 0;
  [[nodiscard]] bool from_earlier_process() const { return earlier_pid != 0 || earlier_start_unix_ns != 0; }
};

// The kernel's own counters, PM-sampled across one launch of its graph (CUPTI's periodic
// device-wide counters, each sample attributed to the kernel execution it lies wholly inside):
// no longer the graph's mix, so d0.graph_share does not block them (docs/graphs.md).
struct NodeSampling {
  uint32_t samples = 0;                // samples averaged into the metrics
  uint64_t interval_ns = 0;            // sampling interval
  uint64_t launch_correlation_id = 0;  // the graph launch sampled
  uint32_t launch_samples = 0;         // samples across that launch, all kernels' and idle ones
  uint32_t executions = 0;             // this kernel's executions in that launch
};

// The kernel's own counters, PM-sampled over a short window of the application's ordinary
// launches (always-on's routing window, docs/always-on.md): device-wide samples, each attributed
// to the family whose traced execution it lies wholly inside. Its launches ran once, as the
// application issued them; nothing replayed.
struct PmWindowScope {
  uint32_t samples = 0;          // samples averaged into the metrics
  uint64_t interval_ns = 0;      // sampling interval
  uint64_t window_start_ns = 0;  // the window's first and last sample (trace clock)
  uint64_t window_end_ns = 0;
  uint32_t window_samples = 0;   // samples in the window, every kernel's and idle ones
  uint32_t executions = 0;       // this kernel's traced executions in the window
};

// Counters measured on a whole CUDA graph launch rather than on this kernel's own launch
// (docs/graphs.md: CUPTI 13.0 counts a graph launch as one range, never one node): the graph's
// counters describe this kernel only as far as it holds the graph's kernel time. Decision 0
// reads it (d0.graph_share, d0.graph_scope).
struct GraphScope {
  uint32_t graph_id = 0;         // the id the kernel records carry
  uint32_t exec_id = 0;          // CUPTI's id of the executable graph that was profiled
  double share_of_graph = 0;     // this kernel's share of the graph's traced kernel time, [0, 1]
  uint32_t other_families = 0;   // other kernels whose executions the counters include
  uint64_t replays_profiled = 0; // graph launches the counters were collected over
  double mean_replay_ns = 0;     // the graph's traced time per replay (first node start to last end)
  // Set when the metrics are the kernel's own PM samples rather than the graph's counters.
  std::optional<NodeSampling> node_sampling;
};

struct KernelInput {
  std::string mangled_name;
  std::string demangled_name;
  std::string function_name;  // demangled base name without parameters, for display and filters
  uint32_t device = 0;
  uint64_t launch_index = 0;  // per-process launch sequence number, when known
  std::optional<LaunchConfig> launch;
  std::optional<DeviceLimits> device_limits;
  MetricSet metrics;
  CollectionSettings collection;
  // Durations of the same kernel measured without replay (nanoseconds), for Decision 0.
  std::vector<double> unprofiled_durations_ns;
  std::optional<PcSampleSummary> pc_samples;
  // Whether the kernel ran concurrently with other kernels (Decision 1); nullopt = no timeline.
  std::optional<bool> ran_concurrently;
  // Share of the application's GPU time this kernel (family) takes, in [0, 1]; for Amdahl ceilings.
  std::optional<double> time_share;
  // Launches the metrics were assembled from, one single-pass group each (empty when one launch,
  // replayed, gave them all).
  std::vector<AssembledLaunch> assembled_launches;
  // Set when the metrics are a graph launch's (the kernel ran inside it); durations above are
  // then the graph's too: unprofiled_durations_ns are its traced replays, and
  // gpu__time_duration.sum is the profiled replay's.
  std::optional<GraphScope> graph_scope;
  // Set when the metrics are this kernel's own PM samples from always-on's routing window.
  std::optional<PmWindowScope> pm_window;
};

}  // namespace cutriage::triage
