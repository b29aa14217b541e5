// CUTRIAGE_RANKING: the ranking an earlier run of the program made, used to choose this run's
// top:K or share:P families from their first launch. A short program's top kernel is often done
// before the run's own trace has ranked it (its launches are queued back to back, the trace's
// records come back later); `cutriage run --rerun` runs such a program again with the first run's
// file here.
//
// At the end, this run's trace is compared with that one (the same families, each launched as
// often): the file says whether the families profiled here are the ones the ranking was made of.
//
// Ownership and threading: loaded once by Agent::start() before any callback; read-only after,
// so its families may be pointed to from Family (Family::earlier) and read without a lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "config.h"
#include "family.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/wire/prior_ranking.h"
#include "cutriage/wire/records.h"
#include "log.h"

namespace cutriage::agent {

// The most bytes read from CUTRIAGE_RANKING: the agent's memory is the application's.
inline constexpr size_t kMaxRankingFileBytes = size_t{256} << 20;

class EarlierRanking {
 public:
  // Reads config.ranking_path (no-op when empty). A missing, unreadable or foreign file, or one
  // without a trace summary, is said once on the log and leaves the ranking unloaded: this run
  // ranks by its own trace, as without the variable.
  void load(const AgentConfig& config, Logger& log);
  [[nodiscard]] bool loaded() const { return ranking_.has_value(); }

  // The earlier run's entry for a family; null when it has none.
  [[nodiscard]] const wire::RankedFamily* find(const std::string& mangled, uint32_t device,
                                               const triage::Dim3& block) const;
  // Whether this run's CUTRIAGE_SELECT picks that entry (top:K by its rank, share:P by its share).
  [[nodiscard]] bool selects(const wire::RankedFamily& family) const;
  // Whether it selects a family the earlier run launched exactly once (such a family's first
  // profiled launch collects every counter at once: no second launch to adapt on).
  [[nodiscard]] bool selects_single_launch() const;
  // On a family's creation (the table's lock held): its entry, and whether it is ranked (selected)
  // by it. No-op when nothing is loaded.
  void mark_locked(Family& family) const;

  // One family of this run, for the comparison.
  struct Current {
    std::string mangled;
    uint32_t device = 0;
    triage::Dim3 block{0, 0, 0};
    uint64_t launches = 0;  // as FamilyStats.application_launches counts them
  };
  // This run against the earlier one; `display` names a mangled name for the differences.
  [[nodiscard]] wire::RankingSource compare(const std::vector<Current>& current,
                                            const std::function<std::string(const std::string&)>& display) const;

 private:
  using Key = std::tuple<std::string, uint32_t, uint32_t, uint32_t, uint32_t>;
  static Key key_of(const std::string& mangled, uint32_t device, const triage::Dim3& block) {
    return {mangled, device, block.x, block.y, block.z};
  }

  const AgentConfig* config_ = nullptr;
  std::optional<wire::PriorRanking> ranking_;
  std::map<Key, size_t> index_;  // into ranking_->families
};

}  // namespace cutriage::agent
