#include "agent.h"

#include <cstdio>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <utility>

#include "cutriage/collectors/cubin.h"
#include "cutriage/triage/plan.h"
#include "cutriage/base/demangle.h"
#include "pc_summary.h"
#include "prometheus.h"
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

// One kernel family: a mangled name on one device with one block shape. Owned by kernels_ and
// never destroyed while the agent lives. The atomics are read on the launch fast path; fields
// marked (trace) belong to trace_mutex_, (output) to output_mutex_, the rest to mutex_.
struct Agent::KernelState {
  uint64_t family_id = 0;
  std::string mangled;
  uint32_t device = 0;
  triage::Dim3 block;
  std::shared_ptr<NameInfo> names;
  std::atomic<uint64_t> launches{0};      // launch callbacks seen
  std::atomic<uint64_t> not_replayable{0};  // cooperative or communication launches
  std::atomic<bool> candidate{false};     // the next launch goes through select()
  std::atomic<bool> traced{false};        // an execution has been traced (durations known)
  bool ranked = false;
  uint32_t rank = 0;                      // 1-based rank by traced GPU time; 0 = not ranked yet
  double share = 0.0;                     // its share of the traced GPU time (always-on's switches)
  std::map<uint32_t, uint64_t> nvtx_launches;  // (trace) NVTX path id -> executions
  bool family_written = false;                 // (output) its KernelFamily record is in the file
  std::optional<wire::KernelRecord> last_record;  // latest profiled record, rewritten at the end
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
  // PC sampling comes after the counters: one launch per family, then never again (failed
  // included); select() sets it, a launch that could not be sampled after all clears it.
  // Always-on: sampled again CUTRIAGE_PC_SAMPLING_INTERVAL seconds after pc_sampled_mono_ns.
  bool pc_started = false;
  uint64_t pc_sampled_mono_ns = 0;
  // Always-on: the launches the measured counters were assembled from, one group each.
  std::vector<triage::AssembledLaunch> assembled;
  uint64_t deep_request = 0;  // the deep-capture request that last profiled it
  bool complete_noted = false;  // always-on: the "diagnosis complete" notice was written
  bool resume_checked = false;  // always-on: CUTRIAGE_RESUME was looked up for this family
  // Always-on: launches of another shape than the earlier process's that came to the selection
  // while the family waited for one of that shape (see resume_family_locked).
  uint32_t resume_shape_misses = 0;
  // The record of what it resumed, until launch_enter writes it (outside mutex_).
  std::optional<wire::KernelRecord> resumed_record;
  std::atomic<bool> resumed_unwritten{false};
  // The earlier output has this family (name and block): its first candidate launch comes to the
  // selection whatever the budget says, to take it (nothing is profiled for that).
  std::atomic<bool> resume_pending{false};
  // Always-on: what select() last found this family still wants (breakdown parts expanded),
  // sorted; other families' group choices count it, so that one switch serves several.
  std::vector<std::string> ao_wanted;
  // Always-on: its launches skip the selection until then (monotonic ns): it waits for a switch
  // the budget cannot pay yet, for the rate limit, or while other families take the configured
  // group, and the fast path must not run the selection on each of its launches meanwhile.
  std::atomic<uint64_t> not_before_ns{0};
  // Always-on: when a launch of this candidate last came through the fast path (monotonic ns); 0
  // after a launch of another shape than the one its counters are assembled on. The switch
  // policy's "still launching".
  std::atomic<uint64_t> seen_mono_ns{0};
};

// One CUDA context. Shared so a launch in flight keeps it alive through a concurrent destroy.
struct Agent::ContextState {
  ContextEvent event;
  std::mutex profiler_mutex;  // creation of `profiler`
  std::unique_ptr<collectors::RangeProfiler> profiler;
  bool profiler_failed = false;
  // PC sampling on this context (under profiler_mutex too: CUPTI lets one of the two be enabled
  // on a context at a time, and the agent switches between them there).
  std::unique_ptr<collectors::PcSampler> sampler;
  bool sampler_failed = false;
  std::string sampler_error;
  std::atomic<bool> busy{false};  // a profiled launch is between entry and exit on this context
  // Always-on: the single-pass group the context's range profiler is configured with (-1: none
  // or another plan). A launch of that group costs little; another group re-enables (costly).
  std::atomic<int> configured_group{-1};
  std::atomic<uint64_t> configured_mono_ns{0};  // when configured_group was configured
  // Always-on: when the last profiled launch on this context ended, while its range profiler is
  // still enabled; 0 once released (release_idle_profilers) or never used.
  std::atomic<uint64_t> profiled_end_mono_ns{0};
};

// NVTX ranges open on one application thread, as CUPTI's callbacks reported them.
struct Agent::NvtxThread {
  uint64_t agent = 0;  // instance_id_ of the agent this state belongs to
  struct Open {
    std::string name;
    std::string domain;
    uint64_t start_ns = 0;
    uint32_t path = 0;      // path id including this range
    std::string path_text;  // "outer/inner", this range last
  };
  std::vector<Open> stack;
  std::shared_ptr<CorrelationBuffer> correlations;
  uint32_t path() const { return stack.empty() ? 0 : stack.back().path; }
};

// Launches made inside NVTX ranges, from one thread, waiting to be matched with their executions.
// The application thread appends under its own (uncontended) lock; the trace side drains it.
struct Agent::CorrelationBuffer {
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint32_t>> items;  // correlation id, NVTX path id
};

struct Agent::ActivityKey {
  const char* name = nullptr;  // CUPTI shares one name pointer among a kernel's records
  uint32_t device = 0;
  triage::Dim3 block;
  bool operator==(const ActivityKey& o) const {
    return name == o.name && device == o.device && block == o.block;
  }
};

size_t Agent::ActivityKeyHash::operator()(const ActivityKey& k) const noexcept {
  size_t h = std::hash<const void*>()(k.name);
  h ^= (size_t{k.device} << 48) ^ (size_t{k.block.x} << 20) ^ (size_t{k.block.y} << 10) ^ k.block.z;
  return h;
}

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
  std::shared_lock<std::shared_mutex> gate;  // no activity flush until this profile ends
  uint64_t begin_trace_ns = 0;  // trace clock when the range profiler started
  bool pc_sampling = false;     // PC sampling instead of the range profiler
  // Always-on accounting: when launch entry began (monotonic), what the budget reserved.
  uint64_t started_mono_ns = 0;
  bool budgeted = false;
  CostKind cost = CostKind::kSameGroup;
  int group = -1;          // always-on single-pass group, -1 otherwise
  uint64_t deep = 0;       // deep-capture request id, 0 = none
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

std::string dim3_text(const triage::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
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

namespace {
std::atomic<uint64_t> g_next_instance{1};

// Closed NVTX ranges waiting for the next trace chunk, and open start/end ranges: bounded so an
// application that opens ranges without closing them cannot grow the agent's memory.
constexpr size_t kMaxPendingNvtx = 100000;

uint32_t os_thread_id() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }
}  // namespace

Agent::Agent(AgentConfig config, collectors::Platform& platform, std::unique_ptr<RecordSink> sink,
             Logger& log, ProcessInfo process, triage::Thresholds thresholds)
    : config_(std::move(config)),
      platform_(platform),
      sink_(std::move(sink)),
      log_(log),
      process_(std::move(process)),
      instance_id_(g_next_instance.fetch_add(1)),
      cubins_(config_.cubin_cache_mb << 20),
      always_on_(config_.mode == AgentMode::kAlwaysOn) {
  triage_options_.thresholds = std::move(thresholds);
  if (!process_.now_unix_ns) process_.now_unix_ns = [] { return uint64_t{0}; };
  if (!process_.monotonic_ns) {
    process_.monotonic_ns = [] {
      return static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
              .count());
    };
  }
  start_time_ns_ = process_.now_unix_ns();
  if (always_on_) {
    BudgetOptions b;
    b.fraction = config_.budget_fraction;
    b.max_per_second = config_.budget_rate;
    budget_ = std::make_unique<Budget>(b, monotonic_now());
  }
  if (config_.segment_mb > 0 || config_.segment_seconds > 0) segment_index_ = 1;
}

uint64_t Agent::monotonic_now() const { return process_.monotonic_ns(); }

Agent::~Agent() { stop_flush_thread(); }

bool Agent::start() {
  if (always_on_ && !config_.resume_path.empty()) {
    try {
      load_resume();
    } catch (...) {
      resume_.clear();
      log_.warn("CUTRIAGE_RESUME: cannot read " + config_.resume_path + "; every family starts afresh");
    }
  } else if (!config_.resume_path.empty()) {
    log_.info("CUTRIAGE_RESUME is for always-on mode; deep mode starts every family afresh");
  }
  collectors::Status s = platform_.subscribe(this);
  if (s.is_ok()) {
    subscribed_ = true;
    if (config_.trace) {
      // 1 MB buffers (about 4,000 kernel records) come back full often enough to rank a busy
      // application's families within its first seconds; 32 of them bound the memory.
      collectors::TraceOptions options;
      options.buffer_bytes = size_t{1} << 20;
      options.max_buffers = 32;
      collectors::Status t = platform_.start_trace(this, options);
      if (t.is_ok()) {
        trace_clock_at_start_ns_ = platform_.timestamp_ns();
        start_time_ns_ = process_.now_unix_ns();  // read together with the trace clock
        trace_cycle_start_mono_ns_ = monotonic_now();
        trace_started_ = true;
        if (config_.trace_flush_ms > 0) {
          try {
            flush_thread_ = std::thread([this] { flush_loop(); });
            flush_thread_id_ = flush_thread_.get_id();
            flush_running_.store(true);
          } catch (...) {
            log_.warn("cannot start the trace flush thread; trace records are collected at exit only");
          }
        }
      } else {
        // Profiling still works by name; ranking needs the trace.
        std::string what = "the kernel trace could not start (" + t.message() + ")";
        if (config_.select == SelectMode::kTop || config_.select == SelectMode::kShare) {
          what += "; every kernel is profiled from its first launch instead of the top ones";
        }
        log_.warn(what);
        write_notice(wire::Severity::kWarning, "trace_failed", what);
      }
    }
    if (config_.control_signal != ControlSignal::kOff) {
      std::string why;
      if (!install_control_signal(config_.control_signal, &why)) {
        log_.warn("CUTRIAGE_CONTROL_SIGNAL: no handler installed: " + why);
      }
    }
    if ((!config_.control_file.empty() || config_.control_signal != ControlSignal::kOff) && !flush_thread_.joinable()) {
      log_.warn("CUTRIAGE_CONTROL_FILE and CUTRIAGE_CONTROL_SIGNAL are read by the trace's flush thread, which "
                "is not running (CUTRIAGE_TRACE=0 or CUTRIAGE_TRACE_FLUSH_MS=0); use cutriage_request_deep_capture");
    }
    log_.info(std::string(always_on_ ? "always-on profiling" : "profiling") + "; results go to " + output_path());
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

// ---- the flush thread ----------------------------------------------------------------------

void Agent::flush_loop() {
  pthread_setname_np(pthread_self(), "cutriage-trace");
  std::unique_lock<std::mutex> lock(flush_mutex_);
  auto last_prometheus = std::chrono::steady_clock::now();
  while (!flush_stop_) {
    flush_cv_.wait_for(lock, std::chrono::milliseconds(config_.trace_flush_ms), [this] { return flush_stop_; });
    if (flush_stop_) break;
    lock.unlock();
    try {
      std::unique_lock<std::shared_mutex> gate(cupti_gate_);
      platform_.flush_trace(false);
    } catch (...) {
    }
    try {
      cycle_trace();
      poll_control();
      check_deep_window();
      refresh_candidates();
      plan_pending_groups();
      release_idle_profilers();
    } catch (...) {
    }
    if (!config_.prometheus_file.empty() &&
        std::chrono::steady_clock::now() - last_prometheus >= std::chrono::milliseconds(config_.prometheus_interval_ms)) {
      last_prometheus = std::chrono::steady_clock::now();
      write_prometheus();
    }
    lock.lock();
  }
}

void Agent::cycle_trace() {
  if (!always_on_ || !(config_.trace_duty < 1.0) || !trace_started_.load()) return;
  const uint64_t period = uint64_t{config_.trace_period_s} * 1'000'000'000ULL;
  const auto on_ns = static_cast<uint64_t>(config_.trace_duty * static_cast<double>(period));
  const uint64_t now = monotonic_now();
  const uint64_t phase = now > trace_cycle_start_mono_ns_ ? (now - trace_cycle_start_mono_ns_) % period : 0;
  const bool want_on = phase < on_ns;
  if (want_on != trace_paused_) return;  // already as wanted
  std::unique_lock<std::shared_mutex> gate(cupti_gate_);
  if (!want_on) {
    // Records of work before the pause still come with later flushes.
    (void)platform_.pause_trace(true);
    trace_paused_ = true;
    trace_paused_at_ns_ = platform_.timestamp_ns();
    {
      // Records of kernels running now arrive later, with ends that cannot be trusted.
      std::lock_guard<std::mutex> lock(trace_mutex_);
      pause_starts_.push_back(trace_paused_at_ns_);
      if (pause_starts_.size() > 4) pause_starts_.erase(pause_starts_.begin());
    }
    // With the monotonic clock's reading, so that a benchmark can line the application's own
    // throughput up with the traced and paused windows (bench/trace_split.py).
    if (log_.enabled(LogLevel::kDebug)) log_.debug("kernel trace paused at monotonic " + std::to_string(now));
    if (!std::exchange(trace_duty_noticed_, true)) {
      char on_text[32];
      std::snprintf(on_text, sizeof on_text, "%.3g", static_cast<double>(on_ns) / 1e9);
      const std::string what = std::string("the kernel trace runs ") + on_text + " s of every " +
                               std::to_string(config_.trace_period_s) +
                               " s (CUTRIAGE_TRACE_DUTY): family times, shares and the ranking come from the "
                               "traced windows, and the time between them is neither busy nor idle";
      log_.info(what);
      write_notice(wire::Severity::kInfo, "trace_duty", what);
    }
    return;
  }
  // The pause is closed before the trace resumes, so before any record after it arrives.
  const uint64_t resumed_at = platform_.timestamp_ns();
  {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    wire::TraceChunk chunk;
    close_pause_locked(resumed_at, chunk);
    write_chunk_locked(chunk);
  }
  collectors::Status s = platform_.pause_trace(false);
  if (!s.is_ok()) {
    // Tried again at the next window; the ranking keeps what was traced so far.
    log_.log_once(LogLevel::kWarn, "trace-resume",
                  "the kernel trace could not be resumed (" + s.message() + "); trying again each window");
    trace_cycle_start_mono_ns_ = now - on_ns;  // this window counts as paused: wait for the next one
    trace_paused_at_ns_ = resumed_at;
    return;
  }
  trace_paused_ = false;
  if (log_.enabled(LogLevel::kDebug)) log_.debug("kernel trace resumed at monotonic " + std::to_string(now));
}

void Agent::close_pause_locked(uint64_t end_ns, wire::TraceChunk& chunk) {
  if (end_ns <= trace_paused_at_ns_) return;
  // The timeline, before records after the pause can arrive, so that the time across it is not
  // taken for idle time; the file, for a reader rebuilding the timeline of a killed run; the
  // Prometheus counter.
  timeline_.add_untraced(trace_paused_at_ns_, end_ns);
  chunk.untraced.emplace_back(trace_paused_at_ns_, end_ns);
  trace_paused_ns_.fetch_add(end_ns - trace_paused_at_ns_, std::memory_order_relaxed);
}

void Agent::stop_flush_thread() {
  {
    std::lock_guard<std::mutex> lock(flush_mutex_);
    flush_stop_ = true;
  }
  flush_cv_.notify_one();
  if (flush_thread_.joinable()) {
    try {
      flush_thread_.join();
    } catch (...) {
    }
  }
}

// ---- control: deep captures on request ------------------------------------------------------

uint64_t Agent::request_deep_capture(wire::ControlSource source, const std::string& target, uint32_t seconds,
                                     std::string* error) {
  wire::ControlRequest req;
  req.source = source;
  req.target = target.empty() ? config_.deep_target : target;
  req.window_seconds = seconds == 0 ? config_.deep_seconds : seconds;
  req.requested_unix_ns = process_.now_unix_ns();
  std::string why;
  std::optional<DeepTarget> parsed;
  if (finished_.load() || state_.load() != wire::AgentState::kActive || !subscribed_.load()) {
    why = "the agent is not profiling";
  } else if (seconds > 3600) {
    why = "the window must be 1 to 3600 seconds";
  } else {
    parsed = parse_deep_target(req.target, config_.kernel_filter.base(), &why);
  }
  // A refused request is written and said once per reason: an application calling in a loop must
  // not fill the file or the log.
  bool first_of_kind = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    req.id = next_request_id_++;
    if (why.empty() && deep_) why = "deep capture " + std::to_string(deep_->request.id) + " is still open";
    if (why.empty() && parsed.has_value()) {  // parsed whenever nothing was refused
      req.state = wire::ControlState::kStarted;
      DeepWindow window;
      window.request = req;
      window.top = parsed->top;
      window.filter = std::move(parsed->filter);
      window.end_mono_ns = monotonic_now() + uint64_t{static_cast<uint32_t>(req.window_seconds)} * 1000000000ULL;
      deep_ = std::move(window);
      deep_open_.store(true);
      for (KernelState* k : families_) update_candidate_locked(*k);
    } else {
      req.state = wire::ControlState::kRejected;
      req.detail = why;
      req.ended_unix_ns = req.requested_unix_ns;
      first_of_kind = control_errors_.insert(why).second;
    }
  }
  if (first_of_kind) write_control(req);
  if (!why.empty()) {
    if (error != nullptr) *error = why;
    // Info, not a warning: the caller has the answer (0) and the output has the record.
    if (first_of_kind) log_.info("deep capture refused: " + why);
    return 0;
  }
  log_.info("deep capture " + std::to_string(req.id) + " of " + req.target + " for " +
            std::to_string(static_cast<int>(req.window_seconds)) + " s");
  return req.id;
}

void Agent::check_deep_window() {
  if (!deep_open_.load()) return;  // the flush thread asks every tick
  wire::ControlRequest done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!deep_) return;
    const uint64_t now = monotonic_now();
    // Everything targeted is captured: the top N all profiled (and sampled); a name filter's
    // families are not known in advance, so its window runs to the end.
    bool complete = false;
    if (deep_->top > 0) {
      uint32_t targeted = 0;
      uint32_t finished = 0;
      for (const KernelState* k : families_) {
        if (k->rank == 0 || k->rank > deep_->top) continue;
        ++targeted;
        const bool sampled = !config_.pc_sampling || deep_->sampled.count(k->family_id) > 0;
        if (deep_->captured.count(k->family_id) > 0 && sampled) ++finished;
      }
      complete = targeted > 0 && finished == targeted;
    }
    if (!complete && now < deep_->end_mono_ns && !finished_.load()) return;
    done = deep_->request;
    done.state = complete ? wire::ControlState::kCompleted : wire::ControlState::kExpired;
    done.ended_unix_ns = process_.now_unix_ns();
    done.family_ids.assign(deep_->captured.begin(), deep_->captured.end());
    for (const KernelState* k : families_) {
      if (k->deep_request == done.id && k->last_record && k->last_record->status == wire::ProfileStatus::kProfiled) {
        ++done.profiled_launches;
      }
    }
    if (done.family_ids.empty()) done.detail = "no targeted family was launched in the window";
    deep_.reset();
    deep_open_.store(false);
    for (KernelState* k : families_) update_candidate_locked(*k);
  }
  write_control(done);
}

