// Lanes of the `cutriage trace` output (trace_export.h): a track whose events overlap is drawn
// as several threads, each holding events that Perfetto can show. A GPU track's lane holds events
// that never overlap (a kernel drawn inside another would read as its child); an NVTX thread's
// lane holds ranges that nest (each inside the range open around it, or after it).
//
// Both place events one at a time in the order they come, which the export makes start order
// (its window sorts them). Either stays valid for an event that comes late (an earlier start than
// events already placed, from more than a window out of place): it is put on a lane where it
// neither overlaps nor crosses what is there, at worst a new one.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace cutriage::tools {

// NVTX ranges crossing each other go to further lanes; past this many, to lanes that hold no
// overlap at all (so the cost stays O(log lanes) an event however many cross).
constexpr uint32_t kNestedLanes = 64;

// Lanes whose events never overlap: each event takes the free lane that freed up first, or a new
// one. O(log lanes) an event, however many run at once. A lane's free_at is the end of its last
// event, which only grows (an event is placed only at or after it): every event of the lane ends
// by then, so a late event never lands on one it overlaps.
class DisjointLanes {
 public:
  explicit DisjointLanes(uint32_t first_lane) : next_(first_lane) {}
  uint32_t place(uint64_t start, uint64_t end) {
    uint32_t lane = 0;
    if (!free_at_.empty() && free_at_.top().first <= start) {
      lane = free_at_.top().second;
      free_at_.pop();
    } else {
      lane = next_++;
    }
    free_at_.emplace(end, lane);
    return lane;
  }
  [[nodiscard]] uint32_t end_lane() const { return next_; }

 private:
  using Slot = std::pair<uint64_t, uint32_t>;  // (end of its last event, lane)
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_at_;
  uint32_t next_;
};

// NVTX lanes: events in one lane nest (each inside the range open around it, or after it).
// Events come in start order (the window sorts them); one that comes later than a lane's latest
// start (more than a window out of place) is not put in that lane, whose closed ranges are gone,
// but in one it fits, or past kNestedLanes into a lane without overlap.
class NestedLanes {
 public:
  uint32_t place(uint64_t start, uint64_t end) {
    uint32_t lane = 0;
    for (; lane < lanes_.size(); ++lane) {
      Lane& l = lanes_[lane];
      if (start < l.last_start) continue;
      // Ranges that ended by now stay closed for every later event of this lane.
      while (!l.open.empty() && l.open.back() <= start) l.open.pop_back();
      if (l.open.empty() || l.open.back() >= end) break;
    }
    if (lane == lanes_.size() && lanes_.size() == kNestedLanes) return overflow_.place(start, end);
    if (lane == lanes_.size()) lanes_.emplace_back();
    lanes_[lane].open.push_back(end);
    lanes_[lane].last_start = start;
    return lane;
  }
  [[nodiscard]] uint32_t end_lane() const {
    return overflow_.end_lane() > kNestedLanes ? overflow_.end_lane() : static_cast<uint32_t>(lanes_.size());
  }

 private:
  struct Lane {
    std::vector<uint64_t> open;  // end times of the ranges open, innermost last
    uint64_t last_start = 0;
  };
  std::vector<Lane> lanes_;
  DisjointLanes overflow_{kNestedLanes};
};

}  // namespace cutriage::tools
