// `cutriage trace`'s CUDA graph tracks (trace_export.h): each graph launch as one workload, folded
// from its nodes' executions during the export's first pass, placed on its graph's track (lanes
// where launches of one graph overlapped) and written as one slice. Holds a few dozen bytes per
// graph launch, the only per-launch state the export keeps.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cutriage::tools {

struct GraphLaunchKey {
  uint32_t device = 0;
  uint32_t graph_id = 0;
  uint64_t correlation = 0;  // the cuGraphLaunch's
  auto operator<=>(const GraphLaunchKey&) const = default;
};

// From its first node's start to its last node's end (kernels and memsets with the launch's
// correlation id).
struct GraphLaunch {
  uint64_t start = std::numeric_limits<uint64_t>::max();
  uint64_t end = 0;
  uint64_t kernels = 0;
  uint64_t copies = 0;
  uint64_t kernel_ns = 0;  // the nodes' durations summed (nodes that ran at once count twice)
  bool profiled = false;   // a launch the agent collected counters over (its nodes marked replayed)
};

class GraphLaunches {
 public:
  void add_kernel(const GraphLaunchKey& key, uint64_t start, uint64_t end, bool profiled);
  void add_copy(const GraphLaunchKey& key, uint64_t start, uint64_t end);
  [[nodiscard]] std::set<uint32_t> devices() const;

  // The launches in start order, each on a lane of its (device, graph) track.
  struct Placed {
    const GraphLaunchKey* key = nullptr;
    const GraphLaunch* launch = nullptr;
    uint32_t lane = 0;
  };
  struct Placement {
    std::vector<Placed> launches;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> lanes;  // (device, graph) -> lanes used (>= 1)
  };
  [[nodiscard]] Placement place() const;

  // A track's name: "CUDA graph 2 (its launches)", "... (concurrent 2)" for lane 1.
  static std::string track_name(uint32_t graph_id, uint32_t lane);
  // What follows a slice's "ph", "ts", "dur", "pid" and "tid": its name, category and args.
  static std::string slice_fields(const GraphLaunchKey& key, const GraphLaunch& launch);

 private:
  GraphLaunch& at(const GraphLaunchKey& key, uint64_t start, uint64_t end);
  std::map<GraphLaunchKey, GraphLaunch> launches_;
};

}  // namespace cutriage::tools
