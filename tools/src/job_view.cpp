#include "job_view.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "cutriage/base/demangle.h"
#include "cutriage/triage/library.h"
#include "report.h"
#include "report_model.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
using namespace model;

namespace {

const v1::SessionHeader* header_of(const ReadResult& file) {
  if (file.file.records_size() == 0 || !file.file.records(0).has_session()) return nullptr;
  return &file.file.records(0).session();
}

// The name the agent applied the communication rule to: the family's display name (the base
// function name), else the base name of its demangled mangled name.
std::string rule_name(const ReadResult& file, const v1::FamilyStats& fs) {
  if (const v1::KernelFamily* f = find_family(file, fs.family_id())) {
    if (auto display = lookup(file, f->display_name_iid()); !display.empty()) return std::string(display);
    if (auto mangled = lookup(file, f->mangled_name_iid()); !mangled.empty()) {
      return function_base_name(demangle(std::string(mangled)));
    }
  }
  return {};
}

std::string lower_words(const std::string& enum_name, std::string_view prefix) {
  std::string s = enum_name.rfind(prefix, 0) == 0 ? enum_name.substr(prefix.size()) : enum_name;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "unspecified" ? std::string() : s;
}

void fill_rank(RankStats& r, const ReadResult& file, const v1::TraceSummary& ts) {
  r.has_trace = true;
  for (const v1::DeviceTimeline& d : ts.devices()) {
    // As the report's device line: the paused time of a duty-cycled trace is neither busy nor idle.
    const double whole = d.last_end_ns() > d.first_start_ns() ? double(d.last_end_ns() - d.first_start_ns()) : 0.0;
    const double span = whole > d.untraced_ns() ? whole - d.untraced_ns() : 0.0;
    r.span_ns += span;
    r.busy_ns += d.busy_ns();
    r.idle_ns += span > d.busy_ns() ? span - d.busy_ns() : 0.0;
  }
  r.kernel_ns = ts.total_kernel_ns();
  const std::vector<const v1::KernelProfile*> current = report_kernels(file).current;
  std::map<std::string, size_t> at;  // name -> index in r.families
  std::map<std::string, double> verdict_time;  // name -> total_ns of the family its verdict is from
  for (const v1::FamilyStats& fs : ts.families()) {
    const std::string name = family_name(file, fs.family_id());
    const bool communication = triage::is_communication_kernel(rule_name(file, fs));
    if (communication) r.communication_ns += fs.total_ns();
    auto [it, inserted] = at.emplace(name, r.families.size());
    if (inserted) r.families.push_back(RankFamily{name, 0, 0, communication, {}, {}});
    RankFamily& f = r.families[it->second];
    f.total_ns += fs.total_ns();
    f.communication = f.communication || communication;
    const v1::KernelProfile* k = family_profile(current, fs);
    const bool profiled = k != nullptr && k->has_diagnosis() &&
                          (k->status() == v1::PROFILE_STATUS_PROFILED || k->status() == v1::PROFILE_STATUS_UNSPECIFIED);
    if (profiled && (f.classification.empty() || fs.total_ns() > verdict_time[name])) {
      verdict_time[name] = fs.total_ns();
      f.verdict = enum_words(v1::Classification_Name(k->diagnosis().classification()), "CLASSIFICATION_");
      f.classification = lower_words(v1::Classification_Name(k->diagnosis().classification()), "CLASSIFICATION_");
    }
  }
  for (RankFamily& f : r.families) {
    f.share = r.kernel_ns > 0 ? f.total_ns / r.kernel_ns : 0;
    if (f.verdict.empty()) f.verdict = f.communication ? "communication" : "not profiled";
  }
  std::stable_sort(r.families.begin(), r.families.end(),
                   [](const RankFamily& a, const RankFamily& b) { return a.total_ns > b.total_ns; });
  r.compute_ns = r.kernel_ns > r.communication_ns ? r.kernel_ns - r.communication_ns : 0.0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<Straggler> find_straggler(const std::vector<RankStats>& ranks) {
  std::vector<double> compute, idle, span;
  for (const RankStats& r : ranks) {
    if (!r.has_trace) continue;
    compute.push_back(r.compute_ns);
    idle.push_back(r.idle_ns);
    span.push_back(r.span_ns);
  }
  if (compute.size() < 2) return std::nullopt;
  const double med_compute = median(compute), med_idle = median(idle), med_span = median(span);
  std::optional<Straggler> best;
  double best_excess = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankStats& r = ranks[i];
    if (!r.has_trace) continue;
    // Ties go to compute, then to the lower rank: the first strictly larger excess wins.
    for (const bool by_compute : {true, false}) {
      const double value = by_compute ? r.compute_ns : r.idle_ns;
      const double med = by_compute ? med_compute : med_idle;
      if (value - med > best_excess) {
        best_excess = value - med;
        best = Straggler{i, by_compute, value, med, med_span};
      }
    }
  }
  if (!best || best_excess < kStragglerMinSpanShare * med_span) return std::nullopt;
  return best;
}

}  // namespace

