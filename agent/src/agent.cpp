#include "agent.h"

#include <chrono>
#include <thread>
#include <exception>

#include "control.h"
#include "cutriage/collectors/cubin.h"

namespace cutriage::agent {

using collectors::StatusCode;

namespace {

std::atomic<uint64_t> g_next_instance{1};

// Set on the thread while Agent::rank_at_second_launch waits for a context: the wait's own
// callbacks, if CUPTI delivers them, are the agent's and not the application's.
thread_local bool t_own_wait = false;

ProcessInfo with_clocks(ProcessInfo p) {
  if (!p.now_unix_ns) p.now_unix_ns = [] { return uint64_t{0}; };
  if (!p.monotonic_ns) {
    p.monotonic_ns = [] {
      return static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
              .count());
    };
  }
  return p;
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

Agent::Agent(AgentConfig config, collectors::Platform& platform, std::unique_ptr<RecordSink> sink, Logger& log,
             ProcessInfo process, triage::Thresholds thresholds)
    : config_(std::move(config)),
      platform_(platform),
      log_(log),
      process_(with_clocks(std::move(process))),
      cubins_(config_.cubin_cache_mb << 20),
      devices_(platform, log),
      output_(std::move(sink), config_.segment_mb > 0 || config_.segment_seconds > 0,
              [this](uint32_t segment) { return session_header(segment); }),
      nvtx_(g_next_instance.fetch_add(1)),
      graphs_(nvtx_),
      families_(g_next_instance.fetch_add(1), config_.kernel_filter),
      always_on_(config_.mode == AgentMode::kAlwaysOn
                     ? std::make_unique<AlwaysOnPolicy>(
                           config_, families_, devices_, builds_, log_, triage_options_,
                           AlwaysOnPolicy::Clocks{[this] { return monotonic_now(); },
                                                  [this] { return flush_thread_.on_thread(); },
                                                  [this] { return trace_started_.load(); }})
                     : nullptr),
      app_replay_(config_.mode == AgentMode::kDeep && config_.replay == Replay::kApplication
                      ? std::make_unique<ApplicationReplayPolicy>(
                            config_, families_, devices_, builds_, log_, triage_options_,
                            SinglePassPolicy::Clocks{[this] { return monotonic_now(); },
                                                     [this] { return flush_thread_.on_thread(); },
                                                     [this] { return trace_started_.load(); }})
                      : nullptr),
      deep_policy_(config_),
      selector_(config_, families_,
                always_on_    ? static_cast<SelectionPolicy&>(*always_on_)
                : app_replay_ ? static_cast<SelectionPolicy&>(*app_replay_)
                              : deep_policy_,
                earlier_ranking_, state_, trace_started_, [this] { return monotonic_now(); }),
      trace_(config_, platform, log, families_, nvtx_, graphs_, output_, cupti_gate_,
             [this](const triage::TimelineAccumulator& timeline) {
               selector_.apply_ranking(timeline);
               graph_profiler_.retarget_locked(timeline);
             },
             [this](wire::Severity s, const std::string& code, const std::string& message) {
               write_notice(s, code, message);
             }),
      profiler_(LaunchProfiler::Parts{
          config_, platform, log, families_, selector_, always_on_.get(), devices_, builds_, contexts_, trace_,
          trace_started_, nvtx_, output_, cubins_, cupti_gate_, triage_options_, counts_.launches,
          flush_thread_.running_flag(),
          finished_, [this] { return monotonic_now(); },
          [this](wire::AgentState s, const std::string& detail) { set_inactive(s, detail); },
          [this](wire::Severity s, const std::string& code, const std::string& message, uint64_t family) {
            write_notice(s, code, message, family);
          },
          [this] { deep_.check(); }, plans_, app_replay_.get(), [this] { flush_thread_.wake(); }}),
      graph_profiler_(GraphProfiler::Parts{
          config_, platform, log, families_, always_on_.get(), devices_, builds_, contexts_, trace_, graphs_, output_,
          cubins_, cupti_gate_, triage_options_, trace_started_, paused_, plans_, [this] { return monotonic_now(); },
          [this](wire::AgentState s, const std::string& detail) { set_inactive(s, detail); },
          [this](wire::Severity s, const std::string& code, const std::string& message, uint64_t family) {
            write_notice(s, code, message, family);
          }}),
      view_(SessionView::Parts{config_, families_, trace_, trace_started_, nvtx_, devices_, always_on_.get(),
                               earlier_ranking_, triage_options_, counts_, state_, process_.host,
                               process_.job ? std::optional<uint32_t>(process_.job->rank) : std::nullopt,
                               [this] { return launch_gate_ ? launch_gate_->off_ns(monotonic_now()) : 0; }}),
      deep_(DeepCaptures::Parts{
          config_, families_, selector_, output_, log_, [this] { return process_.now_unix_ns(); },
          [this] { return monotonic_now(); },
          [this] {
            return !finished_.load() && state_.load() == wire::AgentState::kActive && subscribed_.load();
          },
          [this] { return finished_.load(); }}) {
  triage_options_.thresholds = std::move(thresholds);
  start_time_ns_ = process_.now_unix_ns();
  if (always_on_ && config_.pm_window) {
    pm_window_ = std::make_unique<PmWindow>(PmWindow::Parts{
        config_, platform_, log_, families_, devices_, contexts_, trace_, output_, builds_, *always_on_,
        triage_options_, cupti_gate_, [this] { return monotonic_now(); },
        [this] { return counts_.launches.load(std::memory_order_relaxed); },
        [this](wire::Severity s, const std::string& code, const std::string& message, uint64_t family) {
          write_notice(s, code, message, family);
        },
        [this](const std::string& chip, const std::vector<std::vector<std::string>>& lists) {
          profiler_.queue_plans(chip, lists);
          (void)profiler_.make_queued_plans();
        }});
  }
  if (always_on_ && config_.step_launches > 0) {
    // Every context's range profiler is made with room for a step's launches (set before the
    // first context: they are made as launches come).
    contexts_.set_max_ranges(config_.step_launches);
    steps_ = std::make_unique<StepProfiler>(StepProfiler::Parts{
        config_, platform_, log_, families_, *always_on_, devices_, contexts_, plans_, profiler_, trace_,
        trace_started_, [this] { return monotonic_now(); }, flush_thread_.running_flag(),
        [this] { flush_thread_.wake(); }, [this] { return !launch_gate_ || launch_gate_->is_open(); },
        [this] { return launch_gate_ ? launch_gate_->switches() : 0; }});
  }
  if (always_on_ && config_.warmup && platform_.range_profiler_has_startup()) {
    warmup_ = std::make_unique<ProfilerWarmup>(ProfilerWarmup::Parts{
        platform_, log_, devices_, contexts_, plans_, *always_on_, [this] { return monotonic_now(); }});
  }
  if (always_on_ && config_.launch_gate) {
    // A few ticks ahead of the next admission: a tick may come late (the flush thread makes plans).
    constexpr uint64_t kMinLeadNs = 300'000'000;
    const uint64_t lead = std::max<uint64_t>(uint64_t{config_.trace_flush_ms} * 3'000'000, kMinLeadNs);
    launch_gate_ = std::make_unique<LaunchGate>(platform_, log_, true, lead);
    // A step that began a pass since the demand was gathered keeps the callbacks on.
    launch_gate_->set_veto([this] { return steps_ && steps_->follows_now(); });
  }
  families_.set_on_create([this](Family& f) {
    earlier_ranking_.mark_locked(f);
    if (single_pass() != nullptr && single_pass()->resumable_locked(f)) {
      f.resume_pending.store(true, std::memory_order_relaxed);
    }
    selector_.update_candidate_locked(f);
  });
}

Agent::~Agent() { flush_thread_.stop(); }

bool Agent::start() {
  try {
    earlier_ranking_.load(config_, log_);
  } catch (...) {
    log_.warn("CUTRIAGE_RANKING: cannot read " + config_.ranking_path + "; this run ranks by its own trace");
  }
  if (single_pass() != nullptr && !config_.resume_path.empty()) {
    try {
      single_pass()->load_resume();
    } catch (...) {
      log_.warn("CUTRIAGE_RESUME: cannot read " + config_.resume_path + "; every family starts afresh");
    }
  } else if (!config_.resume_path.empty()) {
    log_.info("CUTRIAGE_RESUME is for always-on mode and CUTRIAGE_REPLAY=application; deep mode with kernel "
              "replay starts every family afresh");
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
        trace_.started(platform_.timestamp_ns(), monotonic_now());
        start_time_ns_ = process_.now_unix_ns();  // read together with the trace clock
        trace_started_ = true;
        last_prometheus_ = std::chrono::steady_clock::now();
        if (config_.trace_flush_ms > 0 && !flush_thread_.start(config_.trace_flush_ms, [this] { flush_tick(); })) {
          log_.warn("cannot start the trace flush thread; trace records are collected at exit only");
        }
      } else {
        // Profiling still works by name; ranking needs the trace.
        std::string what = "the kernel trace could not start (" + t.message() + ")";
        if (ranks_by_trace()) {
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
    if ((!config_.control_file.empty() || config_.control_signal != ControlSignal::kOff) && !flush_thread_.running()) {
      log_.warn("CUTRIAGE_CONTROL_FILE and CUTRIAGE_CONTROL_SIGNAL are read by the trace's flush thread, which "
                "is not running (CUTRIAGE_TRACE=0 or CUTRIAGE_TRACE_FLUSH_MS=0); use cutriage_request_deep_capture");
    }
    log_.info(std::string(always_on_    ? "always-on profiling"
                          : app_replay_ ? "profiling with application replay (no launch replayed)"
                                        : "profiling") +
              "; results go to " + output_path());
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
    std::lock_guard<std::mutex> lock(detail_mutex_);
    state_detail_ = s.message();
  }
  return false;
}

// ---- callbacks: every one catches everything ----------------------------------------------

void Agent::on_context_created(const collectors::ContextEvent& event) {
  try {
    contexts_.created(event);
    std::optional<collectors::DeviceInfo> dev = devices_.info(event.device);
    // Deep mode with kernel replay, and always-on's stages (CUTRIAGE_STAGE_PASSES): the first
    // profiled launch's metric plan is made now, on the flush thread, instead of on the
    // application's thread at that launch. Always-on's groups and application replay's are
    // planned there already.
    const bool plans_first = (config_.mode == AgentMode::kDeep && single_pass() == nullptr) ||
                             (config_.mode == AgentMode::kAlwaysOn && config_.stage_passes);
    if (dev && !dev->limits.chip.empty() && config_.select != SelectMode::kNone &&
        state_.load() == wire::AgentState::kActive) {
      // A process may exit soon after this (a short program under `cutriage run`, a health check
      // in a container where always-on is set for every process). The chip's profiler host is
      // made here, on the thread creating the context, which cannot be exiting meanwhile: the
      // host library builds state of its own as it is made, and an exit during that on the flush
      // thread (planning ahead) could crash (collectors/host_lifetime.h). Once per chip and
      // process, about 90 ms on the development machine's CPU; not charged to always-on's budget,
      // like the context's own creation.
      std::string error;  // a chip without a host is said by the launch that needs it
      (void)devices_.host(dev->limits.chip, &error);
    }
    if (dev && !dev->limits.chip.empty() && plans_first && flush_thread_.running()) {
      profiler_.queue_plans(dev->limits.chip, selector_.first_lists(dev->limits.chip));
    }
  } catch (...) {
    log_.log_once(LogLevel::kError, "ctx-create", "internal error in the context callback");
  }
}

void Agent::on_context_destroying(const collectors::ContextEvent& event) {
  try {
    contexts_.destroying(event);
  } catch (...) {
    log_.log_once(LogLevel::kError, "ctx-destroy", "internal error in the context callback");
  }
}

void Agent::on_module_loaded(const collectors::ModuleEvent& event) {
  try {
    if (event.cubin.empty()) return;
    collectors::Result<collectors::CubinInfo> info = collectors::inspect_cubin(event.cubin.data(), event.cubin.size());
    if (!info.is_ok()) return;
    if (config_.pc_sampling && config_.cubin_cache_mb > 0) cubins_.add(event.cubin);
    builds_.add(info.value().kernels, info.value().has_line_info, info.value().debug_build);
  } catch (...) {
    log_.log_once(LogLevel::kError, "module", "internal error in the module callback");
  }
}

bool Agent::on_launch_enter(const collectors::LaunchEvent& event) {
  try {
    if (finished_.load(std::memory_order_relaxed)) return false;
    // Every launch is counted, graph launches too: their kernels are in flight like any other.
    // Only a ranking by the trace reads the count (on_synchronize): the shared counter stays off
    // the launch path of every other selection.
    if (ranks_by_trace()) {
      quiet_.launch(event.context_id, (event.context_id << 32) ^
                                          static_cast<uint64_t>(reinterpret_cast<uintptr_t>(event.stream)) ^
                                          (event.per_thread_stream ? 1U : 0U));
    }
    if (event.correlation_repeated) note_repeated_correlation(event);
    if (event.api == collectors::LaunchApi::kGraphLaunch) {
      counts_.graph_launches.fetch_add(1, std::memory_order_relaxed);
      // Once a graph is targeted, as a candidate family's launch below.
      if (warmup_ && graph_profiler_.any_target() && !paused_.load(std::memory_order_relaxed)) {
        warmup_->at_launch(event);
      }
      if (steps_) steps_->graph_launch(event);
      return graph_profiler_.enter(event);
    }
    Family* family = families_.for_launch(event);
    if (family == nullptr) return false;
    profiler_.release_if_due();
    family->launches.fetch_add(1, std::memory_order_relaxed);
    counts_.kernel_launches.fetch_add(1, std::memory_order_relaxed);
    const uint64_t launch_index = counts_.launches.fetch_add(1, std::memory_order_relaxed) + 1;
    if (family->names->matches_filter) selector_.count_matching_launch();
    if (event.cooperative || family->names->no_replay) {
      family->not_replayable.fetch_add(1, std::memory_order_relaxed);
      counts_.not_replayable.fetch_add(1, std::memory_order_relaxed);
    }
    if (trace_started_.load(std::memory_order_relaxed)) {
      if (!event.correlation_repeated) nvtx_.note_launch(event.correlation_id);
      // Ranking needs a duration of this family, and a launched-again family may be worth
      // profiling now. With one global buffer queue only a forced flush hands records back before
      // a buffer fills, and a forced one loses the record of a kernel still running (H200,
      // cupti-facts.md): so a family with no traced execution yet is noted here, and the flush
      // is forced at the exit of the application's next wait that leaves nothing in flight
      // (on_synchronize). The unforced flush on its 2nd, 4th, 8th... launch (a few calls per
      // family at most) still brings in full buffers. Launches queued back to back without a
      // wait are ranked after them (the report says so; `cutriage run` runs the program again).
      if (!family->traced.load(std::memory_order_relaxed) && ranks_by_trace()) {
        // Not while the duty cycle has the trace paused: the launch leaves no record to flush,
        // and a family launched only then would ask at every wait.
        if (!rank_pending_.load(std::memory_order_relaxed) && !trace_.paused_now()) {
          rank_pending_.store(true, std::memory_order_relaxed);
        }
        const uint64_t n = family->launches.load(std::memory_order_relaxed);
        if (n == 2 && rank_at_second_launch(event)) {
          // Flushed with nothing in flight: the family is ranked, this launch may be profiled.
        } else if (n >= 2 && (n & (n - 1)) == 0) {
          std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
          if (gate.owns_lock()) platform_.flush_trace(false);
        }
      }
    }
    // CUPTI's start-up, paid ahead of the first profile (CUTRIAGE_WARMUP) at the first launch of a
    // family the agent wants: a process with nothing to profile (a short one, a health check) never
    // pays it, and one that has pays it when it would have anyway, but apart from the budget.
    if (warmup_ && family->candidate.load(std::memory_order_relaxed) && !paused_.load(std::memory_order_relaxed) &&
        !event.correlation_repeated) {
      warmup_->at_launch(event);
    }
    // A step in progress on the launch's context records every launch there (each one range of its
    // pass), candidate or not; with none, a candidate's launch may begin one.
    if (steps_ && !paused_.load(std::memory_order_relaxed) && !event.correlation_repeated &&
        steps_->enter(event, *family, launch_index)) {
      return false;
    }
    if (!family->candidate.load(std::memory_order_relaxed)) return false;
    if (paused_.load(std::memory_order_relaxed) || event.correlation_repeated) return false;
    if (!selector_.deep_open() && !selector_.policy().admits_fast(*family)) return false;
    return profiler_.enter(event, *family, launch_index);
  } catch (const std::exception& e) {
    log_.log_once(LogLevel::kError, "launch-enter", std::string("internal error at launch: ") + e.what());
  } catch (...) {
    log_.log_once(LogLevel::kError, "launch-enter", "internal error at launch");
  }
  return false;
}

bool Agent::rank_at_second_launch(const collectors::LaunchEvent& event) {
  if (!config_.rank_early || config_.mode != AgentMode::kDeep || early_off_.load(std::memory_order_relaxed) ||
      earlier_ranking_.loaded() || trace_.paused_now()) {
    return false;
  }
  collectors::LaunchEvent probe = event;
  platform_.fill_launch_details(probe);
  if (probe.stream_capturing) return false;
  if (early_waits_.fetch_add(1, std::memory_order_relaxed) >= kMaxEarlyWaits) {
    if (!early_off_.exchange(true)) {
      log_.info("CUTRIAGE_RANK_EARLY: " + std::to_string(kMaxEarlyWaits) +
                " families waited for at their second launch; the others are ranked at the application's own waits");
    }
    return false;
  }
  quiet_.wait_enter();
  t_own_wait = true;
  const collectors::Status waited = platform_.synchronize_context(event);
  t_own_wait = false;
  if (!waited.is_ok()) {
    early_off_.store(true, std::memory_order_relaxed);
    log_.log_once(LogLevel::kWarn, "rank-early",
                  "CUTRIAGE_RANK_EARLY: waiting for the context failed (" + waited.message() +
                      "): families are ranked at the application's own waits from now on");
    return false;
  }
  // Another context or thread may still run a kernel, whose record a forced flush would lose.
  if (!quiet_.wait_exit(true)) return false;
  std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
  if (!gate.owns_lock()) return false;
  rank_pending_.store(false, std::memory_order_relaxed);
  platform_.flush_trace(true);
  return true;
}

void Agent::note_repeated_correlation(const collectors::LaunchEvent& event) {
  // After the launch gate had the callbacks off, the gate opens for good (launch_gate.h).
  const bool after_gate = launch_gate_ && launch_gate_->closings() > 0;
  if (after_gate) launch_gate_->retire_after_repeated_ids();
  // Said once per process; the count goes on for the line at the end (finish).
  if (counts_.repeated_correlation.fetch_add(1, std::memory_order_relaxed) != 0) return;
  const std::string what =
      "CUPTI gave a launch the correlation id of its thread's previous launch (" +
      std::to_string(event.correlation_id) + ", " + collectors::to_string(event.api) +
      (after_gate ? ", after the launch gate had the callbacks off: they stay on from now on" : "") +
      "): the records of launches under one id cannot be told apart, so launches with a repeated id are not "
      "profiled, and a graph launch's records are used only while each of its nodes appears once "
      "(docs/graphs.md, 'Correlation ids')";
  log_.warn(what);
  write_notice(wire::Severity::kWarning, "correlation_repeated", what);
}

void Agent::on_launch_exit(const collectors::LaunchEvent& event) {
  if (event.api == collectors::LaunchApi::kGraphLaunch) {
    graph_profiler_.exit(event);
  } else {
    profiler_.exit(event);
  }
}

void Agent::on_nvtx(const collectors::NvtxEvent& event) {
  try {
    if (finished_.load(std::memory_order_relaxed)) return;
    nvtx_.on_event(event);
  } catch (...) {
    log_.log_once(LogLevel::kError, "nvtx", "internal error in the NVTX callback");
  }
}

void Agent::on_synchronize(bool enter, bool whole_context) {
  try {
    if (t_own_wait) return;  // rank_at_second_launch's own wait, if CUPTI reports it
    if (enter) {
      quiet_.wait_enter();
      return;
    }
    // Nothing is running now, so a forced flush loses no record: the families noted at launch
    // get their first durations and are ranked before their next launch.
    if (!rank_pending_.load(std::memory_order_relaxed) || !quiet_.wait_exit(whole_context)) return;
    if (finished_.load(std::memory_order_relaxed) || !trace_started_.load(std::memory_order_relaxed)) return;
    if (trace_.paused_now()) return;
    // At most one per kQuietFlushGapNs: a flush costs the waiting thread, and a family whose
    // launches keep coming back untraced would ask again at every wait.
    const uint64_t now = monotonic_now();
    const uint64_t last = last_quiet_flush_ns_.load(std::memory_order_relaxed);
    if (last != 0 && now - last < kQuietFlushGapNs) return;
    std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
    if (!gate.owns_lock()) return;  // the next quiet wait flushes
    rank_pending_.store(false, std::memory_order_relaxed);
    last_quiet_flush_ns_.store(now == 0 ? 1 : now, std::memory_order_relaxed);
    platform_.flush_trace(true);
  } catch (...) {
    log_.log_once(LogLevel::kError, "synchronize", "internal error in the wait callback");
  }
}

void Agent::on_graph(const collectors::GraphEvent& event) {
  try {
    // A capture may run on another thread from now on. Read first: a capture's every node passes
    // here, and the shared line is written once.
    if (!early_off_.load(std::memory_order_relaxed)) early_off_.store(true, std::memory_order_relaxed);
    if (finished_.load(std::memory_order_relaxed)) return;
    graphs_.on_event(event);
  } catch (...) {
    log_.log_once(LogLevel::kError, "graph", "internal error in the graph callback");
  }
}

void Agent::on_activity(const collectors::ActivityBatch& batch) {
  try {
    trace_.on_activity(batch);
  } catch (...) {
    log_.log_once(LogLevel::kError, "activity", "internal error while reading the kernel trace");
  }
}

uint64_t Agent::request_deep_capture(wire::ControlSource source, const std::string& target, uint32_t seconds,
                                     std::string* error) {
  return deep_.request(source, target, seconds, error);
}

// ---- the flush thread ----------------------------------------------------------------------

void Agent::flush_tick() {
  try {
    std::unique_lock<std::shared_mutex> gate(cupti_gate_);
    platform_.flush_trace(false);
  } catch (...) {
  }
  try {
    if (always_on_) {
      // The callbacks come on before the trace resumes and go off only after it paused
      // (launch_gate.h).
      update_launch_gate();
      trace_.cycle(monotonic_now());
      update_launch_gate();
    }
    deep_.poll();
    deep_.check();
    selector_.refresh_candidates();
    if (single_pass() != nullptr) single_pass()->plan_pending_groups();
    (void)profiler_.make_queued_plans();
    if (steps_) steps_->poll();  // a completed step's evaluation, off the application's thread
    profiler_.release_idle_profilers();
    poll_pm_window(true);
  } catch (...) {
  }
  if (!config_.prometheus_file.empty() &&
      std::chrono::steady_clock::now() - last_prometheus_ >= std::chrono::milliseconds(config_.prometheus_interval_ms)) {
    last_prometheus_ = std::chrono::steady_clock::now();
    write_prometheus();
  }
}

LaunchGate::Demand Agent::launch_demand(uint64_t now) const {
  LaunchGate::Demand d;
  const auto needed = [&d](const char* why) {
    d.needed_now = true;
    d.why = why;
    return d;
  };
  if (state_.load() != wire::AgentState::kActive) return needed("the agent is not profiling");
  if (!trace_.paused_now() || trace_.wants_on(now + launch_gate_->lead_ns())) return needed("the trace");
  if (selector_.deep_open()) return needed("a deep capture");
  // A step between two passes needs the callbacks only for its next pass (it rejoins the
  // application's steps when they are back): its context's hold is not a collection following
  // launches then.
  uint64_t step_next = UINT64_MAX;
  if (steps_ && steps_->busy()) {
    if (steps_->follows_now()) return needed("a step");
    step_next = steps_->next_pass_ns();
  }
  if (pm_window_ && pm_window_->busy()) return needed("the PM window");
  if (contexts_.follows_launches(now, steps_ ? steps_->quiet_family() : 0)) return needed("a collection in progress");
  d.next_work_ns =
      std::min(always_on_->next_work_ns(now, graph_profiler_.any_target(), steps_ != nullptr), step_next);
  d.why = "the budget";
  return d;
}

void Agent::update_launch_gate() {
  if (!launch_gate_ || !launch_gate_->enabled() || finished_.load()) return;
  // Held exclusively, no profiled launch is between its entry and its exit: none loses its exit.
  std::unique_lock<std::shared_mutex> gate(cupti_gate_);
  const uint64_t now = monotonic_now();
  if (launch_gate_->update(now, launch_demand(now)) && steps_) steps_->launches_missed();
  if (!launch_gate_->is_open() && steps_) steps_->keep_hold(now);
}

void Agent::poll_pm_window(bool may_wait) {
  if (!pm_window_ || paused_.load() || !trace_started_.load() || state_.load() != wire::AgentState::kActive) return;
  try {
    const uint64_t wait = pm_window_->poll();
    // A window of a few milliseconds is stopped after its span, not a tick later (the flush
    // thread's own time: the application's threads do not wait for it).
    constexpr uint64_t kInlineWaitNs = 250'000'000;
    if (may_wait && wait > 0 && wait <= kInlineWaitNs) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      (void)pm_window_->poll();
    }
  } catch (...) {
    log_.log_once(LogLevel::kError, "pm-window", "internal error in the PM window");
  }
}

void Agent::flush() {
  if (finished_.load() || in_forked_child()) return;
  if (trace_started_.load()) {
    // Never wait on a replay in progress on another thread: the flush thread collects then.
    std::unique_lock<std::shared_mutex> gate(cupti_gate_, std::try_to_lock);
    if (gate.owns_lock()) platform_.flush_trace(false);
  }
  selector_.refresh_candidates();
  profiler_.release_idle_profilers();
  // Without a flush thread (CUTRIAGE_TRACE_FLUSH_MS=0) the PM window advances here, never waiting.
  if (!flush_thread_.running()) poll_pm_window(false);
  write_prometheus();
}

// ---- output ------------------------------------------------------------------------------

wire::SessionInfo Agent::session_header(uint32_t segment_index) {
  wire::SessionInfo s;
  s.agent_version = kAgentVersion;
  s.host = process_.host;
  s.pid = process_.pid;
  s.command_line = process_.command_line;
  s.start_time_unix_ns = start_time_ns_;
  // Every visible GPU, not only those used so far: the header is written once, before later
  // launches may reach other devices. Runs inside a callback, after cuInit.
  if (collectors::Result<uint32_t> n = platform_.device_count(); n.is_ok()) {
    for (uint32_t d = 0; d < n.value(); ++d) (void)devices_.info(d);
  }
  for (const auto& [ordinal, info] : devices_.all()) {
    s.gpus.push_back(wire::GpuInfo{info.device, info.name, info.uuid, info.limits});
  }
  collectors::VersionInfo v = platform_.versions();
  s.driver_version = v.driver;
  s.cupti_version = v.cupti;
  // Application replay: each launch one pass, no replay in the process; the session's counters
  // come from runs of the program (its records say REPLAY_MODE_NONE, as always-on's do).
  s.replay_mode = always_on_    ? triage::ReplayMode::kNone
                  : app_replay_ ? triage::ReplayMode::kApplication
                                : triage::ReplayMode::kKernel;
  s.clock_control = triage::ClockControl::kNone;
  s.cache_control = single_pass() != nullptr ? "none" : "all";
  s.metric_set = metric_mode_name(config_.metric_mode);
  s.kernel_filter = config_.kernel_filter.spec();
  s.source = wire::SessionSource::kAgent;
  s.trace_clock_at_start_ns = trace_started_.load() ? trace_.clock_at_start_ns() : 0;
  s.segment_index = segment_index;
  s.mode = std::string(mode_name(config_.mode));
  s.job = process_.job;
  return s;
}

void Agent::write_notice(wire::Severity severity, const std::string& code, const std::string& message,
                         uint64_t family_id) {
  output_.write_notice(wire::Notice{severity, code, message, process_.now_unix_ns(), family_id});
}

void Agent::set_inactive(wire::AgentState state, const std::string& detail) {
  wire::AgentState expected = wire::AgentState::kActive;
  if (!state_.compare_exchange_strong(expected, state)) return;  // said once
  {
    std::lock_guard<std::mutex> lock(detail_mutex_);
    state_detail_ = detail;
  }
  log_.error(detail + "; the application continues unprofiled");
  write_notice(wire::Severity::kError,
               state == wire::AgentState::kPermissionDenied ? "permission_denied" : "profiler_failed", detail);
}

wire::SessionEnd Agent::session_end() const {
  std::string detail;
  {
    std::lock_guard<std::mutex> lock(detail_mutex_);
    detail = state_detail_;
  }
  return view_.session_end(detail);
}

PromSnapshot Agent::prometheus_snapshot() const { return view_.prometheus_snapshot(profiler_.sampled_launches()); }

void Agent::write_prometheus() {
  if (config_.prometheus_file.empty()) return;
  try {
    const std::string error = write_atomically(config_.prometheus_file, render_prometheus(prometheus_snapshot()));
    if (!error.empty()) log_.log_once(LogLevel::kError, "prometheus", "Prometheus export: " + error);
  } catch (...) {
    log_.log_once(LogLevel::kError, "prometheus", "internal error while writing the Prometheus export");
  }
}

// ---- the end -------------------------------------------------------------------------------

void Agent::stop_host_users() {
  flush_thread_.stop();  // it may be making a metric plan or decoding a PM window
  try {
    if (pm_window_) pm_window_->stop_open();  // its executions then come with the last flush
  } catch (...) {
  }
}

void Agent::finish_trace() {
  if (!trace_started_.load()) return;
  stop_host_users();
  try {
    std::unique_lock<std::shared_mutex> gate(cupti_gate_);
    platform_.flush_trace(true);  // delivers through on_activity, on this thread
  } catch (...) {
  }
  try {
    if (pm_window_) pm_window_->finish();
  } catch (...) {
  }
  trace_.close();
  graph_profiler_.finish();
  std::unique_lock<std::mutex> trace_lock = trace_.lock();
  const triage::TimelineSummary timeline = trace_.timeline_locked().summary();
  // Profiled records again, with every unprofiled duration and the session's timeline numbers.
  std::vector<wire::KernelRecord> rewrites;
  {
    std::lock_guard<std::mutex> lock(families_.mutex());
    for (Family* f : families_.all_locked()) {
      if (!f->last_record) continue;
      wire::KernelRecord record = *f->last_record;
      trace_.fill_inputs_locked(f->family_id, record.input);
      triage::fill_timeline_inputs(timeline, f->family_id, record.input);
      record.diagnosis = triage::triage_kernel(record.input, triage_options_);
      record.revision = f->last_record->revision + 1;
      f->diagnosis = record.diagnosis;
      f->last_record = record;
      rewrites.push_back(std::move(record));
    }
    // The PM window's records that still stand, with the trace's last word too.
    for (Family* f : families_.all_locked()) {
      if (!f->pm_record || f->pm_superseded) continue;
      wire::KernelRecord record = *f->pm_record;
      trace_.fill_inputs_locked(f->family_id, record.input);
      triage::fill_timeline_inputs(timeline, f->family_id, record.input);
      record.diagnosis = triage::triage_kernel(record.input, triage_options_);
      record.revision = f->pm_record->revision + 1;
      f->set_pm_record(record);
      rewrites.push_back(std::move(record));
    }
  }
  for (const wire::KernelRecord& r : rewrites) output_.write_kernel(r);
  output_.write_trace_summary(view_.trace_summary_locked(timeline));
}

void Agent::before_host_unload() {
  if (in_forked_child() || finished_.load()) return;
  stop_host_users();
}

void Agent::finish() {
  // A child the application forked inherits the agent with the parent's output descriptor: a
  // finish there would write a second summary and session end into the parent's file (and join
  // a flush thread the child does not have). The child is off: nothing written, nothing printed.
  if (in_forked_child()) return;
  if (finished_.exchange(true)) return;
  try {
    const bool saw_gpu_work =
        contexts_.seen() > 0 || counts_.kernel_launches.load() > 0 || counts_.graph_launches.load() > 0;
    if (!saw_gpu_work && subscribed_.load()) {
      // CUDA was initialized but never used a GPU (none visible, or the process only probed):
      // one line, no file.
      flush_thread_.stop();
      log_.warn("no CUDA context was created in this process (no usable GPU?); nothing was profiled");
      return;
    }
    if (steps_) steps_->finish();  // a step halfway: its profiler stopped, nothing recorded
    finish_trace();  // stops the flush thread: nothing polls the control file or signal after it
    remove_control_signal();
    if (const uint64_t repeated = counts_.repeated_correlation.load(); repeated > 0) {
      log_.warn(std::to_string(repeated) + " launch(es) came with their thread's previous correlation id and were "
                "not profiled (notice correlation_repeated)");
    }
    deep_.check();  // finished_ is set: an open window closes now
    write_prometheus();
    wire::SessionEnd end = session_end();
    end.end_time_unix_ns = process_.now_unix_ns();
    // A segmented sink publishes its last segment; anything written later (a late callback)
    // starts a segment of its own, with its own header and interning.
    output_.close(end, state_.load() != wire::AgentState::kNoGpu && state_.load() != wire::AgentState::kOtherSubscriber);
    if (!config_.summary || !subscribed_.load()) return;
    view_.print_summary(log_, end, output_.has_sink() && !output_.failed() ? output_.describe() : "");
  } catch (...) {
    log_.log_once(LogLevel::kError, "finish", "internal error while finishing");
  }
}

}  // namespace cutriage::agent
