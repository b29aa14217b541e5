#include "devices.h"

#include "family.h"

namespace cutriage::agent {

std::optional<collectors::DeviceInfo> DeviceCatalog::info(uint32_t device) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = devices_.find(device); it != devices_.end()) return it->second;
    if (devices_failed_.count(device)) return std::nullopt;
  }
  collectors::Result<collectors::DeviceInfo> r = platform_.device_info(device);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!r.is_ok()) {
    devices_failed_.insert(device);
    log_.log_once(LogLevel::kWarn, "device-" + std::to_string(device),
                  "cannot read the limits of device " + std::to_string(device) + " (" + r.status().message() +
                      "); occupancy and waves will be missing");
    return std::nullopt;
  }
  devices_[device] = r.value();
  return r.value();
}

std::optional<collectors::DeviceInfo> DeviceCatalog::known(uint32_t device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = devices_.find(device); it != devices_.end()) return it->second;
  return std::nullopt;
}

std::map<uint32_t, collectors::DeviceInfo> DeviceCatalog::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return devices_;
}

std::shared_ptr<collectors::ProfilerHost> DeviceCatalog::host(const std::string& chip, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = hosts_.find(chip); it != hosts_.end()) return it->second;
    if (hosts_failed_.count(chip)) {
      *error = "the profiler host for " + chip + " could not be created";
      return nullptr;
    }
  }
  collectors::Result<std::unique_ptr<collectors::ProfilerHost>> r = platform_.make_profiler_host(chip);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!r.is_ok()) {
    hosts_failed_.insert(chip);
    *error = r.status().message();
    return nullptr;
  }
  std::shared_ptr<collectors::ProfilerHost> host = std::move(r).value();
  hosts_[chip] = host;
  return host;
}

void KernelBuilds::add(const std::vector<std::string>& kernels, bool line_info, bool debug_build) {
  const auto flags = static_cast<uint8_t>((line_info ? kLineInfo : 0) | (debug_build ? kDebug : 0));
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& kernel : kernels) builds_[std::hash<std::string>()(kernel)] = flags;
}

void KernelBuilds::fill(const std::string& mangled, triage::KernelInput& input) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = builds_.find(std::hash<std::string>()(mangled));
  if (it == builds_.end()) return;  // module not seen (loaded before the agent, or no cubin)
  input.collection.has_line_info = (it->second & kLineInfo) != 0;
  input.collection.debug_build = (it->second & kDebug) != 0;
}

void fill_launch_input(const Family& family, const collectors::LaunchEvent& event, uint64_t launch_index,
                       const DeviceCatalog& devices, triage::KernelInput& input) {
  input.mangled_name = family.mangled;
  input.demangled_name = family.names->demangled;
  input.function_name = family.names->function;
  input.device = event.device;
  input.launch_index = launch_index;
  input.launch = event.launch;
  if (std::optional<collectors::DeviceInfo> d = devices.known(event.device)) input.device_limits = d->limits;
}

}  // namespace cutriage::agent
