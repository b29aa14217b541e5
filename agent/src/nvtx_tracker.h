// NVTX as CUPTI's callbacks report it: the ranges open on each application thread, the paths
// ("outer/inner") they form, the closed ranges waiting for the next trace chunk, and which
// launches were made inside which path, until the trace matches them with their executions.
//
// Threading: each application thread's open ranges are its own (thread-local, no lock); the path
// table, start/end ranges and closed ranges sit behind the tracker's mutex, a leaf lock. Launches
// inside a range are appended to the launching thread's own buffer under that buffer's
// (uncontended) lock, and the trace side drains every buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/wire/records.h"

namespace cutriage::agent {

class NvtxTracker {
 public:
  // `instance_id` tells the thread-local state of different agents apart.
  explicit NvtxTracker(uint64_t instance_id);

  void on_event(const collectors::NvtxEvent& event);
  // The calling thread launched `correlation_id`: remembered with its open NVTX path, if any.
  void note_launch(uint64_t correlation_id);
  // The path id of the ranges open on the calling thread; 0 = none.
  uint32_t current_path();
  // Whether the ranges open on the calling thread pass the include and exclude filters.
  bool allows(const KernelFilter& include, const KernelFilter& exclude);
  // Moves the launches noted so far into `into` (correlation id -> path id).
  void drain_launches(std::unordered_map<uint64_t, uint32_t>& into);
  // "outer/inner" for a path id; empty for 0 or an unknown id.
  [[nodiscard]] std::string path_text(uint32_t path) const;
  [[nodiscard]] std::vector<std::string> paths() const;  // by path id; 0 = ""
  // Up to `max` of the closed ranges for the next chunk; the rest are dropped (the trace's cap).
  std::vector<wire::NvtxRange> take_closed(size_t max);

 private:
  struct LaunchBuffer {
    std::mutex mutex;
    std::vector<std::pair<uint64_t, uint32_t>> items;  // correlation id, NVTX path id
  };
  struct ThreadState;
  ThreadState& thread_state();

  const uint64_t instance_id_;
  mutable std::mutex mutex_;
  std::vector<std::string> paths_{""};  // path id -> "outer/inner"; 0 = none
  std::unordered_map<std::string, uint32_t> path_ids_;
  std::vector<std::shared_ptr<LaunchBuffer>> buffers_;
  struct OpenRange {
    std::string name;
    std::string domain;
    uint64_t start_ns = 0;
    uint32_t thread_id = 0;
  };
  std::unordered_map<uint64_t, OpenRange> open_ranges_;  // start/end ranges by id
  std::vector<wire::NvtxRange> closed_;                  // not yet written
};

}  // namespace cutriage::agent
