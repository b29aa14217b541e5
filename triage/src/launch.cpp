// Launch arithmetic: theoretical occupancy, its limiter, waves per SM and wave efficiency, with the
// hardware's allocation granularities (the same model as the CUDA occupancy calculator).
//
// Model (compute capability 7.0 and later; every SM has 4 sub-partitions):
//   warps per block      W_b = ceil(T_b / 32)
//   registers            allocated per warp: R_w = roundup(R_t * 32, register_alloc_unit); each of
//                        the 4 sub-partitions holds floor((R_SM / 4) / R_w) warps, so the SM holds
//                        4x that; blocks = floor(warps / W_b). A block whose warps (rounded up to a
//                        multiple of 4) need more than R_SM registers cannot launch.
//   shared memory        S_b = roundup(static + dynamic + reserved, shared_alloc_unit);
//                        blocks = floor(carve-out / S_b), carve-out = shared_config_bytes_per_sm or
//                        else the device maximum. A block with no shared memory of its own is never
//                        shared-limited (its limit is reported as the block-slot limit).
//   warp slots           blocks = floor(max_warps_per_sm / W_b)
//   block slots          blocks = max_blocks_per_sm
//   blocks per SM        b = the minimum of the four
//   occupancy            b * W_b / max_warps_per_sm
//   waves per SM         G / (b * S);  wave efficiency  G / (ceil(G / (S b)) S b)
//
// Limiter on ties: when several resources give the same minimum, the report names the first of
// warp slots, block slots, registers, shared memory. The fixed slot limits come first because when
// one of them binds, relieving registers or shared memory alone would not add a block.
//
// Cluster launches are computed as plain launches (cluster scheduling constraints are not modeled).
#include "cutriage/triage/launch.h"

#include "engine_limits.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace cutriage::triage {

namespace {

constexpr uint32_t kSubPartitions = 4;

uint64_t round_up(uint64_t value, uint64_t unit) {
  if (unit == 0) return value;
  return (value + unit - 1) / unit * unit;
}

LaunchStatsResult fail(std::string why) { return LaunchStatsResult{std::nullopt, std::move(why)}; }

}  // namespace

namespace detail {

DeviceLimits complete_device_limits(const DeviceLimits& limits) {
  std::optional<DeviceLimits> known = known_device_limits(limits.chip);
  if (!known) return limits;
  DeviceLimits out = limits;
  auto fill = [](auto& field, auto value) {
    if (field == 0) field = value;
  };
  fill(out.cc_major, known->cc_major);
  fill(out.cc_minor, known->cc_minor);
  fill(out.sm_count, known->sm_count);
  fill(out.warp_size, known->warp_size);
  fill(out.max_threads_per_sm, known->max_threads_per_sm);
  fill(out.max_warps_per_sm, known->max_warps_per_sm);
  fill(out.max_blocks_per_sm, known->max_blocks_per_sm);
  fill(out.max_threads_per_block, known->max_threads_per_block);
  fill(out.registers_per_sm, known->registers_per_sm);
  fill(out.max_registers_per_thread, known->max_registers_per_thread);
  fill(out.register_alloc_unit, known->register_alloc_unit);
  fill(out.shared_bytes_per_sm, known->shared_bytes_per_sm);
  fill(out.shared_bytes_per_block_optin, known->shared_bytes_per_block_optin);
  fill(out.shared_alloc_unit, known->shared_alloc_unit);
  fill(out.reserved_shared_bytes_per_block, known->reserved_shared_bytes_per_block);
  return out;
}

std::optional<DeviceLimits> device_limits_of(const KernelInput& kernel) {
  if (!kernel.device_limits) return std::nullopt;
  return complete_device_limits(*kernel.device_limits);
}

}  // namespace detail

std::string_view to_string(OccupancyLimiter limiter) {
  switch (limiter) {
    case OccupancyLimiter::kUnspecified: return "unspecified";
    case OccupancyLimiter::kRegisters: return "registers";
    case OccupancyLimiter::kSharedMemory: return "shared_memory";
    case OccupancyLimiter::kBlockSlots: return "block_slots";
    case OccupancyLimiter::kWarpSlots: return "warp_slots";
  }
  return "unknown";
}

