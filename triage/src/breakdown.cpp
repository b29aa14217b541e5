// Throughputs from their breakdowns, for collection without replay (always-on mode).
//
// Nsight Compute's throughput metrics (sm__throughput, gpu__compute_memory_throughput, ...) are
// the maximum of a list of sub-unit throughputs, their "breakdown". On GH100 the top-level names
// take 4 to 8 replay passes each, so a collector that never replays cannot read them; most of
// their parts fit one pass, so they can be collected one group per launch and the maximum taken
// here. The lists are Nsight Compute 2025.3.1's `breakdown:<metric>` on the H200 (tests/data/
// breakdown/); the parts that take more than one pass even alone (CUDA 13.0's Profiler Host API)
// are listed as unreachable, and a throughput derived without them is a lower bound, which the
// diagnosis says in its trust notes.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/triage/engine.h"
#include "cutriage/triage/plan.h"
#include "rule_helpers.h"

namespace cutriage::triage {

namespace {

constexpr std::string_view kSuffix = ".avg.pct_of_peak_sustained_elapsed";

struct BaseBreakdown {
  std::string_view metric;
  std::vector<std::string_view> parts;
  std::vector<std::string_view> unreachable;
};

// Base names; every name gets kSuffix. clang-format off
const std::vector<BaseBreakdown>& gh100_bases() {
  static const auto& kBases = *new std::vector<BaseBreakdown>{
    {"gpu__compute_memory_throughput",
     {
"dram__cycles_active", "fbpa__dram_sectors", "gpu__compute_memory_access_throughput_internal_activity", "gpu__compute_memory_request_throughput_internal_activity", "l1tex__data_bank_reads", "l1tex__data_bank_writes", "l1tex__data_pipe_lsu_wavefronts", "l1tex__data_pipe_tex_wavefronts", "l1tex__f_wavefronts", "l1tex__lsuin_requests", "l1tex__m_l1tex2xbar_req_cycles_active", "l1tex__m_xbar2l1tex_read_sectors", "l1tex__m_xbar2l1tex_read_sectors_mem_dshared", "l1tex__tex_writeback_active", "l1tex__texin_sm2tex_req_cycles_active", "l1tex__tmain_requests", "lts__d_atomic_input_cycles_active", "lts__d_decomp_input_sectors", "lts__d_sectors", "lts__d_sectors_fill_device", "lts__d_sectors_fill_sysmem", "lts__lts2xbar_cycles_active", "lts__t_sectors", "lts__t_tag_requests", "lts__xbar2lts_cycles_active",},
     {"l1tex__lsu_writeback_active"}},
    {"l1tex__throughput",
     {
"l1tex__data_bank_reads", "l1tex__data_bank_writes", "l1tex__data_pipe_lsu_wavefronts", "l1tex__data_pipe_tex_wavefronts", "l1tex__f_wavefronts", "l1tex__lsuin_requests", "l1tex__m_l1tex2xbar_req_cycles_active", "l1tex__m_xbar2l1tex_read_sectors", "l1tex__m_xbar2l1tex_read_sectors_mem_dshared", "l1tex__tex_writeback_active", "l1tex__texin_sm2tex_req_cycles_active", "l1tex__tmain_requests",},
     {"l1tex__lsu_writeback_active"}},
    {"lts__throughput",
     {
"lts__d_atomic_input_cycles_active", "lts__d_decomp_input_sectors", "lts__d_sectors", "lts__d_sectors_fill_device", "lts__d_sectors_fill_sysmem", "lts__ltcfabric2ltc_cycles_active", "lts__lts2xbar_cycles_active_realtime", "lts__t_sectors", "lts__t_tag_requests", "lts__throughput_internal_activity", "lts__xbar2lts_cycles_active",},
     {}},
    {"sm__instruction_throughput",
     {
"sm__inst_executed", "sm__inst_executed_pipe_cbu_pred_on_any", "sm__inst_executed_pipe_uniform", "sm__inst_executed_pipe_xu", "sm__issue_active", "sm__pipe_alu_cycles_active", "sm__pipe_fma_cycles_active", "sm__pipe_fmaheavy_cycles_active", "sm__pipe_fp64_cycles_active", "sm__pipe_shared_cycles_active", "sm__pipe_tensor_cycles_active", "sm__pipe_tensor_op_dmma_cycles_active", "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active",},
     {"sm__instruction_throughput_internal_activity", "sm__mio_inst_issued"}},
    {"sm__throughput",
     {
"idc__request_cycles_active", "sm__inst_executed", "sm__inst_executed_pipe_adu", "sm__inst_executed_pipe_cbu_pred_on_any", "sm__inst_executed_pipe_ipa", "sm__inst_executed_pipe_lsu", "sm__inst_executed_pipe_tex", "sm__inst_executed_pipe_uniform", "sm__inst_executed_pipe_xu", "sm__issue_active", "sm__memory_throughput_internal_activity", "sm__mio2rf_writeback_active", "sm__mio_pq_read_cycles_active", "sm__mio_pq_write_cycles_active", "sm__pipe_alu_cycles_active", "sm__pipe_fma_cycles_active", "sm__pipe_fmaheavy_cycles_active", "sm__pipe_fp64_cycles_active", "sm__pipe_shared_cycles_active", "sm__pipe_tensor_cycles_active", "sm__pipe_tensor_op_dmma_cycles_active", "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active", "sm__pipe_tma_cycles_active",},
     {"sm__instruction_throughput_internal_activity", "sm__mio_inst_issued"}},
  };
  return kBases;
}
// clang-format on

std::vector<ThroughputBreakdown> with_suffix(const std::vector<BaseBreakdown>& bases) {
  std::vector<ThroughputBreakdown> out;
  out.reserve(bases.size());
  for (const BaseBreakdown& b : bases) {
    ThroughputBreakdown t;
    t.metric = std::string(b.metric) + std::string(kSuffix);
    t.parts.reserve(b.parts.size());
    for (std::string_view p : b.parts) t.parts.push_back(std::string(p) + std::string(kSuffix));
    t.unreachable.reserve(b.unreachable.size());
    for (std::string_view p : b.unreachable) t.unreachable.push_back(std::string(p) + std::string(kSuffix));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

const std::vector<ThroughputBreakdown>& throughput_breakdowns() {
  // Never destroyed: see verdict_relies_on in rules_d0.cpp (atexit ordering in the injected agent).
  static const auto& kAll = *new std::vector<ThroughputBreakdown>(with_suffix(gh100_bases()));
  return kAll;
}

const ThroughputBreakdown* find_breakdown(std::string_view metric) {
  for (const ThroughputBreakdown& b : throughput_breakdowns()) {
    if (b.metric == metric) return &b;
  }
  return nullptr;
}

std::vector<std::string> expand_breakdowns(const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  out.reserve(wanted.size());
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const std::string& name : wanted) {
    const ThroughputBreakdown* b = find_breakdown(name);
    if (b == nullptr) {
      add(name);
      continue;
    }
    for (const std::string& part : b->parts) add(part);
  }
  return out;
}

std::vector<std::string> derive_from_breakdowns(MetricSet& metrics) {
  std::vector<std::string> derived;
  for (const ThroughputBreakdown& b : throughput_breakdowns()) {
    if (metrics.has(b.metric)) continue;  // measured (or derived before): never replaced
    double max = 0;
    bool complete = true;
    for (const std::string& part : b.parts) {
      std::optional<double> v = metrics.get(part);
      if (!v) {
        complete = false;
        break;
      }
      max = std::max(max, *v);
    }
    if (!complete) continue;
    metrics.set(b.metric, max, "%", MetricSource::kDerived);
    derived.push_back(b.metric);
  }
  return derived;
}

std::vector<std::string> reconcile_breakdowns(MetricSet& metrics) {
  // Below this many points a difference is rounding between passes, not a contradiction.
  constexpr double kTolerancePoints = 0.5;
  std::vector<std::string> notes;
  const std::vector<ThroughputBreakdown>& all = throughput_breakdowns();
  for (const ThroughputBreakdown& b : all) {
    const MetricValue* v = metrics.find(b.metric);
    if (v == nullptr) continue;
    std::string top;
    double top_value = v->value;
    auto consider = [&](const std::string& name) {
      std::optional<double> p = metrics.get(name);
      if (p && std::isfinite(*p) && *p > top_value) {
        top_value = *p;
        top = name;
      }
    };
    for (const std::string& part : b.parts) consider(part);
    for (const ThroughputBreakdown& inner : all) {
      if (&inner == &b) continue;
      const bool inside = std::all_of(inner.parts.begin(), inner.parts.end(), [&b](const std::string& p) {
        return std::find(b.parts.begin(), b.parts.end(), p) != b.parts.end();
      });
      if (inside) consider(inner.metric);
    }
    if (top.empty() || !(top_value > v->value + kTolerancePoints)) continue;
    notes.push_back(b.metric.substr(0, b.metric.find('.')) + " raised from " + detail::pct(v->value, 1) + " to " +
                    detail::pct(top_value, 1) + ": " + top.substr(0, top.find('.')) +
                    ", part of its breakdown, was measured higher (values from different passes or launches)");
    metrics.set(b.metric, top_value, v->unit, MetricSource::kDerived);
  }
  return notes;
}

std::vector<std::string> breakdown_notes(const MetricSet& metrics) {
  std::vector<std::string> notes;
  for (const ThroughputBreakdown& b : throughput_breakdowns()) {
    const MetricValue* v = metrics.find(b.metric);
    if (v == nullptr || v->source != MetricSource::kDerived) continue;
    std::string top;
    double top_value = -1;
    for (const std::string& part : b.parts) {
      std::optional<double> p = metrics.get(part);
      if (p && *p > top_value) {
        top_value = *p;
        top = part;
      }
    }
    std::string note = b.metric.substr(0, b.metric.find('.')) + " = " + detail::pct(v->value, 2) +
                       " assembled without replay as the largest of its " + std::to_string(b.parts.size()) +
                       " single-pass breakdown parts (" + top.substr(0, top.find('.')) + ")";
    if (!b.unreachable.empty()) {
      note += "; a lower bound: ";
      for (size_t i = 0; i < b.unreachable.size(); ++i) {
        if (i > 0) note += ", ";
        note += b.unreachable[i].substr(0, b.unreachable[i].find('.'));
      }
      note += " need replay";
    }
    notes.push_back(std::move(note));
  }
  return notes;
}

}  // namespace cutriage::triage
