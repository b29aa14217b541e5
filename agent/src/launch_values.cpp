#include "launch_values.h"

namespace cutriage::agent {

std::string unit_for(const std::string& name) {
  if (name.find("pct") != std::string::npos) return "%";
  if (name.find("time_duration") != std::string::npos) return "nsecond";
  if (name.find(".per_second") != std::string::npos) {
    return name.find("bytes") != std::string::npos ? "byte/second" : "/second";
  }
  if (name.find("bytes") != std::string::npos) return "byte";
  if (name.find("sectors") != std::string::npos) return "sector";
  if (name.find("cycles") != std::string::npos) return "cycle";
  return "";
}

triage::AssembledLaunch assembled_launch(const collectors::LaunchEvent& event, uint64_t launch_index,
                                         const std::vector<collectors::MetricReading>* readings) {
  triage::AssembledLaunch a;
  a.launch_index = launch_index;
  if (event.launch) {
    a.grid = event.launch->grid;
    a.block = event.launch->block;
    a.dynamic_shared_bytes = event.launch->dynamic_shared_bytes;
  }
  if (readings != nullptr) {
    for (const collectors::MetricReading& r : *readings) {
      if (r.name == "gpu__time_duration.sum") a.duration_ns = r.value;
    }
    a.metrics = static_cast<uint32_t>(readings->size());
  }
  return a;
}

}  // namespace cutriage::agent
