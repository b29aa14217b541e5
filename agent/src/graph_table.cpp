#include "graph_table.h"

#include <iterator>

namespace cutriage::agent {
namespace {
// Clone chains are short (captured graph -> instantiated graph, a cudaGraphClone or two); the
// bound only guards against a cycle in ids gone wrong.
constexpr int kMaxCloneHops = 16;
}  // namespace

GraphTable::Node* GraphTable::node_locked(uint64_t id) {
  auto it = nodes_.find(id);
  if (it != nodes_.end()) return &it->second;
  if (nodes_.size() >= kMaxNodes) {
    ++dropped_;
    return nullptr;
  }
  return &nodes_.emplace(id, Node{}).first->second;
}

void GraphTable::on_event(const collectors::GraphEvent& e) {
  using Kind = collectors::GraphEvent::Kind;
  // The NVTX path belongs to the calling thread: read it before taking the lock.
  const uint32_t path = e.kind == Kind::kNodeCreated ? nvtx_.current_path() : 0;
  std::lock_guard<std::mutex> lock(mutex_);
  switch (e.kind) {
    case Kind::kNodeCreated:
      if (Node* n = node_locked(e.node_id)) {
        n->nvtx_path = path;
        n->captured = e.capture_correlation_id != 0;
      }
      break;
    case Kind::kNodeCloned:
      if (e.node_id == e.original_node_id) return;
      if (Node* n = node_locked(e.node_id)) n->cloned_from = e.original_node_id;
      break;
    case Kind::kExecCreated: ++execs_; break;
  }
}

GraphTable::Origin GraphTable::origin(uint64_t node_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Origin o;
  uint64_t id = node_id;
  for (int hop = 0; hop < kMaxCloneHops; ++hop) {
    auto it = nodes_.find(id);
    if (it == nodes_.end()) return o;  // unknown: created before the agent subscribed, or dropped
    if (it->second.cloned_from == 0) {
      o.known = true;
      o.created_node_id = id;
      o.nvtx_path = it->second.nvtx_path;
      o.captured = it->second.captured;
      return o;
    }
    id = it->second.cloned_from;
  }
  return o;
}

void GraphTable::note_launch(uint32_t exec_id, uint64_t correlation_id) {
  if (exec_id == 0 || correlation_id == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (graph_of_exec_.count(exec_id) != 0) return;
  if (pending_launches_.size() >= kMaxPendingLaunches) pending_launches_.clear();
  pending_launches_[correlation_id] = exec_id;
  any_pending_.store(true, std::memory_order_relaxed);
}

void GraphTable::note_execution(uint32_t graph_id, uint64_t correlation_id) {
  if (graph_id == 0 || !any_pending_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_launches_.empty() || exec_of_graph_.count(graph_id) != 0) return;
  auto it = pending_launches_.find(correlation_id);
  if (it == pending_launches_.end()) return;
  const uint32_t exec = it->second;
  exec_of_graph_[graph_id] = exec;
  graph_of_exec_[exec] = graph_id;
  // Every other pending launch of this exec is bridged now too.
  for (auto p = pending_launches_.begin(); p != pending_launches_.end();) {
    p = p->second == exec ? pending_launches_.erase(p) : std::next(p);
  }
  any_pending_.store(!pending_launches_.empty(), std::memory_order_relaxed);
}

uint32_t GraphTable::exec_of(uint32_t graph_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = exec_of_graph_.find(graph_id);
  return it == exec_of_graph_.end() ? 0 : it->second;
}

uint32_t GraphTable::graph_of(uint32_t exec_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = graph_of_exec_.find(exec_id);
  return it == graph_of_exec_.end() ? 0 : it->second;
}

uint64_t GraphTable::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

uint64_t GraphTable::execs_created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return execs_;
}

}  // namespace cutriage::agent
