// PcSampler on the CUPTI PC Sampling API (cupti_pcsampling.h, CUDA 13.0), and the two offline
// helpers (cuptiGetCubinCrc, cuptiGetSassToSourceCorrelation).
//
// One session per sampled launch, on the launch's context (shared notes, cupti-facts.md, "PC
// sampling"; NVIDIA's pc_sampling_start_stop and pc_sampling_continuous samples):
//   begin(options)   cuptiPCSamplingEnable(ctx)
//                    cuptiPCSamplingGetNumStallReasons + GetStallReasons (first session only: the
//                      table belongs to the device, and differs between architectures)
//                    cuptiPCSamplingSetConfigurationAttribute: KERNEL_SERIALIZED (or CONTINUOUS,
//                      PcSamplingOptions::continuous), period, start/stop
//                      control, scratch and hardware buffer sizes, PARSED output, the config buffer
//                    cuptiPCSamplingStart
//   end()            synchronize the context (the sampled launch must have finished)
//                    cuptiPCSamplingStop
//                    cuptiPCSamplingGetData into the drain buffer, until nothing remains (below)
//                    cuptiPCSamplingDisable (also after any failure above)
// Enabled only between begin() and end(): the range profiler cannot start on a context while PC
// sampling is enabled on it (seen on the H200: cuptiRangeProfilerStart fails with
// INVALID_PARAMETER), and the agent runs both on the same contexts. Kernel-serialized mode makes
// every sample belong to one launch (records carry its correlation id); start/stop control keeps
// other launches on the context out of the session.
//
// Two sample buffers, as NVIDIA's start/stop sample has: the config buffer, whose address CUPTI
// keeps from SetConfigurationAttribute until Disable (Disable copies the records nobody fetched
// into it), and the drain buffer passed to each GetData, which CUPTI only touches during the
// call. Both live, at fixed addresses, from configuration until Disable has returned; after a
// failed Disable the config buffer is abandoned (leaked) rather than freed under CUPTI.
//
// Draining (end()): GetData never synchronizes (header), and CUPTI hands samples over from a
// worker thread that wakes every 100 ms by default (WORKER_THREAD_PERIODIC_SLEEP_SPAN). Seen on the
// H200 in continuous mode: GetData right after a synchronize returned 0 samples, 500 ms later
// 66,064. So a first drain that returns nothing at all is retried, sleeping 10 ms between calls,
// for at most 200 ms (two worker periods); a launch too short to be sampled costs that wait and
// yields an empty batch. Once something came back, GetData is repeated only while CUPTI reports
// remainingNumPcs > 0 (more PCs than the buffer holds), bounded by kMaxDrainCalls. Whether
// kernel-serialized mode with Stop needs the retry at all is to be seen on a GPU
// (tests/gpu/pc_sampling_smoke.cpp prints the counts, PcDrainReport).
//
// Function names: each record's functionName is a string CUPTI allocates and the user frees with
// free(), but "might be shared across all the records including records from activity APIs
// representing the same function, and so it should not be modified or freed until post
// processing of all the records is done" (CUpti_PCSamplingPCData docs). The agent traces with the
// Activity API for the whole run, so that point is the end of the process, and freeing a name at
// end() risks a use after free or a double free inside the application if CUPTI hands the same
// string out again. The names are copied into the batch and their pointers kept in a process-wide
// set, never freed: the leak is one string per distinct pointer (per sampled function when CUPTI
// reuses its strings, which the smoke test checks). The strings of
// cuptiGetSassToSourceCorrelation have no such caveat ("It is expected from user to free allocated
// memory for fileName and dirName after use") and are freed at once.
//
// Nothing here throws to the caller: allocation failures inside begin()/end() become Status, after
// disabling what was enabled.
#include "pc_sampling.h"

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cuda_driver_probe.h"
#include "cupti_check.h"
#include "pm_sampling.h"
#include "cutriage/collectors/cubin.h"