void Agent::write_control(const wire::ControlRequest& request) {
  std::lock_guard<std::mutex> lock(output_mutex_);
  write_bytes_locked([&] { return encoder_.control(request); });
}

void Agent::poll_control() {
  if (take_control_signal()) {
    std::string error;
    (void)request_deep_capture(wire::ControlSource::kSignal, "", 0, &error);
  }
  if (config_.control_file.empty()) return;
  std::string error;
  std::optional<std::string> text = take_control_file(config_.control_file, &error);
  if (!error.empty()) {
    log_.log_once(LogLevel::kWarn, "control-file: " + error, error);
    return;
  }
  if (!text) return;
  std::optional<DeepRequest> req = parse_control_command(*text, &error);
  if (!req) {
    wire::ControlRequest rejected;
    rejected.source = wire::ControlSource::kFile;
    rejected.state = wire::ControlState::kRejected;
    rejected.requested_unix_ns = process_.now_unix_ns();
    rejected.ended_unix_ns = rejected.requested_unix_ns;
    rejected.detail = config_.control_file + ": " + error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      rejected.id = next_request_id_++;
    }
    write_control(rejected);
    log_.warn("control file " + config_.control_file + ": " + error);
    return;
  }
  (void)request_deep_capture(wire::ControlSource::kFile, req->target, req->seconds, &error);
}

std::optional<wire::OverheadStats> Agent::overhead() const {
  if (!budget_) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  return budget_->stats(monotonic_now());
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
      ctx->sampler.reset();
    }
  } catch (...) {
    log_.log_once(LogLevel::kError, "ctx-destroy", "internal error in the context callback");
  }
}

void Agent::on_module_loaded(const collectors::ModuleEvent& event) {
  try {
    // How each kernel was built (line table, -G), for Decision 0 and what Decision 6 can say. Kept
    // as 8 bytes per kernel name hash: a framework loads tens of thousands of kernels. A hash
    // collision could only swap two kernels' build notes.
    collectors::Result<collectors::CubinInfo> info =
        event.cubin.empty() ? collectors::Result<collectors::CubinInfo>(collectors::Status(
                                  StatusCode::kInvalidArgument, "no cubin"))
                            : collectors::inspect_cubin(event.cubin.data(), event.cubin.size());
    if (info.is_ok() && config_.pc_sampling && config_.cubin_cache_mb > 0) cubins_.add(event.cubin);
    std::lock_guard<std::mutex> lock(mutex_);
    ++modules_loaded_;
    if (!info.is_ok()) return;
    const uint8_t flags = static_cast<uint8_t>((info.value().has_line_info ? kBuildLineInfo : 0) |
                                               (info.value().debug_build ? kBuildDebug : 0));
    for (const std::string& kernel : info.value().kernels) kernel_builds_[std::hash<std::string>()(kernel)] = flags;
  } catch (...) {
    log_.log_once(LogLevel::kError, "module", "internal error in the module callback");
  }
}

void Agent::fill_build_locked(const KernelState& kernel, triage::KernelInput& input) const {
  auto it = kernel_builds_.find(std::hash<std::string>()(kernel.mangled));
  if (it == kernel_builds_.end()) return;  // module not seen (loaded before the agent, or no cubin)
  input.collection.has_line_info = (it->second & kBuildLineInfo) != 0;
  input.collection.debug_build = (it->second & kBuildDebug) != 0;
}

bool Agent::on_launch_enter(const LaunchEvent& event) {
  try {
    if (finished_.load(std::memory_order_relaxed)) return false;
    if (event.api == LaunchApi::kGraphLaunch) {
      graph_launches_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    KernelState* kernel = kernel_for_launch(event);
    if (kernel == nullptr) return false;
    // Always-on without a flush thread: the release of an idle range profiler falls to the first
    // launch after it is due (any family's; one thread takes it). Costs one load per launch.
    if (uint64_t due = release_due_ns_.load(std::memory_order_relaxed); due != 0 && monotonic_now() >= due &&
        release_due_ns_.compare_exchange_strong(due, 0)) {
      release_idle_profilers();
    }
    kernel->launches.fetch_add(1, std::memory_order_relaxed);
    kernel_launches_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t launch_index = launch_counter_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (kernel->names->matches_filter) matching_launches_.fetch_add(1, std::memory_order_relaxed);
    if (event.cooperative || kernel->names->no_replay) {
      kernel->not_replayable.fetch_add(1, std::memory_order_relaxed);
      not_replayable_launches_.fetch_add(1, std::memory_order_relaxed);
    }
    if (trace_started_.load(std::memory_order_relaxed)) {
      NvtxThread& nvtx = nvtx_thread();
      if (nvtx.path() != 0 && nvtx.correlations) {
        std::lock_guard<std::mutex> lock(nvtx.correlations->mutex);
        nvtx.correlations->items.emplace_back(event.correlation_id, nvtx.path());
      }
      // Ranking needs a duration of this family, and a launched-again family may be worth
      // profiling now. CUPTI hands back a buffer only when every record in it is complete, so a
      // flush from the flush thread loses the race against this very launch's record; flushing
      // here, before this launch is recorded, delivers the earlier executions when the
      // application waited for them (a synchronizing loop). On the 2nd, 4th, 8th... launch of a
      // family with no traced execution yet: a few calls per family at most.
      const uint64_t n = kernel->launches.load(std::memory_order_relaxed);
      if (!kernel->traced.load(std::memory_order_relaxed) && n >= 2 && (n & (n - 1)) == 0 &&
          (config_.select == SelectMode::kTop || config_.select == SelectMode::kShare)) {
        // Forcing this flush (or retrying it from the flush thread a millisecond later) did not
        // help on the H200: a kernel that finished before a synchronization still came back
        // without timestamps until CUPTI's worker had completed its record, and forced flushes
        // lost the records of kernels in flight. An application that queues a family's launches
        // back to back without synchronizing is ranked after them (the report says so).
        std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
        if (gate.owns_lock()) platform_.flush_trace(false);
      }
    }
    if (!kernel->candidate.load(std::memory_order_relaxed)) return false;
    if (paused_.load(std::memory_order_relaxed)) return false;
    // Always-on: while the budget cannot admit anything, a candidate's launch costs one clock read.
    // While a configured profiler may still be taken on credit (credit_until_ns_), the families
    // come through once each and are then held by their own not_before_ns.
    if (budget_ && !deep_open_.load(std::memory_order_relaxed)) {
      const uint64_t now = monotonic_now();
      kernel->seen_mono_ns.store(now, std::memory_order_relaxed);
      if (!kernel->resume_pending.load(std::memory_order_relaxed)) {
        if (now < kernel->not_before_ns.load(std::memory_order_relaxed)) return false;
        if (!budget_->ready(now) && now >= credit_until_ns_.load(std::memory_order_relaxed)) return false;
      }
    }
    launch_enter(event, *kernel, launch_index);
    const std::unique_ptr<ActiveProfile>& slot = active_slot();
    return slot && slot->owner == this && slot->correlation_id == event.correlation_id;
  } catch (const std::exception& e) {
    log_.log_once(LogLevel::kError, "launch-enter", std::string("internal error at launch: ") + e.what());
    active_slot().reset();
  } catch (...) {
    log_.log_once(LogLevel::kError, "launch-enter", "internal error at launch");
    active_slot().reset();
  }
  return false;
}

Agent::KernelState* Agent::kernel_for_launch(const LaunchEvent& event) {
  // A few recent families per thread: an application launches the same kernels over and over
  // from one thread, so most launches are answered here without a lock.
  struct Entry {
    uint64_t agent = 0;
    const char* name = nullptr;
    uint32_t device = 0;
    triage::Dim3 block;
    KernelState* kernel = nullptr;
  };
  thread_local std::array<Entry, 8> cache{};
  thread_local size_t next = 0;
  const triage::Dim3 block = event.launch ? event.launch->block : triage::Dim3{0, 0, 0};
  for (const Entry& e : cache) {
    if (e.agent == instance_id_ && e.name == event.mangled_name.data() && e.device == event.device &&
        e.block == block && e.kernel->mangled == event.mangled_name) {
      return e.kernel;
    }
  }
  KernelState* kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kernel = kernel_for_locked(event.mangled_name, event.device, block);
  }
  cache[next] = Entry{instance_id_, event.mangled_name.data(), event.device, block, kernel};
  next = (next + 1) % cache.size();
  return kernel;
}

