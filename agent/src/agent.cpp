#include "agent.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "cutriage/triage/plan.h"
#include "demangle.h"
#include "stages.h"

namespace cutriage::agent {

using collectors::ContextEvent;
using collectors::LaunchApi;
using collectors::LaunchEvent;
using collectors::StatusCode;

// Names are demangled and matched once per distinct mangled name, not per launch.
struct Agent::NameInfo {
  std::string demangled;
  std::string function;
  bool matches_filter = true;
  bool no_replay = false;  // communication kernels: may wait on other kernels or other GPUs
};

// One kernel (mangled name on one device). Owned by kernels_; fields guarded by mutex_.
struct Agent::KernelState {
  std::string mangled;
  uint32_t device = 0;
  std::shared_ptr<NameInfo> names;
  wire::KernelLaunchStats stats;
  uint32_t profiles_started = 0;
  bool complete = false;             // nothing more to collect for this kernel
  bool wrote_unprofiled = false;     // the one record saying why it is never profiled
  std::optional<triage::LaunchConfig> first_launch;
  triage::MetricSet measured;        // every value measured so far, over all profiled launches
  std::map<std::string, uint64_t, std::less<>> measured_on;  // name -> launch index
  std::vector<uint64_t> profiled_launches;
  std::set<std::string> attempted;   // counters asked for so far (accepted or rejected)
  std::vector<std::string> rejected;
  std::optional<triage::Diagnosis> diagnosis;
  std::vector<std::string> uncollected;
  wire::ProfileStatus last_status = wire::ProfileStatus::kUnspecified;
  std::string last_detail;
};

// One CUDA context. Shared so a launch in flight keeps it alive through a concurrent destroy.
struct Agent::ContextState {
  ContextEvent event;
  std::mutex profiler_mutex;  // creation of `profiler`
  std::unique_ptr<collectors::RangeProfiler> profiler;
  bool profiler_failed = false;
  std::atomic<bool> busy{false};  // a profiled launch is between entry and exit on this context
};

// The profiled launch in flight on this thread, from launch entry to launch exit.
struct Agent::ActiveProfile {
  Agent* owner = nullptr;
  std::shared_ptr<ContextState> context;
  KernelState* kernel = nullptr;
  std::shared_ptr<collectors::ProfilerHost> host;
  collectors::MetricPlan plan;
  uint64_t launch_index = 0;
  uint64_t correlation_id = 0;
  LaunchEvent event;  // a copy: the callback's data is gone by the exit callback's time
};

namespace {

wire::LaunchApi to_wire(LaunchApi api) {
  switch (api) {
    case LaunchApi::kLaunchKernel: return wire::LaunchApi::kKernel;
    case LaunchApi::kLaunchKernelEx: return wire::LaunchApi::kKernelEx;
    case LaunchApi::kLaunchCooperative: return wire::LaunchApi::kCooperative;
    case LaunchApi::kLaunchLegacy: return wire::LaunchApi::kLegacy;
    case LaunchApi::kGraphLaunch: return wire::LaunchApi::kGraph;
  }
  return wire::LaunchApi::kUnspecified;
}

// Base units for display, from the metric name's shape (the range profiler gives bare numbers).
std::string unit_for(const std::string& name) {
  if (name.find("pct") != std::string::npos) return "%";
  if (name.find("time_duration") != std::string::npos) return "nsecond";
  if (name.find(".per_second") != std::string::npos) {
    return name.find("bytes") != std::string::npos ? "byte/second" : "/second";
  }
  if (name.find("bytes") != std::string::npos) return "byte";
  if (name.find("sectors") != std::string::npos) return "sector";
  if (name.find("cycles") != std::string::npos) return "cycle";
  return "";
}

bool is_communication_kernel(const std::string& function) {
  // NCCL and NVSHMEM kernels spin on flags set by other GPUs or the host: replaying one alone
  // would hang or corrupt the collective.
  return function.rfind("nccl", 0) == 0 || function.find("::nccl") != std::string::npos ||
         function.rfind("nvshmem", 0) == 0;
}

bool same_shape(const triage::LaunchConfig& a, const triage::LaunchConfig& b) {
  auto eq = [](const triage::Dim3& x, const triage::Dim3& y) {
    return x.x == y.x && x.y == y.y && x.z == y.z;
  };
  return eq(a.grid, b.grid) && eq(a.block, b.block) &&
         a.dynamic_shared_bytes == b.dynamic_shared_bytes;
}

std::vector<std::string> all_counters() {
  using triage::Decision;
  return triage::counters_for_decisions({Decision::kD0Trust, Decision::kD1WorkloadSize,
                                         Decision::kD2Regime, Decision::kD3IssueStalls,
                                         Decision::kD4ComputePipe, Decision::kD5MemoryMechanism,
                                         Decision::kD7HardwareLimit});
}

std::string metric_mode_name(MetricMode m) {
  switch (m) {
    case MetricMode::kAdaptive: return "adaptive";
    case MetricMode::kFull: return "full";
    case MetricMode::kBase: return "base";
    case MetricMode::kList: return "list";
  }
  return "";
}

}  // namespace

std::unique_ptr<Agent::ActiveProfile>& Agent::active_slot() {
  thread_local std::unique_ptr<ActiveProfile> slot;
  return slot;
}

Agent::Agent(AgentConfig config, collectors::Platform& platform, std::unique_ptr<RecordSink> sink,
             Logger& log, ProcessInfo process, triage::Thresholds thresholds)
    : config_(std::move(config)),
      platform_(platform),
      sink_(std::move(sink)),
      log_(log),
      process_(std::move(process)) {
  triage_options_.thresholds = std::move(thresholds);
  if (!process_.now_unix_ns) process_.now_unix_ns = [] { return uint64_t{0}; };
  start_time_ns_ = process_.now_unix_ns();
}

Agent::~Agent() = default;

bool Agent::start() {
  collectors::Status s = platform_.subscribe(this);
  if (s.is_ok()) {
    subscribed_ = true;
    log_.info("profiling; results go to " + output_path());
    return true;
  }
  switch (s.code()) {
    case StatusCode::kAlreadySubscribed:
      log_.warn("another CUDA profiling tool (Nsight Systems, Nsight Compute, torch.profiler, ...) "
                "is using CUPTI in this process; cutriage stays off and the application runs "
                "unprofiled (" + s.message() + ")");
      state_ = wire::AgentState::kOtherSubscriber;
      break;
    case StatusCode::kUnavailable:
      log_.warn("no usable GPU or driver; cutriage stays off (" + s.message() + ")");
      state_ = wire::AgentState::kNoGpu;
      break;
    default:
      log_.warn("cannot set up CUPTI callbacks; cutriage stays off (" + s.message() + ")");
      state_ = wire::AgentState::kProfilerFailed;
      break;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_detail_ = s.message();
  }
  return false;
}

// ---- callbacks: every one catches everything ----------------------------------------------

void Agent::on_context_created(const ContextEvent& event) {
  try {
    auto ctx = std::make_shared<ContextState>();
    ctx->event = event;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      contexts_[event.context_id] = std::move(ctx);
      ++contexts_seen_;
    }
    (void)device_info(event.device);
  } catch (...) {
    log_.log_once(LogLevel::kError, "ctx-create", "internal error in the context callback");
  }
}

