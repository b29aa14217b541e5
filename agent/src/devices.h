// What the agent asks the driver and CUPTI once and keeps: each device's facts (chip, limits,
// name) and one profiler host per chip. A failure is said once and remembered, so a device or
// chip that cannot be read is not asked again on every launch.
//
// Threading: one leaf mutex; the platform is called outside it (two threads may both ask for a
// device the first time; both answers are the same).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/triage/inputs.h"
#include "log.h"

namespace cutriage::agent {

class DeviceCatalog {
 public:
  DeviceCatalog(collectors::Platform& platform, Logger& log) : platform_(platform), log_(log) {}

  // The device's facts, asked once (nullopt when they cannot be read: said once).
  std::optional<collectors::DeviceInfo> info(uint32_t device);
  // What is known already, without asking (the limits are empty for an unknown device).
  [[nodiscard]] std::optional<collectors::DeviceInfo> known(uint32_t device) const;
  // Every device read so far, by ordinal.
  [[nodiscard]] std::map<uint32_t, collectors::DeviceInfo> all() const;
  // The chip's profiler host, made once; null with `error` set when it cannot be made.
  std::shared_ptr<collectors::ProfilerHost> host(const std::string& chip, std::string* error);

 private:
  collectors::Platform& platform_;
  Logger& log_;
  mutable std::mutex mutex_;
  std::map<uint32_t, collectors::DeviceInfo> devices_;
  std::set<uint32_t> devices_failed_;
  std::map<std::string, std::shared_ptr<collectors::ProfilerHost>> hosts_;  // by chip
  std::set<std::string> hosts_failed_;
};

// How each kernel was built (line table, -G), read from the module cubins as they load, for
// Decision 0 and what Decision 6 can say. Kept as 8 bytes per kernel name hash: a framework loads
// tens of thousands of kernels. A hash collision could only swap two kernels' build notes. Leaf
// mutex.
class KernelBuilds {
 public:
  void add(const std::vector<std::string>& kernels, bool line_info, bool debug_build);
  // Sets the input's build notes when the kernel's module was seen.
  void fill(const std::string& mangled, triage::KernelInput& input) const;

 private:
  static constexpr uint8_t kLineInfo = 1;
  static constexpr uint8_t kDebug = 2;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, uint8_t> builds_;  // hash of the mangled name -> bits
};

// The input's identity, launch and device facts for a launch of `family`.
struct Family;
void fill_launch_input(const Family& family, const collectors::LaunchEvent& event, uint64_t launch_index,
                       const DeviceCatalog& devices, triage::KernelInput& input);

}  // namespace cutriage::agent
