#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "cutriage/base/demangle.h"
#include "cutriage/base/numbers.h"
#include "cutriage/triage/rule.h"
#include "pc_samples.h"
#include "report_collection.h"
#include "report_model.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
using namespace model;  // the numbers, the kernels and the verdict as every view reads them

namespace {

// A statistic of the families table: "-" when there is none (every launch was profiled).
std::string stat_duration(double ns) { return ns > 0 ? short_duration(ns) : "-"; }

// `text` after `first`, broken at spaces into lines of at most kReportWidth columns; continuation
// lines start with `rest` (usually spaces aligning them under the text). A word longer than a
// line stays whole. Long agent details (why a graph kernel was not profiled) stay readable
// without being cut.
void put_wrapped(std::ostringstream& out, const std::string& first, const std::string& rest,
                 std::string_view text) {
  out << wrap_text(first, rest, text, kReportWidth);
}

// `s` in `width` columns, cut at the front ("…/src/stencil.cu:42"): a location's end (file name
// and line) is what identifies it.
std::string fit_tail(std::string_view s, size_t width) {
  size_t w = text_width(s);
  if (w <= width) return std::string(s) + std::string(width - w, ' ');
  size_t skip = w - (width - 1);  // code points to drop
  size_t i = 0;
  for (size_t seen = 0; i < s.size(); ++i) {
    bool starts = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts && seen++ == skip) break;
  }
  return "\u2026" + std::string(s.substr(i));
}

// PC sampling of the kernel (KernelProfile.pc_sampling): the source lines holding the most stall
// samples, each with its share of the kernel's stall samples, its dominant stall reason and the
// instruction of its hottest PC; then the totals and what limits them (dropped samples, a full
// hardware buffer, no line table, no disassembler).
constexpr size_t kTextSourceLines = 5;
constexpr size_t kSourceLinesVerbose = 20;
void render_source_lines(std::ostringstream& out, const ReadResult& file, const v1::KernelProfile& k,
                         SassResolver& sass, const ReportOptions& options) {
  const v1::PcSampling& pcs = k.pc_sampling();
  const std::string label = "    source    ";
  const std::string indent(label.size(), ' ');
  const uint64_t launch = pcs.from_launch_index() != 0 ? pcs.from_launch_index() : k.launch_index();
  const std::string what = "PC sampling" + (launch != 0 ? " of launch #" + std::to_string(launch) : std::string());
  if (!pcs.error().empty()) {
    put_wrapped(out, label, indent, what + " failed: " + pcs.error());
    return;
  }
  const PcSamplingView view = read_pc_sampling(file, pcs);
  const uint64_t total = pcs.total_samples() != 0 ? pcs.total_samples() : view.samples;
  std::string totals = what + ": " + with_commas(total) + " samples (" + with_commas(view.stall_samples) + " stalls)";
  if (pcs.dropped_samples() != 0) {
    totals += ", " + with_commas(pcs.dropped_samples()) + " dropped (the sampler's buffers filled: shares are approximate)";
  }
  if (pcs.sampling_period_log2() != 0) {
    totals += ", one sample per SM every 2^" + std::to_string(pcs.sampling_period_log2()) + " cycles";
  }
  if (pcs.hardware_buffer_full()) totals += ", hardware buffer full";
  put_wrapped(out, label, indent, totals);
  if (view.samples == 0) {
    put_wrapped(out, indent, indent, "no samples were taken on this launch");
  } else if (view.stall_samples == 0) {
    put_wrapped(out, indent, indent,
                "no stall samples: every sample found the warp issuing or eligible (selected, not_selected)");
  } else {
    const std::vector<SourceLineSamples> lines = source_lines(view);
    const size_t limit = std::min(lines.size(), options.verbose ? kSourceLinesVerbose : kTextSourceLines);
    constexpr size_t kLocationWidth = 36;
    out << indent << " #  " << fit("location", kLocationWidth) << right("stalls", 8) << right("share", 8)
        << "  dominant stall\n";
    const std::string kernel_mangled(lookup(file, k.mangled_name_iid()));
    for (size_t i = 0; i < limit; ++i) {
      const SourceLineSamples& line = lines[i];
      if (line.stall_samples == 0) break;  // the rest are issue states only
      const SampledInstruction& hottest = view.pcs[line.hottest];
      // "file:line" keeps its end when cut (the file name and line); "pc 0x.. in fn" its start.
      const std::string location = line.file.empty()
                                       ? fit("pc " + pc_hex(line.pc_offset) + " in " + function_label(line.function),
                                             kLocationWidth)
                                       : fit_tail(line.file + ":" + std::to_string(line.line), kLocationWidth);
      out << indent << right(std::to_string(i + 1), 2) << "  " << location
          << right(with_commas(line.stall_samples), 8)
          << right(percent(double(line.stall_samples), double(view.stall_samples)), 8);
      if (!line.stalls.empty()) {
        out << "  " << line.stalls.front().first << " "
            << percent(double(line.stalls.front().second), double(line.stall_samples));
      }
      out << "\n";
      std::string text = hottest.sass.empty() ? sass.instruction(file, pcs, hottest.function, hottest.pc_offset)
                                              : hottest.sass;
      std::string where = pc_hex(hottest.pc_offset);
      if (!line.file.empty() && !hottest.function.empty() && hottest.function != kernel_mangled) {
        where += " in " + function_label(hottest.function);
      }
      if (!hottest.inlined_file.empty()) {
        // Attributed to the calling line; say where the instruction's own code is.
        const size_t slash = hottest.inlined_file.find_last_of('/');
        where += " (inlined from " +
                 (slash == std::string::npos ? hottest.inlined_file : hottest.inlined_file.substr(slash + 1)) + ":" +
                 std::to_string(hottest.inlined_line) + "; calling line estimated)";
      }
      const std::string sub = indent + "    ";
      if (!text.empty()) {
        where.append("  ").append(text);
        std::string row = fit(where, kReportWidth - sub.size());
        row.erase(row.find_last_not_of(' ') + 1);  // fit() pads; the row ends the line
        out << sub << row << "\n";
      } else if (!line.file.empty()) {
        out << sub << "pc " << where << "\n";  // the line's hottest PC, without its SASS
      }
    }
    if (lines.size() > limit) {
      uint64_t rest = 0;
      for (size_t i = limit; i < lines.size(); ++i) rest += lines[i].stall_samples;
      if (rest != 0) {
        const size_t more = lines.size() - limit;
        const char* more_text = view.has_line_info ? (more == 1 ? " more line, " : " more lines, ")
                                                   : (more == 1 ? " more PC, " : " more PCs, ");
        out << indent << "(" << with_commas(more) << more_text
            << percent(double(rest), double(view.stall_samples)) << " of the stall samples"
            << (options.verbose ? "" : "; --verbose lists 20") << ")\n";
      }
    }
  }
  if (!pcs.has_line_info()) put_wrapped(out, indent, indent, "note: built without -lineinfo: showing SASS offsets");
  for (const std::string& note : sass.take_notes()) put_wrapped(out, indent, indent + "      ", "note: " + note);
}

