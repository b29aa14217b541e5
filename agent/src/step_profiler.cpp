#include "step_profiler.h"

#include <algorithm>
#include <cstddef>
#include <set>
#include <utility>

#include "groups.h"
#include "stages.h"

namespace cutriage::agent {

using collectors::LaunchEvent;

namespace {

// Collection ids of steps, apart from always-on's stages' (MetricPlan::collection).
std::atomic<uint64_t> g_next_collection{uint64_t{1} << 48};

std::string ms(uint64_t ns) { return std::to_string(ns / 1'000'000) + " ms"; }

// A graph launch's place in a step: its exec id with the top bit set (family ids count up from 1).
constexpr uint64_t kGraphPosition = uint64_t{1} << 63;
uint64_t graph_position(uint32_t exec_id) { return kGraphPosition | exec_id; }
bool is_graph_position(uint64_t position) { return (position & kGraphPosition) != 0; }
std::string graph_name(uint32_t exec_id) { return "graph exec " + std::to_string(exec_id); }

// Every counter the rules read, and what always-on's groups collect besides (the chip's riders,
// the single-pass parts of throughputs): a step completes every family it holds.
std::vector<std::string> step_counters(const std::string& chip) {
  std::vector<std::string> counters = all_counters();
  for (std::string& c : always_on_counters(chip)) {
    if (std::find(counters.begin(), counters.end(), c) == counters.end()) counters.push_back(std::move(c));
  }
  return counters;
}

}  // namespace

StepProfiler::StepProfiler(Parts parts) : p_(std::move(parts)) {}

bool StepProfiler::enter(const LaunchEvent& event, Family& family, uint64_t launch_index) {
  try {
    if (in_step_.load(std::memory_order_acquire)) {
      if (step_context_.load(std::memory_order_relaxed) == event.context_id) {
        return in_step(event, family, launch_index);
      }
      // A launch elsewhere: a step whose passes stopped coming (the context gone, the loop over, a
      // step longer than the hold) is given up here, so that it does not hold the agent's steps.
      const uint64_t now = p_.monotonic_ns();
      if (now > last_step_ns_.load(std::memory_order_relaxed) + ContextState::kGraphHoldNs) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (in_step_.load() && now > last_step_ns_.load() + ContextState::kGraphHoldNs) {
          abandon_locked("no step began for " + ms(ContextState::kGraphHoldNs) +
                         " (a step that long loses its context's hold; the loop may be over)");
        }
      }
      return false;
    }
    if (over_.load(std::memory_order_relaxed) || !family.candidate.load(std::memory_order_relaxed) ||
        event.stream_capturing) {
      return false;
    }
    const uint64_t now = p_.monotonic_ns();
    if (now < not_before_ns_.load(std::memory_order_relaxed)) return false;
    // Another family anchors the next step: only its launches look again for a while (a family
    // launched once a step would otherwise seldom be the launch that looks).
    const uint64_t wanted = look_for_.load(std::memory_order_relaxed);
    if (wanted != 0 && wanted != family.family_id && now < look_for_until_ns_.load(std::memory_order_relaxed)) {
      return false;
    }
    return try_learn(event, family, now) && in_step(event, family, launch_index);
  } catch (const std::exception& e) {
    p_.log.log_once(LogLevel::kError, "step-enter", std::string("internal error in a step: ") + e.what());
  } catch (...) {
    p_.log.log_once(LogLevel::kError, "step-enter", "internal error in a step");
  }
  return false;
}

