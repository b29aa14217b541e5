#include "diff.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <system_error>
#include <limits>
#include <optional>

#include "output_file.h"
#include "trace_export.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

// Exit codes shared with main.cpp's list.
constexpr int kOk = 0;
constexpr int kUsage = 1;
constexpr int kUnreadable = 2;
constexpr int kNotCutriage = 3;
constexpr int kTruncated = 4;
constexpr int kWriteFailed = 6;

// "CLASSIFICATION_MEMORY_BOUND" -> "memory_bound", as the tables write enums.
std::string enum_value(const std::string& name, std::string_view prefix) {
  std::string s = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "unspecified" ? std::string() : s;
}

double pct_change(double before, double after) {
  if (before == 0) return after == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (after - before) / std::fabs(before) * 100.0;
}

// The diagnosis of `k`, its counters and its deciding number, into `side`.
void take_profile(const ReadResult& file, const v1::KernelProfile& k, FamilySide& side) {
  side.function = std::string(lookup(file, k.function_name_iid()));
  for (const v1::Metric& m : k.metrics()) {
    const std::string name(lookup(file, m.name_iid()));
    if (!name.empty()) side.counters[name] = m.value();
  }
  if (!k.has_diagnosis()) return;
  const v1::Diagnosis& d = k.diagnosis();
  side.profiled = true;
  side.classification = enum_value(v1::Classification_Name(d.classification()), "CLASSIFICATION_");
  side.limiter = enum_value(v1::Limiter_Name(d.primary_limiter()), "LIMITER_");
  side.rule_id = d.primary_rule_id();
  side.next_action = d.next_action();
  for (const v1::DecisionVisit& visit : d.path()) {
    for (const v1::Check& c : visit.checks()) {
      for (const v1::Evidence& e : c.evidence()) side.counters.try_emplace(e.metric(), e.value());
      if (c.rule_id() != d.primary_rule_id() || !side.evidence.empty()) continue;
      for (const v1::Evidence& e : c.evidence()) {
        side.evidence.push_back(e.metric());
        if (e.deciding() && side.deciding_metric.empty()) {
          side.deciding_metric = e.metric();
          side.deciding_value = e.value();
        }
      }
      // Files written before Evidence.deciding existed: the rule put its deciding number first.
      if (side.deciding_metric.empty() && c.evidence_size() > 0) {
        side.deciding_metric = c.evidence(0).metric();
        side.deciding_value = c.evidence(0).value();
      }
    }
  }
}

// One family of one process before the processes' families of one key are summed.
struct Part {
  FamilySide side;
  double median_weight = 0;  // launches whose median is side.median_ns
};

