// Always-on metric groups made offline (the first-fit packing is too slow for an application
// thread: about 1,300 plan calls, seconds). Regenerate when the rules' metrics change:
//
//   cutriage-plan-stages GH100 --groups      (tools/src/plan_stages.cpp; CUDA 13.0)
//
// The routing counters (Decisions 0-2, breakdowns expanded) are packed first: they fill the first
// 10 groups (spread over 15 of 23 groups before), so a family is routed after fewer switches
// (`cutriage-plan-stages GH100 --routing` compares).
//
// The collectors test "always-on groups on GH100" checks that every group still plans in one
// pass and that together they cover every counter a route may want.
#include "groups.h"

namespace cutriage::agent {

namespace {

// clang-format off
const std::vector<std::vector<std::string>>& gh100() {
  // GH100: 159 counters in 22 single-pass groups (1261 plan calls); need replay: sm__sass_data_bytes_mem_global_op_ld.sum sm__sass_data_bytes_mem_global_op_st.sum sm__sass_thread_inst_executed_ops_dadd_dmul_dfma_pred_on.sum sm__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on.sum smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio
  static const auto& kGroups = *new std::vector<std::vector<std::string>>{
      {"dram__cycles_active.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "fbpa__dram_sectors.avg.pct_of_peak_sustained_elapsed", "gpu__compute_memory_access_throughput_internal_activity.avg.pct_of_peak_sustained_elapsed", "gpu__compute_memory_request_throughput_internal_activity.avg.pct_of_peak_sustained_elapsed", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "idc__request_cycles_active.avg.pct_of_peak_sustained_elapsed", "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed", "l1tex__tmain_requests.avg.pct_of_peak_sustained_elapsed", "lts__throughput_internal_activity.avg.pct_of_peak_sustained_elapsed", "sm__cycles_elapsed.avg.per_second", "sm__inst_executed.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum.per_second", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sm__inst_executed.sum", "sm__inst_executed_pipe_tma.sum", "smsp__inst_executed.sum"},
      {"l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed", "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed", "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", "l1tex__data_pipe_tex_wavefronts.avg.pct_of_peak_sustained_elapsed", "l1tex__f_wavefronts.avg.pct_of_peak_sustained_elapsed", "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed", "lts__d_decomp_input_sectors.avg.pct_of_peak_sustained_elapsed", "lts__d_sectors.avg.pct_of_peak_sustained_elapsed", "lts__lts2xbar_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors.sum", "lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_cbu_pred_on_any.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_ipa.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_tex.avg.pct_of_peak_sustained_elapsed", "lts__t_requests.sum", "sm__inst_executed_pipe_ipa.sum", "sm__inst_executed_pipe_lsu.sum", "sm__inst_executed_pipe_tex.sum"},
      {"l1tex__m_l1tex2xbar_req_cycles_active.avg.pct_of_peak_sustained_elapsed", "l1tex__m_xbar2l1tex_read_sectors_mem_dshared.avg.pct_of_peak_sustained_elapsed", "l1tex__tex_writeback_active.avg.pct_of_peak_sustained_elapsed", "l1tex__texin_sm2tex_req_cycles_active.avg.pct_of_peak_sustained_elapsed", "lts__d_sectors_fill_device.avg.pct_of_peak_sustained_elapsed", "lts__d_sectors_fill_sysmem.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed", "sm__issue_active.avg.pct_of_peak_sustained_elapsed", "sm__memory_throughput_internal_activity.avg.pct_of_peak_sustained_elapsed", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed", "smsp__issue_active.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "sm__inst_executed_pipe_alu.sum", "sm__inst_executed_pipe_uniform.sum", "sm__inst_executed_pipe_xu.sum", "sm__inst_issued.avg.pct_of_peak_sustained_elapsed", "sm__inst_issued.sum"},
      {"l1tex__m_xbar2l1tex_read_sectors.avg.pct_of_peak_sustained_elapsed", "lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors_aperture_peer.sum", "lts__t_sectors_aperture_sysmem.sum", "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "lts__t_requests_op_atom.sum", "lts__t_requests_op_membar.sum", "lts__t_sectors_srcunit_tex.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors_srcunit_tex.sum", "sm__cycles_active.avg", "sm__cycles_active.max", "sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active"},
      {"lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_elapsed", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_adu.sum"},
      {"pcie__read_bytes.sum", "pcie__write_bytes.sum"},
      {"sm__mio2rf_writeback_active.avg.pct_of_peak_sustained_elapsed", "sm__mio_pq_write_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", "smsp__cycles_active.sum", "lts__t_sectors_srcunit_tex_aperture_peer.sum", "lts__t_sectors_srcunit_tex_aperture_sysmem.sum", "lts__t_sectors_srcunit_tex_op_read.sum", "smsp__cycles_active.avg", "smsp__cycles_active.max"},
      {"sm__mio_pq_read_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_elapsed", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"},
      {"sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__warps_active.avg.pct_of_peak_sustained_active", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"},
      {"sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_elapsed", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_cbu.sum", "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_fma.sum", "sm__inst_executed_pipe_fma_type_fp16.sum", "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_fp64.sum", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum"},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sm__inst_executed_pipe_tex.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", "smsp__inst_executed_op_global_ld.sum"},
      {"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", "sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active"},
      {"smsp__inst_executed_op_ldgsts.sum", "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum", "smsp__inst_executed_op_tma_ld.sum"},
      {"smsp__thread_inst_executed.sum", "smsp__thread_inst_executed_pred_on.sum", "smsp__warps_active.sum"},
      {"smsp__warps_eligible.sum", "smsp__warps_issue_stalled_barrier.sum", "smsp__warps_issue_stalled_branch_resolving.sum", "smsp__warps_issue_stalled_dispatch_stall.sum"},
      {"smsp__warps_issue_stalled_drain.sum", "smsp__warps_issue_stalled_gmma.sum", "smsp__warps_issue_stalled_imc_miss.sum", "smsp__warps_issue_stalled_long_scoreboard.sum"},
      {"smsp__warps_issue_stalled_lg_throttle.sum", "smsp__warps_issue_stalled_math_pipe_throttle.sum", "smsp__warps_issue_stalled_membar.sum"},
      {"smsp__warps_issue_stalled_mio_throttle.sum", "smsp__warps_issue_stalled_misc.sum", "smsp__warps_issue_stalled_no_instruction.sum"},
      {"smsp__warps_issue_stalled_not_selected.sum", "smsp__warps_issue_stalled_selected.sum", "smsp__warps_issue_stalled_short_scoreboard.sum"},
      {"smsp__warps_issue_stalled_sleeping.sum", "smsp__warps_issue_stalled_tex_throttle.sum", "smsp__warps_issue_stalled_wait.sum"},
  };
  return kGroups;
}
// clang-format on

}  // namespace

const std::vector<std::vector<std::string>>& offline_groups(const std::string& chip) {
  static const auto& kNone = *new std::vector<std::vector<std::string>>();
  if (chip == "GH100") return gh100();
  return kNone;
}

}  // namespace cutriage::agent
