// The Activity API side of the CUPTI platform: kernel, copy and memset execution records, handed
// to an ActivityObserver as plain collectors:: values. CUPTI types stay in activity_trace.cpp.
//
// CUPTI's buffer callbacks carry no user pointer, so there is one ActivityTrace per process
// (instance()). It is never destroyed: CUPTI may hand buffers back from its own atexit handler,
// after static destructors have run, and a buffer CUPTI still holds must stay allocated.
//
// Buffers: at most TraceOptions::max_buffers are in CUPTI's hands at once; a request beyond that
// is declined (null buffer), CUPTI drops the records it could not store and reports them through
// cuptiActivityGetNumDroppedRecords, which reaches the observer as ActivityBatch::dropped_records.
// The total memory is therefore bounded by max_buffers x buffer_bytes. Returned buffers go back
// to a small free pool, so a steady trace allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

class ActivityTrace {
 public:
  static ActivityTrace& instance();

  ActivityTrace(const ActivityTrace&) = delete;
  ActivityTrace& operator=(const ActivityTrace&) = delete;

  // Registers the buffer callbacks (once per process) and enables CONCURRENT_KERNEL, and with
  // options.copies MEMCPY, MEMSET and MEMCPY2 (peer copies; best effort). kInvalidArgument when
  // already started or the options are unusable; on a failing enable, the kinds enabled so far
  // are disabled again and the Status says which call failed.
  Status start(ActivityObserver* observer, const TraceOptions& options);
  // cuptiActivityFlushAll; forced also delivers records of work not finished yet. Never from a
  // CUPTI callback (CUPTI may deadlock), never from the observer.
  void flush(bool forced);
  // Disables the enabled kinds (paused) or enables them again; the observer stays attached. On a
  // failing enable, the kinds enabled again so far stay on and the Status names the call.
  Status set_paused(bool paused);
  // Disables the enabled kinds, flushes (forced) and detaches the observer: once stop returns,
  // the observer is not called again and may be destroyed. Safe to call when not started.
  void stop();

 private:
  ActivityTrace() = default;
  ~ActivityTrace() = default;

  // CUPTI's buffer callbacks (activity_trace.cpp) call the three functions below.
  friend struct ActivityTraceCallbacks;

  // A buffer for CUPTI, or null (and *size 0) when max_buffers are out already or memory is
  // short: CUPTI then drops records and counts them.
  uint8_t* take_buffer(size_t* size);
  void return_buffer(uint8_t* buffer, size_t size);
  // Translates the records of a completed buffer and hands them to the observer. `context` is
  // the CUcontext CUPTI passed (null since CUDA 6: buffers are global), spelled void* to keep
  // cuda.h out of this header.
  void deliver(void* context, uint32_t stream_id, uint8_t* buffer, size_t valid_size);

  // start/stop/flush against each other.
  std::mutex control_mutex_;
  bool callbacks_registered_ = false;  // guarded by control_mutex_
  std::vector<int> enabled_kinds_;     // CUpti_ActivityKind values; guarded by control_mutex_
  // The kinds in enabled_kinds_ that set_paused(true) disabled (all of them while paused);
  // guarded by control_mutex_.
  std::vector<int> paused_kinds_;

  // The buffer pool; guarded by pool_mutex_. Every buffer has buffer_bytes_ bytes, except ones
  // handed out under an earlier start's options, which are freed when they come back.
  std::mutex pool_mutex_;
  std::vector<uint8_t*> free_buffers_;
  size_t outstanding_ = 0;  // buffers CUPTI holds now
  size_t buffer_bytes_ = 0;
  size_t max_buffers_ = 0;

  // Deliveries hold delivery_mutex_ while calling the observer, and stop() clears observer_
  // under it: after stop() no delivery can still be inside the observer. Deliveries are
  // serialized by it too (CUPTI's worker thread and a flushing thread may complete buffers at
  // the same time); the translation into an ActivityBatch happens outside it.
  std::mutex delivery_mutex_;
  ActivityObserver* observer_ = nullptr;  // guarded by delivery_mutex_
};

}  // namespace cutriage::collectors
