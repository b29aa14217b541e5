// Decision 5: the kernel is memory-heavy; which memory mechanism dominates?
//
// Access-pattern rules (coalescing, bank conflicts, spills, atomics, placement) carry low priority
// numbers: they name a cause. The tier rules (DRAM-bound, L2-bound, L1TEX busy) say where the
// pressure shows, which is rarely what to change.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine_regime.h"
#include "metric_names.h"
#include "pc_samples.h"
#include "registry.h"
#include "rule_helpers.h"
#include "rule_numbers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kLsuWavefrontsPct =
    "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed";

constexpr std::string_view kLdBytes = "sm__sass_data_bytes_mem_global_op_ld.sum";
constexpr std::string_view kStSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
constexpr std::string_view kStRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
constexpr std::string_view kStBytes = "sm__sass_data_bytes_mem_global_op_st.sum";
// Nsight Compute's name (not a CUPTI base metric); add_derived_metrics computes it.
constexpr std::string_view kLdBytesPerSector =
    "l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_ld.ratio";
constexpr std::string_view kStBytesPerSector =
    "l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_st.ratio";
// SASS-instrumented equivalents (a pass of their own; exact useful bytes).
constexpr std::string_view kSassLdBytesPerSector =
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio";
constexpr std::string_view kSassStBytesPerSector =
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio";
constexpr std::string_view kSassLdBytes = "sm__sass_data_bytes_mem_global_op_ld.sum";

constexpr std::string_view kLocalLdSectors = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum";
constexpr std::string_view kLocalStSectors = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum";

constexpr std::string_view kL2TexReadSectors = "lts__t_sectors_srcunit_tex_op_read.sum";

constexpr std::string_view kL2Requests = "lts__t_requests.sum";
constexpr std::string_view kL2AtomRequests = "lts__t_requests_op_atom.sum";

constexpr std::string_view kSharedConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum";
constexpr std::string_view kSharedWavefronts = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum";
constexpr std::string_view kSharedLdConflicts =
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr std::string_view kSharedStConflicts =
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
constexpr std::string_view kSharedLdWavefronts =
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
constexpr std::string_view kSharedStWavefronts =
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
constexpr std::string_view kSharedLdInst = "smsp__inst_executed_op_shared_ld.sum";
constexpr std::string_view kSharedStInst = "smsp__inst_executed_op_shared_st.sum";

constexpr std::string_view kLdgstsInst = "smsp__inst_executed_op_ldgsts.sum";
constexpr std::string_view kGlobalLdInst = "smsp__inst_executed_op_global_ld.sum";
constexpr std::string_view kTmaLdInst = "smsp__inst_executed_op_tma_ld.sum";

constexpr std::string_view kMembarStall =
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio";
constexpr std::string_view kL2MembarRequests = "lts__t_requests_op_membar.sum";

constexpr std::string_view kL2TexSectors = "lts__t_sectors_srcunit_tex.sum";
constexpr std::string_view kL2TexSysmem = "lts__t_sectors_srcunit_tex_aperture_sysmem.sum";
constexpr std::string_view kL2TexPeer = "lts__t_sectors_srcunit_tex_aperture_peer.sum";
constexpr std::string_view kL2TexPct = "lts__t_sectors_srcunit_tex.avg.pct_of_peak_sustained_elapsed";

// DRAM utilization under either of the two names the guide uses.
std::optional<double> dram_pct(RuleContext& ctx) {
  if (auto v = ctx.metric(kGpuDram)) return v;
  return ctx.metric(kDram);
}

std::string missing_dram() {
  return "missing " + std::string(kGpuDram) + " (or " + std::string(kDram) + ")";
}

// --- coalescing ---------------------------------------------------------------------------

struct CoalescingNames {
  std::string_view sectors;
  std::string_view requests;
  std::string_view bytes;
  std::string_view sass_bytes_per_sector;  // fallback when `bytes` was not collected
  std::string_view what;  // "load", "store"
};