void Agent::on_context_destroying(const ContextEvent& event) {
  try {
    std::shared_ptr<ContextState> ctx;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = contexts_.find(event.context_id);
      if (it == contexts_.end()) return;
      ctx = std::move(it->second);
      contexts_.erase(it);
    }
    // The profiler (range profiler object, CUPTI enable state) goes with its context; a launch in
    // flight on another thread keeps the ContextState alive through its shared_ptr.
    if (!ctx->busy.load()) {
      std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
      ctx->profiler.reset();
    }
  } catch (...) {
    log_.log_once(LogLevel::kError, "ctx-destroy", "internal error in the context callback");
  }
}

void Agent::on_module_loaded(const collectors::ModuleEvent& event) {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    ++modules_loaded_;
    (void)event;  // cubins are kept by the PC-sampling collector (a later issue), not here
  } catch (...) {
  }
}

void Agent::on_launch_enter(const LaunchEvent& event) {
  try {
    launch_enter(event);
  } catch (const std::exception& e) {
    log_.log_once(LogLevel::kError, "launch-enter", std::string("internal error at launch: ") + e.what());
    active_slot().reset();
  } catch (...) {
    log_.log_once(LogLevel::kError, "launch-enter", "internal error at launch");
    active_slot().reset();
  }
}

void Agent::on_launch_exit(const LaunchEvent& event) {
  try {
    launch_exit(event);
  } catch (const std::exception& e) {
    log_.log_once(LogLevel::kError, "launch-exit", std::string("internal error after launch: ") + e.what());
  } catch (...) {
    log_.log_once(LogLevel::kError, "launch-exit", "internal error after launch");
  }
  std::unique_ptr<ActiveProfile>& slot = active_slot();
  if (slot && slot->owner == this && slot->correlation_id == event.correlation_id) {
    if (slot->context) slot->context->busy.store(false);
    slot.reset();
  }
}

