// What a device can hold: SM count, clocks, memory, and the occupancy limits and allocation
// granularities the launch arithmetic needs. The collectors read them from the driver, the tool
// from ncu's device attributes; the table of known chips fills in what an input leaves out.
// Plain values, standard library only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cutriage::base {

// Per-device limits needed for the occupancy and wave arithmetic. Zero means "unknown"; the launch
// calculator refuses to guess and reports which limit was missing.
struct DeviceLimits {
  std::string chip;  // "GH100"
  int cc_major = 0;
  int cc_minor = 0;
  uint32_t sm_count = 0;
  uint32_t warp_size = 32;
  uint32_t max_threads_per_sm = 0;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t registers_per_sm = 0;
  uint32_t max_registers_per_thread = 255;
  uint32_t register_alloc_unit = 256;     // registers, allocated per warp
  uint32_t shared_bytes_per_sm = 0;       // maximum carve-out
  uint32_t shared_bytes_per_block_optin = 0;
  uint32_t shared_alloc_unit = 128;       // bytes
  uint32_t reserved_shared_bytes_per_block = 0;  // 1 KiB on sm_80 and later
  double sm_clock_hz = 0;
  double memory_clock_hz = 0;
  uint64_t memory_bytes = 0;
  double dram_peak_bytes_per_second = 0;
};

// Known Hopper limits, for inputs that name the chip but not every limit (an ncu CSV without the
// device__attribute_* columns). Returns nullopt for chips the table does not know.
std::optional<DeviceLimits> known_device_limits(std::string_view chip);

}  // namespace cutriage::base