LaunchStatsResult compute_launch_stats(const LaunchConfig& launch, const DeviceLimits& device) {
  if (device.sm_count == 0) return fail("device sm_count unknown");
  if (device.max_warps_per_sm == 0) return fail("device max_warps_per_sm unknown");
  if (device.max_blocks_per_sm == 0) return fail("device max_blocks_per_sm unknown");
  if (device.registers_per_sm == 0) return fail("device registers_per_sm unknown");
  if (device.shared_bytes_per_sm == 0) return fail("device shared_bytes_per_sm unknown");
  const uint32_t warp = device.warp_size == 0 ? 32 : device.warp_size;

  const uint64_t grid = launch.grid.count();
  const uint64_t threads64 = launch.block.count();
  if (grid == 0) return fail("grid has no blocks");
  if (threads64 == 0) return fail("block has no threads");
  if (device.max_threads_per_block != 0 && threads64 > device.max_threads_per_block) {
    return fail("block of " + std::to_string(threads64) + " threads exceeds the device limit of " +
                std::to_string(device.max_threads_per_block));
  }
  if (threads64 > std::numeric_limits<uint32_t>::max()) return fail("block size out of range");
  if (launch.registers_per_thread == 0) return fail("registers_per_thread unknown");
  if (device.max_registers_per_thread != 0 &&
      launch.registers_per_thread > device.max_registers_per_thread) {
    return fail("registers_per_thread " + std::to_string(launch.registers_per_thread) +
                " exceeds the device limit of " + std::to_string(device.max_registers_per_thread));
  }

  LaunchStats s;
  s.grid_blocks = grid;
  s.threads_per_block = static_cast<uint32_t>(threads64);
  s.warps_per_block = static_cast<uint32_t>((threads64 + warp - 1) / warp);
  s.block_multiple_of_warp = threads64 % warp == 0;

  // Registers, per warp and per sub-partition.
  const uint64_t regs_per_warp =
      round_up(uint64_t{launch.registers_per_thread} * warp, device.register_alloc_unit);
  const uint64_t regs_per_block = round_up(s.warps_per_block, kSubPartitions) * regs_per_warp;
  if (regs_per_block > device.registers_per_sm) {
    return fail("block needs " + std::to_string(regs_per_block) +
                " registers, more than the SM's " + std::to_string(device.registers_per_sm));
  }
  const uint64_t warps_by_regs =
      (device.registers_per_sm / kSubPartitions) / regs_per_warp * kSubPartitions;
  s.blocks_limit_registers = static_cast<uint32_t>(warps_by_regs / s.warps_per_block);

  // Shared memory.
  const uint64_t own_shared = uint64_t{launch.static_shared_bytes} + launch.dynamic_shared_bytes;
  if (device.shared_bytes_per_block_optin != 0 && own_shared > device.shared_bytes_per_block_optin) {
    return fail("block uses " + std::to_string(own_shared) +
                " bytes of shared memory, more than the per-block limit of " +
                std::to_string(device.shared_bytes_per_block_optin));
  }
  const bool uses_shared = own_shared > 0;
  if (uses_shared) {
    const uint64_t per_block =
        round_up(own_shared + device.reserved_shared_bytes_per_block, device.shared_alloc_unit);
    const uint64_t carve_out = launch.shared_config_bytes_per_sm != 0
                                   ? launch.shared_config_bytes_per_sm
                                   : device.shared_bytes_per_sm;
    s.blocks_limit_shared = static_cast<uint32_t>(carve_out / per_block);
  } else {
    s.blocks_limit_shared = device.max_blocks_per_sm;
  }

  s.blocks_limit_warps = device.max_warps_per_sm / s.warps_per_block;
  if (device.max_threads_per_sm != 0) {
    s.blocks_limit_warps = std::min<uint32_t>(
        s.blocks_limit_warps, device.max_threads_per_sm / (s.warps_per_block * warp));
  }
  s.blocks_limit_blocks = device.max_blocks_per_sm;

  // Minimum and its limiter, ties resolved in the documented order.
  struct Candidate {
    uint32_t blocks;
    OccupancyLimiter limiter;
    bool eligible;
  };
  const std::array<Candidate, 4> order{{
      {s.blocks_limit_warps, OccupancyLimiter::kWarpSlots, true},
      {s.blocks_limit_blocks, OccupancyLimiter::kBlockSlots, true},
      {s.blocks_limit_registers, OccupancyLimiter::kRegisters, true},
      {s.blocks_limit_shared, OccupancyLimiter::kSharedMemory, uses_shared},
  }};
  s.blocks_per_sm = std::numeric_limits<uint32_t>::max();
  for (const Candidate& c : order) {
    if (c.eligible && c.blocks < s.blocks_per_sm) {
      s.blocks_per_sm = c.blocks;
      s.limiter = c.limiter;
    }
  }
  if (s.blocks_per_sm == 0) {
    return fail(std::string("no block fits on one SM (limited by ") +
                std::string(to_string(s.limiter)) + ")");
  }

  s.theoretical_occupancy_pct =
      100.0 * s.blocks_per_sm * s.warps_per_block / static_cast<double>(device.max_warps_per_sm);
  const double slots = static_cast<double>(s.blocks_per_sm) * device.sm_count;
  s.waves_per_sm = static_cast<double>(grid) / slots;
  s.wave_efficiency = static_cast<double>(grid) / (std::ceil(static_cast<double>(grid) / slots) * slots);
  return LaunchStatsResult{s, {}};
}

