#include "activity_trace.h"

#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <new>
#include <string>

#include "cupti_check.h"

namespace cutriage::collectors {
namespace {

// CUPTI wants 8-byte aligned buffers; plain operator new[] already aligns to this.
static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 8, "activity buffers must be 8-byte aligned");

// Smaller buffers would hold only a few records each; CUPTI's samples use 8 MiB.
constexpr size_t kMinBufferBytes = size_t{64} << 10;
// Free buffers kept for reuse; more come back only after a burst, and are freed.
constexpr size_t kMaxPooledBuffers = 4;

struct KindName {
  CUpti_ActivityKind kind;
  const char* call;  // for the Status message
};
constexpr KindName kKernelKind{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                               "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)"};
constexpr KindName kCopyKinds[] = {
    {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)"},
};
// Peer-to-peer copies come only with this kind (not as MEMCPY records); optional: a failure to
// enable it costs the peer copies, not the trace.
constexpr KindName kPeerCopyKind{CUPTI_ACTIVITY_KIND_MEMCPY2,
                                 "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2)"};

uint32_t non_negative(int32_t v) { return v > 0 ? static_cast<uint32_t>(v) : 0U; }

base::CopyKind copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN: return base::CopyKind::kUnspecified;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return base::CopyKind::kHostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return base::CopyKind::kDeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return base::CopyKind::kDeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return base::CopyKind::kHostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return base::CopyKind::kPeer;
    default: return base::CopyKind::kOther;
  }
}

bool pageable(uint32_t memory_kind) { return memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE; }

// A record without timestamps (CUPTI could not collect them, e.g. short of device memory) would
// put an execution at time 0 and stretch every timeline to the epoch; it is counted as untimed.
// (Seen on the H200: the launches the range profiler replays come back this way.)
bool untimed(uint64_t start, uint64_t end) { return start == 0 || end == 0 || end < start; }

// CUPTI writes the newest record version it knows for a kind; CUDA 13.0's is Kernel10. Later
// versions append fields, so reading a newer CUPTI's records through this struct stays valid.
void add_kernel(const CUpti_ActivityKernel10& k, ActivityBatch& batch) {
  if (untimed(k.start, k.end)) {
    ++batch.untimed_records;
    return;
  }
  KernelActivity& a = batch.kernels.emplace_back();
  a.start_ns = k.start;
  a.end_ns = k.end;
  a.device = k.deviceId;
  a.context_id = k.contextId;
  a.stream_id = k.streamId;
  a.correlation_id = k.correlationId;
  a.grid = base::Dim3{non_negative(k.gridX), non_negative(k.gridY), non_negative(k.gridZ)};
  a.block = base::Dim3{non_negative(k.blockX), non_negative(k.blockY), non_negative(k.blockZ)};
  // As CUPTI reports it: 0s before compute capability 9.0 (no clusters).
  a.cluster = base::Dim3{k.clusterX, k.clusterY, k.clusterZ};
  a.registers_per_thread = k.registersPerThread;
  a.static_shared_bytes = non_negative(k.staticSharedMemory);
  a.dynamic_shared_bytes = non_negative(k.dynamicSharedMemory);
  a.local_bytes_per_thread = k.localMemoryPerThread;
  a.graph_id = k.graphId;
  a.graph_node_id = k.graphNodeId;
  a.device_launched = k.isDeviceLaunched != 0;
  // CUPTI keeps the name for the process's lifetime (shared by all records of the kernel); the
  // interface promises it only during delivery.
  if (k.name != nullptr) a.mangled_name = k.name;
}

// The fields every copy-like record shares (memcpy, peer memcpy, memset); the caller sets the
// kind and whether host memory was pageable, which the record types spell differently.
template <typename Record>
CopyActivity* add_copy_common(const Record& m, ActivityBatch& batch) {
  if (untimed(m.start, m.end)) {
    ++batch.untimed_records;
    return nullptr;
  }
  CopyActivity& c = batch.copies.emplace_back();
  c.start_ns = m.start;
  c.end_ns = m.end;
  c.device = m.deviceId;
  c.context_id = m.contextId;
  c.stream_id = m.streamId;
  c.correlation_id = m.correlationId;
  c.bytes = m.bytes;
  c.graph_id = m.graphId;
  return &c;
}

void add_memcpy(const CUpti_ActivityMemcpy6& m, ActivityBatch& batch) {
  if (CopyActivity* c = add_copy_common(m, batch)) {
    c->kind = copy_kind(m.copyKind);
    c->pageable = pageable(m.srcKind) || pageable(m.dstKind);
  }
}

void add_peer_copy(const CUpti_ActivityMemcpyPtoP4& m, ActivityBatch& batch) {
  if (CopyActivity* c = add_copy_common(m, batch)) {
    c->kind = base::CopyKind::kPeer;
    c->pageable = pageable(m.srcKind) || pageable(m.dstKind);
  }
}

