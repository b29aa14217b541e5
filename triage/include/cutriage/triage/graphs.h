// Each CUDA graph as one workload, folded from its kernels' executions: the replays seen, the time
// from a replay's first node start to its last node end, how much of that none of its kernels ran,
// and its kernel families ranked by their time inside it. Pure bookkeeping: the agent feeds it the
// trace's graph kernels, the report and the exporters read the summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace cutriage::triage {

// One execution of a kernel node.
struct GraphKernel {
  uint32_t graph_id = 0;     // the id kernel records carry (the instantiated graph's); 0 = not a graph kernel
  uint64_t launch = 0;       // the graph launch it belongs to (its correlation id)
  uint64_t node_id = 0;      // the instantiated node's id
  uint64_t family = 0;       // the caller's family id
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct GraphFamilyTime {
  uint64_t family = 0;
  double total_ns = 0;
  uint64_t executions = 0;
  std::vector<uint64_t> node_ids;  // the nodes it ran as, ascending, at most kMaxNodeIdsPerFamily
};

struct GraphStats {
  uint32_t graph_id = 0;
  uint32_t exec_id = 0;        // the executable graph it runs as, when the caller knows it; 0 = unknown
  uint64_t replays = 0;        // graph launches with at least one kernel traced
  double span_ns = 0;          // sum over replays of (last node end - first node start)
  double kernel_busy_ns = 0;   // sum over replays of the union of its kernels' intervals
  uint64_t kernel_executions = 0;
  uint64_t kernel_nodes = 0;   // distinct kernel nodes seen (counted up to kMaxNodesPerGraph)
  std::vector<GraphFamilyTime> families;  // most time first
  [[nodiscard]] double idle_between_nodes_ns() const { return span_ns > kernel_busy_ns ? span_ns - kernel_busy_ns : 0; }
  [[nodiscard]] double mean_replay_ns() const { return replays > 0 ? span_ns / static_cast<double>(replays) : 0; }
};

class GraphAccumulator {
 public:
  // Bounds: a serving process instantiates graphs per batch size; beyond these the rest are
  // counted in untracked_executions() only.
  static constexpr size_t kMaxGraphs = 4096;
  static constexpr size_t kMaxNodesPerGraph = 65536;
  static constexpr size_t kMaxNodeIdsPerFamily = 8;
  // Replays of one graph kept open at once (their records may interleave across streams); the
  // oldest is closed when another starts.
  static constexpr size_t kOpenReplays = 4;

  void add(const GraphKernel& kernel);
  // Every graph, open replays included (closed on a copy: add() may go on), most kernel time first.
  [[nodiscard]] std::vector<GraphStats> summary() const;
  [[nodiscard]] uint64_t untracked_executions() const { return untracked_; }
  // Kernels that arrived under a launch id whose open replay had already run their node: the
  // launch id was given to more than one graph launch (a node runs once per launch). Each such
  // kernel starts a new replay, so repeated ids neither merge replays nor grow one without bound.
  [[nodiscard]] uint64_t repeated_launch_ids() const { return repeated_launch_ids_; }
  [[nodiscard]] bool empty() const { return graphs_.empty(); }
  // The latest closed replays' spans (first node start to last node end) of a graph, oldest
  // first, at most kRecentSpans: the unprofiled timings Decision 0 compares a profiled replay with.
  [[nodiscard]] std::vector<double> recent_spans(uint32_t graph_id) const;
  // The family's time in graph `graph_id` over the graph's kernel time (sum of its kernels'
  // durations), and how many other families ran in it; nullopt for an unknown graph or family.
  struct Share {
    double share = 0;
    uint32_t other_families = 0;
    double mean_replay_ns = 0;  // over the closed replays
  };
  [[nodiscard]] std::optional<Share> family_share(uint32_t graph_id, uint64_t family) const;
  static constexpr size_t kRecentSpans = 32;

 private:
  struct Replay {
    uint64_t first_start_ns = UINT64_MAX;
    uint64_t last_end_ns = 0;
    std::vector<std::pair<uint64_t, uint64_t>> intervals;
    std::set<uint64_t> nodes;  // the nodes that ran in it (0, unknown, is not kept)
  };
  struct Graph {
    GraphStats stats;
    std::map<uint64_t, GraphFamilyTime> families;
    std::set<uint64_t> nodes;
    std::map<uint64_t, Replay> open;  // by launch
    std::vector<double> recent_spans;  // ring of kRecentSpans, next write at recent_next
    size_t recent_next = 0;
    double kernel_ns = 0;  // sum of its kernels' durations
  };
  static void close(Graph& graph, const Replay& replay);

  std::map<uint32_t, Graph> graphs_;
  uint64_t untracked_ = 0;
  uint64_t repeated_launch_ids_ = 0;
};

}  // namespace cutriage::triage
