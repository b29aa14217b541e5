// Diagnosis helpers and the stable lower_snake names of the triage enums (used in reports, JSON and
// test output; changing a name is a format change).
#include "cutriage/triage/diagnosis.h"

namespace cutriage::triage {

const CheckResult* Diagnosis::check(std::string_view rule_id) const {
  for (const auto& v : path)
    for (const auto& c : v.checks)
      if (c.rule_id == rule_id) return &c;
  return nullptr;
}

bool Diagnosis::fired(std::string_view rule_id) const {
  const CheckResult* c = check(rule_id);
  return c != nullptr && c->outcome == Outcome::kFired;
}

bool Diagnosis::visited(Decision d) const {
  for (const auto& v : path)
    if (v.decision == d) return true;
  return false;
}

std::string_view to_string(Decision d) {
  switch (d) {
    case Decision::kUnspecified: return "unspecified";
    case Decision::kD0Trust: return "d0_trust";
    case Decision::kD1WorkloadSize: return "d1_workload_size";
    case Decision::kD2Regime: return "d2_regime";
    case Decision::kD2ADispatch: return "d2a_dispatch";
    case Decision::kD3IssueStalls: return "d3_issue_stalls";
    case Decision::kD4ComputePipe: return "d4_compute_pipe";
    case Decision::kD5MemoryMechanism: return "d5_memory_mechanism";
    case Decision::kD6SourceLines: return "d6_source_lines";
    case Decision::kD7HardwareLimit: return "d7_hardware_limit";
  }
  return "unknown";
}

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::kUnspecified: return "unspecified";
    case Outcome::kFired: return "fired";
    case Outcome::kNotFired: return "not_fired";
    case Outcome::kNotEvaluated: return "not_evaluated";
  }
  return "unknown";
}

std::string_view to_string(Classification c) {
  switch (c) {
    case Classification::kUnspecified: return "unspecified";
    case Classification::kUntrusted: return "untrusted";
    case Classification::kUndersized: return "undersized";
    case Classification::kDispatchBound: return "dispatch_bound";
    case Classification::kLatencyBound: return "latency_bound";
    case Classification::kComputeBound: return "compute_bound";
    case Classification::kMemoryBound: return "memory_bound";
    case Classification::kSaturated: return "saturated";
    case Classification::kInconclusive: return "inconclusive";
  }
  return "unknown";
}

std::string_view to_string(Limiter l) {
  switch (l) {
    case Limiter::kUnspecified: return "unspecified";
    case Limiter::kUntrustedMetrics: return "untrusted_metrics";
    case Limiter::kSmallGrid: return "small_grid";
    case Limiter::kPartialWarp: return "partial_warp";
    case Limiter::kSmallBlock: return "small_block";
    case Limiter::kLowAchievedOccupancy: return "low_achieved_occupancy";
    case Limiter::kIsolatedKernel: return "isolated_kernel";
    case Limiter::kTailWave: return "tail_wave";
    case Limiter::kIssueStarvation: return "issue_starvation";
    case Limiter::kSysmemPeerTraffic: return "sysmem_peer_traffic";
    case Limiter::kDispatchGaps: return "dispatch_gaps";
    case Limiter::kSerializedCopyCompute: return "serialized_copy_compute";
    case Limiter::kStallDominant: return "stall_dominant";
    case Limiter::kWarpDivergence: return "warp_divergence";
    case Limiter::kPredication: return "predication";
    case Limiter::kOccupancyRegisters: return "occupancy_registers";
    case Limiter::kOccupancySharedMemory: return "occupancy_shared_memory";
    case Limiter::kOccupancyBlockSlots: return "occupancy_block_slots";
    case Limiter::kOccupancyWarpSlots: return "occupancy_warp_slots";
    case Limiter::kBytesInFlight: return "bytes_in_flight";
    case Limiter::kLowEligibleWarps: return "low_eligible_warps";
    case Limiter::kPipeFma: return "pipe_fma";
    case Limiter::kPipeAlu: return "pipe_alu";
    case Limiter::kPipeFp64: return "pipe_fp64";
    case Limiter::kPipeTensor: return "pipe_tensor";
    case Limiter::kPipeLsu: return "pipe_lsu";
    case Limiter::kPipeXu: return "pipe_xu";
    case Limiter::kPipeOther: return "pipe_other";
    case Limiter::kIssueSlots: return "issue_slots";
    case Limiter::kSlowPathArithmetic: return "slow_path_arithmetic";
    case Limiter::kInstructionReplay: return "instruction_replay";
    case Limiter::kL1texThroughput: return "l1tex_throughput";
    case Limiter::kUncoalescedGlobal: return "uncoalesced_global";
    case Limiter::kLowBytesPerSector: return "low_bytes_per_sector";
    case Limiter::kStoreAmplification: return "store_amplification";
    case Limiter::kLocalMemorySpills: return "local_memory_spills";
    case Limiter::kSharedBankConflicts: return "shared_bank_conflicts";
    case Limiter::kAtomicContention: return "atomic_contention";
    case Limiter::kMemoryFences: return "memory_fences";
    case Limiter::kDramBandwidth: return "dram_bandwidth";
    case Limiter::kL2Bandwidth: return "l2_bandwidth";
    case Limiter::kRegisterFileSmemFill: return "register_file_smem_fill";
    case Limiter::kExcessL2Transactions: return "excess_l2_transactions";
    case Limiter::kHotSourceLine: return "hot_source_line";
    case Limiter::kFocusedStallOnLine: return "focused_stall_on_line";
    case Limiter::kNearHardwareLimit: return "near_hardware_limit";
    case Limiter::kLoadImbalance: return "load_imbalance";
  }
  return "unknown";
}

std::string_view to_string(Trust t) {
  switch (t) {
    case Trust::kUnspecified: return "unspecified";
    case Trust::kTrusted: return "trusted";
    case Trust::kSuspect: return "suspect";
    case Trust::kUntrusted: return "untrusted";
  }
  return "unknown";
}

}  // namespace cutriage::triage