namespace cutriage::collectors {
namespace {

constexpr uint32_t kMinPeriodLog2 = 5;   // CUPTI's range for SAMPLING_PERIOD (header)
constexpr uint32_t kMaxPeriodLog2 = 31;
// CUpti_PCSamplingPCData gained correlationId in CUPTI API version 22 (CUDA 12.4); an older
// libcupti would write records with another layout into our buffers.
constexpr uint32_t kFirstCuptiWithCorrelationId = 22;
// More stall reasons than any architecture has (GH100 lists a few dozen): a larger count is a
// broken answer, not a reason to allocate max_pcs x count entries.
constexpr size_t kMaxStallReasons = 1024;
constexpr auto kEmptyDrainBudget = std::chrono::milliseconds(200);
constexpr auto kEmptyDrainSleep = std::chrono::milliseconds(10);
// GetData calls per end() while CUPTI reports remaining PCs: with the default 10,000 PCs per call
// that is 40 million distinct PCs, far beyond any kernel; a CUPTI that keeps reporting remaining
// PCs without returning them cannot hold end() forever.
constexpr uint32_t kMaxDrainCalls = 4096;

Status with_note(Status status, const std::string& note) {
  if (status.is_ok() || note.empty()) return status;
  return {status.code(), status.message() + "; " + note};
}

// The first failure, with the later ones appended (the caller must learn that PC sampling may
// still be enabled even when something failed before Disable).
Status combine(Status first, const Status& later) {
  if (later.is_ok()) return first;
  if (first.is_ok()) return later;
  return {first.code(), first.message() + "; then " + later.message()};
}

// ---- the driver: synchronizing the sampled launch's context ----------------------------------

struct SyncDriver {
  // cuCtxSynchronize_v2(ctx) synchronizes a given context; drivers before it have only the
  // current-context cuCtxSynchronize, made current around the call with push/pop.
  CUresult(CUDAAPI* synchronize_context)(CUcontext) = nullptr;
  CUresult(CUDAAPI* synchronize_current)() = nullptr;
  CUresult(CUDAAPI* push_current)(CUcontext) = nullptr;
  CUresult(CUDAAPI* pop_current)(CUcontext*) = nullptr;
  std::string error;  // why none of the above can be used
};

template <typename F>
void bind_symbol(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

const SyncDriver& sync_driver() {
  static const SyncDriver driver = [] {
    SyncDriver d;
    void* lib = cuda_driver_library().handle;
    if (lib == nullptr) {
      d.error = "no CUDA driver: " + cuda_driver_library().error;
      return d;
    }
    bind_symbol(lib, "cuCtxSynchronize_v2", d.synchronize_context);
    bind_symbol(lib, "cuCtxSynchronize", d.synchronize_current);
    bind_symbol(lib, "cuCtxPushCurrent_v2", d.push_current);
    bind_symbol(lib, "cuCtxPopCurrent_v2", d.pop_current);
    if (d.synchronize_context == nullptr &&
        (d.synchronize_current == nullptr || d.push_current == nullptr || d.pop_current == nullptr)) {
      d.error = "libcuda.so.1 has neither cuCtxSynchronize_v2 nor cuCtxSynchronize with cuCtxPushCurrent_v2";
    }
    return d;
  }();
  return driver;
}

Status driver_failure(CUresult result, const char* call) {
  return {StatusCode::kInternal, std::string(call) + " failed with CUresult " +
                                     std::to_string(static_cast<int>(result))};
}

// Waits until every launch on `ctx` has finished, whichever context is current on this thread.
Status synchronize_context(CUcontext ctx) {
  const SyncDriver& d = sync_driver();
  if (!d.error.empty()) return {StatusCode::kUnavailable, d.error};
  if (d.synchronize_context != nullptr) {
    const CUresult r = d.synchronize_context(ctx);
    return r == CUDA_SUCCESS ? Status::ok() : driver_failure(r, "cuCtxSynchronize_v2(ctx)");
  }
  const CUresult pushed = d.push_current(ctx);
  if (pushed != CUDA_SUCCESS) return driver_failure(pushed, "cuCtxPushCurrent(ctx)");
  const CUresult synced = d.synchronize_current();
  CUcontext popped = nullptr;
  const CUresult pop = d.pop_current(&popped);
  if (synced != CUDA_SUCCESS) return driver_failure(synced, "cuCtxSynchronize()");
  if (pop != CUDA_SUCCESS) return driver_failure(pop, "cuCtxPopCurrent()");
  return Status::ok();
}

// ---- function names CUPTI handed out (see the top of the file) -------------------------------

class FunctionNameLedger {
 public:
  void retain(const char* name) {
    if (name == nullptr) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    names_.insert(name);
  }
  size_t size() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return names_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_set<const char*> names_;  // CUPTI's strings; owned, deliberately never freed
};

FunctionNameLedger& function_names() {
  static FunctionNameLedger ledger;  // destroying the set frees none of the strings
  return ledger;
}

// ---- sample buffers ------------------------------------------------------------------------

// A CUpti_PCSamplingData with room for `max_pcs` PCs of `reasons` stall reasons each, in memory
// this object owns. CUPTI keeps the address of data() (config buffer) and writes through its
// pointers, so an instance never moves (held by unique_ptr) and its vectors never reallocate.
class SamplingBuffer {
 public:
  SamplingBuffer(size_t max_pcs, size_t reasons)
      : pcs_(max_pcs), stalls_(max_pcs * reasons), reasons_(reasons) {
    reset();
  }
  SamplingBuffer(const SamplingBuffer&) = delete;
  SamplingBuffer& operator=(const SamplingBuffer&) = delete;

  // Empty again: counters zero, every PC entry pointing at its own stall array. Only while CUPTI
  // is not writing into it (the drain buffer between GetData calls, the config buffer before it
  // is configured).
  void reset() {
    data_ = CUpti_PCSamplingData{};
    data_.size = sizeof(CUpti_PCSamplingData);
    data_.collectNumPcs = pcs_.size();
    data_.pPcData = pcs_.data();
    for (size_t i = 0; i < pcs_.size(); ++i) {
      CUpti_PCSamplingPCData& pc = pcs_[i];
      pc = CUpti_PCSamplingPCData{};
      pc.size = sizeof(CUpti_PCSamplingPCData);
      pc.stallReason = stalls_.data() + i * reasons_;
    }
  }

  CUpti_PCSamplingData* data() { return &data_; }
  [[nodiscard]] const CUpti_PCSamplingData& view() const { return data_; }
  [[nodiscard]] size_t capacity() const { return pcs_.size(); }
  [[nodiscard]] size_t reasons_per_pc() const { return reasons_; }

 private:
  std::vector<CUpti_PCSamplingPCData> pcs_;
  std::vector<CUpti_PCSamplingStallReason> stalls_;
  size_t reasons_;
  CUpti_PCSamplingData data_{};
};

// ---- translation into PcSampleBatch --------------------------------------------------------

// Builds one batch from the records of several buffer fills, at the collector's edge.
//
// Reason mapping: CUPTI's records name a stall reason by the device's index
// (pcSamplingStallReasonIndex), which is neither dense nor ordered. PcStallCount::reason is the
// position in PcSampleBatch::reason_names instead, which lists the reasons in the order
// GetStallReasons returned them; `position_of_index` maps one to the other. An index the table
// did not list (never expected) gets a name of its own, "stall_reason_<index>", appended, so that
// no sample is dropped or misattributed.
//
// A PC (cubin CRC, function index, PC offset) seen in several fills becomes one record whose
// counts are summed. Records come out hottest first.
class BatchBuilder {
 public:
  BatchBuilder(const std::vector<std::string>& reason_names,
               const std::unordered_map<uint32_t, uint32_t>& position_of_index)
      : position_of_index_(position_of_index) {
    batch_.reason_names = reason_names;
  }

  void add_totals(const CUpti_PCSamplingData& d) {
    batch_.total_samples += d.totalSamples;
    batch_.dropped_samples += d.droppedSamples;
    batch_.non_user_samples += d.nonUsrKernelsTotalSamples;
    if (d.hardwareBufferFull != 0) batch_.hardware_buffer_full = true;
  }

  void mark_hardware_buffer_full() { batch_.hardware_buffer_full = true; }

  // The first `count` records of `d` (count <= the buffer's capacity), whose stall arrays hold at
  // most `reasons_per_pc` entries each.
  void add_pcs(const CUpti_PCSamplingData& d, size_t count, size_t reasons_per_pc) {
    for (size_t i = 0; i < count; ++i) {
      const CUpti_PCSamplingPCData& pc = d.pPcData[i];
      function_names().retain(pc.functionName);
      const auto key = std::make_tuple(pc.cubinCrc, pc.functionIndex, pc.pcOffset);
      auto [it, inserted] = index_.try_emplace(key, records_.size());
      if (inserted) {
        Pending p;
        p.record.cubin_crc = pc.cubinCrc;
        p.record.pc_offset = pc.pcOffset;
        if (pc.functionName != nullptr) p.record.function = pc.functionName;
        p.record.correlation_id = pc.correlationId;
        records_.push_back(std::move(p));
      }
      Pending& pending = records_[it->second];
      // Copies: CUPTI's structs are packed, and no reference may bind to their fields.
      const size_t reported = pc.stallReasonCount;
      const size_t stalls = std::min(reported, reasons_per_pc);
      for (size_t j = 0; pc.stallReason != nullptr && j < stalls; ++j) {
        const uint32_t samples = pc.stallReason[j].samples;
        if (samples == 0) continue;
        const uint32_t position = reason_position(pc.stallReason[j].pcSamplingStallReasonIndex);
        if (pending.samples.size() <= position) pending.samples.resize(size_t{position} + 1, 0);
        pending.samples[position] += samples;
        pending.total += samples;
      }
    }
  }

  [[nodiscard]] uint64_t total_samples() const { return batch_.total_samples; }
  [[nodiscard]] size_t distinct_pcs() const { return records_.size(); }

  PcSampleBatch finish(uint32_t period_log2) && {
    std::stable_sort(records_.begin(), records_.end(), [](const Pending& a, const Pending& b) {
      if (a.total != b.total) return a.total > b.total;
      return std::tie(a.record.cubin_crc, a.record.function, a.record.pc_offset) <
             std::tie(b.record.cubin_crc, b.record.function, b.record.pc_offset);
    });
    batch_.pcs.reserve(records_.size());
    for (Pending& p : records_) {
      for (size_t r = 0; r < p.samples.size(); ++r) {
        if (p.samples[r] != 0) p.record.stalls.push_back(PcStallCount{static_cast<uint32_t>(r), p.samples[r]});
      }
      batch_.pcs.push_back(std::move(p.record));
    }
    batch_.period_log2 = period_log2;
    return std::move(batch_);
  }

 private:
  struct Pending {
    PcSampleRecord record;
    std::vector<uint64_t> samples;  // by reason position
    uint64_t total = 0;
  };

  uint32_t reason_position(uint32_t cupti_index) {
    auto it = position_of_index_.find(cupti_index);
    if (it != position_of_index_.end()) return it->second;
    const auto position = static_cast<uint32_t>(batch_.reason_names.size());
    batch_.reason_names.push_back("stall_reason_" + std::to_string(cupti_index));
    position_of_index_.emplace(cupti_index, position);
    return position;
  }

  std::unordered_map<uint32_t, uint32_t> position_of_index_;  // a copy: unknown indices are added
  std::map<std::tuple<uint64_t, uint32_t, uint64_t>, size_t> index_;  // PC -> records_ index
  std::vector<Pending> records_;
  PcSampleBatch batch_;
};

const char* attribute_name(CUpti_PCSamplingConfigurationAttributeType type) {
  switch (type) {
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD: return "SAMPLING_PERIOD";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON: return "STALL_REASON";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE: return "SCRATCH_BUFFER_SIZE";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE: return "HARDWARE_BUFFER_SIZE";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE: return "COLLECTION_MODE";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL: return "ENABLE_START_STOP_CONTROL";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT: return "OUTPUT_DATA_FORMAT";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER: return "SAMPLING_DATA_BUFFER";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN:
      return "WORKER_THREAD_PERIODIC_SLEEP_SPAN";
    default: return "unknown attribute";
  }
}

// ---- the sampler ---------------------------------------------------------------------------

class CuptiPcSampler final : public PcSampler {
 public:
  explicit CuptiPcSampler(CUcontext context) : context_(context) {}

  // A sampler dropped between begin() and end() (or after a failed Disable) still stops and
  // disables, best effort: nothing to report to.
  ~CuptiPcSampler() override {
    try {
      if (started_) (void)stop_sampling();
      if (enabled_) (void)disable_sampling(nullptr);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor has no one to tell
    }
  }
  CuptiPcSampler(const CuptiPcSampler&) = delete;
  CuptiPcSampler& operator=(const CuptiPcSampler&) = delete;

  Status begin(const PcSamplingOptions& options) override {
    if (in_session_) {
      return {StatusCode::kInternal, "PcSampler::begin() while a session is open (end() was not called)"};
    }
    if (options.max_pcs == 0) {
      return {StatusCode::kInvalidArgument, "PcSampler::begin(): max_pcs must be >= 1"};
    }
    Status status;
    try {
      status = start_session(options);
    } catch (const std::exception& e) {
      status = Status(StatusCode::kInternal, std::string("PcSampler::begin(): ") + e.what() +
                                                 " (max_pcs " + std::to_string(options.max_pcs) + ")");
    }
    if (!status.is_ok()) status = combine(std::move(status), abandon_session());
    return status;
  }

  Result<PcSampleBatch> end() override {
    if (!in_session_) {
      return Status(StatusCode::kInternal, "PcSampler::end() without a successful begin()");
    }
    in_session_ = false;
    report_ = PcDrainReport{};
    has_report_ = true;
    try {
      return finish_session();
    } catch (const std::exception& e) {
      return combine(Status(StatusCode::kInternal, std::string("PcSampler::end(): ") + e.what()),
                     abandon_session());
    }
  }

  [[nodiscard]] const PcDrainReport* report() const { return has_report_ ? &report_ : nullptr; }

 private:
  Status start_session(const PcSamplingOptions& options) {
    period_log2_ = std::clamp(options.period_log2, kMinPeriodLog2, kMaxPeriodLog2);
    CUpti_PCSamplingEnableParams enable{};
    enable.size = CUpti_PCSamplingEnableParamsSize;
    enable.ctx = context_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPCSamplingEnable(&enable));
    enabled_ = true;

    if (reason_names_.empty()) CUTRIAGE_RETURN_IF_ERROR(read_stall_reasons());
    const size_t reasons = reason_names_.size();
    if (options.max_pcs > std::numeric_limits<size_t>::max() / reasons / sizeof(CUpti_PCSamplingStallReason)) {
      return {StatusCode::kInvalidArgument, "PcSampler::begin(): max_pcs " + std::to_string(options.max_pcs) +
                                                " x " + std::to_string(reasons) + " stall reasons overflows"};
    }
    config_buffer_ = std::make_unique<SamplingBuffer>(options.max_pcs, reasons);
    drain_buffer_ = std::make_unique<SamplingBuffer>(options.max_pcs, reasons);
    CUTRIAGE_RETURN_IF_ERROR(configure(options));

    CUpti_PCSamplingStartParams start{};
    start.size = CUpti_PCSamplingStartParamsSize;
    start.ctx = context_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPCSamplingStart(&start));
    started_ = true;
    in_session_ = true;
    return Status::ok();
  }

