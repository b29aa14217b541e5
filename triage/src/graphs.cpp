#include "cutriage/triage/graphs.h"

#include <algorithm>

namespace cutriage::triage {

void GraphAccumulator::add(const GraphKernel& k) {
  if (k.graph_id == 0 || k.end_ns < k.start_ns) return;
  auto it = graphs_.find(k.graph_id);
  if (it == graphs_.end()) {
    if (graphs_.size() >= kMaxGraphs) {
      ++untracked_;
      return;
    }
    it = graphs_.emplace(k.graph_id, Graph{}).first;
    it->second.stats.graph_id = k.graph_id;
  }
  Graph& g = it->second;
  auto replay = g.open.find(k.launch);
  if (replay != g.open.end() && k.node_id != 0 && replay->second.nodes.count(k.node_id) > 0) {
    // The node already ran under this launch id: another launch was given the same id.
    ++repeated_launch_ids_;
    close(g, replay->second);
    g.open.erase(replay);
    replay = g.open.end();
  }
  if (replay == g.open.end()) {
    // A new replay: launches arrive in increasing correlation order per graph, so the smallest
    // open one is the oldest.
    if (g.open.size() >= kOpenReplays) {
      close(g, g.open.begin()->second);
      g.open.erase(g.open.begin());
    }
    replay = g.open.emplace(k.launch, Replay{}).first;
  }
  Replay& r = replay->second;
  r.first_start_ns = std::min(r.first_start_ns, k.start_ns);
  r.last_end_ns = std::max(r.last_end_ns, k.end_ns);
  r.intervals.emplace_back(k.start_ns, k.end_ns);
  if (k.node_id != 0) r.nodes.insert(k.node_id);

  ++g.stats.kernel_executions;
  if (g.nodes.size() < kMaxNodesPerGraph) g.nodes.insert(k.node_id);
  GraphFamilyTime& f = g.families[k.family];
  f.family = k.family;
  f.total_ns += static_cast<double>(k.end_ns - k.start_ns);
  g.kernel_ns += static_cast<double>(k.end_ns - k.start_ns);
  ++f.executions;
  if (f.node_ids.size() < kMaxNodeIdsPerFamily &&
      std::find(f.node_ids.begin(), f.node_ids.end(), k.node_id) == f.node_ids.end()) {
    f.node_ids.insert(std::upper_bound(f.node_ids.begin(), f.node_ids.end(), k.node_id), k.node_id);
  }
}

void GraphAccumulator::close(Graph& g, const Replay& r) {
  if (r.intervals.empty()) return;
  ++g.stats.replays;
  const auto span = static_cast<double>(r.last_end_ns - r.first_start_ns);
  g.stats.span_ns += span;
  if (g.recent_spans.size() < kRecentSpans) {
    g.recent_spans.push_back(span);
  } else {
    g.recent_spans[g.recent_next] = span;
  }
  g.recent_next = (g.recent_next + 1) % kRecentSpans;
  std::vector<std::pair<uint64_t, uint64_t>> iv = r.intervals;
  if (iv.empty()) return;  // never (checked above), but GCC's -Wnull-dereference cannot see it through the copy
  std::sort(iv.begin(), iv.end());
  uint64_t start = iv.front().first;
  uint64_t end = iv.front().second;
  double busy = 0;
  for (size_t i = 1; i < iv.size(); ++i) {
    if (iv[i].first > end) {
      busy += static_cast<double>(end - start);
      start = iv[i].first;
    }
    end = std::max(end, iv[i].second);
  }
  busy += static_cast<double>(end - start);
  g.stats.kernel_busy_ns += busy;
}

std::vector<double> GraphAccumulator::recent_spans(uint32_t graph_id) const {
  auto it = graphs_.find(graph_id);
  if (it == graphs_.end()) return {};
  const Graph& g = it->second;
  std::vector<double> out;
  out.reserve(g.recent_spans.size());
  const size_t n = g.recent_spans.size();
  const size_t first = n < kRecentSpans ? 0 : g.recent_next;
  for (size_t i = 0; i < n; ++i) out.push_back(g.recent_spans[(first + i) % n]);
  return out;
}

std::optional<GraphAccumulator::Share> GraphAccumulator::family_share(uint32_t graph_id, uint64_t family) const {
  auto it = graphs_.find(graph_id);
  if (it == graphs_.end() || !(it->second.kernel_ns > 0)) return std::nullopt;
  auto f = it->second.families.find(family);
  if (f == it->second.families.end()) return std::nullopt;
  Share s;
  s.share = f->second.total_ns / it->second.kernel_ns;
  s.other_families = static_cast<uint32_t>(it->second.families.size() - 1);
  s.mean_replay_ns = it->second.stats.mean_replay_ns();
  return s;
}

std::vector<GraphStats> GraphAccumulator::summary() const {
  std::vector<GraphStats> out;
  out.reserve(graphs_.size());
  for (const auto& [id, graph] : graphs_) {
    Graph g = graph;
    for (const auto& [launch, replay] : graph.open) close(g, replay);
    GraphStats s = g.stats;
    s.kernel_nodes = g.nodes.size();
    s.families.reserve(g.families.size());
    for (const auto& [family, time] : g.families) s.families.push_back(time);
    std::sort(s.families.begin(), s.families.end(), [](const GraphFamilyTime& a, const GraphFamilyTime& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.family < b.family;
    });
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const GraphStats& a, const GraphStats& b) {
    return a.kernel_busy_ns != b.kernel_busy_ns ? a.kernel_busy_ns > b.kernel_busy_ns : a.graph_id < b.graph_id;
  });
  return out;
}

}  // namespace cutriage::triage