void add_memset(const CUpti_ActivityMemset4& m, ActivityBatch& batch) {
  if (CopyActivity* c = add_copy_common(m, batch)) {
    c->kind = base::CopyKind::kMemset;
    c->pageable = pageable(m.memoryKind);
  }
}

}  // namespace

// CUPTI's buffer callbacks: nothing may escape into CUPTI.
struct ActivityTraceCallbacks {
  static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = nullptr;
    *size = 0;
    *max_records = 0;  // fill the buffer with as many records as fit
    try {
      *buffer = ActivityTrace::instance().take_buffer(size);
    } catch (...) {
      *buffer = nullptr;
      *size = 0;
    }
  }

  static void CUPTIAPI completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                 size_t valid_size) {
    if (buffer == nullptr) return;
    ActivityTrace& trace = ActivityTrace::instance();
    try {
      trace.deliver(context, stream_id, buffer, valid_size);
    } catch (...) {
      // The observer must not throw; a translation short of memory loses this buffer's records.
    }
    trace.return_buffer(buffer, size);
  }
};

ActivityTrace& ActivityTrace::instance() {
  // Deliberately leaked: see the header (CUPTI may complete buffers after static destructors).
  static ActivityTrace* const trace = new ActivityTrace();
  return *trace;
}

Status ActivityTrace::start(ActivityObserver* observer, const TraceOptions& options) {
  if (observer == nullptr) return {StatusCode::kInvalidArgument, "start_trace: null observer"};
  if (options.max_buffers == 0) return {StatusCode::kInvalidArgument, "start_trace: max_buffers must be >= 1"};
  if (options.buffer_bytes < kMinBufferBytes) {
    return {StatusCode::kInvalidArgument, "start_trace: buffer_bytes must be >= " + std::to_string(kMinBufferBytes)};
  }
  const std::lock_guard<std::mutex> control(control_mutex_);
  if (!enabled_kinds_.empty()) return {StatusCode::kInvalidArgument, "start_trace: the trace is already running"};
  {
    const std::lock_guard<std::mutex> pool(pool_mutex_);
    const size_t bytes = (options.buffer_bytes + 7) & ~size_t{7};
    if (bytes != buffer_bytes_) {
      for (uint8_t* b : free_buffers_) delete[] b;
      free_buffers_.clear();
    }
    buffer_bytes_ = bytes;
    max_buffers_ = options.max_buffers;
    // return_buffer then never allocates (it runs inside CUPTI's callback).
    free_buffers_.reserve(kMaxPooledBuffers);
  }
  {
    const std::lock_guard<std::mutex> delivery(delivery_mutex_);
    observer_ = observer;
  }
  Status status = Status::ok();
  if (!callbacks_registered_) {
    // One global buffer queue, as the delivery code assumes. CUPTI 13.0 defaults to buffers per
    // thread: every thread that ever launched holds a partly filled buffer until it fills, so a
    // process with many launching threads exhausts max_buffers and CUPTI drops records. Seen on
    // the H200: under torch.compile(mode="reduce-overhead") every graph kernel's record was
    // dropped (tests/data/graphs/). Must be set before the callbacks are registered (header).
    uint8_t per_thread = 0;
    size_t size = sizeof(per_thread);
    (void)CUTRIAGE_CUPTI_STATUS(
        cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread));
    status = CUTRIAGE_CUPTI_STATUS(
        cuptiActivityRegisterCallbacks(&ActivityTraceCallbacks::requested, &ActivityTraceCallbacks::completed));
    callbacks_registered_ = status.is_ok();
  }
  auto enable = [this](const KindName& k) {
    Status s = cupti_status(cuptiActivityEnable(k.kind), k.call);
    if (s.is_ok()) enabled_kinds_.push_back(k.kind);
    return s;
  };
  if (status.is_ok()) status = enable(kKernelKind);
  if (options.copies) {
    for (const KindName& k : kCopyKinds) {
      if (status.is_ok()) status = enable(k);
    }
    if (status.is_ok()) (void)enable(kPeerCopyKind);  // best effort, see kPeerCopyKind
  }
  if (!status.is_ok()) {
    for (int kind : enabled_kinds_) (void)cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind));
    enabled_kinds_.clear();
    const std::lock_guard<std::mutex> delivery(delivery_mutex_);
    observer_ = nullptr;
  }
  return status;
}

