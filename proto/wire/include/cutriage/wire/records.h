// What one cutriage file holds, as plain C++ values: a session header and profiled kernels with
// their diagnoses. The agent and the tool both fill these; writer.h turns them into cutriage.v1
// wire bytes without libprotobuf (the agent must not load it into the host process).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::wire {

inline constexpr uint32_t kSchemaVersion = 1;

enum class SessionSource : uint8_t { kUnspecified = 0, kAgent = 1, kNcuCsv = 2 };

struct GpuInfo {
  uint32_t device = 0;
  std::string name;
  std::string uuid;
  triage::DeviceLimits limits;  // chip, SM count, clocks, memory, peaks, occupancy limits
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
};

struct KernelRecord {
  triage::KernelInput input;  // identity, launch config, metrics, collection settings
  uint64_t context_id = 0;
  uint64_t stream_id = 0;
  uint64_t correlation_id = 0;
  std::vector<std::string> nvtx_path;
  double duration_ns = 0;  // profiled duration; 0 = unknown
  triage::Diagnosis diagnosis;
};

}  // namespace cutriage::wire