// ---- selection ---------------------------------------------------------------------------

std::optional<std::vector<std::string>> Agent::select(const LaunchEvent& event, const std::string& chip,
                                                      KernelState*& kernel, uint64_t& launch_index) {
  std::lock_guard<std::mutex> lock(mutex_);
  launch_index = ++launch_counter_;
  if (event.api == LaunchApi::kGraphLaunch) {
    ++totals_.graph_launches;
    return std::nullopt;
  }
  ++totals_.kernel_launches;

  std::shared_ptr<NameInfo>& names = names_[event.mangled_name];
  if (!names) {
    names = std::make_shared<NameInfo>();
    names->demangled = tools::demangle(event.mangled_name);
    names->function = tools::function_base_name(names->demangled);
    names->matches_filter = config_.kernel_filter.matches(event.mangled_name, names->demangled,
                                                          names->function);
    names->no_replay = is_communication_kernel(names->function);
  }
  std::unique_ptr<KernelState>& ks = kernels_[{event.mangled_name, event.device}];
  if (!ks) {
    ks = std::make_unique<KernelState>();
    ks->mangled = event.mangled_name;
    ks->device = event.device;
    ks->names = names;
    ks->stats.mangled_name = event.mangled_name;
  }
  kernel = ks.get();
  ++kernel->stats.launches;

  if (event.stream_capturing) {
    ++kernel->stats.captured;
    ++totals_.captured_launches;
    return std::nullopt;
  }
  if (!names->matches_filter) {
    ++kernel->stats.filtered;
    return std::nullopt;
  }
  if (++matching_launches_ <= config_.launch_skip) {
    ++kernel->stats.filtered;
    return std::nullopt;
  }
  if (event.cooperative || names->no_replay) {
    ++kernel->stats.not_replayable;
    ++totals_.not_replayable_launches;
    return std::vector<std::string>{};  // empty: record why, once, without profiling
  }
  if (state_.load() != wire::AgentState::kActive) {
    ++kernel->stats.filtered;
    return std::nullopt;
  }
  if ((config_.launch_count != 0 && profiles_started_ >= config_.launch_count) ||
      kernel->complete || kernel->profiles_started >= config_.max_profiles_per_kernel) {
    ++kernel->stats.filtered;
    return std::nullopt;
  }
  // Counters measured on different launches are combined, so only launches of the same shape.
  if (kernel->first_launch && event.launch && !same_shape(*kernel->first_launch, *event.launch)) {
    ++kernel->stats.filtered;
    return std::nullopt;
  }

  std::vector<std::string> wanted;
  switch (config_.metric_mode) {
    case MetricMode::kFull: wanted = all_counters(); break;
    case MetricMode::kBase:
      wanted = triage::counters_for_decisions(triage::routing_decisions());
      break;
    case MetricMode::kList: wanted = config_.metric_list; break;
    case MetricMode::kAdaptive:
      if (kernel->diagnosis) {
        wanted = triage::counters_still_needed(*kernel->diagnosis, kernel->measured,
                                               {kernel->attempted.begin(), kernel->attempted.end()});
        if (wanted.empty()) {
          kernel->complete = true;
          ++kernel->stats.filtered;
          return std::nullopt;
        }
      } else if (config_.max_profiles_per_kernel == 1) {
        wanted = all_counters();  // no second launch to adapt on: everything at once
      } else {
        wanted = first_stage_counters(chip);
      }
      break;
  }
  if (wanted.empty()) {
    kernel->complete = true;
    ++kernel->stats.filtered;
    return std::nullopt;
  }
  ++kernel->profiles_started;
  ++profiles_started_;
  if (!kernel->first_launch && event.launch) kernel->first_launch = event.launch;
  kernel->attempted.insert(wanted.begin(), wanted.end());
  return wanted;
}

