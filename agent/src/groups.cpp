#include "groups.h"

#include "cutriage/triage/plan.h"
#include "stages.h"

#include <algorithm>
#include <optional>
#include <set>

namespace cutriage::agent {

namespace {

// The plan of in_every_group + names when it takes one pass and the chip accepted every name,
// ready for collection without replay; nullopt otherwise. Counts the call in `calls`.
std::optional<collectors::MetricPlan> one_pass_plan(collectors::ProfilerHost& host,
                                                    const std::vector<std::string>& in_every_group,
                                                    std::vector<std::string>::const_iterator first,
                                                    std::vector<std::string>::const_iterator last,
                                                    uint32_t& calls) {
  std::vector<std::string> names = in_every_group;
  names.insert(names.end(), first, last);
  ++calls;
  collectors::Result<collectors::MetricPlan> plan = host.plan(names);
  if (!plan.is_ok() || plan.value().passes != 1 || !plan.value().rejected.empty()) return std::nullopt;
  collectors::MetricPlan p = std::move(plan).value();
  p.replay = collectors::PlanReplay::kNone;
  return p;
}

std::optional<collectors::MetricPlan> one_pass_plan(collectors::ProfilerHost& host,
                                                    const std::vector<std::string>& in_every_group,
                                                    const std::vector<std::string>& names, uint32_t& calls) {
  return one_pass_plan(host, in_every_group, names.begin(), names.end(), calls);
}

}  // namespace

std::vector<std::string> always_on_counters(std::string_view chip) {
  std::vector<std::string> universe = all_counters();
  for (std::string& r : first_stage_counters(chip)) universe.push_back(std::move(r));
  return triage::expand_breakdowns(universe);
}

const std::vector<std::string>& routing_counters_expanded() {
  static const auto& kNames = *new std::vector<std::string>([] {
    std::vector<std::string> r = triage::expand_breakdowns(triage::verdict_counters_for(triage::routing_decisions()));
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    return r;
  }());
  return kNames;
}

const std::vector<std::string>& in_every_group() {
  static const auto& kNames = *new std::vector<std::string>{"gpu__time_duration.sum"};
  return kNames;
}

MetricGroups pack_single_pass(collectors::ProfilerHost& host, std::vector<std::string> metrics,
                              const std::vector<std::string>& in_every_group) {
  MetricGroups out;
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  metrics.erase(std::remove_if(metrics.begin(), metrics.end(),
                               [&](const std::string& m) {
                                 return std::find(in_every_group.begin(), in_every_group.end(), m) !=
                                        in_every_group.end();
                               }),
                metrics.end());

  // in_every_group + metrics[begin, begin + n), when it fits one pass.
  auto single_pass = [&](size_t begin, size_t n) {
    const auto first = metrics.cbegin() + static_cast<std::ptrdiff_t>(begin);
    return one_pass_plan(host, in_every_group, first, first + static_cast<std::ptrdiff_t>(n), out.plan_calls);
  };

  size_t begin = 0;
  while (begin < metrics.size()) {
    std::optional<collectors::MetricPlan> best = single_pass(begin, 1);
    if (!best) {
      // Alone it is rejected or takes several passes: say which.
      collectors::Result<collectors::MetricPlan> alone = host.plan({metrics[begin]});
      ++out.plan_calls;
      std::string why = "takes more than one pass alone";
      if (!alone.is_ok()) {
        why = alone.status().message();
      } else if (!alone.value().rejected.empty()) {
        why = alone.value().rejected.front().reason;
      } else {
        why = "takes " + std::to_string(alone.value().passes) + " passes alone";
      }
      out.unreachable.push_back({metrics[begin], why});
      ++begin;
      continue;
    }
    size_t good = 1;
    size_t bad = 0;  // 0: no failing length known yet
    const size_t left = metrics.size() - begin;
    while (bad == 0 && good < left) {
      const size_t n = std::min(left, good * 2);
      if (std::optional<collectors::MetricPlan> p = single_pass(begin, n)) {
        good = n;
        best = std::move(p);
      } else {
        bad = n;
      }
    }
    while (bad != 0 && bad - good > 1) {
      const size_t mid = good + (bad - good) / 2;
      if (std::optional<collectors::MetricPlan> p = single_pass(begin, mid)) {
        good = mid;
        best = std::move(p);
      } else {
        bad = mid;
      }
    }
    out.plans.push_back(std::move(*best));
    begin += good;
  }
  return out;
}

MetricGroups pack_first_fit(collectors::ProfilerHost& host, std::vector<std::string> metrics,
                            const std::vector<std::string>& in_every_group, const std::vector<std::string>& first) {
  MetricGroups out;
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  // The names of `first` go first (each part stays sorted), so they fill the fewest groups.
  std::stable_partition(metrics.begin(), metrics.end(), [&](const std::string& m) {
    return std::find(first.begin(), first.end(), m) != first.end();
  });
  std::vector<std::vector<std::string>> groups;  // names, parallel to out.plans (their last fit)
  for (const std::string& m : metrics) {
    if (std::find(in_every_group.begin(), in_every_group.end(), m) != in_every_group.end()) continue;
    bool placed = false;
    for (size_t g = 0; g < groups.size() && !placed; ++g) {
      groups[g].push_back(m);
      if (std::optional<collectors::MetricPlan> p = one_pass_plan(host, in_every_group, groups[g], out.plan_calls)) {
        out.plans[g] = std::move(*p);
        placed = true;
      } else {
        groups[g].pop_back();
      }
    }
    if (placed) continue;
    if (std::optional<collectors::MetricPlan> p = one_pass_plan(host, in_every_group, {m}, out.plan_calls)) {
      groups.push_back({m});
      out.plans.push_back(std::move(*p));
    } else {
      out.unreachable.push_back({m, "does not fit one pass (alone, beside the duration)"});
    }
  }
  return out;
}

namespace {

void append(MetricGroups& out, MetricGroups more) {
  out.plan_calls += more.plan_calls;
  for (collectors::MetricPlan& p : more.plans) out.plans.push_back(std::move(p));
  for (collectors::RejectedMetric& r : more.unreachable) out.unreachable.push_back(std::move(r));
}

}  // namespace

MetricGroups chip_groups(collectors::ProfilerHost& host, const std::string& chip,
                         const std::vector<std::string>& universe, const std::vector<std::string>& in_every_group) {
  const std::vector<std::vector<std::string>>& table = offline_groups(chip);
  if (table.empty()) return pack_single_pass(host, universe, in_every_group);
  MetricGroups out;
  std::set<std::string> covered;
  for (const std::vector<std::string>& group : table) {
    if (std::optional<collectors::MetricPlan> p = one_pass_plan(host, in_every_group, group, out.plan_calls)) {
      out.plans.push_back(std::move(*p));
    } else {
      append(out, pack_single_pass(host, group, in_every_group));
    }
    covered.insert(group.begin(), group.end());
  }
  // Names the table does not know (the rules changed since it was made): packed on their own.
  std::vector<std::string> rest;
  for (const std::string& m : universe) {
    if (covered.count(m) == 0 &&
        std::find(in_every_group.begin(), in_every_group.end(), m) == in_every_group.end()) {
      rest.push_back(m);
    }
  }
  if (!rest.empty()) append(out, pack_single_pass(host, rest, in_every_group));
  return out;
}

}  // namespace cutriage::agent
