#include "graph_table.h"

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

uint64_t GraphTable::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

uint64_t GraphTable::execs_created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return execs_;
}

}  // namespace cutriage::agent
