// Quantities the engine derives from measured counters: the ratios Nsight Compute reports but the
// CUPTI range profiler does not offer under the same name. A derived value never replaces a
// measured one (a value already present, measured or derived, is left alone), and every derived
// value is marked MetricSource::kDerived.
//
// To add a derivation, add a row to kRatios: out = scale * numerator / denominator, computed when
// both inputs are present, the denominator is nonzero and `out` is absent.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/triage/engine.h"
#include "engine_regime.h"
#include "metric_names.h"
#include "rule_helpers.h"

namespace cutriage::triage {

namespace {

struct RatioDef {
  std::string_view out;
  std::string_view numerator;
  std::string_view denominator;
  double scale;
  std::string_view unit;
};

// clang-format off
constexpr std::array kRatios{
    // Scheduler statistics (Decision 2/3). Each SMSP issues at most one instruction per cycle, so
    // issue-active cycles over active cycles is both the per-cycle rate and, x100, the percent of
    // the sustained peak.
    RatioDef{"smsp__issue_active.avg.per_cycle_active",
             "smsp__issue_active.sum", "smsp__cycles_active.sum", 1.0, "inst/cycle"},
    RatioDef{"smsp__issue_active.avg.pct_of_peak_sustained_active",
             "smsp__issue_active.sum", "smsp__cycles_active.sum", 100.0, "%"},
    RatioDef{"smsp__inst_issued.avg.per_cycle_active",
             "smsp__inst_issued.sum", "smsp__cycles_active.sum", 1.0, "inst/cycle"},
    RatioDef{"smsp__warps_eligible.avg.per_cycle_active",
             "smsp__warps_eligible.sum", "smsp__cycles_active.sum", 1.0, "warp"},
    RatioDef{"smsp__warps_active.avg.per_cycle_active",
             "smsp__warps_active.sum", "smsp__cycles_active.sum", 1.0, "warp"},
    // Warp execution efficiency (Decision 3): lanes per executed warp instruction, out of 32.
    RatioDef{"smsp__thread_inst_executed_per_inst_executed.ratio",
             "smsp__thread_inst_executed.sum", "smsp__inst_executed.sum", 1.0, ""},
    RatioDef{"smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
             "smsp__thread_inst_executed_pred_on.sum", "smsp__inst_executed.sum", 1.0, ""},
    // Memory tables (Decision 5): sectors per request; useful bytes (what the instructions asked
    // for, sm__sass_data_bytes_*) per fetched sector. l1tex__t_bytes counts whole sectors, so it
    // cannot show waste.
    RatioDef{"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
             "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1.0, "sector/request"},
    RatioDef{"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
             "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1.0, "sector/request"},
    RatioDef{"l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_ld.ratio",
             "sm__sass_data_bytes_mem_global_op_ld.sum",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1.0, "byte/sector"},
    RatioDef{"l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_st.ratio",
             "sm__sass_data_bytes_mem_global_op_st.sum",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1.0, "byte/sector"},
};
// clang-format on

constexpr std::string_view kStallPrefix = "smsp__warps_issue_stalled_";
constexpr std::string_view kStallSuffix = ".sum";

void put_ratio(MetricSet& metrics, std::string_view out, std::string_view num,
               std::string_view den, double scale, std::string_view unit) {
  if (metrics.has(out)) return;
  std::optional<double> n = metrics.get(num);
  std::optional<double> d = metrics.get(den);
  if (!n || !d) return;
  std::optional<double> r = detail::safe_ratio(*n, *d);
  if (!r) return;
  metrics.set(std::string(out), scale * *r, std::string(unit), MetricSource::kDerived);
}

}  // namespace

namespace detail {
std::vector<std::string> derivation_inputs(std::string_view metric) {
  for (const RatioDef& r : kRatios) {
    if (r.out == metric) return {std::string(r.numerator), std::string(r.denominator)};
  }
  return {};
}
}  // namespace detail

void add_derived_metrics(MetricSet& metrics) {
  (void)derive_from_breakdowns(metrics);
  // Stall-per-issue ratios, one per stall reason present:
  //   smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio
  //     = smsp__warps_issue_stalled_<reason>.sum / smsp__issue_active.sum
  std::vector<std::pair<std::string, std::string>> stalls;  // (counter, ratio name)
  for (const auto& [name, value] : metrics.all()) {
    if (!detail::starts_with(name, kStallPrefix) || !detail::ends_with(name, kStallSuffix)) continue;
    std::string_view reason(name);
    reason.remove_prefix(kStallPrefix.size());
    reason.remove_suffix(kStallSuffix.size());
    if (reason.empty()) continue;
    stalls.emplace_back(name, "smsp__average_warps_issue_stalled_" + std::string(reason) +
                                  "_per_issue_active.ratio");
  }
  for (const auto& [counter, ratio] : stalls) {
    put_ratio(metrics, ratio, counter, "smsp__issue_active.sum", 1.0, "");
  }
  for (const RatioDef& r : kRatios) {
    put_ratio(metrics, r.out, r.numerator, r.denominator, r.scale, r.unit);
  }
}

std::string add_node_sampling_stand_ins(const KernelInput& kernel, MetricSet& metrics) {
  using detail::kDram;
  using detail::kL1;
  using detail::kMemThroughput;
  const bool pm_sampled = (kernel.graph_scope && kernel.graph_scope->node_sampling) || kernel.pm_window;
  if (!pm_sampled || metrics.has(kMemThroughput)) return {};
  std::optional<double> dram = metrics.get(kDram);
  std::optional<double> l1 = metrics.get(kL1);
  if (!dram && !l1) return {};
  const bool dram_leads = dram && (!l1 || *dram >= *l1);
  const double value = dram_leads ? *dram : *l1;
  metrics.set(std::string(kMemThroughput), value, "%", MetricSource::kDerived);
  return "gpu__compute_memory_throughput stood in for by the larger of the PM-sampled DRAM and L1 throughputs (" +
         std::string(dram_leads ? "DRAM " : "L1 ") + detail::fmt(value, 1) +
         "%): PM sampling has no one-pass form of it and its L2 throughput is another definition, so an "
         "L2-bound kernel reads lower here than under the range profiler";
}

}  // namespace cutriage::triage