void ActivityTrace::flush(bool forced) {
  const std::lock_guard<std::mutex> control(control_mutex_);
  if (!callbacks_registered_) return;
  // Failures have nowhere to go: the records stay in CUPTI's buffers for the next flush.
  (void)CUTRIAGE_CUPTI_STATUS(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
}

Status ActivityTrace::set_paused(bool paused) {
  const std::lock_guard<std::mutex> control(control_mutex_);
  if (paused) {
    for (int kind : enabled_kinds_) {
      if (std::find(paused_kinds_.begin(), paused_kinds_.end(), kind) != paused_kinds_.end()) continue;
      // A failed disable leaves that kind tracing: costlier, never wrong.
      if (CUTRIAGE_CUPTI_STATUS(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind))).is_ok()) {
        paused_kinds_.push_back(kind);
      }
    }
    return Status::ok();
  }
  while (!paused_kinds_.empty()) {
    const int kind = paused_kinds_.back();
    Status s = CUTRIAGE_CUPTI_STATUS(cuptiActivityEnable(static_cast<CUpti_ActivityKind>(kind)));
    if (!s.is_ok()) return s;
    paused_kinds_.pop_back();
  }
  return Status::ok();
}

void ActivityTrace::stop() {
  const std::lock_guard<std::mutex> control(control_mutex_);
  for (int kind : enabled_kinds_) {
    if (std::find(paused_kinds_.begin(), paused_kinds_.end(), kind) != paused_kinds_.end()) continue;
    (void)CUTRIAGE_CUPTI_STATUS(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(kind)));
  }
  const bool was_running = !enabled_kinds_.empty();
  enabled_kinds_.clear();
  paused_kinds_.clear();
  // Delivers what CUPTI still holds to the observer (completions run on this thread or CUPTI's
  // worker, and take delivery_mutex_, never control_mutex_).
  if (was_running && callbacks_registered_) {
    (void)CUTRIAGE_CUPTI_STATUS(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  }
  const std::lock_guard<std::mutex> delivery(delivery_mutex_);
  observer_ = nullptr;
}

uint8_t* ActivityTrace::take_buffer(size_t* size) {
  *size = 0;
  const std::lock_guard<std::mutex> pool(pool_mutex_);
  if (outstanding_ >= max_buffers_ || buffer_bytes_ == 0) return nullptr;
  uint8_t* buffer = nullptr;
  if (!free_buffers_.empty()) {
    buffer = free_buffers_.back();
    free_buffers_.pop_back();
  } else {
    buffer = new (std::nothrow) uint8_t[buffer_bytes_];
    if (buffer == nullptr) return nullptr;
  }
  ++outstanding_;
  *size = buffer_bytes_;
  return buffer;
}

void ActivityTrace::return_buffer(uint8_t* buffer, size_t size) {
  const std::lock_guard<std::mutex> pool(pool_mutex_);
  if (outstanding_ > 0) --outstanding_;
  // capacity() >= kMaxPooledBuffers (reserved in start): push_back cannot allocate here.
  if (size == buffer_bytes_ && free_buffers_.size() < kMaxPooledBuffers &&
      free_buffers_.size() < free_buffers_.capacity()) {
    free_buffers_.push_back(buffer);
  } else {
    delete[] buffer;
  }
}

void ActivityTrace::deliver(void* context, uint32_t stream_id, uint8_t* buffer, size_t valid_size) {
  // One scratch batch per delivering thread (CUPTI's worker, flushing threads): its vectors keep
  // their capacity from one buffer to the next.
  thread_local ActivityBatch batch;
  batch.kernels.clear();
  batch.copies.clear();
  batch.dropped_records = 0;
  batch.untimed_records = 0;
  CUpti_Activity* record = nullptr;
  while (valid_size > 0) {
    // CUPTI_ERROR_MAX_LIMIT_REACHED ends the buffer; CUPTI_ERROR_INVALID_KIND means an
    // incomplete record, after which nothing is readable: either way, stop here.
    if (cuptiActivityGetNextRecord(buffer, valid_size, &record) != CUPTI_SUCCESS) break;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        add_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record), batch);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        add_memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record), batch);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        add_peer_copy(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record), batch);
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        add_memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record), batch);
        break;
      default:
        break;  // kinds nobody enabled here (another part of the agent, later)
    }
  }
  // Since CUDA 6 buffers are global and CUPTI passes a null context: this reads the global count,
  // which CUPTI resets on every read.
  size_t dropped = 0;
  if (CUTRIAGE_CUPTI_STATUS(cuptiActivityGetNumDroppedRecords(static_cast<CUcontext>(context), stream_id,
                                                              &dropped))
          .is_ok()) {
    batch.dropped_records += dropped;
  }
  if (batch.kernels.empty() && batch.copies.empty() && batch.dropped_records == 0 &&
      batch.untimed_records == 0) {
    return;
  }
  const std::lock_guard<std::mutex> delivery(delivery_mutex_);
  if (observer_ == nullptr) return;
  try {
    observer_->on_activity(batch);
  } catch (...) {
    // Contract: the observer does not throw. Nothing may reach CUPTI if it does.
  }
}

}  // namespace cutriage::collectors
