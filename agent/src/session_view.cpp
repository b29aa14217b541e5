#include "session_view.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace cutriage::agent {

wire::TraceSummary SessionView::trace_summary() const {
  if (!p_.trace_started.load()) return {};
  std::unique_lock<std::mutex> lock = p_.trace.lock();
  return trace_summary_locked(p_.trace.timeline_locked().summary());
}

wire::TraceSummary SessionView::trace_summary_locked(const triage::TimelineSummary& timeline) const {
  wire::TraceSummary out;
  out.timeline = timeline;
  {
    std::map<uint64_t, std::string> names;
    {
      std::lock_guard<std::mutex> lock(p_.families.mutex());
      for (const triage::FamilyTimeStats& f : timeline.families) {
        if (const Family* k = p_.families.by_id_locked(f.family)) names[f.family] = k->names->function;
      }
    }
    out.findings = triage::triage_timeline(timeline, p_.triage_options.thresholds, [&names](uint64_t id) {
      auto it = names.find(id);
      return it != names.end() ? it->second : "family " + std::to_string(id);
    });
  }
  out.dropped_records = p_.trace.dropped_records_locked();
  out.timeline_kernel_events = p_.trace.kernel_events_locked();
  switch (p_.config.select) {
    case SelectMode::kTop: out.selection.mode = wire::SelectionMode::kTop; break;
    case SelectMode::kAll: out.selection.mode = wire::SelectionMode::kAll; break;
    case SelectMode::kShare: out.selection.mode = wire::SelectionMode::kShare; break;
    case SelectMode::kNone: out.selection.mode = wire::SelectionMode::kNone; break;
  }
  out.selection.top_k = p_.config.select == SelectMode::kTop ? p_.config.select_top : 0;
  out.selection.min_share = p_.config.select == SelectMode::kShare ? p_.config.select_min_share : 0;
  out.selection.nvtx_include = p_.config.nvtx_include.spec();
  out.selection.nvtx_exclude = p_.config.nvtx_exclude.spec();
  const std::vector<std::string> paths = p_.nvtx.paths();
  out.graphs = p_.trace.graphs_locked();
  const std::map<uint64_t, std::vector<wire::GraphNodeRef>> graph_nodes = graph_nodes_of(out.graphs, paths);
  std::lock_guard<std::mutex> lock(p_.families.mutex());
  for (const triage::FamilyTimeStats& f : timeline.families) {
    const Family* k = p_.families.by_id_locked(f.family);
    if (k == nullptr) continue;
    wire::FamilyOutcome& o = out.outcomes[f.family] = outcome_locked(*k, f, paths);
    if (auto it = graph_nodes.find(f.family); it != graph_nodes.end()) o.graph_nodes = it->second;
  }
  if (p_.earlier.loaded()) out.ranking_source = ranking_source_locked(timeline);
  return out;
}

uint64_t SessionView::application_launches(const Family& k, const triage::FamilyTimeStats* f) {
  // Launches into a capturing stream do not run then: they run (and are traced) as graph kernels.
  const uint64_t direct = k.launches.load(std::memory_order_relaxed);
  const uint64_t captured = std::min(direct, k.stats.captured);
  return direct - captured + (f != nullptr ? f->graph_launches : 0);
}

wire::RankingSource SessionView::ranking_source_locked(const triage::TimelineSummary& timeline) const {
  std::map<uint64_t, const triage::FamilyTimeStats*> traced;
  for (const triage::FamilyTimeStats& f : timeline.families) traced[f.family] = &f;
  std::vector<EarlierRanking::Current> current;
  std::map<std::string, std::string> names;
  for (const Family* k : p_.families.all_locked()) {
    auto t = traced.find(k->family_id);
    EarlierRanking::Current c{k->mangled, k->device, k->block,
                              application_launches(*k, t == traced.end() ? nullptr : t->second)};
    if (c.launches == 0) continue;  // created and never run (its executions were all dropped)
    names[k->mangled] = k->names->function;
    current.push_back(std::move(c));
  }
  return p_.earlier.compare(current, [&names](const std::string& mangled) {
    auto it = names.find(mangled);
    return it != names.end() && !it->second.empty() ? it->second : mangled;
  });
}