LaunchStatsResult add_launch_metrics(const KernelInput& kernel, MetricSet& metrics) {
  auto put = [&metrics](const char* name, double value, const char* unit) {
    if (!metrics.has(name)) metrics.set(name, value, unit, MetricSource::kDerived);
  };
  if (!kernel.launch) return fail("launch configuration unknown");
  const LaunchConfig& launch = *kernel.launch;

  // What the launch configuration alone gives.
  put("launch__grid_size", static_cast<double>(launch.grid.count()), "");
  put("launch__block_size", static_cast<double>(launch.block.count()), "");
  put("launch__thread_count", static_cast<double>(launch.grid.count() * launch.block.count()),
      "thread");
  if (launch.registers_per_thread != 0) {
    put("launch__registers_per_thread", launch.registers_per_thread, "register/thread");
  }

  if (!kernel.device_limits) return fail("device limits unknown");
  DeviceLimits device = detail::complete_device_limits(*kernel.device_limits);
  // An SM count measured by ncu (green contexts can restrict it) wins over the table.
  if (kernel.device_limits->sm_count == 0) {
    if (const MetricValue* v = metrics.find("launch__sm_count");
        v != nullptr && v->source == MetricSource::kMeasured && v->value >= 1 &&
        v->value <= std::numeric_limits<uint32_t>::max()) {  // else the conversion is UB
      device.sm_count = static_cast<uint32_t>(v->value);
    }
  }
  LaunchStatsResult r = compute_launch_stats(launch, device);
  if (!r.stats) return r;
  const LaunchStats& s = *r.stats;
  put("launch__sm_count", device.sm_count, "SM");
  put("launch__waves_per_multiprocessor", s.waves_per_sm, "");
  put("launch__occupancy_limit_registers", s.blocks_limit_registers, "block");
  put("launch__occupancy_limit_shared_mem", s.blocks_limit_shared, "block");
  put("launch__occupancy_limit_warps", s.blocks_limit_warps, "block");
  put("launch__occupancy_limit_blocks", s.blocks_limit_blocks, "block");
  put("sm__maximum_warps_per_active_cycle_pct", s.theoretical_occupancy_pct, "%");
  return r;
}

}  // namespace cutriage::triage
