#include "cutriage/base/device_limits.h"

namespace cutriage::base {

std::optional<DeviceLimits> known_device_limits(std::string_view chip) {
  if (chip == "GH100" || chip == "gh100") {
    DeviceLimits d;
    d.chip = "GH100";
    d.cc_major = 9;
    d.cc_minor = 0;
    // 132 SMs is the H100 SXM / H200 SXM configuration. Other SKUs differ (H100 PCIe: 114); inputs
    // that know the real count (device attributes, launch__sm_count) override this value.
    d.sm_count = 132;
    d.warp_size = 32;
    d.max_threads_per_sm = 2048;
    d.max_warps_per_sm = 64;
    d.max_blocks_per_sm = 32;
    d.max_threads_per_block = 1024;
    d.registers_per_sm = 65536;
    d.max_registers_per_thread = 255;
    d.register_alloc_unit = 256;
    d.shared_bytes_per_sm = 233472;            // 228 KiB
    d.shared_bytes_per_block_optin = 232448;   // 227 KiB
    d.shared_alloc_unit = 128;
    d.reserved_shared_bytes_per_block = 1024;  // driver-reserved, sm_80 and later
    return d;
  }
  return std::nullopt;
}

}  // namespace cutriage::base
