#include "app_replay.h"

#include <algorithm>
#include <set>
#include <utility>

#include "cutriage/triage/plan.h"
#include "stages.h"

namespace cutriage::agent {

uint32_t runs_assembled(const std::vector<triage::AssembledLaunch>& launches) {
  std::set<std::pair<uint64_t, uint64_t>> earlier;
  bool own = false;
  for (const triage::AssembledLaunch& a : launches) {
    if (a.from_earlier_process()) {
      earlier.insert({a.earlier_pid, a.earlier_start_unix_ns});
    } else {
      own = true;
    }
  }
  return static_cast<uint32_t>(earlier.size()) + (own ? 1U : 0U);
}

ApplicationReplayPolicy::ApplicationReplayPolicy(const AgentConfig& config, FamilyTable& families,
                                                 DeviceCatalog& devices, const KernelBuilds& builds, Logger& log,
                                                 const triage::TriageOptions& triage_options, Clocks clocks)
    : SinglePassPolicy("application replay", config, families, devices, builds, log, triage_options,
                       std::move(clocks)) {}

std::vector<std::string> ApplicationReplayPolicy::first_counters(const std::string&) const {
  return routing_counters_expanded();
}

SelectionPolicy::Choice ApplicationReplayPolicy::choose_locked(Family& f, std::vector<std::string> wanted,
                                                               const ContextGroups& context) {
  Choice choice;
  const MetricGroups* groups = context.groups;
  if (groups == nullptr) {  // no groups for this chip: said once by groups_for
    choice.kind = Choice::Kind::kWait;
    return choice;
  }
  // Groups only for the stage the family is at: routing, then its verdict's limiter, then depth.
  const std::set<std::string> all_wanted = stage_wants(f, wanted);
  const size_t n_groups = groups->plans.size();
  std::vector<size_t> own(n_groups, 0);
  auto count_own = [&](const std::vector<std::string>& names) {
    const std::set<std::string> want(names.begin(), names.end());
    bool any = false;
    for (size_t g = 0; g < n_groups; ++g) {
      own[g] = 0;
      for (const std::string& m : groups->plans[g].metrics) {
        own[g] += want.count(m) > 0 && f.attempted.count(m) == 0 ? 1 : 0;
      }
      any = any || own[g] > 0;
    }
    return any;
  };
  if (!count_own(f.ao_wanted) && f.ao_wanted.size() != all_wanted.size()) {
    // The stage's counters are in no single-pass group (they need replay): on to the rest.
    f.ao_wanted.assign(all_wanted.begin(), all_wanted.end());
    (void)count_own(f.ao_wanted);
  }
  const auto most = std::max_element(own.begin(), own.end());
  if (most == own.end() || *most == 0) {
    // What is still wanted is in no single-pass group: another run adds nothing.
    choice.kind = Choice::Kind::kComplete;
    return choice;
  }
  // The configured group costs no reconfiguration of the range profiler; otherwise the group with
  // the most of the stage's counters (the first of equals, so that runs choose alike).
  size_t best = static_cast<size_t>(most - own.begin());
  const int configured = context.configured;
  if (configured >= 0 && static_cast<size_t>(configured) < n_groups && own[static_cast<size_t>(configured)] > 0) {
    best = static_cast<size_t>(configured);
    choice.cost = CostKind::kSameGroup;
  } else {
    choice.cost = CostKind::kGroupSwitch;
  }
  choice.group = static_cast<int>(best);
  choice.metrics = groups->plans[best].metrics;
  return choice;
}

wire::ApplicationReplay ApplicationReplayPolicy::settle_locked(Family& f, const MetricGroups* groups) const {
  wire::ApplicationReplay out;
  out.runs = runs_assembled(f.assembled);
  std::vector<std::string> wanted;
  switch (config_.metric_mode) {
    case MetricMode::kAdaptive: wanted = f.uncollected; break;  // the route's (update_completeness)
    case MetricMode::kFull: wanted = all_counters(); break;
    case MetricMode::kBase: wanted = triage::counters_for_decisions(triage::routing_decisions()); break;
    case MetricMode::kList: wanted = config_.metric_list; break;
  }
  if (groups != nullptr) {
    // Counters the route reads that need replay (in no single-pass group) are never collected:
    // the family is complete without them, as always-on's is.
    const size_t left = collectable_in_groups(*groups, wanted, f.attempted);
    f.complete = left == 0;
    out.counters_wanted = static_cast<uint32_t>(left);
  } else if (config_.metric_mode != MetricMode::kAdaptive) {
    f.complete = false;  // the whole list, group by group: the next launch's selection says when
  }
  out.counters_complete = f.complete;
  return out;
}

void ApplicationReplayPolicy::resumed_locked(Family& f, wire::KernelRecord& record, const ContextGroups& context) {
  record.application_replay = settle_locked(f, context.groups);
}

}  // namespace cutriage::agent
