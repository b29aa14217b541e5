// The agent's counters in the Prometheus text exposition format (version 0.0.4), for
// node_exporter's textfile collector: a file rewritten every CUTRIAGE_PROMETHEUS_INTERVAL_MS,
// published by rename(2) so a scraper never reads half a file.
//
// Labels follow dcgm-exporter's where they name the same thing (gpu, UUID, Hostname), so
// cutriage's series join with DCGM's on a dashboard. The GPU's model is model_name: dcgm-exporter's
// modelName is not snake_case, which `promtool check metrics` reports (every file failed it);
// CUTRIAGE_PROMETHEUS_DCGM_LABELS=1 names it modelName for dashboards that join on it.
// The output keeps promtool's lint rules (docs/exports.md lists them; tests/agent_lib/promlint.py
// checks them in CI): snake_case metric and label names, HELP and TYPE before each metric's
// samples, counters ending in _total and nothing else ending so, base units (_seconds, _ratio),
// no duplicate series. Pure C++ but for write_atomically().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cutriage::agent {

struct PromGpu {
  uint32_t device = 0;
  std::string uuid;   // "GPU-..."
  std::string model;  // "NVIDIA H200"
  double busy_seconds = 0;
  double span_seconds = 0;  // traced span
};

// One CUDA graph as one workload (GraphStats), labelled by CUPTI's graph id.
struct PromGraph {
  uint32_t graph_id = 0;
  uint64_t replays = 0;
  double kernel_seconds = 0;      // union of its kernels' time, summed over replays
  double span_seconds = 0;        // first node start to last node end, summed over replays
  double idle_between_nodes_seconds = 0;
};

struct PromFamily {
  uint64_t family_id = 0;
  uint32_t device = 0;
  std::string kernel;          // display name (demangled function), cut to kMaxKernelLabel
  double gpu_seconds = 0;      // traced GPU time, profiled launches left out
  uint64_t launches = 0;       // traced executions
  double share = 0;            // of all traced kernel time, [0, 1]
  std::string verdict;         // "memory_bound", ...; "" = not diagnosed (yet)
  std::string limiter;         // "dram_bandwidth", ...; "" = none named
  // Always-on: how far its diagnosis has assembled (exported with the budget's series, for the
  // families with at least one assembled launch).
  bool complete = false;            // every counter its route reads was collected
  uint32_t assembled_launches = 0;  // launches the counters came from, earlier processes included
  uint32_t counters_missing = 0;    // counters the route still wants
};

struct PromSnapshot {
  std::string host;
  // The process's rank in a distributed job: every series then carries a `rank` label after
  // Hostname, so the ranks of one job on one host stay apart. Unset: no rank label at all.
  std::optional<uint32_t> rank;
  std::string agent_state;       // "active", "permission_denied", ...
  uint64_t kernel_launches = 0;  // every launch the callbacks saw
  uint64_t profiled_launches = 0;
  uint64_t sampled_launches = 0;
  uint64_t dropped_trace_records = 0;
  std::vector<PromGpu> gpus;
  std::vector<PromFamily> families;  // largest GPU time first; the renderer keeps the first max
  std::vector<PromGraph> graphs;     // most kernel time first; the renderer keeps the first kMaxPromGraphs
  // Always-on mode's budget (absent in deep mode): the share allowed, what was spent, over what.
  bool has_budget = false;
  double budget_ratio = 0;
  double overhead_seconds = 0;
  double startup_seconds = 0;  // CUPTI's start-up paid ahead (CUTRIAGE_WARMUP), outside overhead_seconds
  double launch_callbacks_off_seconds = 0;  // the launch gate had the callbacks off (CUTRIAGE_LAUNCH_GATE)
  double wall_seconds = 0;
  uint64_t budget_admitted = 0;
  uint64_t budget_deferred = 0;
  // Always-on: the share of time the kernel trace runs (CUTRIAGE_TRACE_DUTY) and how long it was
  // paused so far; with a duty below 1 the GPU and family seconds cover the traced time only.
  double trace_duty = 1.0;
  double trace_paused_seconds = 0;
  // The model label named modelName (dcgm-exporter's) instead of model_name.
  bool dcgm_model_label = false;
};

// Families exported: the rest are summed into no series (their time is in the GPU's busy time).
inline constexpr size_t kMaxPromFamilies = 50;
inline constexpr size_t kMaxPromGraphs = 50;
inline constexpr size_t kMaxKernelLabel = 160;

// The exposition text: HELP and TYPE lines, then one sample per series. Label values are escaped
// (backslash, double quote, newline), so any kernel name is safe.
std::string render_prometheus(const PromSnapshot& snapshot);

// Writes `text` to `path` through a temporary file in the same directory and rename(2). Returns an
// empty string on success, else why not (the temporary file is removed).
std::string write_atomically(const std::string& path, std::string_view text);

}  // namespace cutriage::agent
