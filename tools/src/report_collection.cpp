#include "report_collection.h"

#include <algorithm>
#include <set>
#include <string>

#include "report_model.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
using namespace model;  // the numbers, the kernels and the verdict as every view reads them

namespace {

void put_wrapped_text(std::ostringstream& out, const std::string& first, const std::string& rest, std::string_view text) {
  out << wrap_text(first, rest, text, kReportWidth);
}

// Always-on collection: the metrics came from several launches, one single-pass metric group each,
// none replayed. One line: how many launches, which groups, how far their durations spread (the
// launches must be comparable for the assembled numbers to mean anything).
void render_assembled(std::ostringstream& out, const v1::KernelProfile& k) {
  std::set<uint32_t> groups;
  int stages = 0;  // CUTRIAGE_STAGE_PASSES: a stage's last pass carries its values (group 0)
  double min_ns = 0, max_ns = 0;
  for (const v1::AssembledLaunch& a : k.assembled_launches()) {
    if (a.metric_group() != 0) groups.insert(a.metric_group());
    if (a.metric_group() == 0 && a.metrics() > 0) ++stages;
    if (!(a.duration_ns() > 0)) continue;
    min_ns = min_ns == 0 ? a.duration_ns() : std::min(min_ns, a.duration_ns());
    max_ns = std::max(max_ns, a.duration_ns());
  }
  const int n = k.assembled_launches_size();
  std::set<uint64_t> earlier_pids;
  int earlier = 0;
  for (const v1::AssembledLaunch& a : k.assembled_launches()) {
    if (a.earlier_pid() == 0 && a.earlier_start_unix_ns() == 0) continue;
    ++earlier;
    earlier_pids.insert(a.earlier_pid());
  }
  std::string text = "from " + std::to_string(n) + (n == 1 ? " launch" : " launches") + " without replay";
  if (k.has_application_replay()) {
    // Application replay: the earlier processes are the program's earlier runs.
    const uint32_t runs = k.application_replay().runs();
    text += ", over " + std::to_string(runs) + (runs == 1 ? " run" : " runs") + " of the application";
    if (earlier > 0) {
      // The earlier runs' pids, the first few: a kernel launched once a run has one per group.
      constexpr size_t kShown = 3;
      text += " (pid";
      size_t shown = 0;
      for (uint64_t pid : earlier_pids) {
        if (shown++ == kShown) break;
        text += " " + std::to_string(pid);
      }
      if (earlier_pids.size() > kShown) text += " and " + std::to_string(earlier_pids.size() - kShown) + " more";
      text += earlier_pids.size() < runs ? ", and this run)" : ")";
    }
  } else if (earlier > 0 && earlier == n && earlier_pids.size() > 1) {
    // A file of `cutriage merge`: every launch is another process's.
    text += ", by " + std::to_string(earlier_pids.size()) + " processes (merged; pid";
    for (uint64_t pid : earlier_pids) text += " " + std::to_string(pid);
    text += ")";
  } else if (earlier > 0) {
    text += ", " + std::to_string(earlier) + " of them by an earlier process (resumed; pid";
    for (uint64_t pid : earlier_pids) text += " " + std::to_string(pid);
    text += ")";
  }
  if (!groups.empty()) {
    text += groups.size() == 1 ? " (group " : " (groups ";
    bool first = true;
    for (uint32_t g : groups) {
      text += (first ? "" : ", ") + std::to_string(g);
      first = false;
    }
    text += ")";
  }
  if (stages > 0) {
    text += " (" + std::to_string(stages) + (stages == 1 ? " stage" : " stages") + " of one pass a launch)";
  }
  if (max_ns > 0) {
    text += ", durations " + short_duration(min_ns);
    if (max_ns > min_ns) text += "\u2013" + short_duration(max_ns);
  } else {
    text += ", durations not measured";
  }
  put_wrapped_text(out, "    assembled ", "              ", text);
}

// A kernel inside a CUDA graph: its counters are the whole graph launch's (CUPTI counts a graph
// launch as one range), collected over the application's own launches of it. One line says so,
// with the kernel's part of the graph, which is what the verdict's weight rests on.
void render_graph_scope(std::ostringstream& out, const v1::KernelProfile& k) {
  const v1::GraphScope& g = k.graph_scope();
  if (g.has_node_sampling()) {
    // Its own counters: PM samples that lay inside this kernel's executions of one graph launch.
    const v1::NodeSampling& n = g.node_sampling();
    std::string text = "this node's own PM samples (" + std::to_string(n.samples()) +
                       (n.samples() == 1 ? " sample" : " samples") + " of " +
                       fmt(static_cast<double>(n.interval_ns()) / 1e3) + " us inside its " +
                       std::to_string(n.executions()) + (n.executions() == 1 ? " execution" : " executions") +
                       ", over one launch of graph " + std::to_string(g.graph_id()) + " (exec " +
                       std::to_string(g.exec_id()) + "), not replayed), not the graph's; this kernel is " +
                       fmt(100 * g.share_of_graph()) + "% of the graph's kernel time";
    put_wrapped_text(out, "    counters  ", "              ", text);
    return;
  }
  double min_ns = 0, max_ns = 0;
  for (const v1::AssembledLaunch& a : k.assembled_launches()) {
    if (!(a.duration_ns() > 0)) continue;
    min_ns = min_ns == 0 ? a.duration_ns() : std::min(min_ns, a.duration_ns());
    max_ns = std::max(max_ns, a.duration_ns());
  }
  std::string text = "the whole graph " + std::to_string(g.graph_id()) + "'s (exec " + std::to_string(g.exec_id()) +
                     "), as one workload, over " + std::to_string(g.replays_profiled()) +
                     (g.replays_profiled() == 1 ? " of its launches (the application's own, not replayed"
                                                : " of its launches (the application's own, none replayed");
  if (max_ns > 0) {
    text += "; " + short_duration(min_ns);
    if (max_ns > min_ns) text += "\u2013" + short_duration(max_ns);
    text += " each";
  }
  text += "); this kernel is " + fmt(100 * g.share_of_graph()) + "% of the graph's kernel time";
  if (g.other_families() > 0) {
    text += ", " + std::to_string(g.other_families()) + (g.other_families() == 1 ? " other kernel" : " other kernels") +
            " the rest";
  }
  if (g.mean_replay_ns() > 0) text += "; the graph takes " + short_duration(g.mean_replay_ns()) + " per replay";
  put_wrapped_text(out, "    counters  ", "              ", text);
}

// Always-on: the family's "always_on_complete" notice, if the file has one: by family id, or in
// files whose notices carry none (agents before 2026-11-30) by the kernel name the message starts
// with.
const v1::Notice* complete_notice(const ReadResult& file, const v1::KernelProfile& k, const std::string& function) {
  for (const v1::Record& r : file.file.records()) {
    if (!r.has_notice() || r.notice().code() != "always_on_complete") continue;
    const v1::Notice& n = r.notice();
    const bool match = n.family_id() != 0 ? k.family_id() == n.family_id()
                                          : n.message().rfind(function + ": diagnosis complete ", 0) == 0;
    if (match) return &n;
  }
  return nullptr;
}

// Whether the verdict of an assembled diagnosis is final: the agent says so once, when the route
// reads no counter a single-pass group could still give. Until then the verdict may change.
void render_completeness(std::ostringstream& out, const ReadResult& file, const v1::KernelProfile& k,
                         const std::string& function) {
  if (k.has_application_replay()) {
    // Application replay: the record says it, and another run of the program is what adds more.
    const v1::ApplicationReplay& a = k.application_replay();
    if (a.counters_complete()) {
      out << "    complete  yes, over " << a.runs() << (a.runs() == 1 ? " run" : " runs") << "\n";
      return;
    }
    put_wrapped_text(out, "    complete  ", "              ",
                "not yet: " + std::to_string(a.counters_wanted()) +
                    (a.counters_wanted() == 1 ? " counter" : " counters") +
                    " the route reads are in metric groups no run has collected; another run of the program "
                    "adds them (`cutriage run --replay application` runs it until none is left)");
    return;
  }
  const v1::Notice* n = complete_notice(file, k, function);
  if (n == nullptr) {
    put_wrapped_text(out, "    complete  ", "              ",
                "not yet: the route reads counters this file does not hold yet; the verdict may change with "
                "them");
    return;
  }
  // "<function>: diagnosis complete 752.0 s after the agent started, from ...": the time part.
  const std::string& m = n->message();
  const std::string key = "diagnosis complete ";
  std::string when;
  if (size_t at = m.find(key); at != std::string::npos) {
    at += key.size();
    when = m.substr(at, m.find(", from", at) - at);
  }
  out << "    complete  yes" << (when.empty() ? "" : ", " + when) << "\n";
}

}  // namespace