// What profiling cost the application's thread, by phase (--verbose).
// Each phase's parts follow it in parentheses, those that were measured (not 0).
std::string cost_text(const v1::ProfileCost& c) {
  auto parts = [](std::initializer_list<std::pair<const char*, uint64_t>> list) {
    std::string text;
    for (const auto& [name, ns] : list) {
      if (ns == 0) continue;
      text += (text.empty() ? " (" : ", ") + std::string(name) + " " + short_duration(double(ns));
    }
    return text.empty() ? text : text + ")";
  };
  const v1::RangeProfilerSteps& r = c.range_steps();
  std::string text = "setup " + short_duration(double(c.setup_ns())) + parts({{"plan", c.plan_ns()}}) + ", start " +
                     short_duration(double(c.start_ns())) +
                     parts({{"enable", r.enable_ns()},
                            {"counter-data image", r.counter_data_ns()},
                            {"set config", r.set_config_ns()},
                            {"cupti start", r.start_ns()}}) +
                     ", launch " + short_duration(double(c.launch_ns()));
  if (c.passes() > 1) text += " (" + std::to_string(c.passes()) + " passes)";
  text += ", stop " + short_duration(double(c.stop_ns())) +
          parts({{"cupti stop", r.stop_ns()}, {"decode", r.decode_ns()}, {"evaluate", c.evaluate_ns()}}) +
          ", triage " + short_duration(double(c.triage_ns()));
  if (r.disable_ns() > 0) text += ", disable " + short_duration(double(r.disable_ns())) + " (within start or stop)";
  return text;
}

