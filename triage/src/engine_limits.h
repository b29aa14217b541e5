// Internal: device limits completed from the known-chip table (defined in launch.cpp).
#pragma once

#include <optional>

#include "cutriage/triage/inputs.h"

namespace cutriage::triage::detail {

// `limits` with every zero (unknown) field filled from known_device_limits(limits.chip) when the
// chip is in the table; unchanged otherwise.
DeviceLimits complete_device_limits(const DeviceLimits& limits);

// The kernel's device limits, completed; nullopt when the input names no device.
std::optional<DeviceLimits> device_limits_of(const KernelInput& kernel);

}  // namespace cutriage::triage::detail