void render_collection(std::ostringstream& out, const ReadResult& file, const v1::KernelProfile& k) {
  if (k.has_pm_window()) {
    // Always-on's PM routing window: the kernel's own samples over its ordinary launches, which a
    // record with its complete range-profiler counters supersedes later.
    const v1::PmWindowScope& w = k.pm_window();
    const double span_ms = w.window_end_ns() > w.window_start_ns()
                               ? static_cast<double>(w.window_end_ns() - w.window_start_ns()) / 1e6
                               : 0.0;
    put_wrapped_text(out, "    counters  ", "              ",
                "its own PM samples (" + std::to_string(w.samples()) + (w.samples() == 1 ? " sample" : " samples") +
                    " of " + fmt(static_cast<double>(w.interval_ns()) / 1e3) + " us inside " +
                    std::to_string(w.executions()) + (w.executions() == 1 ? " execution" : " executions") +
                    " in one PM window of " + fmt(span_ms) +
                    " ms over the application's own launches, none replayed); the range profiler's counters, "
                    "once complete, supersede them");
    out << "    complete  not yet: routed from PM samples; the range profiler's groups add the deeper decisions\n";
    return;
  }
  if (k.has_graph_scope()) {
    render_graph_scope(out, k);
  } else if (k.assembled_launches_size() > 0) {
    render_assembled(out, k);
    render_completeness(out, file, k, std::string(lookup(file, k.function_name_iid())));
  }
}

}  // namespace cutriage::tools