RuleVerdict evaluate_coalescing(RuleContext& ctx, const CoalescingNames& n) {
  double sectors = ctx.required(n.sectors);
  double requests = ctx.required(n.requests);
  if (!(requests > 0)) return RuleVerdict::not_fired("no global " + std::string(n.what) + " requests");
  double spr = sectors / requests;
  ctx.note("global_" + std::string(n.what) + "_sectors_per_request", spr);
  double limit = ctx.threshold("sectors_per_request");
  double min_excess = ctx.threshold("min_excess");
  std::string reading = num(spr) + " sectors per global " + std::string(n.what) + " request (" +
                        num(sectors, 0) + " sectors / " + num(requests, 0) + " requests)";
  if (!(spr > limit)) return RuleVerdict::not_fired(reading + ", <= " + num(limit, 0));
  // Ideal sector count: from the bytes the threads asked for when measured (handles 8- and 16-byte
  // vector accesses, whose ideal is 8 or 16 sectors per request), else 4 per request (32-bit).
  double ideal = requests * 4.0;
  std::string basis = "ideal of 4 sectors per request (fully coalesced 32-bit accesses)";
  if (auto bytes = ctx.metric(n.bytes); bytes && *bytes > 0) {
    ideal = std::max(std::ceil(*bytes / 32.0), 1.0);
    basis = "ideal sectors = requested bytes / 32 (" + num(*bytes, 0) + " bytes)";
  } else if (auto bps = ctx.metric(n.sass_bytes_per_sector); bps && *bps > 0) {
    ideal = std::max(std::ceil(sectors * std::min(*bps, 32.0) / 32.0), 1.0);
    basis = "ideal sectors = sectors x useful bytes per sector / 32 (" + num(*bps, 1) +
            " useful bytes per sector)";
  }
  double excess = sectors / ideal;
  ctx.note("global_" + std::string(n.what) + "_sector_excess", excess);
  reading += ", " + num(excess) + "x the ideal";
  if (!(excess >= min_excess)) {
    return RuleVerdict::not_fired(reading + ": wide accesses explain the ratio (excess < " +
                                  num(min_excess, 1) + "x)");
  }
  RuleVerdict v = RuleVerdict::fired(reading + " (> " + num(limit, 0) + " sectors per request)",
                                     above(spr, limit));
  v.estimated_speedup = excess;
  v.estimate_basis = "L1 sector traffic for global " + std::string(n.what) + "s shrinks " +
                     num(excess) + "x at the " + basis +
                     "; the kernel speeds up by at most this when it is bound by that traffic";
  return v;
}

Rule uncoalesced_loads() {
  return Rule{
      .id = "d5.uncoalesced_global_loads",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Global loads are uncoalesced",
      .parent = {},
      .metrics = {{kLdSectors, true}, {kLdRequests, true}, {kLdBytes, false},
                  {kSassLdBytesPerSector, false}},
      .thresholds = {{"sectors_per_request", 4.0,
                      "guide 3.2.7: above 4 sectors per request (a 128-byte line) is uncoalesced"},
                     {"min_excess", 1.5,
                      "project: with requested bytes measured, sectors must exceed the byte-based "
                      "ideal by 1.5x (the guide's L2 excess ratio) so vector loads do not fire"}},
      .limiter = Limiter::kUncoalescedGlobal,
      .finding = "Each warp-wide global load touches more sectors than its data needs.",
      .next_action =
          "Make consecutive threads read consecutive addresses: switch array-of-structures to "
          "structure-of-arrays, transpose through shared memory, or remap the thread-to-data "
          "index so a warp reads whole 32-byte sectors.",
      .priority = 10,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        return evaluate_coalescing(ctx, {kLdSectors, kLdRequests, kLdBytes, kSassLdBytesPerSector, "load"});
      },
  };
}

Rule uncoalesced_stores() {
  return Rule{
      .id = "d5.uncoalesced_global_stores",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Global stores are uncoalesced",
      .parent = {},
      .metrics = {{kStSectors, true}, {kStRequests, true}, {kStBytes, false},
                  {kSassStBytesPerSector, false}},
      .thresholds = {{"sectors_per_request", 4.0,
                      "guide 3.2.7: the same 4-sectors-per-request bound applies to stores"},
                     {"min_excess", 1.5,
                      "project: sectors must exceed the byte-based ideal by 1.5x when requested "
                      "bytes are measured"}},
      .limiter = Limiter::kUncoalescedGlobal,
      .finding = "Each warp-wide global store touches more sectors than its data needs.",
      .next_action =
          "Make consecutive threads write consecutive addresses: stage results in shared memory "
          "and write them out in order, or change the output layout so a warp covers whole "
          "sectors.",
      .priority = 12,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        return evaluate_coalescing(ctx, {kStSectors, kStRequests, kStBytes, kSassStBytesPerSector, "store"});
      },
  };
}

// Bytes per sector from the first source present: Nsight Compute's ratio, the counters it is
// made of, or the SASS-instrumented ratio.
std::optional<double> bytes_per_sector(RuleContext& ctx, std::string_view ncu_ratio,
                                       std::string_view bytes, std::string_view sectors,
                                       std::string_view sass_ratio, std::string& source) {
  auto s = ctx.metric(sectors);
  if (s && *s == 0) {
    // No sectors of this kind at all: a ratio over nothing is 0, not "wasteful".
    source = "no " + std::string(sectors);
    return std::nullopt;
  }
  if (auto v = ctx.metric(ncu_ratio)) {
    source = std::string(ncu_ratio);
    return v;
  }
  auto b = ctx.metric(bytes);
  if (b && s && *s > 0) {
    source = std::string(bytes) + " / " + std::string(sectors);
    double v = *b / *s;
    ctx.note("bytes_per_sector", v, "byte");
    return v;
  }
  if (auto v = ctx.metric(sass_ratio)) {
    source = std::string(sass_ratio);
    return v;
  }
  return std::nullopt;
}