// The family's profiled launch: the one FamilyStats names, else its latest current record (as
// the family table does).
const v1::KernelProfile* profile_of(const std::vector<const v1::KernelProfile*>& current, const v1::FamilyStats& fs) {
  const v1::KernelProfile* found = nullptr;
  for (const v1::KernelProfile* k : current) {
    if (k->family_id() != fs.family_id()) continue;
    if (fs.profiled_launch_index() != 0 && k->launch_index() == fs.profiled_launch_index()) return k;
    if (found == nullptr || k->launch_index() > found->launch_index()) found = k;
  }
  return found;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The families of one process.
std::vector<Part> process_parts(const ReadResult& file, double& total_kernel_ns, double& span_ns) {
  std::vector<Part> parts;
  const std::vector<const v1::KernelProfile*> current = current_kernels(file);
  std::optional<v1::TraceSummary> recomputed;
  const v1::TraceSummary* summary = trace_summary(file);
  if (summary == nullptr) {
    recomputed = recompute_summary(file);
    if (recomputed) summary = &*recomputed;
  }
  if (summary != nullptr && summary->families_size() > 0) {
    total_kernel_ns += summary->total_kernel_ns();
    uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
    for (const v1::DeviceTimeline& d : summary->devices()) {
      if (d.last_end_ns() <= d.first_start_ns()) continue;
      first = std::min(first, d.first_start_ns());
      last = std::max(last, d.last_end_ns());
    }
    if (last > first) span_ns = std::max(span_ns, static_cast<double>(last - first));
    for (const v1::FamilyStats& fs : summary->families()) {
      Part p;
      const v1::KernelFamily* fam = find_family(file, fs.family_id());
      const std::string mangled = fam != nullptr ? std::string(lookup(file, fam->mangled_name_iid())) : "";
      p.side.name = family_name(file, fs.family_id());
      p.side.key = mangled.empty() ? p.side.name : mangled;
      p.side.launches = fs.launches() >= fs.replayed_launches() ? fs.launches() - fs.replayed_launches() : 0;
      p.side.total_ns = fs.total_ns();
      p.side.median_ns = fs.p50_ns();
      p.side.mean_ns = fs.mean_ns();
      p.median_weight = fs.p50_ns() > 0 ? static_cast<double>(p.side.launches) : 0;
      if (const v1::KernelProfile* k = profile_of(current, fs)) take_profile(file, *k, p.side);
      parts.push_back(std::move(p));
    }
    return parts;
  }
  // No trace (an Nsight Compute import): the kernel records are the launches. A record's time is
  // its unprofiled duration when the import had one (--timings: a median of plain runs), else the
  // profiled duration.
  std::map<std::string, size_t> index;
  std::map<std::string, std::vector<double>> times;
  for (const v1::KernelProfile* k : current) {
    std::string mangled(lookup(file, k->mangled_name_iid()));
    std::string display(lookup(file, k->function_name_iid()));
    if (display.empty()) display = std::string(lookup(file, k->demangled_name_iid()));
    if (mangled.empty()) mangled = display;
    auto [it, added] = index.try_emplace(mangled, parts.size());
    if (added) {
      Part& p = parts.emplace_back();
      p.side.key = mangled;
      p.side.name = display.empty() ? mangled : display;
    }
    Part& p = parts[it->second];
    const double t = k->unprofiled_duration_ns() > 0 ? k->unprofiled_duration_ns() : k->duration_ns();
    times[mangled].push_back(t);
    p.side.launches += 1;
    p.side.total_ns += t;
    total_kernel_ns += t;
    if (k->has_diagnosis() || !p.side.profiled) {
      // The latest diagnosed record of the kernel speaks for it.
      FamilySide fresh;
      fresh.key = p.side.key;
      fresh.name = p.side.name;
      fresh.launches = p.side.launches;
      fresh.total_ns = p.side.total_ns;
      take_profile(file, *k, fresh);
      p.side = std::move(fresh);
    }
  }
  for (Part& p : parts) {
    const std::vector<double>& t = times[p.side.key];
    p.side.median_ns = median_of(t);
    p.side.mean_ns = p.side.launches != 0 ? p.side.total_ns / static_cast<double>(p.side.launches) : 0;
    p.median_weight = static_cast<double>(p.side.launches);
  }
  return parts;
}

void emit_real(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += buf;
}

// A small JSON object writer: keys in the order written.
class JsonObject {
 public:
  JsonObject& str(std::string_view key, std::string_view value) {
    sep(key);
    out_ += json_string(value);
    return *this;
  }
  JsonObject& str_or_null(std::string_view key, std::string_view value) {
    if (value.empty()) return raw(key, "null");
    return str(key, value);
  }
  JsonObject& num(std::string_view key, double value) {
    sep(key);
    emit_real(out_, value);
    return *this;
  }
  JsonObject& integer(std::string_view key, uint64_t value) { return raw(key, std::to_string(value)); }
  JsonObject& boolean(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  JsonObject& raw(std::string_view key, std::string_view json) {
    sep(key);
    out_ += json;
    return *this;
  }
  [[nodiscard]] std::string done() const { return out_ + "}"; }

 private:
  void sep(std::string_view key) {
    out_ += out_.size() > 1 ? "," : "";
    out_ += json_string(key) + ":";
  }
  std::string out_ = "{";
};

std::string json_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i != 0 ? "," : "") + json_string(v[i]);
  return out + "]";
}

