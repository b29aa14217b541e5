#include "pm_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cutriage::agent {
namespace {

constexpr std::string_view kTimeDuration = "gpu__time_duration.sum";

std::string seconds_text(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(ns) / 1e9);
  return b;
}

std::string us_text(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", static_cast<double>(ns) / 1e3);
  return b;
}

std::string ms_digits(uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", static_cast<double>(ns) / 1e6);
  return b;
}

// The interval: a quarter of the shortest mean execution among the top wanted families, so that
// each execution holds about three samples wholly inside it; never below the probe's 5 us, in
// whole microseconds.
uint64_t interval_for(double mean_ns) {
  if (!(mean_ns > 0)) return PmWindow::kMinIntervalNs;
  const auto quarter = static_cast<uint64_t>(mean_ns / 4 / 1000) * 1000;
  return std::max(PmWindow::kMinIntervalNs, quarter);
}

}  // namespace

std::string PmWindow::off_reason() const {
  std::lock_guard<std::mutex> lock(reason_mutex_);
  return off_reason_;
}

uint64_t PmWindow::poll() {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  const uint64_t now = p_.monotonic_ns();
  switch (state_) {
    case State::kOff:
      return 0;
    case State::kIdle: {
      if (now < retry_after_ns_) return 0;
      const std::optional<Wanted> w = wanted(now);
      if (!w) return 0;
      return begin(*w, now) ? span_ns_ : 0;
    }
    case State::kOpen:
      if (now < opened_mono_ns_ + span_ns_) return opened_mono_ns_ + span_ns_ - now;
      stop(now);
      return 0;
    case State::kStopped: {
      // The trace delivers the window's executions a flush or two after they ran: attributed once
      // a record starting after the window's end has come, or after kCatchUpNs.
      const uint64_t latest = p_.trace.window_executions().latest_start_ns;
      if (latest < stop_trace_ns_ && now < stopped_mono_ns_ + kCatchUpNs) return 0;
      attribute();
      return 0;
    }
  }
  return 0;
}

std::optional<PmWindow::Wanted> PmWindow::wanted(uint64_t now) {
  // The trace's lock, then the family table's (the lock order).
  Wanted w;
  {
    std::unique_lock<std::mutex> trace_lock = p_.trace.lock();
    const triage::TimelineAccumulator& timeline = p_.trace.timeline_locked();
    std::lock_guard<std::mutex> flock(p_.families.mutex());
    struct Candidate {
      uint64_t id;
      uint32_t device;
      double share;
      double mean_ns;
    };
    std::vector<Candidate> all;
    for (const Family* f : p_.families.all_locked()) {
      // Launched since the previous look: a window samples what runs now, and a family that ran
      // only at the start (a model's random init, ranked first before the loop's records came
      // back) would leave it empty (seen on the H200).
      const uint64_t launches = f->launches.load(std::memory_order_relaxed);
      auto seen = launches_seen_.try_emplace(f->family_id, launches);
      const bool running = !seen.second && launches > seen.first->second;
      seen.first->second = launches;
      // The trace's ranking gives the share (Selector::apply_ranking): 0 until it has run.
      if (!running || !(f->share >= kMinShare) || f->routed || f->complete || f->pm_routed ||
          f->pm_windows_missed >= kMaxMisses || f->names->no_replay || !f->names->matches_filter) {
        continue;
      }
      const triage::FamilyTimeStats* s = timeline.family(f->family_id);
      if (s == nullptr || s->launches == 0) continue;
      all.push_back({f->family_id, f->device, f->share, s->mean_ns()});
    }
    if (all.empty()) return std::nullopt;
    std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) { return a.share > b.share; });
    w.device = all.front().device;
    size_t top = 0;
    for (const Candidate& c : all) {
      if (c.device != w.device) continue;
      w.families.emplace_back(c.id, c.share);
      if (top++ < 3 && c.mean_ns > 0) w.mean_ns = w.mean_ns > 0 ? std::min(w.mean_ns, c.mean_ns) : c.mean_ns;
    }
  }
  // With the trace on for the whole window (a duty-cycled trace may be paused now).
  const uint64_t interval = interval_for(w.mean_ns);
  const uint64_t span = std::min<uint64_t>(uint64_t{kMaxSamples} * interval, kMaxWindowNs);
  if (p_.trace.on_left_ns(now) < 2 * span) return std::nullopt;
  return w;
}

