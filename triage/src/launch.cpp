// STUB (engine owner replaces).
#include "cutriage/triage/launch.h"
namespace cutriage::triage {
std::optional<DeviceLimits> known_device_limits(std::string_view) { return std::nullopt; }
std::string_view to_string(OccupancyLimiter) { return "?"; }
LaunchStatsResult compute_launch_stats(const LaunchConfig&, const DeviceLimits&) { return {{}, "stub"}; }
LaunchStatsResult add_launch_metrics(const KernelInput&, MetricSet&) { return {{}, "stub"}; }
}  // namespace cutriage::triage