// The metrics shown side by side: the BEFORE verdict's evidence, then the AFTER verdict's
// deciding metric when it is another (what the limiter moved to).
std::vector<std::string> side_by_side(const FamilySide& b, const FamilySide& a) {
  std::vector<std::string> names = b.evidence;
  if (!a.deciding_metric.empty() && std::find(names.begin(), names.end(), a.deciding_metric) == names.end()) {
    names.push_back(a.deciding_metric);
  }
  return names;
}

std::string counters_json(const FamilySide& b, const FamilySide& a) {
  std::string out = "[";
  bool first = true;
  for (const std::string& m : side_by_side(b, a)) {
    JsonObject o;
    o.str("metric", m);
    auto bi = b.counters.find(m);
    auto ai = a.counters.find(m);
    if (bi != b.counters.end()) o.num("before", bi->second); else o.raw("before", "null");
    if (ai != a.counters.end()) o.num("after", ai->second); else o.raw("after", "null");
    out += (first ? "" : ",") + o.done();
    first = false;
  }
  return out + "]";
}

std::string fmt_ns(double ns) {
  char buf[48];
  if (!std::isfinite(ns)) return "?";
  if (ns < 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  }
  return buf;
}

std::string fmt_pct(double pct) {
  if (!std::isfinite(pct)) return pct > 0 ? "+inf%" : "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", pct);
  return buf;
}

std::string fmt_value(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string verdict_of(const FamilySide& s) {
  if (!s.profiled) return "not profiled";
  std::string v = s.classification.empty() ? std::string("?") : s.classification;
  if (!s.limiter.empty()) v += " (" + s.limiter + ")";
  return v;
}

std::string files_of(const RunView& v) {
  std::string out;
  for (size_t i = 0; i < v.paths.size(); ++i) out += (i != 0 ? " " : "") + v.paths[i];
  if (v.processes.size() > 1) out += " (" + std::to_string(v.processes.size()) + " processes)";
  return out;
}

}  // namespace

RunView run_view(const std::vector<ProcessRun>& runs) {
  RunView view;
  std::vector<Part> all;
  for (const ProcessRun& run : runs) {
    view.processes.push_back(run.name);
    for (const std::string& p : run.paths) view.paths.push_back(p);
    std::vector<Part> parts = process_parts(run.file, view.total_kernel_ns, view.span_ns);
    const v1::SessionHeader& header = run.file.file.records(0).session();
    for (const v1::Record& rec : run.file.file.records()) {
      if (!rec.has_session_end() || header.source() != v1::SessionHeader::SOURCE_AGENT) continue;
      const uint64_t start = header.start_time_unix_ns(), end = rec.session_end().end_time_unix_ns();
      if (start != 0 && end > start) view.wall_ns = std::max(view.wall_ns, static_cast<double>(end - start));
    }
    for (Part& p : parts) all.push_back(std::move(p));
  }
  // One family per key, the processes (and devices, block shapes) of the side summed. The median
  // of several parts is their launch-weighted mean: the launches themselves are not in the
  // summaries.
  std::map<std::string, size_t> index;
  std::vector<Part> merged;
  for (Part& p : all) {
    auto [it, added] = index.try_emplace(p.side.key, merged.size());
    if (added) {
      merged.push_back(std::move(p));
      continue;
    }
    Part& m = merged[it->second];
    // A part with launches but no median makes the sum's median unknown (the mean is used).
    const bool known = (m.side.median_ns > 0 || m.side.launches == 0) && (p.side.median_ns > 0 || p.side.launches == 0);
    const double w = m.median_weight + p.median_weight;
    m.side.median_ns =
        known && w > 0 ? (m.side.median_ns * m.median_weight + p.side.median_ns * p.median_weight) / w : 0;
    m.median_weight = known ? w : 0;
    const bool take = p.side.profiled && (!m.side.profiled || p.side.total_ns > m.side.total_ns);
    const uint64_t launches = m.side.launches + p.side.launches;
    const double total = m.side.total_ns + p.side.total_ns;
    if (take) {
      const double median = m.side.median_ns;
      m.side = std::move(p.side);
      m.side.median_ns = median;
    }
    m.side.launches = launches;
    m.side.total_ns = total;
    m.side.mean_ns = launches != 0 ? total / static_cast<double>(launches) : 0;
  }
  for (Part& m : merged) view.families.push_back(std::move(m.side));
  std::stable_sort(view.families.begin(), view.families.end(),
                   [](const FamilySide& a, const FamilySide& b) { return a.total_ns > b.total_ns; });
  return view;
}

