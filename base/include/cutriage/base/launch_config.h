// The shape of a kernel launch: grid, block and cluster dimensions and the per-launch resources
// (registers, shared and local memory). The collectors fill it from CUPTI's callbacks and activity
// records, the tool from ncu captures and cutriage files; the triage engine computes occupancy and
// waves from it. Plain values, standard library only.
#pragma once

#include <cstdint>

namespace cutriage::base {

struct Dim3 {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
  [[nodiscard]] uint64_t count() const { return uint64_t{x} * y * z; }
  friend bool operator==(const Dim3& a, const Dim3& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
  friend bool operator!=(const Dim3& a, const Dim3& b) { return !(a == b); }
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  Dim3 cluster{0, 0, 0};  // all zero: not a cluster launch
  uint32_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;  // spill + stack, from the function attributes
  // Shared-memory carve-out the driver picked for this launch (bytes per SM); 0 = unknown, then
  // the device maximum is assumed.
  uint32_t shared_config_bytes_per_sm = 0;
};

}  // namespace cutriage::base