Agent::KernelState* Agent::kernel_for_locked(std::string_view mangled, uint32_t device,
                                             const triage::Dim3& block) {
  std::unique_ptr<KernelState>& ks =
      kernels_[std::make_tuple(std::string(mangled), device, block.x, block.y, block.z)];
  if (ks) return ks.get();
  auto it = names_.find(mangled);
  if (it == names_.end()) {
    auto names = std::make_shared<NameInfo>();
    names->demangled = tools::demangle(std::string(mangled));
    names->function = tools::function_base_name(names->demangled);
    names->matches_filter = config_.kernel_filter.matches(mangled, names->demangled, names->function);
    names->no_replay = is_communication_kernel(names->function);
    it = names_.emplace(std::string(mangled), std::move(names)).first;
  }
  ks = std::make_unique<KernelState>();
  ks->mangled = std::string(mangled);
  ks->device = device;
  ks->block = block;
  for (auto r = resume_.lower_bound(std::make_tuple(ks->mangled, std::string(), 0U, 0U, 0U));
       r != resume_.end() && std::get<0>(r->first) == ks->mangled; ++r) {
    if (std::get<2>(r->first) == block.x && std::get<3>(r->first) == block.y && std::get<4>(r->first) == block.z) {
      ks->resume_pending.store(true, std::memory_order_relaxed);
    }
  }
  ks->names = it->second;
  ks->stats.mangled_name = ks->mangled;
  families_.push_back(ks.get());
  ks->family_id = families_.size();
  update_candidate_locked(*ks);
  return ks.get();
}

void Agent::update_candidate_locked(KernelState& kernel) {
  bool wanted = false;
  switch (config_.select) {
    case SelectMode::kAll: wanted = true; break;
    case SelectMode::kNone: wanted = false; break;
    case SelectMode::kTop:
    case SelectMode::kShare:
      // Without a running trace nothing is ranked: profile by name, as with "all".
      wanted = trace_started_.load() ? kernel.ranked : true;
      break;
  }
  if (kernel.wrote_unprofiled || !kernel.names->matches_filter || state_.load() != wire::AgentState::kActive ||
      (!counters_left_locked(kernel) && !pc_sampling_left_locked(kernel))) {
    wanted = false;
  }
  // A deep-capture window overrides the selection for the families it targets.
  if (deep_targets_locked(kernel) && state_.load() == wire::AgentState::kActive && !kernel.wrote_unprofiled) {
    wanted = true;
  }
  kernel.candidate.store(wanted, std::memory_order_relaxed);
}

bool Agent::counters_left_locked(const KernelState& kernel) const {
  // Always-on collects one single-pass group per launch: as many launches as the route needs
  // groups (bounded, should the route keep asking).
  constexpr uint32_t kMaxAssembledLaunches = 64;
  const uint32_t per_kernel = always_on_ ? kMaxAssembledLaunches : config_.max_profiles_per_kernel;
  return !kernel.complete && kernel.profiles_started < per_kernel &&
         (config_.launch_count == 0 || profiles_started_ < config_.launch_count);
}

bool Agent::pc_sampling_left_locked(const KernelState& kernel) const {
  // After a profiled record exists: the samples join that record's diagnosis. CUTRIAGE_LAUNCH_COUNT
  // limits the counter launches only; sampling adds one launch per profiled family.
  if (!config_.pc_sampling || !kernel.last_record.has_value() ||
      kernel.last_record->status != wire::ProfileStatus::kProfiled) {
    return false;
  }
  if (!kernel.pc_started) return true;
  // Always-on: sampled again once the interval has passed (duty cycle).
  return always_on_ && config_.pc_sampling_interval_s > 0 && kernel.pc_sampled_mono_ns != 0 &&
         monotonic_now() - kernel.pc_sampled_mono_ns >= uint64_t{config_.pc_sampling_interval_s} * 1000000000ULL;
}

// ---- NVTX --------------------------------------------------------------------------------

Agent::NvtxThread& Agent::nvtx_thread() {
  thread_local NvtxThread state;
  if (state.agent != instance_id_) {
    state = NvtxThread{};
    state.agent = instance_id_;
    state.correlations = std::make_shared<CorrelationBuffer>();
    std::lock_guard<std::mutex> lock(nvtx_mutex_);
    correlation_buffers_.push_back(state.correlations);
  }
  return state;
}

void Agent::on_nvtx(const collectors::NvtxEvent& event) {
  try {
    if (finished_.load(std::memory_order_relaxed)) return;
    using Kind = collectors::NvtxEvent::Kind;
    NvtxThread& t = nvtx_thread();
    switch (event.kind) {
      case Kind::kPush: {
        NvtxThread::Open open;
        open.name = std::string(event.message);
        open.domain = std::string(event.domain);
        open.start_ns = event.timestamp_ns;
        open.path_text = t.stack.empty() ? open.name : t.stack.back().path_text + "/" + open.name;
        const std::string& path = open.path_text;
        {
          std::lock_guard<std::mutex> lock(nvtx_mutex_);
          auto [it, added] = nvtx_path_ids_.emplace(path, static_cast<uint32_t>(nvtx_paths_.size()));
          if (added) nvtx_paths_.push_back(path);
          open.path = it->second;
        }
        // Bounded: a push without pops (an application bug) cannot grow this without end.
        if (t.stack.size() < 256) t.stack.push_back(std::move(open));
        break;
      }
      case Kind::kPop: {
        if (t.stack.empty()) break;
        NvtxThread::Open open = std::move(t.stack.back());
        t.stack.pop_back();
        wire::NvtxRange r;
        r.name = std::move(open.name);
        r.domain = std::move(open.domain);
        r.start_ns = open.start_ns;
        r.end_ns = event.timestamp_ns;
        r.thread_id = event.thread_id != 0 ? event.thread_id : os_thread_id();
        r.depth = static_cast<uint32_t>(t.stack.size());
        std::lock_guard<std::mutex> lock(nvtx_mutex_);
        if (pending_nvtx_.size() < kMaxPendingNvtx) pending_nvtx_.push_back(std::move(r));
        break;
      }
      case Kind::kStart: {
        std::lock_guard<std::mutex> lock(nvtx_mutex_);
        if (open_ranges_.size() < kMaxPendingNvtx) {
          open_ranges_[event.range_id] = OpenRange{std::string(event.message), std::string(event.domain),
                                                   event.timestamp_ns, event.thread_id};
        }
        break;
      }
      case Kind::kEnd: {
        std::lock_guard<std::mutex> lock(nvtx_mutex_);
        auto it = open_ranges_.find(event.range_id);
        if (it == open_ranges_.end()) break;
        wire::NvtxRange r;
        r.name = std::move(it->second.name);
        r.domain = std::move(it->second.domain);
        r.start_ns = it->second.start_ns;
        r.end_ns = event.timestamp_ns;
        r.thread_id = it->second.thread_id;
        open_ranges_.erase(it);
        if (pending_nvtx_.size() < kMaxPendingNvtx) pending_nvtx_.push_back(std::move(r));
        break;
      }
      case Kind::kMark:
        break;
    }
  } catch (...) {
    log_.log_once(LogLevel::kError, "nvtx", "internal error in the NVTX callback");
  }
}

bool Agent::nvtx_allows() {
  if (config_.nvtx_include.empty() && config_.nvtx_exclude.empty()) return true;
  const NvtxThread& t = nvtx_thread();
  auto any = [&](const KernelFilter& f) {
    for (const NvtxThread::Open& o : t.stack) {
      if (f.matches(o.name, o.name, o.name)) return true;
    }
    return false;
  };
  if (!config_.nvtx_include.empty() && !any(config_.nvtx_include)) return false;
  if (!config_.nvtx_exclude.empty() && any(config_.nvtx_exclude)) return false;
  return true;
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
    try {
      charge(*slot);
    } catch (...) {
    }
    if (trace_started_.load() && slot->begin_trace_ns != 0) {
      try {
        trace_replay(*slot);
      } catch (...) {
      }
    }
    slot.reset();  // releases the flush gate
    if (trace_started_.load() && !finished_.load()) {
      // A replayed launch's record never completes (no timestamps), and CUPTI returns a buffer
      // only when all its records are complete: without a forced flush here the buffer stays
      // with CUPTI until exit and every later flush strands another one, until CUPTI drops
      // records (seen on the H200: 326 of 302 launches' records lost in a PyTorch run). The
      // replay has synchronized, so little else is in flight; what is comes back untimed.
      try {
        std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
        if (gate.owns_lock()) platform_.flush_trace(true);
      } catch (...) {
      }
    }
  }
}

// ---- selection ---------------------------------------------------------------------------

namespace {

// A family with no verdict yet: never profiled, or the route could not be decided.
bool unrouted(const std::optional<triage::Diagnosis>& diagnosis) {
  return !diagnosis || diagnosis->classification == triage::Classification::kInconclusive;
}

// What a family counts for in a switch choice: its share of the GPU time, and a little more, so that
// a family not traced yet still counts (below any traced one, and by number among the untraced).
double switch_weight(double share) { return share + 1e-9; }

}  // namespace

Agent::GroupDemand Agent::group_demand_locked(const KernelState& kernel, const MetricGroups& groups,
                                                          uint64_t now_ns) {
  // Families that have not been profiled yet want the routing counters first.
  const std::vector<std::string>& routing = routing_counters_expanded();
  const size_t n = groups.plans.size();
  GroupDemand demand{std::vector<size_t>(n, 0), std::vector<size_t>(n, 0), std::vector<double>(n, 0.0),
                     std::vector<double>(n, 0.0)};
  for (const KernelState* f : families_) {
    const bool self = f == &kernel;  // in the weights only (its wants were just updated)
    if (!self && (f->complete || f->device != kernel.device || !f->candidate.load(std::memory_order_relaxed))) {
      continue;
    }
    if (f->profiles_started > 0 && f->ao_wanted.empty()) continue;  // counters done
    // Only families still launching: a switch chosen for one that stopped serves nobody.
    const uint64_t seen = f->seen_mono_ns.load(std::memory_order_relaxed);
    if (!self && (seen == 0 || now_ns >= seen + kRecentLaunchNs)) continue;
    const std::vector<std::string>& want = f->ao_wanted.empty() ? routing : f->ao_wanted;
    const bool waits_for_route = unrouted(f->diagnosis);
    const double w = switch_weight(f->share);
    for (size_t g = 0; g < n; ++g) {
      size_t wanted = 0;
      bool routes = false;
      for (const std::string& m : groups.plans[g].metrics) {
        if (!std::binary_search(want.begin(), want.end(), m) || f->attempted.count(m) != 0) continue;
        ++wanted;
        routes = routes || (waits_for_route && std::binary_search(routing.begin(), routing.end(), m));
      }
      if (wanted > 0) demand.weight[g] += w;
      if (routes) demand.unrouted_weight[g] += w;
      if (self) continue;
      demand.counters[g] += wanted;
      if (routes) ++demand.unrouted[g];
    }
  }
  return demand;
}