std::optional<collectors::DeviceInfo> Agent::device_info(uint32_t device) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = devices_.find(device); it != devices_.end()) return it->second;
    if (devices_failed_.count(device)) return std::nullopt;
  }
  collectors::Result<collectors::DeviceInfo> r = platform_.device_info(device);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!r.is_ok()) {
    devices_failed_.insert(device);
    log_.log_once(LogLevel::kWarn, "device-" + std::to_string(device),
                  "cannot read the limits of device " + std::to_string(device) + " (" +
                      r.status().message() + "); occupancy and waves will be missing");
    return std::nullopt;
  }
  devices_[device] = r.value();
  return r.value();
}

std::shared_ptr<Agent::ContextState> Agent::context_for(const LaunchEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<ContextState>& ctx = contexts_[event.context_id];
  if (!ctx) {  // a context created before the agent subscribed
    ++contexts_seen_;
    ctx = std::make_shared<ContextState>();
    ctx->event = ContextEvent{event.context_id, event.context, event.device};
  }
  return ctx;
}

std::shared_ptr<collectors::ProfilerHost> Agent::host_for(const std::string& chip, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = hosts_.find(chip); it != hosts_.end()) return it->second;
    if (hosts_failed_.count(chip)) {
      *error = "the profiler host for " + chip + " could not be created";
      return nullptr;
    }
  }
  collectors::Result<std::unique_ptr<collectors::ProfilerHost>> r = platform_.make_profiler_host(chip);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!r.is_ok()) {
    hosts_failed_.insert(chip);
    *error = r.status().message();
    return nullptr;
  }
  std::shared_ptr<collectors::ProfilerHost> host = std::move(r).value();
  hosts_[chip] = host;
  return host;
}

