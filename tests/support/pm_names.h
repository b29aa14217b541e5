// The PM-sampling metric names the agent's PM tests hand the fake platform values for (the one-pass
// set of agent/src/pm_nodes.cpp): one place, so that the graph-node and the always-on window tests
// name the same counters.
#pragma once

namespace cutriage::testing {

inline constexpr const char* kPmSm = "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kPmDram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kPmL1 = "SM_A.TriageCompute.l1tex__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kPmL2 = "LTS.TriageCompute.lts__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kPmFma =
    "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kPmClock = "sm__cycles_elapsed.avg.per_second";
inline constexpr const char* kPmAlu =
    "TPC.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kPmIssue = "TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed";

}  // namespace cutriage::testing