Agent::Selection Agent::select(const LaunchEvent& event, uint64_t launch_index, const std::string& chip, KernelState& k,
                               const MetricGroups* groups, int context_group, uint64_t context_group_since_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  KernelState* kernel = &k;
  if (event.stream_capturing) {
    ++kernel->stats.captured;
    ++totals_.captured_launches;
    // Captured launches do not resume it either: the budget's gate applies again (a family
    // launched under capture must not take this slow path on every launch); a launch the budget
    // lets through resumes it.
    kernel->resume_pending.store(false, std::memory_order_relaxed);
    // Nor does it count as still launching in the switch choices: a family launched only under
    // capture (its graph's launches are not profiled) would hold the others' switches forever.
    kernel->seen_mono_ns.store(0, std::memory_order_relaxed);
    return {};
  }
  if (!kernel->candidate.load()) return {};  // changed since the fast path looked
  if (always_on_ && !kernel->resume_checked && state_.load() == wire::AgentState::kActive) {
    // Before CUTRIAGE_LAUNCH_SKIP and the budget: taking what an earlier process measured
    // profiles nothing. Without the chip (device facts unavailable) a later launch the budget lets
    // through tries again; this one's pass around the budget is spent either way.
    kernel->resume_pending.store(false, std::memory_order_relaxed);
    kernel->resume_checked = !chip.empty();
    if (!resume_.empty() && !chip.empty()) {
      bool wait_for_shape = false;
      kernel->resumed_record = resume_family_locked(*kernel, event, launch_index, chip, &wait_for_shape);
      if (kernel->resumed_record) kernel->resumed_unwritten.store(true);
      if (wait_for_shape) {
        // Profiling this launch would tie the family to its shape and lose the earlier counters:
        // the next launch comes here again, around the budget, as this one did. A deep capture
        // asked for goes ahead (the user's request; the family then starts afresh).
        kernel->resume_checked = false;
        kernel->resume_pending.store(true, std::memory_order_relaxed);
        if (!deep_targets_locked(*kernel)) return {};
      }
    }
  }
  const bool deep = deep_targets_locked(*kernel);
  if (!deep && matching_launches_.load() <= config_.launch_skip) return {};
  if (event.cooperative || kernel->names->no_replay) {
    // Record why, once, without profiling (counted above). Never sampled either: kernel-serialized
    // sampling would serialize a kernel whose blocks or peers wait on each other.
    return {Selection::Kind::kNoReplay, {}};
  }
  if (state_.load() != wire::AgentState::kActive) return {};
  if (deep) {
    // A deep-capture window: every counter in one replayed launch, then one sampled launch; the
    // budget does not apply (the user asked for it).
    const uint64_t id = deep_->request.id;
    if (deep_->captured.count(kernel->family_id) == 0) {
      deep_->captured.insert(kernel->family_id);
      kernel->deep_request = id;
      ++kernel->profiles_started;
      ++profiles_started_;
      if (event.launch) kernel->first_launch = event.launch;
      Selection sel{Selection::Kind::kCounters, config_.metric_mode == MetricMode::kList ? config_.metric_list
                                                                                           : all_counters()};
      sel.deep = id;
      update_candidate_locked(*kernel);
      return sel;
    }
    if (config_.pc_sampling && deep_->sampled.count(kernel->family_id) == 0 && kernel->deep_request == id &&
        kernel->last_record && kernel->last_record->status == wire::ProfileStatus::kProfiled) {
      deep_->sampled.insert(kernel->family_id);
      kernel->pc_started = true;
      Selection sel{Selection::Kind::kPcSampling, {}};
      sel.deep = id;
      update_candidate_locked(*kernel);
      return sel;
    }
    return {};
  }

  // Counters measured on different launches are combined, and samples join them, so only
  // launches of the same shape.
  if (kernel->first_launch && event.launch && !same_shape(*kernel->first_launch, *event.launch)) {
    kernel->seen_mono_ns.store(0, std::memory_order_relaxed);  // no use to it: not "still launching"
    return {};
  }
  if (!counters_left_locked(*kernel)) {
    if (pc_sampling_left_locked(*kernel)) {
      if (budget_ && !budget_->admit(monotonic_now(), CostKind::kPcSampling)) {
        kernel->not_before_ns.store(budget_->next_ns(), std::memory_order_relaxed);
        return {};
      }
      kernel->pc_started = true;
      update_candidate_locked(*kernel);
      Selection sel{Selection::Kind::kPcSampling, {}};
      sel.cost = CostKind::kPcSampling;
      return sel;
    }
    update_candidate_locked(*kernel);
    return {};
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
          update_candidate_locked(*kernel);
          return {};
        }
      } else if (always_on_) {
        // The routing counters alone: the riders of the first stage fill replay passes that are
        // paid anyway; without replay each group is a launch of its own, and the route decides
        // which of them it needs (computed once, breakdowns expanded).
        wanted = routing_counters_expanded();
      } else if (config_.max_profiles_per_kernel == 1) {
        wanted = all_counters();  // no second launch to adapt on: everything at once
      } else {
        wanted = first_stage_counters(chip);
      }
      break;
  }
  Selection selection{Selection::Kind::kCounters, {}};
  if (always_on_) {
    if (groups == nullptr) return {};  // no groups for this chip: said once by groups_for
    // Throughputs that take several passes come from their single-pass parts.
    wanted = triage::expand_breakdowns(wanted);
    const std::set<std::string> want(wanted.begin(), wanted.end());
    kernel->ao_wanted.assign(want.begin(), want.end());
    const size_t n_groups = groups->plans.size();
    std::vector<size_t> own(n_groups, 0);
    for (size_t g = 0; g < n_groups; ++g) {
      for (const std::string& m : groups->plans[g].metrics) {
        own[g] += want.count(m) > 0 && kernel->attempted.count(m) == 0 ? 1 : 0;
      }
    }
    if (std::all_of(own.begin(), own.end(), [](size_t h) { return h == 0; })) {
      // What is still wanted is in no single-pass group: needs replay (a deep capture).
      kernel->complete = true;
      update_candidate_locked(*kernel);
      return {};
    }
    int best = -1;
    if (context_group >= 0 && static_cast<size_t>(context_group) < n_groups && own[static_cast<size_t>(context_group)] > 0) {
      best = context_group;  // the configured group: no re-enable, the cheap kind of launch
      selection.cost = CostKind::kSameGroup;
    } else {
      // A switch, the dear kind (a new object's first Start: 140-200 ms on the H200). What the
      // other families still want counts too: one switch then serves several of them.
      const uint64_t now = monotonic_now();
      const GroupDemand demand = group_demand_locked(*kernel, *groups, now);
      if (context_group >= 0 && static_cast<size_t>(context_group) < n_groups &&
          demand.counters[static_cast<size_t>(context_group)] > 0 && now < context_group_since_ns + kHoldGroupNs) {
        // Other families still want the configured group and their launches may come any
        // moment: leave it to them a while rather than switch away and back.
        kernel->not_before_ns.store(context_group_since_ns + kHoldGroupNs, std::memory_order_relaxed);
        return {};
      }
      // Routing first: while a family that is still launching has no verdict, switches go to
      // groups holding routing counters it lacks. A verdict for more of the GPU time is worth more
      // than detail on a family already routed (on the H200 at the default budget, two CUTLASS
      // GEMMs with 36% of a PyTorch loop's GPU time were still unrouted after 22 minutes while the
      // switches went to the cuBLAS GEMMs' deeper decisions).
      // Impact first: among those, and then among the rest, the group wanted by the most GPU time.
      // Whichever family launches first after the budget allows a switch used to take it for
      // itself: on the H200, in 15 minutes of the example service, the two small kernels (2.5% of
      // the GPU time) that launch ahead of a 10% one in every request took 21 of the 25 admitted
      // launches, the 10% one took one.
      // A family whose launch finds another family's group first leaves the switch to that
      // family's launch; the counts of counters break ties (all the same when nothing is traced).
      bool routing_wanted = false;
      for (size_t g = 0; g < n_groups; ++g) routing_wanted = routing_wanted || demand.unrouted_weight[g] > 0;
      size_t best_score = 0;
      for (size_t g = 0; g < n_groups; ++g) {
        if (own[g] == 0 && demand.counters[g] == 0) continue;  // nobody's
        if (routing_wanted && demand.unrouted_weight[g] == 0) continue;
        const size_t score = own[g] + demand.counters[g];
        bool better = best < 0;
        if (!better) {
          const auto b = static_cast<size_t>(best);
          better = demand.unrouted_weight[g] != demand.unrouted_weight[b]
                       ? demand.unrouted_weight[g] > demand.unrouted_weight[b]
                   : demand.weight[g] != demand.weight[b] ? demand.weight[g] > demand.weight[b]
                   : score != best_score                  ? score > best_score
                                                          : own[g] > own[b];
        }
        if (better) {
          best = static_cast<int>(g);
          best_score = score;
        }
      }
      if (best < 0 || own[static_cast<size_t>(best)] == 0) {
        // Another family's group comes first: the switch is left to that family's launch.
        kernel->not_before_ns.store(now + kRoutingFirstWaitNs, std::memory_order_relaxed);
        return {};
      }
      selection.cost = CostKind::kGroupSwitch;
    }
    // A launch of the configured group goes on credit: the profiler is still enabled (it is
    // released release_ms after the last profiled launch), and a family that waited for the
    // allowance would find it released and pay a switch (10-40x dearer) instead. Each family takes
    // a group once, so the credit is bounded by the families that want the group.
    const uint64_t now = monotonic_now();
    if (!budget_->admit(now, selection.cost, selection.cost == CostKind::kSameGroup)) {
      // Back when the budget could pay it (a switch) or the rate limit allows (on credit).
      kernel->not_before_ns.store(selection.cost == CostKind::kSameGroup ? now + budget_->spacing_ns()
                                                                         : budget_->next_ns(),
                                  std::memory_order_relaxed);
      return {};
    }
    selection.group = best;
    selection.metrics = groups->plans[static_cast<size_t>(best)].metrics;
    wanted = selection.metrics;
  }
  if (wanted.empty()) {
    kernel->complete = true;
    update_candidate_locked(*kernel);
    return {};
  }
  ++kernel->profiles_started;
  ++profiles_started_;
  if (!kernel->first_launch && event.launch) kernel->first_launch = event.launch;
  kernel->attempted.insert(wanted.begin(), wanted.end());
  update_candidate_locked(*kernel);
  selection.metrics = std::move(wanted);
  return selection;
}

// ---- resuming from an earlier process (CUTRIAGE_RESUME) -------------------------------------

void Agent::load_resume() {
  namespace fs = std::filesystem;
  const std::string& path = config_.resume_path;
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else {
    // Segmented output (CUTRIAGE_SEGMENT_*): every published segment of that base name, oldest
    // first, so that a family's latest record wins.
    files = published_segments(path);
  }
  if (files.empty()) {
    log_.info("CUTRIAGE_RESUME: no " + path + " (nor segments of it) yet; every family starts afresh");
    return;
  }
  // One file in memory at a time, and bounded: the application's memory is not ours to take (a
  // day-long run belongs in segments, CUTRIAGE_SEGMENT_MB).
  constexpr uintmax_t kMaxBytes = uintmax_t{256} << 20;
  uint64_t pid = 0;
  for (const std::string& file : files) {
    const uintmax_t size = fs::file_size(file, ec);
    if (ec || size > kMaxBytes) {
      log_.warn("CUTRIAGE_RESUME: " + file + (ec ? " cannot be read" : " is larger than the 256 MiB read for resuming") +
                "; skipped");
      continue;
    }
    std::string bytes(static_cast<size_t>(size), '\0');
    std::ifstream in(file, std::ios::binary);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    std::string error;
    std::optional<wire::PriorRun> run = wire::parse_prior_run(bytes, &error);
    if (!run) {
      std::string message = "CUTRIAGE_RESUME: " + file;
      message += ": ";
      message += error;
      message += "; skipped";
      log_.warn(message);
      continue;
    }
    if (run->mode != "always-on") {
      log_.warn("CUTRIAGE_RESUME: " + file + " was not written in always-on mode; skipped");
      continue;
    }
    pid = run->pid;
    for (wire::PriorFamily& f : run->families) {
      resume_[std::make_tuple(f.mangled_name, f.chip, f.launch.block.x, f.launch.block.y, f.launch.block.z)] =
          std::move(f);
    }
  }
  resume_source_ = files.size() == 1 ? files.front() : path + " (" + std::to_string(files.size()) + " segments)";
  log_.info("CUTRIAGE_RESUME: " + std::to_string(resume_.size()) + " families measured by process " +
            std::to_string(pid) + " (" + resume_source_ + ") continue from there");
}

std::optional<wire::KernelRecord> Agent::resume_family_locked(KernelState& kernel, const LaunchEvent& event,
                                                              uint64_t launch_index, const std::string& chip,
                                                              bool* wait_for_shape) {
  auto it = resume_.find(std::make_tuple(kernel.mangled, chip, kernel.block.x, kernel.block.y, kernel.block.z));
  if (it == resume_.end()) return std::nullopt;
  const bool shape_matches = event.launch && same_shape(it->second.launch, *event.launch);
  // One function launched with several grids (a GEMM's forward and backward calls share a block
  // size) is one family here, and its first launch in this process need not have the shape the
  // earlier process assembled on: on the H200 the PyTorch loop's largest GEMM lost 23 minutes of
  // counters that way. A few launches wait for that shape.
  if (!shape_matches && kernel.profiles_started == 0 && ++kernel.resume_shape_misses < kResumeShapeTries) {
    *wait_for_shape = true;
    return std::nullopt;
  }
  wire::PriorFamily prior = std::move(it->second);
  resume_.erase(it);
  // Counters of another launch shape do not combine with this one's (Decision 0 would reject
  // the assembly); nor do they once this process measured something itself.
  if (!shape_matches || kernel.profiles_started > 0) {
    const std::string why =
        kernel.profiles_started > 0
            ? " was profiled here (a deep capture) before a launch of the earlier process's shape came"
            : " ran with another launch shape than in the earlier process (grid " + dim3_text(prior.launch.grid) +
                  ", block " + dim3_text(prior.launch.block) + ") in its first " +
                  std::to_string(kResumeShapeTries) + " launches here";
    log_.log_once(LogLevel::kInfo, "resume-shape",
                  "CUTRIAGE_RESUME: " + kernel.names->function + why + " and starts afresh (said once)");
    return std::nullopt;
  }
  uint64_t pid = 0;
  for (const triage::AssembledLaunch& a : prior.assembled) pid = a.earlier_pid != 0 ? a.earlier_pid : pid;
  for (const wire::PriorFamily::Value& v : prior.metrics) {
    kernel.measured.set(v.name, v.value, v.unit);
    kernel.measured_on[v.name] = v.launch_index;
    kernel.attempted.insert(v.name);
  }
  for (const std::string& name : prior.rejected) {
    kernel.attempted.insert(name);
    note_rejected_locked(kernel, name);
  }
  kernel.assembled = std::move(prior.assembled);
  // This process's numbering only: later records of the family supersede this one (readers show
  // one per family); the earlier process's launches are in the assembled list, marked as such.
  kernel.profiled_launches.push_back(launch_index);
  kernel.profiles_started = static_cast<uint32_t>(kernel.assembled.size());
  kernel.first_launch = *event.launch;

  wire::KernelRecord record;
  // At the launch where it was resumed (not profiled).
  fill_kernel_input_locked(event, kernel, launch_index, record.input);
  record.input.metrics = kernel.measured;
  fill_build_locked(kernel, record.input);
  for (const auto& [name, launch] : kernel.measured_on) record.metric_launch[name] = launch;
  record.profile_number = 0;  // none of this process's launches profiled yet
  record.rejected_metrics = kernel.rejected;
  record.input.assembled_launches = kernel.assembled;
  record.input.collection.replay_mode = triage::ReplayMode::kNone;
  record.input.collection.cache_control = "none";
  record.input.collection.clock_control = triage::ClockControl::kNone;
  record.input.collection.passes = 0;  // nothing collected on this launch
  record.status = wire::ProfileStatus::kProfiled;
  record.status_detail = "resumed from " + resume_source_ + ": measured by an earlier process (pid " +
                         std::to_string(pid) + ")";
  if (auto d = record.input.metrics.get("gpu__time_duration.sum")) record.duration_ns = *d;
  if (trace_started_.load()) record.family_id = kernel.family_id;
  // No trace inputs here (they are the trace's, under its own lock): Decision 0 compares the
  // durations with this process's unprofiled ones in the next record, or in the end-of-session
  // rewrite.
  record.diagnosis = triage::triage_kernel(record.input, triage_options_);
  kernel.diagnosis = record.diagnosis;
  kernel.last_status = record.status;
  update_completeness_locked(kernel);
  kernel.last_record = record;
  update_candidate_locked(kernel);
  return record;
}

bool Agent::deep_targets_locked(const KernelState& kernel) const {
  if (!deep_) return false;
  if (deep_->top > 0) {
    if (kernel.rank == 0 || kernel.rank > deep_->top) return false;
  } else if (!deep_->filter.matches(kernel.mangled, kernel.names->demangled, kernel.names->function)) {
    return false;
  }
  // Done with this family in this window?
  const bool profiled = deep_->captured.count(kernel.family_id) > 0;
  const bool sampled = !config_.pc_sampling || deep_->sampled.count(kernel.family_id) > 0;
  return !(profiled && sampled);
}