bool StepProfiler::try_learn(const LaunchEvent& event, Family& family, uint64_t now) {
  // The context known to the table even when it was created before the agent subscribed: while
  // the first step holds the lane no group claims it, and the PM window samples only a known one.
  (void)p_.contexts.for_launch(event);
  {
    std::lock_guard<std::mutex> flock(p_.families.mutex());
    const Family* anchor = p_.always_on.step_anchor_locked(family, now);
    if (anchor != &family) {
      look_for_.store(anchor != nullptr ? anchor->family_id : 0, std::memory_order_relaxed);
      look_for_until_ns_.store(now + kLookForNs, std::memory_order_relaxed);
      if (anchor == nullptr) {
        // Nothing to collect: the groups and the graphs' stages go on. While the routing window
        // may still answer, the lane stays the first step's (AlwaysOnPolicy's constructor).
        if (!p_.always_on.routing_window_pending(now)) p_.always_on.step_lane_done();
        not_before_ns_.store(now + kLookNs, std::memory_order_relaxed);
      }
      return false;
    }
  }
  // The anchor's own launch holds the graphs' stages back (only it renews the hold, so that an
  // anchor that never launches does not hold them for ever); the step begins once the budget
  // would admit its first pass: a learned step waits for nothing.
  p_.always_on.step_wants_lane(now + kLaneHoldNs);
  if (!p_.always_on.step_ready(now)) {
    not_before_ns_.store(now + kLookNs, std::memory_order_relaxed);
    return false;
  }
  // The step's plan (about a hundred Profiler Host calls the first time) is made by the flush
  // thread while the step is learned, not by the launch that begins it.
  if (std::optional<collectors::DeviceInfo> dev = p_.devices.info(event.device); dev && !dev->limits.chip.empty()) {
    p_.launches.queue_plans(dev->limits.chip, {step_counters(dev->limits.chip)});
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (in_step_.load()) return false;  // another thread began one meanwhile
  learning_ = true;
  top_ = family.family_id;
  learned_.clear();
  last_step_ns_.store(now);
  step_context_.store(event.context_id);
  in_step_.store(true, std::memory_order_release);
  return true;
}

size_t StepProfiler::pass_start() const {
  // Just after the period's last graph launch; 0 (the anchor's launch) when there is none, or
  // when the last launch is one.
  for (size_t i = first_.size(); i-- > 0;) {
    if (is_graph_position(first_[i])) return (i + 1) % first_.size();
  }
  return 0;
}

size_t StepProfiler::period_at() const {
  // Decided only over at least two of the longest steps allowed: a step that launches a family
  // several times in a row (a model's layers) repeats a shorter pattern at its start, which two
  // repeats alone would take for the step. The history begins at an anchor's launch, and the
  // launch about to be recorded (an anchor's) begins a period when n is a multiple of it.
  const size_t n = learned_.size();
  const size_t longest = p_.config.step_launches;
  if (n < 2 * longest) return 0;
  for (size_t period = 1; period <= longest; ++period) {
    if (n % period != 0) continue;
    size_t i = period;
    while (i < n && learned_[i] == learned_[i - period]) ++i;
    if (i == n) return period;
  }
  return 0;
}

bool StepProfiler::begin_locked(const LaunchEvent& event, Family& family, uint64_t launch_index, uint64_t now) {
  // Not begun for a reason that passes (the budget, a profile holding the context): the step is
  // forgotten without counting against steps, and learned again later.
  const auto not_now = [&] {
    end_step_locked();
    not_before_ns_.store(now + kLookNs, std::memory_order_relaxed);
    return false;
  };
  // A pass runs from the step's first launch up to its first graph launch (pass_start()).
  pass_len_ = static_cast<size_t>(std::find_if(first_.begin(), first_.end(), is_graph_position) - first_.begin());
  std::optional<collectors::DeviceInfo> dev = p_.devices.info(event.device);
  if (!dev || dev->limits.chip.empty()) return not_now();
  std::string error;
  std::shared_ptr<collectors::ProfilerHost> host = p_.devices.host(dev->limits.chip, &error);
  if (!host) {
    over_.store(true);
    p_.log.log_once(LogLevel::kWarn, "step-host", "steps (CUTRIAGE_STEP_STAGES) are off: profiler host: " + error);
    return not_now();
  }
  // Made ahead by the flush thread when there is one (queued as learning began).
  collectors::Result<collectors::MetricPlan> planned =
      p_.plans.plan(*host, dev->limits.chip, step_counters(dev->limits.chip));
  if (!planned.is_ok()) {
    over_.store(true);
    p_.log.log_once(LogLevel::kWarn, "step-plan",
                    "steps (CUTRIAGE_STEP_STAGES) are off: metric plan: " + planned.status().message());
    return not_now();
  }
  if (!p_.always_on.admit_step(CostKind::kGroupSwitch)) return not_now();
  std::shared_ptr<ContextState> ctx = p_.contexts.claim(event, 0, now, family.family_id);
  if (!ctx) {
    p_.always_on.charge_since(CostKind::kGroupSwitch, now);
    return not_now();
  }
  collectors::MetricPlan plan = std::move(planned).value();
  plan.replay = collectors::PlanReplay::kLaunches;
  plan.collection = g_next_collection.fetch_add(1);
  collectors::Status s;
  {
    std::lock_guard<std::mutex> plock(ctx->profiler_mutex);
    bool failed_now = false;
    s = ctx->ensure_range_profiler_locked(p_.platform, &failed_now);
    if (s.is_ok() && ctx->max_ranges < pass_len_) {
      s = collectors::Status(collectors::StatusCode::kUnavailable,
                             "the context's range profiler has room for " + std::to_string(ctx->max_ranges) +
                                 " ranges a pass");
    }
    if (s.is_ok()) s = ctx->profiler->begin(plan);
    if (s.is_ok() && ctx->profiler->pass_in_progress() != 0) {
      (void)ctx->profiler->end();
      s = collectors::Status(collectors::StatusCode::kInternal, "CUPTI continued another collection");
    }
    // The configuration is the step's: the groups' bookkeeping must not reuse it, and the step's
    // hold keeps every other profile off the context (and its device) between the passes.
    ctx->configured_group.store(-1);
    ctx->stage_family.store(s.is_ok() ? family.family_id : 0);
    ctx->stage_pass_mono_ns.store(now);
  }
  ctx->busy.store(false);
  const uint64_t spent = p_.monotonic_ns() - now;
  p_.always_on.charge_since(CostKind::kGroupSwitch, now);
  p_.always_on.graph_spent(spent);
  if (!s.is_ok()) {
    if (s.code() == collectors::StatusCode::kPermissionDenied) over_.store(true);
    end_step_locked();
    gave_up("a step at " + family.names->function + " could not begin: range profiler: " + s.message());
    return false;
  }
  ctx_ = std::move(ctx);
  anchor_ = &family;
  anchor_thread_ = std::this_thread::get_id();
  host_ = std::move(host);
  plan_ = std::move(plan);
  pass_ = 0;
  indices_.assign(first_.size(), {});
  correlations_.assign(first_.size(), {});
  current_.clear();
  current_.push_back(record_of(event, family, launch_index, plan_.passes == 1));
  begun_ns_ = now;
  last_step_ns_.store(now);
  if (p_.trace_started.load()) p_.trace.mark_replayed(event);
  p_.log.debug("step begun at " + family.names->function + ": " + std::to_string(first_.size()) + " launches, " +
               std::to_string(plan_.metrics.size()) + " counters in " + std::to_string(plan_.passes) + " passes (" +
               ms(spent) + ")");
  return true;
}

StepProfiler::Launch StepProfiler::record_of(const LaunchEvent& event, Family& family, uint64_t launch_index,
                                             bool last_pass) const {
  Launch l;
  l.family = &family;
  l.event = event;
  l.event.mangled_name = family.mangled;
  l.launch_index = launch_index;
  if (last_pass) {
    // The last pass's launches carry the values: their stream, registers and shared memory go into
    // the records (Decision 1's occupancy), asked now while the driver knows them.
    p_.platform.fill_launch_details(l.event);
    if (l.event.launch) (void)p_.platform.complete_launch_config(l.event, &*l.event.launch);
  }
  return l;
}

bool StepProfiler::in_step(const LaunchEvent& event, Family& family, uint64_t launch_index) {
  std::optional<Collected> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!in_step_.load() || step_context_.load() != event.context_id) return false;  // over meanwhile
    if (event.stream_capturing) return !learning_;  // captured, not run: no range
    const uint64_t now = p_.monotonic_ns();
    p_.always_on.step_wants_lane(now + kLaneHoldNs);  // learned or in progress: the lane stays the step's
    if (learning_) {
      // Learning only records: the launch goes on through the selection.
      last_step_ns_.store(now);
      if (family.family_id == top_) {
        if (const size_t period = period_at(); period > 0) {
          first_.assign(learned_.end() - static_cast<std::ptrdiff_t>(period), learned_.end());
          learning_ = false;
          learned_.clear();
          const size_t start = pass_start();
          if (start == 0) return begin_locked(event, family, launch_index, now);
          // The passes begin right after the step's last graph launch (CUPTI fails a pass with a
          // graph launch inside it): this launch is followed at its place in that order until the
          // first pass begins.
          std::rotate(first_.begin(), first_.begin() + static_cast<std::ptrdiff_t>(start), first_.end());
          set_waiting_locked(true);  // with no context yet: the first pass is still to begin (between_passes_locked)
          position_ = first_.size() - start;
          return follow_locked(family.family_id, family.names->function);
        }
      }
      learn_locked(family.family_id);
      return false;
    }
    if (waiting_) return between_passes_locked(event, family, launch_index, now);
    const size_t at = current_.size();
    if (at == first_.size()) {
      if (family.family_id != first_.front()) {
        abandon_locked(more_than_step(family.names->function));
        return true;
      }
      if (std::this_thread::get_id() != anchor_thread_) {
        abandon_locked("its first launch came from another thread than the first pass's");
        return true;
      }
      done = boundary_locked(event, launch_index, now);
    } else if (family.family_id != first_[at]) {
      abandon_locked(other_than_first(family.names->function, at));
      return true;
    } else {
      current_.push_back(record_of(event, family, launch_index, pass_ + 1 == plan_.passes));
      if (p_.trace_started.load()) p_.trace.mark_replayed(event);
      return true;
    }
  }
  if (done) hand_over(std::move(*done));
  return true;
}