  // The device's stall reasons, index -> name. Names are written by CUPTI into buffers we own,
  // CUPTI_STALL_REASON_STRING_SIZE bytes each (the header's contract); the last byte is forced to
  // NUL in case a name fills its buffer.
  Status read_stall_reasons() {
    size_t count = 0;
    CUpti_PCSamplingGetNumStallReasonsParams num{};
    num.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    num.ctx = context_;
    num.numStallReasons = &count;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPCSamplingGetNumStallReasons(&num));
    if (count == 0 || count > kMaxStallReasons) {
      return {StatusCode::kInternal,
              "cuptiPCSamplingGetNumStallReasons reported " + std::to_string(count) + " stall reasons"};
    }
    std::vector<std::array<char, CUPTI_STALL_REASON_STRING_SIZE>> names(count);
    for (auto& name : names) name.fill('\0');
    std::vector<char*> name_pointers(count);
    for (size_t i = 0; i < count; ++i) name_pointers[i] = names[i].data();
    std::vector<uint32_t> indices(count, 0);
    CUpti_PCSamplingGetStallReasonsParams get{};
    get.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    get.ctx = context_;
    get.numStallReasons = count;
    get.stallReasonIndex = indices.data();
    get.stallReasons = name_pointers.data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPCSamplingGetStallReasons(&get));

