#include "always_on.h"

#include <algorithm>
#include <cstdio>

#include "contexts.h"
#include "cutriage/triage/plan.h"
#include "stages.h"

namespace cutriage::agent {
namespace {

// How long a configured group is left to the other families that still want it before a family
// that wants none of it may switch the context away.
constexpr uint64_t kHoldGroupNs = 5'000'000'000;
// A family counts as still launching this long after its latest launch. Switches are chosen for
// those only: a family that stopped launching must not hold the others back.
constexpr uint64_t kRecentLaunchNs = 30'000'000'000;
// CUTRIAGE_STAGE_PASSES: after this many stages abandoned halfway, a family takes groups instead.
constexpr uint32_t kMaxAbandonedStages = 2;
// CUTRIAGE_STAGE_PASSES: how long first stages wait for the PM window's first answer (on the H200
// it came 2.8 s into the example service and 11.5 s into a PyTorch loop).
constexpr uint64_t kPmWaitNs = 30'000'000'000;
// CUTRIAGE_STEP_STAGES: how long past the routing window's longest wait (kPmWaitNs) the lane stays
// the first step's when no anchor's launch has renewed it.
constexpr uint64_t kFirstStepLookNs = 1'000'000'000;
// How long a family that declined a switch (another family's group ranked first) waits before its
// launches come to the selection again.
constexpr uint64_t kRoutingFirstWaitNs = 1'000'000'000;
// A stage's pass in flight on one thread holds the family's other launches off the stage this
// long at most (a pass that never completes, by an error path, must not hold it for good).
constexpr uint64_t kStagePassInFlightNs = 5'000'000'000;
// What a family counts for in a switch choice: its share of the GPU time, and a little more, so that
// a family not traced yet still counts (below any traced one, and by number among the untraced).
double switch_weight(double share) { return share + 1e-9; }

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
    : SinglePassPolicy("always-on", config, families, devices, builds, log, triage_options, std::move(clocks)),
      started_ns_(clocks_.monotonic_ns()),
      budget_(budget_options(config), started_ns_),
      pm_settled_(!config.pm_window) {
  // CUTRIAGE_STEP_STAGES: the lane is the step's from the start, until the routing window has
  // answered and the anchor's launches renew the hold (or none does, and it lapses). A step's
  // first pass pays CUPTI's first Start of the process and waits until the budget is out of debt:
  // a group switched to before it would pay that start-up instead and push the step back by the
  // debt of the groups' own launches, counters the step collects anyway.
  if (config.step_launches > 0) step_lane_until_ns_.store(started_ns_ + kPmWaitNs + kFirstStepLookNs);
}

void AlwaysOnPolicy::planning_cost(uint64_t cost_ns) {
  std::lock_guard<std::mutex> budget_lock(families_.mutex());
  budget_.charge(clocks_.monotonic_ns(), CostKind::kPlanning, cost_ns);
}

bool AlwaysOnPolicy::admits_fast(Family& f) {
  // While the budget cannot admit anything, a candidate's launch costs one clock read. While a
  // configured profiler may still be taken on credit, the families come through once each and are
  // then held by their own not_before_ns.
  const uint64_t now = clocks_.monotonic_ns();
  f.seen_mono_ns.store(now, std::memory_order_relaxed);
  if (f.resume_pending.load(std::memory_order_relaxed) || now < f.stage_open_until_ns.load(std::memory_order_relaxed)) {
    return true;
  }
  // A step wants the lane (CUTRIAGE_STEP_STAGES): it collects every counter of the families of
  // the application's step at once, and begins when the budget is out of debt, which a group
  // launch now would push back.
  if (step_holds_lane(now)) return false;
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

std::vector<std::string> AlwaysOnPolicy::first_counters(const std::string& chip) const {
  // Stages: deep mode's first stage, the routing counters with the riders that take no pass of
  // their own beside them.
  if (config_.stage_passes) return first_stage_counters(chip);
  // Groups: the routing counters alone: the riders of the first stage fill replay passes that are
  // paid anyway; without replay each group is a launch of its own, and the route decides which of
  // them it needs (computed once, breakdowns expanded).
  return routing_counters_expanded();
}

bool AlwaysOnPolicy::first_for_stage_locked(const Family& family, uint64_t now_ns) const {
  return stage_leader_locked(family, now_ns) == &family;
}

const Family* AlwaysOnPolicy::stage_leader_locked(const Family& family, uint64_t now_ns) const {
  // The families that may take the next stage on this device: still launching (one that stopped
  // serves nobody), with counters left.
  std::vector<const Family*> eligible{&family};
  for (const Family* f : families_.all_locked()) {
    if (f == &family || f->complete || f->device != family.device || !f->candidate.load(std::memory_order_relaxed)) {
      continue;
    }
    const uint64_t seen = f->seen_mono_ns.load(std::memory_order_relaxed);
    if (seen == 0 || now_ns >= seen + kRecentLaunchNs) continue;
    if (f->profiles_started >= max_counter_launches()) continue;
    // One that went on with single-pass groups takes no stage: waiting for it would hold the
    // others' stages for as long as its groups take.
    if (f->ao_stages_abandoned >= kMaxAbandonedStages) continue;
    eligible.push_back(f);
  }
  // Routing first, then impact: a family without any routed verdict (neither its counters nor the
  // PM window routed it) before one that has one, by GPU time among those, ties by family id so
  // that two families never each leave the stage to the other.
  const auto unrouted = [](const Family& f) { return !f.routed && !f.pm_routed; };
  std::sort(eligible.begin(), eligible.end(), [&](const Family* a, const Family* b) {
    if (unrouted(*a) != unrouted(*b)) return unrouted(*a);
    const double wa = switch_weight(a->share);
    const double wb = switch_weight(b->share);
    if (wa != wb) return wa > wb;
    return a->family_id < b->family_id;
  });
  // CUTRIAGE_REPLICA=K/N: replica K takes the K-th of that order, so that the replicas of a
  // service measure different families at once (`cutriage merge` joins their files); a process
  // alone takes the first.
  const size_t at = static_cast<size_t>(config_.replica_index) % eligible.size();
  return eligible[at];
}

const Family* AlwaysOnPolicy::step_anchor_locked(const Family& family, uint64_t now_ns) const {
  if (routing_window_pending(now_ns)) return nullptr;
  const Family* leader = stage_leader_locked(family, now_ns);
  return leader->complete ? nullptr : leader;
}

namespace {

// What a PM-routed verdict's decisions read (its limiter's: Decision 4, 5 or 7), with Decision 3's
// stall reasons, which the range profiler's routes visit beside them.
std::vector<std::string> pm_route_counters(triage::Classification verdict) {
  std::vector<triage::Decision> decisions = triage::verdict_decisions(verdict);
  decisions.push_back(triage::Decision::kD3IssueStalls);
  return triage::verdict_counters_for(decisions);
}

}  // namespace

std::vector<std::string> AlwaysOnPolicy::stage_counters_locked(const Family* f, std::vector<std::string> wanted) {
  if (f != nullptr && !f->diagnosis && f->pm_routed && f->pm_diag_) {
    // The PM window routed it: its first stage also takes its verdict's route, in the same
    // configuration: one switch fewer when the range profiler's route agrees, and a later stage
    // collects the rest when it does not.
    for (const std::string& m : pm_route_counters(f->pm_diag_->classification)) {
      if (f->attempted.count(m) == 0 && !f->measured.has(m)) wanted.push_back(m);
    }
  }
  if (wanted.empty()) return wanted;
  // Every stage measures the launch's duration too, as every group does: Decision 0 compares the
  // launches a diagnosis is assembled from.
  wanted.insert(wanted.end(), in_every_group().begin(), in_every_group().end());
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  return wanted;
}

std::vector<std::string> AlwaysOnPolicy::plan_list_locked(const Family* family, std::vector<std::string> wanted) const {
  // Groups are planned once per chip already; a family gone on with groups plans nothing more.
  if (!config_.stage_passes || (family != nullptr && family->ao_stages_abandoned >= kMaxAbandonedStages)) return {};
  return stage_counters_locked(family, std::move(wanted));
}

std::vector<std::string> AlwaysOnPolicy::routed_first_stage(const std::string& chip,
                                                            triage::Classification verdict) const {
  if (!config_.stage_passes) return {};
  std::vector<std::string> wanted = first_counters(chip);
  for (std::string& m : pm_route_counters(verdict)) wanted.push_back(std::move(m));
  return stage_counters_locked(nullptr, std::move(wanted));
}

SelectionPolicy::Choice AlwaysOnPolicy::choose_stage_locked(Family& f, std::vector<std::string> wanted,
                                                            const ContextGroups& context) {
  const uint64_t now = clocks_.monotonic_ns();
  Choice choice;
  choice.stage_pass = true;
  // The stage's collection is intact while its context still names it: a release, a PC-sampled
  // launch, a graph's stage or another configuration clears that (and CUPTI starts over).
  const bool intact = context.stage_family == f.family_id;
  if (!f.ao_stage.empty()) {
    if (f.ao_stage_pass_begun_ns != 0 && now < f.ao_stage_pass_begun_ns + kStagePassInFlightNs) {
      // A pass of the stage is in flight on another thread (its first Start can take 200 ms): this
      // launch runs unprofiled; the stage goes on with the family's next launch after it.
      choice.kind = Choice::Kind::kWait;
      return choice;
    }
    if (intact && !f.ao_stage_launches.empty()) {
      // The stage's next pass, at once: a stage left halfway is wasted. Charged all the same; the
      // debt holds the next stage back, so the long-run share stays the budget.
      budget_.admit_spaced(now, CostKind::kSameGroup);
      choice.metrics = f.ao_stage;
      choice.stage_collection = f.ao_stage_id;
      f.ao_stage_pass_begun_ns = now;
      f.stage_open_until_ns.store(now + ContextState::kGraphHoldNs, std::memory_order_relaxed);
      return choice;
    }
    // Not begun after all (its context was taken), or abandoned: its context was reconfigured or
    // released between two passes, and CUPTI started its collection over. Its counters are wanted
    // again, in a new stage.
    if (!f.ao_stage_launches.empty()) ++f.ao_stages_abandoned;
    for (const std::string& m : f.ao_stage) {
      if (!f.measured.has(m) && f.attempted.erase(m) > 0) wanted.push_back(m);
    }
    f.clear_stage();
    // A family whose stages keep being abandoned (it launches more than the hold apart, so its
    // idle profiler is released between passes) goes on with single-pass groups: no pass lost.
    if (f.ao_stages_abandoned >= kMaxAbandonedStages) return choose_group_locked(f, wanted, context);
  }
  wanted = stage_counters_locked(&f, std::move(wanted));
  if (wanted.empty()) {
    choice.kind = Choice::Kind::kComplete;
    return choice;
  }
  if (!f.diagnosis && !f.pm_routed && routing_window_pending(now)) {
    // The PM window may route it in seconds: then its first stage takes that verdict's decisions
    // too, one switch for a complete verdict instead of two.
    f.not_before_ns.store(now + kRoutingFirstWaitNs, std::memory_order_relaxed);
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  if (!first_for_stage_locked(f, now) ||
      (context.stage_family != 0 && context.stage_family != f.family_id &&
       now < context.stage_pass_ns + ContextState::kGraphHoldNs)) {
    // A family with more of the GPU time takes the next stage, or another family's stage holds
    // the context: back in a while.
    f.not_before_ns.store(now + kRoutingFirstWaitNs, std::memory_order_relaxed);
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  // A new stage configures the profiler: admitted like a group switch.
  if (!budget_.admit(now, CostKind::kGroupSwitch)) {
    f.not_before_ns.store(budget_.next_ns(), std::memory_order_relaxed);
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  f.ao_stage = wanted;
  f.ao_stage_id = ++stage_ids_;
  f.ao_stage_pass_begun_ns = now;
  f.stage_open_until_ns.store(now + ContextState::kGraphHoldNs, std::memory_order_relaxed);
  choice.stage_collection = f.ao_stage_id;
  choice.metrics = std::move(wanted);
  choice.cost = CostKind::kGroupSwitch;
  return choice;
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
  if (config_.stage_passes && f.ao_stages_abandoned < kMaxAbandonedStages) {
    return choose_stage_locked(f, std::move(wanted), context);
  }
  return choose_group_locked(f, wanted, context);
}

SelectionPolicy::Choice AlwaysOnPolicy::choose_group_locked(Family& f, const std::vector<std::string>& wanted,
                                                            const ContextGroups& context) {
  Choice choice;
  const MetricGroups* groups = context.groups;
  if (groups == nullptr) {  // no groups for this chip: said once by groups_for
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  // Groups only for the stage the family is at: routing, then its verdict's limiter, then depth.
  const std::set<std::string> all_wanted = stage_wants(f, wanted);
  // A replica other than the first (CUTRIAGE_REPLICA) spreads over its whole route at once: the
  // first routes the families, staged, and the others measure what the merged file needs next.
  const bool spread = config_.replica_count > 1 && config_.replica_index > 0;
  std::set<std::string> want = spread ? all_wanted : std::set<std::string>(f.ao_wanted.begin(), f.ao_wanted.end());
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
    std::vector<size_t> ranked;
    for (size_t g = 0; g < n_groups; ++g) {
      if (own[g] == 0 && demand.counters[g] == 0) continue;  // nobody's
      if (routing_wanted && !spread && demand.unrouted_weight[g] == 0) continue;
      ranked.push_back(g);
    }
    // Best first; equals keep the groups' order.
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t g, size_t b) {
      const size_t score_g = own[g] + demand.counters[g];
      const size_t score_b = own[b] + demand.counters[b];
      return demand.unrouted_weight[g] != demand.unrouted_weight[b] ? demand.unrouted_weight[g] > demand.unrouted_weight[b]
             : demand.weight[g] != demand.weight[b]                 ? demand.weight[g] > demand.weight[b]
             : score_g != score_b                                   ? score_g > score_b
                                                                    : own[g] > own[b];
    });
    // CUTRIAGE_REPLICA=K/N: replica K takes the group K/N of the way down the ranking, so that the
    // replicas of a service measure different groups at once (their files merged by `cutriage
    // merge`); replica 0, and a process alone, takes the best.
    if (!ranked.empty()) {
      const size_t at = static_cast<size_t>(config_.replica_index) * ranked.size() / std::max(config_.replica_count, 1U);
      best = static_cast<int>(ranked[std::min(at, ranked.size() - 1)]);
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
  // find it released and pay a switch (10-40x dearer) instead. Each family takes a group once, and
  // the debt stops at one full allowance (budget.h).
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

uint64_t AlwaysOnPolicy::next_work_ns(uint64_t now_ns, bool graphs, bool steps) const {
  // While a step holds the lane neither the families' own launches (admits_fast) nor the graphs'
  // stages (admit_graph) are admitted: only the step's next pass is due.
  const bool lane = step_holds_lane(now_ns);
  if (!lane && now_ns < credit_until_ns_.load(std::memory_order_relaxed)) return now_ns;
  bool candidates = false;
  {
    std::lock_guard<std::mutex> lock(families_.mutex());
    for (const Family* f : families_.all_locked()) {
      // A stage under way or about to resume takes the family's next launch, whatever the budget.
      if (f->resume_pending.load(std::memory_order_relaxed) ||
          now_ns < f->stage_open_until_ns.load(std::memory_order_relaxed) || !f->ao_stage.empty()) {
        return now_ns;
      }
      if (f->candidate.load(std::memory_order_relaxed)) candidates = true;
    }
  }
  const uint64_t graph_next = graph_not_before_ns_.load(std::memory_order_relaxed);
  uint64_t next = graphs && !lane ? graph_next : UINT64_MAX;
  if (!candidates) return next;
  if (!lane) next = std::min(next, budget_.next_ns());
  // A step's pass waits for step_ready: the graph's spacing and the budget out of debt.
  if (steps) next = std::min(next, std::max(graph_next, budget_.solvent_ns()));
  return next;
}

bool AlwaysOnPolicy::routing_window_pending(uint64_t now_ns) const {
  return !pm_settled_.load(std::memory_order_relaxed) && now_ns < started_ns_ + kPmWaitNs;
}

bool AlwaysOnPolicy::admit_graph(CostKind kind) {
  const uint64_t now = clocks_.monotonic_ns();
  // A stage's first pass (and the sampled launch) waits until the graph's earlier work is paid
  // back at the budget's share (graph_spent); its later passes follow at once. Neither waits for
  // the allowance, which the families' own launches on credit keep near zero (on the H200 a graph
  // stage admitted through it never came in 180 s): the debt they leave holds those back instead.
  if (kind != CostKind::kSameGroup && step_holds_lane(now)) return false;
  return admit_step(kind);
}

bool AlwaysOnPolicy::admit_step(CostKind kind) {
  const uint64_t now = clocks_.monotonic_ns();
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

void AlwaysOnPolicy::startup_paid_since(uint64_t started_mono_ns) {
  const uint64_t now = clocks_.monotonic_ns();
  std::lock_guard<std::mutex> lock(families_.mutex());
  budget_.startup_paid(now, now > started_mono_ns ? now - started_mono_ns : 0);
}

void AlwaysOnPolicy::cancel_since(CostKind kind, uint64_t started_mono_ns) {
  const uint64_t now = clocks_.monotonic_ns();
  std::lock_guard<std::mutex> lock(families_.mutex());
  budget_.cancel(now, kind, now > started_mono_ns ? now - started_mono_ns : 0);
}

bool AlwaysOnPolicy::admit_pm_window(bool first) {
  const uint64_t now = clocks_.monotonic_ns();
  std::lock_guard<std::mutex> lock(families_.mutex());
  if (first) {
    budget_.admit_spaced(now, CostKind::kPmWindow);
    return true;
  }
  return budget_.admit(now, CostKind::kPmWindow);
}

void AlwaysOnPolicy::charge(CostKind kind, uint64_t cost_ns) {
  const uint64_t now = clocks_.monotonic_ns();
  std::lock_guard<std::mutex> lock(families_.mutex());
  budget_.charge(now, kind, cost_ns);
}

wire::OverheadStats AlwaysOnPolicy::stats_locked() const { return budget_.stats(clocks_.monotonic_ns()); }

namespace {

// "N launches without replay (G metric groups...)": what a family's verdict was assembled from.
std::string assembled_from(const Family& f) {
  std::set<uint32_t> groups;
  size_t stages = 0;  // CUTRIAGE_STAGE_PASSES: a stage's last pass carries its values (group 0)
  size_t earlier = 0;
  for (const triage::AssembledLaunch& a : f.assembled) {
    if (a.metric_group != 0) groups.insert(a.metric_group);
    if (a.metric_group == 0 && a.metrics > 0) ++stages;
    earlier += a.from_earlier_process() ? 1 : 0;
  }
  if (f.assembled.empty() && f.deep_request != 0) {
    return "deep capture " + std::to_string(f.deep_request) + " (one launch, replayed)";
  }
  std::string how = std::to_string(groups.size()) + " metric groups";
  if (stages > 0) {
    how = groups.empty() ? std::to_string(stages) + " stages of one pass a launch"
                         : how + ", " + std::to_string(stages) + " stages of one pass a launch";
  }
  return std::to_string(f.assembled.size()) + " launches without replay (" + how +
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

}  // namespace cutriage::agent
