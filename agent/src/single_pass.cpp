#include "single_pass.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "cutriage/base/read_file.h"
#include "cutriage/triage/plan.h"
#include "output.h"

namespace cutriage::agent {
namespace {

// Launches of another shape a family resumable from an earlier process waits through.
constexpr uint32_t kResumeShapeTries = 16;

// A family with no verdict yet: never profiled, or the route could not be decided.
bool unrouted(const std::optional<triage::Diagnosis>& diagnosis) {
  return !diagnosis || diagnosis->classification == triage::Classification::kInconclusive;
}

// The counters a verdict of this classification rests on (triage::verdict_decisions), breakdowns
// expanded, sorted; computed once per classification.
const std::vector<std::string>& verdict_counters(triage::Classification c) {
  static const auto& kByClass = *new std::vector<std::vector<std::string>>([] {
    std::vector<std::vector<std::string>> out;
    for (uint8_t i = 0; i <= static_cast<uint8_t>(triage::Classification::kInconclusive); ++i) {
      std::vector<std::string> r = triage::expand_breakdowns(
          triage::verdict_counters_for(triage::verdict_decisions(static_cast<triage::Classification>(i))));
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      out.push_back(std::move(r));
    }
    return out;
  }());
  const auto i = static_cast<size_t>(c);
  return i < kByClass.size() ? kByClass[i] : kByClass.back();
}

}  // namespace

std::set<std::string> stage_wants(Family& family, const std::vector<std::string>& wanted) {
  // Throughputs that take several passes come from their single-pass parts.
  const std::vector<std::string> expanded = triage::expand_breakdowns(wanted);
  std::set<std::string> all_wanted(expanded.begin(), expanded.end());
  family.ao_wanted = staged_wants(family, all_wanted);
  return all_wanted;
}

std::vector<std::string> staged_wants(const Family& f, const std::set<std::string>& want) {
  const std::vector<std::string>* stage = nullptr;
  if (unrouted(f.diagnosis)) {
    stage = &routing_counters_expanded();
  } else if (!f.routed) {
    stage = &verdict_counters(f.diagnosis->classification);
  }
  if (stage != nullptr) {
    std::vector<std::string> out;
    for (const std::string& m : want) {
      if (std::binary_search(stage->begin(), stage->end(), m)) out.push_back(m);
    }
    if (!out.empty()) return out;
  }
  return {want.begin(), want.end()};
}

namespace {

std::string dim3_text(const triage::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

}  // namespace

size_t collectable_in_groups(const MetricGroups& groups, const std::vector<std::string>& wanted,
                             const std::set<std::string>& attempted) {
  const std::vector<std::string> expanded = triage::expand_breakdowns(wanted);
  const std::set<std::string> want(expanded.begin(), expanded.end());
  std::set<std::string> held;
  for (const collectors::MetricPlan& plan : groups.plans) {
    for (const std::string& m : plan.metrics) {
      if (want.count(m) != 0 && attempted.count(m) == 0) held.insert(m);
    }
  }
  return held.size();
}

SinglePassPolicy::SinglePassPolicy(std::string label, const AgentConfig& config, FamilyTable& families,
                                   DeviceCatalog& devices, const KernelBuilds& builds, Logger& log,
                                   const triage::TriageOptions& triage_options, Clocks clocks)
    : label_(std::move(label)),
      config_(config),
      families_(families),
      devices_(devices),
      builds_(builds),
      log_(log),
      triage_options_(triage_options),
      clocks_(std::move(clocks)) {}

// ---- the chips' metric groups ----------------------------------------------------------------

std::shared_ptr<const MetricGroups> SinglePassPolicy::groups_for(const std::string& chip, bool may_plan) {
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
  std::shared_ptr<collectors::ProfilerHost> host = devices_.host(chip, &error);
  if (!host) {
    groups_failed_.insert(chip);
    log_.log_once(LogLevel::kWarn, "groups-" + chip,
                  label_ + ": no profiler host for " + chip + " (" + error + "); kernels are traced, not profiled");
    return nullptr;
  }
  const uint64_t t0 = clocks_.monotonic_ns();
  const std::vector<std::string> universe = always_on_counters(chip);
  auto groups = std::make_shared<MetricGroups>(chip_groups(*host, chip, universe, in_every_group()));
  const uint64_t cost = clocks_.monotonic_ns() - t0;
  if (!clocks_.on_flush_thread()) planning_cost(cost);  // the application's time
  if (groups->plans.empty()) {
    groups_failed_.insert(chip);
    log_.log_once(LogLevel::kWarn, "groups-" + chip,
                  label_ + ": no counter of " + chip + " fits one pass; kernels are traced, not profiled");
    return nullptr;
  }
  log_.info(label_ + ": " + std::to_string(universe.size()) + " counters of " + chip + " in " +
            std::to_string(groups->plans.size()) + " single-pass groups (" +
            std::to_string(groups->unreachable.size()) + " need replay), planned in " +
            std::to_string(cost / 1000000) + " ms");
  groups_[chip] = groups;
  return groups;
}

void SinglePassPolicy::plan_pending_groups() {
  std::set<std::string> pending;
  {
    std::lock_guard<std::mutex> lock(groups_mutex_);
    pending.swap(groups_pending_);
  }
  for (const std::string& chip : pending) (void)groups_for(chip, true);
}

// ---- resuming from an earlier process (CUTRIAGE_RESUME) -------------------------------------

void SinglePassPolicy::load_resume() {
  const std::string& path = config_.resume_path;
  std::vector<std::string> files;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 || errno != ENOENT) {
    // Whatever is at the name is read as CUTRIAGE_THRESHOLDS is (below): a FIFO, a device or a
    // directory there is said, not mistaken for a missing file.
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
  uint64_t pid = 0;
  size_t files_read = 0;
  for (const std::string& file : files) {
    // One file in memory at a time, bounded, and only a regular one, opened without blocking and
    // checked on the descriptor: the application's memory is not ours to take (a day-long run
    // belongs in segments, CUTRIAGE_SEGMENT_MB) and a FIFO must not hold its cuInit.
    base::Result<std::string> read = base::read_regular_file(file, kMaxResumeFileBytes);
    if (!read.is_ok()) {
      log_.warn("CUTRIAGE_RESUME=\"" + file + "\": " + read.status().message() +
                "; skipped, the agent runs on without resuming from it");
      continue;
    }
    const std::string& bytes = read.value();
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
    // Records assembled from single-pass launches, whichever way: always-on, or deep mode under
    // application replay (its records read as always-on's). A deep run's replayed records are
    // not continued.
    if (run->mode != "always-on" && !run->application_replay) {
      log_.warn("CUTRIAGE_RESUME: " + file +
                " was written neither in always-on mode nor under application replay; skipped");
      continue;
    }
    pid = run->pid;
    ++files_read;
    for (wire::PriorFamily& f : run->families) {
      resume_[std::make_tuple(f.mangled_name, f.chip, f.launch.block.x, f.launch.block.y, f.launch.block.z)] =
          std::move(f);
    }
  }
  if (files_read == 0) return;  // each file skipped said why
  resume_source_ = files.size() == 1 ? files.front() : path + " (" + std::to_string(files.size()) + " segments)";
  log_.info("CUTRIAGE_RESUME: " + std::to_string(resume_.size()) + " families measured by process " +
            std::to_string(pid) + " (" + resume_source_ + ") continue from there");
}

bool SinglePassPolicy::resumable_locked(const Family& f) const {
  for (auto r = resume_.lower_bound(std::make_tuple(f.mangled, std::string(), 0U, 0U, 0U));
       r != resume_.end() && std::get<0>(r->first) == f.mangled; ++r) {
    if (std::get<2>(r->first) == f.block.x && std::get<3>(r->first) == f.block.y && std::get<4>(r->first) == f.block.z) {
      return true;
    }
  }
  return false;
}

bool SinglePassPolicy::prepare_locked(Family& f, const collectors::LaunchEvent& event, uint64_t launch_index,
                                      const std::string& chip, bool deep_targeted, const ContextGroups& context) {
  if (f.resume_checked) return true;
  // Before CUTRIAGE_LAUNCH_SKIP and the budget: taking what an earlier process measured profiles
  // nothing. Without the chip (device facts unavailable) a later launch the budget lets through
  // tries again; this one's pass around the budget is spent either way.
  f.resume_pending.store(false, std::memory_order_relaxed);
  f.resume_checked = !chip.empty();
  if (resume_.empty() || chip.empty()) return true;
  bool wait_for_shape = false;
  f.resumed_record = resume_locked(f, event, launch_index, chip, context, &wait_for_shape);
  if (f.resumed_record) f.resumed_unwritten.store(true);
  if (!wait_for_shape) return true;
  // Profiling this launch would tie the family to its shape and lose the earlier counters: the
  // next launch comes here again, around the budget, as this one did. A deep capture asked for
  // goes ahead (the user's request; the family then starts afresh).
  f.resume_checked = false;
  f.resume_pending.store(true, std::memory_order_relaxed);
  return deep_targeted;
}

std::optional<wire::KernelRecord> SinglePassPolicy::resume_locked(Family& f, const collectors::LaunchEvent& event,
                                                                  uint64_t launch_index, const std::string& chip,
                                                                  const ContextGroups& context, bool* wait_for_shape) {
  auto it = resume_.find(std::make_tuple(f.mangled, chip, f.block.x, f.block.y, f.block.z));
  if (it == resume_.end()) return std::nullopt;
  const bool shape_matches = event.launch && same_shape(it->second.launch, *event.launch);
  // One function launched with several grids (a GEMM's forward and backward calls share a block
  // size) is one family here, and its first launch in this process need not have the shape the
  // earlier process assembled on: on the H200 the PyTorch loop's largest GEMM lost 23 minutes of
  // counters that way. A few launches wait for that shape.
  if (!shape_matches && f.profiles_started == 0 && ++f.resume_shape_misses < kResumeShapeTries) {
    *wait_for_shape = true;
    return std::nullopt;
  }
  wire::PriorFamily prior = std::move(it->second);
  resume_.erase(it);
  // Counters of another launch shape do not combine with this one's (Decision 0 would reject the
  // assembly); nor do they once this process measured something itself.
  if (!shape_matches || f.profiles_started > 0) {
    const std::string why =
        f.profiles_started > 0
            ? " was profiled here (a deep capture) before a launch of the earlier process's shape came"
            : " ran with another launch shape than in the earlier process (grid " + dim3_text(prior.launch.grid) +
                  ", block " + dim3_text(prior.launch.block) + ") in its first " + std::to_string(kResumeShapeTries) +
                  " launches here";
    log_.log_once(LogLevel::kInfo, "resume-shape",
                  "CUTRIAGE_RESUME: " + f.names->function + why + " and starts afresh (said once)");
    return std::nullopt;
  }
  uint64_t pid = 0;
  for (const triage::AssembledLaunch& a : prior.assembled) pid = a.earlier_pid != 0 ? a.earlier_pid : pid;
  for (const wire::PriorFamily::Value& v : prior.metrics) {
    f.measured.set(v.name, v.value, v.unit);
    f.measured_on[v.name] = v.launch_index;
    f.attempted.insert(v.name);
  }
  for (const std::string& name : prior.rejected) {
    f.attempted.insert(name);
    f.note_rejected(name);
  }
  f.assembled = std::move(prior.assembled);
  // This process's numbering only: later records of the family supersede this one (readers show
  // one per family); the earlier process's launches are in the assembled list, marked as such.
  f.profiled_launches.push_back(launch_index);
  f.profiles_started = static_cast<uint32_t>(f.assembled.size());
  f.first_launch = *event.launch;

  wire::KernelRecord record;
  // At the launch where it was resumed (not profiled).
  fill_launch_input(f, event, launch_index, devices_, record.input);
  record.input.metrics = f.measured;
  builds_.fill(f.mangled, record.input);
  for (const auto& [name, launch] : f.measured_on) record.metric_launch[name] = launch;
  record.profile_number = 0;  // none of this process's launches profiled yet
  record.rejected_metrics = f.rejected;
  record.input.assembled_launches = f.assembled;
  record.input.collection.replay_mode = triage::ReplayMode::kNone;
  record.input.collection.cache_control = "none";
  record.input.collection.clock_control = triage::ClockControl::kNone;
  record.input.collection.collector = triage::Collector::kAgent;
  record.input.collection.passes = 0;  // nothing collected on this launch
  record.status = wire::ProfileStatus::kProfiled;
  record.status_detail =
      "resumed from " + resume_source_ + ": measured by an earlier process (pid " + std::to_string(pid) + ")";
  if (auto d = record.input.metrics.get("gpu__time_duration.sum")) record.duration_ns = *d;
  if (clocks_.trace_started()) record.family_id = f.family_id;
  // No trace inputs here (they are the trace's, under its own lock): Decision 0 compares the
  // durations with this process's unprofiled ones in the next record, or in the end-of-session
  // rewrite.
  record.diagnosis = triage::triage_kernel(record.input, triage_options_);
  f.diagnosis = record.diagnosis;
  f.last_status = record.status;
  f.update_completeness();
  resumed_locked(f, record, context);
  f.last_record = record;
  return record;
}

}  // namespace cutriage::agent