void Agent::launch_enter(const LaunchEvent& event) {
  if (finished_.load()) return;
  KernelState* kernel = nullptr;
  uint64_t launch_index = 0;
  // The chip decides the first stage's counters; device facts are cached after the first call.
  std::string chip;
  if (event.api != LaunchApi::kGraphLaunch && !event.stream_capturing) {
    if (std::optional<collectors::DeviceInfo> dev = device_info(event.device)) chip = dev->limits.chip;
  }
  std::optional<std::vector<std::string>> wanted = select(event, chip, kernel, launch_index);
  if (!wanted) return;
  if (wanted->empty()) {  // never replayed
    std::string why = event.cooperative
                          ? "cooperative launch: its blocks may wait on each other, so it is never replayed"
                          : "communication kernel: it may wait on other GPUs or the host, so it is never replayed";
    record_unprofiled(event, *kernel, wire::ProfileStatus::kNotProfiledNoReplay, why);
    return;
  }

  std::shared_ptr<ContextState> ctx = context_for(event);
  bool expected = false;
  if (!ctx->busy.compare_exchange_strong(expected, true)) {
    // Another thread is profiling on this context right now: let this launch run unprofiled
    // rather than wait (the range profiler serves one launch per context at a time).
    std::lock_guard<std::mutex> lock(mutex_);
    --kernel->profiles_started;
    --profiles_started_;
    ++kernel->stats.filtered;
    return;
  }

  // One range profiler per device holds the counters while it is enabled: a second context's
  // Start fails with CUPTI_ERROR_HARDWARE_BUSY (seen on the H200). Switch the device over to this
  // context: disable the profilers of the device's other contexts, unless one of them is
  // profiling a launch right now, in which case this launch runs unprofiled.
  {
    std::vector<std::shared_ptr<ContextState>> others;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [id, other] : contexts_) {
        if (other && other != ctx && other->event.device == event.device) others.push_back(other);
      }
    }
    for (const std::shared_ptr<ContextState>& other : others) {
      bool other_busy = false;
      {
        // busy is re-read under the other context's lock: its owner sets busy before taking the
        // lock to begin, so a profile that started meanwhile is seen here and never disabled.
        std::lock_guard<std::mutex> lock(other->profiler_mutex);
        other_busy = other->busy.load();
        if (!other_busy && other->profiler) (void)other->profiler->disable();
      }
      if (other_busy) {
        ctx->busy.store(false);
        std::lock_guard<std::mutex> lock(mutex_);
        --kernel->profiles_started;
        --profiles_started_;
        ++kernel->stats.filtered;
        return;
      }
    }
  }

  auto active = std::make_unique<ActiveProfile>();
  active->owner = this;
  active->context = ctx;
  active->kernel = kernel;
  active->launch_index = launch_index;
  active->correlation_id = event.correlation_id;
  active->event = event;

  auto give_up = [&](wire::ProfileStatus status, const std::string& detail) {
    ctx->busy.store(false);
    record_unprofiled(event, *kernel, status, detail);
  };

  std::optional<collectors::DeviceInfo> dev = device_info(event.device);
  if (!dev || dev->limits.chip.empty()) {
    give_up(wire::ProfileStatus::kFailed, "chip of device " + std::to_string(event.device) + " unknown");
    return;
  }
  std::string error;
  active->host = host_for(dev->limits.chip, &error);
  if (!active->host) {
    give_up(wire::ProfileStatus::kFailed, "profiler host: " + error);
    return;
  }
  collectors::Result<collectors::MetricPlan> plan = active->host->plan(*wanted);
  if (!plan.is_ok()) {
    give_up(wire::ProfileStatus::kFailed, "metric plan: " + plan.status().message());
    return;
  }
  active->plan = std::move(plan).value();

  if (active->event.launch) {
    collectors::Status s = platform_.complete_launch_config(event, &*active->event.launch);
    if (!s.is_ok()) {
      log_.log_once(LogLevel::kWarn, "func-attr",
                    "registers and shared memory of " + kernel->names->function +
                        " unavailable (" + s.message() + "); occupancy checks will be missing");
    }
  }

  {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    if (!ctx->profiler && !ctx->profiler_failed) {
      collectors::Result<std::unique_ptr<collectors::RangeProfiler>> rp =
          platform_.make_range_profiler(ctx->event);
      if (rp.is_ok()) {
        ctx->profiler = std::move(rp).value();
      } else {
        ctx->profiler_failed = true;
        if (rp.status().code() == StatusCode::kPermissionDenied) {
          set_inactive(wire::AgentState::kPermissionDenied, rp.status().message());
          ctx->busy.store(false);
          record_unprofiled(event, *kernel, wire::ProfileStatus::kNotProfiledPermission,
                            rp.status().message());
          return;
        }
        write_notice(wire::Severity::kError, "range_profiler_failed",
                     "range profiler unavailable on context " + std::to_string(event.context_id) +
                         ": " + rp.status().message());
      }
    }
    if (!ctx->profiler) {
      ctx->busy.store(false);
      record_unprofiled(event, *kernel, wire::ProfileStatus::kFailed,
                        "range profiler unavailable on this context");
      return;
    }
    collectors::Status s = ctx->profiler->begin(active->plan);
    if (!s.is_ok()) {
      ctx->busy.store(false);
      if (s.code() == StatusCode::kPermissionDenied) {
        set_inactive(wire::AgentState::kPermissionDenied, s.message());
        record_unprofiled(event, *kernel, wire::ProfileStatus::kNotProfiledPermission, s.message());
      } else {
        record_unprofiled(event, *kernel, wire::ProfileStatus::kFailed, "range profiler start: " + s.message());
      }
      return;
    }
  }
  active_slot() = std::move(active);
}

