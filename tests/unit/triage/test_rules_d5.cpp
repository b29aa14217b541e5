// Decision 5 rules, one at a time. All inputs here are synthetic.
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "catch.h"
#include "cutriage/triage/rule.h"
#include "rule_test_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d5 {

using namespace cutriage::triage;
using namespace cutriage::triage::test_support;

namespace {

bool near(double a, double b) { return std::abs(a - b) < 1e-9; }

}  // namespace

TEST_CASE("d5 rules are well formed", "[d5]") {
  auto rules = rules_for(Decision::kD5MemoryMechanism);
  REQUIRE(rules.size() >= 15);
  REQUIRE(find_rule("d5.no_tier_near_peak") != nullptr);
  for (const Rule* r : rules) {
    INFO(r->id);
    CHECK(r->id.substr(0, 3) == "d5.");
    CHECK(!r->title.empty());
    CHECK(!r->next_action.empty());
    for (const ThresholdDef& t : r->thresholds) CHECK(!t.note.empty());
  }
  // Causes outrank tiers.
  CHECK(find_rule("d5.uncoalesced_global_loads")->priority < find_rule("d5.l1tex_lsu_busy")->priority);
  CHECK(find_rule("d5.shared_bank_conflicts")->priority < find_rule("d5.dram_bound")->priority);
  CHECK(find_rule("d5.local_memory_traffic")->priority < find_rule("d5.l2_bound")->priority);
  CHECK(find_rule("d5.l2_atomic_pressure")->priority < find_rule("d5.l1tex_lsu_busy")->priority);
}

TEST_CASE("d5 rules are not evaluated without their required metrics", "[d5]") {
  KernelInput empty = kernel_with({});
  for (const Rule* r : rules_for(Decision::kD5MemoryMechanism)) {
    INFO(r->id);
    CheckResult c = run(r->id, empty);
    CHECK(c.outcome == Outcome::kNotEvaluated);
    bool has_required = false;
    for (const MetricNeed& m : r->metrics) {
      if (m.required) {
        has_required = true;
        CHECK(contains(c.reason, m.name));
        break;
      }
    }
    // Rules with alternatives name what they looked for.
    if (!has_required && !r->metrics.empty()) CHECK(contains(c.reason, "missing"));
  }
}

