#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>

#include <google/protobuf/util/json_util.h>

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

std::string fmt(double v, int precision = 3) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  double a = std::fabs(v);
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

void render_kernel(std::ostringstream& out, const ReadResult& file, const v1::KernelProfile& k,
                   size_t rank, const ReportOptions& options) {
  std::string name(lookup(file, k.function_name_iid()));
  if (name.empty()) name = std::string(lookup(file, k.demangled_name_iid()));
  if (name.empty()) name = std::string(lookup(file, k.mangled_name_iid()));
  if (name.empty()) name = "(unnamed kernel)";
  const v1::Diagnosis& d = k.diagnosis();

  out << "[" << rank << "] " << name << "\n";
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
  if (k.passes() > 0 || k.combined_launch_indices_size() > 0) {
    out << "    collected ";
    if (k.launch_index() != 0) out << "launch #" << k.launch_index();
    for (uint64_t li : k.combined_launch_indices()) out << " + #" << li;
    if (k.passes() > 0) out << (k.launch_index() != 0 ? ", " : "") << k.passes() << " replay passes on the last";
    out << "\n";
  }
  if (k.rejected_metrics_size() > 0) {
    out << "    not collectable on this GPU: ";
    for (int i = 0; i < k.rejected_metrics_size(); ++i) out << (i ? ", " : "") << k.rejected_metrics(i);
    out << "\n";
  }

  std::string cls = enum_words(v1::Classification_Name(d.classification()), "CLASSIFICATION_");
  for (char& c : cls) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out << "    verdict   " << cls;
  if (!d.headline().empty()) {
    // The engine's headline starts with the classification's name ("memory_bound: ..."), which
    // the line already shows in words.
    std::string headline = d.headline();
    size_t colon = headline.find(": ");
    if (colon != std::string::npos && headline.find(' ') > colon) headline = headline.substr(colon + 2);
    out << " - " << headline;
  }
  out << "\n";
  if (d.at_hardware_limit()) out << "              (the limiting unit is within 80% of its peak)\n";

  out << "    trust     " << enum_words(v1::Trust_Name(d.trust()), "TRUST_");
  // Notes can be long (lists of metrics); the report shows each one's start, --verbose all of it.
  for (int i = 0; i < d.trust_notes_size(); ++i) {
    std::string note = d.trust_notes(i);
    if (!options.verbose && note.size() > 110) note = note.substr(0, 107) + "...";
    out << "\n              - " << note;
  }
  out << "\n";

  out << "    path      ";
  for (int i = 0; i < d.path_size(); ++i) {
    const auto& visit = d.path(i);
    int fired = 0, not_eval = 0;
    for (const auto& c : visit.checks()) {
      if (c.outcome() == v1::OUTCOME_FIRED) ++fired;
      if (c.outcome() == v1::OUTCOME_NOT_EVALUATED) ++not_eval;
    }
    if (i != 0) out << " -> ";
    out << decision_label(visit.decision()) << " (" << fired << " fired";
    if (not_eval != 0) out << ", " << not_eval << " n/e";
    out << ")";
  }
  out << "\n";

  const v1::Check* primary = find_primary(d);
  if (primary != nullptr) {
    out << "    evidence  ";
    int shown = 0;
    for (const auto& e : primary->evidence()) {
      if (shown == 5) break;
      if (e.metric().rfind("cutriage__routed", 0) == 0) continue;  // engine bookkeeping
      if (shown != 0) out << "\n              ";
      out << e.metric() << " = " << fmt(e.value()) << (e.unit().empty() ? "" : " " + e.unit())
          << (e.derived() ? " (derived)" : "");
      ++shown;
    }
    for (const auto& t : primary->thresholds()) {
      out << "\n              threshold " << t.name() << " = " << fmt(t.value());
    }
    out << "\n";
  }
  if (!d.next_action().empty()) out << "    next      " << d.next_action() << "\n";
  if (d.estimated_speedup() > 0 || d.amdahl_ceiling() > 0) {
    out << "    gain      ";
    if (d.estimated_speedup() > 0) {
      out << "up to " << fmt(d.estimated_speedup()) << "x on this kernel";
      if (primary != nullptr && !primary->finding().estimate_basis().empty()) {
        out << " (" << primary->finding().estimate_basis() << ")";
      }
    }
    if (d.amdahl_ceiling() > 0) {
      if (d.estimated_speedup() > 0) out << "; ";
      out << "deleting the kernel would speed the captured work by at most "
          << fmt(d.amdahl_ceiling()) << "x";
    }
    out << "\n";
  }
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

}  // namespace

