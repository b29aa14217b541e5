// Launch quantities the hardware counters do not give: theoretical occupancy and its limiter, waves
// per SM, wave efficiency. CUPTI rejects every launch__* metric (they are Nsight Compute's own), so
// the agent depends on this arithmetic; for ncu captures it cross-checks ncu's values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cutriage/triage/inputs.h"

namespace cutriage::triage {

enum class OccupancyLimiter : uint8_t {
  kUnspecified,
  kRegisters,
  kSharedMemory,
  kBlockSlots,  // maximum resident blocks (CTAs) per SM
  kWarpSlots,   // maximum resident warps per SM
};

std::string_view to_string(OccupancyLimiter limiter);

struct LaunchStats {
  uint64_t grid_blocks = 0;
  uint32_t threads_per_block = 0;
  uint32_t warps_per_block = 0;
  bool block_multiple_of_warp = true;
  // Blocks per SM allowed by each resource alone.
  uint32_t blocks_limit_registers = 0;
  uint32_t blocks_limit_shared = 0;
  uint32_t blocks_limit_warps = 0;
  uint32_t blocks_limit_blocks = 0;
  uint32_t blocks_per_sm = 0;  // the minimum of the above
  OccupancyLimiter limiter = OccupancyLimiter::kUnspecified;
  double theoretical_occupancy_pct = 0;  // resident warps / max warps per SM, in percent
  double waves_per_sm = 0;               // grid blocks / (blocks_per_sm * sm_count)
  double wave_efficiency = 0;            // G / (ceil(G / (S b)) S b), in (0, 1]
};

struct LaunchStatsResult {
  std::optional<LaunchStats> stats;
  std::string missing;  // when stats is empty: which input was missing or invalid
};

LaunchStatsResult compute_launch_stats(const LaunchConfig& launch, const DeviceLimits& device);

// Adds the computed launch quantities to `metrics` under Nsight Compute's launch__* names, marked
// kDerived, unless a measured value is already present. Returns the stats used.
LaunchStatsResult add_launch_metrics(const KernelInput& kernel, MetricSet& metrics);

}  // namespace cutriage::triage