template <typename Work>
std::string StepProfiler::with_profiler_locked(Work&& work) {
  ContextState& ctx = *ctx_;
  bool expected = false;
  if (!ctx.busy.compare_exchange_strong(expected, true)) return "its context was taken between two passes";
  std::string lost;
  {
    std::lock_guard<std::mutex> plock(ctx.profiler_mutex);
    if (!ctx.profiler || ctx.stage_family.load() != anchor_->family_id) {
      lost = "its context's range profiler was released or reconfigured between two passes";
    } else {
      work(ctx);
    }
  }
  ctx.busy.store(false);
  return lost;
}

std::optional<StepProfiler::Collected> StepProfiler::boundary_locked(const LaunchEvent& event, uint64_t launch_index,
                                                                     uint64_t now, bool at_graph) {
  (void)p_.always_on.admit_step(CostKind::kSameGroup);  // a pass of an admitted step goes at once
  const auto charge = [&] {
    p_.always_on.charge_since(CostKind::kSameGroup, now);
    p_.always_on.graph_spent(p_.monotonic_ns() - now);
  };
  // in_step checked every launch of the pass against the learned step.
  for (size_t i = 0; i < current_.size(); ++i) {
    indices_[i].push_back(current_[i].launch_index);
    correlations_[i].push_back(current_[i].event.correlation_id);
  }

  // The next pass goes now only when the budget has paid for the passes so far.
  const bool ready = !at_graph && p_.always_on.step_ready(now);
  collectors::Result<collectors::CounterData> ended = collectors::Status(collectors::StatusCode::kInternal, "");
  collectors::Status next = collectors::Status::ok();
  bool pending = false;
  const std::string lost = with_profiler_locked([&](ContextState& ctx) {
    ended = ctx.profiler->end();
    pending = ended.is_ok() && ended.value().passes_pending > 0;
    if (pending) {
      ++pass_;
      if (ready) next = begin_pass_locked(ctx, now);
      ctx.stage_pass_mono_ns.store(now);  // the hold goes on, waiting or not
    } else if (ended.is_ok() && p_.flush_running.load()) {
      // Complete: the hold goes on until the flush thread has written the records (hand_over), so
      // that no single-pass group profiles the step's families meanwhile; the idle release
      // disables the profiler later.
      ctx.stage_pass_mono_ns.store(now);
      ctx.profiled_end_mono_ns.store(now);
    } else {
      // Complete (or failed): the hold ends; the idle release disables the profiler later.
      ctx.stage_family.store(0);
      ctx.profiled_end_mono_ns.store(now);
    }
  });
  if (!lost.empty()) {
    abandon_locked(lost);
    charge();
    return std::nullopt;
  }
  if (!ended.is_ok() || !next.is_ok()) {
    const collectors::Status& why = !ended.is_ok() ? ended.status() : next;
    // Where it failed, for the log: which pass, over how many launches, ended where, how long
    // into the step.
    const std::string where = std::string(!ended.is_ok() ? "ending" : "beginning") + " pass " +
                              std::to_string(pass_ + 1) + " of " + std::to_string(plan_.passes) + " (the pass just run: " +
                              std::to_string(current_.size()) + " launches, ended " +
                              (at_graph ? "before the step's graph launch" : "at the step's first launch") + "; " +
                              ms(now - begun_ns_) + " after the step began)";
    in_step_.store(false);  // the profiler is already stopped: nothing for abandon_locked to end
    abandon_locked("range profiler, " + where + ": " + why.message());
    charge();
    return std::nullopt;
  }
  if (pending) {
    current_.clear();
    last_step_ns_.store(now);
    if (ready) {
      current_.push_back(record_of(event, *anchor_, launch_index, pass_ + 1 == plan_.passes));
      if (p_.trace_started.load()) p_.trace.mark_replayed(event);
    } else {
      set_waiting_locked(true);
      // This launch (the step's first, or the graph launch that ended the pass) runs outside any
      // pass.
      position_ = ((at_graph ? pass_len_ : 0) + 1) % first_.size();
    }
    charge();
    return std::nullopt;
  }
  Collected done;
  done.data = std::move(ended).value();
  done.plan = plan_;
  done.host = host_;
  done.launches = std::move(current_);
  done.indices = std::move(indices_);
  done.correlations = std::move(correlations_);
  done.anchor = anchor_->names->function;
  done.anchor_id = anchor_->family_id;
  done.ctx = ctx_;
  done.begun_ns = begun_ns_;
  done.entered_ns = now;
  end_step_locked();
  charge();
  done.ended_ns = p_.monotonic_ns();
  return done;
}

