#include "plan_cache.h"

namespace cutriage::agent {

collectors::Result<collectors::MetricPlan> PlanCache::plan(collectors::ProfilerHost& host, const std::string& chip,
                                                           const std::vector<std::string>& metrics) {
  Key key{chip, metrics};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  }
  collectors::Result<collectors::MetricPlan> made = host.plan(metrics);
  if (!made.is_ok()) return made;
  std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.size() >= max_entries_) plans_.clear();
  plans_.emplace(std::move(key), made.value());
  return made;
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_.size();
}

}  // namespace cutriage::agent