void render_kernel(std::ostringstream& out, const ReadResult& file, const v1::KernelProfile& k,
                   size_t rank, const ReportOptions& options, SassResolver& sass) {
  const std::string name = kernel_name(file, k);
  const v1::Diagnosis& d = k.diagnosis();

  out << "[" << rank << "] " << terminal_safe(name, false) << "\n";
  out << "    launch    ";
  if (k.has_launch()) {
    out << "grid " << dim(k.launch().grid()) << ", block " << dim(k.launch().block());
    if (k.launch().registers_per_thread() != 0) out << ", " << k.launch().registers_per_thread() << " regs";
    uint32_t smem = k.launch().static_shared_bytes() + k.launch().dynamic_shared_bytes();
    if (smem != 0) out << ", " << smem << " B smem";
  } else {
    out << "(launch configuration unknown)";
  }
  if (k.duration_ns() > 0) out << "; " << duration(k.duration_ns()) << " profiled";
  if (k.unprofiled_duration_ns() > 0) out << ", " << duration(k.unprofiled_duration_ns()) << " unprofiled";
  if (k.time_share() > 0) out << "; " << fmt(100 * k.time_share()) << "% of captured time";
  out << "\n";
  if (const std::string collected = collected_text(k); !collected.empty()) out << "    collected " << collected << "\n";
  if (options.verbose && k.has_cost()) out << "    cost      " << cost_text(k.cost()) << "\n";
  if (options.verbose && k.has_first_pass_cost()) {
    out << "    1st pass  " << cost_text(k.first_pass_cost()) << "\n";
  }
  if (options.verbose && k.pc_sampling().has_cost()) {
    out << "    pc cost   " << cost_text(k.pc_sampling().cost()) << "\n";
  }
  render_collection(out, file, k);
  if (k.rejected_metrics_size() > 0) {
    out << "    not collectable on this GPU: ";
    for (int i = 0; i < k.rejected_metrics_size(); ++i) out << (i ? ", " : "") << k.rejected_metrics(i);
    out << "\n";
  }

  out << "    verdict   " << verdict_text(d) << "\n";
  // When Decision 7's finding is the verdict itself, the headline already says it.
  if (d.at_hardware_limit() && d.primary_rule_id() != "d7.limiter_near_peak") {
    out << "              (" << hardware_limit_text(d) << ")\n";
  }

  out << "    trust     " << enum_words(v1::Trust_Name(d.trust()), "TRUST_");
  // Notes can be long (lists of metrics); the report shows each one's start, --verbose all of it.
  for (int i = 0; i < d.trust_notes_size(); ++i) {
    std::string note = d.trust_notes(i);
    if (!options.verbose && note.size() > 110) note = note.substr(0, 107) + "...";
    out << "\n              - " << note;
  }
  out << "\n";
  // Source mapping apart from trust: a kernel without a line table is not a doubtful measurement.
  for (int i = 0; i < d.source_notes_size(); ++i) {
    std::string note = d.source_notes(i);
    if (!options.verbose && note.size() > 110) note = note.substr(0, 107) + "...";
    out << (i == 0 ? "    source    " : "              ") << terminal_safe(note, false) << "\n";
  }

  out << "    path      ";
  const std::vector<PathStep> path = decision_path(d);
  for (size_t i = 0; i < path.size(); ++i) {
    if (i != 0) out << " -> ";
    out << path[i].label << " (" << path[i].fired << " fired";
    if (path[i].not_evaluated != 0) out << ", " << path[i].not_evaluated << " n/e";
    out << ")";
  }
  out << "\n";

  const v1::Check* primary = find_primary(d);
  if (primary != nullptr) {
    out << "    evidence  ";
    bool first = true;
    for (const v1::Evidence* e : verdict_evidence(*primary)) {
      if (!first) out << "\n              ";
      out << e->metric() << " = " << fmt(e->value()) << (e->unit().empty() ? "" : " " + e->unit())
          << (e->derived() ? " (derived)" : "") << (e->deciding() ? "  <- deciding" : "");
      first = false;
    }
    for (const auto& t : primary->thresholds()) {
      out << "\n              threshold " << t.name() << " = " << fmt(t.value());
    }
    out << "\n";
  }
  if (!d.library().empty()) {
    out << "    library   " << terminal_safe(d.library(), false)
        << " kernel, recognized by name: the next action is for its caller\n";
  }
  if (!d.next_action().empty()) out << "    next      " << d.next_action() << "\n";
  if (const GainText gain = gain_text(d, primary); !gain.kernel.empty() || !gain.run.empty()) {
    out << "    gain      " << gain.kernel;
    if (!gain.run.empty()) out << (gain.kernel.empty() ? "" : "\n              ") << gain.run;
    out << "\n";
  }
  if (k.has_pc_sampling()) render_source_lines(out, file, k, sass, options);
  // Other findings, one line each: what else fired besides the verdict. Decision 0's notes are
  // under "trust" and Decision 2's classifiers are the path itself, so they are left out here.
  bool header = false;
  int shown = 0, hidden = 0;
  for (const auto& visit : d.path()) {
    if (visit.decision() == v1::DECISION_D0_TRUST || visit.decision() == v1::DECISION_D2_REGIME) continue;
    for (const auto& c : visit.checks()) {
      if (c.outcome() != v1::OUTCOME_FIRED || &c == primary) continue;
      if (!options.verbose && shown == 6) {
        ++hidden;
        continue;
      }
      if (!header) {
        out << "    also\n";
        header = true;
      }
      std::string text =
          c.has_finding() && !c.finding().summary().empty() ? c.finding().summary() : c.reason();
      if (!options.verbose && text.size() > 140) text = text.substr(0, 137) + "...";
      out << "      - [" << c.rule_id() << "] " << text << "\n";
      ++shown;
    }
  }
  if (hidden > 0) out << "      (" << hidden << " more with --verbose)\n";
  if (options.verbose) {
    for (const auto& visit : d.path()) {
      out << "    " << decision_label(visit.decision());
      if (!visit.entered_because().empty()) out << " - " << visit.entered_because();
      out << "\n";
      for (const auto& c : visit.checks()) {
        out << "      " << enum_words(v1::Outcome_Name(c.outcome()), "OUTCOME_") << "  " << c.rule_id();
        if (!c.reason().empty()) out << ": " << c.reason();
        out << "\n";
      }
    }
  }
  out << "\n";
}

// ---- application view (TraceSummary) --------------------------------------------------------

constexpr const char* kIndent = "  ";

std::string ceiling_text(const v1::FamilyStats& fs) {
  char buf[32];
  double c = fs.amdahl_ceiling();
  if (c > 0 && std::isfinite(c)) {
    std::snprintf(buf, sizeof buf, c < 10 ? "%.2fx" : c < 100 ? "%.1fx" : "%.0fx", c);
    return buf;
  }
  // 0 is written for the only family of the run (the ceiling is infinite) and for unknown.
  return fs.time_share() >= 0.999 ? "inf" : "-";
}

std::string policy_text(const v1::SelectionPolicy& p) {
  std::string text;
  switch (p.mode()) {
    case v1::SelectionPolicy::MODE_TOP:
      text = p.top_k() == 1 ? std::string("the top family by GPU time")
                            : "the top " + std::to_string(p.top_k()) + " families by GPU time";
      break;
    case v1::SelectionPolicy::MODE_ALL: text = "every kernel"; break;
    case v1::SelectionPolicy::MODE_SHARE:
      text = "families with at least " + fmt(100 * p.min_share()) + "% of GPU time";
      break;
    case v1::SelectionPolicy::MODE_NONE: text = "none (trace only)"; break;
    default: return {};
  }
  if (!p.nvtx_include().empty()) text += ", under NVTX '" + p.nvtx_include() + "'";
  if (!p.nvtx_exclude().empty()) text += ", not under NVTX '" + p.nvtx_exclude() + "'";
  return text;
}

