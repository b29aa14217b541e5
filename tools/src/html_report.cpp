#include "html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "html_svg.h"
#include "html_timeline.h"
#include "output_file.h"
#include "pc_samples.h"
#include "report.h"
#include "report_model.h"
#include "roofline.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
using html::escape;
using html::num;
using namespace model;

namespace {

// The page's whole style: system fonts only (no font files), colours that print.
constexpr const char* kStyle = R"css(
:root { --fg: #1d2329; --muted: #5b6570; --line: #d8dde3; --bg: #ffffff; --panel: #f5f7f9;
        --accent: #2f6fb0; --bad: #b3261e; --warn: #9a6700; --good: #1a7f37; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; color: var(--fg); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 0 0 8px; word-break: break-all; }
h4 { font-size: 14px; margin: 16px 0 6px; }
code, .mono, td.num { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; }
code, .mono { font-size: 12.5px; }
.muted { color: var(--muted); }
table { border-collapse: collapse; margin: 6px 0; }
th, td { text-align: left; padding: 3px 10px 3px 0; vertical-align: top; border-bottom: 1px solid var(--line); }
th { font-weight: 600; color: var(--muted); font-size: 12.5px; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.kv th { width: 190px; border-bottom: none; }
table.kv td { border-bottom: none; }
.name { overflow-wrap: anywhere; }
table.families td.name { min-width: 380px; max-width: 560px; }
.bar { display: inline-block; height: 10px; background: var(--accent); vertical-align: middle; min-width: 1px; }
.notice-warning { color: var(--warn); } .notice-error { color: var(--bad); }
article.kernel { border: 1px solid var(--line); border-radius: 6px; padding: 14px 18px; margin: 16px 0;
                 background: var(--bg); }
.verdict { font-size: 15px; margin: 8px 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 700;
         color: #fff; background: var(--muted); margin-right: 6px; letter-spacing: 0.02em; }
.cls-memory-bound .badge { background: #8250df; } .cls-compute-bound .badge { background: #bc4c00; }
.cls-latency-bound .badge { background: #0969da; } .cls-saturated .badge { background: var(--good); }
.cls-untrusted .badge, .cls-inconclusive .badge { background: #6e7781; }
.cls-undersized .badge, .cls-dispatch-bound .badge { background: #9a6700; }
dl.facts { display: grid; grid-template-columns: 110px 1fr; gap: 3px 12px; margin: 8px 0; }
dl.facts dt { color: var(--muted); font-weight: 600; } dl.facts dd { margin: 0; }
ul.plain { margin: 2px 0; padding-left: 18px; }
.path span.step { display: inline-block; border: 1px solid var(--line); border-radius: 4px; padding: 0 6px;
                  margin: 1px 2px 1px 0; background: var(--panel); font-size: 12.5px; }
.path span.arrow { color: var(--muted); margin: 0 2px; }
table.evidence tr.deciding td { font-weight: 700; background: #fff8c5; }
table.evidence td.metric { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; word-break: break-all; }
.tag { font-size: 11px; color: var(--muted); border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; margin-left: 4px; }
.deciding .tag { color: var(--fg); border-color: #d4a72c; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; margin-top: 8px; }
.chart-note { max-width: 560px; font-size: 12.5px; color: var(--muted); }
svg text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: var(--fg); }
svg .axis { stroke: #8c959f; stroke-width: 1; } svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg .roof { fill: none; stroke: #cf222e; stroke-width: 2; } svg .roof.fp64 { stroke: #bc4c00; stroke-dasharray: 6 3; }
svg .roof-point { fill: #0969da; stroke: #fff; stroke-width: 1.5; } svg .roof-point.fp64 { fill: #bc4c00; }
svg .label-muted { fill: var(--muted); } svg .lane { fill: var(--panel); }
svg .copy { fill: #57606a; }
svg .replayed { fill-opacity: 0.35; stroke: #1d2329; stroke-width: 1; stroke-dasharray: 2 1; }
svg .pause { fill: #d8dde3; opacity: 0.6; }
svg .zoom-mark { fill: none; stroke: #cf222e; stroke-width: 1.5; stroke-dasharray: 3 2; }
.legend span.swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; vertical-align: baseline; }
table.source td.sass { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; color: var(--muted); word-break: break-all; }
details summary { cursor: pointer; } details[open] summary { color: var(--muted); }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
)css";

std::string h(std::string_view s) { return escape(s); }

// A name for a table cell: whole when short; a long one (PyTorch's templates run to 1,000
// characters) as its start, opening to the whole name with a click (<details>, no script).
std::string name_html(std::string_view name) {
  constexpr size_t kShown = 140;
  const std::string shown = html::cut(name, kShown);
  if (shown.size() == name.size()) return h(name);
  return "<details><summary>" + h(shown) + "</summary>" + h(name) + "</details>";
}

// A number for a data- attribute, for scripts and tests: nine significant digits, never grouped.
std::string exact(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A decade for a log axis: "0.01", "1", "100", "1 k", "10 T".
std::string decade_label(int d) {
  if (d >= -3 && d < 3) return num(std::pow(10.0, d));
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  const int p = d >= 0 ? std::min(d / 3, 6) : 0;
  if (d < 0) return "1e" + std::to_string(d);
  return num(std::pow(10.0, d - 3 * p)) + " " + kPrefix[p];
}

// "memory bound" -> "cls-memory-bound", for the verdict's colour.
std::string classification_class(const v1::Diagnosis& d) {
  std::string words = enum_words(v1::Classification_Name(d.classification()), "CLASSIFICATION_");
  for (char& c : words) c = c == ' ' ? '-' : c;
  return "cls-" + words;
}

std::string utc_time(uint64_t unix_ns) {
  if (unix_ns == 0) return {};
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000ULL);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return {};
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) return {};
  return buf;
}

void kv_row(std::ostringstream& out, std::string_view key, const std::string& value_html) {
  if (value_html.empty()) return;
  out << "<tr><th>" << h(key) << "</th><td>" << value_html << "</td></tr>\n";
}

struct Context {
  Context(const ReadResult& f, const HtmlReportOptions& o) : file(f), options(o) {}
  const ReadResult& file;
  const HtmlReportOptions& options;
  const v1::SessionHeader* session = nullptr;
  const v1::SessionEnd* end = nullptr;
  std::vector<const v1::Notice*> notices;
  ReportKernels kernels;
  std::optional<v1::TraceSummary> recomputed;
  const v1::TraceSummary* summary = nullptr;
  std::map<const v1::KernelProfile*, size_t> sections;  // kernel -> its number on the page
  std::map<uint64_t, size_t> family_rank;                // family id -> rank by GPU time (0 first)
  const TimelineSpans* timeline = nullptr;               // the executions the timeline draws
};

// ---- session -----------------------------------------------------------------------------

void render_session(std::ostringstream& out, const Context& c) {
  out << "<section id=\"session\"><h2>Session</h2>\n<table class=\"kv\">\n";
  const v1::SessionHeader* s = c.session;
  if (s != nullptr) {
    if (s->source() == v1::SessionHeader::SOURCE_NCU_CSV) {
      kv_row(out, "source", "imported from Nsight Compute CSV " + h(s->source_path()));
    } else {
      std::string command;
      for (int i = 0; i < s->command_line_size(); ++i) command += (i != 0 ? " " : "") + s->command_line(i);
      kv_row(out, "command", command.empty() ? std::string() : "<code>" + h(command) + "</code>");
    }
    std::string host = s->host();
    if (s->pid() != 0) host += (host.empty() ? "pid " : ", pid ") + std::to_string(s->pid());
    kv_row(out, "host", h(host));
    kv_row(out, "started", h(utc_time(s->start_time_unix_ns())));
    if (c.end != nullptr && c.end->end_time_unix_ns() > s->start_time_unix_ns() && s->start_time_unix_ns() != 0) {
      kv_row(out, "ran for", h(short_duration(double(c.end->end_time_unix_ns() - s->start_time_unix_ns()))));
    }
    kv_row(out, "mode", h(s->mode()));
    std::string versions;
    if (!s->agent_version().empty()) versions += "cutriage " + s->agent_version();
    if (!s->driver_version().empty()) versions += (versions.empty() ? "" : ", ") + ("driver " + s->driver_version());
    if (!s->cuda_version().empty()) versions += (versions.empty() ? "" : ", ") + ("CUDA " + s->cuda_version());
    if (!s->cupti_version().empty()) versions += (versions.empty() ? "" : ", ") + ("CUPTI " + s->cupti_version());
    kv_row(out, "versions", h(versions));
    if (s->settings().clock_control() == v1::CLOCK_CONTROL_LOCKED) {
      kv_row(out, "clocks", "locked while profiling: durations are not the application's");
    }
  }
  if (c.file.status == ReadStatus::kTruncated) kv_row(out, "file", h(c.file.message));
  if (c.end != nullptr) {
    std::string launches = with_commas(c.end->kernel_launches()) + " kernel launches, " +
                           with_commas(c.end->profiled_launches()) + " profiled";
    if (c.end->failed_profiles() != 0) launches += ", " + with_commas(c.end->failed_profiles()) + " failed";
    if (c.end->graph_launches() != 0) launches += "; " + with_commas(c.end->graph_launches()) + " CUDA graph launches";
    if (c.end->captured_launches() != 0) {
      launches += "; " + with_commas(c.end->captured_launches()) + " launches into streams under capture";
    }
    kv_row(out, "launches", h(launches));
  } else if (s != nullptr && s->source() == v1::SessionHeader::SOURCE_AGENT) {
    kv_row(out, "session end", c.file.segment_index > 0
                                   ? "none in this file: a segment of a rotated run, its end is in a later segment"
                                   : "none: the process did not exit normally; every complete record is shown");
  }
  std::string profiled = with_commas(c.kernels.profiled.size()) + (c.kernels.profiled.size() == 1 ? " kernel" : " kernels");
  if (!c.kernels.unprofiled.empty()) profiled += ", " + with_commas(c.kernels.unprofiled.size()) + " not profiled";
  kv_row(out, "profiled", h(profiled));
  if (c.summary != nullptr) {
    const v1::TraceSummary& ts = *c.summary;
    kv_row(out, "traced",
           h(with_commas(ts.kernel_executions()) + " kernel executions, " + with_commas(ts.copy_executions()) +
             " copies; " + short_duration(ts.total_kernel_ns()) + " of kernel time" +
             (c.recomputed ? " (recomputed from the trace: the file has no trace summary)" : "")));
    for (const v1::DeviceTimeline& d : ts.devices()) {
      const double whole = d.last_end_ns() > d.first_start_ns() ? double(d.last_end_ns() - d.first_start_ns()) : 0.0;
      const double span = whole > d.untraced_ns() ? whole - d.untraced_ns() : 0.0;
      const double idle = span > d.busy_ns() ? span - d.busy_ns() : 0.0;
      kv_row(out, gpu_label(c.session, d.device()),
             h("span " + short_duration(whole) + ", busy " + short_duration(d.busy_ns()) + " (" +
               percent(d.busy_ns(), span) + "), idle " + short_duration(idle) + " (" + percent(idle, span) + "); " +
               plural(d.kernels(), "kernel", "kernels") + ", " + plural(d.copies(), "copy", "copies")));
    }
    if (ts.dropped_records() != 0) {
      kv_row(out, "dropped", h(with_commas(ts.dropped_records()) + " trace records dropped by CUPTI"));
    }
  }
  out << "</table>\n";

  if (s != nullptr && s->gpus_size() > 0) {
    out << "<h3>GPUs</h3>\n<table><tr><th>device</th><th>name</th><th class=\"num\">SMs</th><th>arch</th>"
           "<th class=\"num\">SM clock</th><th class=\"num\">memory</th><th class=\"num\">DRAM peak</th></tr>\n";
    for (const v1::Gpu& g : s->gpus()) {
      out << "<tr><td class=\"num\">" << g.device() << "</td><td>" << h(g.name().empty() ? g.chip() : g.name())
          << "</td><td class=\"num\">" << (g.sm_count() != 0 ? std::to_string(g.sm_count()) : "-") << "</td><td>"
          << (g.cc_major() != 0 ? "sm_" + std::to_string(g.cc_major()) + std::to_string(g.cc_minor()) : "-")
          << "</td><td class=\"num\">" << (g.sm_clock_hz() > 0 ? h(html::si(g.sm_clock_hz()) + "Hz") : "-")
          << "</td><td class=\"num\">" << (g.memory_bytes() > 0 ? h(html::si(double(g.memory_bytes())) + "B") : "-")
          << "</td><td class=\"num\">"
          << (g.dram_peak_bytes_per_second() > 0 ? h(html::si(g.dram_peak_bytes_per_second()) + "B/s") : "-")
          << "</td></tr>\n";
    }
    out << "</table>\n";
  }
  if (!c.notices.empty()) {
    out << "<h3>Notices</h3>\n<ul class=\"plain\">\n";
    for (const v1::Notice* n : c.notices) {
      const std::string severity = enum_words(v1::Notice::Severity_Name(n->severity()), "SEVERITY_");
      out << "<li class=\"notice-" << h(severity) << "\"><b>" << h(severity) << "</b>: " << h(n->message()) << "</li>\n";
    }
    out << "</ul>\n";
  }
  out << "</section>\n";
}

// Why a file has no trace, in words for the page.
const char* no_trace_why(const Context& c) {
  if (c.session != nullptr && c.session->source() == v1::SessionHeader::SOURCE_NCU_CSV) {
    return "an Nsight Compute import: ncu captures counters, not a timeline";
  }
  return "the run was made without tracing";
}

// ---- families ------------------------------------------------------------------------------

void render_families(std::ostringstream& out, const Context& c) {
  out << "<section id=\"families\"><h2>Kernel families by GPU time</h2>\n";
  if (c.summary == nullptr) {
    out << "<p class=\"muted\">The file has no trace (" << no_trace_why(c) << "), so there is no application "
           "view.</p></section>\n";
    return;
  }
  const v1::TraceSummary& ts = *c.summary;
  out << "<p class=\"muted\">Durations leave out profiled launches (their replay perturbs them).</p>\n";
  out << "<table class=\"families\"><tr><th class=\"num\">#</th><th>family</th><th class=\"num\">launches</th>"
         "<th class=\"num\">total</th><th class=\"num\">mean</th><th class=\"num\">share</th><th></th>"
         "<th>verdict</th></tr>\n";
  const size_t n = static_cast<size_t>(ts.families_size());
  const size_t limit = c.options.max_families == 0 ? n : std::min(n, c.options.max_families);
  for (size_t i = 0; i < limit; ++i) {
    const v1::FamilyStats& fs = ts.families(static_cast<int>(i));
    const v1::KernelProfile* k = family_profile(c.kernels.current, fs);
    std::string verdict;
    if (k != nullptr && is_profiled(*k)) {
      verdict = "<span class=\"" + classification_class(k->diagnosis()) + "\">" + h(verdict_text(k->diagnosis())) +
                "</span>";
      if (auto it = c.sections.find(k); it != c.sections.end()) {
        verdict += " <a href=\"#k" + std::to_string(it->second) + "\">[" + std::to_string(it->second) + "]</a>";
      }
    } else {
      verdict = "<span class=\"muted\">" + h(not_profiled_text(k, fs)) + "</span>";
    }
    const double share = std::clamp(fs.time_share(), 0.0, 1.0);
    const char* color = family_color(i);
    out << "<tr><td class=\"num\">" << (i + 1) << "</td><td class=\"name\"><span class=\"swatch\" style=\"display:"
        << "inline-block;width:9px;height:9px;margin-right:5px;background:" << color << "\"></span>"
        << name_html(family_name(c.file, fs.family_id())) << "</td><td class=\"num\">" << h(with_commas(fs.launches()))
        << "</td><td class=\"num\">" << h(fs.total_ns() > 0 ? short_duration(fs.total_ns()) : "-")
        << "</td><td class=\"num\">" << h(fs.mean_ns() > 0 ? short_duration(fs.mean_ns()) : "-")
        << "</td><td class=\"num\">" << h(percent(fs.time_share(), 1.0)) << "</td><td><span class=\"bar\" style=\"width:"
        << num(share * 160) << "px\"></span></td><td>" << verdict << "</td></tr>\n";
  }
  if (limit < n) {
    double rest = 0;
    for (size_t i = limit; i < n; ++i) rest += ts.families(static_cast<int>(i)).total_ns();
    out << "<tr><td></td><td colspan=\"7\" class=\"muted\">" << h(with_commas(n - limit)) << " more families, "
        << h(percent(rest, ts.total_kernel_ns())) << " of kernel time</td></tr>\n";
  }
  out << "</table>\n";
  bool any_fired = false;
  for (const v1::Check& f : ts.findings()) any_fired = any_fired || f.outcome() == v1::OUTCOME_FIRED;
  if (any_fired) {
    out << "<h3>Session findings</h3>\n<ul class=\"plain\">\n";
    for (const v1::Check& f : ts.findings()) {
      if (f.outcome() != v1::OUTCOME_FIRED) continue;
      std::string text = f.has_finding() && !f.finding().summary().empty() ? f.finding().summary() : f.reason();
      if (text.empty()) text = f.title();
      out << "<li><code>" << h(f.rule_id()) << "</code> " << h(text);
      if (f.has_finding() && !f.finding().next_action().empty()) {
        out << "<br><span class=\"muted\">next: " << h(f.finding().next_action()) << "</span>";
      }
      out << "</li>\n";
    }
    out << "</ul>\n";
  }
  out << "</section>\n";
}

// ---- roofline ------------------------------------------------------------------------------

void render_roofline(std::ostringstream& out, const Context& c, const v1::KernelProfile& k) {
  const KernelRoofline r = kernel_roofline(c.file, k);
  const RooflinePeaks& p = r.peaks;
  constexpr double kW = 560, kH = 360, kL = 78, kR = 20, kT = 18, kB = 52;
  const double x0 = kL, x1 = kW - kR, y0 = kH - kB, y1 = kT;  // plot box; y0 is the bottom

  // Axis ranges: the ridge point and every kernel point, a decade of room around them.
  const double ridge = p.fp32_flops_per_s / p.dram_bytes_per_s;
  double i_min = ridge, i_max = ridge, f_min = p.fp32_flops_per_s, f_max = p.fp32_flops_per_s;
  for (const RooflinePoint& pt : r.points) {
    i_min = std::min(i_min, pt.intensity());
    i_max = std::max(i_max, pt.intensity());
    f_min = std::min(f_min, pt.flops_per_s());
    f_max = std::max(f_max, std::max(pt.flops_per_s(), pt.ceiling_flops_per_s));
  }
  const html::LogAxis xa = html::LogAxis::covering(i_min / 10, i_max * 10, x0, x1, 3);
  f_min = std::min(f_min, p.dram_bytes_per_s * std::pow(10.0, xa.lo));
  const html::LogAxis ya = html::LogAxis::covering(f_min / 2, f_max * 1.5, y0, y1, 3);

  const std::string name = kernel_name(c.file, k);
  html::Svg svg(kW, kH, "roofline", "roofline of " + name,
                "data-x-decades=\"" + std::to_string(xa.lo) + " " + std::to_string(xa.hi) + "\" data-y-decades=\"" +
                    std::to_string(ya.lo) + " " + std::to_string(ya.hi) + "\" data-plot=\"" + num(x0) + " " + num(x1) +
                    " " + num(y0) + " " + num(y1) + "\"");
  for (int d = xa.lo; d <= xa.hi; ++d) {
    const double x = xa.at(std::pow(10.0, d));
    svg.line(x, y0, x, y1, "grid");
    svg.text(x, y0 + 15, decade_label(d), "label-muted", "middle");
  }
  for (int d = ya.lo; d <= ya.hi; ++d) {
    const double y = ya.at(std::pow(10.0, d));
    svg.line(x0, y, x1, y, "grid");
    svg.text(x0 - 6, y + 4, decade_label(d), "label-muted", "end");
  }
  svg.line(x0, y0, x1, y0, "axis");
  svg.line(x0, y0, x0, y1, "axis");
  svg.text((x0 + x1) / 2, kH - 10, "arithmetic intensity (FLOP per DRAM byte, log scale)", "", "middle");
  svg.text(16, (y0 + y1) / 2, "performance (FLOP/s, log scale)", "", "middle", -90);

  // One roof per precision: the bandwidth slope up to the ridge, then the compute ceiling.
  auto roof = [&](double ceiling, const char* cls, const char* label) {
    const double lo_i = std::pow(10.0, xa.lo), hi_i = std::pow(10.0, xa.hi);
    const double ymin_value = std::pow(10.0, ya.lo);
    // Where the slope enters the plot: at the left edge, or where it crosses the bottom.
    const double start_i = std::max(lo_i, ymin_value / p.dram_bytes_per_s);
    const double ridge_i = ceiling / p.dram_bytes_per_s;
    std::vector<std::pair<double, double>> pts;
    pts.push_back({xa.at(start_i), ya.at(attainable(ceiling, p.dram_bytes_per_s, start_i))});
    if (ridge_i > start_i && ridge_i < hi_i) pts.push_back({xa.at(ridge_i), ya.at(ceiling)});
    pts.push_back({xa.at(hi_i), ya.at(attainable(ceiling, p.dram_bytes_per_s, hi_i))});
    svg.polyline(pts, std::string("roof ") + cls,
                 "data-ceiling=\"" + num(ceiling) + "\" data-bandwidth=\"" + num(p.dram_bytes_per_s) + "\"");
    svg.text(x1 - 4, ya.at(ceiling) - 5, std::string(label) + " " + html::si(ceiling) + "FLOP/s", "", "end");
  };
  roof(p.fp32_flops_per_s, "fp32", "FP32 peak");
  bool fp64 = false;
  for (const RooflinePoint& pt : r.points) fp64 = fp64 || pt.precision == "FP64";
  if (fp64) roof(p.fp64_flops_per_s, "fp64", "FP64 peak");
  {
    // The slope's label, along it near the left.
    const double li = std::max(std::pow(10.0, xa.lo) * 3, std::pow(10.0, ya.lo) * 3 / p.dram_bytes_per_s);
    const double lx = xa.at(li), ly = ya.at(p.dram_bytes_per_s * li);
    if (lx < x1 - 60 && ly > y1 + 10) svg.text(lx + 6, ly - 6, "DRAM " + html::si(p.dram_bytes_per_s) + "B/s", "");
  }
  for (const RooflinePoint& pt : r.points) {
    const double cx = xa.at(pt.intensity()), cy = ya.at(pt.flops_per_s());
    const std::string tip = pt.precision + ": " + html::si(pt.flops_per_s()) + "FLOP/s at " + fmt(pt.intensity()) +
                            " FLOP/byte (" + percent(pt.flops_per_s(), attainable(pt.ceiling_flops_per_s,
                                                                                  p.dram_bytes_per_s, pt.intensity())) +
                            " of the roof there)";
    svg.circle(cx, cy, 6, std::string("roof-point ") + (pt.precision == "FP64" ? "fp64" : "fp32"), tip,
               "data-precision=\"" + pt.precision + "\" data-intensity=\"" + html::num(pt.intensity()) +
                   "\" data-intensity-exact=\"" + exact(pt.intensity()) + "\" data-flops=\"" +
                   exact(pt.flops_per_s()) + "\"");
    svg.text(cx + 9, cy + 4, pt.precision, "");
  }

  out << "<div class=\"charts\">" << svg.str() << "<div class=\"chart-note\">\n";
  if (!r.points.empty()) {
    out << "<table><tr><th></th><th class=\"num\">FLOP</th><th class=\"num\">FLOP/byte</th>"
           "<th class=\"num\">FLOP/s</th><th class=\"num\">of roof</th></tr>\n";
    for (const RooflinePoint& pt : r.points) {
      out << "<tr><td>" << h(pt.precision) << "</td><td class=\"num\">" << h(html::si(pt.flop))
          << "</td><td class=\"num\">" << h(fmt(pt.intensity())) << "</td><td class=\"num\">"
          << h(html::si(pt.flops_per_s())) << "</td><td class=\"num\">"
          << h(percent(pt.flops_per_s(), attainable(pt.ceiling_flops_per_s, p.dram_bytes_per_s, pt.intensity())))
          << "</td></tr>\n";
    }
    out << "</table>\n<p>DRAM traffic " << h(html::si(r.dram_bytes)) << "B (<code>" << h(r.bytes_from)
        << "</code>) in " << h(duration(r.seconds * 1e9)) << ". FLOP: 2 per FP32/FP64 add, multiply or FMA thread "
        << "instruction (exact for FMA, an upper bound for add and multiply, which use the pipe alike).</p>\n";
  } else {
    out << "<p>No point for this kernel: " << h(r.missing) << ".</p>\n";
  }
  if (r.tensor_work) {
    out << "<p>The tensor cores ran: their work has no FLOP counter in the file and is not in the point.</p>\n";
  }
  if (r.graph_scope) {
    out << "<p>The counters are the whole CUDA graph launch's, not this kernel's alone.</p>\n";
  }
  out << "<p>Roof: " << h(p.gpu) << ", FP32 " << h(html::si(p.fp32_flops_per_s)) << "FLOP/s, FP64 "
      << h(html::si(p.fp64_flops_per_s)) << "FLOP/s "
      << (p.compute_from_file ? "(SMs x SM clock x FP lanes per SM x 2, from the file's GPU)"
                              : "(H200 defaults: the file does not give the SM count, clock and architecture)")
      << "; DRAM " << h(html::si(p.dram_bytes_per_s)) << "B/s "
      << (p.bandwidth_from_file ? "(the file's GPU)" : "(H200 default: the file does not give it)") << ".</p>\n";
  out << "</div></div>\n";
}

// ---- source lines ----------------------------------------------------------------------------

constexpr size_t kHtmlSourceLines = 10;

void render_source(std::ostringstream& out, const Context& c, const v1::KernelProfile& k, SassResolver& sass) {
  const v1::PcSampling& pcs = k.pc_sampling();
  out << "<h4>Hot source lines</h4>\n";
  if (!pcs.error().empty()) {
    out << "<p class=\"muted\">PC sampling failed: " << h(pcs.error()) << "</p>\n";
    return;
  }
  const PcSamplingView view = read_pc_sampling(c.file, pcs);
  const uint64_t launch = pcs.from_launch_index() != 0 ? pcs.from_launch_index() : k.launch_index();
  const uint64_t total = pcs.total_samples() != 0 ? pcs.total_samples() : view.samples;
  std::string totals = "PC sampling" + (launch != 0 ? " of launch #" + std::to_string(launch) : std::string()) + ": " +
                       with_commas(total) + " samples (" + with_commas(view.stall_samples) + " stalls)";
  if (pcs.dropped_samples() != 0) totals += ", " + with_commas(pcs.dropped_samples()) + " dropped (shares are approximate)";
  if (pcs.sampling_period_log2() != 0) {
    totals += ", one sample per SM every 2^" + std::to_string(pcs.sampling_period_log2()) + " cycles";
  }
  out << "<p class=\"muted\">" << h(totals) << "</p>\n";
  if (view.stall_samples == 0) {
    out << "<p class=\"muted\">No stall samples.</p>\n";
    return;
  }
  const std::vector<SourceLineSamples> lines = source_lines(view);
  out << "<table class=\"source\"><tr><th class=\"num\">#</th><th>location</th><th class=\"num\">stalls</th>"
         "<th class=\"num\">share</th><th>dominant stall</th><th>hottest instruction (SASS)</th></tr>\n";
  const size_t limit = std::min(lines.size(), kHtmlSourceLines);
  for (size_t i = 0; i < limit; ++i) {
    const SourceLineSamples& line = lines[i];
    if (line.stall_samples == 0) break;
    const SampledInstruction& hottest = view.pcs[line.hottest];
    // Without a line table the PC names the place; "in f" only for a function other than the kernel.
    const std::string kernel_mangled(lookup(c.file, k.mangled_name_iid()));
    const std::string location =
        line.file.empty()
            ? "pc " + pc_hex(line.pc_offset) + (line.function == kernel_mangled ? "" : " in " + function_label(line.function))
            : line.file + ":" + std::to_string(line.line);
    std::string text = hottest.sass.empty() ? sass.instruction(c.file, pcs, hottest.function, hottest.pc_offset)
                                            : hottest.sass;
    std::string where = pc_hex(hottest.pc_offset);
    if (!line.file.empty() && !hottest.function.empty() && hottest.function != kernel_mangled) {
      where += " in " + function_label(hottest.function);
    }
    if (!hottest.inlined_file.empty()) {
      where += " (inlined from " + hottest.inlined_file + ":" + std::to_string(hottest.inlined_line) + ")";
    }
    out << "<tr><td class=\"num\">" << (i + 1) << "</td><td class=\"mono name\">" << h(location)
        << "</td><td class=\"num\">" << h(with_commas(line.stall_samples)) << "</td><td class=\"num\">"
        << h(percent(double(line.stall_samples), double(view.stall_samples))) << "</td><td>";
    if (!line.stalls.empty()) {
      out << h(line.stalls.front().first) << " "
          << h(percent(double(line.stalls.front().second), double(line.stall_samples)));
    }
    out << "</td><td class=\"sass\">" << h(where) << (text.empty() ? "" : "  ") << h(text) << "</td></tr>\n";
  }
  out << "</table>\n";
  if (lines.size() > limit) {
    uint64_t rest = 0;
    for (size_t i = limit; i < lines.size(); ++i) rest += lines[i].stall_samples;
    if (rest != 0) {
      out << "<p class=\"muted\">" << h(with_commas(lines.size() - limit)) << " more "
          << (view.has_line_info ? "lines" : "PCs") << ", " << h(percent(double(rest), double(view.stall_samples)))
          << " of the stall samples.</p>\n";
    }
  }
  if (!pcs.has_line_info()) out << "<p class=\"muted\">Built without -lineinfo: SASS offsets instead of lines.</p>\n";
  for (const std::string& note : sass.take_notes()) out << "<p class=\"muted\">note: " << h(note) << "</p>\n";
}

// ---- kernels -------------------------------------------------------------------------------

void render_kernel(std::ostringstream& out, const Context& c, const v1::KernelProfile& k, size_t rank,
                   SassResolver& sass) {
  const v1::Diagnosis& d = k.diagnosis();
  out << "<article class=\"kernel\" id=\"k" << rank << "\">\n<h3>[" << rank << "] " << h(kernel_name(c.file, k))
      << "</h3>\n";
  std::string launch;
  if (k.has_launch()) {
    launch = "grid " + dim(k.launch().grid()) + ", block " + dim(k.launch().block());
    if (k.launch().registers_per_thread() != 0) launch += ", " + std::to_string(k.launch().registers_per_thread()) + " regs";
    const uint32_t smem = k.launch().static_shared_bytes() + k.launch().dynamic_shared_bytes();
    if (smem != 0) launch += ", " + std::to_string(smem) + " B smem";
  } else {
    launch = "launch configuration unknown";
  }
  if (k.duration_ns() > 0) launch += "; " + duration(k.duration_ns()) + " profiled";
  if (k.unprofiled_duration_ns() > 0) launch += ", " + duration(k.unprofiled_duration_ns()) + " unprofiled";
  if (k.time_share() > 0) launch += "; " + fmt(100 * k.time_share()) + "% of captured time";
  std::string cls = enum_words(v1::Classification_Name(d.classification()), "CLASSIFICATION_");
  for (char& ch : cls) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  std::string headline = verdict_text(d);
  if (headline.rfind(cls, 0) == 0) headline = headline.substr(cls.size());
  if (headline.rfind(" - ", 0) == 0) headline = headline.substr(3);
  out << "<div class=\"verdict " << classification_class(d) << "\"><span class=\"badge\">" << h(cls) << "</span>"
      << h(headline) << "</div>\n";
  if (d.at_hardware_limit() && d.primary_rule_id() != "d7.limiter_near_peak") {
    out << "<p class=\"muted\">" << h(hardware_limit_text(d)) << "</p>\n";
  }

  out << "<dl class=\"facts\">\n<dt>launch</dt><dd>" << h(launch) << "</dd>\n";
  if (const std::string collected = collected_text(k); !collected.empty()) {
    out << "<dt>collected</dt><dd>" << h(collected) << "</dd>\n";
  }
  if (k.rejected_metrics_size() > 0) {
    std::string rejected;
    for (int i = 0; i < k.rejected_metrics_size(); ++i) rejected += (i != 0 ? ", " : "") + k.rejected_metrics(i);
    out << "<dt>not collectable</dt><dd>on this GPU: <code>" << h(rejected) << "</code></dd>\n";
  }
  if (k.has_pm_window()) {
    out << "<dt>counters</dt><dd>"
        << h("its own PM samples (" + std::to_string(k.pm_window().samples()) +
             " in one PM window over the application's own launches), until the range profiler's are complete")
        << "</dd>\n";
  } else if (k.has_graph_scope() && k.graph_scope().has_node_sampling()) {
    out << "<dt>counters</dt><dd>" << h("this node's own PM samples (" +
                                          std::to_string(k.graph_scope().node_sampling().samples()) +
                                          " over one launch of graph " + std::to_string(k.graph_scope().graph_id()) +
                                          "), not the graph's; this kernel is " +
                                          fmt(100 * k.graph_scope().share_of_graph()) + "% of the graph's kernel time")
        << "</dd>\n";
  } else if (k.has_graph_scope()) {
    out << "<dt>counters</dt><dd>" << h("the whole graph " + std::to_string(k.graph_scope().graph_id()) +
                                          "'s, as one workload; this kernel is " +
                                          fmt(100 * k.graph_scope().share_of_graph()) + "% of the graph's kernel time")
        << "</dd>\n";
  } else if (k.assembled_launches_size() > 0) {
    out << "<dt>assembled</dt><dd>" << h("from " + plural(static_cast<uint64_t>(k.assembled_launches_size()),
                                                         "launch", "launches") + " without replay")
        << "</dd>\n";
  }
  out << "<dt>trust</dt><dd>" << h(enum_words(v1::Trust_Name(d.trust()), "TRUST_"));
  if (d.trust_notes_size() > 0) {
    out << "<ul class=\"plain\">";
    for (const std::string& n : d.trust_notes()) out << "<li>" << h(n) << "</li>";
    out << "</ul>";
  }
  out << "</dd>\n";
  if (d.source_notes_size() > 0) {
    out << "<dt>source</dt><dd>";
    for (const std::string& n : d.source_notes()) out << h(n) << "<br>";
    out << "</dd>\n";
  }
  out << "<dt>path</dt><dd class=\"path\">";
  const std::vector<PathStep> path = decision_path(d);
  for (size_t i = 0; i < path.size(); ++i) {
    if (i != 0) out << "<span class=\"arrow\">&rarr;</span>";
    out << "<span class=\"step\">" << h(path[i].label) << " (" << path[i].fired << " fired";
    if (path[i].not_evaluated != 0) out << ", " << path[i].not_evaluated << " n/e";
    out << ")</span>";
  }
  out << "</dd>\n";
  if (!d.library().empty()) {
    out << "<dt>library</dt><dd>" << h(d.library()) << " kernel, recognized by name: the next action is for its caller</dd>\n";
  }
  if (!d.next_action().empty()) out << "<dt>next</dt><dd>" << h(d.next_action()) << "</dd>\n";
  const v1::Check* primary = find_primary(d);
  if (const GainText gain = gain_text(d, primary); !gain.kernel.empty() || !gain.run.empty()) {
    out << "<dt>gain</dt><dd>" << h(gain.kernel) << (gain.kernel.empty() || gain.run.empty() ? "" : "<br>")
        << h(gain.run) << "</dd>\n";
  }
  out << "</dl>\n";

  if (primary != nullptr) {
    out << "<h4>Evidence</h4>\n<table class=\"evidence\"><tr><th>metric</th><th class=\"num\">value</th>"
           "<th>unit</th><th></th></tr>\n";
    for (const v1::Evidence* e : verdict_evidence(*primary)) {
      out << "<tr" << (e->deciding() ? " class=\"deciding\"" : "") << "><td class=\"metric\">" << h(e->metric())
          << "</td><td class=\"num\">" << h(fmt(e->value())) << "</td><td>" << h(e->unit()) << "</td><td>"
          << (e->derived() ? "<span class=\"tag\">derived</span>" : "")
          << (e->deciding() ? "<span class=\"tag\">deciding</span>" : "") << "</td></tr>\n";
    }
    for (const v1::ThresholdUse& t : primary->thresholds()) {
      out << "<tr class=\"threshold\"><td class=\"metric\">threshold " << h(t.name()) << "</td><td class=\"num\">"
          << h(fmt(t.value())) << "</td><td></td><td></td></tr>\n";
    }
    out << "</table>\n";
  }

  out << "<h4>Roofline</h4>\n";
  render_roofline(out, c, k);
  if (k.has_pc_sampling()) render_source(out, c, k, sass);

  // The other findings that fired, as the text report's "also".
  std::vector<const v1::Check*> also;
  for (const v1::DecisionVisit& visit : d.path()) {
    if (visit.decision() == v1::DECISION_D0_TRUST || visit.decision() == v1::DECISION_D2_REGIME) continue;
    for (const v1::Check& ch : visit.checks()) {
      if (ch.outcome() == v1::OUTCOME_FIRED && &ch != primary) also.push_back(&ch);
    }
  }
  if (!also.empty()) {
    out << "<h4>Also</h4>\n<ul class=\"plain\">\n";
    for (const v1::Check* ch : also) {
      const std::string text = ch->has_finding() && !ch->finding().summary().empty() ? ch->finding().summary() : ch->reason();
      out << "<li><code>" << h(ch->rule_id()) << "</code> " << h(text) << "</li>\n";
    }
    out << "</ul>\n";
  }
  out << "</article>\n";
}

}  // namespace

std::string render_html_report(const ReadResult& file, const HtmlReportOptions& options,
                               const TimelineSpans* timeline) {
  Context c(file, options);
  // A file read whole holds its trace chunks: the timeline's executions are taken from them.
  TimelineSpans held;
  if (timeline == nullptr) {
    for (const int r : file.trace_records) held.add_chunk(file.file.records(r).trace());
    timeline = &held;
  }
  c.timeline = timeline;
  for (const v1::Record& r : file.file.records()) {
    if (r.has_session() && c.session == nullptr) c.session = &r.session();
    if (r.has_notice()) c.notices.push_back(&r.notice());
    if (r.has_session_end()) c.end = &r.session_end();
  }
  c.kernels = report_kernels(file);
  c.summary = trace_summary(file);
  if (c.summary == nullptr && file.trace_chunks != 0) {
    c.recomputed = recompute_summary(file);
    if (c.recomputed) c.summary = &*c.recomputed;
  }
  if (c.summary != nullptr) {
    for (int i = 0; i < c.summary->families_size(); ++i) {
      c.family_rank[c.summary->families(i).family_id()] = static_cast<size_t>(i);
    }
  }
  for (size_t i = 0; i < c.kernels.profiled.size(); ++i) c.sections[c.kernels.profiled[i]] = i + 1;

  std::string title = "cutriage report";
  if (c.session != nullptr) {
    if (c.session->source() == v1::SessionHeader::SOURCE_NCU_CSV) {
      title += " - imported from Nsight Compute CSV";
    } else if (!c.session->command_line().empty()) {
      title += " - " + c.session->command_line(0);
    }
  }
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"cutriage " CUTRIAGE_VERSION "\">\n<title>"
      << h(title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  out << "<header><h1>" << h(title) << "</h1>\n";
  out << "<p class=\"muted\">" << h(plural(c.kernels.profiled.size(), "profiled kernel", "profiled kernels"))
      << ": <a href=\"#session\">session</a> &middot; <a href=\"#families\">families</a> &middot; "
         "<a href=\"#timeline\">timeline</a> &middot; <a href=\"#kernels\">kernels</a></p></header>\n";
  render_session(out, c);
  render_families(out, c);
  render_timeline(out, TimelinePage{c.file, c.session, c.summary, c.family_rank, options.max_streams, no_trace_why(c)},
                  *c.timeline);

  out << "<section id=\"kernels\"><h2>Profiled kernels, longest first</h2>\n";
  if (c.kernels.profiled.empty()) out << "<p class=\"muted\">No kernel was profiled.</p>\n";
  SassResolver sass(options.nvdisasm);  // one per page: each nvdisasm note is said once
  sass.prefetch(c.file, c.kernels.profiled);
  size_t rank = 0;
  for (const v1::KernelProfile* k : c.kernels.profiled) render_kernel(out, c, *k, ++rank, sass);
  out << "</section>\n";
  if (!c.kernels.unprofiled.empty()) {
    out << "<section id=\"not-profiled\"><h2>Not profiled</h2>\n<ul class=\"plain\">\n";
    for (const v1::KernelProfile* k : c.kernels.unprofiled) {
      out << "<li><span class=\"name\">" << name_html(kernel_name(file, *k)) << "</span>: "
          << h(enum_words(v1::ProfileStatus_Name(k->status()), "PROFILE_STATUS_"));
      if (!k->status_detail().empty()) out << " (" << h(k->status_detail()) << ")";
      out << "</li>\n";
    }
    out << "</ul></section>\n";
  }
  out << "<footer>Written by cutriage " CUTRIAGE_VERSION
         " from a cutriage file. Self-contained: no scripts, fonts or images are loaded from anywhere."
         "</footer>\n</body>\n</html>\n";
  return out.str();
}

bool write_html_report(const ReadResult& file, const HtmlReportOptions& options, const std::string& path,
                       std::string& error, const TimelineSpans* timeline) {
  const std::string page = render_html_report(file, options, timeline);
  if (path == "-") {
    std::cout.write(page.data(), static_cast<std::streamsize>(page.size()));
    std::cout.flush();
    if (!std::cout) error = "cannot write to stdout";
    return error.empty();
  }
  OutputFile out;
  if (out.open(path, &error)) out.stream().write(page.data(), static_cast<std::streamsize>(page.size()));
  if (!error.empty() || !out.commit(&error)) return false;
  return true;
}

}  // namespace cutriage::tools