    std::vector<std::string> reason_names;
    std::unordered_map<uint32_t, uint32_t> positions;
    reason_names.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      names[i].back() = '\0';
      const auto position = static_cast<uint32_t>(reason_names.size());
      // A repeated index keeps its first name: records cannot tell the two apart anyway.
      if (!positions.emplace(indices[i], position).second) continue;
      reason_names.emplace_back(names[i].data());
    }
    reason_names_ = std::move(reason_names);
    position_of_index_ = std::move(positions);
    return Status::ok();
  }

  Status configure(const PcSamplingOptions& options) {
    std::vector<CUpti_PCSamplingConfigurationInfo> attributes;
    auto add = [&attributes](CUpti_PCSamplingConfigurationAttributeType type) {
      CUpti_PCSamplingConfigurationInfo info{};
      info.attributeType = type;
      attributes.push_back(info);
      return attributes.size() - 1;
    };
    size_t i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE);
    attributes[i].attributeData.collectionModeData.collectionMode =
        options.continuous ? CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS
                           : CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
    attributes[i].attributeData.samplingPeriodData.samplingPeriod = period_log2_;
    i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL);
    attributes[i].attributeData.enableStartStopControlData.enableStartStopControl = 1;
    // 0 keeps CUPTI's default size (scratch 1 MB, hardware 512 MB).
    if (options.scratch_buffer_bytes != 0) {
      i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE);
      attributes[i].attributeData.scratchBufferSizeData.scratchBufferSize = options.scratch_buffer_bytes;
    }
    if (options.hardware_buffer_bytes != 0) {
      i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE);
      attributes[i].attributeData.hardwareBufferSizeData.hardwareBufferSize = options.hardware_buffer_bytes;
    }
    i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT);
    attributes[i].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    i = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
    attributes[i].attributeData.samplingDataBufferData.samplingDataBuffer = config_buffer_->data();

    CUpti_PCSamplingConfigurationInfoParams params{};
    params.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    params.ctx = context_;
    params.numAttributes = attributes.size();
    params.pPCSamplingConfigurationInfo = attributes.data();
    const CUptiResult result = cuptiPCSamplingSetConfigurationAttribute(&params);
    if (result == CUPTI_SUCCESS) return Status::ok();
    // Say which attribute CUPTI refused (each carries its own status).
    std::string refused;
    for (const CUpti_PCSamplingConfigurationInfo& a : attributes) {
      if (a.attributeStatus == CUPTI_SUCCESS) continue;
      if (!refused.empty()) refused += ", ";
      refused += std::string(attribute_name(a.attributeType)) + ": " + cupti_result_name(a.attributeStatus);
    }
    return with_note(cupti_status(result, "cuptiPCSamplingSetConfigurationAttribute"),
                     refused.empty() ? std::string() : "refused " + refused);
  }

  Result<PcSampleBatch> finish_session() {
    BatchBuilder builder(reason_names_, position_of_index_);
    // The agent calls end() from the launch's exit callback: the kernel may still be running, and
    // kernel-serialized samples are handed over when it completes.
    Status status = synchronize_context(context_);
    report_.synchronized = status.is_ok();
    if (!status.is_ok()) {
      status = with_note(std::move(status), "the sampled launch or the context failed; samples discarded");
    }
    const Status stopped = stop_sampling();
    if (stopped.is_ok() && status.is_ok()) status = drain(builder);
    status = combine(std::move(status), stopped);
    status = combine(std::move(status), disable_sampling(&builder));
    report_.function_names_retained = function_names().size();
    if (!status.is_ok()) return status;
    return std::move(builder).finish(period_log2_);
  }

  Status drain(BatchBuilder& builder) {
    const auto deadline = std::chrono::steady_clock::now() + kEmptyDrainBudget;
    bool got_any = false;
    while (report_.get_data_calls < kMaxDrainCalls) {
      drain_buffer_->reset();
      CUpti_PCSamplingGetDataParams params{};
      params.size = CUpti_PCSamplingGetDataParamsSize;
      params.ctx = context_;
      params.pcSamplingData = drain_buffer_->data();
      const CUptiResult result = cuptiPCSamplingGetData(&params);
      ++report_.get_data_calls;
      if (result == CUPTI_ERROR_OUT_OF_MEMORY) {
        // The header's meaning: the hardware buffer filled and the data is lost (PCs are 0). Not
        // a failure of the collector: the batch says so, and the agent reports the period.
        builder.mark_hardware_buffer_full();
        return Status::ok();
      }
      CUTRIAGE_RETURN_IF_ERROR(cupti_status(result, "cuptiPCSamplingGetData"));
      const CUpti_PCSamplingData& d = drain_buffer_->view();
      // Never trust a count beyond what the buffer holds.
      const size_t reported = d.totalNumPcs;
      const size_t count = std::min(reported, drain_buffer_->capacity());
      builder.add_totals(d);
      builder.add_pcs(d, count, drain_buffer_->reasons_per_pc());
      report_.pcs_from_drains += count;
      // Samples counted but no PC handed over yet is not "something came back": seen on the
      // H200 in continuous mode across a graph launch (23,735 samples, no PC), the PCs come with
      // CUPTI's worker, like the first drain's empty answer below.
      if (count > 0) {
        got_any = true;
        report_.last_range_id = d.rangeId;
      }
      if (d.remainingNumPcs > 0) continue;  // more PCs than the buffer holds: fetch the rest
      if (got_any) return Status::ok();
      // Nothing handed over yet (see the top of the file): wait for CUPTI's worker, bounded.
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return Status::ok();  // nothing was sampled: an empty batch
      const auto nap = std::min<std::chrono::steady_clock::duration>(kEmptyDrainSleep, deadline - now);
      std::this_thread::sleep_for(nap);
      ++report_.empty_retries;
      report_.waited_ms += std::chrono::duration<double, std::milli>(nap).count();
    }
    return {StatusCode::kInternal, "cuptiPCSamplingGetData still reported remaining PCs after " +
                                       std::to_string(kMaxDrainCalls) + " calls; the batch would be incomplete"};
  }

  Status stop_sampling() {
    if (!started_) return Status::ok();
    started_ = false;  // whatever Stop answers, the next step is Disable
    CUpti_PCSamplingStopParams stop{};
    stop.size = CUpti_PCSamplingStopParamsSize;
    stop.ctx = context_;
    return CUTRIAGE_CUPTI_STATUS(cuptiPCSamplingStop(&stop));
  }

  // Disables PC sampling on the context and frees the buffers. With a builder, the records Disable
  // copied into the config buffer are added to it when the drains returned none (the late-worker
  // case); otherwise they would count samples the drains already returned twice, so they are only
  // counted in the report (the GPU smoke test shows whether they ever occur).
  Status disable_sampling(BatchBuilder* builder) {
    if (!enabled_) return Status::ok();
    enabled_ = false;
    started_ = false;
    CUpti_PCSamplingDisableParams disable{};
    disable.size = CUpti_PCSamplingDisableParamsSize;
    disable.ctx = context_;
    const CUptiResult result = cuptiPCSamplingDisable(&disable);
    if (result != CUPTI_SUCCESS) {
      // CUPTI may still hold the config buffer's address: never free it under CUPTI.
      (void)config_buffer_.release();  // NOLINT(bugprone-unused-return-value): leaked on purpose
      drain_buffer_.reset();
      return with_note(cupti_status(result, "cuptiPCSamplingDisable"),
                       "PC sampling may still be enabled on this context, and the range profiler "
                       "cannot start on it while it is");
    }
    if (config_buffer_ != nullptr) {
      const CUpti_PCSamplingData& d = config_buffer_->view();
      const size_t reported = d.totalNumPcs;
      const size_t count = std::min(reported, config_buffer_->capacity());
      report_.pcs_from_disable = count;
      report_.samples_from_disable = d.totalSamples;
      if (builder != nullptr && builder->distinct_pcs() == 0 && (count > 0 || d.totalSamples > 0)) {
        if (builder->total_samples() == 0) builder->add_totals(d);
        builder->add_pcs(d, count, config_buffer_->reasons_per_pc());
      } else {
        // Not used, but their names are CUPTI's strings all the same (see the top of the file).
        for (size_t i = 0; i < count; ++i) function_names().retain(d.pPcData[i].functionName);
      }
    }
    config_buffer_.reset();
    drain_buffer_.reset();
    return Status::ok();
  }

  // After a failure: stop and disable whatever is running, so the context is left without PC
  // sampling. Returns the cleanup's own failure (ok when there was nothing to undo).
  Status abandon_session() noexcept {
    in_session_ = false;
    try {
      Status stopped = stop_sampling();
      return combine(std::move(stopped), disable_sampling(nullptr));
    } catch (...) {
      // Only allocation can throw here, after Stop and Disable were called or not needed.
      return {};
    }
  }

  const CUcontext context_;
  bool enabled_ = false;     // cuptiPCSamplingEnable succeeded, Disable not called since
  bool started_ = false;     // cuptiPCSamplingStart succeeded, Stop not called since
  bool in_session_ = false;  // begin() succeeded, end() not called since
  uint32_t period_log2_ = 0;
  // The device's stall reason table, read by the first session (the context's device is fixed).
  std::vector<std::string> reason_names_;
  std::unordered_map<uint32_t, uint32_t> position_of_index_;  // CUPTI's index -> reason_names_ position
  // Between configure() and Disable: CUPTI holds config_buffer_'s address.
  std::unique_ptr<SamplingBuffer> config_buffer_;
  std::unique_ptr<SamplingBuffer> drain_buffer_;
  PcDrainReport report_;
  bool has_report_ = false;
};

