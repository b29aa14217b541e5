// PM sampling through CUPTI 13.0 (cupti_pmsampling.h): see pm_sampling.h for the facts it rests on.
// Order of calls in one session (NVIDIA's pm_sampling sample and the H200 probe agree):
//   begin  cuptiProfilerInitialize (once per process), counter availability (optional: CUPTI may
//          answer HARDWARE_BUSY and the config is then built without it), host object of type
//          PM_SAMPLING for the chip, ConfigAddMetrics, config image, passes == 1,
//          cuptiPmSamplingEnable(device), SetConfig (GPU time interval, keep oldest), counter-data
//          image sized for max_samples and initialized, Start;
//   end    the context synchronized (the sampled launch has run), Stop, DecodeData until the end
//          of the records or a full image, GetCounterDataInfo, per completed sample GetSampleInfo
//          and EvaluateToGpuValues (its range index is the sample index), Disable.
// Every failure is a Status (cupti_check.h); Disable runs whatever failed before it.
#include "pm_sampling.h"

#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "c_strings.h"
#include "cupti_check.h"
#include "cutriage/collectors/host_lifetime.h"
#include "host_gate.h"

namespace cutriage::collectors {
namespace {

// One CUpti_Profiler_Host_Object of the PM-sampling type; evaluation uses the object that built
// the config.
class PmHost {
 public:
  PmHost() = default;
  ~PmHost() { reset(); }
  PmHost(const PmHost&) = delete;
  PmHost& operator=(const PmHost&) = delete;

  Status init(const std::string& chip, std::vector<uint8_t>* availability) {
    CUpti_Profiler_Host_Initialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability->empty() ? nullptr : availability->data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostInitialize(&p));
    if (p.pHostObject == nullptr) return {StatusCode::kInternal, "cuptiProfilerHostInitialize gave no host object"};
    host_loaded();
    object_ = p.pHostObject;
    return Status::ok();
  }
  void reset() {
    if (object_ == nullptr) return;
    if (host_calls_closed()) {  // the library may be gone: the object goes with the process
      object_ = nullptr;
      return;
    }
    CUpti_Profiler_Host_Deinitialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = object_;
    (void)cuptiProfilerHostDeinitialize(&p);  // nothing to do about a failure here
    object_ = nullptr;
  }
  [[nodiscard]] CUpti_Profiler_Host_Object* get() const { return object_; }

 private:
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
}

// The sampler's context current on the calling thread for a scope (null: nothing done).
class CurrentContext {
 public:
  explicit CurrentContext(void* context) {
    if (context == nullptr) return;
    status_ = push_cu_context(context);
    pushed_ = status_.is_ok();
  }
  ~CurrentContext() {
    if (pushed_) pop_cu_context();
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;
  [[nodiscard]] const Status& status() const { return status_; }

 private:
  Status status_;
  bool pushed_ = false;
};

class CuptiPmSampler final : public PmSampler {
 public:
  CuptiPmSampler(void* context, uint32_t device, std::string chip)
      : context_(context), device_(device), chip_(std::move(chip)) {}
  ~CuptiPmSampler() override { (void)disable(); }
  CuptiPmSampler(const CuptiPmSampler&) = delete;
  CuptiPmSampler& operator=(const CuptiPmSampler&) = delete;

  Status begin(const PmSamplingOptions& options) override {
    if (object_ != nullptr) return {StatusCode::kInternal, "PM sampling begun twice without end()"};
    if (options.metrics.empty()) return {StatusCode::kInvalidArgument, "no PM-sampling metrics"};
    const auto t0 = std::chrono::steady_clock::now();
    options_ = options;
    options_.max_samples = std::clamp<uint32_t>(options.max_samples, 1, kMaxPmSamples);
    const HostCall host;
    if (!host) return HostCall::refused();
    CurrentContext current(options_.synchronize ? nullptr : context_);
    if (!current.status().is_ok()) return current.status();
    host_config_ns_ = 0;
    counter_data_ns_ = 0;
    Status s = start();
    if (!s.is_ok()) {
      const Status d = disable();
      if (!d.is_ok()) s = {s.code(), s.message() + "; then " + d.message()};
    }
    start_cost_ns_ = elapsed_ns(t0);
    return s;
  }