Rule low_bytes_per_sector() {
  return Rule{
      .id = "d5.low_bytes_per_sector",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Fetched sectors carry little useful data",
      .parent = {},
      .metrics = {{kLdBytesPerSector, false},
                  {kLdBytes, false},
                  {kLdSectors, false},
                  {kSassLdBytesPerSector, false}},
      .thresholds = {{"min_bytes_per_sector", 16.0,
                      "guide 3.2.7: below ~16 of 32 bytes per sector wastes over half the "
                      "bandwidth"}},
      .limiter = Limiter::kLowBytesPerSector,
      .finding = "Global loads use less than half of each 32-byte sector they fetch.",
      .next_action =
          "Pack the data a warp reads into contiguous sectors: split structures into separate "
          "arrays of the fields actually read, drop padding, and align the start of each warp's "
          "range.",
      .priority = 11,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        std::string source;
        auto bps = bytes_per_sector(ctx, kLdBytesPerSector, kLdBytes, kLdSectors,
                                    kSassLdBytesPerSector, source);
        if (!bps && source.rfind("no ", 0) == 0) {
          return RuleVerdict::not_fired("the kernel issues no global loads (0 sectors)");
        }
        if (!bps) {
          return RuleVerdict::not_evaluated(
              "missing " + std::string(kLdBytesPerSector) + " (or " + std::string(kLdBytes) +
              " with " + std::string(kLdSectors) + ", or " + std::string(kSassLdBytesPerSector) + ")");
        }
        double limit = ctx.threshold("min_bytes_per_sector");
        std::string reading = num(*bps, 1) + " useful bytes per 32-byte sector for global loads (" +
                              source + ")";
        if (!(*bps < limit)) return RuleVerdict::not_fired(reading + ", >= " + num(limit, 0));
        RuleVerdict v = RuleVerdict::fired(reading + " (< " + num(limit, 0) + ")", below(*bps, limit));
        if (*bps > 0) {
          v.estimated_speedup = 32.0 / *bps;
          v.estimate_basis = "sector traffic for global loads shrinks 32 / " + num(*bps, 1) +
                             " = " + num(*v.estimated_speedup) +
                             "x if every fetched byte were used; an upper bound for a kernel "
                             "bound by that traffic";
        }
        return v;
      },
  };
}

Rule store_rmw_amplification() {
  return Rule{
      .id = "d5.store_rmw_amplification",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Partial-sector stores force read-modify-write",
      .parent = {},
      .metrics = {{kStBytesPerSector, false},
                  {kStBytes, false},
                  {kStSectors, false},
                  {kSassStBytesPerSector, false}},
      .thresholds = {{"min_bytes_per_sector", 16.0,
                      "project: stores writing under half of each sector touch at least twice "
                      "the sectors their bytes need (guide 3.5.4: partial sectors are read, "
                      "merged and written back)"}},
      .limiter = Limiter::kStoreAmplification,
      .finding = "Global stores write only part of each sector, so L2 must merge them.",
      .next_action =
          "Write whole sectors: pack narrow outputs (bytes, shorts) into 4- or 16-byte vector "
          "stores, align each warp's output range to 32 bytes, and avoid strided or scattered "
          "writes of narrow fields.",
      .priority = 13,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        std::string source;
        auto bps = bytes_per_sector(ctx, kStBytesPerSector, kStBytes, kStSectors,
                                    kSassStBytesPerSector, source);
        if (!bps && source.rfind("no ", 0) == 0) {
          return RuleVerdict::not_fired("the kernel issues no global stores (0 sectors)");
        }
        if (!bps) {
          return RuleVerdict::not_evaluated(
              "missing " + std::string(kStBytesPerSector) + " (or " + std::string(kStBytes) +
              " with " + std::string(kStSectors) + ", or " + std::string(kSassStBytesPerSector) + ")");
        }
        double limit = ctx.threshold("min_bytes_per_sector");
        std::string reading = num(*bps, 1) + " bytes written per 32-byte sector by global stores (" +
                              source + ")";
        if (!(*bps < limit)) return RuleVerdict::not_fired(reading + ", >= " + num(limit, 0));
        RuleVerdict v = RuleVerdict::fired(reading + " (< " + num(limit, 0) + ")", below(*bps, limit));
        if (*bps > 0) {
          v.estimated_speedup = 32.0 / *bps;
          v.estimate_basis = "store sectors shrink 32 / " + num(*bps, 1) + " = " +
                             num(*v.estimated_speedup) +
                             "x with full-sector writes; an upper bound for a store-bound kernel";
        }
        return v;
      },
  };
}