std::optional<JobView> job_view(const std::vector<ProcessRun>& runs) {
  if (runs.size() < 2) return std::nullopt;
  JobView job;
  std::set<uint32_t> seen;
  for (size_t i = 0; i < runs.size(); ++i) {
    const v1::SessionHeader* h = header_of(runs[i].file);
    if (h == nullptr || !h->has_job()) return std::nullopt;
    const v1::JobPlace& place = h->job();
    if (i == 0) job.world_size = place.world_size();
    if (place.world_size() != job.world_size) return std::nullopt;
    if (!seen.insert(place.rank()).second) return std::nullopt;
    if (std::find(job.rank_variables.begin(), job.rank_variables.end(), place.rank_variable()) ==
        job.rank_variables.end()) {
      job.rank_variables.push_back(place.rank_variable());
    }
    RankStats r;
    r.process = i;
    r.name = runs[i].name;
    r.rank = place.rank();
    job.deep_mode = job.deep_mode || h->mode() == "deep";
    if (place.has_local_rank()) r.local_rank = place.local_rank();
    std::optional<v1::TraceSummary> recomputed;
    const v1::TraceSummary* ts = trace_summary(runs[i].file);
    if (ts == nullptr) {
      recomputed = recompute_summary(runs[i].file);
      if (recomputed) ts = &*recomputed;
    }
    if (ts != nullptr) fill_rank(r, runs[i].file, *ts);
    job.ranks.push_back(std::move(r));
  }
  std::sort(job.ranks.begin(), job.ranks.end(), [](const RankStats& a, const RankStats& b) { return a.rank < b.rank; });
  for (uint32_t k = 0; k < job.world_size; ++k) {
    if (seen.count(k) == 0) job.missing.push_back(k);
  }
  job.straggler = find_straggler(job.ranks);
  return job;
}