bool PmWindow::begin(const Wanted& w, uint64_t now) {
  std::string chip;
  if (std::optional<collectors::DeviceInfo> d = p_.devices.known(w.device)) chip = d->limits.chip;
  if (chip.empty()) return false;
  // Never beside an enabled range profiler or a stage in progress on the device: waits a tick.
  std::shared_ptr<ContextState> ctx = p_.contexts.claim_for_window(w.device, now);
  if (!ctx) return false;
  if (!p_.always_on.admit_pm_window(windows_.load() == 0 && failures_ == 0)) {
    ctx->busy.store(false);
    return false;
  }
  interval_ns_ = interval_for(w.mean_ns);
  const uint32_t samples = static_cast<uint32_t>(std::min<uint64_t>(kMaxSamples, kMaxWindowNs / interval_ns_));
  span_ns_ = uint64_t{samples} * interval_ns_;
  collectors::PmSamplingOptions options;
  options.metrics = pm_node_metrics();
  options.interval_ns = interval_ns_;
  options.max_samples = samples;
  options.synchronize = false;  // a time window, from this thread
  begin_trace_ns_ = p_.platform.timestamp_ns();
  p_.trace.watch_window(w.device, begin_trace_ns_);
  const uint64_t t0 = p_.monotonic_ns();
  collectors::Status started;
  {
    std::shared_lock<std::shared_mutex> gate(p_.gate);
    std::lock_guard<std::mutex> plock(ctx->profiler_mutex);
    started = ctx->begin_pm_sampling_locked(p_.platform, chip, options);
  }
  if (!started.is_ok()) {
    p_.always_on.charge(CostKind::kPmWindow, p_.monotonic_ns() - t0);
    ctx->busy.store(false);
    p_.trace.unwatch_window();
    fail(started, "could not start", now);
    return false;
  }
  ctx_ = std::move(ctx);
  device_ = w.device;
  opened_mono_ns_ = p_.monotonic_ns();
  sampled_for_.clear();
  for (const auto& [id, share] : w.families) sampled_for_.push_back(id);
  state_ = State::kOpen;
  busy_.store(true, std::memory_order_relaxed);
  p_.log.info("PM window on device " + std::to_string(w.device) + ": " + std::to_string(samples) + " samples every " +
              us_text(interval_ns_) + " us (" + us_text(span_ns_) + " us) for " + std::to_string(w.families.size()) +
              " unrouted famil" + (w.families.size() == 1 ? "y" : "ies") + ", " +
              seconds_text(p_.always_on.since_start_ns()) + " s after the agent started");
  return true;
}

void PmWindow::stop(uint64_t now) {
  const uint64_t t0 = p_.monotonic_ns();
  collectors::Result<collectors::PmSampleBatch> batch = [&] {
    std::shared_lock<std::shared_mutex> gate(p_.gate);
    std::lock_guard<std::mutex> plock(ctx_->profiler_mutex);
    return ctx_->pm_sampler->end();
  }();
  stop_trace_ns_ = p_.platform.timestamp_ns();
  const uint64_t measured = p_.monotonic_ns() - t0;
  ctx_->busy.store(false);
  ctx_.reset();
  windows_.fetch_add(1);
  if (!batch.is_ok()) {
    p_.always_on.charge(CostKind::kPmWindow, measured);
    p_.trace.unwatch_window();
    fail(batch.status(), "failed", now);
    return;
  }
  // What the window cost the application: the device's part of the Start, the Stop (the
  // collector's own measures) and the assumed drag over its span. The Start's host-side parts
  // (the configuration and the counter-data image: CPU work only) and the decode and evaluation
  // inside end() ran on this thread, beside the application's: not charged.
  const collectors::PmSampleBatch& b = batch.value();
  const auto drag = static_cast<uint64_t>(kAssumedDrag * static_cast<double>(span_ns_));
  const uint64_t host_side = std::min(b.start_cost_ns, b.start_host_config_ns + b.start_counter_data_ns);
  const uint64_t charged = b.start_cost_ns - host_side + b.stop_cost_ns + drag;
  p_.always_on.charge(CostKind::kPmWindow, charged);
  std::string start_parts;
  if (host_side > 0) {
    start_parts = " (of it, host config " + ms_digits(b.start_host_config_ns) + " ms and counter-data image " +
                  ms_digits(b.start_counter_data_ns) + " ms on the flush thread, not charged)";
  }
  p_.log.info("PM window costs: Start " + ms_digits(b.start_cost_ns) + " ms" + start_parts + ", Stop " +
              ms_digits(b.stop_cost_ns) + " ms, assumed drag " + ms_digits(drag) + " ms; charged " +
              ms_digits(charged) + " ms; decode and evaluation " + ms_digits(b.decode_cost_ns) +
              " ms on the flush thread");
  if (b.samples.empty()) {
    p_.trace.unwatch_window();
    fail(collectors::Status(collectors::StatusCode::kUnavailable, "no sample came back"), "gave nothing", now);
    return;
  }
  batch_ = std::move(batch).value();
  stopped_mono_ns_ = now;
  state_ = State::kStopped;
}