// Where the ranking came from when an earlier run made it (CUTRIAGE_RANKING, `run --rerun`), and
// whether this run's trace was that run's: only then are the verdicts of the kernels it ranked.
void render_ranking_source(std::ostringstream& out, const v1::RankingSource& r) {
  out << "ranking: from an earlier run of this program (pid " << r.pid() << ", "
      << terminal_safe(r.path(), false) << "): " << plural(r.families_selected(), "family", "families")
      << " profiled from the first launch\n";
  if (r.trace_matches()) {
    out << kIndent << "this run's trace matches it: the same " << plural(r.families_compared(), "family", "families")
        << ", each launched as often\n";
    return;
  }
  out << kIndent << "this run's trace differs from it: " << r.families_differing() << " of "
      << plural(r.families_compared(), "family", "families") << " ("
      << fmt(100 * r.matching_time_share()) << "% of its GPU time in families that match)\n";
  for (const std::string& d : r.differences()) out << kIndent << "  " << terminal_safe(d, false) << "\n";
  if (r.families_differing() > static_cast<uint32_t>(r.differences_size())) {
    out << kIndent << "  ... and " << r.families_differing() - static_cast<uint32_t>(r.differences_size())
        << " more\n";
  }
}

void render_device(std::ostringstream& out, const v1::SessionHeader* session, const v1::DeviceTimeline& d) {
  const double whole = d.last_end_ns() > d.first_start_ns() ? double(d.last_end_ns() - d.first_start_ns()) : 0.0;
  // With a duty-cycled trace the paused time is unknown: busy and idle are shares of the rest.
  double span = whole > d.untraced_ns() ? whole - d.untraced_ns() : 0.0;
  double idle = span > d.busy_ns() ? span - d.busy_ns() : 0.0;
  out << kIndent << gpu_label(session, d.device()) << ": span " << short_duration(whole);
  if (d.untraced_ns() > 0) {
    out << " (" << short_duration(span) << " traced; the trace was paused for the rest, CUTRIAGE_TRACE_DUTY)";
  }
  // The session checks below leave the agent's own profiling out of their idle share; this line
  // keeps it in, and says so, so the two numbers never read as a contradiction.
  out << ", busy " << short_duration(d.busy_ns()) << " (" << percent(d.busy_ns(), span) << "), idle "
      << short_duration(idle) << " (" << percent(idle, span) << ", with profiling)\n";
  out << kIndent << "    " << plural(d.kernels(), "kernel", "kernels") << ", busy "
      << short_duration(d.kernel_busy_ns()) << "\n";
  if (d.copies() != 0) {
    out << kIndent << "    " << plural(d.copies(), "copy", "copies") << ", busy " << short_duration(d.copy_busy_ns())
        << "; " << short_duration(d.copy_only_ns()) << " serialized with compute ("
        << percent(d.copy_only_ns(), span) << " of span)";
    if (d.pageable_copy_ns() > 0) out << ", " << short_duration(d.pageable_copy_ns()) << " pageable";
    out << "\n";
  }
  if (d.gaps() != 0) {
    out << kIndent << "    " << plural(d.gaps(), "idle gap", "idle gaps") << ", " << short_duration(d.gap_ns())
        << " in all";
    if (d.largest_gaps_size() > 0) {
      const v1::Interval& g = d.largest_gaps(0);
      double len = g.end_ns() > g.start_ns() ? double(g.end_ns() - g.start_ns()) : 0.0;
      double at = g.start_ns() > d.first_start_ns() ? double(g.start_ns() - d.first_start_ns()) : 0.0;
      out << "; longest " << short_duration(len) << " at +" << short_duration(at);
    }
    out << "\n";
  }
  if (d.launch_bound_size() > 0) {
    const v1::LaunchBoundStretch& s = d.launch_bound(0);
    double len = s.end_ns() > s.start_ns() ? double(s.end_ns() - s.start_ns()) : 0.0;
    out << kIndent << "    " << plural(static_cast<uint64_t>(d.launch_bound_size()), "launch-bound stretch",
                                       "launch-bound stretches")
        << "; longest: " << with_commas(s.kernels()) << " kernels of " << short_duration(s.mean_kernel_ns())
        << " on average in " << short_duration(len) << ", GPU busy " << percent(s.busy_ns(), len) << "\n";
  }
}

void render_finding(std::ostringstream& out, const v1::Check& c, const ReportOptions& options) {
  std::string text = c.has_finding() && !c.finding().summary().empty() ? c.finding().summary() : c.reason();
  if (text.empty()) text = c.title();
  put_wrapped(out, std::string(kIndent) + "FIRED  [" + c.rule_id() + "] ", std::string(kIndent) + "       ", text);
  // The session checks open their evidence with the device's span, busy and idle time (the same
  // in every finding of a device); without --verbose the check's own numbers go first, five in all.
  std::vector<int> shown;  // indices into c.evidence()
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < c.evidence_size(); ++i) {
      const bool context = c.evidence(i).metric().rfind("cutriage__device", 0) == 0;
      if ((pass == 0) == context) continue;
      if (!options.verbose && shown.size() == 5) break;
      shown.push_back(i);
    }
  }
  std::sort(shown.begin(), shown.end());  // back in the check's order
  for (size_t i = 0; i < shown.size(); ++i) {
    const v1::Evidence& e = c.evidence(shown[i]);
    out << kIndent << (i == 0 ? "       evidence  " : "                 ") << e.metric() << " = ";
    if (e.unit() == "nsecond" || e.unit() == "ns") {
      out << short_duration(e.value());
    } else {
      out << fmt(e.value()) << (e.unit().empty() ? "" : " " + e.unit());
    }
    out << "\n";
  }
  for (const auto& t : c.thresholds()) {
    out << kIndent << "                 threshold " << t.name() << " = " << fmt(t.value()) << "\n";
  }
  if (c.has_finding()) {
    const v1::Finding& f = c.finding();
    if (!f.next_action().empty()) {
      put_wrapped(out, std::string(kIndent) + "       next      ", std::string(kIndent) + std::string(17, ' '),
                  f.next_action());
    }
    if (f.estimated_speedup() > 0) {
      std::string gain = "up to " + fmt(f.estimated_speedup()) + "x on the run";
      if (!f.estimate_basis().empty()) gain += " (" + f.estimate_basis() + ")";
      put_wrapped(out, std::string(kIndent) + "       gain      ", std::string(kIndent) + std::string(17, ' '), gain);
    }
  }
}