std::map<uint64_t, std::vector<wire::GraphNodeRef>> SessionView::graph_nodes_of(
    const std::vector<triage::GraphStats>& graphs, const std::vector<std::string>& paths) const {
  constexpr size_t kMaxNodes = 8;  // per family, as FamilyStats.graph_nodes says
  std::map<uint64_t, std::vector<std::pair<double, wire::GraphNodeRef>>> by_family;
  for (const triage::GraphStats& g : graphs) {
    for (const triage::GraphFamilyTime& f : g.families) {
      // The accumulator keeps time per family, not per node: a family's nodes in one graph share
      // its time there, for ordering only.
      const double per_node = f.node_ids.empty() ? 0 : f.total_ns / static_cast<double>(f.node_ids.size());
      for (uint64_t node : f.node_ids) {
        wire::GraphNodeRef ref;
        ref.graph_id = g.graph_id;
        ref.node_id = node;
        const GraphTable::Origin origin = p_.trace.graph_table().origin(node);
        if (origin.known) {
          ref.created_node_id = origin.created_node_id;
          ref.captured = origin.captured;
          if (origin.nvtx_path < paths.size()) ref.capture_nvtx_path = paths[origin.nvtx_path];
        }
        by_family[f.family].emplace_back(per_node, std::move(ref));
      }
    }
  }
  std::map<uint64_t, std::vector<wire::GraphNodeRef>> out;
  for (auto& [family, refs] : by_family) {
    std::stable_sort(refs.begin(), refs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<wire::GraphNodeRef>& list = out[family];
    for (size_t i = 0; i < refs.size() && i < kMaxNodes; ++i) list.push_back(std::move(refs[i].second));
  }
  return out;
}

wire::FamilyOutcome SessionView::outcome_locked(const Family& k, const triage::FamilyTimeStats& f,
                                                const std::vector<std::string>& paths) const {
  wire::FamilyOutcome o;
  using S = wire::FamilySelection;
  o.application_launches = application_launches(k, &f);
  // A family resumed from an earlier process (CUTRIAGE_RESUME) has its verdict whether or not a
  // launch of this one was profiled.
  const bool pm_stands = k.pm_record && !k.pm_superseded;  // always-on's PM window (pm_window.h)
  if (k.stats.profiled > 0 || (k.last_record && k.last_record->status == wire::ProfileStatus::kProfiled) ||
      pm_stands) {
    o.selection = S::kProfiled;
    if (k.last_record) o.profiled_launch_index = k.last_record->input.launch_index;
    if (pm_stands) o.profiled_launch_index = k.pm_record->input.launch_index;
    if (k.last_record && k.last_record->input.graph_scope) {
      const triage::GraphScope& g = *k.last_record->input.graph_scope;
      o.selection_detail = "profiled through CUDA graph " + std::to_string(g.graph_id) +
                           ": its counters are the whole graph launch's, over " + std::to_string(g.replays_profiled) +
                           " of the application's launches of it (CUPTI 13.0 cannot count one node)";
      if (g.node_sampling) {
        o.selection_detail = "profiled through CUDA graph " + std::to_string(g.graph_id) +
                             ": its counters are its own PM samples over one of the graph's launches, not replayed";
      }
      o.direct_launches_before_rank = direct_launches_before_rank(k);
      if (o.direct_launches_before_rank > 0) {
        o.selection_detail += "; its " + std::to_string(o.direct_launches_before_rank) +
                              " direct launches all came before its rank was known; `cutriage run` runs the program "
                              "again with this ranking (CUTRIAGE_RANKING) to profile them";
      }
    }
  } else if (k.not_replayable.load() > 0) {
    o.selection = S::kNotReplayable;
    o.selection_detail = k.last_detail;
  } else if (k.last_status == wire::ProfileStatus::kFailed) {
    o.selection = S::kFailed;
    o.selection_detail = k.last_detail;
  } else if (k.last_status == wire::ProfileStatus::kNotProfiledPermission ||
             p_.state.load() == wire::AgentState::kPermissionDenied) {
    o.selection = S::kNotPermitted;
  } else if (p_.config.select == SelectMode::kNone) {
    o.selection = S::kTraceOnly;
  } else if (!k.names->matches_filter) {
    o.selection = S::kFiltered;
    o.selection_detail = "the kernel-name filter " + p_.config.kernel_filter.spec() + " excludes it";
  } else if (f.graph_launches > 0 && 2 * f.graph_launches >= f.launches) {
    o.selection = f.graph_launches == f.launches ? S::kGraphOnly : S::kMostlyInGraphs;
    o.selection_detail = graph_detail_locked(k, f);
    o.direct_launches_before_rank = direct_launches_before_rank(k);
  } else if (p_.always_on != nullptr && (k.ranked || p_.config.select == SelectMode::kAll)) {
    o.selection = S::kTooFewLaunches;
    o.selection_detail = "ranked #" + std::to_string(k.rank) +
                         "; always-on: none of its launches fit the budget yet (" +
                         (p_.config.stage_passes
                              ? std::string("stages over launches: one multi-pass stage at a time, each when the "
                                            "budget has earned its first pass")
                              : std::string("one single-pass group a launch, a group switch each time the budget "
                                            "has earned one")) +
                         "; families with more GPU time are routed first; a larger CUTRIAGE_BUDGET or a deep "
                         "capture gets there sooner)";
  } else if (k.ranked && k.earlier != nullptr) {
    o.selection = S::kTooFewLaunches;
    o.selection_detail = "ranked #" + std::to_string(k.earlier->rank) +
                         " by the earlier run (CUTRIAGE_RANKING), but none of its launches in this run was "
                         "profiled" + unprofiled_launches_locked(k);
  } else if (k.ranked && k.launches_when_ranked > 0 &&
             k.launches_when_ranked >= k.launches.load(std::memory_order_relaxed)) {
    o.selection = S::kRankedAfterLastLaunch;
    o.selection_detail = "ranked #" + std::to_string(k.rank) + " only after its last launch (" +
                         std::to_string(k.launches_when_ranked) +
                         "; the trace comes back after the kernels complete); `cutriage run` runs the program "
                         "again with this ranking (CUTRIAGE_RANKING) to profile it from its first launch";
  } else if (k.ranked || p_.config.select == SelectMode::kAll) {
    o.selection = S::kTooFewLaunches;
    const uint64_t callbacks = k.launches.load(std::memory_order_relaxed);
    const uint64_t after = callbacks - std::min(callbacks, k.launches_when_ranked);
    o.selection_detail = "ranked #" + std::to_string(k.rank);
    if (p_.config.select == SelectMode::kAll) {
      o.selection_detail = "selected from its first launch (CUTRIAGE_SELECT=all), but none of its " +
                           std::to_string(callbacks) + " launches was profiled";
    } else if (after == 0) {
      o.selection_detail += " but not launched again after its rank was known; CUTRIAGE_SELECT=all profiles from "
                            "the first launch";
    } else {
      o.selection_detail += "; " + std::to_string(after) + " of its launches came after its rank was known, none "
                            "profiled";
    }
    o.selection_detail += unprofiled_launches_locked(k);
  } else if (p_.earlier.loaded()) {
    o.selection = S::kNotRanked;
    o.selection_detail = k.earlier == nullptr
                             ? std::string("not in the earlier run's ranking (CUTRIAGE_RANKING)")
                             : "not selected by the earlier run's ranking (CUTRIAGE_RANKING: #" +
                                   std::to_string(k.earlier->rank) + ", " + select_spec(p_.config) + ")";
  } else {
    o.selection = S::kNotRanked;
    o.selection_detail = p_.config.select == SelectMode::kTop
                             ? "outside the top " + std::to_string(p_.config.select_top) + " (rank #" +
                                   std::to_string(k.rank) + ")"
                             : "below the " + select_spec(p_.config).substr(6) + " share cut";
  }
  std::vector<std::pair<uint64_t, uint32_t>> by_count;
  if (const std::map<uint32_t, uint64_t>* launches = p_.trace.nvtx_launches_locked(k.family_id)) {
    for (const auto& [path, n] : *launches) by_count.emplace_back(n, path);
  }
  std::sort(by_count.begin(), by_count.end(), std::greater<>());
  for (const auto& [n, path] : by_count) {
    if (path < paths.size() && o.nvtx_paths.size() < 8) o.nvtx_paths.push_back(paths[path]);
  }
  return o;
}

SessionView::DirectLaunches SessionView::direct_launches(const Family& k) {
  // Launch callbacks less those made into a capturing stream (they run in the graph, and may come
  // after the rank: a warm-up, then the ranking, then the capture).
  const uint64_t callbacks = k.launches.load(std::memory_order_relaxed);
  return {callbacks - std::min(callbacks, k.stats.captured),
          k.launches_when_ranked - std::min(k.launches_when_ranked, k.captured_when_ranked)};
}

uint64_t SessionView::direct_launches_before_rank(const Family& k) {
  // Launched directly too (a warm-up before the capture, say), but only before the trace had
  // ranked it: a run with this ranking profiles those launches for counters of its own. Not in a
  // run that has an earlier ranking already.
  const DirectLaunches d = direct_launches(k);
  return k.ranked && k.earlier == nullptr && d.all > 0 && d.when_ranked >= d.all ? d.all : 0;
}

std::string SessionView::graph_detail_locked(const Family& k, const triage::FamilyTimeStats& f) const {
  const uint64_t direct = f.launches - f.graph_launches;
  std::string d = "ran " + std::to_string(f.launches) + " times, " + std::to_string(f.graph_launches) +
                  " of them inside CUDA graph launches";
  if (direct > 0) d += " and " + std::to_string(direct) + " directly";
  d += ". Kernels in graphs are profiled through their graph (CUPTI 13.0 cannot count one node of a graph "
       "launch, docs/graphs.md); this one's graph was not: it was not launched again once the kernel was "
       "ranked, or other graphs took the agent's graph slots";
  if (direct > 0) {
    const DirectLaunches calls = direct_launches(k);
    if (!k.ranked && p_.config.select != SelectMode::kAll) {
      d += "; its direct launches were not selected (not ranked)";
    } else if (calls.when_ranked >= calls.all) {
      d += "; its direct launches all came before its rank was known";
    } else {
      d += "; " + std::to_string(calls.all - calls.when_ranked) +
           " of its direct launches came after its rank was known, none profiled";
    }
  }
  return d + unprofiled_launches_locked(k);
}

std::string SessionView::unprofiled_launches_locked(const Family& k) const {
  // Each count is the family's own, over the whole run.
  std::string d;
  if (k.stats.captured > 0) {
    d += "; " + std::to_string(k.stats.captured) + " of its launches were made into a capturing stream (they run "
         "only when the graph is launched)";
  }
  if (const uint64_t n = k.skipped.load(std::memory_order_relaxed); n > 0) {
    d += "; " + std::to_string(n) + " were skipped (CUTRIAGE_LAUNCH_SKIP=" + std::to_string(p_.config.launch_skip) +
         ": the process's first matching launches)";
  }
  if (const uint64_t n = k.nvtx_excluded.load(std::memory_order_relaxed); n > 0) {
    d += "; " + std::to_string(n) + " were made outside the NVTX filter";
  }
  if (const uint64_t n = p_.counts.repeated_correlation.load(std::memory_order_relaxed); n > 0) {
    // Counted per process, not per family: CUPTI repeated the ids of whatever ran then.
    d += "; " + std::to_string(n) + " launches in this process came with their thread's previous correlation id "
         "and were not profiled (notice correlation_repeated, docs/graphs.md)";
  }
  const uint64_t started = p_.families.totals_locked().profiles_started;
  if (p_.config.launch_count > 0 && started >= p_.config.launch_count) {
    d += "; CUTRIAGE_LAUNCH_COUNT=" + std::to_string(p_.config.launch_count) +
         " was reached (no launch is profiled after that many)";
  }
  return d;
}

std::optional<wire::OverheadStats> SessionView::overhead() const {
  if (p_.always_on == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(p_.families.mutex());
  wire::OverheadStats o = p_.always_on->stats_locked();
  if (p_.callbacks_off_ns) o.launch_callbacks_off_ns = p_.callbacks_off_ns();
  return o;
}

wire::SessionEnd SessionView::session_end(const std::string& state_detail) const {
  std::lock_guard<std::mutex> lock(p_.families.mutex());
  wire::SessionEnd e = p_.families.totals_locked().totals;
  e.state = p_.state.load();
  e.state_detail = state_detail;
  e.kernel_launches = p_.counts.kernel_launches.load();
  e.graph_launches = p_.counts.graph_launches.load();
  e.not_replayable_launches = p_.counts.not_replayable.load();
  // Families with the same kernel (block shapes) are one entry here, as before the trace.
  std::map<std::pair<std::string, uint32_t>, wire::KernelLaunchStats> by_kernel;
  for (const Family* k : p_.families.all_locked()) {
    const uint64_t launches = k->launches.load();
    if (launches == 0) continue;  // only seen in the trace (graph kernels)
    wire::KernelLaunchStats& s = by_kernel[{k->mangled, k->device}];
    s.mangled_name = k->mangled;
    s.launches += launches;
    s.profiled += k->stats.profiled;
    s.captured += k->stats.captured;
    s.not_replayable += k->not_replayable.load();
    s.failed += k->stats.failed;
    const uint64_t accounted = k->stats.profiled + k->stats.captured + k->not_replayable.load() + k->stats.failed;
    s.filtered += launches > accounted ? launches - accounted : 0;
  }
  for (auto& [key, s] : by_kernel) e.kernels.push_back(std::move(s));
  if (p_.always_on != nullptr) {
    e.overhead = p_.always_on->stats_locked();
    if (p_.callbacks_off_ns) e.overhead->launch_callbacks_off_ns = p_.callbacks_off_ns();
  }
  return e;
}

std::vector<KernelSummary> SessionView::kernels() const {
  std::lock_guard<std::mutex> lock(p_.families.mutex());
  std::vector<KernelSummary> out;
  for (const Family* k : p_.families.all_locked()) {
    KernelSummary s;
    s.function_name = k->names->function;
    s.mangled_name = k->mangled;
    s.device = k->device;
    s.stats = k->stats;
    s.stats.launches = k->launches.load();
    s.stats.not_replayable = k->not_replayable.load();
    s.diagnosis = k->shown_diagnosis();
    s.last_status = k->last_status;
    s.last_status_detail = k->last_detail;
    s.uncollected = k->uncollected;
    out.push_back(std::move(s));
  }
  return out;
}

PromSnapshot SessionView::prometheus_snapshot(uint64_t sampled_launches) const {
  PromSnapshot s;
  s.host = p_.host;
  s.rank = p_.rank;
  s.dcgm_model_label = p_.config.prometheus_dcgm_labels;
  switch (p_.state.load()) {
    case wire::AgentState::kActive: s.agent_state = "active"; break;
    case wire::AgentState::kNoGpu: s.agent_state = "no_gpu"; break;
    case wire::AgentState::kPermissionDenied: s.agent_state = "permission_denied"; break;
    case wire::AgentState::kOtherSubscriber: s.agent_state = "other_subscriber"; break;
    case wire::AgentState::kProfilerFailed: s.agent_state = "profiler_failed"; break;
    case wire::AgentState::kUnspecified: s.agent_state = "unknown"; break;
  }
  s.kernel_launches = p_.counts.kernel_launches.load(std::memory_order_relaxed);
  s.sampled_launches = sampled_launches;
  if (std::optional<wire::OverheadStats> o = overhead()) {
    s.has_budget = true;
    s.budget_ratio = o->budget_fraction;
    s.overhead_seconds = static_cast<double>(o->spent_ns) / 1e9;
    s.startup_seconds = static_cast<double>(o->startup_ns) / 1e9;
    s.launch_callbacks_off_seconds = static_cast<double>(o->launch_callbacks_off_ns) / 1e9;
    s.wall_seconds = static_cast<double>(o->wall_ns) / 1e9;
    s.budget_admitted = o->admitted;
    s.budget_deferred = o->deferred;
    s.trace_duty = p_.config.trace_duty;
    s.trace_paused_seconds = static_cast<double>(p_.trace.paused_ns()) / 1e9;
  }
  triage::TimelineSummary timeline;
  if (p_.trace_started.load()) {
    std::unique_lock<std::mutex> lock = p_.trace.lock();
    timeline = p_.trace.timeline_locked().summary();
    s.dropped_trace_records = p_.trace.dropped_records_locked();
    for (const triage::GraphStats& g : p_.trace.graphs_locked()) {
      if (s.graphs.size() >= kMaxPromGraphs) break;
      s.graphs.push_back(PromGraph{g.graph_id, g.replays, g.kernel_busy_ns * 1e-9, g.span_ns * 1e-9,
                                   g.idle_between_nodes_ns() * 1e-9});
    }
  }
  const std::map<uint32_t, collectors::DeviceInfo> devices = p_.devices.all();
  std::lock_guard<std::mutex> lock(p_.families.mutex());
  s.profiled_launches = p_.families.totals_locked().totals.profiled_launches;
  for (const triage::DeviceTimeStats& d : timeline.devices) {
    PromGpu g;
    g.device = d.device;
    g.busy_seconds = d.busy_ns * 1e-9;
    g.span_seconds = d.last_end_ns > d.first_start_ns ? static_cast<double>(d.last_end_ns - d.first_start_ns) * 1e-9 : 0;
    s.gpus.push_back(std::move(g));
  }
  for (const auto& [device, info] : devices) {
    auto it = std::find_if(s.gpus.begin(), s.gpus.end(), [device = device](const PromGpu& g) { return g.device == device; });
    if (it == s.gpus.end()) {
      s.gpus.emplace_back();
      it = s.gpus.end() - 1;
      it->device = device;
    }
    it->uuid = info.uuid;
    it->model = info.name;
  }
  for (const triage::FamilyTimeStats& f : timeline.families) {
    if (s.families.size() >= kMaxPromFamilies) break;
    const Family* k = p_.families.by_id_locked(f.family);
    if (k == nullptr) continue;
    PromFamily pf;
    pf.family_id = f.family;
    pf.device = f.device;
    pf.kernel = k->names->function;
    pf.gpu_seconds = f.total_ns * 1e-9;
    pf.launches = f.launches;
    pf.share = timeline.time_share(f);
    const std::optional<triage::Diagnosis>& shown = k->shown_diagnosis();
    if (shown) {
      pf.verdict = std::string(triage::to_string(shown->classification));
      if (shown->primary_limiter != triage::Limiter::kUnspecified) {
        pf.limiter = std::string(triage::to_string(shown->primary_limiter));
      }
    }
    pf.complete = k->complete;
    pf.assembled_launches = static_cast<uint32_t>(k->assembled.size());
    pf.counters_missing = k->complete ? 0 : static_cast<uint32_t>(k->uncollected.size());
    s.families.push_back(std::move(pf));
  }
  return s;
}

std::vector<std::string> SessionView::summary_lines(const wire::TraceSummary& trace) const {
  std::vector<std::string> lines;
  auto ms = [](double ns) {
    char buf[32];
    if (ns >= 1e9) {
      std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    } else if (ns >= 1e6) {
      std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
    } else {
      std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    }
    return std::string(buf);
  };
  for (const triage::DeviceTimeStats& d : trace.timeline.devices) {
    char buf[160];
    const double span = d.traced_span_ns();
    std::snprintf(buf, sizeof buf, "GPU %u: busy %.1f%% of %s (%llu kernels, %llu copies)", d.device,
                  span > 0 ? 100.0 * d.busy_ns / span : 0.0, ms(span).c_str(),
                  static_cast<unsigned long long>(d.kernels), static_cast<unsigned long long>(d.copies));
    lines.emplace_back(buf);
  }
  const size_t shown = std::min<size_t>(trace.timeline.families.size(), 10);
  std::lock_guard<std::mutex> lock(p_.families.mutex());
  for (size_t i = 0; i < shown; ++i) {
    const triage::FamilyTimeStats& f = trace.timeline.families[i];
    const Family* k = p_.families.by_id_locked(f.family);
    if (k == nullptr) continue;
    char buf[200];
    std::snprintf(buf, sizeof buf, "#%zu %5.1f%%  %s  x%llu, mean %s", i + 1, 100.0 * trace.timeline.time_share(f),
                  k->names->function.c_str(), static_cast<unsigned long long>(f.launches), ms(f.mean_ns()).c_str());
    lines.emplace_back(buf);
    if (k->diagnosis) {
      lines.push_back("     " + k->diagnosis->headline);
      if (!k->diagnosis->next_action.empty()) lines.push_back("     next: " + k->diagnosis->next_action);
      if (!k->uncollected.empty()) {
        lines.push_back("     partial: " + std::to_string(k->uncollected.size()) +
                        " counters the route wanted were not collected (not launched again); "
                        "CUTRIAGE_METRICS=full collects everything in one launch");
      }
    } else if (auto it = trace.outcomes.find(f.family);
               it != trace.outcomes.end() && !it->second.selection_detail.empty()) {
      lines.push_back("     not profiled: " + it->second.selection_detail);
    }
  }
  if (trace.timeline.families.size() > shown) {
    lines.push_back("... and " + std::to_string(trace.timeline.families.size() - shown) +
                    " more families (cutriage report)");
  }
  for (const triage::CheckResult& c : trace.findings) {
    if (c.outcome == triage::Outcome::kFired && c.finding) lines.push_back("session: " + c.finding->summary);
  }
  return lines;
}

void SessionView::print_summary(Logger& log, const wire::SessionEnd& end, const std::string& file) const {
  auto tail = [&] {
    if (end.graph_launches > 0) {
      log.summary("  " + std::to_string(end.graph_launches) +
                  " CUDA graph launches: their kernels are traced, ranked and profiled through their graph");
    }
    if (end.captured_launches > 0) {
      log.summary("  " + std::to_string(end.captured_launches) +
                  " launches into streams under capture: recorded into graphs, not profiled");
    }
    if (p_.state.load() == wire::AgentState::kPermissionDenied) {
      log.summary("  nothing profiled: counters not permitted (see the message above for the fix)");
    }
  };
  const std::string details = file.empty() ? "" : "; details: cutriage report " + file;
  if (p_.trace_started.load()) {
    const wire::TraceSummary trace = trace_summary();
    if (!trace.timeline.families.empty()) {
      log.summary(std::to_string(trace.timeline.families.size()) + " kernel families traced (" +
                  std::to_string(trace.timeline.kernel_executions) + " executions), " +
                  std::to_string(end.profiled_launches) + " launches profiled" + details);
      for (const std::string& line : summary_lines(trace)) log.summary("  " + line);
      tail();
      return;
    }
  }
  std::vector<KernelSummary> ks = kernels();
  size_t profiled = 0;
  for (const KernelSummary& k : ks) profiled += k.diagnosis ? 1 : 0;
  log.summary(std::to_string(profiled) + " of " + std::to_string(ks.size()) + " kernels profiled (" +
              std::to_string(end.profiled_launches) + " of " + std::to_string(end.kernel_launches) + " launches)" +
              details);
  for (const KernelSummary& k : ks) {
    if (k.diagnosis) {
      log.summary("  " + k.function_name + ": " + k.diagnosis->headline);
      if (!k.diagnosis->next_action.empty()) log.summary("    next: " + k.diagnosis->next_action);
      if (!k.uncollected.empty()) {
        log.summary("    partial: " + std::to_string(k.uncollected.size()) +
                    " counters the route wanted were not collected (the kernel was not launched "
                    "again); CUTRIAGE_METRICS=full collects everything in one launch");
      }
    } else if (k.last_status != wire::ProfileStatus::kUnspecified &&
               k.last_status != wire::ProfileStatus::kNotProfiledPermission) {
      log.summary("  " + k.function_name + ": not profiled: " + k.last_status_detail);
    }
  }
  tail();
}

}  // namespace cutriage::agent