collectors::Status StepProfiler::begin_pass_locked(ContextState& ctx, uint64_t now) {
  collectors::Status s = ctx.profiler->begin(plan_);
  if (s.is_ok() && ctx.profiler->pass_in_progress() != pass_) {
    (void)ctx.profiler->end();
    s = collectors::Status(collectors::StatusCode::kInternal, "CUPTI started the collection over");
  }
  ctx.stage_pass_mono_ns.store(now);
  if (!s.is_ok()) ctx.release_locked();
  return s;
}

void StepProfiler::learn_locked(uint64_t position) {
  learned_.push_back(position);
  if (learned_.size() > size_t{kLearnPeriods} * p_.config.step_launches) {
    abandon_locked("no step of at most " + std::to_string(p_.config.step_launches) +
                   " launches (CUTRIAGE_STEP_STAGES) repeated within " + std::to_string(learned_.size()) +
                   " launches");
  }
}

bool StepProfiler::follow_locked(uint64_t position, const std::string& what) {
  const size_t at = position_;
  if (position != first_[at]) {
    abandon_locked("between passes " + std::to_string(pass_) + " and " + std::to_string(pass_ + 1) +
                   " the step ran other launches than the first (" + what + " at launch " + std::to_string(at + 1) +
                   " of " + std::to_string(first_.size()) + ")");
    return false;
  }
  position_ = (at + 1) % first_.size();
  return true;
}