void Agent::launch_exit(const LaunchEvent& event) {
  std::unique_ptr<ActiveProfile>& slot = active_slot();
  if (!slot || slot->owner != this || slot->correlation_id != event.correlation_id) return;
  complete_profile(*slot, event);
}

// ---- completion --------------------------------------------------------------------------

void Agent::fill_kernel_input(const LaunchEvent& event, const KernelState& kernel,
                              uint64_t launch_index, triage::KernelInput& input) {
  input.mangled_name = kernel.mangled;
  input.demangled_name = kernel.names->demangled;
  input.function_name = kernel.names->function;
  input.device = event.device;
  input.launch_index = launch_index;
  input.launch = event.launch;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = devices_.find(event.device); it != devices_.end()) {
    input.device_limits = it->second.limits;
  }
}

void Agent::complete_profile(ActiveProfile& active, const LaunchEvent& exit_event) {
  (void)exit_event;
  collectors::Result<collectors::CounterData> data = [&] {
    std::lock_guard<std::mutex> lock(active.context->profiler_mutex);
    return active.context->profiler->end();
  }();
  if (!data.is_ok()) {
    record_failure(active, "range profiler stop/decode: " + data.status().message());
    return;
  }
  collectors::Result<std::vector<collectors::MetricReading>> readings =
      active.host->evaluate(active.plan, data.value());
  if (!readings.is_ok()) {
    record_failure(active, "metric evaluation: " + readings.status().message());
    return;
  }

  KernelState& kernel = *active.kernel;
  wire::KernelRecord record;
  fill_kernel_input(active.event, kernel, active.launch_index, record.input);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const collectors::MetricReading& r : readings.value()) {
      kernel.measured.set(r.name, r.value, unit_for(r.name));
      kernel.measured_on[r.name] = active.launch_index;
    }
    for (const collectors::RejectedMetric& rj : active.plan.rejected) {
      if (std::find(kernel.rejected.begin(), kernel.rejected.end(), rj.name) == kernel.rejected.end()) {
        kernel.rejected.push_back(rj.name);
      }
    }
    record.input.metrics = kernel.measured;
    for (const auto& [name, launch] : kernel.measured_on) {
      if (launch != active.launch_index) record.metric_launch[name] = launch;
    }
    record.combined_launch_indices = kernel.profiled_launches;
    kernel.profiled_launches.push_back(active.launch_index);
    record.profile_number = static_cast<uint32_t>(kernel.profiled_launches.size());
    record.rejected_metrics = kernel.rejected;
    ++kernel.stats.profiled;
    ++totals_.profiled_launches;
  }
  record.input.collection.replay_mode = triage::ReplayMode::kKernel;
  record.input.collection.clock_control = triage::ClockControl::kNone;
  record.input.collection.passes = active.plan.passes;
  record.input.collection.cache_control = "all";
  record.context_id = active.event.context_id;
  record.stream_id = active.event.stream_id;
  record.correlation_id = active.event.correlation_id;
  record.launch_api = to_wire(active.event.api);
  record.status = wire::ProfileStatus::kProfiled;
  if (auto d = record.input.metrics.get("gpu__time_duration.sum")) record.duration_ns = *d;

  record.diagnosis = triage::triage_kernel(record.input, triage_options_);

  {
    std::lock_guard<std::mutex> lock(mutex_);
    kernel.diagnosis = record.diagnosis;
    kernel.last_status = record.status;
    kernel.last_detail.clear();
    if (config_.metric_mode != MetricMode::kAdaptive) {
      kernel.complete = true;
    } else {
      kernel.uncollected = triage::counters_still_needed(
          record.diagnosis, kernel.measured, {kernel.attempted.begin(), kernel.attempted.end()});
      if (kernel.uncollected.empty()) kernel.complete = true;
    }
  }
  write_kernel(record);
}