Rule local_memory_traffic() {
  return Rule{
      .id = "d5.local_memory_traffic",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Local memory (spills or thread-private arrays) carries traffic",
      .parent = {},
      .metrics = {{kLocalLdSectors, true},
                  {kLocalStSectors, true},
                  {kLdSectors, false},
                  {kStSectors, false}},
      .thresholds = {{"min_share", 0.05,
                      "project: local sectors at 5% or more of local+global L1 sectors are "
                      "significant (guide 3.2.7: any local traffic is suspect)"}},
      .limiter = Limiter::kLocalMemorySpills,
      .finding = "Register spills or indexed thread-private arrays send traffic to local memory.",
      .next_action =
          "Find the LDL/STL instructions on the source page. Shorten live ranges, index private "
          "arrays only with compile-time constants (full unrolling) or move them to shared "
          "memory, and if registers are capped (__launch_bounds__, -maxrregcount) relax the cap "
          "until the spills go away.",
      .priority = 15,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double ld = ctx.required(kLocalLdSectors);
        double st = ctx.required(kLocalStSectors);
        double local = ld + st;
        std::string reading = num(local, 0) + " local-memory sectors (" + num(ld, 0) +
                              " loaded, " + num(st, 0) + " stored)";
        if (const auto& launch = ctx.kernel().launch; launch && launch->local_bytes_per_thread > 0) {
          reading += ", " + std::to_string(launch->local_bytes_per_thread) +
                     " bytes of local memory per thread";
        }
        if (!(local > 0)) return RuleVerdict::not_fired(reading);
        auto gld = ctx.metric(kLdSectors);
        auto gst = ctx.metric(kStSectors);
        if (!gld && !gst) {
          return RuleVerdict::fired(reading + " (global sector counts not measured)", 1.0);
        }
        double share = local / (local + gld.value_or(0) + gst.value_or(0));
        ctx.note("local_sector_share", share);
        double limit = ctx.threshold("min_share");
        reading += ", " + share_pct(share) + " of local+global sectors";
        if (!(share >= limit)) return RuleVerdict::not_fired(reading + " (< " + share_pct(limit) + ")");
        return RuleVerdict::fired(reading + " (>= " + share_pct(limit) + ")", share / limit);
      },
  };
}

Rule excess_l2_transactions() {
  return Rule{
      .id = "d5.excess_l2_transactions",
      .decision = Decision::kD5MemoryMechanism,
      .title = "L1 sends L2 more read sectors than the loads need",
      .parent = {},
      .metrics = {{kL2TexReadSectors, true}, {kSassLdBytes, true}},
      .thresholds = {{"ratio", 1.5,
                      "guide 3.2.7: L2 transactions above ~1.5x the ideal point to uncoalesced or "
                      "misaligned accesses"}},
      .limiter = Limiter::kExcessL2Transactions,
      .finding = "Global loads pull more sectors from L2 than their bytes require.",
      .next_action =
          "Fix coalescing and alignment of the global loads (start each warp's range on a "
          "32-byte boundary, read contiguous ranges); the hot lines with the most L2 sectors are "
          "the ones to change.",
      // A symptom of whatever else wastes sectors (uncoalesced loads, local spills, both count
      // here), so it ranks after the rules that name the cause.
      .priority = 16,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double l2 = ctx.required(kL2TexReadSectors);
        double bytes = ctx.required(kSassLdBytes);
        if (!(bytes > 0)) return RuleVerdict::not_fired("no global load bytes");
        double ideal = std::ceil(bytes / 32.0);
        double ratio = l2 / ideal;
        ctx.note("l2_read_sectors_over_ideal", ratio);
        double limit = ctx.threshold("ratio");
        // L1 hits lower the measured count, so this proxy can only understate the excess.
        std::string reading = num(l2, 0) + " L2 read sectors from L1TEX vs " + num(ideal, 0) +
                              " ideal (global load bytes / 32): " + num(ratio) + "x";
        if (!(ratio > limit)) return RuleVerdict::not_fired(reading + ", <= " + num(limit, 1) + "x");
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + num(limit, 1) + "x)", above(ratio, limit));
        v.estimated_speedup = ratio;
        v.estimate_basis = "L2 read traffic from L1TEX shrinks " + num(ratio) +
                           "x at the byte-based ideal (includes local-memory misses); an upper "
                           "bound for a kernel bound by L2 traffic";
        return v;
      },
  };
}

Rule l2_atomic_pressure() {
  return Rule{
      .id = "d5.l2_atomic_pressure",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Global atomics crowd the L2",
      .parent = {},
      // lts__t_requests_op_atom counts all atomics, reductions included on GH100 (seen: 25.16M
      // of 25.17M requests for a RED-only kernel); op_red is not added on top, and it read
      // negative on the H200, which would make Decision 0 reject the whole diagnosis.
      .metrics = {{kL2AtomRequests, true},
                  {kL2Requests, true},
                  {kL2, false}},
      .thresholds = {{"atomic_share", 0.20,
                      "project: atomics and reductions above 20% of all L2 requests (guide "
                      "3.7.1: high relative to total L2 requests, no number)"}},
      .limiter = Limiter::kAtomicContention,
      .finding = "A large share of L2 requests are atomics, which L2 serializes per address.",
      .next_action =
          "Aggregate before going to global memory: reduce within the warp (shuffles or "
          "__reduce_*_sync), then within the block in shared memory, and issue one global atomic "
          "per block; for histograms keep private per-block copies and merge them at the end.",
      .priority = 18,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double atom = ctx.required(kL2AtomRequests);
        double total = ctx.required(kL2Requests);
        if (!(total > 0)) return RuleVerdict::not_fired("no L2 requests");
        double share = atom / total;
        ctx.note("l2_atomic_request_share", share);
        double limit = ctx.threshold("atomic_share");
        // The threshold is said right after the share it applies to, never after another number.
        std::string reading = num(atom, 0) + " atomic/reduction requests of " + num(total, 0) + " L2 requests (" +
                              share_pct(share) + (share > limit ? " > " : " <= ") + share_pct(limit) + ")";
        if (auto l2 = ctx.metric(kL2)) reading += "; L2 throughput " + num(*l2, 1) + "%";
        if (!(share > limit)) return RuleVerdict::not_fired(reading).decided_by("l2_atomic_request_share", "atomic_share");
        return RuleVerdict::fired(reading, above(share, limit)).decided_by("l2_atomic_request_share", "atomic_share");
      },
  };
}

