#include "groups.h"

#include <algorithm>
#include <optional>

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

}  // namespace cutriage::agent