std::string StepProfiler::more_than_step(const std::string& what) const {
  return "pass " + std::to_string(pass_ + 1) + " ran more than the step's " + std::to_string(first_.size()) +
         " launches (" + what + ")";
}

std::string StepProfiler::other_than_first(const std::string& what, size_t at) const {
  return "pass " + std::to_string(pass_ + 1) + " ran other launches than the first (" + what + " at launch " +
         std::to_string(at + 1) + " of " + std::to_string(first_.size()) + ")";
}

bool StepProfiler::between_passes_locked(const LaunchEvent& event, Family& family, uint64_t launch_index,
                                         uint64_t now) {
  if (rejoin_locked(family.family_id, family.names->function)) return true;
  const size_t at = position_;
  if (!follow_locked(family.family_id, family.names->function) || at != 0) return true;
  // A pass may begin at this launch: marked busy first, then whether the launch callbacks are on
  // (the gate's Dekker note, launch_gate.h). Off or switching: the step waits for them.
  const auto callbacks_stay_on = [this] {
    quiet_.store(false, std::memory_order_seq_cst);
    if (!p_.callbacks_on || p_.callbacks_on()) return true;
    quiet_.store(true, std::memory_order_seq_cst);
    return false;
  };
  if (!ctx_) {
    // A step with graph launches, its first pass still to begin: the step's first launch after
    // its last graph launch begins the collection.
    last_step_ns_.store(now);
    if (!p_.always_on.step_ready(now) || !callbacks_stay_on()) return true;
    set_waiting_locked(false);
    (void)begin_locked(event, family, launch_index, now);
    return true;
  }
  if (std::this_thread::get_id() != anchor_thread_) {
    abandon_locked("its first launch came from another thread than the first pass's");
    return true;
  }
  // A step's first launch: the step goes on, and so does the context's hold.
  last_step_ns_.store(now);
  ctx_->stage_pass_mono_ns.store(now);
  if (!p_.always_on.step_ready(now) || !callbacks_stay_on()) return true;

  (void)p_.always_on.admit_step(CostKind::kSameGroup);
  collectors::Status s = collectors::Status::ok();
  std::string lost = with_profiler_locked([&](ContextState& ctx) { s = begin_pass_locked(ctx, now); });
  p_.always_on.charge_since(CostKind::kSameGroup, now);
  p_.always_on.graph_spent(p_.monotonic_ns() - now);
  if (lost.empty() && !s.is_ok()) lost = "range profiler: " + s.message();
  if (!lost.empty()) {
    abandon_locked(lost);  // still waiting_: no pass is open to end
    return true;
  }
  set_waiting_locked(false);
  current_.clear();
  current_.push_back(record_of(event, family, launch_index, pass_ + 1 == plan_.passes));
  if (p_.trace_started.load()) p_.trace.mark_replayed(event);
  return true;
}

