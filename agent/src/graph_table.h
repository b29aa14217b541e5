// CUDA graph structure from the platform's graph events: for each node, the node it was cloned
// from (instantiation clones the captured graph, and kernel records name the clones), and for the
// nodes the application created, the NVTX path open on the creating thread (a stream capture
// creates them inside the captured launch's callback, so that is the path the op ran under).
// The trace attributes graph kernels through origin().
//
// Threading: one leaf mutex. on_event comes on the application's threads (inside CUDA calls that
// build graphs, never a launch's hot path), origin() on the trace's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "cutriage/collectors/platform.h"
#include "nvtx_tracker.h"

namespace cutriage::agent {

class GraphTable {
 public:
  // Nodes remembered at most; a serving process with one graph per batch size has a few hundred
  // thousand. Beyond it new nodes are counted in dropped() and attributed to nothing.
  static constexpr size_t kMaxNodes = size_t{1} << 18;

  explicit GraphTable(NvtxTracker& nvtx) : nvtx_(nvtx) {}

  void on_event(const collectors::GraphEvent& event);

  struct Origin {
    bool known = false;           // the node's creation was seen
    uint64_t created_node_id = 0; // the node the application created (itself when not a clone)
    uint32_t nvtx_path = 0;       // open on the creating thread; 0 = none
    bool captured = false;        // created by capturing a kernel launch
  };
  // Follows clones back to the node the application created.
  [[nodiscard]] Origin origin(uint64_t node_id) const;
  // The bridge between the executable graph a launch names (LaunchEvent::graph_exec_id) and the
  // graph id its kernels' records carry (another numbering): the launch's correlation id is on
  // both. note_launch from the launch callback (the few launches of an exec not bridged yet),
  // note_execution from the trace for each graph kernel.
  void note_launch(uint32_t exec_id, uint64_t correlation_id);
  void note_execution(uint32_t graph_id, uint64_t correlation_id);
  [[nodiscard]] uint32_t exec_of(uint32_t graph_id) const;  // 0 = not bridged
  [[nodiscard]] uint32_t graph_of(uint32_t exec_id) const;  // 0 = not bridged
  // Launches waiting for their records to bridge them; beyond it the oldest are forgotten (the
  // exec's next noted launch bridges it).
  static constexpr size_t kMaxPendingLaunches = 1024;
  [[nodiscard]] uint64_t dropped() const;
  [[nodiscard]] uint64_t execs_created() const;

 private:
  struct Node {
    uint64_t cloned_from = 0;  // 0 = created by the application
    uint32_t nvtx_path = 0;
    bool captured = false;
  };

  // The entry of node `id`, made when new; nullptr (and counted in dropped_) beyond kMaxNodes.
  Node* node_locked(uint64_t id);

  NvtxTracker& nvtx_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> pending_launches_;  // correlation id -> exec id
  std::atomic<bool> any_pending_{false};  // the trace's check, without the lock
  std::unordered_map<uint32_t, uint32_t> exec_of_graph_;
  std::unordered_map<uint32_t, uint32_t> graph_of_exec_;
  uint64_t dropped_ = 0;
  uint64_t execs_ = 0;
};

}  // namespace cutriage::agent