void Agent::record_failure(ActiveProfile& active, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++active.kernel->stats.failed;
    ++totals_.failed_profiles;
  }
  record_unprofiled(active.event, *active.kernel, wire::ProfileStatus::kFailed, what);
}

void Agent::record_unprofiled(const LaunchEvent& event, KernelState& kernel,
                              wire::ProfileStatus status, const std::string& detail) {
  wire::KernelRecord record;
  uint64_t launch_index = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    launch_index = launch_counter_;
    kernel.last_status = status;
    kernel.last_detail = detail;
    if (status == wire::ProfileStatus::kFailed && kernel.stats.failed == 0) {
      ++kernel.stats.failed;
      ++totals_.failed_profiles;
    }
    // Kernels that are never profiled get one record saying why, not one per launch.
    if (status != wire::ProfileStatus::kFailed) {
      if (kernel.wrote_unprofiled) return;
      kernel.wrote_unprofiled = true;
    }
  }
  if (status == wire::ProfileStatus::kFailed) {
    log_.log_once(LogLevel::kWarn, "fail-" + kernel.mangled,
                  "could not profile " + kernel.names->function + ": " + detail);
  }
  fill_kernel_input(event, kernel, launch_index, record.input);
  record.context_id = event.context_id;
  record.stream_id = event.stream_id;
  record.correlation_id = event.correlation_id;
  record.launch_api = to_wire(event.api);
  record.status = status;
  record.status_detail = detail;
  record.diagnosis.headline = "not profiled: " + detail;
  write_kernel(record);
}

// ---- output ------------------------------------------------------------------------------

void Agent::ensure_header_locked() {
  if (header_written_) return;
  header_written_ = true;
  wire::SessionInfo s;
  s.agent_version = kAgentVersion;
  s.host = process_.host;
  s.pid = process_.pid;
  s.command_line = process_.command_line;
  s.start_time_unix_ns = start_time_ns_;
  // Every visible GPU, not only those used so far: the header is written once, before later
  // launches may reach other devices. Runs inside a callback, after cuInit.
  if (collectors::Result<uint32_t> n = platform_.device_count(); n.is_ok()) {
    for (uint32_t d = 0; d < n.value(); ++d) (void)device_info(d);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [ordinal, info] : devices_) {
      s.gpus.push_back(wire::GpuInfo{info.device, info.name, info.uuid, info.limits});
    }
  }
  collectors::VersionInfo v = platform_.versions();
  s.driver_version = v.driver;
  s.cupti_version = v.cupti;
  s.replay_mode = triage::ReplayMode::kKernel;
  s.clock_control = triage::ClockControl::kNone;
  s.cache_control = "all";
  s.metric_set = metric_mode_name(config_.metric_mode);
  s.kernel_filter = config_.kernel_filter.spec();
  s.source = wire::SessionSource::kAgent;
  if (sink_) sink_->append(encoder_.session(s));
}

void Agent::write_bytes_locked(const std::string& bytes) {
  ensure_header_locked();
  if (sink_) sink_->append(bytes);
}

void Agent::write_kernel(const wire::KernelRecord& record) {
  std::lock_guard<std::mutex> lock(output_mutex_);
  ensure_header_locked();
  std::string bytes = encoder_.kernel(record);
  if (sink_) sink_->append(bytes);
}

void Agent::write_notice(wire::Severity severity, const std::string& code, const std::string& message) {
  wire::Notice n{severity, code, message, process_.now_unix_ns()};
  std::lock_guard<std::mutex> lock(output_mutex_);
  ensure_header_locked();
  std::string bytes = encoder_.notice(n);
  if (sink_) sink_->append(bytes);
}

