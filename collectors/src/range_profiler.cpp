// RangeProfiler on the CUPTI Range Profiler API (cupti_range_profiler.h, CUDA 13.0): one kernel
// launch per begin()/end(), auto range + kernel replay, so CUPTI replays the kernel once per pass
// inside the launch (restoring device memory between passes) and records one range.
//
// Sequence (shared notes, cupti-facts.md; NVIDIA's range_profiling sample):
//   once per process     cuptiProfilerInitialize (Start crashes the process without it)
//   once per context     cuptiRangeProfilerEnable(ctx)    (make; after disable(); on a new plan)
//   begin(plan)          cuptiRangeProfilerGetCounterDataSize        (once per enabled object)
//                        cuptiRangeProfilerCounterDataImageInitialize (the image zeroed, every launch)
//                        cuptiRangeProfilerSetConfig(AutoRange, KernelReplay, plan's config image)
//                        cuptiRangeProfilerStart
//   end()                cuptiRangeProfilerStop, cuptiRangeProfilerDecodeData,
//                        cuptiRangeProfilerGetCounterDataInfo (ranges in the image)
//   disable()/destructor cuptiRangeProfilerDisable
// With RangeProfilerOptions::keep_enabled = false, Enable runs in begin() and Disable in end():
// the per-launch sequence seen working on the H200.
//
// PlanReplay::kApplication (a graph launch; tests/gpu/graph_probe.cu, docs/graphs.md): user range
// + user replay, the image initialized and SetConfig once, then per pass (one of the application's
// repeats of the workload): begin() Start + PushRange, end() PopRange + Stop; after the pass that
// Stop reports as the last, DecodeData. Seen on the H200: a 9-pass plan over 9 graph launches gave
// one range with every value, and the graph's results intact.
//
// PlanReplay::kLaunches (always-on's stages over a kernel's own launches): the same pass loop with
// auto range and no push/pop, one kernel launch per pass. Not yet run on the H200.

//
// One enabled object serves one config (seen on the H200, CUDA 13.0, driver 580): SetConfig again
// with the same config image and the same buffers works launch after launch, with the same
// counts; SetConfig with another plan's config on the same enabled object crashed the process
// (SIGSEGV in the kernel replay) or recorded 0 ranges, depending on where the new buffers were;
// Disable + Enable between the two plans works. Under user replay (single-pass plans, always-on)
// the second config ran without error and gave NaN values (bench/switch_cost.sh inplace, H200).
// What a switch costs is the new object's first Start (140-200 ms there; Enable 8-10 ms, SetConfig
// nothing, Disable 11-12 ms); a Start on the configured object 7-46 ms under user replay.
// So a begin() with a plan other than the one the
// object was configured with disables and enables again, with fresh buffers, and the buffers of
// an object keep their addresses while it lives (same sizes: std::vector::assign reuses them).
#include <cuda.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "c_strings.h"
#include "checksum.h"
#include "cuda_driver_probe.h"
#include "cupti_check.h"
#include "pm_sampling.h"
#include "cutriage/collectors/range_profiler.h"

namespace cutriage::collectors {
namespace {

}  // namespace

// cuptiProfilerInitialize, once per process, before any other profiler call. A failure is not
// remembered, so a later caller retries (e.g. one that came before cuInit finished). Never
// deinitialized: the process may profile until it exits, and tearing CUPTI down from a static
// destructor races with the driver's own exit handling.
Status ensure_profiler_initialized() {
  static std::mutex mutex;
  static bool initialized = false;
  const std::lock_guard<std::mutex> lock(mutex);
  if (initialized) return Status::ok();
  // Without a driver CUPTI answers CUPTI_ERROR_UNKNOWN here, and later calls crash: say why.
  CUTRIAGE_RETURN_IF_ERROR(cuda_device_count().status());
  CUpti_Profiler_Initialize_Params params{};
  params.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerInitialize(&params));
  initialized = true;
  return Status::ok();
}

namespace {

uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Adds the wall time of its scope to *into (RangeProfilerSteps).
class StepTimer {
 public:
  explicit StepTimer(uint64_t* into) : into_(into), begun_(steady_ns()) {}
  ~StepTimer() { *into_ += steady_ns() - begun_; }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  uint64_t* into_;
  uint64_t begun_;
};

class CuptiRangeProfiler final : public RangeProfiler {
 public:
  CuptiRangeProfiler(CUcontext context, RangeProfilerOptions options)
      : context_(context), options_(options) {}