std::vector<StepProfiler::Published> StepProfiler::evaluate(const Collected& c, size_t* failed) const {
  std::vector<Published> out;
  std::set<uint64_t> seen;
  for (size_t i = 0; i < c.launches.size(); ++i) {
    if (c.launches[i].family == nullptr) continue;  // a graph launch's range: its kernels together
    Family& f = *c.launches[i].family;
    // Each family once, at its first launch of the step; not one the kernel filter leaves out, nor
    // one complete already.
    if (!seen.insert(f.family_id).second || !f.names->matches_filter) continue;
    {
      std::lock_guard<std::mutex> flock(p_.families.mutex());
      if (f.complete) continue;
    }
    collectors::Result<std::vector<collectors::MetricReading>> readings =
        c.host->evaluate(c.plan, c.data, static_cast<uint32_t>(i));
    if (!readings.is_ok() || readings.value().empty()) {
      ++*failed;
      continue;
    }
    // Each pass's launch as the trace timed it (0: the trace was paused then): Decision 0 compares
    // the passes by these, since one counter duration serves them all.
    std::vector<double> traced;
    for (uint64_t correlation : c.correlations[i]) traced.push_back(p_.trace.replayed_duration_ns(correlation));
    out.push_back(Published{c.launches[i], std::move(readings).value(), c.indices[i], std::move(traced)});
  }
  return out;
}