void PmWindow::attribute() {
  const TraceFolder::WindowExecutions seen = p_.trace.window_executions();
  p_.trace.unwatch_window();
  state_ = State::kIdle;
  busy_.store(false, std::memory_order_relaxed);
  // Stages stop waiting for the window once its families are routed and their first stages'
  // plans made (below), whichever way this returns: a stage begun earlier would take the plain
  // first stage, or make its plan on the launching thread.
  class Settle {
   public:
    explicit Settle(AlwaysOnPolicy& policy) : policy_(policy) {}
    Settle(const Settle&) = delete;
    Settle& operator=(const Settle&) = delete;
    ~Settle() { policy_.pm_window_settled(); }

   private:
    AlwaysOnPolicy& policy_;
  } settle(p_.always_on);
  if (!batch_) return;
  const collectors::PmSampleBatch batch = std::move(*batch_);
  batch_.reset();
  std::map<uint64_t, FamilyPmValues> pm = attribute_pm_samples(batch, seen.executions);
  // Each family's mean execution in the window: its duration for Decision 0.
  std::map<uint64_t, std::pair<double, uint32_t>> durations;
  for (const NodeExecution& e : seen.executions) {
    if (e.end_ns <= e.start_ns) continue;
    auto& [sum, n] = durations[e.family];
    sum += static_cast<double>(e.end_ns - e.start_ns);
    ++n;
  }
  const uint64_t window_start = batch.samples.front().start_ns;
  const uint64_t window_end = batch.samples.back().end_ns;
  std::optional<collectors::DeviceInfo> device = p_.devices.known(device_);
  const uint64_t launch_index = p_.launch_index();

  std::vector<std::string> routed_names;
  std::vector<std::string> missed_names;
  std::vector<std::pair<uint64_t, wire::KernelRecord>> records;
  for (uint64_t id : sampled_for_) {
    const auto own = pm.find(id);
    const uint32_t n = own != pm.end() ? own->second.samples : 0;
    wire::KernelRecord record;
    triage::KernelInput& in = record.input;
    {
      std::lock_guard<std::mutex> flock(p_.families.mutex());
      Family* f = p_.families.by_id_locked(id);
      if (f == nullptr) continue;
      if (n < kMinSamples || own->second.metrics.size() == 0) {
        ++f->pm_windows_missed;
        missed_names.push_back(f->names->function + " (" + std::to_string(n) + ")");
        continue;
      }
      in.mangled_name = f->mangled;
      in.demangled_name = f->names->demangled;
      in.function_name = f->names->function;
      in.device = f->device;
      if (f->first_launch) {
        in.launch = f->first_launch;
      } else if (auto s = seen.shapes.find(id); s != seen.shapes.end()) {
        in.launch = s->second;
      }
    }
    in.launch_index = launch_index;
    if (device) in.device_limits = device->limits;
    in.metrics = own->second.metrics;
    if (auto d = durations.find(id); d != durations.end() && d->second.second > 0) {
      in.metrics.set(std::string(kTimeDuration), d->second.first / d->second.second, "nsecond");
    }
    in.collection.replay_mode = triage::ReplayMode::kNone;
    in.collection.clock_control = triage::ClockControl::kNone;
    in.collection.collector = triage::Collector::kAgent;
    in.collection.cache_control = "none";
    in.collection.passes = 1;
    p_.builds.fill(in.mangled_name, in);
    triage::PmWindowScope scope;
    scope.samples = n;
    scope.interval_ns = batch.interval_ns;
    scope.window_start_ns = window_start;
    scope.window_end_ns = window_end;
    scope.window_samples = static_cast<uint32_t>(batch.samples.size());
    scope.executions = own->second.executions;
    in.pm_window = scope;
    p_.trace.fill_inputs(id, in);
    record.family_id = id;
    record.status = wire::ProfileStatus::kProfiled;
    record.launch_api = wire::LaunchApi::kKernel;
    record.profile_number = 1;
    if (auto d = in.metrics.get(kTimeDuration)) record.duration_ns = *d;
    record.diagnosis = triage::triage_kernel(in, p_.triage_options);
    records.emplace_back(id, std::move(record));
  }

  std::vector<wire::KernelRecord> writes;
  std::vector<std::pair<uint64_t, std::string>> notices;
  auto routes = [](const triage::Diagnosis& d) {
    return d.classification != triage::Classification::kInconclusive && d.trust != triage::Trust::kUntrusted;
  };
  // CUTRIAGE_STAGE_PASSES: the first stage of a family routed here takes its verdict's route too,
  // a list of its own. Its plan is made now, before the routing is published below: a routed
  // family's next launch may begin that stage at once.
  const std::string chip = device ? device->limits.chip : std::string();
  std::vector<std::vector<std::string>> stage_lists;
  std::vector<std::string> missed_why;  // a line each, after the window's own
  for (const auto& [id, record] : records) {
    if (chip.empty() || !routes(record.diagnosis)) continue;
    std::vector<std::string> list = p_.always_on.routed_first_stage(chip, record.diagnosis.classification);
    if (!list.empty() && std::find(stage_lists.begin(), stage_lists.end(), list) == stage_lists.end()) {
      stage_lists.push_back(std::move(list));
    }
  }
  if (!stage_lists.empty() && p_.plan_ahead) p_.plan_ahead(chip, stage_lists);
  const std::string when = seconds_text(p_.always_on.since_start_ns());
  {
    std::lock_guard<std::mutex> flock(p_.families.mutex());
    for (auto& [id, record] : records) {
      Family* f = p_.families.by_id_locked(id);
      if (f == nullptr) continue;
      const triage::Diagnosis& d = record.diagnosis;
      // Routed: classified from trusted counters. An unrouted PM verdict is not written: the range
      // profiler's records say more.
      if (!routes(d)) {
        ++f->pm_windows_missed;
        missed_names.push_back(f->names->function + " (" + std::to_string(record.input.pm_window->samples) +
                               ", not routed)");
        // Why, for whoever reads the log: the window's verdict is not written.
        std::string why = d.headline.size() > 240 ? d.headline.substr(0, 240) + "..." : d.headline;
        missed_why.push_back("PM window: " + f->names->function + " not routed from its " +
                             std::to_string(record.input.pm_window->samples) + " samples: " + why);
        continue;
      }
      // The range profiler's records so far are superseded by this one (until its counters are
      // complete: LaunchProfiler then supersedes this record).
      record.combined_launch_indices = f->profiled_launches;
      f->set_pm_record(record);
      f->pm_routed = true;
      routed_names.push_back(f->names->function);
      notices.emplace_back(id, f->names->function + ": verdict routed " + when +
                                   " s after the agent started, from its own PM samples (" +
                                   std::to_string(record.input.pm_window->samples) + " of " +
                                   us_text(batch.interval_ns) + " us in one PM window; the range profiler's groups "
                                   "add the deeper decisions): " + d.headline);
      writes.push_back(record);
    }
  }
  for (const wire::KernelRecord& r : writes) p_.output.write_kernel(r);
  for (const auto& [id, message] : notices) {
    p_.log.info(message);
    p_.notify(wire::Severity::kInfo, "always_on_routed", message, id);
  }
  std::string line = "PM window on device " + std::to_string(device_) + ": " + std::to_string(batch.samples.size()) +
                     " samples over " + us_text(window_end > window_start ? window_end - window_start : 0) +
                     " us, " + std::to_string(seen.executions.size()) + " executions traced; routed " +
                     std::to_string(routed_names.size()) + " of " + std::to_string(sampled_for_.size());
  if (!missed_names.empty()) {
    line += "; too few samples or not routed:";
    for (const std::string& m : missed_names) line += " " + m;
  }
  p_.log.info(line);
  for (const std::string& why : missed_why) p_.log.info(why);
}

void PmWindow::fail(const collectors::Status& why, const std::string& phase, uint64_t now) {
  ++failures_;
  const bool permanent = why.code() == collectors::StatusCode::kNotSupported ||
                         why.code() == collectors::StatusCode::kPermissionDenied || failures_ >= kMaxFailures;
  const std::string message = "PM window " + phase + " (" + why.message() + "); " +
                              (permanent ? "always-on routes with the range profiler's groups alone"
                                         : "tried again in " + seconds_text(kRetryNs) + " s");
  p_.log.log_once(LogLevel::kWarn, "pm-window-" + std::to_string(failures_), message);
  p_.notify(wire::Severity::kWarning, "pm_window_failed", message, 0);
  retry_after_ns_ = now + kRetryNs;
  state_ = permanent ? State::kOff : State::kIdle;
  busy_.store(false, std::memory_order_relaxed);
  p_.always_on.pm_window_settled();  // stages do not wait for a retry
  if (permanent) {
    std::lock_guard<std::mutex> lock(reason_mutex_);
    off_reason_ = message;
  }
}

void PmWindow::stop_open() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::kOpen) stop(p_.monotonic_ns());
}

void PmWindow::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::kStopped) attribute();
}

}  // namespace cutriage::agent