// malloc'd strings CUPTI returns to the caller.
struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using CuptiString = std::unique_ptr<char, FreeDeleter>;

std::string hex(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

}  // namespace

Status synchronize_cu_context(void* cu_context) { return synchronize_context(static_cast<CUcontext>(cu_context)); }

Status push_cu_context(void* cu_context) {
  const SyncDriver& d = sync_driver();
  if (!d.error.empty()) return {StatusCode::kUnavailable, d.error};
  if (d.push_current == nullptr) return {StatusCode::kUnavailable, "cuCtxPushCurrent_v2 not found in the driver"};
  const CUresult r = d.push_current(static_cast<CUcontext>(cu_context));
  return r == CUDA_SUCCESS ? Status::ok() : driver_failure(r, "cuCtxPushCurrent(ctx)");
}

void pop_cu_context() {
  const SyncDriver& d = sync_driver();
  if (d.pop_current == nullptr) return;
  CUcontext popped = nullptr;
  (void)d.pop_current(&popped);  // nothing to do about a failure here
}

Result<std::unique_ptr<PcSampler>> make_cupti_pc_sampler(void* cu_context) {
  if (cu_context == nullptr) {
    return Status(StatusCode::kInvalidArgument, "make_cupti_pc_sampler: null CUcontext");
  }
  // Without a driver CUPTI's target calls misbehave (cuda_driver_probe.h): say why instead.
  CUTRIAGE_RETURN_IF_ERROR(cuda_device_count().status());
  uint32_t version = 0;
  CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiGetVersion(&version));
  if (version < kFirstCuptiWithCorrelationId) {
    return Status(StatusCode::kNotSupported,
                  "PC sampling needs CUPTI API version " + std::to_string(kFirstCuptiWithCorrelationId) +
                      " (CUDA 12.4) or later; the loaded libcupti has " + std::to_string(version));
  }
  return std::unique_ptr<PcSampler>(std::make_unique<CuptiPcSampler>(static_cast<CUcontext>(cu_context)));
}

