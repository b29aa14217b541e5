#include "trace_graphs.h"

#include <algorithm>

#include "trace_lanes.h"

namespace cutriage::tools {

GraphLaunch& GraphLaunches::at(const GraphLaunchKey& key, uint64_t start, uint64_t end) {
  GraphLaunch& g = launches_[key];
  g.start = std::min(g.start, start);
  g.end = std::max(g.end, std::max(start, end));
  return g;
}

void GraphLaunches::add_kernel(const GraphLaunchKey& key, uint64_t start, uint64_t end, bool profiled) {
  GraphLaunch& g = at(key, start, end);
  g.profiled = g.profiled || profiled;
  ++g.kernels;
  g.kernel_ns += end > start ? end - start : 0;
}

void GraphLaunches::add_copy(const GraphLaunchKey& key, uint64_t start, uint64_t end) { ++at(key, start, end).copies; }

std::set<uint32_t> GraphLaunches::devices() const {
  std::set<uint32_t> out;
  for (const auto& [key, g] : launches_) out.insert(key.device);
  return out;
}

GraphLaunches::Placement GraphLaunches::place() const {
  Placement out;
  out.launches.reserve(launches_.size());
  for (const auto& [key, g] : launches_) out.launches.push_back({&key, &g, 0});
  std::stable_sort(out.launches.begin(), out.launches.end(),
                   [](const Placed& x, const Placed& y) { return x.launch->start < y.launch->start; });
  std::map<std::pair<uint32_t, uint32_t>, DisjointLanes> tracks;
  for (Placed& p : out.launches) {
    auto it = tracks.try_emplace({p.key->device, p.key->graph_id}, 0).first;
    p.lane = it->second.place(p.launch->start, p.launch->end);
  }
  for (const auto& [track, lanes] : tracks) out.lanes[track] = std::max(lanes.end_lane(), 1U);
  return out;
}

std::string GraphLaunches::track_name(uint32_t graph_id, uint32_t lane) {
  std::string name = "CUDA graph " + std::to_string(graph_id) + " (its launches)";
  if (lane > 0) name += " (concurrent " + std::to_string(lane + 1) + ")";
  return name;
}

std::string GraphLaunches::slice_fields(const GraphLaunchKey& key, const GraphLaunch& g) {
  std::string b = ",\"name\":\"graph " + std::to_string(key.graph_id) + "\",\"cat\":\"graph\",\"args\":{\"graph_id\":" +
                  std::to_string(key.graph_id) + ",\"correlation_id\":" + std::to_string(key.correlation) +
                  ",\"kernels\":" + std::to_string(g.kernels) + ",\"copies\":" + std::to_string(g.copies) +
                  ",\"span_ns\":" + std::to_string(g.end > g.start ? g.end - g.start : 0) +
                  ",\"kernel_ns\":" + std::to_string(g.kernel_ns);
  if (g.profiled) b += ",\"profiled\":true";
  b += ",\"note\":\"one launch of the graph as one workload: from its first node's start to its last node's "
       "end; kernel_ns sums its kernel nodes' durations (of a profiled launch, with the profiler's cost)\"}}";
  return b;
}

}  // namespace cutriage::tools