// "graph 2 node 8589934592 (captured under NVTX 'forward/linear1'), node ..." for a family.
std::string graph_nodes_text(const ReadResult& file, const v1::FamilyStats& fs, const ReportOptions& options) {
  std::string text;
  int shown = 0;
  // Indexed: GCC 12 sees a null dereference in the range-for over a repeated message field.
  for (int i = 0; i < fs.graph_nodes_size(); ++i) {
    const v1::GraphNodeRef& n = fs.graph_nodes(i);
    if (!options.verbose && shown == 3) break;
    if (shown != 0) text += ", ";
    text += "graph " + std::to_string(n.graph_id()) + " node " + std::to_string(n.node_id());
    std::string how = n.captured() ? "captured" : n.created_node_id() != 0 ? "added with the graph API" : "";
    if (n.capture_nvtx_path_iid() != 0) how += std::string(how.empty() ? "" : " ") + "under NVTX '" +
                                               std::string(lookup(file, n.capture_nvtx_path_iid())) + "'";
    if (!how.empty()) text += " (" + how + ")";
    ++shown;
  }
  if (shown < fs.graph_nodes_size()) text += " (+" + std::to_string(fs.graph_nodes_size() - shown) + " more)";
  return text;
}

// Each CUDA graph as one workload: replays, time per replay, idle time between its nodes, and the
// families inside it.
void render_graphs(std::ostringstream& out, const ReadResult& file, const v1::TraceSummary& ts,
                   const ReportOptions& options) {
  out << "CUDA graphs as workloads (counters of a whole graph launch, never of one node: docs/graphs.md)\n";
  const int limit = options.verbose ? ts.graphs_size() : std::min(ts.graphs_size(), 5);
  for (int i = 0; i < limit; ++i) {
    const v1::GraphStats& g = ts.graphs(i);
    const double replays = g.replays() > 0 ? static_cast<double>(g.replays()) : 1.0;
    put_wrapped(out, std::string(kIndent) + "graph " + std::to_string(g.graph_id()) + ": ",
                std::string(kIndent) + "    ",
                with_commas(g.replays()) + " replays, " + short_duration(g.span_ns() / replays) + " each, " +
                    with_commas(g.kernel_nodes()) + " kernel nodes; " +
                    percent(g.kernel_busy_ns(), ts.total_kernel_ns()) + " of kernel time; idle between nodes " +
                    short_duration(g.idle_between_nodes_ns() / replays) + " per replay (" +
                    percent(g.idle_between_nodes_ns(), g.span_ns()) + ")");
    int shown = 0;
    for (int j = 0; j < g.families_size(); ++j) {
      const v1::GraphFamilyTime& f = g.families(j);
      if (!options.verbose && shown == 3) break;
      out << kIndent << "  " << right(percent(f.total_ns(), g.kernel_busy_ns()), 6) << "  "
          << fit(family_name(file, f.family_id()), 60) << "\n";
      ++shown;
    }
    if (shown < g.families_size()) {
      out << kIndent << "  ... " << (g.families_size() - shown) << " more families\n";
    }
  }
  if (limit < ts.graphs_size()) out << kIndent << "... " << (ts.graphs_size() - limit) << " more graphs\n";
  out << "\n";
}