void StepProfiler::abandon_locked(const std::string& why) {
  if (ctx_ && in_step_.load() && !learning_) {
    ContextState& ctx = *ctx_;
    bool expected = false;
    if (ctx.busy.compare_exchange_strong(expected, true)) {
      std::lock_guard<std::mutex> plock(ctx.profiler_mutex);
      if (ctx.profiler && ctx.stage_family.load() == anchor_->family_id) {
        if (!waiting_) (void)ctx.profiler->end();  // the pass in progress: CUPTI's Stop before the Disable
        ctx.release_locked();
      }
      ctx.busy.store(false);
    }  // else a profile holds it now: the step's hold has lapsed or was taken, nothing is open
  }
  std::string at;
  if (anchor_ != nullptr) at = " at " + anchor_->names->function;
  end_step_locked();
  gave_up("a step" + at + " was given up: " + why);
}

void StepProfiler::gave_up(std::string message) {
  const uint32_t n = abandoned_.fetch_add(1) + 1;
  p_.always_on.step_lane_done();  // the graphs' stages may go while the next step waits
  not_before_ns_.store(p_.monotonic_ns() + kRetryNs, std::memory_order_relaxed);
  if (n >= kMaxAbandoned) {
    over_.store(true);
    message += "; steps given up " + std::to_string(n) + " times: no more steps in this process";
  }
  p_.log.info(message);
}

void StepProfiler::launches_missed() {
  // A step between passes rejoins by itself: its next launch sees the gate's switch count moved.
  std::lock_guard<std::mutex> lock(mutex_);
  if (learning_) learned_.clear();
}

void StepProfiler::keep_hold(uint64_t now) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !in_step_.load() || !waiting_) return;
  last_step_ns_.store(now);
  p_.always_on.step_wants_lane(now + kLaneHoldNs);
  if (ctx_) ctx_->stage_pass_mono_ns.store(now);
}

void StepProfiler::set_waiting_locked(bool waiting) {
  waiting_ = waiting;
  rejoining_ = false;
  heard_.clear();
  gaps_seen_ = callbacks_switches();
  quiet_family_.store(waiting && ctx_ && anchor_ != nullptr ? anchor_->family_id : 0, std::memory_order_relaxed);
  quiet_.store(waiting, std::memory_order_seq_cst);
}

bool StepProfiler::rejoin_locked(uint64_t position, const std::string& what) {
  if (const uint64_t gaps = callbacks_switches(); gaps != gaps_seen_) {
    gaps_seen_ = gaps;
    rejoining_ = true;
    heard_.clear();
  }
  if (!rejoining_) return false;
  heard_.push_back(position);
  const size_t n = first_.size();
  if (heard_.size() < n) return true;
  for (size_t from = 0; from < n; ++from) {
    size_t i = 0;
    while (i < n && heard_[i] == first_[(from + i) % n]) ++i;
    if (i == n) {
      // heard_ is one whole step from `from`: the next launch is at `from` again.
      position_ = from;
      if (p_.log.enabled(LogLevel::kDebug)) {
        p_.log.debug("step rejoined after the launch callbacks were off, at launch " + std::to_string(from + 1) + " of " +
                     std::to_string(n) + " (before pass " + std::to_string(pass_ + 1) + ")");
      }
      rejoining_ = false;
      heard_.clear();
      return true;
    }
  }
  abandon_locked("after the launch callbacks were off between passes " + std::to_string(pass_) + " and " +
                 std::to_string(pass_ + 1) + ", the " + std::to_string(n) +
                 " launches that followed were not the step's in its order (the last: " + what + ")");
  return true;
}

void StepProfiler::end_step_locked() {
  in_step_.store(false, std::memory_order_release);
  step_context_.store(0);
  learning_ = false;
  learned_.clear();
  ctx_.reset();
  anchor_ = nullptr;
  host_.reset();
  current_.clear();
  first_.clear();
  indices_.clear();
  correlations_.clear();
  pass_ = 0;
  waiting_ = false;
  position_ = 0;
  pass_len_ = 0;
  rejoining_ = false;
  heard_.clear();
  quiet_family_.store(0, std::memory_order_relaxed);
  quiet_.store(false, std::memory_order_seq_cst);
}

