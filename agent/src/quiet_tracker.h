// Whether a family's earlier launch has certainly finished, from the launches and the waits the
// callbacks see. The trace needs it: with one global activity buffer queue CUPTI hands a buffer
// back only when it is full unless the flush is forced, and a forced flush loses the record of a
// kernel still running (cupti-facts.md). So the launch-time flush that brings a family's first
// duration in for ranking is forced only when that family's previous launch ended before a wait
// the application made.
//
// Launches are numbered from 1 in callback order. A wait (cuCtxSynchronize, cuStreamSynchronize,
// cuEventSynchronize) covers every launch numbered before its entry once it returns: a context
// wait always, a stream or event wait only while every launch so far went to one stream of one
// context (otherwise the waited stream may not be the launch's). Lock-free; any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace cutriage::agent {

class QuietTracker {
 public:
  // A launch's entry: its number. `stream_key` names its context and stream.
  uint64_t launch(uint64_t stream_key) {
    // Reads first: the launch path of every application thread passes here, so the shared line
    // is written only on the first launch and on the first launch to a second stream.
    uint64_t first = stream_.load(std::memory_order_relaxed);
    if (first == kNoStream && stream_.compare_exchange_strong(first, stream_key, std::memory_order_relaxed)) {
      first = stream_key;
    }
    if (first != stream_key && !several_streams_.load(std::memory_order_relaxed)) {
      several_streams_.store(true, std::memory_order_relaxed);
    }
    return launches_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  // A wait's entry and exit, on the waiting thread.
  void wait_enter() { entry_ = launches_.load(std::memory_order_acquire); }
  void wait_exit(bool whole_context) {
    if (!whole_context && several_streams_.load(std::memory_order_relaxed)) return;
    const uint64_t through = entry_;
    uint64_t seen = waited_through_.load(std::memory_order_relaxed);
    while (seen < through && !waited_through_.compare_exchange_weak(seen, through, std::memory_order_acq_rel)) {
    }
  }
  // Whether launch number `n` had finished when a wait returned (0: no launch: true).
  [[nodiscard]] bool finished(uint64_t n) const { return waited_through_.load(std::memory_order_acquire) >= n; }

 private:
  static constexpr uint64_t kNoStream = ~uint64_t{0};
  std::atomic<uint64_t> launches_{0};
  std::atomic<uint64_t> waited_through_{0};
  std::atomic<uint64_t> stream_{kNoStream};
  std::atomic<bool> several_streams_{false};
  static thread_local uint64_t entry_;
};

inline thread_local uint64_t QuietTracker::entry_ = 0;

}  // namespace cutriage::agent
