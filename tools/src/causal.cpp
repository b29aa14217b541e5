#include "causal.h"

#include <cmath>
#include <limits>

namespace cutriage::tools {

namespace {

// Per rule, what its fix does to the number it was decided by (or to a volume counter where the
// deciding number is a rate that a faster kernel keeps). The number is named where the rule notes
// it under a fixed name (ctx.note in triage/src/rules_d*.cpp), so files written before
// Evidence.deciding existed are read the same way; "" is the deciding number the file records.
// Rules absent here predict nothing.
const std::vector<CausalPrediction> kTable = {
    // Decision 1: the launch is too small for the GPU; the fix launches more (or fuller) work.
    {"d1.waves_below_one", "launch__waves_per_multiprocessor", Direction::kRise, "a larger grid fills more waves"},
    {"d1.block_too_small", "cutriage__block_slot_occupancy_cap_pct", Direction::kRise, "larger blocks raise the resident threads"},
    {"d1.low_achieved_occupancy", "", Direction::kRise, "the fix raises achieved occupancy"},
    {"d1.block_not_warp_multiple", "cutriage__lane_utilization_of_block", Direction::kRise,
     "whole warps leave no lane of a block idle"},
    {"d1.tail_wave", "cutriage__tail_wave_share_of_time", Direction::kFall, "the partial last wave takes less of the time"},
    // Decision 2: the regime.
    {"d2.issue_starvation", "", Direction::kRise, "removing the starvation raises issue activity"},
    {"d2.dispatch_gaps", "", Direction::kFall, "fewer or shorter gaps between launches"},
    // Decision 3: issue stalls and occupancy limits.
    {"d3.issue_starved", "", Direction::kRise, "more instructions issued per active cycle"},
    {"d3.low_eligible_warps", "eligible_to_active_warps", Direction::kRise, "more warps eligible to issue"},
    {"d3.dominant_stall", "", Direction::kFall, "the dominant stall reason takes a smaller share"},
    {"d3.warp_divergence", "", Direction::kRise, "more active threads per executed instruction"},
    {"d3.predication_overhead", "", Direction::kRise, "more threads predicated on per instruction"},
    {"d3.occupancy_resource_limit", "", Direction::kRise, "the resource no longer caps theoretical occupancy"},
    {"d3.achieved_below_theoretical", "achieved_to_theoretical_occupancy", Direction::kRise, "achieved occupancy closes on the theoretical"},
    {"d3.bytes_in_flight", "", Direction::kRise, "more bytes in flight raise DRAM throughput"},
    // Decision 4: compute pipes. A saturated pipe stays saturated while doing less work, so
    // d4.limiting_pipe and d4.issue_rate predict no counter.
    {"d4.pipe_instruction_share", "", Direction::kFall, "less of the instruction mix on the busy pipe"},
    {"d4.replay_overhead", "replayed_issue_fraction", Direction::kFall, "fewer replayed instructions"},
    {"d4.slow_path_arithmetic", "", Direction::kFall, "fewer slow-path (multi-instruction) operations"},
    {"d4.divergent_lanes_on_busy_pipe", "smsp__thread_inst_executed_per_inst_executed.ratio", Direction::kRise, "more active lanes per instruction on the pipe"},
    // Decision 5: memory mechanisms: the waste the rule measures shrinks.
    {"d5.uncoalesced_global_loads", "global_load_sectors_per_request", Direction::kFall, "coalesced loads need fewer sectors per request"},
    {"d5.uncoalesced_global_stores", "", Direction::kFall, "coalesced stores need fewer sectors per request"},
    {"d5.low_bytes_per_sector", "", Direction::kRise, "more of each fetched sector is used"},
    {"d5.store_rmw_amplification", "", Direction::kRise, "stores fill whole sectors"},
    {"d5.local_memory_traffic", "local_sector_share", Direction::kFall, "fewer spills to local memory"},
    {"d5.excess_l2_transactions", "l2_read_sectors_over_ideal", Direction::kFall, "fewer L2 transactions per request"},
    {"d5.l2_atomic_pressure", "l2_atomic_request_share", Direction::kFall, "fewer atomics reach L2"},
    {"d5.shared_bank_conflicts", "shared_bank_conflict_share", Direction::kFall, "fewer shared-memory bank conflicts"},
    {"d5.smem_fill_through_registers", "async_copy_share_of_shared_fills", Direction::kRise,
     "shared memory filled by asynchronous copies, not through registers"},
    {"d5.memory_fences", "", Direction::kFall, "fewer memory fences"},
    {"d5.sysmem_peer_placement", "offdevice_aperture_share", Direction::kFall, "less traffic to system or peer memory"},
    // A DRAM- or L2-bound kernel made faster by moving fewer bytes keeps its throughput near
    // peak: the bytes moved are what must fall.
    {"d5.dram_bound", "dram__bytes_read.sum", Direction::kFall, "fewer bytes read from DRAM"},
    {"d5.dram_bound", "dram__bytes_write.sum", Direction::kFall, "fewer bytes written to DRAM"},
    {"d5.l2_bound", "lts__t_sectors.sum", Direction::kFall, "fewer L2 sectors accessed"},
    {"d5.l2_bound", "lts__t_sectors_srcunit_tex.sum", Direction::kFall, "fewer L2 sectors from L1"},
    // Decision 6: source lines.
    {"d6.hot_line", "", Direction::kFall, "the hot line takes a smaller share of the samples"},
    {"d6.focused_stall_on_line", "", Direction::kFall, "the line's focused stall takes a smaller share"},
    {"d6.sass_excess_transactions", "", Direction::kFall, "fewer excess transactions on the line"},
    // Decision 7: load balance.
    {"d7.sm_load_imbalance", "", Direction::kFall, "the busiest SM closes on the average"},
    {"d7.smsp_load_imbalance", "", Direction::kFall, "the busiest SM sub-partition closes on the average"},
};

}  // namespace

const std::vector<CausalPrediction>& causal_table() { return kTable; }

std::vector<CausalPrediction> predictions_for(std::string_view rule_id) {
  std::vector<CausalPrediction> out;
  for (const CausalPrediction& p : kTable) {
    if (p.rule_id == rule_id) out.push_back(p);
  }
  return out;
}

const char* to_string(Direction d) { return d == Direction::kFall ? "fall" : "rise"; }

const char* to_string(ChainLabel label) {
  switch (label) {
    case ChainLabel::kConfirmed: return "confirmed";
    case ChainLabel::kUnexplained: return "unexplained";
    case ChainLabel::kRegressed: return "regressed";
    case ChainLabel::kNoChange: return "no change";
    case ChainLabel::kNoPrediction: return "no prediction";
  }
  return "no prediction";
}

bool moved(double before, double after, Direction d, double noise_pct) {
  if (!std::isfinite(before) || !std::isfinite(after)) return false;
  if (before == 0) return d == Direction::kRise ? after > 0 : false;  // nothing left to fall
  const double change = (after - before) / std::fabs(before) * 100.0;
  return d == Direction::kFall ? change < -noise_pct : change > noise_pct;
}

ChainLabel chain_label(double duration_change_pct, double noise_pct, const std::optional<CounterMove>& counter,
                       bool predicted) {
  if (duration_change_pct > noise_pct) return ChainLabel::kRegressed;
  if (!(duration_change_pct < -noise_pct)) return ChainLabel::kNoChange;
  if (!predicted) return ChainLabel::kNoPrediction;
  return counter && counter->as_predicted ? ChainLabel::kConfirmed : ChainLabel::kUnexplained;
}

}  // namespace cutriage::tools