void StepProfiler::graph_launch(const LaunchEvent& event) {
  if (!in_step_.load(std::memory_order_acquire) || step_context_.load() != event.context_id) return;
  std::optional<Collected> done;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!in_step_.load() || step_context_.load() != event.context_id) return;
    // A graph launched in the step is one of its launches, checked against the learned step like
    // a kernel's; no pass holds one (docs/always-on.md, "Steps").
    const uint64_t position = graph_position(event.graph_exec_id);
    if (learning_) {
      last_step_ns_.store(p_.monotonic_ns());
      learn_locked(position);
      return;
    }
    if (waiting_) {
      // Never the step's first launch.
      const std::string what = graph_name(event.graph_exec_id);
      if (!rejoin_locked(position, what)) (void)follow_locked(position, what);
      return;
    }
    const size_t at = current_.size();
    if (at == first_.size()) {
      abandon_locked(more_than_step(graph_name(event.graph_exec_id)));
    } else if (first_[at] != position) {
      abandon_locked(other_than_first(graph_name(event.graph_exec_id), at));
    } else {
      // The step's first graph launch after the pass's start (pass_len_): the pass ends before it
      // runs, and the next begins at the step's first launch.
      done = boundary_locked(event, 0, p_.monotonic_ns(), true);
    }
  } catch (...) {
    p_.log.log_once(LogLevel::kError, "step-graph", "internal error in a step");
  }
  if (done) hand_over(std::move(*done));
}

void StepProfiler::finish() {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_step_.load()) abandon_locked("the agent finished before its last pass");
  } catch (...) {
  }
  poll();  // a step completed since the flush thread's last tick
}

void StepProfiler::hand_over(Collected c) {
  if (p_.flush_running.load()) {
    {
      std::lock_guard<std::mutex> lock(pending_mutex_);
      pending_.push_back(std::move(c));
    }
    if (p_.wake) p_.wake();
    return;
  }
  evaluate_and_publish(c);
}

void StepProfiler::poll() {
  std::vector<Collected> todo;
  {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    todo.swap(pending_);
  }
  for (const Collected& c : todo) {
    try {
      evaluate_and_publish(c);
    } catch (const std::exception& e) {
      p_.log.log_once(LogLevel::kError, "step-publish", std::string("internal error evaluating a step: ") + e.what());
    } catch (...) {
      p_.log.log_once(LogLevel::kError, "step-publish", "internal error evaluating a step");
    }
  }
}

void StepProfiler::evaluate_and_publish(const Collected& c) {
  // Whatever happens here, the context's hold that waited for it ends.
  struct Release {
    const Collected& c;
    ~Release() {
      uint64_t held = c.anchor_id;
      if (c.ctx) c.ctx->stage_family.compare_exchange_strong(held, 0);
    }
  } release{c};
  if (c.data.ranges != c.launches.size()) {
    gave_up("a step at " + c.anchor + " was given up: CUPTI recorded " + std::to_string(c.data.ranges) +
            " ranges for " + std::to_string(c.launches.size()) + " launches");
    return;
  }
  const uint64_t t0 = p_.monotonic_ns();
  size_t failed = 0;
  std::vector<Published> records = evaluate(c, &failed);
  p_.log.info("step at " + c.anchor + ": " + std::to_string(c.plan.passes) + " passes over " +
              std::to_string(c.launches.size()) + " launches, counters for " + std::to_string(records.size()) +
              " kernel famil" + (records.size() == 1 ? "y" : "ies") +
              (failed > 0 ? " (" + std::to_string(failed) + " without values)" : "") + " in " +
              ms(c.ended_ns - c.begun_ns) + "; the last pass's end took " + ms(c.ended_ns - c.entered_ns) +
              ", the evaluation " + ms(p_.monotonic_ns() - t0) +
              (p_.flush_running.load() ? " off the application's thread" : ""));
  for (Published& r : records) {
    try {
      // The record's cost: the last boundary, on the application's thread.
      p_.launches.publish_step(r.launch.event, *r.launch.family, r.launch.launch_index, c.plan, r.readings,
                               std::move(r.launch_indices), std::move(r.traced_ns), c.entered_ns, c.ended_ns);
    } catch (const std::exception& e) {
      p_.log.log_once(LogLevel::kError, "step-publish", std::string("internal error writing a step's record: ") + e.what());
    }
  }
}

}  // namespace cutriage::agent
