#include "plan_cache.h"

namespace cutriage::agent {

collectors::Result<collectors::MetricPlan> PlanCache::plan(collectors::ProfilerHost& host, const std::string& chip,
                                                           const std::vector<std::string>& metrics) {
  Key key{chip, metrics};
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (in_flight_.count(key) != 0) {
      ++waits_;
      made_.wait(lock, [&] { return in_flight_.count(key) == 0; });
    }
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    // Not there (or the other thread's attempt failed): this thread makes it. Another thread
    // asking meanwhile waits for this one.
    in_flight_.insert(key);
  }
  collectors::Result<collectors::MetricPlan> made = host.plan(metrics);
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.erase(key);
  made_.notify_all();
  if (!made.is_ok()) return made;
  if (plans_.size() >= max_entries_) plans_.clear();
  plans_.emplace(std::move(key), made.value());
  return made;
}

void PlanCache::queue(const std::string& chip, std::vector<std::string> metrics) {
  Key key{chip, std::move(metrics)};
  std::lock_guard<std::mutex> lock(mutex_);
  // Bounded like the plans: forgetting what was queued only means a list may be made twice.
  if (ever_queued_.size() >= 4 * max_entries_) ever_queued_.clear();
  if (plans_.count(key) != 0 || !ever_queued_.insert(key).second) return;
  queued_.push_back(std::move(key));
}

size_t PlanCache::make_queued(
    const std::function<std::shared_ptr<collectors::ProfilerHost>(const std::string&)>& host_of) {
  std::vector<Key> todo;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    todo.swap(queued_);
  }
  size_t made = 0;
  for (const Key& key : todo) {
    std::shared_ptr<collectors::ProfilerHost> host = host_of(key.first);
    if (!host) continue;
    if (plan(*host, key.first, key.second).is_ok()) ++made;
  }
  return made;
}

size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_.size();
}

size_t PlanCache::waits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waits_;
}

}  // namespace cutriage::agent