  Result<PmSampleBatch> end() override {
    if (object_ == nullptr) return Status(StatusCode::kInternal, "PM sampling end() without begin()");
    const HostCall host;  // the decode evaluates through the host
    if (!host) {
      (void)disable();
      return HostCall::refused();
    }
    CurrentContext current(options_.synchronize ? nullptr : context_);
    if (!current.status().is_ok()) {
      (void)disable();
      return current.status();
    }
    Result<PmSampleBatch> batch = collect();
    // The process's first decode may have built state of the host library's own (host_loaded).
    static std::atomic<bool> decoded{false};
    if (batch.is_ok() && !decoded.exchange(true)) host_loaded();
    const Status d = disable();
    if (batch.is_ok() && !d.is_ok()) return d;
    return batch;
  }

 private:
  Status start() {
    const auto t0 = std::chrono::steady_clock::now();
    CUTRIAGE_RETURN_IF_ERROR(ensure_profiler_initialized());
    // Counter availability lets CUPTI leave out counters the device cannot give now; the probe saw
    // HARDWARE_BUSY here once, and the config built without it worked.
    std::vector<uint8_t> availability;
    {
      CUpti_PmSampling_GetCounterAvailability_Params a{};
      a.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
      a.deviceIndex = device_;
      if (cuptiPmSamplingGetCounterAvailability(&a) == CUPTI_SUCCESS && a.counterAvailabilityImageSize > 0) {
        availability.resize(a.counterAvailabilityImageSize);
        a.pCounterAvailabilityImage = availability.data();
        if (cuptiPmSamplingGetCounterAvailability(&a) != CUPTI_SUCCESS) availability.clear();
      }
    }
    CUTRIAGE_RETURN_IF_ERROR(host_.init(chip_, &availability));
    std::vector<const char*> names = c_strings(options_.metrics);
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
    add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    add.pHostObject = host_.get();
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostConfigAddMetrics(&add));
    CUpti_Profiler_Host_GetConfigImageSize_Params size{};
    size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    size.pHostObject = host_.get();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetConfigImageSize(&size));
    config_.assign(size.configImageSize, 0);
    CUpti_Profiler_Host_GetConfigImage_Params image{};
    image.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    image.pHostObject = host_.get();
    image.configImageSize = config_.size();
    image.pConfigImage = config_.data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetConfigImage(&image));
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{};
    passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    passes.configImageSize = config_.size();
    passes.pConfigImage = config_.data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetNumOfPasses(&passes));
    if (passes.numOfPasses != 1) {
      return {StatusCode::kNotSupported, "the PM-sampling metric set takes " + std::to_string(passes.numOfPasses) +
                                             " passes on " + chip_ + "; PM sampling takes one"};
    }

    host_config_ns_ = elapsed_ns(t0);

    CUpti_PmSampling_Enable_Params en{};
    en.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
    en.deviceIndex = device_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingEnable(&en));
    object_ = en.pPmSamplingObject;
    if (object_ == nullptr) return {StatusCode::kInternal, "cuptiPmSamplingEnable gave no object"};

    CUpti_PmSampling_SetConfig_Params sc{};
    sc.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
    sc.pPmSamplingObject = object_;
    sc.configSize = config_.size();
    sc.pConfig = config_.data();
    sc.hardwareBufferSize = options_.hardware_buffer_bytes;
    sc.samplingInterval = options_.interval_ns;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingSetConfig(&sc));

    const auto t1 = std::chrono::steady_clock::now();
    CUpti_PmSampling_GetCounterDataSize_Params ds{};
    ds.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
    ds.pPmSamplingObject = object_;
    ds.pMetricNames = names.data();
    ds.numMetrics = names.size();
    ds.maxSamples = options_.max_samples;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingGetCounterDataSize(&ds));
    counter_data_.assign(ds.counterDataSize, 0);
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci{};
    ci.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    ci.pPmSamplingObject = object_;
    ci.counterDataSize = counter_data_.size();
    ci.pCounterData = counter_data_.data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingCounterDataImageInitialize(&ci));
    counter_data_ns_ = elapsed_ns(t1);

    CUpti_PmSampling_Start_Params st{};
    st.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
    st.pPmSamplingObject = object_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingStart(&st));
    started_ = true;
    return Status::ok();
  }

  Result<PmSampleBatch> collect() {
    const auto t0 = std::chrono::steady_clock::now();
    // The sampled launch was only queued when its exit callback came: wait for it to run. A time
    // window stops where it is.
    const Status synced = options_.synchronize ? synchronize_cu_context(context_) : Status::ok();
    CUpti_PmSampling_Stop_Params sp{};
    sp.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
    sp.pPmSamplingObject = object_;
    started_ = false;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingStop(&sp));
    if (!synced.is_ok()) return synced;
    const auto t1 = std::chrono::steady_clock::now();

    PmSampleBatch batch;
    batch.start_cost_ns = start_cost_ns_;
    batch.start_host_config_ns = host_config_ns_;
    batch.start_counter_data_ns = counter_data_ns_;
    batch.stop_cost_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    batch.metrics = options_.metrics;
    batch.interval_ns = options_.interval_ns;
    bool full = false;
    // A decode stops at the end of the records, at a full image, or for another reason (then
    // decoding again continues); bounded so a CUPTI that never says "end" cannot hold the thread.
    for (int round = 0; round < 64; ++round) {
      CUpti_PmSampling_DecodeData_Params de{};
      de.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
      de.pPmSamplingObject = object_;
      de.pCounterDataImage = counter_data_.data();
      de.counterDataImageSize = counter_data_.size();
      const CUptiResult r = cuptiPmSamplingDecodeData(&de);
      batch.hardware_buffer_overflow = batch.hardware_buffer_overflow || de.overflow != 0;
      if (r != CUPTI_SUCCESS) {
        // An overflowing hardware buffer fails the decode; what was decoded before is still read.
        if (!batch.hardware_buffer_overflow) return cupti_status(r, "cuptiPmSamplingDecodeData");
        break;
      }
      if (de.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) full = true;
      if (de.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER) break;
    }
    CUpti_PmSampling_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingGetCounterDataInfo(&info));
    // A full image dropped what came after: at least one more sample, how many is not known.
    if (full) batch.samples_dropped = 1;
    const size_t completed = std::min<size_t>(info.numCompletedSamples, options_.max_samples);
    std::vector<const char*> names = c_strings(options_.metrics);
    batch.samples.reserve(completed);
    for (size_t i = 0; i < completed; ++i) {
      CUpti_PmSampling_CounterData_GetSampleInfo_Params si{};
      si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
      si.pPmSamplingObject = object_;
      si.pCounterDataImage = counter_data_.data();
      si.counterDataImageSize = counter_data_.size();
      si.sampleIndex = i;
      if (cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS) continue;
      PmSample sample;
      sample.start_ns = si.startTimestamp;
      sample.end_ns = si.endTimestamp;
      sample.values.assign(names.size(), std::numeric_limits<double>::quiet_NaN());
      CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{};
      ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
      ev.pHostObject = host_.get();
      ev.pCounterDataImage = counter_data_.data();
      ev.counterDataImageSize = counter_data_.size();
      ev.rangeIndex = i;
      ev.ppMetricNames = names.data();
      ev.numMetrics = names.size();
      ev.pMetricValues = sample.values.data();
      if (cuptiProfilerHostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS) continue;
      batch.samples.push_back(std::move(sample));
    }
    batch.decode_cost_ns = elapsed_ns(t1);
    return batch;
  }

  Status disable() {
    Status s;
    if (object_ != nullptr) {
      if (started_) {
        CUpti_PmSampling_Stop_Params sp{};
        sp.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
        sp.pPmSamplingObject = object_;
        (void)cuptiPmSamplingStop(&sp);
        started_ = false;
      }
      CUpti_PmSampling_Disable_Params di{};
      di.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
      di.pPmSamplingObject = object_;
      s = CUTRIAGE_CUPTI_STATUS(cuptiPmSamplingDisable(&di));
      object_ = nullptr;
    }
    host_.reset();
    // The image is large: freed between sessions, not kept.
    std::vector<uint8_t>().swap(counter_data_);
    std::vector<uint8_t>().swap(config_);
    return s;
  }

  void* context_;
  uint32_t device_;
  std::string chip_;
  PmSamplingOptions options_;
  PmHost host_;
  std::vector<uint8_t> config_;
  std::vector<uint8_t> counter_data_;
  CUpti_PmSampling_Object* object_ = nullptr;
  bool started_ = false;
  uint64_t start_cost_ns_ = 0;
  uint64_t host_config_ns_ = 0;   // of start_cost_ns_ (PmSampleBatch)
  uint64_t counter_data_ns_ = 0;
};

}  // namespace

Result<std::unique_ptr<PmSampler>> make_cupti_pm_sampler(void* cu_context, uint32_t device, const std::string& chip) {
  if (cu_context == nullptr) return Status(StatusCode::kInvalidArgument, "PM sampler: null context");
  if (chip.empty()) return Status(StatusCode::kInvalidArgument, "PM sampler: chip unknown");
  return std::unique_ptr<PmSampler>(std::make_unique<CuptiPmSampler>(cu_context, device, chip));
}

}  // namespace cutriage::collectors