void render_application_view(std::ostringstream& out, const ReadResult& file, const v1::TraceSummary& ts,
                             const v1::SessionHeader* session,
                             const std::vector<const v1::KernelProfile*>& current,
                             const std::map<const v1::KernelProfile*, size_t>& sections,
                             const ReportOptions& options) {
  out << "application view: " << with_commas(ts.kernel_executions()) << " kernel executions, "
      << with_commas(ts.copy_executions()) << " copies traced; " << short_duration(ts.total_kernel_ns())
      << " of kernel time\n";
  if (ts.dropped_records() != 0) {
    out << "warning: " << with_commas(ts.dropped_records())
        << " trace records were dropped by CUPTI; the numbers below miss them\n";
  }
  if (ts.late_records() != 0) {
    out << "note: " << with_commas(ts.late_records())
        << " records arrived late; their overlap with earlier activity is approximated as busy time\n";
  }
  if (ts.timeline_kernel_events() != 0 && ts.timeline_kernel_events() < ts.kernel_executions()) {
    out << "note: the timeline in the file holds " << with_commas(ts.timeline_kernel_events())
        << " of the kernel executions (capped); the statistics cover all of them\n";
  }
  if (std::string policy = policy_text(ts.selection()); !policy.empty()) out << "profiled: " << policy << "\n";
  if (ts.has_ranking_source()) render_ranking_source(out, ts.ranking_source());
  for (const v1::DeviceTimeline& d : ts.devices()) render_device(out, session, d);
  out << "\n";

  // 98 columns: names are cut to fit (the full name follows on its own line).
  constexpr size_t kNameWidth = 32;
  out << "kernel families by GPU time (durations leave out profiled launches)\n";
  out << right("#", 4) << "  " << fit("family", kNameWidth) << right("launches", 9) << right("total", 9)
      << right("mean", 9) << right("p50", 9) << right("p95", 9) << right("share", 7) << right("ceiling", 8)
      << "\n";
  const size_t limit = options.verbose || options.max_families == 0
                           ? static_cast<size_t>(ts.families_size())
                           : std::min(options.max_families, static_cast<size_t>(ts.families_size()));
  for (size_t i = 0; i < limit; ++i) {
    const v1::FamilyStats& fs = ts.families(static_cast<int>(i));
    const std::string name = terminal_safe(family_name(file, fs.family_id()), false);
    out << right(std::to_string(i + 1), 4) << "  " << fit(name, kNameWidth) << right(with_commas(fs.launches()), 9)
        << right(stat_duration(fs.total_ns()), 9) << right(stat_duration(fs.mean_ns()), 9)
        << right(stat_duration(fs.p50_ns()), 9) << right(stat_duration(fs.p95_ns()), 9)
        << right(percent(fs.time_share(), 1.0), 7) << right(ceiling_text(fs), 8) << "\n";
    const std::string indent = "        ";
    if (text_width(name) > kNameWidth) out << indent << "name: " << name << "\n";
    const v1::KernelProfile* k = family_profile(current, fs);
    const bool profiled = k != nullptr && (k->status() == v1::PROFILE_STATUS_PROFILED ||
                                           k->status() == v1::PROFILE_STATUS_UNSPECIFIED);
    if (profiled) {
      std::string verdict = verdict_text(k->diagnosis());
      if (auto it = sections.find(k); it != sections.end()) verdict += " (see [" + std::to_string(it->second) + "])";
      put_wrapped(out, indent, indent + "  ", verdict);
      if (!k->diagnosis().next_action().empty()) {
        put_wrapped(out, indent + "next: ", indent + "      ", k->diagnosis().next_action());
      }
    } else {
      put_wrapped(out, indent, indent + "  ", not_profiled_text(k, fs));
    }
    if (fs.nvtx_path_iids_size() > 0) {
      std::string paths;
      int shown = 0;
      for (uint64_t iid : fs.nvtx_path_iids()) {
        if (!options.verbose && shown == 2) break;
        paths += (shown != 0 ? ", " : "") + terminal_safe(lookup(file, iid), false);
        ++shown;
      }
      if (shown < fs.nvtx_path_iids_size()) paths += " (+" + std::to_string(fs.nvtx_path_iids_size() - shown) + " more)";
      put_wrapped(out, indent + "nvtx: ", indent + "      ", paths);
    }
    if (fs.graph_nodes_size() > 0) put_wrapped(out, indent + "graph: ", indent + "       ", graph_nodes_text(file, fs, options));
    if (options.verbose && (fs.replayed_launches() != 0 || fs.graph_launches() != 0 || fs.concurrent_launches() != 0)) {
      out << indent << "launches: " << with_commas(fs.replayed_launches()) << " profiled, "
          << with_commas(fs.graph_launches()) << " from CUDA graphs, " << with_commas(fs.concurrent_launches())
          << " concurrent with another kernel; min " << short_duration(fs.min_ns()) << ", max "
          << short_duration(fs.max_ns()) << "\n";
    }
  }
  if (limit < static_cast<size_t>(ts.families_size())) {
    double rest_ns = 0;
    for (int i = static_cast<int>(limit); i < ts.families_size(); ++i) rest_ns += ts.families(i).total_ns();
    out << "     ... " << with_commas(ts.families_size() - limit) << " more families, "
        << percent(rest_ns, ts.total_kernel_ns()) << " of kernel time (--verbose lists them)\n";
  }
  out << "\n";

  if (ts.graphs_size() > 0) render_graphs(out, file, ts, options);

  if (ts.findings_size() > 0) {
    out << "session findings (Decision 1 and 2A on the timeline)\n";
    std::vector<const v1::Check*> not_fired;
    for (const v1::Check& c : ts.findings()) {
      if (c.outcome() == v1::OUTCOME_FIRED) render_finding(out, c, options);
    }
    for (const v1::Check& c : ts.findings()) {
      if (c.outcome() != v1::OUTCOME_NOT_EVALUATED) continue;
      put_wrapped(out, std::string(kIndent) + "not evaluated  [" + c.rule_id() + "] ", std::string(kIndent) + "    ",
                  c.reason());
    }
    for (const v1::Check& c : ts.findings()) {
      if (c.outcome() != v1::OUTCOME_FIRED && c.outcome() != v1::OUTCOME_NOT_EVALUATED) not_fired.push_back(&c);
    }
    if (!not_fired.empty()) {
      out << kIndent << "not fired:";
      if (options.verbose) {
        out << "\n";
        for (const v1::Check* c : not_fired) {
          out << kIndent << "  [" << c->rule_id() << "]" << (c->reason().empty() ? "" : " " + c->reason()) << "\n";
        }
      } else {
        for (size_t i = 0; i < not_fired.size(); ++i) out << (i != 0 ? ", " : " ") << not_fired[i]->rule_id();
        out << "\n";
      }
    }
    out << "\n";
  }
}

}  // namespace

