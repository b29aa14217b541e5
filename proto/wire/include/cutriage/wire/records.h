// What one cutriage file holds, as plain C++ values: a session header and profiled kernels with
// their diagnoses. The agent and the tool both fill these; writer.h turns them into cutriage.v1
// wire bytes without libprotobuf (the agent must not load it into the host process).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/graphs.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/wire/schema.h"

namespace cutriage::wire {

inline constexpr uint32_t kSchemaVersion = 1;

// The enums of these records are cutriage.v1's, generated from the schema (schema.h: each value's
// proto name without its enum's prefix, CamelCased; what each value means is in cutriage.proto).
// Those the triage engine also uses (ReplayMode, ClockControl, CopyKind and the diagnosis's) are
// triage's own, checked against the schema where the writer uses them (src/schema_checks.h).
using SessionSource = schema::SessionHeader::Source;
using ProfileStatus = schema::ProfileStatus;
using LaunchApi = schema::LaunchApi;
using AgentState = schema::AgentState;
using Severity = schema::Notice::Severity;
using ControlSource = schema::ControlSource;
using ControlState = schema::ControlState;
using SelectionMode = schema::SelectionPolicy::Mode;
using FamilySelection = schema::FamilyStats::Selection;

struct GpuInfo {
  uint32_t device = 0;
  std::string name;
  std::string uuid;
  triage::DeviceLimits limits;  // chip, SM count, clocks, memory, peaks, occupancy limits
};

// The process's place in a distributed job (SessionHeader.job): written only when a launcher
// variable named the rank.
struct JobPlace {
  uint32_t rank = 0;
  uint32_t world_size = 0;  // 0 = not known
  uint32_t local_rank = 0;
  bool has_local_rank = false;
  std::string rank_variable;  // "RANK", "OMPI_COMM_WORLD_RANK", ...; never empty when written
};

struct SessionInfo {
  std::string agent_version;
  std::string host;
  uint64_t pid = 0;
  std::vector<std::string> command_line;
  uint64_t start_time_unix_ns = 0;
  std::vector<GpuInfo> gpus;
  std::string driver_version;
  std::string cuda_version;
  std::string cupti_version;
  triage::ReplayMode replay_mode = triage::ReplayMode::kUnspecified;
  triage::ClockControl clock_control = triage::ClockControl::kUnspecified;
  std::string cache_control;
  std::string metric_set;
  std::string kernel_filter;
  SessionSource source = SessionSource::kUnspecified;
  std::string source_path;
  uint64_t trace_clock_at_start_ns = 0;  // 0 = no trace
  // Rotating segments (CUTRIAGE_SEGMENT_*): 1, 2, ... in file order; 0 = one file for the run.
  // Only the last segment of a run ends with SessionEnd.
  uint32_t segment_index = 0;
  std::string mode;  // "deep" or "always-on" (CUTRIAGE_MODE); empty in older files
  std::optional<JobPlace> job;  // unset = not a rank of a job the agent could tell
};

struct Notice {
  Severity severity = Severity::kUnspecified;
  std::string code;
  std::string message;
  uint64_t time_unix_ns = 0;
  uint64_t family_id = 0;  // the kernel family it is about; 0 = none
};

struct KernelLaunchStats {
  std::string mangled_name;
  uint64_t launches = 0;
  uint64_t profiled = 0;
  uint64_t captured = 0;
  uint64_t not_replayable = 0;
  uint64_t failed = 0;
  uint64_t filtered = 0;
};

// What the always-on agent spent of its budget (SessionEnd.overhead). The cost of a profiled or
// sampled launch is the time the application thread spent inside the agent for it (range
// profiler or PC sampler calls, and the wait for the launch to finish), measured on that thread.
struct OverheadStats {
  double budget_fraction = 0;      // CUTRIAGE_BUDGET, e.g. 0.005 for 0.5%
  double max_profiles_per_second = 0;
  uint64_t wall_ns = 0;            // from the agent's start to this record
  uint64_t spent_ns = 0;           // measured cost of every profiled and sampled launch
  uint64_t max_window_spent_ns = 0;  // the most spent in any budget window
  uint64_t window_ns = 0;            // that window's length
  uint64_t admitted = 0;           // launches the budget let through
  uint64_t deferred = 0;           // selected launches the budget held back
  uint64_t group_switches = 0;     // metric-group changes on a context (the costly part)
  uint64_t startup_ns = 0;         // CUPTI's one-off start-up paid ahead (CUTRIAGE_WARMUP), not in spent_ns
  uint64_t launch_callbacks_off_ns = 0;  // the launch gate had the launch callbacks off (CUTRIAGE_LAUNCH_GATE)
};

// A deep-capture request (replay allowed for a short window) and what came of it. Written when
// the request is taken and again, same id, when its window closes.
struct ControlRequest {
  uint64_t id = 0;  // 1, 2, ... per process
  ControlSource source = ControlSource::kUnspecified;
  std::string target;              // "top:3" or a kernel-name filter (CUTRIAGE_KERNEL_NAME syntax)
  double window_seconds = 0;
  uint64_t requested_unix_ns = 0;
  uint64_t ended_unix_ns = 0;      // 0 while started
  ControlState state = ControlState::kUnspecified;
  std::vector<uint64_t> family_ids;  // families profiled with replay in the window
  uint32_t profiled_launches = 0;
  std::string detail;
};

struct SessionEnd {
  uint64_t end_time_unix_ns = 0;
  AgentState state = AgentState::kUnspecified;
  std::string state_detail;
  uint64_t kernel_launches = 0;
  uint64_t graph_launches = 0;
  uint64_t captured_launches = 0;
  uint64_t profiled_launches = 0;
  uint64_t failed_profiles = 0;
  uint64_t not_replayable_launches = 0;
  std::vector<KernelLaunchStats> kernels;
  std::optional<OverheadStats> overhead;  // always-on mode only
};

// The instructions of one sampled function (its cubin .text section), PcSampling.code.
struct FunctionCode {
  std::string function;       // mangled name
  std::vector<uint8_t> text;  // offset 0 = pc_offset 0
};

// RangeProfilerSteps in the schema: the range profiler's CUPTI calls inside start and stop.
struct RangeProfilerSteps {
  uint64_t enable_ns = 0;
  uint64_t counter_data_ns = 0;
  uint64_t set_config_ns = 0;
  uint64_t start_ns = 0;
  uint64_t stop_ns = 0;
  uint64_t decode_ns = 0;
  uint64_t disable_ns = 0;
};

// ProfileCost in the schema: one profiled launch's cost on the application's thread, by phase.
struct ProfileCost {
  uint64_t setup_ns = 0;
  uint64_t start_ns = 0;
  uint64_t launch_ns = 0;
  uint64_t stop_ns = 0;
  uint64_t triage_ns = 0;
  uint32_t passes = 0;
  uint64_t plan_ns = 0;                           // inside setup_ns
  std::optional<RangeProfilerSteps> range_steps;  // inside start_ns and stop_ns
  uint64_t evaluate_ns = 0;                       // inside stop_ns
};

// ApplicationReplay in the schema: counters assembled over runs of the program.
struct ApplicationReplay {
  uint32_t runs = 0;
  bool counters_complete = false;
  uint32_t counters_wanted = 0;
};

struct KernelRecord {
  triage::KernelInput input;  // identity, launch config, metrics, collection settings
  uint64_t context_id = 0;
  uint64_t stream_id = 0;
  uint64_t correlation_id = 0;
  std::vector<std::string> nvtx_path;
  double duration_ns = 0;  // profiled duration; 0 = unknown
  triage::Diagnosis diagnosis;
  ProfileStatus status = ProfileStatus::kUnspecified;
  std::string status_detail;
  LaunchApi launch_api = LaunchApi::kUnspecified;
  uint32_t profile_number = 0;
  std::vector<uint64_t> combined_launch_indices;
  std::vector<std::string> rejected_metrics;
  // Metric name -> launch index it was measured on, for values not from this record's launch.
  std::map<std::string, uint64_t, std::less<>> metric_launch;
  uint64_t family_id = 0;  // 0 = no trace
  uint32_t revision = 0;
  // PC sampling: the samples are input.pc_samples (KernelProfile.pc_sampling on the wire); these
  // are the raw instructions of the sampled functions for the tool to disassemble, and their arch.
  // They travel inside PcSampling, so they are written only when input.pc_samples is set.
  std::vector<FunctionCode> pc_code;
  std::string pc_sm_arch;  // "sm_90"
  std::optional<ProfileCost> cost;  // the launch this record was written for (not rewrites' own)
  std::optional<ApplicationReplay> application_replay;  // set under application replay only
  std::optional<ProfileCost> pc_cost;  // the PC-sampled launch's (written inside PcSampling)
  std::optional<ProfileCost> first_pass_cost;  // a stage over launches: its first pass's
};

// KernelFamily: defined once per file, before the first record that uses `id` (ids start at 1).
struct FamilyDef {
  uint64_t id = 0;
  std::string mangled_name;
  std::string display_name;
  uint32_t device = 0;
  triage::Dim3 block;
};

struct KernelExecution {
  uint64_t family_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t stream_id = 0;
  uint32_t context_id = 0;
  uint64_t correlation_id = 0;
  triage::Dim3 grid;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
  bool replayed = false;
  std::string nvtx_path;  // "outer/inner"; empty = none (interned on the wire)
  bool cut_by_pause = false;  // running when the trace paused: end_ns is the pause
};

struct CopyExecution {
  triage::CopyKind kind = triage::CopyKind::kUnspecified;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t device = 0;
  uint32_t stream_id = 0;
  uint32_t context_id = 0;
  uint64_t correlation_id = 0;
  bool pageable = false;
  uint32_t graph_id = 0;
};

struct NvtxRange {
  std::string name;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t thread_id = 0;
  uint32_t depth = 0;
  std::string domain;
};

struct TraceChunk {
  std::vector<KernelExecution> kernels;
  std::vector<CopyExecution> copies;
  std::vector<NvtxRange> nvtx_ranges;
  uint64_t dropped_records = 0;
  std::vector<std::pair<uint64_t, uint64_t>> untraced;  // pauses of the trace: [start, end) ns
};

struct SelectionPolicy {
  SelectionMode mode = SelectionMode::kUnspecified;
  uint32_t top_k = 0;
  double min_share = 0;
  std::string nvtx_include;
  std::string nvtx_exclude;
};

// What the agent adds to the timeline's numbers for one family.
// A graph node a family ran as (GraphNodeRef in the schema).
struct GraphNodeRef {
  uint32_t graph_id = 0;
  uint64_t node_id = 0;
  uint64_t created_node_id = 0;  // 0 = its creation was not seen
  bool captured = false;
  std::string capture_nvtx_path;  // empty = none
};

struct FamilyOutcome {
  FamilySelection selection = FamilySelection::kUnspecified;
  std::string selection_detail;
  uint64_t profiled_launch_index = 0;
  std::vector<std::string> nvtx_paths;  // most launches first
  std::vector<GraphNodeRef> graph_nodes;  // most time first, at most 8
  uint64_t application_launches = 0;  // FamilyStats.application_launches
  uint64_t direct_launches_before_rank = 0;  // FamilyStats.direct_launches_before_rank
};

// RankingSource in the schema: the earlier run whose ranking chose this run's families.
struct RankingSource {
  std::string path;
  uint64_t pid = 0;
  uint64_t start_time_unix_ns = 0;
  uint32_t families_selected = 0;
  bool trace_matches = false;
  uint32_t families_compared = 0;
  uint32_t families_differing = 0;
  std::vector<std::string> differences;
  double matching_time_share = 0;
};

struct TraceSummary {
  triage::TimelineSummary timeline;  // families carry FamilyDef ids in `family`
  std::map<uint64_t, FamilyOutcome> outcomes;  // by family id
  std::vector<triage::CheckResult> findings;
  uint64_t dropped_records = 0;
  uint64_t timeline_kernel_events = 0;
  SelectionPolicy selection;
  std::vector<triage::GraphStats> graphs;  // families carry FamilyDef ids
  std::optional<RankingSource> ranking_source;
};

}  // namespace cutriage::wire