Rule shared_bank_conflicts() {
  return Rule{
      .id = "d5.shared_bank_conflicts",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Shared-memory bank conflicts",
      .parent = {},
      .metrics = {{kSharedConflicts, true},
                  {kSharedWavefronts, true},
                  {kSharedLdConflicts, false},
                  {kSharedStConflicts, false},
                  {kSharedLdWavefronts, false},
                  {kSharedStWavefronts, false},
                  {kSharedLdInst, false},
                  {kSharedStInst, false}},
      .thresholds = {{"conflict_share", 0.10,
                      "guide 3.2.7: bank conflicts above ~10% of shared-memory wavefronts"}},
      .limiter = Limiter::kSharedBankConflicts,
      .finding = "Shared-memory accesses are serialized by bank conflicts.",
      .next_action =
          "Remap shared-memory indices so the threads of a warp hit different banks: pad rows by "
          "one 4-byte word, swizzle (XOR) the column index, or change which thread handles which "
          "element.",
      .priority = 12,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double conflicts = ctx.required(kSharedConflicts);
        double wavefronts = ctx.required(kSharedWavefronts);
        // Prefer the load+store counters when present: the aggregate also counts conflicts with
        // other L1 clients (guide 3.5.3), which index changes cannot remove.
        std::string basis = "all shared-memory clients";
        auto lc = ctx.metric(kSharedLdConflicts);
        auto sc = ctx.metric(kSharedStConflicts);
        auto lw = ctx.metric(kSharedLdWavefronts);
        auto sw = ctx.metric(kSharedStWavefronts);
        if (lc && sc && lw && sw && (*lw + *sw) > 0) {
          conflicts = *lc + *sc;
          wavefronts = *lw + *sw;
          basis = "shared loads and stores";
        }
        if (!(wavefronts > 0)) return RuleVerdict::not_fired("no shared-memory wavefronts");
        double share = conflicts / wavefronts;
        ctx.note("shared_bank_conflict_share", share);
        double limit = ctx.threshold("conflict_share");
        std::string reading = num(conflicts, 0) + " bank conflicts in " + num(wavefronts, 0) +
                              " shared-memory wavefronts (" + share_pct(share) + ", " + basis + ")";
        auto li = ctx.metric(kSharedLdInst);
        auto si = ctx.metric(kSharedStInst);
        if (li && si && (*li + *si) > 0) {
          double wpr = wavefronts / (*li + *si);
          ctx.note("shared_wavefronts_per_instruction", wpr);
          reading += ", " + num(wpr) + " wavefronts per shared instruction";
        }
        if (!(share > limit)) return RuleVerdict::not_fired(reading + ", <= " + share_pct(limit));
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(limit) + ")", above(share, limit));
        if (conflicts < wavefronts) {
          v.estimated_speedup = wavefronts / (wavefronts - conflicts);
          v.estimate_basis = "shared-memory wavefronts drop from " + num(wavefronts, 0) + " to " +
                             num(wavefronts - conflicts, 0) +
                             " without conflicts; an upper bound for a kernel bound by shared "
                             "memory";
        }
        return v;
      },
  };
}