namespace {

// `part` of `whole` as a percentage with three significant digits ("0.123%"): overheads are
// fractions of a percent, which percent()'s one decimal would round to 0.
std::string fine_percent(double part, double whole) {
  if (!(whole > 0) || !std::isfinite(part)) return "-";
  return fmt(100 * part / whole) + "%";
}

// SessionEnd.overhead: what the always-on agent spent of its budget, one paragraph.
void render_overhead(std::ostringstream& out, const v1::OverheadStats& o) {
  std::string text = "budget " + fmt(100 * o.budget_fraction()) + "% of wall time; spent " +
                     short_duration(double(o.spent_ns())) + " of " + short_duration(double(o.wall_ns())) + " (" +
                     fine_percent(double(o.spent_ns()), double(o.wall_ns())) + ")";
  // The budget lets a run spend its share of the wall time plus two allowances (budget.h: the
  // first allowance is spent at once and a launch may leave a debt of one more), so a short run
  // whose up-front work is not yet paid back is over the share but within that bound.
  const double share = o.budget_fraction() * double(o.wall_ns());
  if (o.wall_ns() > 0 && o.budget_fraction() > 0 && double(o.spent_ns()) > share) {
    const double bound = share + 2 * o.budget_fraction() * double(o.window_ns());
    text += std::string(double(o.spent_ns()) <= bound ? ", over the budget's share but within its bound of "
                                                      : ", over the budget's bound of ") +
            short_duration(bound) + " (the share and two allowances)";
  }
  // CUTRIAGE_WARMUP: CUPTI's start-up, paid before the first profile and kept out of the budget.
  if (o.startup_ns() > 0) {
    text += "; CUPTI's start-up " + short_duration(double(o.startup_ns())) + " before the first profile, apart";
  }
  if (o.window_ns() > 0) {
    text += "; worst window " + short_duration(double(o.max_window_spent_ns())) + " of " +
            short_duration(double(o.window_ns())) + " (" +
            fine_percent(double(o.max_window_spent_ns()), double(o.window_ns())) + ")";
  }
  text += "; " + with_commas(o.admitted()) + (o.admitted() == 1 ? " launch" : " launches") + " admitted, " +
          with_commas(o.deferred()) + " deferred; " + with_commas(o.group_switches()) +
          (o.group_switches() == 1 ? " metric-group switch" : " metric-group switches");
  // CUTRIAGE_LAUNCH_GATE: the launch counts above and below miss the launches of that time.
  if (o.launch_callbacks_off_ns() > 0) {
    text += "; launch callbacks off " + short_duration(double(o.launch_callbacks_off_ns())) + " (" +
            fine_percent(double(o.launch_callbacks_off_ns()), double(o.wall_ns())) +
            " of the run: launches then are not counted)";
  }
  put_wrapped(out, "overhead: ", "          ", text);
}

// ControlRequest records: each deep-capture request in its latest state, what it targeted, for how
// long, what came of it (families profiled with replay, by name when the file defines them).
void render_control(std::ostringstream& out, const ReadResult& file) {
  const std::vector<const v1::ControlRequest*> requests = control_requests(file);
  if (requests.empty()) return;
  out << "control: " << plural(requests.size(), "deep-capture request", "deep-capture requests") << "\n";
  const std::string indent = std::string(kIndent) + "    ";  // under the text of "  #1  "
  for (const v1::ControlRequest* c : requests) {
    std::string text = c->target().empty() ? std::string("(no target)") : c->target();
    if (c->window_seconds() > 0) text += " for " + fmt(c->window_seconds()) + " s";
    switch (c->source()) {
      case v1::CONTROL_SOURCE_API: text += " (from the API)"; break;
      case v1::CONTROL_SOURCE_SIGNAL: text += " (from a signal)"; break;
      case v1::CONTROL_SOURCE_FILE: text += " (from a request file)"; break;
      default: break;
    }
    text += ": ";
    switch (c->state()) {
      case v1::CONTROL_STATE_STARTED: text += "started, window open"; break;
      case v1::CONTROL_STATE_COMPLETED: text += "completed"; break;
      case v1::CONTROL_STATE_EXPIRED: text += "expired before every family was captured"; break;
      case v1::CONTROL_STATE_REJECTED: text += "rejected"; break;
      default: text += "state unknown"; break;
    }
    if (c->state() != v1::CONTROL_STATE_REJECTED || c->profiled_launches() != 0) {
      text += "; " + plural(c->profiled_launches(), "launch", "launches") + " profiled with replay";
    }
    put_wrapped(out, std::string(kIndent) + "#" + std::to_string(c->id()) + "  ", indent + "  ", text);
    if (c->family_ids_size() > 0) {
      std::string names;
      for (int i = 0; i < c->family_ids_size(); ++i) names += (i != 0 ? ", " : "") + family_name(file, c->family_ids(i));
      put_wrapped(out, indent + "families: ", indent + "          ", names);
    }
    if (!c->detail().empty()) put_wrapped(out, indent, indent + "  ", c->detail());
  }
}

}  // namespace