std::string render_report(const ReadResult& file, const ReportOptions& options) {
  std::ostringstream out;
  std::vector<const v1::KernelProfile*> kernels;
  std::vector<const v1::KernelProfile*> unprofiled;
  std::vector<const v1::Notice*> notices;
  const v1::SessionHeader* session = nullptr;
  const v1::SessionEnd* end = nullptr;
  // Adaptive collection writes one record per profiled launch of a kernel; the latest one combines
  // the earlier ones (combined_launch_indices) and is the one to show.
  std::set<std::pair<uint64_t, uint64_t>> superseded;  // (mangled name id, launch index)
  for (const auto& r : file.file.records()) {
    if (r.has_kernel()) {
      for (uint64_t li : r.kernel().combined_launch_indices()) {
        superseded.insert({r.kernel().mangled_name_iid(), li});
      }
    }
  }
  for (const auto& r : file.file.records()) {
    if (r.has_session() && session == nullptr) session = &r.session();
    if (r.has_notice()) notices.push_back(&r.notice());
    if (r.has_session_end()) end = &r.session_end();
    if (!r.has_kernel()) continue;
    const v1::KernelProfile& k = r.kernel();
    if (superseded.count({k.mangled_name_iid(), k.launch_index()})) continue;
    if (k.status() == v1::PROFILE_STATUS_UNSPECIFIED || k.status() == v1::PROFILE_STATUS_PROFILED) {
      kernels.push_back(&k);
    } else {
      unprofiled.push_back(&k);
    }
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto* a, const auto* b) { return a->duration_ns() > b->duration_ns(); });

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
      out << "; " << end->graph_launches() << " CUDA graph launches (kernels in graphs are not profiled)";
    }
    if (end->captured_launches() != 0) {
      out << "; " << end->captured_launches() << " launches into streams under capture (not profiled)";
    }
    out << "\n";
  } else if (session != nullptr && session->source() == v1::SessionHeader::SOURCE_AGENT) {
    out << "note: the file has no session end: the process did not exit normally; every complete "
           "record is shown\n";
  }
  out << kernels.size() << " profiled kernel" << (kernels.size() == 1 ? "" : "s")
      << ", longest first\n\n";
  size_t rank = 0;
  for (const auto* k : kernels) {
    if (options.max_kernels != 0 && rank == options.max_kernels) break;
    render_kernel(out, file, *k, ++rank, options);
  }
  if (!unprofiled.empty()) {
    out << "not profiled\n";
    for (const v1::KernelProfile* k : unprofiled) {
      std::string name(lookup(file, k->function_name_iid()));
      if (name.empty()) name = std::string(lookup(file, k->mangled_name_iid()));
      out << "  - " << name << ": " << enum_words(v1::ProfileStatus_Name(k->status()), "PROFILE_STATUS_");
      if (!k->status_detail().empty()) out << " (" << k->status_detail() << ")";
      out << "\n";
    }
  }
  return out.str();
}

std::string render_json(const ReadResult& file, std::string& error) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  auto status = google::protobuf::util::MessageToJsonString(file.file, &out, opts);
  if (!status.ok()) {
    error = std::string(status.message());
    return {};
  }
  return out;
}

}  // namespace cutriage::tools