std::shared_ptr<const MetricGroups> Agent::groups_for(const std::string& chip, bool may_plan) {
  std::unique_lock<std::mutex> lock(groups_mutex_, std::defer_lock);
  if (may_plan) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return nullptr;  // the flush thread is planning right now
  }
  if (auto it = groups_.find(chip); it != groups_.end()) return it->second;
  if (groups_failed_.count(chip)) return nullptr;
  if (!may_plan) {
    groups_pending_.insert(chip);
    return nullptr;
  }
  std::string error;
  std::shared_ptr<collectors::ProfilerHost> host = host_for(chip, &error);
  if (!host) {
    groups_failed_.insert(chip);
    log_.log_once(LogLevel::kWarn, "groups-" + chip, "always-on: no profiler host for " + chip + " (" + error +
                                                         "); kernels are traced, not profiled");
    return nullptr;
  }
  const uint64_t t0 = monotonic_now();
  const std::vector<std::string> universe = always_on_counters(chip);
  auto groups = std::make_shared<MetricGroups>(chip_groups(*host, chip, universe, in_every_group()));
  const uint64_t cost = monotonic_now() - t0;
  if (!on_flush_thread()) {  // the application's time: the budget's business
    std::lock_guard<std::mutex> budget_lock(mutex_);
    if (budget_) budget_->charge(monotonic_now(), CostKind::kPlanning, cost);
  }
  if (groups->plans.empty()) {
    groups_failed_.insert(chip);
    log_.log_once(LogLevel::kWarn, "groups-" + chip, "always-on: no counter of " + chip +
                                                         " fits one pass; kernels are traced, not profiled");
    return nullptr;
  }
  log_.info("always-on: " + std::to_string(universe.size()) + " counters of " + chip + " in " +
            std::to_string(groups->plans.size()) + " single-pass groups (" +
            std::to_string(groups->unreachable.size()) + " need replay), planned in " +
            std::to_string(cost / 1000000) + " ms");
  groups_[chip] = groups;
  return groups;
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

void Agent::launch_enter(const LaunchEvent& fast_event, KernelState& kernel_ref, uint64_t launch_index) {
  // The slow path: a launch the selection wants. Only now the driver is asked about the stream.
  const uint64_t started_mono = always_on_ ? monotonic_now() : 0;
  LaunchEvent event = fast_event;
  platform_.fill_launch_details(event);
  if (!nvtx_allows()) return;
  KernelState* kernel = &kernel_ref;
  if (always_on_ && event.launch && kernel->resume_pending.load(std::memory_order_relaxed)) {
    // The record of a family resumed here routes on this process's launch (Decision 1's
    // occupancy needs the function's registers and shared memory); once per resumed family.
    (void)platform_.complete_launch_config(event, &*event.launch);
  }
  // The chip decides the first stage's counters; device facts are cached after the first call.
  std::string chip;
  if (!event.stream_capturing) {
    if (std::optional<collectors::DeviceInfo> dev = device_info(event.device)) chip = dev->limits.chip;
  }
  std::shared_ptr<const MetricGroups> groups;
  int context_group = -1;
  uint64_t context_group_since = 0;
  if (always_on_ && !chip.empty()) {
    // Planned on the flush thread when there is one (about 100 ms of Profiler Host calls, once per
    // chip: on the H200 that was 0.65% of a 20 s service run when the application thread paid it).
    groups = groups_for(chip, !flush_running_.load());
    const std::shared_ptr<ContextState> ctx = context_for(event);
    context_group = ctx->configured_group.load();
    context_group_since = ctx->configured_mono_ns.load();
  }
  Selection selection = select(event, launch_index, chip, *kernel, groups.get(), context_group, context_group_since);
  if (kernel->resumed_unwritten.exchange(false)) {
    std::optional<wire::KernelRecord> resumed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      resumed.swap(kernel->resumed_record);
    }
    if (resumed) write_kernel(*resumed);
    if (always_on_) note_complete(*kernel);
  }
  if (selection.kind == Selection::Kind::kSkip) {
    // select() may have found nothing left to collect (the family is complete then).
    if (always_on_) note_complete(*kernel);
    return;
  }
  // What an admitted launch reserved is trued up with its measured cost when it ends, or here when
  // it does not happen after all.
  const bool budgeted = budget_ && selection.deep == 0 &&
                        (selection.kind == Selection::Kind::kCounters || selection.kind == Selection::Kind::kPcSampling);
  auto refund = [&] {
    if (budgeted) charge_since(selection.cost, started_mono);
  };
  if (selection.kind == Selection::Kind::kPcSampling) {
    pc_sampling_enter(event, *kernel, launch_index, selection.deep);
    std::unique_ptr<ActiveProfile>& slot = active_slot();
    if (slot && slot->owner == this && slot->correlation_id == event.correlation_id) {
      slot->started_mono_ns = started_mono;
      slot->budgeted = budgeted;
      slot->cost = selection.cost;
    } else {
      refund();
    }
    return;
  }
  std::vector<std::string>* wanted = &selection.metrics;
  if (selection.kind == Selection::Kind::kNoReplay) {  // never replayed
    std::string why = event.cooperative
                          ? "cooperative launch: its blocks may wait on each other, so it is never replayed"
                          : "communication kernel: it may wait on other GPUs or the host, so it is never replayed";
    record_unprofiled(event, *kernel, wire::ProfileStatus::kNotProfiledNoReplay, why, launch_index);
    return;
  }
  // Undo the selection's bookkeeping when this launch ends up unprofiled after all.
  auto unselect = [&] {
    refund();
    std::lock_guard<std::mutex> lock(mutex_);
    --kernel->profiles_started;
    --profiles_started_;
    if (selection.group >= 0) {
      // The group was not collected after all: the next launch may ask for it again.
      for (const std::string& m : selection.metrics) kernel->attempted.erase(m);
    }
    if (selection.deep != 0 && deep_) deep_->captured.erase(kernel->family_id);
    update_candidate_locked(*kernel);
  };

  std::shared_ptr<ContextState> ctx = claim_context(event);
  if (!ctx) {
    unselect();
    return;
  }

  std::unique_ptr<ActiveProfile> active = new_active(ctx, *kernel, event, launch_index);
  active->started_mono_ns = started_mono;
  active->budgeted = budgeted;
  active->cost = selection.cost;
  active->group = selection.group;
  active->deep = selection.deep;

  auto give_up = [&](wire::ProfileStatus status, const std::string& detail) {
    ctx->busy.store(false);
    refund();
    record_unprofiled(event, *kernel, status, detail, launch_index);
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
  if (selection.group >= 0 && groups) {
    active->plan = groups->plans[static_cast<size_t>(selection.group)];  // planned once, one pass, no replay
  } else {
    collectors::Result<collectors::MetricPlan> plan = active->host->plan(*wanted);
    if (!plan.is_ok()) {
      give_up(wire::ProfileStatus::kFailed, "metric plan: " + plan.status().message());
      return;
    }
    active->plan = std::move(plan).value();
  }

  if (active->event.launch) {
    collectors::Status s = platform_.complete_launch_config(event, &*active->event.launch);
    if (!s.is_ok()) {
      log_.log_once(LogLevel::kWarn, "func-attr",
                    "registers and shared memory of " + kernel->names->function +
                        " unavailable (" + s.message() + "); occupancy checks will be missing");
    }
  }

  active->gate = std::shared_lock<std::shared_mutex>(cupti_gate_);
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
                            rp.status().message(), launch_index);
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
                        "range profiler unavailable on this context", launch_index);
      return;
    }
    collectors::Status s = ctx->profiler->begin(active->plan);
    if (!s.is_ok() || ctx->configured_group.load() != selection.group) {
      ctx->configured_mono_ns.store(started_mono);
    }
    ctx->configured_group.store(s.is_ok() ? selection.group : -1);
    if (s.is_ok() && selection.group >= 0 && config_.release_ms > 0) {
      // The profiler stays configured until release_ms after this launch: other families may
      // take the group on credit meanwhile, so their launches must reach the selection.
      credit_until_ns_.store(monotonic_now() + uint64_t{config_.release_ms} * 1'000'000, std::memory_order_relaxed);
    }
    if (!s.is_ok()) {
      ctx->busy.store(false);
      refund();
      if (s.code() == StatusCode::kPermissionDenied) {
        set_inactive(wire::AgentState::kPermissionDenied, s.message());
        record_unprofiled(event, *kernel, wire::ProfileStatus::kNotProfiledPermission, s.message(), launch_index);
      } else {
        record_unprofiled(event, *kernel, wire::ProfileStatus::kFailed, "range profiler start: " + s.message(), launch_index);
      }
      return;
    }
  }
  if (trace_started_.load()) {
    // Its execution(s) in the trace are replays: counted, kept out of the duration statistics.
    std::lock_guard<std::mutex> lock(trace_mutex_);
    replayed_correlations_.insert(event.correlation_id);
    active->begin_trace_ns = platform_.timestamp_ns();
  }
  active_slot() = std::move(active);
}

std::shared_ptr<Agent::ContextState> Agent::claim_context(const LaunchEvent& event) {
  std::shared_ptr<ContextState> ctx = context_for(event);
  bool expected = false;
  if (!ctx->busy.compare_exchange_strong(expected, true)) {
    // Another thread is profiling on this context right now: let this launch run untouched
    // rather than wait (one profiled or sampled launch per context at a time).
    return nullptr;
  }
  if (!claim_device(ctx)) {
    ctx->busy.store(false);
    return nullptr;
  }
  return ctx;
}

std::unique_ptr<Agent::ActiveProfile> Agent::new_active(const std::shared_ptr<ContextState>& ctx, KernelState& kernel,
                                                        const LaunchEvent& event, uint64_t launch_index) {
  auto active = std::make_unique<ActiveProfile>();
  active->owner = this;
  active->context = ctx;
  active->kernel = &kernel;
  active->launch_index = launch_index;
  active->correlation_id = event.correlation_id;
  active->event = event;
  active->event.mangled_name = kernel.mangled;  // the callback's string is gone by the exit
  return active;
}

bool Agent::claim_device(const std::shared_ptr<ContextState>& ctx) {
  // One range profiler per device holds the counters while it is enabled: a second context's
  // Start fails with CUPTI_ERROR_HARDWARE_BUSY (seen on the H200). Switch the device over to this
  // context: disable the profilers of the device's other contexts, unless one of them is
  // profiling (or sampling) a launch right now, in which case this launch runs unprofiled.
  std::vector<std::shared_ptr<ContextState>> others;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, other] : contexts_) {
      if (other && other != ctx && other->event.device == ctx->event.device) others.push_back(other);
    }
  }
  for (const std::shared_ptr<ContextState>& other : others) {
    // busy is re-read under the other context's lock: its owner sets busy before taking the
    // lock to begin, so a profile that started meanwhile is seen here and never disabled.
    std::lock_guard<std::mutex> lock(other->profiler_mutex);
    if (other->busy.load()) return false;
    if (other->profiler) (void)other->profiler->disable();
    other->configured_group.store(-1);
  }
  return true;
}

void Agent::pc_sampling_enter(const LaunchEvent& event, KernelState& kernel, uint64_t launch_index, uint64_t deep) {
  auto unpick = [&] {  // this launch is not sampled after all: the next one will be
    std::lock_guard<std::mutex> lock(mutex_);
    kernel.pc_started = false;
    if (deep != 0 && deep_) deep_->sampled.erase(kernel.family_id);
    update_candidate_locked(kernel);
  };
  std::shared_ptr<ContextState> ctx = claim_context(event);
  if (!ctx) {
    unpick();
    return;
  }
  collectors::PcSamplingOptions options;
  options.period_log2 = config_.pc_sampling_period_log2;
  if (options.period_log2 == 0) {
    double duration_ns = 0;
    triage::DeviceLimits limits;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto d = kernel.measured.get("gpu__time_duration.sum")) duration_ns = *d;
      if (auto it = devices_.find(event.device); it != devices_.end()) limits = it->second.limits;
    }
    options.period_log2 = auto_sampling_period_log2(duration_ns, limits.sm_clock_hz, limits.sm_count);
  }

  std::unique_ptr<ActiveProfile> active = new_active(ctx, kernel, event, launch_index);
  active->pc_sampling = true;
  active->deep = deep;
  active->gate = std::shared_lock<std::shared_mutex>(cupti_gate_);
  collectors::Status started;
  {
    std::lock_guard<std::mutex> lock(ctx->profiler_mutex);
    // CUPTI refuses to enable PC sampling beside an enabled range profiler on one context.
    if (ctx->profiler) (void)ctx->profiler->disable();
    ctx->configured_group.store(-1);
    if (!ctx->sampler && !ctx->sampler_failed) {
      collectors::Result<std::unique_ptr<collectors::PcSampler>> sampler = platform_.make_pc_sampler(ctx->event);
      if (sampler.is_ok()) {
        ctx->sampler = std::move(sampler).value();
      } else {
        ctx->sampler_failed = true;
        ctx->sampler_error = sampler.status().message();
        log_.log_once(LogLevel::kWarn, "pc-sampler",
                      "PC sampling unavailable (" + ctx->sampler_error +
                          "): Decisions 3 and 6 go without source lines");
      }
    }
    started = ctx->sampler ? ctx->sampler->begin(options)
                           : collectors::Status(StatusCode::kNotSupported, ctx->sampler_error);
  }
  if (!started.is_ok()) {
    ctx->busy.store(false);
    active.reset();  // releases the gate before writing
    PcSummary failed;
    failed.summary.error = "PC sampling could not start: " + started.message();
    failed.summary.from_launch_index = launch_index;
    failed.summary.sampling_period_log2 = options.period_log2;
    finish_pc_sampling(kernel, std::move(failed));
    return;
  }
  if (trace_started_.load()) {
    // The sampled launch runs serialized and is waited for: keep it out of the duration
    // statistics like a replayed one (its record comes back timed, marked "replayed").
    std::lock_guard<std::mutex> lock(trace_mutex_);
    replayed_correlations_.insert(event.correlation_id);
  }
  active_slot() = std::move(active);
}

void Agent::complete_pc_sampling(ActiveProfile& active) {
  collectors::Result<collectors::PcSampleBatch> batch = [&] {
    std::lock_guard<std::mutex> lock(active.context->profiler_mutex);
    return active.context->sampler->end();
  }();
  PcSummary summary;
  if (!batch.is_ok()) {
    summary.summary.error = "PC sampling failed: " + batch.status().message();
  } else {
    collectors::PcSampleBatch& b = batch.value();
    // Kernel-serialized collection covers what ran between start and the end's synchronize: only
    // this launch, unless work queued earlier on other streams ran then too. Keep this launch's
    // PCs when CUPTI tags them with correlation ids.
    const auto mine = [&](const collectors::PcSampleRecord& r) { return r.correlation_id == active.correlation_id; };
    if (std::any_of(b.pcs.begin(), b.pcs.end(), mine)) {
      b.pcs.erase(std::remove_if(b.pcs.begin(), b.pcs.end(), [&](const auto& r) { return !mine(r); }), b.pcs.end());
    }
    summary = build_pc_summary(b, cubins_, platform_);
    if (!summary.summary.lines.empty()) sampled_launches_.fetch_add(1, std::memory_order_relaxed);
    if (summary.summary.lines.empty()) {
      summary.summary.error = "no samples came back for this launch (" + std::to_string(b.total_samples) +
                              " in all, period 2^" + std::to_string(b.period_log2) + " cycles)";
    }
    if (summary.cubin_missing) {
      log_.log_once(LogLevel::kInfo, "pc-cubin",
                    "a sampled kernel's module cubin was not kept (loaded before the agent, or "
                    "beyond CUTRIAGE_CUBIN_CACHE_MB): its samples show SASS offsets only");
    }
  }
  summary.summary.from_launch_index = active.launch_index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    active.kernel->pc_sampled_mono_ns = monotonic_now();
  }
  finish_pc_sampling(*active.kernel, std::move(summary));
  if (active.deep != 0) check_deep_window();
}