namespace {

bool names_match(const FamilySide& f, const std::string& name) {
  return f.key == name || f.name == name || (!f.function.empty() && f.function == name);
}

}  // namespace

DiffResult compute_diff(RunView before, RunView after, const DiffOptions& options) {
  DiffResult r;
  r.before = std::move(before);
  r.after = std::move(after);
  const double noise = options.noise_pct;
  std::vector<long> after_of(r.before.families.size(), -1);
  std::vector<bool> after_taken(r.after.families.size(), false);
  std::vector<bool> renamed(r.before.families.size(), false);
  for (const auto& match : options.matches) {
    const std::string& old_name = match.first;
    const std::string& new_name = match.second;
    long b = -1, a = -1;
    for (size_t i = 0; i < r.before.families.size() && b < 0; ++i) {
      if (after_of[i] < 0 && names_match(r.before.families[i], old_name)) b = static_cast<long>(i);
    }
    for (size_t i = 0; i < r.after.families.size() && a < 0; ++i) {
      if (!after_taken[i] && names_match(r.after.families[i], new_name)) a = static_cast<long>(i);
    }
    auto missing = [&](const std::string& name, const char* side) {
      std::string w = "--match ";
      w += old_name;
      w += '=';
      w += new_name;
      w += ": no kernel '";
      w += name;
      w += "' in ";
      w += side;
      r.warnings.push_back(std::move(w));
    };
    if (b < 0) missing(old_name, "BEFORE");
    if (a < 0) missing(new_name, "AFTER");
    if (a < 0 || b < 0) continue;
    after_of[static_cast<size_t>(b)] = a;
    after_taken[static_cast<size_t>(a)] = true;
    renamed[static_cast<size_t>(b)] = true;
  }
  for (size_t i = 0; i < r.before.families.size(); ++i) {
    if (after_of[i] >= 0) continue;
    for (size_t j = 0; j < r.after.families.size(); ++j) {
      if (!after_taken[j] && r.after.families[j].key == r.before.families[i].key) {
        after_of[i] = static_cast<long>(j);
        after_taken[j] = true;
        break;
      }
    }
  }
  // Then by name for people: an Nsight Compute import has no mangled names (its key is the
  // demangled signature), an agent file has them; the function name without parameters is what
  // both give. Only a name that is unique on both sides pairs.
  auto unique_name = [](const std::vector<FamilySide>& fams, const std::string& name) {
    return std::count_if(fams.begin(), fams.end(), [&](const FamilySide& f) { return f.name == name; }) == 1;
  };
  for (size_t i = 0; i < r.before.families.size(); ++i) {
    if (after_of[i] >= 0 || !unique_name(r.before.families, r.before.families[i].name)) continue;
    for (size_t j = 0; j < r.after.families.size(); ++j) {
      if (!after_taken[j] && r.after.families[j].name == r.before.families[i].name &&
          unique_name(r.after.families, r.after.families[j].name)) {
        after_of[i] = static_cast<long>(j);
        after_taken[j] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < r.before.families.size(); ++i) {
    if (after_of[i] < 0) {
      r.only_before.push_back(i);
      continue;
    }
    FamilyDiff d;
    d.before = i;
    d.after = static_cast<size_t>(after_of[i]);
    d.renamed = renamed[i];
    const FamilySide& b = r.before.families[d.before];
    const FamilySide& a = r.after.families[d.after];
    const bool median = b.median_ns > 0 && a.median_ns > 0;
    d.basis = median ? "median" : "mean";
    d.before_ns = median ? b.median_ns : b.mean_ns;
    d.after_ns = median ? a.median_ns : a.mean_ns;
    if (!(d.before_ns > 0 && d.after_ns > 0)) {
      // No unprofiled time on a side (every launch was replayed): nothing to compare, and
      // nothing for the gate to hold.
      d.basis = "none";
      d.change_pct = std::numeric_limits<double>::quiet_NaN();
      d.call = "unknown";
      d.chain = ChainLabel::kNoChange;
      r.matched.push_back(std::move(d));
      continue;
    }
    d.change_pct = pct_change(d.before_ns, d.after_ns);
    d.call = d.change_pct < -noise ? "keep" : d.change_pct > noise ? "revert" : "neutral";
    for (const CausalPrediction& p : predictions_for(b.rule_id)) {
      d.predicted = true;
      const std::string metric = p.metric.empty() ? b.deciding_metric : std::string(p.metric);
      auto bi = b.counters.find(metric);
      auto ai = a.counters.find(metric);
      if (d.prediction_why.empty()) d.prediction_why = std::string(p.why);
      if (metric.empty() || bi == b.counters.end() || ai == a.counters.end()) continue;
      CounterMove m;
      m.metric = metric;
      m.direction = p.direction;
      m.before = bi->second;
      m.after = ai->second;
      m.change_pct = pct_change(m.before, m.after);
      m.as_predicted = moved(m.before, m.after, p.direction, noise);
      d.prediction_why = std::string(p.why);
      d.counter = m;
      break;
    }
    d.chain = chain_label(d.change_pct, noise, d.counter, d.predicted);
    if (options.fail_if_slower_pct && d.change_pct > *options.fail_if_slower_pct) {
      d.over_limit = true;
      r.fail = true;
    }
    r.matched.push_back(std::move(d));
  }
  for (size_t j = 0; j < r.after.families.size(); ++j) {
    if (!after_taken[j]) r.only_after.push_back(j);
  }
  // The total the gate holds: every matched family at BEFORE's launch counts, so a run that
  // launched more (a longer run, a warm-up not filtered) is not read as a slower one.
  for (const FamilyDiff& d : r.matched) {
    if (d.basis == "none") continue;
    const double n = static_cast<double>(r.before.families[d.before].launches);
    r.matched_before_ns += d.before_ns * n;
    r.matched_after_ns += d.after_ns * n;
  }
  r.total_change_pct = pct_change(r.matched_before_ns, r.matched_after_ns);
  if (options.fail_if_slower_pct && r.total_change_pct > *options.fail_if_slower_pct) {
    r.total_over_limit = true;
    r.fail = true;
  }
  return r;
}

std::string render_diff_text(const DiffResult& diff, const DiffOptions& options) {
  std::string out;
  out += "before  " + terminal_safe(files_of(diff.before), false) + "\n";
  out += "after   " + terminal_safe(files_of(diff.after), false) + "\n";
  out += "noise   " + fmt_value(options.noise_pct) + "%: a change within it is neutral\n";
  for (const std::string& w : diff.warnings) out += "warning " + terminal_safe(w, false) + "\n";
  size_t n = 0;
  for (const FamilyDiff& d : diff.matched) {
    const FamilySide& b = diff.before.families[d.before];
    const FamilySide& a = diff.after.families[d.after];
    out += "\n[" + std::to_string(++n) + "] " + terminal_safe(b.name, false);
    if (d.renamed || a.name != b.name) out += " -> " + terminal_safe(a.name, false);
    out += "\n";
    out += "    time      " + fmt_ns(d.before_ns) + " -> " + fmt_ns(d.after_ns) + " per launch (" + d.basis + "), " +
           fmt_pct(d.change_pct) + "; total " + fmt_ns(b.total_ns) + " -> " + fmt_ns(a.total_ns) + " over " +
           std::to_string(b.launches) + " -> " + std::to_string(a.launches) + " launches\n";
    std::string call = d.call == "keep"      ? "KEEP: faster beyond the noise"
                       : d.call == "revert"  ? "REVERT: slower beyond the noise"
                       : d.call == "unknown" ? "UNKNOWN: a run has no unprofiled time of this kernel"
                                             : "NEUTRAL: within the noise, the change buys nothing measurable";
    if (d.over_limit) call += " (over --fail-if-slower " + fmt_value(*options.fail_if_slower_pct) + "%)";
    out += "    call      " + call + "\n";
    out += "    verdict   " + verdict_of(b) + " -> " + verdict_of(a) + "\n";
    if (!b.rule_id.empty() || !a.rule_id.empty()) {
      out += "    rule      " + (b.rule_id.empty() ? std::string("-") : b.rule_id) + " -> " +
             (a.rule_id.empty() ? std::string("-") : a.rule_id) + "\n";
    }
    std::string chain = to_string(d.chain);
    if (d.counter) {
      const CounterMove& m = *d.counter;
      chain += ": " + terminal_safe(m.metric, false) + " " + fmt_value(m.before) + " -> " + fmt_value(m.after) +
               " (" + fmt_pct(m.change_pct) + "), predicted to " + to_string(m.direction) + " (" + d.prediction_why +
               ")" + (m.as_predicted ? "" : ": it did not");
    } else if (d.predicted) {
      chain += ": the predicted counter is not in both files (" + d.prediction_why + ")";
    } else if (!b.profiled) {
      chain += ": BEFORE has no diagnosis of this kernel";
    } else {
      chain += ": " + (b.rule_id.empty() ? std::string("the verdict") : b.rule_id) +
               " predicts no counter, only the duration tells";
    }
    out += "    chain     " + chain + "\n";
    const std::vector<std::string> names = side_by_side(b, a);
    bool first = true;
    for (const std::string& m : names) {
      auto bi = b.counters.find(m);
      auto ai = a.counters.find(m);
      std::string line = terminal_safe(m, false) + " = " + (bi != b.counters.end() ? fmt_value(bi->second) : "-") +
                         " -> " + (ai != a.counters.end() ? fmt_value(ai->second) : "-");
      if (bi != b.counters.end() && ai != a.counters.end()) line += " (" + fmt_pct(pct_change(bi->second, ai->second)) + ")";
      if (m == b.deciding_metric) line += "  <- deciding before";
      if (m == a.deciding_metric && a.deciding_metric != b.deciding_metric) line += "  <- deciding after";
      out += std::string(first ? "    metrics   " : "              ") + line + "\n";
      first = false;
    }
    if (!b.next_action.empty()) out += "    next was  " + terminal_safe(b.next_action, false) + "\n";
  }
  for (size_t i : diff.only_before) {
    out += "\nonly in before: " + terminal_safe(diff.before.families[i].name, false) + " (" +
           fmt_ns(diff.before.families[i].total_ns) + ")\n";
  }
  for (size_t i : diff.only_after) {
    out += "\nonly in after:  " + terminal_safe(diff.after.families[i].name, false) + " (" +
           fmt_ns(diff.after.families[i].total_ns) + ")\n";
  }
  out += "\ntotal   matched families at BEFORE's launch counts " + fmt_ns(diff.matched_before_ns) + " -> " +
         fmt_ns(diff.matched_after_ns) + " (" + fmt_pct(diff.total_change_pct) + ")";
  if (diff.total_over_limit) out += " (over --fail-if-slower)";
  out += "\n        GPU time as run " + fmt_ns(diff.before.total_kernel_ns) + " -> " + fmt_ns(diff.after.total_kernel_ns) +
         " (" + fmt_pct(pct_change(diff.before.total_kernel_ns, diff.after.total_kernel_ns)) + ")";
  if (diff.before.span_ns > 0 && diff.after.span_ns > 0) {
    out += "; GPU span " + fmt_ns(diff.before.span_ns) + " -> " + fmt_ns(diff.after.span_ns);
  }
  out += "\n";
  if (diff.before.wall_ns > 0 && diff.after.wall_ns > 0) {
    out += "        end to end (the application's wall time) " + fmt_ns(diff.before.wall_ns) + " -> " +
           fmt_ns(diff.after.wall_ns) + " (" + fmt_pct(pct_change(diff.before.wall_ns, diff.after.wall_ns)) + ")\n";
  }
  if (options.fail_if_slower_pct) {
    out += diff.fail ? "FAIL    slower than --fail-if-slower " + fmt_value(*options.fail_if_slower_pct) + "%\n"
                     : "pass    nothing slower than --fail-if-slower " + fmt_value(*options.fail_if_slower_pct) + "%\n";
  }
  return out;
}

std::string render_diff_json(const DiffResult& diff, const DiffOptions& options) {
  std::string out;
  for (const FamilyDiff& d : diff.matched) {
    const FamilySide& b = diff.before.families[d.before];
    const FamilySide& a = diff.after.families[d.after];
    JsonObject o;
    o.str("kind", "family").str("before_name", b.name).str("after_name", a.name).boolean("renamed", d.renamed);
    o.str("basis", d.basis).num("before_ns", d.before_ns).num("after_ns", d.after_ns).num("change_pct", d.change_pct);
    o.num("before_total_ns", b.total_ns).num("after_total_ns", a.total_ns);
    o.integer("before_launches", b.launches).integer("after_launches", a.launches);
    o.str("call", d.call).boolean("over_limit", d.over_limit);
    o.str_or_null("before_verdict", b.classification).str_or_null("after_verdict", a.classification);
    o.str_or_null("before_limiter", b.limiter).str_or_null("after_limiter", a.limiter);
    o.str_or_null("before_rule", b.rule_id).str_or_null("after_rule", a.rule_id);
    o.str_or_null("before_deciding_metric", b.deciding_metric).str_or_null("after_deciding_metric", a.deciding_metric);
    o.str("chain", to_string(d.chain));
    if (d.counter) {
      o.str("chain_metric", d.counter->metric).str("predicted", to_string(d.counter->direction));
      o.num("chain_before", d.counter->before).num("chain_after", d.counter->after);
      o.num("chain_change_pct", d.counter->change_pct);
    } else {
      o.raw("chain_metric", "null").raw("predicted", "null");
    }
    o.raw("metrics", counters_json(b, a));
    o.str_or_null("next_action_before", b.next_action);
    out += o.done() + "\n";
  }
  for (size_t i : diff.only_before) {
    out += JsonObject().str("kind", "only_before").str("name", diff.before.families[i].name)
               .num("total_ns", diff.before.families[i].total_ns).done() + "\n";
  }
  for (size_t i : diff.only_after) {
    out += JsonObject().str("kind", "only_after").str("name", diff.after.families[i].name)
               .num("total_ns", diff.after.families[i].total_ns).done() + "\n";
  }
  JsonObject total;
  total.str("kind", "total").num("matched_before_ns", diff.matched_before_ns).num("matched_after_ns", diff.matched_after_ns);
  total.num("change_pct", diff.total_change_pct).boolean("over_limit", diff.total_over_limit);
  total.num("before_total_kernel_ns", diff.before.total_kernel_ns).num("after_total_kernel_ns", diff.after.total_kernel_ns);
  if (diff.before.wall_ns > 0 && diff.after.wall_ns > 0) {
    total.num("before_wall_ns", diff.before.wall_ns).num("after_wall_ns", diff.after.wall_ns);
  } else {
    total.raw("before_wall_ns", "null").raw("after_wall_ns", "null");
  }
  total.num("noise_pct", options.noise_pct);
  if (options.fail_if_slower_pct) total.num("fail_if_slower_pct", *options.fail_if_slower_pct); else total.raw("fail_if_slower_pct", "null");
  total.boolean("fail", diff.fail);
  out += total.done() + "\n";
  return out;
}

std::vector<std::string> ledger_lines(const DiffResult& diff, const DiffOptions& options) {
  uint64_t now = options.now_unix_ns;
  if (now == 0) {
    now = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
  std::vector<std::string> lines;
  for (const FamilyDiff& d : diff.matched) {
    const FamilySide& b = diff.before.families[d.before];
    const FamilySide& a = diff.after.families[d.after];
    JsonObject hyp;
    hyp.str_or_null("verdict", b.classification).str_or_null("limiter", b.limiter).str_or_null("rule", b.rule_id);
    hyp.str_or_null("deciding_metric", b.deciding_metric);
    if (d.counter) hyp.str("watched_metric", d.counter->metric).str("predicted", to_string(d.counter->direction));
    else hyp.raw("watched_metric", "null").raw("predicted", "null");
    hyp.str_or_null("next_action", b.next_action);
    JsonObject kt;
    kt.str("basis", d.basis).num("before_ns", d.before_ns).num("after_ns", d.after_ns).num("change_pct", d.change_pct);
    JsonObject e2e;
    e2e.num("before_total_kernel_ns", diff.before.total_kernel_ns).num("after_total_kernel_ns", diff.after.total_kernel_ns);
    e2e.num("matched_before_ns", diff.matched_before_ns).num("matched_after_ns", diff.matched_after_ns);
    e2e.num("matched_change_pct", diff.total_change_pct);
    if (diff.before.span_ns > 0) e2e.num("before_span_ns", diff.before.span_ns); else e2e.raw("before_span_ns", "null");
    if (diff.after.span_ns > 0) e2e.num("after_span_ns", diff.after.span_ns); else e2e.raw("after_span_ns", "null");
    if (diff.before.wall_ns > 0) e2e.num("before_wall_ns", diff.before.wall_ns); else e2e.raw("before_wall_ns", "null");
    if (diff.after.wall_ns > 0) e2e.num("after_wall_ns", diff.after.wall_ns); else e2e.raw("after_wall_ns", "null");
    JsonObject line;
    line.integer("time_unix_ns", now).str("label", options.label);
    line.raw("baseline", json_strings(diff.before.paths)).raw("candidate", json_strings(diff.after.paths));
    line.str("family", b.name).str("after_family", a.name).str("key", b.key);
    line.raw("hypothesis", hyp.done()).raw("counters", counters_json(b, a));
    line.raw("kernel_time", kt.done()).raw("end_to_end", e2e.done());
    line.str("call", d.call).str("chain", to_string(d.chain)).num("noise_pct", options.noise_pct);
    lines.push_back(line.done());
  }
  return lines;
}

bool append_ledger(const std::string& path, const std::vector<std::string>& lines, std::string& error) {
  // O_APPEND: never overwrites an earlier row (the ledger's whole point), and lines of two diffs
  // run at once do not interleave within one write. O_NOFOLLOW: a symlink planted at the name is
  // not followed into someone else's file. 0600: the ledger names files and commands.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = std::generic_category().message(errno);
    return false;
  }
  std::string bytes;
  for (const std::string& l : lines) bytes += l + "\n";
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? std::generic_category().message(errno) : std::string("short write");
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    error = std::generic_category().message(errno);
    return false;
  }
  return true;
}

int cmd_diff(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.ledger_path.empty()) {
    for (const std::vector<std::string>* side : {&options.before, &options.after}) {
      for (const std::string& in : *side) {
        if (same_file(options.ledger_path, in)) {
          err << "cutriage: the ledger '" << options.ledger_path << "' is the input '" << in << "'\n";
          return kUsage;
        }
      }
    }
  }
  bool truncated = false;
  std::vector<ProcessRun> sides[2];
  const std::vector<std::string>* paths[2] = {&options.before, &options.after};
  for (int s = 0; s < 2; ++s) {
    MultiRead read = read_runs(*paths[s], ReadScope::kCurrent);
    for (const std::string& m : read.messages) err << "cutriage: " << m << "\n";
    if (!read.conflict.empty()) {
      err << "cutriage: " << read.conflict << "\n";
      return kUsage;
    }
    if (read.status == ReadStatus::kUnreadable) return kUnreadable;
    if (read.status == ReadStatus::kNotCutriage) return kNotCutriage;
    if (read.status == ReadStatus::kTruncated) truncated = true;
    sides[s] = std::move(read.processes);
  }
  DiffResult diff = compute_diff(run_view(sides[0]), run_view(sides[1]), options);
  for (const std::string& w : diff.warnings) err << "cutriage: " << w << "\n";
  out << (options.format == DiffFormat::kText ? render_diff_text(diff, options) : render_diff_json(diff, options));
  if (!options.ledger_path.empty()) {
    std::string error;
    if (!append_ledger(options.ledger_path, ledger_lines(diff, options), error)) {
      err << "cutriage: cannot append to the ledger '" << options.ledger_path << "': " << error << "\n";
      return kWriteFailed;
    }
  }
  if (diff.fail) return kExitSlower;
  return truncated ? kTruncated : kOk;
}

}  // namespace cutriage::tools
