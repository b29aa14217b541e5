#include "groups.h"

#include <algorithm>
#include <optional>
#include <set>

namespace cutriage::agent {

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

  // The plan of in_every_group + metrics[begin, begin + n) when it is one pass and every name was
  // accepted; nullopt otherwise.
  auto single_pass = [&](size_t begin, size_t n) -> std::optional<collectors::MetricPlan> {
    std::vector<std::string> names = in_every_group;
    names.insert(names.end(), metrics.begin() + static_cast<std::ptrdiff_t>(begin),
                 metrics.begin() + static_cast<std::ptrdiff_t>(begin + n));
    ++out.plan_calls;
    collectors::Result<collectors::MetricPlan> plan = host.plan(names);
    if (!plan.is_ok() || plan.value().passes != 1 || !plan.value().rejected.empty()) return std::nullopt;
    collectors::MetricPlan p = std::move(plan).value();
    p.replay = collectors::PlanReplay::kNone;
    return p;
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
                            const std::vector<std::string>& in_every_group) {
  MetricGroups out;
  std::sort(metrics.begin(), metrics.end());
  metrics.erase(std::unique(metrics.begin(), metrics.end()), metrics.end());
  std::vector<std::vector<std::string>> groups;
  auto fits = [&](const std::vector<std::string>& names) {
    std::vector<std::string> all = in_every_group;
    all.insert(all.end(), names.begin(), names.end());
    ++out.plan_calls;
    collectors::Result<collectors::MetricPlan> plan = host.plan(all);
    return plan.is_ok() && plan.value().passes == 1 && plan.value().rejected.empty();
  };
  for (const std::string& m : metrics) {
    if (std::find(in_every_group.begin(), in_every_group.end(), m) != in_every_group.end()) continue;
    bool placed = false;
    for (std::vector<std::string>& g : groups) {
      g.push_back(m);
      if (fits(g)) {
        placed = true;
        break;
      }
      g.pop_back();
    }
    if (placed) continue;
    if (fits({m})) {
      groups.push_back({m});
    } else {
      out.unreachable.push_back({m, "does not fit one pass (alone, beside the duration)"});
    }
  }
  for (const std::vector<std::string>& g : groups) {
    std::vector<std::string> all = in_every_group;
    all.insert(all.end(), g.begin(), g.end());
    ++out.plan_calls;
    collectors::Result<collectors::MetricPlan> plan = host.plan(all);
    if (!plan.is_ok()) continue;  // fitted a moment ago: cannot happen with a deterministic host
    collectors::MetricPlan p = std::move(plan).value();
    p.replay = collectors::PlanReplay::kNone;
    out.plans.push_back(std::move(p));
  }
  return out;
}

MetricGroups chip_groups(collectors::ProfilerHost& host, const std::string& chip,
                         const std::vector<std::string>& universe, const std::vector<std::string>& in_every_group) {
  const std::vector<std::vector<std::string>>& table = offline_groups(chip);
  if (table.empty()) return pack_single_pass(host, universe, in_every_group);
  MetricGroups out;
  std::set<std::string> covered;
  for (const std::vector<std::string>& group : table) {
    std::vector<std::string> names = in_every_group;
    names.insert(names.end(), group.begin(), group.end());
    ++out.plan_calls;
    collectors::Result<collectors::MetricPlan> plan = host.plan(names);
    if (plan.is_ok() && plan.value().passes == 1 && plan.value().rejected.empty()) {
      collectors::MetricPlan p = std::move(plan).value();
      p.replay = collectors::PlanReplay::kNone;
      out.plans.push_back(std::move(p));
    } else {
      MetricGroups split = pack_single_pass(host, group, in_every_group);
      out.plan_calls += split.plan_calls;
      for (collectors::MetricPlan& p : split.plans) out.plans.push_back(std::move(p));
      for (collectors::RejectedMetric& r : split.unreachable) out.unreachable.push_back(std::move(r));
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
  if (!rest.empty()) {
    MetricGroups more = pack_single_pass(host, rest, in_every_group);
    out.plan_calls += more.plan_calls;
    for (collectors::MetricPlan& p : more.plans) out.plans.push_back(std::move(p));
    for (collectors::RejectedMetric& r : more.unreachable) out.unreachable.push_back(std::move(r));
  }
  return out;
}

}  // namespace cutriage::agent