void Agent::finish_pc_sampling(KernelState& kernel, PcSummary summary) {
  wire::KernelRecord record;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!kernel.last_record) return;
    record = *kernel.last_record;
  }
  record.input.pc_samples = std::move(summary.summary);
  record.pc_code = std::move(summary.code);
  record.pc_sm_arch = std::move(summary.sm_arch);
  if (trace_started_.load()) {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    fill_trace_inputs_locked(kernel, record.input);
  }
  record.diagnosis = triage::triage_kernel(record.input, triage_options_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The record of the profiled launch, written again with the samples: readers keep the
    // highest revision of a launch.
    record.revision = kernel.last_record ? kernel.last_record->revision + 1 : record.revision + 1;
    kernel.diagnosis = record.diagnosis;
    kernel.last_record = record;
  }
  write_kernel(record);
}

void Agent::charge(const ActiveProfile& active) {
  if (active.budgeted) charge_since(active.cost, active.started_mono_ns);
}

void Agent::charge_since(CostKind kind, uint64_t started_mono_ns) {
  if (!budget_) return;
  const uint64_t now = monotonic_now();
  std::lock_guard<std::mutex> lock(mutex_);
  budget_->charge(now, kind, now > started_mono_ns ? now - started_mono_ns : 0);
}

void Agent::launch_exit(const LaunchEvent& event) {
  std::unique_ptr<ActiveProfile>& slot = active_slot();
  if (!slot || slot->owner != this || slot->correlation_id != event.correlation_id) return;
  if (slot->pc_sampling) {
    complete_pc_sampling(*slot);
  } else {
    complete_profile(*slot, event);
  }
}

// ---- completion --------------------------------------------------------------------------

void Agent::fill_kernel_input(const LaunchEvent& event, const KernelState& kernel,
                              uint64_t launch_index, triage::KernelInput& input) {
  std::lock_guard<std::mutex> lock(mutex_);
  fill_kernel_input_locked(event, kernel, launch_index, input);
}

void Agent::fill_kernel_input_locked(const LaunchEvent& event, const KernelState& kernel,
                                     uint64_t launch_index, triage::KernelInput& input) const {
  input.mangled_name = kernel.mangled;
  input.demangled_name = kernel.names->demangled;
  input.function_name = kernel.names->function;
  input.device = event.device;
  input.launch_index = launch_index;
  input.launch = event.launch;
  if (auto it = devices_.find(event.device); it != devices_.end()) {
    input.device_limits = it->second.limits;
  }
}

void Agent::update_completeness_locked(KernelState& kernel) {
  kernel.uncollected = triage::counters_still_needed(*kernel.diagnosis, kernel.measured,
                                                    {kernel.attempted.begin(), kernel.attempted.end()});
  if (kernel.uncollected.empty()) kernel.complete = true;
}

void Agent::note_rejected_locked(KernelState& kernel, const std::string& name) {
  if (std::find(kernel.rejected.begin(), kernel.rejected.end(), name) == kernel.rejected.end()) {
    kernel.rejected.push_back(name);
  }
}

void Agent::complete_profile(ActiveProfile& active, const LaunchEvent& exit_event) {
  (void)exit_event;
  collectors::Result<collectors::CounterData> data = [&] {
    ContextState& ctx = *active.context;
    std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
    collectors::Result<collectors::CounterData> ended = ctx.profiler->end();
    if (always_on_) {
      // An enabled profiler slows every launch on the context: released now (within this launch's
      // measured cost) or, after release_ms without another profiled launch, by the flush thread
      // (or cutriage_flush; without a flush thread by the first launch after that, see
      // on_launch_enter; at the latest when the agent finishes).
      if (config_.release_ms == 0) {
        release_locked(ctx);
      } else {
        const uint64_t now = monotonic_now();
        ctx.profiled_end_mono_ns.store(now);
        if (!flush_running_.load()) release_due_ns_.store(now + uint64_t{config_.release_ms} * 1'000'000);
      }
    }
    return ended;
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
    if (active.deep != 0) {
      // A deep capture measures everything on this one launch: its verdict stands on its own,
      // not mixed with values assembled from earlier launches.
      kernel.measured = triage::MetricSet();
      kernel.measured_on.clear();
      kernel.profiled_launches.clear();
      kernel.assembled.clear();
    }
    if (active.group >= 0) {
      triage::AssembledLaunch a;
      a.launch_index = active.launch_index;
      if (active.event.launch) {
        a.grid = active.event.launch->grid;
        a.block = active.event.launch->block;
        a.dynamic_shared_bytes = active.event.launch->dynamic_shared_bytes;
      }
      for (const collectors::MetricReading& r : readings.value()) {
        if (r.name == "gpu__time_duration.sum") a.duration_ns = r.value;
      }
      a.metric_group = static_cast<uint32_t>(active.group) + 1;
      a.metrics = static_cast<uint32_t>(readings.value().size());
      kernel.assembled.push_back(a);
    }
    for (const collectors::MetricReading& r : readings.value()) {
      kernel.measured.set(r.name, r.value, unit_for(r.name));
      kernel.measured_on[r.name] = active.launch_index;
    }
    for (const collectors::RejectedMetric& rj : active.plan.rejected) note_rejected_locked(kernel, rj.name);
    if (active.group >= 0) {
      // A counter of the group that gave no value is not asked for again (attempted); the record
      // says so, so that a process resuming from it (CUTRIAGE_RESUME) does not ask either.
      for (const std::string& m : active.plan.metrics) {
        if (!kernel.measured.has(m)) note_rejected_locked(kernel, m);
      }
    }
    record.input.metrics = kernel.measured;
    fill_build_locked(kernel, record.input);
    for (const auto& [name, launch] : kernel.measured_on) {
      if (launch != active.launch_index) record.metric_launch[name] = launch;
    }
    record.combined_launch_indices = kernel.profiled_launches;
    kernel.profiled_launches.push_back(active.launch_index);
    record.profile_number = static_cast<uint32_t>(kernel.profiled_launches.size());
    record.rejected_metrics = kernel.rejected;
    record.input.assembled_launches = kernel.assembled;
    ++kernel.stats.profiled;
    ++totals_.profiled_launches;
  }
  if (active.group >= 0) {
    // One pass on the launch as the application ran it: caches as it left them.
    record.input.collection.replay_mode = triage::ReplayMode::kNone;
    record.input.collection.cache_control = "none";
  } else {
    record.input.collection.replay_mode = triage::ReplayMode::kKernel;
    record.input.collection.cache_control = "all";
  }
  record.input.collection.clock_control = triage::ClockControl::kNone;
  record.input.collection.passes = active.plan.passes;
  record.context_id = active.event.context_id;
  record.stream_id = active.event.stream_id;
  record.correlation_id = active.event.correlation_id;
  record.launch_api = to_wire(active.event.api);
  record.status = wire::ProfileStatus::kProfiled;
  if (auto d = record.input.metrics.get("gpu__time_duration.sum")) record.duration_ns = *d;
  if (trace_started_.load()) {
    record.family_id = kernel.family_id;
    // Decision 0 compares this replayed duration with the family's unprofiled ones traced so
    // far; the end of the session rewrites the record with everything traced by then.
    std::lock_guard<std::mutex> lock(trace_mutex_);
    fill_trace_inputs_locked(kernel, record.input);
  }

  record.diagnosis = triage::triage_kernel(record.input, triage_options_);

  {
    std::lock_guard<std::mutex> lock(mutex_);
    kernel.diagnosis = record.diagnosis;
    kernel.last_status = record.status;
    kernel.last_detail.clear();
    if (active.deep != 0) {
      kernel.complete = true;  // a deep capture measured everything the route can read
      kernel.uncollected.clear();
    } else if (config_.metric_mode != MetricMode::kAdaptive && !always_on_) {
      kernel.complete = true;
    } else {
      update_completeness_locked(kernel);
    }
    kernel.last_record = record;
    update_candidate_locked(kernel);  // after last_record: PC sampling follows a profiled record
  }
  write_kernel(record);
  if (always_on_) note_complete(kernel);
  if (active.deep != 0) check_deep_window();
}

void Agent::note_complete(KernelState& kernel) {
  std::string message;
  uint64_t family_id = 0;  // as in its records: only with a trace
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!kernel.complete || kernel.complete_noted || !kernel.last_record ||
        kernel.last_record->status != wire::ProfileStatus::kProfiled) {
      return;
    }
    kernel.complete_noted = true;
    if (trace_started_.load()) family_id = kernel.family_id;
    const double seconds = budget_ ? static_cast<double>(budget_->stats(monotonic_now()).wall_ns) / 1e9 : 0.0;
    std::set<uint32_t> groups;
    size_t earlier = 0;
    for (const triage::AssembledLaunch& a : kernel.assembled) {
      groups.insert(a.metric_group);
      earlier += a.from_earlier_process() ? 1 : 0;
    }
    char when[32];
    std::snprintf(when, sizeof(when), "%.1f", seconds);
    const std::string from =
        kernel.assembled.empty() && kernel.deep_request != 0
            ? "deep capture " + std::to_string(kernel.deep_request) + " (one launch, replayed)"
            : std::to_string(kernel.assembled.size()) + " launches without replay (" + std::to_string(groups.size()) +
                  " metric groups" +
                  (earlier > 0 ? "; " + std::to_string(earlier) + " of the launches by an earlier process, resumed" : "") +
                  ")";
    message = kernel.names->function + ": diagnosis complete " + when + " s after the agent started, from " + from +
              ": " + kernel.last_record->diagnosis.headline;
  }
  log_.info(message);
  write_notice(wire::Severity::kInfo, "always_on_complete", message, family_id);
}

void Agent::fill_trace_inputs_locked(const KernelState& kernel, triage::KernelInput& input) {
  const triage::FamilyTimeStats* family = timeline_.family(kernel.family_id);
  if (family == nullptr) return;
  std::optional<triage::Dim3> grid;
  if (input.launch) grid = input.launch->grid;
  input.unprofiled_durations_ns = family->recent_durations(grid);
  const double total = timeline_.total_kernel_ns();
  if (total > 0) input.time_share = family->total_ns / total;
  input.ran_concurrently = family->concurrent_launches > 0;
}

void Agent::record_failure(ActiveProfile& active, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++active.kernel->stats.failed;
    ++totals_.failed_profiles;
  }
  record_unprofiled(active.event, *active.kernel, wire::ProfileStatus::kFailed, what, active.launch_index);
}

void Agent::record_unprofiled(const LaunchEvent& event, KernelState& kernel,
                              wire::ProfileStatus status, const std::string& detail, uint64_t launch_index) {
  wire::KernelRecord record;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (launch_index == 0) launch_index = launch_counter_.load();
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
      update_candidate_locked(kernel);
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
  record.family_id = trace_started_.load() ? kernel.family_id : 0;
  record.status = status;
  record.status_detail = detail;
  record.diagnosis.headline = "not profiled: " + detail;
  write_kernel(record);
}

// ---- the trace ---------------------------------------------------------------------------

void Agent::on_activity(const collectors::ActivityBatch& batch) {
  try {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    drain_correlations_locked();
    wire::TraceChunk chunk;
    std::vector<KernelState*> new_families;
    for (const collectors::KernelActivity& a : batch.kernels) {
      if (a.end_ns < a.start_ns) continue;  // a record CUPTI could not complete
      const ActivityKey key{a.mangled_name.data(), a.device, a.block};
      KernelState* kernel = nullptr;
      if (auto it = activity_families_.find(key);
          it != activity_families_.end() && it->second->mangled == a.mangled_name) {
        kernel = it->second;
      } else {
        // Kernels launched from graphs (or by other kernels) were never seen by a launch
        // callback: their family starts here.
        std::lock_guard<std::mutex> klock(mutex_);
        kernel = kernel_for_locked(a.mangled_name, a.device, a.block);
        if (activity_families_.size() > 100000) activity_families_.clear();  // bound; rebuilt on demand
        activity_families_[key] = kernel;
      }
      const bool replayed = replayed_correlations_.count(a.correlation_id) > 0;
      uint32_t nvtx_path = 0;
      if (auto it = correlation_nvtx_.find(a.correlation_id); it != correlation_nvtx_.end()) {
        nvtx_path = it->second;
        if (!replayed) correlation_nvtx_.erase(it);
        ++kernel->nvtx_launches[nvtx_path];
      }
      add_execution_locked(*kernel, a, replayed, nvtx_path, chunk);
    }
    for (const collectors::CopyActivity& c : batch.copies) {
      if (c.end_ns < c.start_ns) continue;
      triage::CopySpan span;
      span.device = c.device;
      span.stream = c.stream_id;
      span.start_ns = c.start_ns;
      span.end_ns = c.end_ns;
      span.bytes = c.bytes;
      span.kind = c.kind;
      span.pageable = c.pageable;
      timeline_.add_copy(span);
      if (timeline_events_ < config_.trace_max_events) {
        ++timeline_events_;
        wire::CopyExecution e;
        e.kind = c.kind;
        e.start_ns = c.start_ns;
        e.end_ns = c.end_ns;
        e.bytes = c.bytes;
        e.device = c.device;
        e.stream_id = c.stream_id;
        e.context_id = c.context_id;
        e.correlation_id = c.correlation_id;
        e.pageable = c.pageable;
        e.graph_id = c.graph_id;
        chunk.copies.push_back(e);
      }
    }
    // batch.untimed_records are the replayed launches' records (no timestamps, seen on the H200):
    // expected, not a loss; trace_replay puts the replay window in their place.
    dropped_records_ += batch.dropped_records;
    chunk.dropped_records = batch.dropped_records;
    if (batch.dropped_records > 0) {
      log_.log_once(LogLevel::kWarn, "trace-dropped",
                    "CUPTI dropped kernel trace records (buffers full); the statistics undercount "
                    "and the report says by how much");
    }
    write_chunk_locked(chunk);
    update_selection_locked();
  } catch (...) {
    log_.log_once(LogLevel::kError, "activity", "internal error while reading the kernel trace");
  }
}