  ~CuptiRangeProfiler() override {
    if (started_) {
      CUpti_RangeProfiler_Stop_Params stop{};
      stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      stop.pRangeProfilerObject = object_;
      (void)cuptiRangeProfilerStop(&stop);  // best effort: nothing to report to
    }
    (void)disable_object();
  }
  CuptiRangeProfiler(const CuptiRangeProfiler&) = delete;
  CuptiRangeProfiler& operator=(const CuptiRangeProfiler&) = delete;

  Status enable() {
    const StepTimer timer(&steps_.enable_ns);
    CUpti_RangeProfiler_Enable_Params params{};
    params.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    params.ctx = context_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerEnable(&params));
    if (params.pRangeProfilerObject == nullptr) {
      return Status(StatusCode::kInternal, "cuptiRangeProfilerEnable returned no object");
    }
    object_ = params.pRangeProfilerObject;
    return Status::ok();
  }

  Status begin(const MetricPlan& plan) override {
    if (started_) {
      return Status(StatusCode::kInternal, "RangeProfiler::begin() while a range is open (no end())");
    }
    steps_ = RangeProfilerSteps{};
    if (plan.metrics.empty() || plan.config_image.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "RangeProfiler::begin(): the plan has no metrics or no config image");
    }
    if (passes_over_repeats(plan.replay) && plan.passes == 0) {
      return Status(StatusCode::kInvalidArgument, "RangeProfiler::begin(): the plan has no passes");
    }
    if (plan.replay == PlanReplay::kNone && plan.passes != 1) {
      return Status(StatusCode::kInvalidArgument,
                    "RangeProfiler::begin(): a plan collected without replay must fit one pass, this one takes " +
                        std::to_string(plan.passes));
    }
    if (object_ != nullptr && configured_ && (config_ != plan.config_image || replay_ != plan.replay)) {
      CUTRIAGE_RETURN_IF_ERROR(disable_object());  // another plan: needs its own object (above)
    }
    if (object_ != nullptr && configured_ && pass_ > 0 && plan.collection != 0 && plan.collection != collection_) {
      // Another collection with the same plan while one is halfway: that one is abandoned (its
      // passes ran on another kernel), and this one starts from a fresh object, as for another plan.
      CUTRIAGE_RETURN_IF_ERROR(disable_object());
    }
    if (object_ == nullptr) CUTRIAGE_RETURN_IF_ERROR(enable());
    Status status = configure_and_start(plan);
    // After a failure the object's state is unknown: the next begin() starts from a fresh Enable.
    if (!status.is_ok()) (void)disable_object();
    return status;
  }

  Result<CounterData> end() override {
    if (!started_) {
      return Status(StatusCode::kInternal, "RangeProfiler::end() without a successful begin()");
    }
    started_ = false;
    Result<CounterData> data = stop_and_decode();
    // A collection over the application's repeats keeps its object (and image) between passes.
    if (data.is_ok() && data.value().passes_pending > 0) return data;
    // After a failure the object's state is unknown: start the next launch from a fresh Enable.
    if (!data.is_ok() || !options_.keep_enabled) {
      const Status disabled = disable_object();
      if (data.is_ok() && !disabled.is_ok()) return disabled;
    }
    return data;
  }

  Status warm_up(const MetricPlan& plan) override {
    if (started_) {
      return Status(StatusCode::kInternal, "RangeProfiler::warm_up() between begin() and end()");
    }
    if (plan.replay != PlanReplay::kNone || plan.passes != 1 || plan.config_image.empty()) {
      return Status(StatusCode::kInvalidArgument, "RangeProfiler::warm_up(): needs a single-pass plan without replay");
    }
    steps_ = RangeProfilerSteps{};
    // A newly enabled object, never started: the cost to pay is such an object's first Start.
    if (configured_) CUTRIAGE_RETURN_IF_ERROR(disable_object());
    if (object_ == nullptr) CUTRIAGE_RETURN_IF_ERROR(enable());
    Status status = configure_and_start(plan);
    if (status.is_ok()) {
      started_ = false;
      const StepTimer timer(&steps_.stop_ns);
      CUpti_RangeProfiler_Stop_Params stop{};
      stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      stop.pRangeProfilerObject = object_;
      status = cupti_status(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop (warm-up)");
    }
    // Never decoded, never reused: the next begin() enables an object of its own.
    const Status disabled = disable_object();
    return status.is_ok() ? disabled : status;
  }

  [[nodiscard]] uint32_t pass_in_progress() const override { return begun_pass_; }
  [[nodiscard]] RangeProfilerSteps last_steps() const override { return steps_; }

  Status disable() override {
    if (started_) {
      return Status(StatusCode::kInternal, "RangeProfiler::disable() between begin() and end()");
    }
    return disable_object();
  }

 private:
  Status configure_and_start(const MetricPlan& plan) {
    if (passes_over_repeats(replay_) && pass_ > 0 && configured_) {
      // The next pass of the collection in progress: the same config and image, no SetConfig.
      begun_pass_ = pass_;
      CUTRIAGE_RETURN_IF_ERROR(start_object());
      return replay_ == PlanReplay::kApplication ? push_range() : Status::ok();
    }
    // The counter-data image's size depends on the metric names; an object only ever serves one
    // plan (see the top of the file), so size it once per object.
    std::optional<StepTimer> counter_data_timer(&steps_.counter_data_ns);
    if (counter_data_size_ == 0 || sized_for_ != plan.metrics) {
      std::vector<const char*> names = c_strings(plan.metrics);
      CUpti_RangeProfiler_GetCounterDataSize_Params size{};
      size.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
      size.pRangeProfilerObject = object_;
      size.pMetricNames = names.data();
      size.numMetrics = names.size();
      size.maxNumOfRanges = options_.max_ranges;
      size.maxNumRangeTreeNodes = options_.max_ranges;  // flat auto ranges: one node per range
      CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerGetCounterDataSize(&size));
      if (size.counterDataSize == 0) {
        return Status(StatusCode::kInternal, "cuptiRangeProfilerGetCounterDataSize returned 0");
      }
      counter_data_size_ = size.counterDataSize;
      sized_for_ = plan.metrics;
    }

    // end() hands out a copy of the image: image_ stays where CUPTI was told it is.
    image_.assign(counter_data_size_, 0);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
    init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    init.pRangeProfilerObject = object_;
    init.counterDataSize = image_.size();
    init.pCounterData = image_.data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerCounterDataImageInitialize(&init));
    counter_data_timer.reset();

    if (!configured_) {
      config_ = plan.config_image;
      config_checksum_ = fnv1a64(config_);
      replay_ = plan.replay;
    }
    CUpti_RangeProfiler_SetConfig_Params config{};
    config.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    config.pRangeProfilerObject = object_;
    config.configSize = config_.size();
    config.pConfig = config_.data();
    config.counterDataImageSize = image_.size();
    config.pCounterDataImage = image_.data();
    // Auto range: one range per kernel. A graph launch gets one user range instead (an auto
    // range around cuGraphLaunch fails in Stop, seen on the H200).
    config.range = replay_ == PlanReplay::kApplication ? CUPTI_UserRange : CUPTI_AutoRange;
    // User replay with a single-pass config: the one Start..Stop is the only pass, so the launch
    // runs once and nothing is saved or restored (what always-on collection relies on). With
    // kApplication and kLaunches each pass is one of the application's own repeats.
    config.replayMode = replay_ == PlanReplay::kKernel ? CUPTI_KernelReplay : CUPTI_UserReplay;
    config.maxRangesPerPass = options_.max_ranges;
    config.numNestingLevels = 1;  // auto range: must be 1 (header)
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    {
      const StepTimer timer(&steps_.set_config_ns);
      CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerSetConfig(&config));
    }
    configured_ = true;
    passes_ = plan.passes;
    pass_ = 0;
    begun_pass_ = 0;
    collection_ = plan.collection;
    CUTRIAGE_RETURN_IF_ERROR(start_object());
    return replay_ == PlanReplay::kApplication ? push_range() : Status::ok();
  }

  Status push_range() {
    const StepTimer timer(&steps_.start_ns);
    CUpti_RangeProfiler_PushRange_Params push{};
    push.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
    push.pRangeProfilerObject = object_;
    push.pRangeName = "workload";
    const CUptiResult pushed = cuptiRangeProfilerPushRange(&push);
    if (pushed != CUPTI_SUCCESS) {
      CUpti_RangeProfiler_Stop_Params stop{};
      stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      stop.pRangeProfilerObject = object_;
      (void)cuptiRangeProfilerStop(&stop);  // undo the Start; the caller disables after a failure
      started_ = false;
      return cupti_status(pushed, "cuptiRangeProfilerPushRange");
    }
    return Status::ok();
  }

  Status start_object() {
    const StepTimer timer(&steps_.start_ns);
    CUpti_RangeProfiler_Start_Params start{};
    start.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
    start.pRangeProfilerObject = object_;
    const CUptiResult started = cuptiRangeProfilerStart(&start);
    if (started == CUPTI_ERROR_INVALID_PARAMETER) {
      // Seen on the H200 while PC sampling was enabled on the context (shared notes).
      const Status s = cupti_status(started, "cuptiRangeProfilerStart");
      return Status(s.code(), s.message() + "; is PC sampling enabled on this context? The two "
                                            "cannot be active on one context at once");
    }
    CUTRIAGE_RETURN_IF_ERROR(cupti_status(started, "cuptiRangeProfilerStart(&start)"));
    started_ = true;
    return Status::ok();
  }

  Result<CounterData> stop_and_decode() {
    std::optional<StepTimer> stop_timer(&steps_.stop_ns);
    if (replay_ == PlanReplay::kApplication) {
      CUpti_RangeProfiler_PopRange_Params pop{};
      pop.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
      pop.pRangeProfilerObject = object_;
      const CUptiResult popped = cuptiRangeProfilerPopRange(&pop);
      if (popped != CUPTI_SUCCESS) {
        CUpti_RangeProfiler_Stop_Params stop{};
        stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
        stop.pRangeProfilerObject = object_;
        (void)cuptiRangeProfilerStop(&stop);
        return cupti_status(popped, "cuptiRangeProfilerPopRange");
      }
    }
    CUpti_RangeProfiler_Stop_Params stop{};
    stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
    stop.pRangeProfilerObject = object_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerStop(&stop));
    stop_timer.reset();
    if (passes_over_repeats(replay_) && stop.isAllPassSubmitted == 0) {
      // Pass `pass_` done; CUPTI says which comes next (seen on the H200: 1, 2, ... then 0 with
      // all submitted after the last).
      ++pass_;
      if (pass_ >= passes_) {
        return Status(StatusCode::kInternal, "cuptiRangeProfilerStop: " + std::to_string(pass_) +
                                                 " passes run, the plan's " + std::to_string(passes_) +
                                                 ", and CUPTI still wants more");
      }
      CounterData pending;
      pending.passes_pending = passes_ - pass_;
      pending.config_checksum = config_checksum_;
      return pending;
    }
    pass_ = 0;
    // Kernel replay runs every pass inside the launch. Passes still missing mean no kernel ran
    // in the range (a launch into a capturing stream, a graph launch): decoding then failed with
    // CUPTI_ERROR_UNKNOWN on the H200 and the process died soon after, so do not decode.
    if (stop.isAllPassSubmitted == 0) {
      return Status(StatusCode::kInternal,
                    "cuptiRangeProfilerStop: not all replay passes were submitted (pass index " +
                        std::to_string(stop.passIndex) +
                        "); no kernel ran between begin() and end()? Counter data not decoded");
    }

    const StepTimer decode_timer(&steps_.decode_ns);
    CUpti_RangeProfiler_DecodeData_Params decode{};
    decode.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    decode.pRangeProfilerObject = object_;
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerDecodeData(&decode));

    CUpti_RangeProfiler_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = image_.data();
    info.counterDataImageSize = image_.size();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerGetCounterDataInfo(&info));
    if (info.numTotalRanges == 0) {
      return Status(StatusCode::kInternal,
                    "the range profiler recorded no range (" + std::to_string(decode.numOfRangeDropped) +
                        " dropped); no kernel ran between begin() and end()?");
    }
    if (info.numTotalRanges > options_.max_ranges) {
      return Status(StatusCode::kInternal, "CUPTI reports " + std::to_string(info.numTotalRanges) +
                                               " ranges in an image sized for " +
                                               std::to_string(options_.max_ranges));
    }

    CounterData data;
    data.image = image_;
    data.ranges = static_cast<uint32_t>(info.numTotalRanges);
    data.image_checksum = fnv1a64(data.image);
    data.config_checksum = config_checksum_;
    return data;
  }

  Status disable_object() {
    if (object_ == nullptr) return Status::ok();
    const StepTimer timer(&steps_.disable_ns);
    CUpti_RangeProfiler_Disable_Params params{};
    params.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
    params.pRangeProfilerObject = object_;
    const CUptiResult result = cuptiRangeProfilerDisable(&params);
    // CUPTI destroys the object in Disable; never reuse it, whatever the result. The next object
    // gets buffers at new addresses (see the top of the file).
    object_ = nullptr;
    started_ = false;
    configured_ = false;
    pass_ = 0;
    counter_data_size_ = 0;
    sized_for_.clear();
    std::vector<uint8_t>().swap(config_);
    std::vector<uint8_t>().swap(image_);
    return cupti_status(result, "cuptiRangeProfilerDisable");
  }

  const CUcontext context_;
  const RangeProfilerOptions options_;
  CUpti_RangeProfiler_Object* object_ = nullptr;  // owned: Disable destroys it
  bool started_ = false;                           // between a successful Start and end()
  bool configured_ = false;                        // object_ has had SetConfig with config_
  size_t counter_data_size_ = 0;                   // for sized_for_, on object_
  std::vector<std::string> sized_for_;
  // The config and counter-data image given to SetConfig. CUPTI keeps pointers to both; they
  // live (at the same addresses) as long as object_ does.
  std::vector<uint8_t> config_;
  uint64_t config_checksum_ = 0;
  PlanReplay replay_ = PlanReplay::kKernel;       // the replay mode config_ was set with
  std::vector<uint8_t> image_;
  // kApplication: the plan's passes, and how many are done in the collection in progress (0 =
  // none in progress: the next begin() initializes the image and sets the config).
  uint32_t passes_ = 0;
  uint32_t pass_ = 0;
  uint32_t begun_pass_ = 0;    // the pass the last begin() started
  uint64_t collection_ = 0;    // MetricPlan::collection of the collection in progress
  RangeProfilerSteps steps_;   // of the last begin() and the end() after it
};

}  // namespace