Rule smem_fill_through_registers() {
  return Rule{
      .id = "d5.smem_fill_through_registers",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Shared memory is filled through registers instead of async copy",
      .parent = {},
      .metrics = {{kSharedStInst, true},
                  {kGlobalLdInst, true},
                  {kLdgstsInst, true},
                  {kTmaLdInst, false}},
      .thresholds = {{"min_stores_per_load", 0.5,
                      "project: shared stores at half the global loads or more suggests a "
                      "load-then-store staging loop (the counters cannot pair them)"},
                     {"max_async_share", 0.10,
                      "project: async copies (LDGSTS, TMA) below 10% of shared fills"}},
      .limiter = Limiter::kRegisterFileSmemFill,
      .finding = "Shared-memory tiles appear to be staged with global loads followed by shared "
                 "stores.",
      .next_action =
          "Stage tiles with asynchronous copies: cp.async (LDGSTS) for element-wise copies, TMA "
          "for dense aligned tiles on Hopper, and check on the source page that the staging loop "
          "is the one that changed.",
      // A heuristic (counters cannot pair the loads with the stores): ranks after the bandwidth
      // findings it could be confused with.
      .priority = 62,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double sts = ctx.required(kSharedStInst);
        double ldg = ctx.required(kGlobalLdInst);
        double ldgsts = ctx.required(kLdgstsInst);
        double tma = ctx.metric(kTmaLdInst).value_or(0);
        std::string reading = num(sts, 0) + " shared-store, " + num(ldg, 0) + " global-load, " +
                              num(ldgsts, 0) + " LDGSTS and " + num(tma, 0) +
                              " TMA-load warp instructions";
        if (!(sts > 0) || !(ldg > 0)) return RuleVerdict::not_fired(reading + ": no staging pattern");
        double ratio = sts / ldg;
        double async_share = (ldgsts + tma) / (ldgsts + tma + sts);
        ctx.note("shared_stores_per_global_load", ratio);
        ctx.note("async_copy_share_of_shared_fills", async_share);
        double min_ratio = ctx.threshold("min_stores_per_load");
        double max_async = ctx.threshold("max_async_share");
        reading += " (" + num(ratio) + " shared stores per global load, async share " +
                   share_pct(async_share) + ")";
        if (!(ratio >= min_ratio)) {
          return RuleVerdict::not_fired(reading + ": too few shared stores for a staging loop");
        }
        if (!(async_share < max_async)) {
          return RuleVerdict::not_fired(reading + ": async copies are in use");
        }
        return RuleVerdict::fired(reading + "; confirm the staging loop on the source page",
                                  below(async_share, max_async) + above(ratio, min_ratio));
      },
  };
}

Rule memory_fences() {
  return Rule{
      .id = "d5.memory_fences",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Memory fences hold warps back",
      .parent = {},
      .metrics = {{kMembarStall, false}, {kL2MembarRequests, false}},
      .thresholds = {{"membar_share", 0.10,
                      "project: membar holding 10% or more of stalls (or PC samples); guide 3.7.2 "
                      "names the symptom without a number"},
                     min_stall_samples_threshold()},
      .limiter = Limiter::kMemoryFences,
      .finding = "A noticeable share of stalls waits on memory fences.",
      .next_action =
          "Audit the fences: keep them at producer/consumer hand-offs only (never in inner "
          "loops), use block scope instead of device or system scope where ordering within the "
          "block is enough, and replace frequent grid-wide syncs with kernel boundaries.",
      .priority = 20,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double limit = ctx.threshold("membar_share");
        std::string reading;
        std::optional<double> share;
        if (auto membar = ctx.metric(kMembarStall)) {
          double total = 0;
          std::vector<std::string> names;
          const auto& all = ctx.metrics().all();
          for (auto it = all.lower_bound(kStallPrefix); it != all.end(); ++it) {
            if (!starts_with(it->first, kStallPrefix)) break;
            if (ends_with(it->first, kStallSuffix) && !is_issue_state_not_stall(it->first)) {
              names.push_back(it->first);
            }
          }
          for (const std::string& name : names) total += ctx.metric(name).value_or(0);
          if (total > 0) {
            share = *membar / total;
            ctx.note("membar_stall_share", *share);
            reading = "membar holds " + share_pct(*share) + " of stalls (" + num(*membar) +
                      " warps per issue)";
          }
        }
        if (!share) {
          SampleView view;
          if (auto why = read_stall_samples(ctx, view)) {
            return RuleVerdict::not_evaluated("missing " + std::string(kMembarStall) + ", and " + *why +
                                              ": fences leave no counter of their own");
          }
          auto it = view.stalls_by_reason.find("membar");
          const uint64_t membar = it == view.stalls_by_reason.end() ? 0 : it->second;
          share = static_cast<double>(membar) / static_cast<double>(view.stall_samples);
          ctx.note("membar_pc_sample_share", *share);
          reading = "membar holds " + share_pct(*share) + " of stall PC samples (" +
                    std::to_string(membar) + " of " + std::to_string(view.stall_samples) + ")";
        }
        if (auto req = ctx.metric(kL2MembarRequests)) {
          reading += ", " + num(*req, 0) + " L2 membar requests";
        }
        if (!(*share >= limit)) return RuleVerdict::not_fired(reading + ", < " + share_pct(limit));
        return RuleVerdict::fired(reading + " (>= " + share_pct(limit) + ")", above(*share, limit));
      },
  };
}

