#include "always_on.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cutriage/base/read_file.h"
#include "cutriage/triage/plan.h"
#include "output.h"

namespace cutriage::agent {
namespace {

// How long a configured group is left to the other families that still want it before a family
// that wants none of it may switch the context away.
constexpr uint64_t kHoldGroupNs = 5'000'000'000;
// A family counts as still launching this long after its latest launch. Switches are chosen for
// those only: a family that stopped launching must not hold the others back.
constexpr uint64_t kRecentLaunchNs = 30'000'000'000;
// How long a family that declined a switch (another family's group ranked first) waits before its
// launches come to the selection again.
constexpr uint64_t kRoutingFirstWaitNs = 1'000'000'000;
// Launches of another shape a family resumable from an earlier process waits through.
constexpr uint32_t kResumeShapeTries = 16;
// Always-on collects one single-pass group per launch: as many launches as the route needs groups
// (bounded, should the route keep asking).
constexpr uint32_t kMaxAssembledLaunches = 64;

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

// What a family collects first of what its route still wants (sorted, breakdowns expanded): while
// it has no verdict, only the routing counters (an unrouted diagnosis also visits Decision 7,
// whose counters say nothing before the route is known); once classified and until routed
// (Family::routed), only the counters of the decisions its verdict rests on; then the rest. Each
// stage falls through to the next when it wants nothing the groups hold.
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

// What a family counts for in a switch choice: its share of the GPU time, and a little more, so that
// a family not traced yet still counts (below any traced one, and by number among the untraced).
double switch_weight(double share) { return share + 1e-9; }

std::string dim3_text(const triage::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

BudgetOptions budget_options(const AgentConfig& config) {
  BudgetOptions b;
  b.fraction = config.budget_fraction;
  b.max_per_second = config.budget_rate;
  return b;
}

}  // namespace

struct AlwaysOnPolicy::GroupDemand {
  std::vector<size_t> counters;  // counters wanted, summed over the families
  // Families without a verdict yet (not profiled, or inconclusive) that want routing counters of
  // the group.
  std::vector<size_t> unrouted;
  // The same two by GPU time: the traced shares of the families wanting something of the group
  // (`weight`), and of those among them that it would route (`unrouted_weight`). Unlike the
  // counts, these include the asking family itself, summed in one fixed order, so that every
  // family's launch ranks the groups alike (a tie must not make two families each leave the switch
  // to the other).
  std::vector<double> weight;
  std::vector<double> unrouted_weight;
};

AlwaysOnPolicy::AlwaysOnPolicy(const AgentConfig& config, FamilyTable& families, DeviceCatalog& devices,
                               const KernelBuilds& builds, Logger& log, const triage::TriageOptions& triage_options,
                               Clocks clocks)
    : config_(config),
      families_(families),
      devices_(devices),
      builds_(builds),
      log_(log),
      triage_options_(triage_options),
      clocks_(std::move(clocks)),
      budget_(budget_options(config), clocks_.monotonic_ns()) {}

bool AlwaysOnPolicy::admits_fast(Family& f) {
  // While the budget cannot admit anything, a candidate's launch costs one clock read. While a
  // configured profiler may still be taken on credit, the families come through once each and are
  // then held by their own not_before_ns.
  const uint64_t now = clocks_.monotonic_ns();
  f.seen_mono_ns.store(now, std::memory_order_relaxed);
  if (f.resume_pending.load(std::memory_order_relaxed)) return true;
  if (now < f.not_before_ns.load(std::memory_order_relaxed)) return false;
  return budget_.ready(now) || now < credit_until_ns_.load(std::memory_order_relaxed);
}

uint32_t AlwaysOnPolicy::max_counter_launches() const { return kMaxAssembledLaunches; }

bool AlwaysOnPolicy::samples_again_locked(const Family& f) const {
  // Sampled again once the interval has passed (duty cycle).
  return config_.pc_sampling_interval_s > 0 && f.pc_sampled_mono_ns != 0 &&
         clocks_.monotonic_ns() - f.pc_sampled_mono_ns >= uint64_t{config_.pc_sampling_interval_s} * 1000000000ULL;
}

bool AlwaysOnPolicy::admit_sampling_locked(Family& f) {
  if (budget_.admit(clocks_.monotonic_ns(), CostKind::kPcSampling)) return true;
  f.not_before_ns.store(budget_.next_ns(), std::memory_order_relaxed);
  return false;
}

std::vector<std::string> AlwaysOnPolicy::first_counters(const std::string&) const {
  // The routing counters alone: the riders of the first stage fill replay passes that are paid
  // anyway; without replay each group is a launch of its own, and the route decides which of them
  // it needs (computed once, breakdowns expanded).
  return routing_counters_expanded();
}

AlwaysOnPolicy::GroupDemand AlwaysOnPolicy::group_demand_locked(const Family& family, const MetricGroups& groups,
                                                                uint64_t now_ns) const {
  // Families that have not been profiled yet want the routing counters first.
  const std::vector<std::string>& routing = routing_counters_expanded();
  const size_t n = groups.plans.size();
  GroupDemand demand{std::vector<size_t>(n, 0), std::vector<size_t>(n, 0), std::vector<double>(n, 0.0),
                     std::vector<double>(n, 0.0)};
  for (const Family* f : families_.all_locked()) {
    const bool self = f == &family;  // in the weights only (its wants were just updated)
    if (!self && (f->complete || f->device != family.device || !f->candidate.load(std::memory_order_relaxed))) {
      continue;
    }
    if (f->profiles_started > 0 && f->ao_wanted.empty()) continue;  // counters done
    // Only families still launching: a switch chosen for one that stopped serves nobody.
    const uint64_t seen = f->seen_mono_ns.load(std::memory_order_relaxed);
    if (!self && (seen == 0 || now_ns >= seen + kRecentLaunchNs)) continue;
    const std::vector<std::string>& want = f->ao_wanted.empty() ? routing : f->ao_wanted;
    // Until its verdict is routed (limiter included), what it wants is that stage's (staged_wants).
    const bool waits_for_route = !f->routed;
    const double w = switch_weight(f->share);
    for (size_t g = 0; g < n; ++g) {
      size_t wanted = 0;
      bool routes = false;
      for (const std::string& m : groups.plans[g].metrics) {
        if (!std::binary_search(want.begin(), want.end(), m) || f->attempted.count(m) != 0) continue;
        ++wanted;
        routes = routes || waits_for_route;
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

SelectionPolicy::Choice AlwaysOnPolicy::choose_locked(Family& f, std::vector<std::string> wanted,
                                                      const ContextGroups& context) {
  Choice choice;
  const MetricGroups* groups = context.groups;
  if (groups == nullptr) {  // no groups for this chip: said once by groups_for
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  // Throughputs that take several passes come from their single-pass parts.
  wanted = triage::expand_breakdowns(wanted);
  const std::set<std::string> all_wanted(wanted.begin(), wanted.end());
  // Groups only for the stage the family is at: routing, then its verdict's limiter, then depth.
  f.ao_wanted = staged_wants(f, all_wanted);
  std::set<std::string> want(f.ao_wanted.begin(), f.ao_wanted.end());
  const size_t n_groups = groups->plans.size();
  std::vector<size_t> own(n_groups, 0);
  auto count_own = [&] {
    std::fill(own.begin(), own.end(), 0);
    for (size_t g = 0; g < n_groups; ++g) {
      for (const std::string& m : groups->plans[g].metrics) {
        own[g] += want.count(m) > 0 && f.attempted.count(m) == 0 ? 1 : 0;
      }
    }
    return std::any_of(own.begin(), own.end(), [](size_t h) { return h > 0; });
  };
  if (!count_own() && want.size() != all_wanted.size()) {
    // The stage's counters are in no single-pass group (they need replay): on to the rest.
    want = all_wanted;
    f.ao_wanted.assign(all_wanted.begin(), all_wanted.end());
    (void)count_own();
  }
  if (std::all_of(own.begin(), own.end(), [](size_t h) { return h == 0; })) {
    // What is still wanted is in no single-pass group: needs replay (a deep capture).
    choice.kind = Choice::Kind::kComplete;
    return choice;
  }
  const int configured = context.configured;
  const bool has_configured = configured >= 0 && static_cast<size_t>(configured) < n_groups;
  int best = -1;
  if (has_configured && own[static_cast<size_t>(configured)] > 0) {
    best = configured;  // the configured group: no re-enable, the cheap kind of launch
    choice.cost = CostKind::kSameGroup;
  } else {
    // A switch, the dear kind (a new object's first Start: 140-200 ms on the H200). What the
    // other families still want counts too: one switch then serves several of them.
    const uint64_t now = clocks_.monotonic_ns();
    const GroupDemand demand = group_demand_locked(f, *groups, now);
    if (has_configured && demand.counters[static_cast<size_t>(configured)] > 0 &&
        now < context.configured_since_ns + kHoldGroupNs) {
      // Other families still want the configured group and their launches may come any moment:
      // leave it to them a while rather than switch away and back.
      f.not_before_ns.store(context.configured_since_ns + kHoldGroupNs, std::memory_order_relaxed);
      choice.kind = Choice::Kind::kWait;
      return choice;
    }
    // Routing first: while a family that is still launching has no routed verdict, switches go to
    // groups holding counters of its current stage (routing, or its limiter's) that it lacks. A verdict for more of the GPU time is worth more than
    // detail on a family already routed (on the H200 at the default budget, two CUTLASS GEMMs with
    // 36% of a PyTorch loop's GPU time were still unrouted after 22 minutes while the switches went
    // to the cuBLAS GEMMs' deeper decisions).
    // Impact first: among those, and then among the rest, the group wanted by the most GPU time.
    // Whichever family launches first after the budget allows a switch used to take it for itself:
    // on the H200, in 15 minutes of the example service, the two small kernels (2.5% of the GPU
    // time) that launch ahead of a 10% one in every request took 21 of the 25 admitted launches,
    // the 10% one took one.
    // A family whose launch finds another family's group first leaves the switch to that family's
    // launch; the counts of counters break ties (all the same when nothing is traced).
    // Routing includes the limiter's groups: a classified family's limiter stage ranks with the
    // other families' classification by the GPU time each group would route (issue 22: the top
    // family's routed verdict first, even while smaller families are unclassified; with a
    // classification tier above it, the 60% family of the simulation was never routed in 15
    // minutes while the switches went to four smaller families' routing groups).
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
        better = demand.unrouted_weight[g] != demand.unrouted_weight[b] ? demand.unrouted_weight[g] > demand.unrouted_weight[b]
                 : demand.weight[g] != demand.weight[b]                 ? demand.weight[g] > demand.weight[b]
                 : score != best_score                                  ? score > best_score
                                                                        : own[g] > own[b];
      }
      if (better) {
        best = static_cast<int>(g);
        best_score = score;
      }
    }
    if (best < 0 || own[static_cast<size_t>(best)] == 0) {
      // Another family's group comes first: the switch is left to that family's launch.
      f.not_before_ns.store(now + kRoutingFirstWaitNs, std::memory_order_relaxed);
      choice.kind = Choice::Kind::kWait;
      return choice;
    }
    choice.cost = CostKind::kGroupSwitch;
  }
  // A launch of the configured group goes on credit: the profiler is still enabled (it is released
  // release_ms after the last profiled launch), and a family that waited for the allowance would
  // find it released and pay a switch (10-40x dearer) instead. Each family takes a group once, so
  // the credit is bounded by the families that want the group.
  const uint64_t now = clocks_.monotonic_ns();
  if (!budget_.admit(now, choice.cost, choice.cost == CostKind::kSameGroup)) {
    // Back when the budget could pay it (a switch) or the rate limit allows (on credit).
    f.not_before_ns.store(choice.cost == CostKind::kSameGroup ? now + budget_.spacing_ns() : budget_.next_ns(),
                          std::memory_order_relaxed);
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  choice.group = best;
  choice.metrics = groups->plans[static_cast<size_t>(best)].metrics;
  return choice;
}

bool AlwaysOnPolicy::admit_graph(CostKind kind) {
  const uint64_t now = clocks_.monotonic_ns();
  // A stage's first pass (and the sampled launch) waits until the graph's earlier work is paid
  // back at the budget's share (graph_spent); its later passes follow at once. Neither waits for
  // the allowance, which the families' own launches on credit keep near zero (on the H200 a graph
  // stage admitted through it never came in 180 s): the debt they leave holds those back instead.
  if (kind != CostKind::kSameGroup && now < graph_not_before_ns_.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> lock(families_.mutex());
  budget_.admit_spaced(now, kind);
  return true;
}

void AlwaysOnPolicy::graph_spent(uint64_t cost_ns) {
  const uint64_t now = clocks_.monotonic_ns();
  const double fraction = config_.budget_fraction > 0 ? config_.budget_fraction : 0.004;
  const auto pay_back = static_cast<uint64_t>(static_cast<double>(cost_ns) / fraction);
  uint64_t prev = graph_not_before_ns_.load();
  uint64_t next = 0;
  do {
    next = std::max(prev, now) + pay_back;
  } while (!graph_not_before_ns_.compare_exchange_weak(prev, next));
}

void AlwaysOnPolicy::charge_since(CostKind kind, uint64_t started_mono_ns) {
  const uint64_t now = clocks_.monotonic_ns();
  std::lock_guard<std::mutex> lock(families_.mutex());
  budget_.charge(now, kind, now > started_mono_ns ? now - started_mono_ns : 0);
}

wire::OverheadStats AlwaysOnPolicy::stats_locked() const { return budget_.stats(clocks_.monotonic_ns()); }

namespace {

// "N launches without replay (G metric groups...)": what a family's verdict was assembled from.
std::string assembled_from(const Family& f) {
  std::set<uint32_t> groups;
  size_t earlier = 0;
  for (const triage::AssembledLaunch& a : f.assembled) {
    groups.insert(a.metric_group);
    earlier += a.from_earlier_process() ? 1 : 0;
  }
  if (f.assembled.empty() && f.deep_request != 0) {
    return "deep capture " + std::to_string(f.deep_request) + " (one launch, replayed)";
  }
  return std::to_string(f.assembled.size()) + " launches without replay (" + std::to_string(groups.size()) +
         " metric groups" +
         (earlier > 0 ? "; " + std::to_string(earlier) + " of the launches by an earlier process, resumed" : "") + ")";
}

}  // namespace

std::string AlwaysOnPolicy::completion_message_locked(Family& f) {
  if (!f.complete || f.complete_noted || !f.last_record || f.last_record->status != wire::ProfileStatus::kProfiled) {
    return {};
  }
  f.complete_noted = true;
  f.routed_noted = true;  // complete says more than routed
  const double seconds = static_cast<double>(budget_.stats(clocks_.monotonic_ns()).wall_ns) / 1e9;
  char when[32];
  std::snprintf(when, sizeof(when), "%.1f", seconds);
  return f.names->function + ": diagnosis complete " + when + " s after the agent started, from " + assembled_from(f) +
         ": " + f.last_record->diagnosis.headline;
}

std::string AlwaysOnPolicy::routed_message_locked(Family& f) {
  if (!f.routed || f.complete || f.routed_noted || !f.last_record ||
      f.last_record->status != wire::ProfileStatus::kProfiled) {
    return {};
  }
  f.routed_noted = true;
  const double seconds = static_cast<double>(budget_.stats(clocks_.monotonic_ns()).wall_ns) / 1e9;
  char when[32];
  std::snprintf(when, sizeof(when), "%.1f", seconds);
  return f.names->function + ": verdict routed " + when + " s after the agent started, from " + assembled_from(f) +
         " (deeper decisions still collecting): " + f.last_record->diagnosis.headline;
}

// ---- the chips' metric groups ----------------------------------------------------------------

std::shared_ptr<const MetricGroups> AlwaysOnPolicy::groups_for(const std::string& chip, bool may_plan) {
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
                  "always-on: no profiler host for " + chip + " (" + error + "); kernels are traced, not profiled");
    return nullptr;
  }
  const uint64_t t0 = clocks_.monotonic_ns();
  const std::vector<std::string> universe = always_on_counters(chip);
  auto groups = std::make_shared<MetricGroups>(chip_groups(*host, chip, universe, in_every_group()));
  const uint64_t cost = clocks_.monotonic_ns() - t0;
  if (!clocks_.on_flush_thread()) {  // the application's time: the budget's business
    std::lock_guard<std::mutex> budget_lock(families_.mutex());
    budget_.charge(clocks_.monotonic_ns(), CostKind::kPlanning, cost);
  }
  if (groups->plans.empty()) {
    groups_failed_.insert(chip);
    log_.log_once(LogLevel::kWarn, "groups-" + chip,
                  "always-on: no counter of " + chip + " fits one pass; kernels are traced, not profiled");
    return nullptr;
  }
  log_.info("always-on: " + std::to_string(universe.size()) + " counters of " + chip + " in " +
            std::to_string(groups->plans.size()) + " single-pass groups (" +
            std::to_string(groups->unreachable.size()) + " need replay), planned in " +
            std::to_string(cost / 1000000) + " ms");
  groups_[chip] = groups;
  return groups;
}

void AlwaysOnPolicy::plan_pending_groups() {
  std::set<std::string> pending;
  {
    std::lock_guard<std::mutex> lock(groups_mutex_);
    pending.swap(groups_pending_);
  }
  for (const std::string& chip : pending) (void)groups_for(chip, true);
}

// ---- resuming from an earlier process (CUTRIAGE_RESUME) -------------------------------------

void AlwaysOnPolicy::load_resume() {
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
    if (run->mode != "always-on") {
      log_.warn("CUTRIAGE_RESUME: " + file + " was not written in always-on mode; skipped");
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

bool AlwaysOnPolicy::resumable_locked(const Family& f) const {
  for (auto r = resume_.lower_bound(std::make_tuple(f.mangled, std::string(), 0U, 0U, 0U));
       r != resume_.end() && std::get<0>(r->first) == f.mangled; ++r) {
    if (std::get<2>(r->first) == f.block.x && std::get<3>(r->first) == f.block.y && std::get<4>(r->first) == f.block.z) {
      return true;
    }
  }
  return false;
}

bool AlwaysOnPolicy::prepare_locked(Family& f, const collectors::LaunchEvent& event, uint64_t launch_index,
                                    const std::string& chip, bool deep_targeted) {
  if (f.resume_checked) return true;
  // Before CUTRIAGE_LAUNCH_SKIP and the budget: taking what an earlier process measured profiles
  // nothing. Without the chip (device facts unavailable) a later launch the budget lets through
  // tries again; this one's pass around the budget is spent either way.
  f.resume_pending.store(false, std::memory_order_relaxed);
  f.resume_checked = !chip.empty();
  if (resume_.empty() || chip.empty()) return true;
  bool wait_for_shape = false;
  f.resumed_record = resume_locked(f, event, launch_index, chip, &wait_for_shape);
  if (f.resumed_record) f.resumed_unwritten.store(true);
  if (!wait_for_shape) return true;
  // Profiling this launch would tie the family to its shape and lose the earlier counters: the
  // next launch comes here again, around the budget, as this one did. A deep capture asked for
  // goes ahead (the user's request; the family then starts afresh).
  f.resume_checked = false;
  f.resume_pending.store(true, std::memory_order_relaxed);
  return deep_targeted;
}

std::optional<wire::KernelRecord> AlwaysOnPolicy::resume_locked(Family& f, const collectors::LaunchEvent& event,
                                                                uint64_t launch_index, const std::string& chip,
                                                                bool* wait_for_shape) {
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
  f.last_record = record;
  return record;
}

}  // namespace cutriage::agent