Result<std::unique_ptr<RangeProfiler>> make_cupti_range_profiler(void* cu_context,
                                                                 RangeProfilerOptions options) {
  if (cu_context == nullptr) {
    return Status(StatusCode::kInvalidArgument, "make_cupti_range_profiler: null CUcontext");
  }
  if (options.max_ranges == 0) {
    return Status(StatusCode::kInvalidArgument, "make_cupti_range_profiler: max_ranges must be >= 1");
  }
  CUTRIAGE_RETURN_IF_ERROR(ensure_profiler_initialized());
  auto profiler = std::make_unique<CuptiRangeProfiler>(static_cast<CUcontext>(cu_context), options);
  // Enabling now surfaces missing privileges (and a context CUPTI cannot profile) at creation.
  CUTRIAGE_RETURN_IF_ERROR(profiler->enable());
  return std::unique_ptr<RangeProfiler>(std::move(profiler));
}

Result<std::string> cupti_chip_name(int device) {
  if (device < 0) {
    return Status(StatusCode::kInvalidArgument, "cupti_chip_name: negative device ordinal");
  }
  CUTRIAGE_ASSIGN_OR_RETURN(const int count, cuda_device_count());
  if (device >= count) {
    return Status(StatusCode::kInvalidArgument, "cupti_chip_name: device " + std::to_string(device) +
                                                    " requested, the driver has " + std::to_string(count));
  }
  CUTRIAGE_RETURN_IF_ERROR(ensure_profiler_initialized());
  CUpti_Device_GetChipName_Params params{};
  params.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  params.deviceIndex = static_cast<size_t>(device);
  CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiDeviceGetChipName(&params));
  if (params.pChipName == nullptr || params.pChipName[0] == '\0') {
    return Status(StatusCode::kInternal, "cuptiDeviceGetChipName returned no name");
  }
  return std::string(params.pChipName);
}

}  // namespace cutriage::collectors