void Agent::trace_replay(const ActiveProfile& active) {
  // CUPTI returns a replayed launch's record without timestamps (seen on the H200), so the
  // timeline would show nothing where the profiler held the GPU, and count that time as idle. The
  // window from the range profiler's start to its end (host side, on the trace clock) stands in:
  // marked replayed, it is left out of the durations and its idle surroundings are the profiler's.
  collectors::KernelActivity a;
  a.start_ns = active.begin_trace_ns;
  a.end_ns = platform_.timestamp_ns();
  if (a.end_ns <= a.start_ns) return;
  a.device = active.event.device;
  a.context_id = static_cast<uint32_t>(active.event.context_id);
  a.stream_id = static_cast<uint32_t>(active.event.stream_id);
  a.correlation_id = static_cast<uint32_t>(active.event.correlation_id);
  if (active.event.launch) a.grid = active.event.launch->grid;
  std::lock_guard<std::mutex> lock(trace_mutex_);
  drain_correlations_locked();
  uint32_t nvtx_path = 0;
  if (auto it = correlation_nvtx_.find(a.correlation_id); it != correlation_nvtx_.end()) {
    nvtx_path = it->second;
    ++active.kernel->nvtx_launches[nvtx_path];
  }
  wire::TraceChunk chunk;
  add_execution_locked(*active.kernel, a, /*replayed=*/true, nvtx_path, chunk);
  write_chunk_locked(chunk);
}

void Agent::add_execution_locked(KernelState& kernel, const collectors::KernelActivity& a, bool replayed,
                                 uint32_t nvtx_path, wire::TraceChunk& chunk) {
  triage::KernelSpan span;
  span.family = kernel.family_id;
  span.device = a.device;
  span.stream = a.stream_id;
  span.start_ns = a.start_ns;
  span.end_ns = a.end_ns;
  span.grid = a.grid;
  span.replayed = replayed;
  span.from_graph = a.graph_id != 0;
  // A kernel running when the trace paused has no trustworthy end (graph kernels came back ~100 ms
  // late on the H200, which added most of a second to a small family in a 16 s run): busy until
  // the pause, no duration of its own.
  triage::cut_at_pause(span, pause_starts_);
  timeline_.add_kernel(span);
  if (!replayed) kernel.traced.store(true, std::memory_order_relaxed);
  if (timeline_events_ >= config_.trace_max_events) return;
  ++timeline_events_;
  ++timeline_kernel_events_;
  wire::KernelExecution e;
  e.family_id = kernel.family_id;
  e.start_ns = a.start_ns;
  e.end_ns = span.end_ns;
  e.cut_by_pause = span.cut_by_pause;
  e.stream_id = a.stream_id;
  e.context_id = a.context_id;
  e.correlation_id = a.correlation_id;
  e.grid = a.grid;
  e.graph_id = a.graph_id;
  e.graph_node_id = a.graph_node_id;
  e.replayed = replayed;
  if (nvtx_path != 0) {
    std::lock_guard<std::mutex> nlock(nvtx_mutex_);
    if (nvtx_path < nvtx_paths_.size()) e.nvtx_path = nvtx_paths_[nvtx_path];
  }
  chunk.kernels.push_back(std::move(e));
}

void Agent::drain_correlations_locked() {
  std::vector<std::shared_ptr<CorrelationBuffer>> buffers;
  {
    std::lock_guard<std::mutex> lock(nvtx_mutex_);
    buffers = correlation_buffers_;
  }
  for (const std::shared_ptr<CorrelationBuffer>& b : buffers) {
    std::vector<std::pair<uint64_t, uint32_t>> items;
    {
      std::lock_guard<std::mutex> lock(b->mutex);
      items.swap(b->items);
    }
    for (const auto& [correlation, path] : items) correlation_nvtx_[correlation] = path;
  }
  // Launches that never execute (captured into a graph) are never matched: bound the map.
  if (correlation_nvtx_.size() > 1000000) correlation_nvtx_.clear();
}

void Agent::write_chunk_locked(wire::TraceChunk& chunk) {
  {
    std::lock_guard<std::mutex> lock(nvtx_mutex_);
    if (timeline_events_ < config_.trace_max_events && !pending_nvtx_.empty()) {
      const size_t room = static_cast<size_t>(
          std::min<uint64_t>(config_.trace_max_events - timeline_events_, pending_nvtx_.size()));
      chunk.nvtx_ranges.assign(std::make_move_iterator(pending_nvtx_.begin()),
                               std::make_move_iterator(pending_nvtx_.begin() + static_cast<std::ptrdiff_t>(room)));
      timeline_events_ += room;
    }
    pending_nvtx_.clear();
  }
  if (chunk.kernels.empty() && chunk.copies.empty() && chunk.nvtx_ranges.empty() &&
      chunk.dropped_records == 0 && chunk.untraced.empty()) {
    return;
  }
  std::vector<KernelState*> used;
  {
    std::lock_guard<std::mutex> klock(mutex_);  // families_ may grow on another thread
    for (const wire::KernelExecution& e : chunk.kernels) used.push_back(families_.at(e.family_id - 1));
  }
  std::lock_guard<std::mutex> lock(output_mutex_);
  rotate_if_due_locked();
  ensure_header_locked();
  for (KernelState* kernel : used) {
    if (!kernel->family_written) write_family_locked(*kernel);
  }
  if (sink_) sink_->append(encoder_.trace_chunk(chunk));
}

void Agent::write_family_locked(KernelState& kernel) {
  kernel.family_written = true;
  written_families_.push_back(&kernel);
  emit_family_locked(kernel);
}

void Agent::rotate_if_due_locked() {
  if (!sink_ || !sink_->rotation_due()) return;
  sink_->rotate();
  ++segment_index_;
  encoder_ = wire::RecordEncoder();
  header_written_ = false;
  ensure_header_locked();
  for (const KernelState* kernel : written_families_) emit_family_locked(*kernel);
}

void Agent::emit_family_locked(const KernelState& kernel) {
  wire::FamilyDef f;
  f.id = kernel.family_id;
  f.mangled_name = kernel.mangled;
  f.display_name = kernel.names->function;
  f.device = kernel.device;
  f.block = kernel.block;
  if (sink_) sink_->append(encoder_.family(f));
}

void Agent::update_selection_locked() {
  const bool ranks = config_.select == SelectMode::kTop || config_.select == SelectMode::kShare;
  if (!ranks && !always_on_) return;  // always-on's switch choice reads the shares in any mode
  const std::vector<uint64_t> ranking = timeline_.ranking();
  const double total = timeline_.total_kernel_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < ranking.size(); ++i) {
    if (ranking[i] == 0 || ranking[i] > families_.size()) continue;
    KernelState& kernel = *families_[ranking[i] - 1];
    const triage::FamilyTimeStats* stats = timeline_.family(ranking[i]);
    const double share = stats != nullptr && total > 0 ? stats->total_ns / total : 0.0;
    kernel.share = share;
    if (!ranks) continue;
    kernel.rank = static_cast<uint32_t>(i + 1);
    kernel.ranked = config_.select == SelectMode::kTop ? i < config_.select_top
                                                       : share >= config_.select_min_share;
    update_candidate_locked(kernel);
  }
}

void Agent::finish_trace() {
  if (!trace_started_.load()) return;
  stop_flush_thread();
  try {
    std::unique_lock<std::shared_mutex> gate(cupti_gate_);
    platform_.flush_trace(true);  // delivers through on_activity, on this thread
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(trace_mutex_);
  wire::TraceChunk rest;  // NVTX ranges closed after the last delivered batch
  // Ending inside a pause (the flush thread, the only writer of trace_paused_, has stopped): the
  // file gets this pause too, so that a reader cuts the kernels that were running at it.
  if (trace_paused_) close_pause_locked(platform_.timestamp_ns(), rest);
  write_chunk_locked(rest);
  const triage::TimelineSummary timeline = timeline_.summary();
  // Profiled records again, with every unprofiled duration and the session's timeline numbers.
  std::vector<wire::KernelRecord> rewrites;
  {
    std::lock_guard<std::mutex> klock(mutex_);
    for (KernelState* kernel : families_) {
      if (!kernel->last_record) continue;
      wire::KernelRecord record = *kernel->last_record;
      fill_trace_inputs_locked(*kernel, record.input);
      triage::fill_timeline_inputs(timeline, kernel->family_id, record.input);
      record.diagnosis = triage::triage_kernel(record.input, triage_options_);
      record.revision = kernel->last_record->revision + 1;
      kernel->diagnosis = record.diagnosis;
      kernel->last_record = record;
      rewrites.push_back(std::move(record));
    }
  }
  for (const wire::KernelRecord& r : rewrites) write_kernel(r);
  wire::TraceSummary summary = trace_summary_locked(timeline);
  std::lock_guard<std::mutex> olock(output_mutex_);
  write_bytes_locked([&] { return encoder_.trace_summary(summary); });
}

PromSnapshot Agent::prometheus_snapshot() const {
  PromSnapshot s;
  s.host = process_.host;
  switch (state_.load()) {
    case wire::AgentState::kActive: s.agent_state = "active"; break;
    case wire::AgentState::kNoGpu: s.agent_state = "no_gpu"; break;
    case wire::AgentState::kPermissionDenied: s.agent_state = "permission_denied"; break;
    case wire::AgentState::kOtherSubscriber: s.agent_state = "other_subscriber"; break;
    case wire::AgentState::kProfilerFailed: s.agent_state = "profiler_failed"; break;
    case wire::AgentState::kUnspecified: s.agent_state = "unknown"; break;
  }
  s.kernel_launches = kernel_launches_.load(std::memory_order_relaxed);
  s.sampled_launches = sampled_launches_.load(std::memory_order_relaxed);
  if (std::optional<wire::OverheadStats> o = overhead()) {
    s.has_budget = true;
    s.budget_ratio = o->budget_fraction;
    s.overhead_seconds = static_cast<double>(o->spent_ns) / 1e9;
    s.wall_seconds = static_cast<double>(o->wall_ns) / 1e9;
    s.budget_admitted = o->admitted;
    s.budget_deferred = o->deferred;
    s.trace_duty = config_.trace_duty;
    s.trace_paused_seconds = static_cast<double>(trace_paused_ns_.load(std::memory_order_relaxed)) / 1e9;
  }
  triage::TimelineSummary timeline;
  if (trace_started_.load()) {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    timeline = timeline_.summary();
    s.dropped_trace_records = dropped_records_;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  s.profiled_launches = totals_.profiled_launches;
  for (const triage::DeviceTimeStats& d : timeline.devices) {
    PromGpu g;
    g.device = d.device;
    g.busy_seconds = d.busy_ns * 1e-9;
    g.span_seconds = d.last_end_ns > d.first_start_ns ? static_cast<double>(d.last_end_ns - d.first_start_ns) * 1e-9 : 0;
    s.gpus.push_back(std::move(g));
  }
  for (const auto& entry : devices_) {
    const uint32_t device = entry.first;
    const collectors::DeviceInfo& info = entry.second;
    auto it = std::find_if(s.gpus.begin(), s.gpus.end(), [device](const PromGpu& g) { return g.device == device; });
    if (it == s.gpus.end()) {
      s.gpus.emplace_back();
      it = s.gpus.end() - 1;
      it->device = device;
    }
    it->uuid = info.uuid;
    it->model = info.name;
  }
  for (const triage::FamilyTimeStats& f : timeline.families) {
    if (s.families.size() >= kMaxPromFamilies) break;
    if (f.family == 0 || f.family > families_.size()) continue;
    const KernelState& k = *families_[f.family - 1];
    PromFamily p;
    p.family_id = f.family;
    p.device = f.device;
    p.kernel = k.names->function;
    p.gpu_seconds = f.total_ns * 1e-9;
    p.launches = f.launches;
    p.share = timeline.time_share(f);
    if (k.diagnosis) {
      p.verdict = std::string(triage::to_string(k.diagnosis->classification));
      if (k.diagnosis->primary_limiter != triage::Limiter::kUnspecified) {
        p.limiter = std::string(triage::to_string(k.diagnosis->primary_limiter));
      }
    }
    p.complete = k.complete;
    p.assembled_launches = static_cast<uint32_t>(k.assembled.size());
    p.counters_missing = k.complete ? 0 : static_cast<uint32_t>(k.uncollected.size());
    s.families.push_back(std::move(p));
  }
  return s;
}

void Agent::flush() {
  if (finished_.load()) return;
  if (trace_started_.load()) {
    // Never wait on a replay in progress on another thread: the flush thread collects then.
    std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
    if (gate.owns_lock()) platform_.flush_trace(false);
  }
  refresh_candidates();
  release_idle_profilers();
  write_prometheus();
}

bool Agent::on_flush_thread() const {
  return flush_running_.load() && std::this_thread::get_id() == flush_thread_id_;
}

void Agent::plan_pending_groups() {
  std::set<std::string> pending;
  {
    std::lock_guard<std::mutex> lock(groups_mutex_);
    pending.swap(groups_pending_);
  }
  for (const std::string& chip : pending) (void)groups_for(chip, true);
}

void Agent::release_idle_profilers() {
  if (!always_on_) return;
  const uint64_t now = monotonic_now();
  const uint64_t idle_ns = uint64_t{config_.release_ms} * 1'000'000;
  std::vector<std::shared_ptr<ContextState>> idle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, ctx] : contexts_) {
      const uint64_t ended = ctx ? ctx->profiled_end_mono_ns.load() : 0;
      if (ended != 0 && now >= ended + idle_ns) idle.push_back(ctx);
    }
  }
  for (const std::shared_ptr<ContextState>& ctx : idle) release_profiler(*ctx);
}

