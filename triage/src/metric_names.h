// Internal: the counter names more than one decision's rules read, spelled once. A rule file's own
// names stay in its anonymous namespace.
#pragma once

#include <string_view>

namespace cutriage::triage::detail {

inline constexpr std::string_view kGpuDram = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kDram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kL2 = "lts__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kL1 = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kLdSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
inline constexpr std::string_view kLdRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
inline constexpr std::string_view kThreadsPerInst = "smsp__thread_inst_executed_per_inst_executed.ratio";
inline constexpr std::string_view kPredOnPerInst = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio";
// A stall reason's average per issue-active cycle: kStallPrefix + reason + kStallSuffix.
inline constexpr std::string_view kStallPrefix = "smsp__average_warps_issue_stalled_";
inline constexpr std::string_view kStallSuffix = "_per_issue_active.ratio";
// Timeline quantities (Decisions 2 and 2A) of the trace, named like counters.
inline constexpr std::string_view kDispatchGapPct = "cutriage__dispatch_gap_pct";
inline constexpr std::string_view kGpuIdlePct = "cutriage__gpu_idle_pct";

}  // namespace cutriage::triage::detail