namespace {

// "2, 3, 5-7"
std::string rank_list(const std::vector<uint32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string or_dash(bool known, const std::string& s) { return known ? s : "-"; }

// The report's width (report.cpp's kReportWidth): sentences wrap at it.
constexpr size_t kJobWidth = 100;

}  // namespace

std::string render_job_view(const JobView& job) {
  std::string out = "job: " + plural(job.ranks.size(), "rank", "ranks");
  out += job.world_size != 0 ? " of world size " + std::to_string(job.world_size) : " (world size not known)";
  std::string variables;
  for (const std::string& v : job.rank_variables) variables += (variables.empty() ? "" : ", ") + terminal_safe(v, false);
  out += ", rank from " + variables + "\n";
  if (!job.missing.empty()) {
    out += "  not given: " + std::string(job.missing.size() == 1 ? "rank " : "ranks ") + rank_list(job.missing) +
           " (the numbers below are of the ranks given)\n";
  }
  // Per rank: busy and idle over its GPUs' traced span; kernel time summed over executions (two
  // kernels that overlap both count), split into communication kernels and the rest (compute).
  constexpr size_t kProcessWidth = 24;
  out += right("rank", 6) + right("local", 7) + "  " + fit("process", kProcessWidth) + right("GPU busy", 9) +
         right("kernels", 9) + right("idle", 8) + right("comm", 8) + right("compute", 9) + "\n";
  for (const RankStats& r : job.ranks) {
    out += right(std::to_string(r.rank), 6) + right(r.local_rank ? std::to_string(*r.local_rank) : "-", 7) + "  " +
           fit(terminal_safe(r.name, false), kProcessWidth);
    if (!r.has_trace) {
      out += "  no trace: only its place in the job is known\n";
      continue;
    }
    out += right(short_duration(r.busy_ns), 9) + right(short_duration(r.kernel_ns), 9) +
           right(or_dash(r.span_ns > 0, percent(r.idle_ns, r.span_ns)), 8) +
           right(or_dash(r.kernel_ns > 0, percent(r.communication_ns, r.kernel_ns)), 8) +
           right(short_duration(r.compute_ns), 9) + "\n";
  }
  if (job.deep_mode) {
    out += wrap_text("note: ", "      ",
                     "deep mode: the time the agent spent profiling (replays) is in the ranks' busy and idle "
                     "time above; compare the ranks' timing in always-on runs (CUTRIAGE_MODE=always-on)",
                     kJobWidth);
  }
  if (job.straggler) {
    const Straggler& s = *job.straggler;
    const RankStats& r = job.ranks[s.index];
    std::string text = "rank " + std::to_string(r.rank) + " (" + terminal_safe(r.name, false) + "): " +
                       (s.by_compute ? "compute " : "idle ") + short_duration(s.value_ns) + ", " +
                       short_duration(s.value_ns - s.median_ns) + " above the median of the ranks (" +
                       short_duration(s.median_ns) + ")";
    text += s.by_compute
                ? ": its kernels outside communication take longer, and the other ranks wait for it inside "
                  "their collectives (their communication time grows)"
                : ": its GPU waits longer for its own host (data loading, CPU work between launches), and the "
                  "other ranks wait for it inside their collectives";
    out += wrap_text("straggler: ", "           ", text, kJobWidth);
  } else {
    size_t traced = 0;
    for (const RankStats& r : job.ranks) traced += r.has_trace ? 1 : 0;
    out += wrap_text("straggler: ", "           ",
                     traced < 2 ? "not known (fewer than two ranks have a trace)"
                                : "none; no rank's compute or idle time is above the median of the ranks by " +
                                      fmt(100 * kStragglerMinSpanShare) + "% of the median span or more",
                     kJobWidth);
  }

  // The families side by side: the union of each rank's largest, most job time first.
  std::map<std::string, double> job_time;
  for (const RankStats& r : job.ranks) {
    for (size_t i = 0; i < r.families.size() && i < kJobFamiliesPerRank; ++i) job_time[r.families[i].name] = 0;
  }
  if (job_time.empty()) return out;
  for (const RankStats& r : job.ranks) {
    for (const RankFamily& f : r.families) {
      if (auto it = job_time.find(f.name); it != job_time.end()) it->second += f.total_ns;
    }
  }
  std::vector<std::pair<std::string, double>> order(job_time.begin(), job_time.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kNameWidth = 32, kCellWidth = 22;
  out += "\ntop families: share of each rank's kernel time, verdict\n";
  auto put_line = [&out](std::string line) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  std::string head = "  " + fit("family", kNameWidth);
  for (const RankStats& r : job.ranks) {
    if (r.has_trace) head += "  " + fit("rank " + std::to_string(r.rank), kCellWidth);
  }
  put_line(head);
  for (const auto& entry : order) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
    const std::string& name = entry.first;
    std::string line = "  " + fit(terminal_safe(name, false), kNameWidth);
    for (const RankStats& r : job.ranks) {
      if (!r.has_trace) continue;
      auto f = std::find_if(r.families.begin(), r.families.end(), [&](const RankFamily& x) { return x.name == name; });
      const std::string cell = f == r.families.end() ? "-" : percent(f->share, 1.0) + " " + f->verdict;
      line += "  " + fit(cell, kCellWidth);
    }
    put_line(line);
  }
  return out;
}

std::string render_rank_table(const JobView& job, TableFormat format) {
  const std::vector<std::string>& columns = table_columns(TableRows::kRanks);
  std::string out;
  if (format == TableFormat::kCsv) {
    for (size_t i = 0; i < columns.size(); ++i) out += (i != 0 ? "," : "") + columns[i];
    out += "\r\n";
  }
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    const RankStats& r = job.ranks[i];
    auto traced = [&](double v) -> TableCell { return r.has_trace ? TableCell(v) : TableCell(); };
    std::string straggler;
    if (job.straggler && job.straggler->index == i) straggler = job.straggler->by_compute ? "compute" : "idle";
    const RankFamily* top = r.families.empty() ? nullptr : &r.families.front();
    append_table_row(
        out, format, columns,
        {uint64_t{r.rank}, r.local_rank ? TableCell(uint64_t{*r.local_rank}) : TableCell(), r.name,
         job.world_size != 0 ? TableCell(uint64_t{job.world_size}) : TableCell(), traced(r.span_ns),
         traced(r.busy_ns), traced(r.idle_ns), r.has_trace && r.span_ns > 0 ? TableCell(r.idle_share()) : TableCell(),
         traced(r.kernel_ns), traced(r.communication_ns),
         r.has_trace && r.kernel_ns > 0 ? TableCell(r.communication_share()) : TableCell(), traced(r.compute_ns),
         straggler, top ? TableCell(top->name) : TableCell(), top ? TableCell(top->share) : TableCell(),
         top ? TableCell(top->classification.empty() ? (top->communication ? "communication" : "")
                                                     : top->classification)
             : TableCell()});
  }
  return out;
}

}  // namespace cutriage::tools
