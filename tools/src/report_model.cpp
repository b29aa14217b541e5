#include "report_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "cutriage/base/demangle.h"
#include "cutriage/base/numbers.h"

namespace cutriage::tools::model {

namespace v1 = cutriage::v1;

namespace {

// A kernel-local estimate from this factor on means the verdict names work to remove.
constexpr double kWasteGain = 1.2;

// Limiters that name work the kernel need not do (traffic, instructions, lanes): a unit near its
// peak is then busy with that waste, not with the algorithm's own work.
bool removes_waste(v1::Limiter l) {
  switch (l) {
    case v1::LIMITER_UNCOALESCED_GLOBAL:
    case v1::LIMITER_LOW_BYTES_PER_SECTOR:
    case v1::LIMITER_STORE_AMPLIFICATION:
    case v1::LIMITER_LOCAL_MEMORY_SPILLS:
    case v1::LIMITER_SHARED_BANK_CONFLICTS:
    case v1::LIMITER_ATOMIC_CONTENTION:
    case v1::LIMITER_EXCESS_L2_TRANSACTIONS:
    case v1::LIMITER_REGISTER_FILE_SMEM_FILL:
    case v1::LIMITER_WARP_DIVERGENCE:
    case v1::LIMITER_PREDICATION:
    case v1::LIMITER_INSTRUCTION_REPLAY:
    case v1::LIMITER_SLOW_PATH_ARITHMETIC:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string fmt(double v, int precision) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  double a = std::fabs(v);
  // Whole numbers from five digits on are counts: grouped, never in exponent form.
  if (a >= 10000 && a < 1e18 && std::fabs(v - std::round(v)) < 1e-9) return base::grouped_integer(v);
  const bool extreme = a != 0 && (a >= 1e7 || a < 1e-3);
  if (!extreme && (a >= 100 || v == std::floor(v))) {
    std::snprintf(buf, sizeof buf, "%.*f", std::fabs(v - std::round(v)) < 1e-9 ? 0 : 1, v);
  } else {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  }
  return buf;
}

std::string duration(double ns) {
  char buf[64];
  if (ns >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  }
  return buf;
}

// "CLASSIFICATION_MEMORY_BOUND" -> "memory bound"
std::string enum_words(const std::string& name, std::string_view prefix) {
  std::string s = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& c : s) c = c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string decision_label(v1::Decision d) {
  switch (d) {
    case v1::DECISION_D0_TRUST: return "D0 trust";
    case v1::DECISION_D1_WORKLOAD_SIZE: return "D1 size";
    case v1::DECISION_D2_REGIME: return "D2 regime";
    case v1::DECISION_D2A_DISPATCH: return "D2A dispatch";
    case v1::DECISION_D3_ISSUE_STALLS: return "D3 stalls";
    case v1::DECISION_D4_COMPUTE_PIPE: return "D4 pipes";
    case v1::DECISION_D5_MEMORY_MECHANISM: return "D5 memory";
    case v1::DECISION_D6_SOURCE_LINES: return "D6 source";
    case v1::DECISION_D7_HARDWARE_LIMIT: return "D7 limits";
    default: return "D?";
  }
}

std::string dim(const v1::Dim3& d) {
  return std::to_string(d.x()) + "x" + std::to_string(d.y()) + "x" + std::to_string(d.z());
}

const v1::Check* find_primary(const v1::Diagnosis& d) {
  if (d.primary_rule_id().empty()) return nullptr;
  for (const auto& visit : d.path()) {
    for (const auto& c : visit.checks()) {
      if (c.rule_id() == d.primary_rule_id()) return &c;
    }
  }
  return nullptr;
}

// Compact durations for tables, three significant digits, at most 9 characters: "1.23 s",
// "512 ms", "42.1 us". "-" for a value that is not a duration (unknown, no sample).
std::string short_duration(double ns) {
  char buf[64];
  if (!std::isfinite(ns) || ns < 0) return "-";
  if (ns == 0) return "0";
  const char* unit = "ns";
  double v = ns;
  if (ns >= 1e9) {
    v = ns / 1e9;
    unit = "s";
  } else if (ns >= 1e6) {
    v = ns / 1e6;
    unit = "ms";
  } else if (ns >= 1e3) {
    v = ns / 1e3;
    unit = "us";
  }
  const int decimals = v >= 100 || unit[0] == 'n' ? 0 : v >= 10 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  return buf;
}

std::string percent(double part, double whole) {
  if (!(whole > 0) || !std::isfinite(part)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * part / whole);
  return buf;
}

std::string with_commas(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "CLASSIFICATION_MEMORY_BOUND" + headline "memory_bound: DRAM" -> "MEMORY BOUND - DRAM".
std::string verdict_text(const v1::Diagnosis& d) {
  std::string cls = enum_words(v1::Classification_Name(d.classification()), "CLASSIFICATION_");
  for (char& c : cls) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string text = cls;
  if (!d.headline().empty()) {
    // The engine's headline starts with the classification's name ("memory_bound: ..."), which
    // the line already shows in words.
    std::string headline = d.headline();
    size_t colon = headline.find(": ");
    if (colon != std::string::npos && headline.find(' ') > colon) headline = headline.substr(colon + 2);
    text += " - " + headline;
  }
  return text;
}

// Decision 7's confirmation in words, with its own unit and threshold (never a fixed number).
std::string hardware_limit_text(const v1::Diagnosis& d) {
  for (const auto& visit : d.path()) {
    for (const auto& c : visit.checks()) {
      if (c.rule_id() != "d7.limiter_near_peak" || c.outcome() != v1::OUTCOME_FIRED) continue;
      // The deciding number; in files written before evidence was marked deciding, the unit
      // nearest its peak (the one the check names), never the engine's routing bookkeeping
      // (before: "cutriage__routed_regime runs at 3% of its peak").
      std::string unit;
      double value = 0;
      for (const auto& e : c.evidence()) {
        if (e.deciding()) {
          unit = e.metric();
          value = e.value();
          break;
        }
        if (e.metric().rfind("cutriage__routed", 0) == 0) continue;
        const bool pct = e.metric().find("pct_of_peak") != std::string::npos;
        const bool best_pct = unit.find("pct_of_peak") != std::string::npos;
        if (unit.empty() || (pct && (!best_pct || e.value() > value))) {
          unit = e.metric();
          value = e.value();
        }
      }
      double limit = 80;
      for (const auto& t : c.thresholds()) {
        if (t.name() == "d7.limiter_near_peak.near_peak_pct") limit = t.value();
      }
      const std::string at = "Decision 7: " + unit.substr(0, unit.find('.')) + " runs at " + fmt(value) +
                             "% of its peak, at or above " + fmt(limit) + "%";
      // A verdict that removes waste (uncoalesced loads, divergence, conflicts) gains by taking work
      // off the saturated unit: "little is left to gain" would contradict its own estimate.
      if (d.estimated_speedup() >= kWasteGain || removes_waste(d.primary_limiter())) {
        return at + ": saturated by work the fix above removes";
      }
      return at + ": little is left to gain in this implementation";
    }
  }
  return "Decision 7: the limiting unit runs close to its peak";
}

// Why a family has no verdict, from the agent's selection: the state, and its detail when given.
std::string selection_text(const v1::FamilyStats& fs) {
  using FS = v1::FamilyStats;
  const std::string& detail = fs.selection_detail();
  switch (fs.selection()) {
    case FS::SELECTION_FAILED:
      return "profiling failed" + (detail.empty() ? std::string() : ": " + detail);
    case FS::SELECTION_PROFILED:
      return "profiled, but its record is not in the file (the process did not exit normally?)";
    default:
      break;
  }
  // Without a detail the state is explained; with one, the detail says why and the state is named.
  std::string why, state;
  switch (fs.selection()) {
    case FS::SELECTION_NOT_RANKED:
      why = "below the selection policy's cut", state = "not ranked";
      break;
    case FS::SELECTION_FILTERED:
      why = "excluded by the kernel or NVTX filter or the launch limits", state = "filtered";
      break;
    case FS::SELECTION_TOO_FEW_LAUNCHES:
      why = "not launched again once its rank was known", state = "too few launches";
      break;
    case FS::SELECTION_RANKED_AFTER_LAST_LAUNCH:
      why = "ranked only after its last launch", state = "ranked after its last launch";
      break;
    case FS::SELECTION_GRAPH_ONLY:
      why = "only launched from CUDA graphs", state = "graph only";
      break;
    case FS::SELECTION_MOSTLY_IN_GRAPHS:
      why = "most of its executions ran inside CUDA graph launches", state = "mostly in graphs";
      break;
    case FS::SELECTION_NOT_REPLAYABLE:
      why = "cooperative or communication kernel, not replayable", state = "not replayable";
      break;
    case FS::SELECTION_NOT_PERMITTED:
      why = "counters not permitted", state = "not permitted";
      break;
    case FS::SELECTION_TRACE_ONLY:
      why = "trace only (selection policy none)", state = "trace only";
      break;
    default:
      why = "the selection was not recorded", state = "unknown";
      break;
  }
  if (detail.empty()) return "not profiled: " + why;
  return "not profiled: " + detail + " (" + state + ")";
}

std::string gpu_label(const v1::SessionHeader* session, uint32_t device) {
  std::string label = "GPU " + std::to_string(device);
  if (session == nullptr) return label;
  for (const auto& g : session->gpus()) {
    if (g.device() != device) continue;
    const std::string& name = g.name().empty() ? g.chip() : g.name();
    if (!name.empty()) label += " (" + name + ")";
  }
  return label;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return with_commas(n) + " " + (n == 1 ? one : many);
}

// The profiled launch whose diagnosis stands for a family: among the current records of the
// family (KernelProfile.family_id) that no later record combines, the summary's
// profiled_launch_index, else the last profiled one, else the last one.
const v1::KernelProfile* family_profile(const std::vector<const v1::KernelProfile*>& current,
                                        const v1::FamilyStats& fs) {
  const v1::KernelProfile* last_profiled = nullptr;
  const v1::KernelProfile* last = nullptr;
  for (const v1::KernelProfile* k : current) {
    if (k->family_id() != fs.family_id() || fs.family_id() == 0) continue;
    if (fs.profiled_launch_index() != 0 && k->launch_index() == fs.profiled_launch_index()) return k;
    if (k->status() == v1::PROFILE_STATUS_PROFILED || k->status() == v1::PROFILE_STATUS_UNSPECIFIED) {
      last_profiled = k;
    }
    last = k;
  }
  return last_profiled != nullptr ? last_profiled : last;
}

std::string not_profiled_text(const v1::KernelProfile* k, const v1::FamilyStats& fs) {
  if (k == nullptr || fs.selection() != v1::FamilyStats::SELECTION_UNSPECIFIED) return selection_text(fs);
  // No selection recorded: the kernel's own record says why it was not profiled.
  std::string why = "not profiled: " + enum_words(v1::ProfileStatus_Name(k->status()), "PROFILE_STATUS_");
  if (!k->status_detail().empty()) why += " (" + k->status_detail() + ")";
  return why;
}

// ---- the kernels the report shows --------------------------------------------------------

bool is_profiled(const v1::KernelProfile& k) {
  return k.status() == v1::PROFILE_STATUS_UNSPECIFIED || k.status() == v1::PROFILE_STATUS_PROFILED;
}

ReportKernels report_kernels(const ReadResult& file) {
  ReportKernels out;
  const std::vector<const v1::KernelProfile*> all_current = current_kernels(file);
  std::set<std::pair<uint64_t, uint64_t>> superseded;  // (mangled name id, launch index)
  for (const v1::KernelProfile* k : all_current) {
    for (uint64_t li : k->combined_launch_indices()) superseded.insert({k->mangled_name_iid(), li});
  }
  for (const v1::KernelProfile* k : all_current) {
    if (superseded.count({k->mangled_name_iid(), k->launch_index()}) != 0) continue;
    out.current.push_back(k);
    (is_profiled(*k) ? out.profiled : out.unprofiled).push_back(k);
  }
  std::stable_sort(out.profiled.begin(), out.profiled.end(),
                   [](const auto* a, const auto* b) { return a->duration_ns() > b->duration_ns(); });
  return out;
}

std::string kernel_name(const ReadResult& file, const v1::KernelProfile& k) {
  std::string name(lookup(file, k.function_name_iid()));
  if (name.empty()) name = std::string(lookup(file, k.demangled_name_iid()));
  if (name.empty()) name = std::string(lookup(file, k.mangled_name_iid()));
  if (name.empty()) name = "(unnamed kernel)";
  return name;
}

std::string function_label(std::string_view mangled) {
  std::string base = function_base_name(demangle(mangled));
  return base.empty() ? std::string(mangled) : base;
}

std::string collected_text(const v1::KernelProfile& k) {
  if (k.passes() == 0 && k.combined_launch_indices_size() == 0) return {};
  std::string out;
  if (k.launch_index() != 0) out += "launch #" + std::to_string(k.launch_index());
  for (uint64_t li : k.combined_launch_indices()) out += " + #" + std::to_string(li);
  const bool named = k.launch_index() != 0;
  if (k.replay_mode() == v1::REPLAY_MODE_NONE) {
    out += std::string(named ? ", " : "") + "one pass each, no replay";
  } else if (k.passes() > 0) {
    const std::string passes = std::to_string(k.passes()) + (k.passes() == 1 ? " replay pass" : " replay passes");
    if (!named) {
      out += passes;  // an import: which launch ncu chose is not recorded
    } else {
      out += std::string(", ") + (k.combined_launch_indices_size() > 0 ? "the last in " : "in ") + passes;
    }
  }
  return out;
}

// ---- the verdict ----------------------------------------------------------------------------

std::vector<const v1::Evidence*> verdict_evidence(const v1::Check& primary, size_t limit) {
  std::vector<const v1::Evidence*> shown;
  for (int pass = 0; pass < 2; ++pass) {
    for (const v1::Evidence& e : primary.evidence()) {
      if (e.deciding() != (pass == 0)) continue;
      if (e.metric().rfind("cutriage__routed", 0) == 0) continue;  // engine bookkeeping
      if (shown.size() == limit) return shown;
      shown.push_back(&e);
    }
  }
  return shown;
}

std::vector<PathStep> decision_path(const v1::Diagnosis& d) {
  std::vector<PathStep> steps;
  for (const v1::DecisionVisit& visit : d.path()) {
    PathStep& s = steps.emplace_back();
    s.label = decision_label(visit.decision());
    for (const v1::Check& c : visit.checks()) {
      if (c.outcome() == v1::OUTCOME_FIRED) ++s.fired;
      if (c.outcome() == v1::OUTCOME_NOT_EVALUATED) ++s.not_evaluated;
    }
  }
  return steps;
}

GainText gain_text(const v1::Diagnosis& d, const v1::Check* primary) {
  GainText g;
  if (d.estimated_speedup() > 0) {
    g.kernel = "up to " + fmt(d.estimated_speedup()) + "x on this kernel";
    if (primary != nullptr && !primary->finding().estimate_basis().empty()) {
      g.kernel += " (" + primary->finding().estimate_basis() + ")";
    }
  }
  if (d.amdahl_ceiling() > 0) {
    // The run-level view, as Nsight Compute's global estimate: the local gain over the kernel's
    // share of the captured GPU time, and Amdahl's bound said as what it is.
    const double share = 1.0 - 1.0 / d.amdahl_ceiling();
    if (share < 0.01) {
      g.run = "on the run: this kernel is under 1% of the captured GPU time, no change to it speeds the run "
              "noticeably";
    } else {
      g.run = "on the run: this kernel is " + fmt(100.0 * share) + "% of the captured GPU time";
      if (d.estimated_speedup() > 1) {
        const double run = 1.0 / ((1.0 - share) + share / d.estimated_speedup());
        g.run += ", so that gain speeds the run up to " + fmt(run) + "x";
      }
      g.run += " (at most " + fmt(d.amdahl_ceiling()) + "x if the kernel took no time)";
    }
  }
  return g;
}

// ---- columns of text ----------------------------------------------------------------------

size_t text_width(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string fit(std::string_view s, size_t width) {
  std::string out;
  if (text_width(s) <= width) {
    out = s;
  } else {
    size_t kept = 0, i = 0;
    for (; i < s.size(); ++i) {
      bool starts = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
      if (starts && kept == width - 1) break;
      kept += starts ? 1 : 0;
    }
    out = std::string(s.substr(0, i)) + "\u2026";
  }
  out.append(width - std::min(width, text_width(out)), ' ');
  return out;
}

std::string right(const std::string& s, size_t width) {
  size_t w = text_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}


std::string wrap_text(const std::string& first, const std::string& rest, std::string_view text, size_t width) {
  std::string out;
  std::string line = first;
  size_t used = text_width(first);
  bool empty = true;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string_view::npos) j = text.size();
    std::string_view word = text.substr(i, j - i);
    i = j + 1;
    if (word.empty()) continue;
    size_t w = text_width(word);
    if (!empty && used + 1 + w > width) {
      out += line + "\n";
      line = rest;
      used = text_width(rest);
      empty = true;
    }
    if (!empty) {
      line += ' ';
      ++used;
    }
    line += word;
    used += w;
    empty = false;
  }
  out += line + "\n";
  return out;
}

}  // namespace cutriage::tools::model
