// Whether nothing the application launched is still running, from the launches and the waits the
// callbacks see. The trace needs it: with one global activity buffer queue CUPTI hands a buffer
// back only when it is full unless the flush is forced, and a forced flush loses the record of a
// kernel still running (cupti-facts.md). So the flush that brings the first durations in for
// ranking is forced only at the exit of a wait that left nothing in flight.
//
// Launches are numbered from 1 in callback order. A wait (cuCtxSynchronize, cuStreamSynchronize,
// cuEventSynchronize) covers every launch numbered before its entry once it returns: a context
// wait while every launch so far went to one context, a stream or event wait while every launch
// went to one stream of one context (otherwise the waited stream may not be the launch's). The
// wait leaves nothing in flight when it covers and no launch entered while it waited. A launch on
// another thread racing with the flush that follows is the one case left: it can still lose its
// record. Lock-free; any thread. Copies are not counted (a copy on another stream still running at
// a forced flush loses its record).
#pragma once

#include <atomic>
#include <cstdint>

namespace cutriage::agent {

class QuietTracker {
 public:
  // A launch's entry. `context_key` names its context, `stream_key` its context and stream.
  void launch(uint64_t context_key, uint64_t stream_key) {
    note_first(context_, several_contexts_, context_key);
    note_first(stream_, several_streams_, stream_key);
    launches_.fetch_add(1, std::memory_order_acq_rel);
  }
  // A wait's entry and exit, on the waiting thread. The exit says whether the wait left nothing
  // in flight: it covered every launch made before it, and none entered meanwhile.
  void wait_enter() { entry_ = launches_.load(std::memory_order_acquire); }
  [[nodiscard]] bool wait_exit(bool whole_context) const {
    const bool covers = whole_context ? !several_contexts_.load(std::memory_order_relaxed)
                                      : !several_streams_.load(std::memory_order_relaxed);
    return covers && launches_.load(std::memory_order_acquire) == entry_;
  }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  // Reads first: the launch path of every application thread passes here, so the shared lines are
  // written only on the first launch and on the first launch elsewhere.
  static void note_first(std::atomic<uint64_t>& first_key, std::atomic<bool>& several, uint64_t key) {
    uint64_t first = first_key.load(std::memory_order_relaxed);
    if (first == kNone && first_key.compare_exchange_strong(first, key, std::memory_order_relaxed)) first = key;
    if (first != key && !several.load(std::memory_order_relaxed)) several.store(true, std::memory_order_relaxed);
  }
  std::atomic<uint64_t> launches_{0};
  std::atomic<uint64_t> context_{kNone};
  std::atomic<uint64_t> stream_{kNone};
  std::atomic<bool> several_contexts_{false};
  std::atomic<bool> several_streams_{false};
  static thread_local uint64_t entry_;
};

inline thread_local uint64_t QuietTracker::entry_ = 0;

}  // namespace cutriage::agent
