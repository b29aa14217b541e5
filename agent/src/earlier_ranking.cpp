#include "earlier_ranking.h"

#include <algorithm>

#include "cutriage/base/read_file.h"

namespace cutriage::agent {

namespace {

// The differences a file lists; the count of all is beside them.
constexpr size_t kMaxDifferences = 8;

}  // namespace

void EarlierRanking::load(const AgentConfig& config, Logger& log) {
  config_ = &config;
  const std::string& path = config.ranking_path;
  if (path.empty()) return;
  if (config.select != SelectMode::kTop && config.select != SelectMode::kShare) {
    log.warn("CUTRIAGE_RANKING chooses top:K or share:P families; CUTRIAGE_SELECT=" + select_spec(config) +
             " ranks nothing, so it is not read");
    return;
  }
  base::Result<std::string> read = base::read_regular_file(path, kMaxRankingFileBytes);
  if (!read.is_ok()) {
    log.warn("CUTRIAGE_RANKING=\"" + path + "\": " + read.status().message() +
             "; this run ranks the families by its own trace");
    return;
  }
  std::string error;
  std::optional<wire::PriorRanking> ranking = wire::parse_prior_ranking(read.value(), &error);
  if (!ranking) {
    log.warn("CUTRIAGE_RANKING=\"" + path + "\": " + error + "; this run ranks the families by its own trace");
    return;
  }
  ranking_ = std::move(ranking);
  for (size_t i = 0; i < ranking_->families.size(); ++i) {
    const wire::RankedFamily& f = ranking_->families[i];
    index_.emplace(key_of(f.mangled_name, f.device, f.block), i);
  }
  size_t selected = 0;
  for (const wire::RankedFamily& f : ranking_->families) selected += selects(f) ? 1 : 0;
  log.info("CUTRIAGE_RANKING: " + std::to_string(selected) + " of the " + std::to_string(ranking_->families.size()) +
           " families ranked by process " + std::to_string(ranking_->pid) + " (" + path +
           ") are profiled from their first launch");
}

const wire::RankedFamily* EarlierRanking::find(const std::string& mangled, uint32_t device,
                                               const triage::Dim3& block) const {
  if (!ranking_) return nullptr;
  auto it = index_.find(key_of(mangled, device, block));
  return it == index_.end() ? nullptr : &ranking_->families[it->second];
}

bool EarlierRanking::selects(const wire::RankedFamily& f) const {
  if (config_ == nullptr) return false;
  switch (config_->select) {
    case SelectMode::kTop: return f.rank >= 1 && f.rank <= config_->select_top;
    case SelectMode::kShare: return f.time_share >= config_->select_min_share;
    case SelectMode::kAll:
    case SelectMode::kNone: return false;
  }
  return false;
}

bool EarlierRanking::selects_single_launch() const {
  if (!ranking_) return false;
  for (const wire::RankedFamily& f : ranking_->families) {
    if (f.launches == 1 && !f.launches_approximate && selects(f)) return true;
  }
  return false;
}

void EarlierRanking::mark_locked(Family& family) const {
  if (!ranking_) return;
  family.earlier = find(family.mangled, family.device, family.block);
  family.ranked = family.earlier != nullptr && selects(*family.earlier);
}

wire::RankingSource EarlierRanking::compare(const std::vector<Current>& current,
                                            const std::function<std::string(const std::string&)>& display) const {
  wire::RankingSource out;
  if (!ranking_) return out;
  out.path = config_->ranking_path;
  out.pid = ranking_->pid;
  out.start_time_unix_ns = ranking_->start_unix_ns;
  for (const wire::RankedFamily& f : ranking_->families) out.families_selected += selects(f) ? 1 : 0;

  std::map<Key, uint64_t> now;
  for (const Current& c : current) now[key_of(c.mangled, c.device, c.block)] += c.launches;
  std::vector<std::string> differences;
  double total_ns = 0;
  double matching_ns = 0;
  // The earlier run's families in its rank order, so the differences that matter come first.
  for (const wire::RankedFamily& f : ranking_->families) {
    total_ns += f.total_ns;
    const Key key = key_of(f.mangled_name, f.device, f.block);
    auto it = now.find(key);
    if (it == now.end()) {
      differences.push_back(display(f.mangled_name) + " (#" + std::to_string(f.rank) + "): " +
                            std::to_string(f.launches) + " launches then, none now");
      continue;
    }
    if (it->second != f.launches) {
      differences.push_back(display(f.mangled_name) + " (#" + std::to_string(f.rank) + "): " +
                            std::to_string(f.launches) + " launches then, " + std::to_string(it->second) + " now");
    } else {
      matching_ns += f.total_ns;
    }
    now.erase(it);
  }
  // What only this run has, in name order (it has no rank in the earlier run).
  for (const auto& [key, launches] : now) {
    differences.push_back(display(std::get<0>(key)) + ": " + std::to_string(launches) + " launches now, none then");
  }
  out.families_compared = static_cast<uint32_t>(ranking_->families.size() + now.size());
  out.families_differing = static_cast<uint32_t>(differences.size());
  out.trace_matches = differences.empty();
  out.matching_time_share = total_ns > 0 ? matching_ns / total_ns : (differences.empty() ? 1.0 : 0.0);
  if (differences.size() > kMaxDifferences) differences.resize(kMaxDifferences);
  out.differences = std::move(differences);
  return out;
}

}  // namespace cutriage::agent
