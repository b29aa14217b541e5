#include "selection.h"

#include "cutriage/triage/plan.h"
#include "stages.h"

namespace cutriage::agent {
namespace {

// How long a launch of another shape than the family's first keeps the family's later launches
// off the slow path (always-on's fast path reads Family::not_before_ns; deep mode's ignores it).
constexpr uint64_t kOtherShapeWaitNs = 1'000'000'000;

}  // namespace

bool same_shape(const triage::LaunchConfig& a, const triage::LaunchConfig& b) {
  return a.grid == b.grid && a.block == b.block && a.dynamic_shared_bytes == b.dynamic_shared_bytes;
}

Selector::Selector(const AgentConfig& config, FamilyTable& families, SelectionPolicy& policy,
                   const EarlierRanking& earlier, const std::atomic<wire::AgentState>& state,
                   const std::atomic<bool>& trace_started, std::function<uint64_t()> monotonic_ns)
    : config_(config),
      families_(families),
      policy_(policy),
      earlier_(earlier),
      state_(state),
      trace_started_(trace_started),
      monotonic_ns_(std::move(monotonic_ns)) {}

Selection Selector::select(const collectors::LaunchEvent& event, uint64_t launch_index, const std::string& chip,
                           Family& family, const ContextGroups& context) {
  std::lock_guard<std::mutex> lock(families_.mutex());
  Family* f = &family;
  if (event.stream_capturing) {
    ++f->stats.captured;
    ++families_.totals_locked().totals.captured_launches;
    // Captured launches do not resume it either: the budget's gate applies again (a family
    // launched under capture must not take this slow path on every launch); a launch the budget
    // lets through resumes it.
    f->resume_pending.store(false, std::memory_order_relaxed);
    // Nor does it count as still launching in the switch choices: a family launched only under
    // capture (its graph's launches are not profiled) would hold the others' switches forever.
    f->seen_mono_ns.store(0, std::memory_order_relaxed);
    return {};
  }
  if (!f->candidate.load()) return {};  // changed since the fast path looked
  const bool deep = deep_targets_locked(*f);
  if (state_.load() == wire::AgentState::kActive && !policy_.prepare_locked(*f, event, launch_index, chip, deep, context)) {
    return {};
  }
  if (f->resumed_record) update_candidate_locked(*f);
  if (!deep && matching_launches_.load() <= config_.launch_skip) {
    f->skipped.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  if (event.cooperative || f->names->no_replay) {
    // Record why, once, without profiling (counted on the fast path). Never sampled either:
    // kernel-serialized sampling would serialize a kernel whose blocks or peers wait on each other.
    return {Selection::Kind::kNoReplay, {}};
  }
  if (state_.load() != wire::AgentState::kActive) return {};
  if (deep) return select_deep_locked(event, *f);

  // Counters measured on different launches are combined, and samples join them, so only
  // launches of the same shape.
  if (f->first_launch && event.launch && !same_shape(*f->first_launch, *event.launch)) {
    f->seen_mono_ns.store(0, std::memory_order_relaxed);  // no use to it: not "still launching"
    // The fast path (always-on's gate) stays closed to the family a while: a kernel whose grid
    // follows the batch size would otherwise bring every launch here, each with a driver query.
    f->not_before_ns.store(monotonic_ns_() + kOtherShapeWaitNs, std::memory_order_relaxed);
    return {};
  }
  if (!counters_left_locked(*f)) {
    if (pc_sampling_left_locked(*f) && policy_.admit_sampling_locked(*f)) {
      f->pc_started = true;
      update_candidate_locked(*f);
      Selection sel{Selection::Kind::kPcSampling, {}};
      sel.cost = CostKind::kPcSampling;
      return sel;
    }
    if (!pc_sampling_left_locked(*f)) update_candidate_locked(*f);
    return {};
  }

  std::vector<std::string> wanted = wanted_locked(*f, chip);
  Selection selection{Selection::Kind::kCounters, {}};
  if (!wanted.empty() || policy_.stage_in_progress_locked(*f)) {
    SelectionPolicy::Choice choice = policy_.choose_locked(*f, std::move(wanted), context);
    if (choice.kind == SelectionPolicy::Choice::Kind::kWait) return {};
    if (choice.kind == SelectionPolicy::Choice::Kind::kComplete) choice.metrics.clear();
    wanted = std::move(choice.metrics);
    selection.group = choice.group;
    selection.stage_pass = choice.stage_pass;
    selection.stage_collection = choice.stage_collection;
    selection.cost = choice.cost;
  }
  if (wanted.empty()) {
    f->complete = true;
    update_candidate_locked(*f);
    return {};
  }
  ++f->profiles_started;
  ++families_.totals_locked().profiles_started;
  if (!f->first_launch && event.launch) f->first_launch = event.launch;
  f->attempted.insert(wanted.begin(), wanted.end());
  update_candidate_locked(*f);
  selection.metrics = std::move(wanted);
  return selection;
}

std::vector<std::string> Selector::wanted_locked(Family& f, const std::string& chip) {
  switch (config_.metric_mode) {
    case MetricMode::kFull: return all_counters();
    case MetricMode::kBase: return triage::counters_for_decisions(triage::routing_decisions());
    case MetricMode::kList: return config_.metric_list;
    case MetricMode::kAdaptive: break;
  }
  if (!f.diagnosis) {
    // The earlier run launched it once: no second launch to adapt on, everything at once.
    if (f.earlier != nullptr && f.earlier->launches == 1 && !f.earlier->launches_approximate &&
        config_.mode == AgentMode::kDeep) {
      return all_counters();
    }
    return policy_.first_counters(chip);
  }
  return triage::counters_still_needed(*f.diagnosis, f.measured, {f.attempted.begin(), f.attempted.end()});
}

std::vector<std::vector<std::string>> Selector::first_lists(const std::string& chip) const {
  if (config_.select == SelectMode::kNone) return {};
  switch (config_.metric_mode) {
    case MetricMode::kFull: return {all_counters()};
    case MetricMode::kBase: return {triage::counters_for_decisions(triage::routing_decisions())};
    case MetricMode::kList: return {config_.metric_list};
    case MetricMode::kAdaptive: break;
  }
  std::vector<std::vector<std::string>> lists;
  std::vector<std::string> first = policy_.plan_list_locked(nullptr, policy_.first_counters(chip));
  if (!first.empty()) lists.push_back(std::move(first));
  // As wanted_locked: a family the earlier run launched once gets everything at once.
  if (config_.mode == AgentMode::kDeep && earlier_.selects_single_launch()) lists.push_back(all_counters());
  return lists;
}

std::vector<std::string> Selector::next_list_locked(Family& family, const std::string& chip) {
  if (!counters_left_locked(family)) return {};
  return policy_.plan_list_locked(&family, wanted_locked(family, chip));
}

Selection Selector::select_deep_locked(const collectors::LaunchEvent& event, Family& f) {
  // A deep-capture window: every counter in one replayed launch, then one sampled launch; the
  // budget does not apply (the user asked for it).
  const uint64_t id = deep_->request.id;
  if (deep_->captured.count(f.family_id) == 0) {
    deep_->captured.insert(f.family_id);
    f.deep_request = id;
    ++f.profiles_started;
    ++families_.totals_locked().profiles_started;
    if (event.launch) f.first_launch = event.launch;
    Selection sel{Selection::Kind::kCounters,
                  config_.metric_mode == MetricMode::kList ? config_.metric_list : all_counters()};
    sel.deep = id;
    update_candidate_locked(f);
    return sel;
  }
  if (config_.pc_sampling && deep_->sampled.count(f.family_id) == 0 && f.deep_request == id && f.last_record &&
      f.last_record->status == wire::ProfileStatus::kProfiled) {
    deep_->sampled.insert(f.family_id);
    f.pc_started = true;
    Selection sel{Selection::Kind::kPcSampling, {}};
    sel.deep = id;
    update_candidate_locked(f);
    return sel;
  }
  return {};
}

void Selector::update_candidate_locked(Family& f) {
  bool wanted = false;
  switch (config_.select) {
    case SelectMode::kAll: wanted = true; break;
    case SelectMode::kNone: wanted = false; break;
    case SelectMode::kTop:
    case SelectMode::kShare:
      // The earlier run's ranking, when there is one, holds from the first launch. Without it and
      // without a running trace nothing is ranked: profile by name, as with "all".
      wanted = earlier_.loaded() || trace_started_.load() ? f.ranked : true;
      break;
  }
  const bool active = state_.load() == wire::AgentState::kActive;
  if (f.wrote_unprofiled || !f.names->matches_filter || !active ||
      (!counters_left_locked(f) && !pc_sampling_left_locked(f))) {
    wanted = false;
  }
  // A deep-capture window overrides the selection for the families it targets.
  if (deep_targets_locked(f) && active && !f.wrote_unprofiled) wanted = true;
  f.candidate.store(wanted, std::memory_order_relaxed);
}

void Selector::update_all_locked() {
  for (Family* f : families_.all_locked()) update_candidate_locked(*f);
}

bool Selector::counters_left_locked(const Family& f) const {
  const uint64_t launch_count = config_.launch_count;
  return !f.complete && f.profiles_started < policy_.max_counter_launches() &&
         (launch_count == 0 || families_.totals_locked().profiles_started < launch_count);
}

bool Selector::pc_sampling_left_locked(const Family& f) const {
  // After a profiled record exists: the samples join that record's diagnosis. CUTRIAGE_LAUNCH_COUNT
  // limits the counter launches only; sampling adds one launch per profiled family.
  if (!config_.pc_sampling || !f.last_record.has_value() || f.last_record->status != wire::ProfileStatus::kProfiled) {
    return false;
  }
  return !f.pc_started || policy_.samples_again_locked(f);
}

bool Selector::deep_targets_locked(const Family& f) const {
  if (!deep_) return false;
  if (deep_->top > 0) {
    if (f.rank == 0 || f.rank > deep_->top) return false;
  } else if (!deep_->filter.matches(f.mangled, f.names->demangled, f.names->function)) {
    return false;
  }
  // Done with this family in this window?
  const bool profiled = deep_->captured.count(f.family_id) > 0;
  const bool sampled = !config_.pc_sampling || deep_->sampled.count(f.family_id) > 0;
  return !(profiled && sampled);
}

void Selector::apply_ranking(const triage::TimelineAccumulator& timeline) {
  // Ranks are kept in every mode: a deep capture of top:N targets by them whatever CUTRIAGE_SELECT
  // says, and the report names them.
  const bool ranks = config_.select == SelectMode::kTop || config_.select == SelectMode::kShare;
  const std::vector<uint64_t> ranking = timeline.ranking();
  const double total = timeline.total_kernel_ns();
  std::lock_guard<std::mutex> lock(families_.mutex());
  for (size_t i = 0; i < ranking.size(); ++i) {
    Family* f = families_.by_id_locked(ranking[i]);
    if (f == nullptr) continue;
    const triage::FamilyTimeStats* stats = timeline.family(ranking[i]);
    f->share = stats != nullptr && total > 0 ? stats->total_ns / total : 0.0;
    f->rank = static_cast<uint32_t>(i + 1);
    if (ranks && !earlier_.loaded()) {  // with CUTRIAGE_RANKING, `ranked` was set at creation
      const bool was_ranked = f->ranked;
      f->ranked = config_.select == SelectMode::kTop ? i < config_.select_top : f->share >= config_.select_min_share;
      if (f->ranked && !was_ranked && f->launches_when_ranked == 0) {
        f->launches_when_ranked = f->launches.load(std::memory_order_relaxed);
        f->captured_when_ranked = f->stats.captured;
      }
    }
    if (ranks || deep_) update_candidate_locked(*f);
  }
}

void Selector::refresh_candidates() {
  // PC sampling comes back after its interval: nothing else re-evaluates a family whose work was
  // done, so the flush thread (and cutriage_flush) looks every tick.
  if (!config_.pc_sampling || !policy_.resamples()) return;
  std::lock_guard<std::mutex> lock(families_.mutex());
  for (Family* f : families_.all_locked()) {
    if (f->pc_started && !f->candidate.load(std::memory_order_relaxed)) update_candidate_locked(*f);
  }
}

std::vector<std::string> DeepPolicy::first_counters(const std::string& chip) const {
  // No second launch to adapt on: everything at once.
  if (config_.max_profiles_per_kernel == 1) return all_counters();
  return first_stage_counters(chip);
}

SelectionPolicy::Choice DeepPolicy::choose_locked(Family&, std::vector<std::string> wanted, const ContextGroups&) {
  Choice c;
  c.metrics = std::move(wanted);
  return c;
}

}  // namespace cutriage::agent