Rule sysmem_peer_placement() {
  return Rule{
      .id = "d5.sysmem_peer_placement",
      .decision = Decision::kD5MemoryMechanism,
      .title = "Data lives in system or peer memory",
      .parent = {},
      .metrics = {{kL2TexSectors, true},
                  {kL2TexSysmem, true},
                  {kL2TexPeer, true},
                  {kL2TexPct, false}},
      .thresholds = {{"aperture_share", 0.40,
                      "guide 3.2.7: off-device aperture share above ~40% of L1TEX's L2 sectors"},
                     {"l2_from_l1tex_pct", 50.0,
                      "guide 3.2.7: L2 utilization driven by L1TEX above ~50% (checked when "
                      "measured)"}},
      .limiter = Limiter::kSysmemPeerTraffic,
      .finding = "Much of the kernel's L2 traffic goes to system or peer memory.",
      .next_action =
          "Move the hot data into this GPU's memory: copy it in ahead of time (cudaMemcpyAsync, "
          "prefetch managed memory with cudaMemPrefetchAsync), avoid zero-copy/host-mapped "
          "buffers in inner loops, and stage peer data explicitly.",
      .priority = 8,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double total = ctx.required(kL2TexSectors);
        double sys = ctx.required(kL2TexSysmem);
        double peer = ctx.required(kL2TexPeer);
        if (!(total > 0)) return RuleVerdict::not_fired("no L2 sectors from L1TEX");
        double share = (sys + peer) / total;
        ctx.note("offdevice_aperture_share", share);
        double limit = ctx.threshold("aperture_share");
        std::string reading = share_pct(share) + " of L1TEX's L2 sectors go to system (" + num(sys, 0) +
                              ") or peer (" + num(peer, 0) + ") memory, of " + num(total, 0);
        if (!(share > limit)) return RuleVerdict::not_fired(reading + ", <= " + share_pct(limit));
        if (auto util = ctx.metric(kL2TexPct)) {
          double util_limit = ctx.threshold("l2_from_l1tex_pct");
          reading += "; L2 utilization from L1TEX " + num(*util, 1) + "%";
          if (!(*util > util_limit)) {
            return RuleVerdict::not_fired(reading + " (<= " + num(util_limit, 0) + "%)");
          }
        }
        return RuleVerdict::fired(reading + " (> " + share_pct(limit) + ")", above(share, limit));
      },
  };
}

Rule l1tex_lsu_busy() {
  return Rule{
      .id = "d5.l1tex_lsu_busy",
      .decision = Decision::kD5MemoryMechanism,
      .title = "The L1TEX load/store data pipe is heavily used",
      .parent = {},
      .metrics = {{kLsuWavefrontsPct, true}, {kGpuDram, false}, {kDram, false}},
      .thresholds = {{"busy_pct", 60.0, "guide 3.2.7: above ~60% is heavy utilization"},
                     {"dram_sub_peak_pct", 60.0,
                      "guide 3.5.2: with DRAM below ~60% the kernel is wavefront-bound"}},
      .limiter = Limiter::kL1texThroughput,
      .finding = "The L1TEX data pipe processes wavefronts near its peak rate.",
      .next_action =
          "Cut L1 wavefronts rather than bytes: fix coalescing and bank conflicts first, then use "
          "wider (vector) accesses, tile for reuse in registers, or let sub-warps cooperate via "
          "shuffles; adding more loads in flight will not help here.",
      .priority = 45,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double wf = ctx.required(kLsuWavefrontsPct);
        double limit = ctx.threshold("busy_pct");
        std::string reading = "L1TEX LSU data pipe at " + num(wf, 1) + "% of peak";
        if (!(wf > limit)) return RuleVerdict::not_fired(reading + ", <= " + num(limit, 0) + "%");
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + num(limit, 0) + "%)", above(wf, limit));
        if (auto dram = dram_pct(ctx)) {
          double sub = ctx.threshold("dram_sub_peak_pct");
          reading += ", DRAM " + num(*dram, 1) + "%";
          v.detail = *dram < sub ? "wavefront_bound" : "with_dram_pressure";
          v.reading = reading + " (> " + num(limit, 0) + "%)" +
                      (*dram < sub ? ": wavefront-bound, not bandwidth-bound" : "");
        }
        return v;
      },
  };
}

Rule dram_bound() {
  return Rule{
      .id = "d5.dram_bound",
      .decision = Decision::kD5MemoryMechanism,
      .title = "DRAM bandwidth is near peak",
      .parent = {},
      .metrics = {{kGpuDram, false}, {kDram, false}},
      .thresholds = {{"near_peak_pct", 80.0, "guide 3.2.3/3.2.9: within ~80% of peak is near the limit"}},
      .limiter = Limiter::kDramBandwidth,
      .finding = "The kernel moves data at close to the DRAM's peak rate.",
      .next_action =
          "Bandwidth is used; only moving fewer bytes helps: improve reuse (tiling, fusing with "
          "neighbouring kernels), use narrower data types, and check Decision 7 for how close to "
          "the hardware limit this algorithm already is.",
      .priority = 60,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        auto dram = dram_pct(ctx);
        if (!dram) return RuleVerdict::not_evaluated(missing_dram());
        double limit = ctx.threshold("near_peak_pct");
        std::string reading = "DRAM throughput " + num(*dram, 1) + "% of peak";
        if (!(*dram >= limit)) return RuleVerdict::not_fired(reading + ", < " + num(limit, 0) + "%");
        return RuleVerdict::fired(reading + " (>= " + num(limit, 0) + "%)", above(*dram, limit));
      },
  };
}