TEST_CASE("d5.l1tex_lsu_busy (synthetic)", "[d5]") {
  auto fired = run("d5.l1tex_lsu_busy",
                   kernel_with({{"l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", 82.0},
                                {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 25.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kL1texThroughput);
  CHECK(fired.finding->detail == "wavefront_bound");
  CHECK(contains(fired.reason, "82.0%"));
  auto ok = run("d5.l1tex_lsu_busy",
                kernel_with({{"l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", 40.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.smem_fill_through_registers (synthetic)", "[d5]") {
  auto fired = run("d5.smem_fill_through_registers",
                   kernel_with({{"smsp__inst_executed_op_shared_st.sum", 1000.0},
                                {"smsp__inst_executed_op_global_ld.sum", 1000.0},
                                {"smsp__inst_executed_op_ldgsts.sum", 0.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kRegisterFileSmemFill);

  auto async = run("d5.smem_fill_through_registers",
                   kernel_with({{"smsp__inst_executed_op_shared_st.sum", 100.0},
                                {"smsp__inst_executed_op_global_ld.sum", 150.0},
                                {"smsp__inst_executed_op_ldgsts.sum", 1000.0}}));
  CHECK(async.outcome == Outcome::kNotFired);
  CHECK(contains(async.reason, "async"));

  auto tma = run("d5.smem_fill_through_registers",
                 kernel_with({{"smsp__inst_executed_op_shared_st.sum", 100.0},
                              {"smsp__inst_executed_op_global_ld.sum", 150.0},
                              {"smsp__inst_executed_op_ldgsts.sum", 0.0},
                              {"smsp__inst_executed_op_tma_ld.sum", 64.0}}));
  CHECK(tma.outcome == Outcome::kNotFired);

  auto few_stores = run("d5.smem_fill_through_registers",
                        kernel_with({{"smsp__inst_executed_op_shared_st.sum", 10.0},
                                     {"smsp__inst_executed_op_global_ld.sum", 1000.0},
                                     {"smsp__inst_executed_op_ldgsts.sum", 0.0}}));
  CHECK(few_stores.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.uncoalesced_global_loads estimates the excess (synthetic)", "[d5]") {
  // 32 sectors per request for 32-bit loads: every thread in its own sector.
  auto fired = run("d5.uncoalesced_global_loads",
                   kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 32000.0},
                                {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kUncoalescedGlobal);
  CHECK(contains(fired.reason, "32.00 sectors per global load request"));
  REQUIRE(fired.finding->estimated_speedup);
  CHECK(near(*fired.finding->estimated_speedup, 8.0));
  CHECK(contains(fired.finding->estimate_basis, "4 sectors per request"));

  // Requested bytes known: the ideal comes from them.
  auto bytes = run("d5.uncoalesced_global_loads",
                   kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 32000.0},
                                {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000.0},
                                {"sm__sass_data_bytes_mem_global_op_ld.sum", 128000.0}}));
  REQUIRE(bytes.outcome == Outcome::kFired);
  CHECK(near(*bytes.finding->estimated_speedup, 8.0));

  // 16-byte vector loads: 16 sectors per request, all bytes used -> not uncoalesced.
  auto vec = run("d5.uncoalesced_global_loads",
                 kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16000.0},
                              {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000.0},
                              {"sm__sass_data_bytes_mem_global_op_ld.sum", 512000.0}}));
  CHECK(vec.outcome == Outcome::kNotFired);

  auto ok = run("d5.uncoalesced_global_loads",
                kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4000.0},
                             {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1000.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  auto missing = run("d5.uncoalesced_global_loads",
                     kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4000.0}}));
  CHECK(missing.outcome == Outcome::kNotEvaluated);
  CHECK(contains(missing.reason, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"));
}

TEST_CASE("d5.uncoalesced_global_stores (synthetic)", "[d5]") {
  auto fired = run("d5.uncoalesced_global_stores",
                   kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 10000.0},
                                {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1000.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(near(*fired.finding->estimated_speedup, 2.5));
  auto ok = run("d5.uncoalesced_global_stores",
                kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 4000.0},
                             {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1000.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.low_bytes_per_sector (synthetic)", "[d5]") {
  auto ncu = run("d5.low_bytes_per_sector",
                 kernel_with({{"l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_ld.ratio", 8.0}}));
  REQUIRE(ncu.outcome == Outcome::kFired);
  CHECK(ncu.finding->limiter == Limiter::kLowBytesPerSector);
  CHECK(near(*ncu.finding->estimated_speedup, 4.0));

  auto counters = run("d5.low_bytes_per_sector",
                      kernel_with({{"sm__sass_data_bytes_mem_global_op_ld.sum", 4000.0},
                                   {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1000.0}}));
  REQUIRE(counters.outcome == Outcome::kFired);
  CHECK(contains(counters.reason, "4.0 useful bytes"));

  auto ok = run("d5.low_bytes_per_sector",
                kernel_with({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio", 30.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  auto ne = run("d5.low_bytes_per_sector", kernel_with({}));
  CHECK(ne.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ne.reason, "l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_ld.ratio"));
}

TEST_CASE("d5.store_rmw_amplification (synthetic)", "[d5]") {
  auto fired = run("d5.store_rmw_amplification",
                   kernel_with({{"sm__sass_data_bytes_mem_global_op_st.sum", 1000.0},
                                {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1000.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kStoreAmplification);
  CHECK(near(*fired.finding->estimated_speedup, 32.0));
  auto ok = run("d5.store_rmw_amplification",
                kernel_with({{"l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_st.ratio", 32.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
  auto ne = run("d5.store_rmw_amplification", kernel_with({}));
  CHECK(ne.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ne.reason, "sm__sass_data_bytes_mem_global_op_st.sum"));
}

TEST_CASE("d5.local_memory_traffic (synthetic)", "[d5]") {
  auto k = kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", 3000.0},
                        {"l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", 1000.0},
                        {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16000.0}});
  LaunchConfig lc;
  lc.local_bytes_per_thread = 48;
  k.launch = lc;
  auto fired = run("d5.local_memory_traffic", k);
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kLocalMemorySpills);
  CHECK(contains(fired.reason, "20.0%"));
  CHECK(contains(fired.reason, "48 bytes"));

  auto none = run("d5.local_memory_traffic",
                  kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", 0.0},
                               {"l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", 0.0}}));
  CHECK(none.outcome == Outcome::kNotFired);

  auto tiny = run("d5.local_memory_traffic",
                  kernel_with({{"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", 10.0},
                               {"l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", 10.0},
                               {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 100000.0}}));
  CHECK(tiny.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.excess_l2_transactions (synthetic)", "[d5]") {
  auto fired = run("d5.excess_l2_transactions",
                   kernel_with({{"lts__t_sectors_srcunit_tex_op_read.sum", 3000.0},
                                {"sm__sass_data_bytes_mem_global_op_ld.sum", 32000.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kExcessL2Transactions);
  CHECK(near(*fired.finding->estimated_speedup, 3.0));
  auto ok = run("d5.excess_l2_transactions",
                kernel_with({{"lts__t_sectors_srcunit_tex_op_read.sum", 1100.0},
                             {"sm__sass_data_bytes_mem_global_op_ld.sum", 32000.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.l2_atomic_pressure (synthetic)", "[d5]") {
  auto fired = run("d5.l2_atomic_pressure",
                   kernel_with({{"lts__t_requests_op_atom.sum", 400.0},
                                {"lts__t_requests_op_red.sum", 100.0},
                                {"lts__t_requests.sum", 1000.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kAtomicContention);
  // op_atom already counts reductions on GH100: op_red is not added on top.
  CHECK(contains(fired.reason, "40.0%"));
  auto ok = run("d5.l2_atomic_pressure",
                kernel_with({{"lts__t_requests_op_atom.sum", 10.0}, {"lts__t_requests.sum", 1000.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.shared_bank_conflicts (synthetic)", "[d5]") {
  auto fired = run("d5.shared_bank_conflicts",
                   kernel_with({{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 3100.0},
                                {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 4000.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kSharedBankConflicts);
  CHECK(contains(fired.reason, "77.5%"));
  CHECK(near(*fired.finding->estimated_speedup, 4000.0 / 900.0));

  // The per-op counters win over the aggregate (which includes cross-client conflicts).
  auto per_op = run("d5.shared_bank_conflicts",
                    kernel_with({{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 3100.0},
                                 {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 4000.0},
                                 {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 100.0},
                                 {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0.0},
                                 {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 3000.0},
                                 {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 1000.0}}));
  CHECK(per_op.outcome == Outcome::kNotFired);
  CHECK(contains(per_op.reason, "shared loads and stores"));

  auto ok = run("d5.shared_bank_conflicts",
                kernel_with({{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 100.0},
                             {"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", 4000.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.memory_fences (synthetic)", "[d5]") {
  auto k = kernel_with({{"smsp__average_warps_issue_stalled_membar_per_issue_active.ratio", 3.0},
                        {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 3.0},
                        {"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", 1.0},
                        {"smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio", 20.0}});
  auto fired = run("d5.memory_fences", k);
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kMemoryFences);
  CHECK(contains(fired.reason, "50.0%"));

  auto ok = run("d5.memory_fences",
                kernel_with({{"smsp__average_warps_issue_stalled_membar_per_issue_active.ratio", 0.1},
                             {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 5.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);

  // From PC samples when the counters are absent.
  auto pcs = kernel_with({});
  PcSampleSummary s;
  PcSampleLine line;
  line.samples_by_reason = {{"smsp__pcsamp_warps_issue_stalled_membar", 40},
                            {"smsp__pcsamp_warps_issue_stalled_wait", 60},
                            {"smsp__pcsamp_warps_issue_stalled_selected", 500}};
  s.lines.push_back(line);
  pcs.pc_samples = s;
  auto from_samples = run("d5.memory_fences", pcs);
  REQUIRE(from_samples.outcome == Outcome::kFired);
  CHECK(contains(from_samples.reason, "40 of 100"));

  auto ne = run("d5.memory_fences", kernel_with({}));
  CHECK(ne.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ne.reason, "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio"));

  // Sampling that failed, or too few stall samples, says so.
  auto failed = kernel_with({});
  PcSampleSummary f;
  f.error = "CUPTI_ERROR_NOT_SUPPORTED";
  failed.pc_samples = f;
  auto fc = run("d5.memory_fences", failed);
  CHECK(fc.outcome == Outcome::kNotEvaluated);
  CHECK(contains(fc.reason, "PC sampling failed: CUPTI_ERROR_NOT_SUPPORTED"));
  auto few = kernel_with({});
  PcSampleSummary fs;
  PcSampleLine fl;
  fl.samples_by_reason = {{"membar", 40}, {"wait", 20}};
  fs.lines.push_back(fl);
  few.pc_samples = fs;
  auto fw = run("d5.memory_fences", few);
  CHECK(fw.outcome == Outcome::kNotEvaluated);
  CHECK(contains(fw.reason, "only 60 stall samples"));
}

TEST_CASE("d5.sysmem_peer_placement (synthetic)", "[d5]") {
  auto fired = run("d5.sysmem_peer_placement",
                   kernel_with({{"lts__t_sectors_srcunit_tex.sum", 1000.0},
                                {"lts__t_sectors_srcunit_tex_aperture_sysmem.sum", 600.0},
                                {"lts__t_sectors_srcunit_tex_aperture_peer.sum", 0.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(fired.finding->limiter == Limiter::kSysmemPeerTraffic);
  auto ok = run("d5.sysmem_peer_placement",
                kernel_with({{"lts__t_sectors_srcunit_tex.sum", 1000.0},
                             {"lts__t_sectors_srcunit_tex_aperture_sysmem.sum", 10.0},
                             {"lts__t_sectors_srcunit_tex_aperture_peer.sum", 0.0}}));
  CHECK(ok.outcome == Outcome::kNotFired);
  auto low_util = run("d5.sysmem_peer_placement",
                      kernel_with({{"lts__t_sectors_srcunit_tex.sum", 1000.0},
                                   {"lts__t_sectors_srcunit_tex_aperture_sysmem.sum", 600.0},
                                   {"lts__t_sectors_srcunit_tex_aperture_peer.sum", 0.0},
                                   {"lts__t_sectors_srcunit_tex.avg.pct_of_peak_sustained_elapsed", 10.0}}));
  CHECK(low_util.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.dram_bound and d5.l2_bound (synthetic)", "[d5]") {
  auto dram = run("d5.dram_bound",
                  kernel_with({{"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 91.0}}));
  REQUIRE(dram.outcome == Outcome::kFired);
  CHECK(dram.finding->limiter == Limiter::kDramBandwidth);
  CHECK(run("d5.dram_bound", kernel_with({{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 50.0}}))
            .outcome == Outcome::kNotFired);
  auto ne = run("d5.dram_bound", kernel_with({}));
  CHECK(ne.outcome == Outcome::kNotEvaluated);
  CHECK(contains(ne.reason, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"));

  auto l2 = run("d5.l2_bound",
                kernel_with({{"lts__throughput.avg.pct_of_peak_sustained_elapsed", 88.0},
                             {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 30.0}}));
  REQUIRE(l2.outcome == Outcome::kFired);
  CHECK(l2.finding->limiter == Limiter::kL2Bandwidth);
  auto both = run("d5.l2_bound",
                  kernel_with({{"lts__throughput.avg.pct_of_peak_sustained_elapsed", 88.0},
                               {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 85.0}}));
  CHECK(both.outcome == Outcome::kNotFired);
}

TEST_CASE("d5.no_tier_near_peak (synthetic)", "[d5]") {
  auto fired = run("d5.no_tier_near_peak",
                   kernel_with({{"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40.0},
                                {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 30.0},
                                {"lts__throughput.avg.pct_of_peak_sustained_elapsed", 35.0},
                                {"l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 40.0}}));
  REQUIRE(fired.outcome == Outcome::kFired);
  CHECK(find_rule("d5.no_tier_near_peak")->priority >= 90);
  auto l1_busy = run("d5.no_tier_near_peak",
                     kernel_with({{"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40.0},
                                  {"l1tex__throughput.avg.pct_of_peak_sustained_elapsed", 75.0}}));
  CHECK(l1_busy.outcome == Outcome::kNotFired);
  CHECK(contains(l1_busy.reason, "L1TEX"));
}

}  // namespace test_rules_d5