void Agent::release_profiler(ContextState& ctx) {
  // Claimed like a profiled launch: a launch being profiled on the context keeps it (and a launch
  // that arrives meanwhile runs unprofiled, as when another profile holds the context).
  bool expected = false;
  if (!ctx.busy.compare_exchange_strong(expected, true)) return;
  const uint64_t started = monotonic_now();
  {
    std::shared_lock<std::shared_mutex> gate(cupti_gate_);
    std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
    release_locked(ctx);
  }
  ctx.busy.store(false);
  // The Disable stalls the application's launches on the context meanwhile: charged.
  charge_since(CostKind::kRelease, started);
}

void Agent::release_locked(ContextState& ctx) {
  if (ctx.profiler) (void)ctx.profiler->disable();
  ctx.configured_group.store(-1);
  ctx.profiled_end_mono_ns.store(0);
}

void Agent::refresh_candidates() {
  // Always-on PC sampling comes back after its interval: nothing else re-evaluates a family whose
  // work was done, so the flush thread (and cutriage_flush) looks every tick.
  if (!always_on_ || !config_.pc_sampling || config_.pc_sampling_interval_s == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (KernelState* k : families_) {
    if (k->pc_started && !k->candidate.load(std::memory_order_relaxed)) update_candidate_locked(*k);
  }
}

void Agent::write_prometheus() {
  if (config_.prometheus_file.empty()) return;
  try {
    const std::string error = write_atomically(config_.prometheus_file, render_prometheus(prometheus_snapshot()));
    if (!error.empty()) log_.log_once(LogLevel::kError, "prometheus", "Prometheus export: " + error);
  } catch (...) {
    log_.log_once(LogLevel::kError, "prometheus", "internal error while writing the Prometheus export");
  }
}

wire::TraceSummary Agent::trace_summary() const {
  if (!trace_started_.load()) return {};
  std::lock_guard<std::mutex> lock(trace_mutex_);
  return trace_summary_locked(timeline_.summary());
}

wire::TraceSummary Agent::trace_summary_locked(const triage::TimelineSummary& timeline) const {
  wire::TraceSummary out;
  out.timeline = timeline;
  {
    std::map<uint64_t, std::string> names;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const triage::FamilyTimeStats& f : timeline.families) {
        if (f.family != 0 && f.family <= families_.size()) names[f.family] = families_[f.family - 1]->names->function;
      }
    }
    out.findings = triage::triage_timeline(timeline, triage_options_.thresholds, [&names](uint64_t id) {
      auto it = names.find(id);
      return it != names.end() ? it->second : "family " + std::to_string(id);
    });
  }
  out.dropped_records = dropped_records_;
  out.timeline_kernel_events = timeline_kernel_events_;
  switch (config_.select) {
    case SelectMode::kTop: out.selection.mode = wire::SelectionMode::kTop; break;
    case SelectMode::kAll: out.selection.mode = wire::SelectionMode::kAll; break;
    case SelectMode::kShare: out.selection.mode = wire::SelectionMode::kShare; break;
    case SelectMode::kNone: out.selection.mode = wire::SelectionMode::kNone; break;
  }
  out.selection.top_k = config_.select == SelectMode::kTop ? config_.select_top : 0;
  out.selection.min_share = config_.select == SelectMode::kShare ? config_.select_min_share : 0;
  out.selection.nvtx_include = config_.nvtx_include.spec();
  out.selection.nvtx_exclude = config_.nvtx_exclude.spec();
  std::vector<std::string> paths;
  {
    std::lock_guard<std::mutex> lock(nvtx_mutex_);
    paths = nvtx_paths_;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const triage::FamilyTimeStats& f : timeline.families) {
    if (f.family == 0 || f.family > families_.size()) continue;
    const KernelState& k = *families_[f.family - 1];
    wire::FamilyOutcome o;
    using S = wire::FamilySelection;
    if (k.stats.profiled > 0) {
      o.selection = S::kProfiled;
      if (k.last_record) o.profiled_launch_index = k.last_record->input.launch_index;
    } else if (k.not_replayable.load() > 0) {
      o.selection = S::kNotReplayable;
      o.selection_detail = k.last_detail;
    } else if (k.last_status == wire::ProfileStatus::kFailed) {
      o.selection = S::kFailed;
      o.selection_detail = k.last_detail;
    } else if (k.last_status == wire::ProfileStatus::kNotProfiledPermission ||
               state_.load() == wire::AgentState::kPermissionDenied) {
      o.selection = S::kNotPermitted;
    } else if (config_.select == SelectMode::kNone) {
      o.selection = S::kTraceOnly;
    } else if (!k.names->matches_filter) {
      o.selection = S::kFiltered;
      o.selection_detail = "the kernel-name filter " + config_.kernel_filter.spec() + " excludes it";
    } else if (f.graph_launches == f.launches && k.launches.load() == 0) {
      o.selection = S::kGraphOnly;
      o.selection_detail =
          "launched only from CUDA graphs: the range profiler cannot replay a kernel inside a graph "
          "launch (on CUDA 13.0 auto-range replay of cuGraphLaunch gave no ranges and lost the "
          "graph's results), so graph kernels are traced and ranked but not profiled";
    } else if (always_on_ && (k.ranked || config_.select == SelectMode::kAll)) {
      o.selection = S::kTooFewLaunches;
      o.selection_detail = "ranked #" + std::to_string(k.rank) +
                           "; always-on: none of its launches fit the budget yet (the first profiled "
                           "launch waits for a full allowance, then one single-pass group a launch; "
                           "a larger CUTRIAGE_BUDGET or a deep capture gets there sooner)";
    } else if (k.ranked || config_.select == SelectMode::kAll) {
      o.selection = S::kTooFewLaunches;
      o.selection_detail = "ranked #" + std::to_string(k.rank) +
                           " but not launched again after its rank was known (or its launches were "
                           "captured, skipped or limited); CUTRIAGE_SELECT=all profiles from the first launch";
      if (!config_.nvtx_include.empty() || !config_.nvtx_exclude.empty()) {
        o.selection_detail += "; the NVTX filter may have excluded its launches";
      }
    } else {
      o.selection = S::kNotRanked;
      o.selection_detail = config_.select == SelectMode::kTop
                               ? "outside the top " + std::to_string(config_.select_top) + " (rank #" +
                                     std::to_string(k.rank) + ")"
                               : "below the " + select_spec(config_).substr(6) + " share cut";
    }
    std::vector<std::pair<uint64_t, uint32_t>> by_count;
    for (const auto& [path, n] : k.nvtx_launches) by_count.emplace_back(n, path);
    std::sort(by_count.begin(), by_count.end(), std::greater<>());
    for (const auto& [n, path] : by_count) {
      if (path < paths.size() && o.nvtx_paths.size() < 8) o.nvtx_paths.push_back(paths[path]);
    }
    out.outcomes[f.family] = std::move(o);
  }
  return out;
}

std::vector<std::string> Agent::summary_lines(const wire::TraceSummary& trace) const {
  std::vector<std::string> lines;
  auto ms = [](double ns) {
    char buf[32];
    if (ns >= 1e9) {
      std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    } else if (ns >= 1e6) {
      std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
    } else {
      std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    }
    return std::string(buf);
  };
  for (const triage::DeviceTimeStats& d : trace.timeline.devices) {
    char buf[160];
    const double span = d.traced_span_ns();
    std::snprintf(buf, sizeof buf, "GPU %u: busy %.1f%% of %s (%llu kernels, %llu copies)", d.device,
                  span > 0 ? 100.0 * d.busy_ns / span : 0.0, ms(span).c_str(),
                  static_cast<unsigned long long>(d.kernels), static_cast<unsigned long long>(d.copies));
    lines.emplace_back(buf);
  }
  const size_t shown = std::min<size_t>(trace.timeline.families.size(), 10);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < shown; ++i) {
    const triage::FamilyTimeStats& f = trace.timeline.families[i];
    if (f.family == 0 || f.family > families_.size()) continue;
    const KernelState& k = *families_[f.family - 1];
    char buf[200];
    std::snprintf(buf, sizeof buf, "#%zu %5.1f%%  %s  x%llu, mean %s", i + 1,
                  100.0 * trace.timeline.time_share(f), k.names->function.c_str(),
                  static_cast<unsigned long long>(f.launches), ms(f.mean_ns()).c_str());
    lines.emplace_back(buf);
    if (k.diagnosis) {
      lines.push_back("     " + k.diagnosis->headline);
      if (!k.diagnosis->next_action.empty()) lines.push_back("     next: " + k.diagnosis->next_action);
      if (!k.uncollected.empty()) {
        lines.push_back("     partial: " + std::to_string(k.uncollected.size()) +
                        " counters the route wanted were not collected (not launched again); "
                        "CUTRIAGE_METRICS=full collects everything in one launch");
      }
    } else if (auto it = trace.outcomes.find(f.family); it != trace.outcomes.end() &&
                                                       !it->second.selection_detail.empty()) {
      lines.push_back("     not profiled: " + it->second.selection_detail);
    }
  }
  if (trace.timeline.families.size() > shown) {
    lines.push_back("... and " + std::to_string(trace.timeline.families.size() - shown) +
                    " more families (cutriage report)");
  }
  for (const triage::CheckResult& c : trace.findings) {
    if (c.outcome == triage::Outcome::kFired && c.finding) lines.push_back("session: " + c.finding->summary);
  }
  return lines;
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
  s.trace_clock_at_start_ns = trace_started_.load() ? trace_clock_at_start_ns_ : 0;
  s.segment_index = segment_index_;
  s.mode = std::string(mode_name(config_.mode));
  if (always_on_) {
    s.replay_mode = triage::ReplayMode::kNone;
    s.cache_control = "none";
  }
  if (sink_) sink_->append(encoder_.session(s));
}

void Agent::write_bytes_locked(const std::function<std::string()>& encode) {
  rotate_if_due_locked();
  ensure_header_locked();
  std::string bytes = encode();
  if (sink_) sink_->append(bytes);
}

void Agent::write_kernel(const wire::KernelRecord& record) {
  std::lock_guard<std::mutex> lock(output_mutex_);
  write_bytes_locked([&] { return encoder_.kernel(record); });
}

void Agent::write_notice(wire::Severity severity, const std::string& code, const std::string& message,
                         uint64_t family_id) {
  wire::Notice n{severity, code, message, process_.now_unix_ns(), family_id};
  std::lock_guard<std::mutex> lock(output_mutex_);
  write_bytes_locked([&] { return encoder_.notice(n); });
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
  e.kernel_launches = kernel_launches_.load();
  e.graph_launches = graph_launches_.load();
  e.not_replayable_launches = not_replayable_launches_.load();
  // Families with the same kernel (block shapes) are one entry here, as before the trace.
  std::map<std::pair<std::string, uint32_t>, wire::KernelLaunchStats> by_kernel;
  for (const KernelState* k : families_) {
    const uint64_t launches = k->launches.load();
    if (launches == 0) continue;  // only seen in the trace (graph kernels)
    wire::KernelLaunchStats& s = by_kernel[{k->mangled, k->device}];
    s.mangled_name = k->mangled;
    s.launches += launches;
    s.profiled += k->stats.profiled;
    s.captured += k->stats.captured;
    s.not_replayable += k->not_replayable.load();
    s.failed += k->stats.failed;
    const uint64_t accounted = k->stats.profiled + k->stats.captured + k->not_replayable.load() + k->stats.failed;
    s.filtered += launches > accounted ? launches - accounted : 0;
  }
  for (auto& [key, s] : by_kernel) e.kernels.push_back(std::move(s));
  if (budget_) e.overhead = budget_->stats(monotonic_now());
  return e;
}

std::vector<KernelSummary> Agent::kernels() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<KernelSummary> out;
  for (const KernelState* k : families_) {
    KernelSummary s;
    s.function_name = k->names->function;
    s.mangled_name = k->mangled;
    s.device = k->device;
    s.stats = k->stats;
    s.stats.launches = k->launches.load();
    s.stats.not_replayable = k->not_replayable.load();
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
    bool saw_gpu_work = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      saw_gpu_work = contexts_seen_ > 0 || kernel_launches_.load() > 0 || graph_launches_.load() > 0;
    }
    if (!saw_gpu_work && subscribed_.load()) {
      // CUDA was initialized but never used a GPU (none visible, or the process only probed):
      // one line, no file.
      stop_flush_thread();
      log_.warn("no CUDA context was created in this process (no usable GPU?); nothing was profiled");
      return;
    }
    finish_trace();  // stops the flush thread: nothing polls the control file or signal after it
    remove_control_signal();
    check_deep_window();  // finished_ is set: an open window closes now
    write_prometheus();
    wire::SessionEnd end = session_end();
    end.end_time_unix_ns = process_.now_unix_ns();
    {
      std::lock_guard<std::mutex> lock(output_mutex_);
      if (state_.load() != wire::AgentState::kNoGpu &&
          state_.load() != wire::AgentState::kOtherSubscriber) {
        write_bytes_locked([&] { return encoder_.session_end(end); });
      }
      if (sink_) {
        // A segmented sink publishes its last segment; anything written later (a late callback)
        // starts a segment of its own, with its own header and interning.
        sink_->close();
        encoder_ = wire::RecordEncoder();
        header_written_ = false;
      }
    }
    if (!config_.summary || !subscribed_.load()) return;
    auto tail = [&] {
      if (end.graph_launches > 0) {
        log_.summary("  " + std::to_string(end.graph_launches) +
                     " CUDA graph launches: their kernels are traced and ranked, not profiled");
      }
      if (end.captured_launches > 0) {
        log_.summary("  " + std::to_string(end.captured_launches) +
                     " launches into streams under capture: recorded into graphs, not profiled");
      }
      if (state_.load() == wire::AgentState::kPermissionDenied) {
        log_.summary("  nothing profiled: counters not permitted (see the message above for the fix)");
      }
    };
    if (trace_started_.load()) {
      const wire::TraceSummary trace = trace_summary();
      if (!trace.timeline.families.empty()) {
        std::string head = std::to_string(trace.timeline.families.size()) + " kernel families traced (" +
                           std::to_string(trace.timeline.kernel_executions) + " executions), " +
                           std::to_string(end.profiled_launches) + " launches profiled";
        if (sink_ && !sink_->failed()) head += "; details: cutriage report " + sink_->describe();
        log_.summary(head);
        for (const std::string& line : summary_lines(trace)) log_.summary("  " + line);
        tail();
        return;
      }
    }
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
    tail();
  } catch (...) {
    log_.log_once(LogLevel::kError, "finish", "internal error while finishing");
  }
}

}  // namespace cutriage::agent