const PcDrainReport* last_drain_report(const PcSampler& sampler) {
  const auto* cupti = dynamic_cast<const CuptiPcSampler*>(&sampler);
  return cupti != nullptr ? cupti->report() : nullptr;
}

size_t retained_function_name_count() { return function_names().size(); }

Result<uint64_t> cupti_cubin_crc(const std::vector<uint8_t>& cubin) {
  // inspect_cubin first: the image may come from anywhere, and CUPTI's parser is not ours to
  // harden. Its error is already kInvalidArgument.
  CUTRIAGE_RETURN_IF_ERROR(inspect_cubin(cubin.data(), cubin.size()).status());
  CUpti_GetCubinCrcParams params{};
  params.size = CUpti_GetCubinCrcParamsSize;
  params.cubinSize = cubin.size();
  params.cubin = cubin.data();
  CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiGetCubinCrc(&params));
  return static_cast<uint64_t>(params.cubinCrc);
}

Result<SourceLine> cupti_sass_to_source(const std::vector<uint8_t>& cubin, const std::string& function,
                                        uint64_t pc_offset) {
  if (function.empty()) {
    return Status(StatusCode::kInvalidArgument, "sass_to_source: no function name");
  }
  CUTRIAGE_ASSIGN_OR_RETURN(const CubinInfo info, inspect_cubin(cubin.data(), cubin.size()));
  const std::string where = function + "+" + hex(pc_offset);
  if (!info.has_line_info) {
    return Status(StatusCode::kNotSupported,
                  "no line for " + where + ": the cubin has no line table (built without -lineinfo or -G)");
  }
  // The function and the PC are checked against the cubin's own sections first: CUPTI answers an
  // unknown function with INVALID_PARAMETER (seen, CUDA 13.0; the header says UNKNOWN).
  const Result<std::vector<uint8_t>> code = function_code(cubin.data(), cubin.size(), function);
  if (!code.is_ok()) {
    return Status(StatusCode::kInvalidArgument, "sass_to_source(" + where + "): " + code.status().message());
  }
  if (pc_offset >= code.value().size()) {
    return Status(StatusCode::kInvalidArgument, "sass_to_source(" + where + "): past the end of the function (" +
                                                    std::to_string(code.value().size()) + " bytes of code)");
  }
  CUpti_GetSassToSourceCorrelationParams params{};
  params.size = CUpti_GetSassToSourceCorrelationParamsSize;
  params.cubin = cubin.data();
  params.cubinSize = cubin.size();
  params.functionName = function.c_str();
  params.pcOffset = pc_offset;
  const CUptiResult result = cuptiGetSassToSourceCorrelation(&params);
  // The caller frees both strings (header); taken before looking at the result, in case CUPTI
  // allocated one and then failed.
  const CuptiString file(params.fileName);
  const CuptiString dir(params.dirName);
  if (result == CUPTI_ERROR_UNKNOWN) {
    return Status(StatusCode::kNotSupported,
                  "no line for " + where + " (cuptiGetSassToSourceCorrelation: CUPTI_ERROR_UNKNOWN, which "
                                           "CUPTI also answers for a function the cubin does not hold)");
  }
  if (result == CUPTI_ERROR_INVALID_MODULE) {
    return Status(StatusCode::kInvalidArgument,
                  "cuptiGetSassToSourceCorrelation: CUPTI_ERROR_INVALID_MODULE: CUPTI cannot read this cubin");
  }
  CUTRIAGE_RETURN_IF_ERROR(cupti_status(result, "cuptiGetSassToSourceCorrelation"));
  if (file == nullptr || file.get()[0] == '\0' || params.lineNumber == 0) {
    return Status(StatusCode::kNotSupported, "no line for " + where + " in the cubin's line table");
  }
  SourceLine line;
  line.line = params.lineNumber;
  const std::string file_name(file.get());
  if (dir != nullptr && dir.get()[0] != '\0' && file_name.front() != '/') {
    line.file = std::string(dir.get());
    if (line.file.back() != '/') line.file += '/';
    line.file += file_name;
  } else {
    line.file = file_name;
  }
  return line;
}

}  // namespace cutriage::collectors