std::string render_report(const ReadResult& file, const ReportOptions& options) {
  std::ostringstream out;
  // One kernel per adaptively merged group of launches, as every view counts them (report_model.h).
  const ReportKernels shown = report_kernels(file);
  const std::vector<const v1::KernelProfile*>& current = shown.current;
  const std::vector<const v1::KernelProfile*>& kernels = shown.profiled;
  const std::vector<const v1::KernelProfile*>& unprofiled = shown.unprofiled;
  std::vector<const v1::Notice*> notices;
  const v1::SessionHeader* session = nullptr;
  const v1::SessionEnd* end = nullptr;
  for (const auto& r : file.file.records()) {
    if (r.has_session() && session == nullptr) session = &r.session();
    if (r.has_notice()) notices.push_back(&r.notice());
    if (r.has_session_end()) end = &r.session_end();
  }

  out << "cutriage report";
  if (session != nullptr) {
    if (session->source() == v1::SessionHeader::SOURCE_NCU_CSV) {
      out << " - imported from Nsight Compute CSV";
      if (!session->source_path().empty()) out << " " << session->source_path();
    } else if (!session->command_line().empty()) {
      out << " - " << session->command_line(0);
    }
    out << "\n";
    for (const auto& g : session->gpus()) {
      out << "GPU " << g.device() << ": " << (g.name().empty() ? g.chip() : g.name());
      if (g.sm_count() != 0) out << ", " << g.sm_count() << " SMs";
      if (g.cc_major() != 0) out << ", sm_" << g.cc_major() << g.cc_minor();
      out << "\n";
    }
    if (!session->mode().empty()) out << "mode: " << session->mode() << "\n";
    if (session->settings().replay_mode() == v1::REPLAY_MODE_APPLICATION && session->source() != v1::SessionHeader::SOURCE_NCU_CSV) {
      out << "replay: application (no launch replayed: each profiled launch collected one metric group, and the "
             "counters were assembled over runs of the program)\n";
    }
    if (session->settings().clock_control() == v1::CLOCK_CONTROL_LOCKED) {
      out << "note: clocks were locked while profiling; durations are not the application's\n";
    }
  } else {
    out << "\n";
  }
  for (const v1::Notice* n : notices) {
    out << enum_words(v1::Notice::Severity_Name(n->severity()), "SEVERITY_") << ": " << n->message() << "\n";
  }
  if (end != nullptr) {
    out << "launches: " << end->kernel_launches() << " kernel launches, " << end->profiled_launches()
        << " profiled";
    if (end->failed_profiles() != 0) out << ", " << end->failed_profiles() << " failed";
    if (end->graph_launches() != 0) {
      out << "; " << end->graph_launches() << " CUDA graph launches (their kernels are profiled through their graph)";
    }
    if (end->captured_launches() != 0) {
      out << "; " << end->captured_launches() << " launches into streams under capture (not profiled)";
    }
    out << "\n";
    if (end->has_overhead()) render_overhead(out, end->overhead());
  } else if (file.segment_index > 0) {
    // Rotated output: only the run's last segment ends with a SessionEnd.
    put_wrapped(out, "note: ", "      ",
                "this is segment " + std::to_string(file.segment_index) +
                    " of a rotated run: the run's end (launch counts, trace summary) is in a later "
                    "segment; every complete record of this one is shown");
  } else if (session != nullptr && session->source() == v1::SessionHeader::SOURCE_AGENT) {
    out << "note: the file has no session end: the process did not exit normally; every complete "
           "record is shown\n";
  }
  render_control(out, file);
  // The per-kernel sections' numbers, for the application view to point at.
  std::map<const v1::KernelProfile*, size_t> sections;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (options.max_kernels != 0 && i == options.max_kernels) break;
    sections[kernels[i]] = i + 1;
  }
  if (const v1::TraceSummary* ts = trace_summary(file)) {
    out << "\n";
    render_application_view(out, file, *ts, session, current, sections, options);
  } else if (file.trace_chunks != 0) {
    out << "\n";
    put_wrapped(out, "note: ", "      ",
                file.segment_index > 0
                    ? "this segment has a trace but no trace summary (the run's is in its last segment): "
                      "the application view of this segment is recomputed from its trace, without the "
                      "agent's selection"
                    : "the file has a trace but no trace summary (the process did not exit normally): the "
                      "application view is recomputed from the trace, without the agent's selection");
    if (std::optional<v1::TraceSummary> recomputed = recompute_summary(file)) {
      render_application_view(out, file, *recomputed, session, current, sections, options);
    }
  }
  out << kernels.size() << " profiled kernel" << (kernels.size() == 1 ? "" : "s")
      << ", longest first\n\n";
  size_t rank = 0;
  SassResolver sass(options.nvdisasm);  // one per report: each nvdisasm note is said once
  {
    std::vector<const v1::KernelProfile*> listed(kernels.begin(), kernels.end());
    if (options.max_kernels != 0 && listed.size() > options.max_kernels) listed.resize(options.max_kernels);
    sass.prefetch(file, listed);
  }
  for (const auto* k : kernels) {
    if (options.max_kernels != 0 && rank == options.max_kernels) break;
    render_kernel(out, file, *k, ++rank, options, sass);
  }
  if (!unprofiled.empty()) {
    out << "not profiled\n";
    for (const v1::KernelProfile* k : unprofiled) {
      std::string name(lookup(file, k->function_name_iid()));
      if (name.empty()) name = std::string(lookup(file, k->mangled_name_iid()));
      out << "  - " << terminal_safe(name, false) << ": "
          << enum_words(v1::ProfileStatus_Name(k->status()), "PROFILE_STATUS_");
      if (!k->status_detail().empty()) out << " (" << k->status_detail() << ")";
      out << "\n";
    }
  }
  // Names, NVTX paths, notices and the command line come from the file (and from the profiled
  // program or a CSV before it): none of their bytes may drive the terminal it is printed on.
  return terminal_safe(out.str(), true);
}

std::string verdict_headline(const v1::Diagnosis& diagnosis) { return verdict_text(diagnosis); }

std::string terminal_safe(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned v, bool unicode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, unicode ? "\\u%04x" : "\\x%02x", v);
    out += buf;
  };
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && !(c == '\n' && keep_newlines)) || c == 0x7f) {
        escape(c, false);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // UTF-8: a whole, well-formed sequence is copied, except the C1 controls U+0080..U+009F
    // (U+009B is a CSI to many terminals); any other byte is escaped on its own.
    size_t len = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
    }
    bool whole = len != 0 && i + len <= text.size();
    for (size_t j = 1; whole && j < len; ++j) whole = (static_cast<unsigned char>(text[i + j]) & 0xc0) == 0x80;
    if (!whole) {
      escape(c, false);
      ++i;
      continue;
    }
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (c == 0xc2 && second < 0xa0) {
      escape(second, true);  // 0xc2 0x80..0x9f encodes U+0080..U+009F
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace cutriage::tools