Rule l2_bound() {
  return Rule{
      .id = "d5.l2_bound",
      .decision = Decision::kD5MemoryMechanism,
      .title = "L2 is busy while DRAM is not",
      .parent = {},
      .metrics = {{kL2, true}, {kGpuDram, false}, {kDram, false}},
      .thresholds = {{"l2_high_pct", 80.0, "guide 3.2.3: above ~80% of peak is high"},
                     {"dram_low_pct", 60.0, "guide 3.2.3: below ~60% of peak is low"}},
      .limiter = Limiter::kL2Bandwidth,
      .finding = "The L2 cache, not DRAM, is the busy memory tier.",
      .next_action =
          "Expand the memory breakdown to see which L2 traffic dominates; cut L2 traffic by "
          "improving L1 hit rates (reuse within a block, shared-memory staging), coalescing, and "
          "fewer atomics.",
      .priority = 58,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double l2 = ctx.required(kL2);
        auto dram = dram_pct(ctx);
        if (!dram) return RuleVerdict::not_evaluated(missing_dram());
        double high = ctx.threshold("l2_high_pct");
        double low = ctx.threshold("dram_low_pct");
        std::string reading = "L2 throughput " + num(l2, 1) + "%, DRAM " + num(*dram, 1) + "%";
        if (!(l2 > high)) return RuleVerdict::not_fired(reading + ": L2 not above " + num(high, 0) + "%");
        if (!(*dram < low)) {
          return RuleVerdict::not_fired(reading + ": DRAM is busy too (>= " + num(low, 0) + "%)");
        }
        return RuleVerdict::fired(reading + " (L2 > " + num(high, 0) + "%, DRAM < " + num(low, 0) + "%)",
                                  above(l2, high));
      },
  };
}

Rule no_tier_near_peak() {
  return Rule{
      .id = "d5.no_tier_near_peak",
      .decision = Decision::kD5MemoryMechanism,
      .title = "No memory tier is near its peak",
      .parent = {},
      .metrics = {{kMemThroughput, true}, {kGpuDram, false}, {kDram, false}, {kL2, false}, {kL1, false},
                  {kLsuWavefrontsPct, false}},
      .thresholds = {{"sub_peak_pct", 60.0,
                      "guide 3.2.3: below ~60% of peak is low; DRAM, L2 and L1TEX all below it"}},
      .limiter = Limiter::kBytesInFlight,
      .finding = "Decision 5 was reached but every memory tier is sub-peak: the kernel is "
                 "latency-bound, not memory-heavy.",
      .next_action =
          "Treat the kernel as latency-bound: go back to Decision 3 (bytes in flight, stall "
          "reasons, occupancy).",
      .priority = 95,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double memory = ctx.required(kMemThroughput);
        double limit = ctx.threshold("sub_peak_pct");
        std::string reading = "compute-memory " + num(memory, 1) + "%";
        std::vector<std::string> high;
        if (memory >= limit) high.emplace_back("compute-memory");
        if (auto dram = dram_pct(ctx)) {
          reading += ", DRAM " + num(*dram, 1) + "%";
          if (*dram >= limit) high.emplace_back("DRAM");
        }
        const std::pair<std::string_view, std::string_view> tiers[] = {
            {kL2, "L2"}, {kL1, "L1TEX"}, {kLsuWavefrontsPct, "LSU wavefronts"}};
        for (const auto& [name, label] : tiers) {
          if (auto v = ctx.metric(name)) {
            reading += ", " + std::string(label) + " " + num(*v, 1) + "%";
            if (*v >= limit) high.emplace_back(label);
          }
        }
        if (!high.empty()) {
          std::string list;
          for (const auto& h : high) list += (list.empty() ? "" : ", ") + h;
          return RuleVerdict::not_fired(reading + ": " + list + " at or above " + num(limit, 0) + "%");
        }
        return RuleVerdict::fired(reading + ": all below " + num(limit, 0) + "%",
                                  below(memory, limit));
      },
  };
}

}  // namespace

std::vector<Rule> make_d5_rules() {
  std::vector<Rule> rules;
  rules.push_back(l1tex_lsu_busy());
  rules.push_back(smem_fill_through_registers());
  rules.push_back(uncoalesced_loads());
  rules.push_back(uncoalesced_stores());
  rules.push_back(low_bytes_per_sector());
  rules.push_back(store_rmw_amplification());
  rules.push_back(local_memory_traffic());
  rules.push_back(excess_l2_transactions());
  rules.push_back(l2_atomic_pressure());
  rules.push_back(shared_bank_conflicts());
  rules.push_back(memory_fences());
  rules.push_back(sysmem_peer_placement());
  rules.push_back(dram_bound());
  rules.push_back(l2_bound());
  rules.push_back(no_tier_near_peak());
  return rules;
}

}  // namespace cutriage::triage::detail