void Agent::set_inactive(wire::AgentState state, const std::string& detail) {
  wire::AgentState expected = wire::AgentState::kActive;
  if (!state_.compare_exchange_strong(expected, state)) return;  // said once
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_detail_ = detail;
  }
  log_.error(detail + "; the application continues unprofiled");
  write_notice(wire::Severity::kError,
               state == wire::AgentState::kPermissionDenied ? "permission_denied" : "profiler_failed",
               detail);
}

wire::SessionEnd Agent::session_end() const {
  std::lock_guard<std::mutex> lock(mutex_);
  wire::SessionEnd e = totals_;
  e.state = state_.load();
  e.state_detail = state_detail_;
  for (const auto& [key, k] : kernels_) e.kernels.push_back(k->stats);
  return e;
}

std::vector<KernelSummary> Agent::kernels() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<KernelSummary> out;
  for (const auto& [key, k] : kernels_) {
    KernelSummary s;
    s.function_name = k->names->function;
    s.mangled_name = k->mangled;
    s.device = k->device;
    s.stats = k->stats;
    s.diagnosis = k->diagnosis;
    s.last_status = k->last_status;
    s.last_status_detail = k->last_detail;
    s.uncollected = k->uncollected;
    out.push_back(std::move(s));
  }
  return out;
}

void Agent::finish() {
  if (finished_.exchange(true)) return;
  try {
    wire::SessionEnd end = session_end();
    end.end_time_unix_ns = process_.now_unix_ns();
    bool saw_gpu_work = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      saw_gpu_work = contexts_seen_ > 0 || end.kernel_launches > 0 || end.graph_launches > 0;
    }
    if (!saw_gpu_work && subscribed_.load()) {
      // CUDA was initialized but never used a GPU (none visible, or the process only probed):
      // one line, no file.
      log_.warn("no CUDA context was created in this process (no usable GPU?); nothing was profiled");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(output_mutex_);
      if (state_.load() != wire::AgentState::kNoGpu &&
          state_.load() != wire::AgentState::kOtherSubscriber) {
        write_bytes_locked(encoder_.session_end(end));
      }
    }
    if (!config_.summary || !subscribed_.load()) return;
    std::vector<KernelSummary> ks = kernels();
    size_t profiled = 0;
    for (const KernelSummary& k : ks) profiled += k.diagnosis ? 1 : 0;
    std::string head = std::to_string(profiled) + " of " + std::to_string(ks.size()) +
                       " kernels profiled (" + std::to_string(end.profiled_launches) + " of " +
                       std::to_string(end.kernel_launches) + " launches)";
    if (sink_ && !sink_->failed()) head += "; details: cutriage report " + sink_->describe();
    log_.summary(head);
    for (const KernelSummary& k : ks) {
      if (k.diagnosis) {
        log_.summary("  " + k.function_name + ": " + k.diagnosis->headline);
        if (!k.diagnosis->next_action.empty()) log_.summary("    next: " + k.diagnosis->next_action);
        if (!k.uncollected.empty()) {
          log_.summary("    partial: " + std::to_string(k.uncollected.size()) +
                       " counters the route wanted were not collected (the kernel was not launched "
                       "again); CUTRIAGE_METRICS=full collects everything in one launch");
        }
      } else if (k.last_status != wire::ProfileStatus::kUnspecified &&
                 k.last_status != wire::ProfileStatus::kNotProfiledPermission) {
        log_.summary("  " + k.function_name + ": not profiled: " + k.last_status_detail);
      }
    }
    if (end.graph_launches > 0) {
      log_.summary("  " + std::to_string(end.graph_launches) +
                   " CUDA graph launches: kernels inside graphs are not profiled in this version");
    }
    if (end.captured_launches > 0) {
      log_.summary("  " + std::to_string(end.captured_launches) +
                   " launches into streams under capture: recorded into graphs, not profiled");
    }
    if (state_.load() == wire::AgentState::kPermissionDenied) {
      log_.summary("  nothing profiled: counters not permitted (see the message above for the fix)");
    }
  } catch (...) {
    log_.log_once(LogLevel::kError, "finish", "internal error while finishing");
  }
}

}  // namespace cutriage::agent
