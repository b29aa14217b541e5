// Decision 1: is the workload too small to saturate the GPU? (guide 3.2.2)
//
// The launch__* values come from Nsight Compute (measured) or from the engine's launch calculator
// (derived, see launch.cpp); the rules read them by name so both inputs work the same way.
#include <algorithm>
#include <cmath>
#include <string>

#include "engine_limits.h"
#include "engine_regime.h"
#include "registry.h"
#include "rule_helpers.h"
#include "rule_numbers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kWaves = "launch__waves_per_multiprocessor";
constexpr std::string_view kGrid = "launch__grid_size";
constexpr std::string_view kBlock = "launch__block_size";
constexpr std::string_view kSmCount = "launch__sm_count";
constexpr std::string_view kTensorActive = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
constexpr std::string_view kTensorHmmaActive =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";

RuleVerdict eval_waves(RuleContext& ctx) {
  const double waves = ctx.required(kWaves);
  const double limit = ctx.threshold("min_waves");
  std::optional<double> grid = ctx.metric(kGrid);
  std::optional<double> sms = ctx.metric(kSmCount);
  std::string reading = fmt(waves, 2) + " waves per SM";
  if (grid && sms) reading += " (" + count(*grid) + " blocks on " + count(*sms) + " SMs)";
  if (!(waves < limit)) {
    std::string r = reading + ": the grid fills every SM at least once";
    if (const auto& s = ctx.launch(); s && s->wave_efficiency < 1.0) {
      ctx.note("cutriage__wave_efficiency", s->wave_efficiency);
      r += "; last wave " + pct(100.0 * s->wave_efficiency) + " efficient overall";
    }
    return RuleVerdict::not_fired(r);
  }
  RuleVerdict v = RuleVerdict::fired(reading + ", below " + fmt(limit, 0) +
                                         ": part of the GPU's block slots stay empty for the whole "
                                         "kernel",
                                     std::max(0.0, 1.0 - waves / limit));
  if (grid && sms && *grid >= 1 && *grid < *sms) {
    v.estimated_speedup = *sms / *grid;
    v.estimate_basis = "only " + count(*grid) + " of " + count(*sms) +
                       " SMs receive a block; spreading the same work over every SM bounds the "
                       "gain at SMs / blocks";
  }
  // Block slots left empty: more resident warps hide more latency, until the busiest unit reaches
  // its peak. Bounded by both (1 / waves, 100% / busiest); only with the throughputs measured,
  // since without them 1 / waves alone can promise far more than latency hiding gives.
  const std::optional<double> sm = ctx.metric(kSmThroughput);
  const std::optional<double> mem = ctx.metric(kMemThroughput);
  if (waves > 0 && sm && mem) {
    const double busiest = std::max(*sm, *mem);
    const double fill = limit / waves;
    const double roof = busiest > 0 ? 100.0 / busiest : fill;
    const double slots = std::min(fill, roof);
    if (slots > v.estimated_speedup.value_or(1.0)) {
      v.estimated_speedup = slots;
      v.estimate_basis = "the grid fills " + pct(100.0 * waves / limit) + " of one wave of block slots and its busiest " +
                         "unit runs at " + pct(busiest) + "; filling the slots bounds the gain at " +
                         (fill <= roof ? "1 / waves" : "where that unit reaches its peak (100% / " + pct(busiest) + ")");
    }
  }
  return std::move(v).decided_by(std::string(kWaves), "min_waves");
}

RuleVerdict eval_partial_warp(RuleContext& ctx) {
  const double block = ctx.required(kBlock);
  const double warp = 32;
  if (!(block >= 1)) return RuleVerdict::not_evaluated("block size is not positive");
  const double rem = std::fmod(block, warp);
  if (rem == 0) return RuleVerdict::not_fired(count(block) + " threads per block: whole warps");
  const double warps = std::ceil(block / warp);
  const double lane_use = block / (warps * warp);
  ctx.note("cutriage__lane_utilization_of_block", lane_use);
  RuleVerdict v = RuleVerdict::fired(
      count(block) + " threads per block is not a multiple of 32: the last warp runs with " +
          count(rem) + " of 32 lanes (" + pct(100.0 * lane_use) + " of the block's lanes used)",
      1.0 - lane_use);
  v.estimated_speedup = 1.0 / lane_use;
  v.estimate_basis = "upper bound when the kernel is limited by warp issue: the same threads in "
                     "whole warps need warps*32/threads fewer warp instructions";
  return v;
}

RuleVerdict eval_small_block(RuleContext& ctx) {
  const double block = ctx.required(kBlock);
  if (!(block >= 1)) return RuleVerdict::not_evaluated("block size is not positive");
  std::optional<DeviceLimits> dev = device_limits_of(ctx.kernel());
  if (dev && dev->max_blocks_per_sm != 0 && dev->max_warps_per_sm != 0) {
    const double warps_per_block = std::ceil(block / 32.0);
    const double cap = 100.0 *
                       std::min(dev->max_blocks_per_sm * warps_per_block,
                                static_cast<double>(dev->max_warps_per_sm)) /
                       dev->max_warps_per_sm;
    ctx.note("cutriage__block_slot_occupancy_cap_pct", cap, "%");
    const double min_cap = ctx.threshold("min_cap_pct");
    std::string reading = count(block) + " threads per block: " + count(dev->max_blocks_per_sm) +
                          " block slots per SM hold at most " +
                          count(dev->max_blocks_per_sm * warps_per_block) + " warps, an occupancy cap of " +
                          pct(cap);
    if (cap < min_cap) {
      return RuleVerdict::fired(reading + " (< " + pct(min_cap, 0) + ")", (min_cap - cap) / min_cap);
    }
    return RuleVerdict::not_fired(reading);
  }
  const double min_threads = ctx.threshold("min_threads");
  std::string reading = count(block) + " threads per block (device limits unknown; rule of thumb: " +
                        count(min_threads) + ")";
  if (block < min_threads) return RuleVerdict::fired(reading, (min_threads - block) / min_threads);
  return RuleVerdict::not_fired(reading);
}

RuleVerdict eval_low_occupancy(RuleContext& ctx) {
  const double occ = ctx.required(kAchievedOccupancy);
  const double low = ctx.threshold("low_pct");
  std::optional<double> theo = ctx.metric(kTheoreticalOccupancy);
  std::string reading = "achieved occupancy " + pct(occ);
  if (theo) reading += " of a theoretical " + pct(*theo);
  if (!(occ < low)) return RuleVerdict::not_fired(reading + " (>= " + pct(low, 0) + ")");

  // Exemptions: Tensor-Core-dominated kernels and kernels already near a throughput limit run well
  // with few warps (guide 3.2.2).
  const double sol_high = ctx.threshold("sol_high_pct");
  const double tensor_dom = ctx.threshold("tensor_dominant_pct");
  std::optional<double> tensor;
  for (std::string_view t : {kTensorActive, kTensorHmmaActive}) {
    if (auto v = ctx.metric(t)) tensor = std::max(tensor.value_or(*v), *v);
  }
  if (tensor && *tensor >= tensor_dom) {
    return RuleVerdict::not_fired(reading + ", but the Tensor pipe is busy " + pct(*tensor) +
                                  " of active cycles: few warps suffice");
  }
  std::optional<double> sm = ctx.metric(kSmThroughput);
  std::optional<double> mem = ctx.metric(kMemThroughput);
  const double sol = std::max(sm.value_or(0.0), mem.value_or(0.0));
  if ((sm || mem) && sol >= sol_high) {
    return RuleVerdict::not_fired(reading + ", but a throughput is already at " + pct(sol) +
                                  " of peak: more warps would not help");
  }
  RuleVerdict v = RuleVerdict::fired(reading + " (< " + pct(low, 0) +
                                         "): too few resident warps to hide latency",
                                     (low - occ) / low);
  if (theo && *theo < low) {
    if (const auto& s = ctx.launch()) {
      v.detail = "theoretical occupancy limited by " + std::string(to_string(s->limiter));
    } else {
      v.detail = "theoretical occupancy itself is low";
    }
  } else if (theo) {
    v.detail = "achieved well below theoretical: imbalance, tail or too few blocks";
  }
  return v;
}

// A grid of a few waves whose last wave is mostly empty (Nsight Compute's "tail effect"). With
// blocks of equal work every wave takes about the same time, so the partial last wave costs a whole
// wave's time while most block slots sit idle: the kernel runs ceil(W) wave-times for W waves of
// work. Fires only while that tail is a sizeable share of the kernel (few waves): at 40 waves the
// last one is 2.5% of the time, whatever its fill.
RuleVerdict eval_tail_wave(RuleContext& ctx) {
  const double waves = ctx.required(kWaves);
  if (!std::isfinite(waves) || !(waves >= 1.0)) {
    return RuleVerdict::not_evaluated("under one wave (" + fmt(waves, 2) +
                                      "): d1.waves_below_one speaks for the grid's size");
  }
  const double max_fill = ctx.threshold("max_fill");
  const double min_share = ctx.threshold("min_tail_share");
  const double whole = std::floor(waves);
  // Below this the last wave is a rounding of the reported waves, not a real tail.
  constexpr double kWholeWaveTolerance = 1e-6;
  const double fill = waves - whole;
  if (fill <= kWholeWaveTolerance) {
    return RuleVerdict::not_fired(fmt(waves, 2) + " waves per SM: the grid divides into whole waves");
  }
  const double rounds = whole + 1;  // wave-times the kernel takes: ceil(W)
  const double tail_share = 1.0 / rounds;
  const double efficiency = waves / rounds;
  ctx.note("cutriage__last_wave_fill", fill);
  ctx.note("cutriage__tail_wave_share_of_time", tail_share);
  ctx.note("cutriage__wave_efficiency", efficiency);
  std::string reading = fmt(waves, 2) + " waves per SM: the last of " + count(rounds) + " waves is " +
                        pct(100.0 * fill) + " full";
  std::optional<double> grid = ctx.metric(kGrid);
  if (const auto& s = ctx.launch(); s && grid && s->blocks_per_sm != 0) {
    const std::optional<double> sms = ctx.metric(kSmCount);
    const double slots = sms ? *sms * s->blocks_per_sm : 0;
    if (slots > 0) {
      reading += " (" + count(*grid - whole * slots) + " blocks for " + count(slots) + " block slots)";
    }
  }
  if (tail_share < min_share) {
    return RuleVerdict::not_fired(reading + ", but it is only " + pct(100.0 * tail_share) +
                                  " of the kernel's time (< " + pct(100.0 * min_share, 0) + ")");
  }
  if (!(fill < max_fill)) {
    return RuleVerdict::not_fired(reading + " (>= " + pct(100.0 * max_fill, 0) + "): a small tail");
  }
  reading += " (< " + pct(100.0 * max_fill, 0) + "): that wave takes " + pct(100.0 * tail_share) +
             " of the kernel's time with most SMs idle; the waves run " + pct(100.0 * efficiency) +
             " efficient";
  // Read for the engine too: past it the tail becomes the verdict (Router::promote_dominant).
  if (rounds / waves >= ctx.threshold("dominant_ratio")) {
    reading += ", so the tail, not the average SM, sets the kernel's time";
  }
  RuleVerdict v = RuleVerdict::fired(reading, below(fill, max_fill) * tail_share / min_share);
  v.estimated_speedup = rounds / waves;
  v.estimate_basis = "with blocks of equal work each wave takes the same time: the same work in whole "
                     "waves takes " + fmt(waves, 2) + " wave-times instead of " + count(rounds) +
                     ", ceil(waves) / waves";
  return v;
}

RuleVerdict eval_isolated(RuleContext& ctx) {
  const std::optional<bool>& concurrent = ctx.kernel().ran_concurrently;
  if (!concurrent) return RuleVerdict::not_evaluated("no timeline: concurrency with other kernels unknown");
  if (*concurrent) return RuleVerdict::not_fired("ran concurrently with other kernels");
  std::optional<double> waves = ctx.metric(kWaves);
  const double limit = ctx.threshold("min_waves");
  if (waves && !(*waves < limit)) {
    return RuleVerdict::not_fired("ran alone, but its grid fills the GPU (" + fmt(*waves, 2) + " waves)");
  }
  std::string reading = "ran alone on the GPU";
  if (waves) reading += " with " + fmt(*waves, 2) + " waves: the idle SMs had no other work";
  return RuleVerdict::fired(reading);
}

}  // namespace

std::vector<Rule> make_d1_rules() {
  std::vector<Rule> rules;
  rules.push_back(Rule{
      .id = "d1.waves_below_one",
      .decision = Decision::kD1WorkloadSize,
      .title = "The grid fills every SM at least once",
      .parent = {},
      .metrics = {{kWaves, true}, {kGrid, false}, {kSmCount, false}, {kSmThroughput, false}, {kMemThroughput, false}},
      .thresholds = {{"min_waves", 1.0, "guide 3.2.2: less than one wave leaves SMs idle"}},
      .limiter = Limiter::kSmallGrid,
      .finding = "The grid is smaller than one wave: some SMs or block slots get no work.",
      .next_action = "Expose more independent work across blocks (split outer loops or batch "
                     "items over the grid) before tuning memory or pipelines; or run it "
                     "concurrently with other work.",
      .priority = 10,
      .evaluate = eval_waves,
  });
  rules.push_back(Rule{
      .id = "d1.block_not_warp_multiple",
      .decision = Decision::kD1WorkloadSize,
      .title = "Block size is a multiple of the warp size",
      .parent = {},
      .metrics = {{kBlock, true}},
      .thresholds = {},
      .limiter = Limiter::kPartialWarp,
      .finding = "The block size leaves a partially filled warp in every block.",
      .next_action = "Round the block size to a multiple of 32 threads and guard the extra threads.",
      .priority = 30,
      .evaluate = eval_partial_warp,
  });
  rules.push_back(Rule{
      .id = "d1.block_too_small",
      .decision = Decision::kD1WorkloadSize,
      .title = "Blocks are large enough not to run out of block slots",
      .parent = {},
      .metrics = {{kBlock, true}},
      .thresholds = {{"min_cap_pct", 100.0,
                      "fires when block slots alone cap occupancy below this (device limits known)"},
                     {"min_threads", 32.0,
                      "guide 3.2.2 rule of thumb, used when the device limits are unknown"}},
      .limiter = Limiter::kSmallBlock,
      .finding = "Blocks are so small that the per-SM block slots run out before the warp slots.",
      .next_action = "Use larger blocks (at least 64 threads on Hopper: 32 blocks x 2 warps fill "
                     "the 64 warp slots), giving each block more of the work.",
      .priority = 20,
      .evaluate = eval_small_block,
  });
  rules.push_back(Rule{
      .id = "d1.low_achieved_occupancy",
      .decision = Decision::kD1WorkloadSize,
      .title = "Achieved occupancy is high enough to hide latency",
      .parent = {},
      .metrics = {{kAchievedOccupancy, true},
                  {kTheoreticalOccupancy, false},
                  {kSmThroughput, false},
                  {kMemThroughput, false},
                  {kTensorActive, false},
                  {kTensorHmmaActive, false}},
      .thresholds = {{"low_pct", 60.0, "guide 3.2.2: achieved occupancy below ~60%"},
                     {"sol_high_pct", 80.0, "exempt when compute or memory SOL is already high (guide 3.2.3: > ~80%)"},
                     {"tensor_dominant_pct", 50.0,
                      "exempt when the Tensor pipe is this busy (cutriage's reading of "
                      "'dominated by Tensor Core usage')"}},
      .limiter = Limiter::kLowAchievedOccupancy,
      .finding = "Too few warps are resident to hide latency.",
      .next_action = "Raise the number of resident warps: more blocks, or fewer registers/shared "
                     "memory per block if those cap occupancy; check imbalance if achieved is far "
                     "below theoretical.",
      .priority = 40,
      .evaluate = eval_low_occupancy,
  });
  rules.push_back(Rule{
      .id = "d1.tail_wave",
      .decision = Decision::kD1WorkloadSize,
      .title = "The grid's last wave is not a mostly empty tail",
      .parent = {},
      .metrics = {{kWaves, true}, {kGrid, false}, {kSmCount, false}},
      .thresholds = {{"max_fill", 0.5,
                      "cutriage: a last wave under half full leaves most block slots idle for a "
                      "whole wave's time (Nsight Compute's tail-effect rule: partial last wave)"},
                     {"min_tail_share", 0.2,
                      "cutriage: the last wave is 1/ceil(waves) of the time; at 5 waves or fewer "
                      "(>= 20%) the tail matters, beyond that it is negligible"},
                     {"dominant_ratio", 1.5,
                      "cutriage: when ceil(waves)/waves reaches this (a third of the wave-time "
                      "lost), the tail outranks the routed regime's findings"}},
      .limiter = Limiter::kTailWave,
      .finding = "The grid's last wave is mostly empty: it runs a whole wave's time on a few SMs.",
      .next_action = "Make the work divide into whole waves: size the grid to a multiple of SMs x "
                     "resident blocks per SM (fewer, larger blocks, or more, smaller ones so the "
                     "partial wave is a smaller share), or launch one persistent wave that loops "
                     "over the work items (stream-K style for GEMMs).",
      .priority = 25,
      .evaluate = eval_tail_wave,
  });
  rules.push_back(Rule{
      .id = "d1.kernel_isolated",
      .decision = Decision::kD1WorkloadSize,
      .title = "A small kernel shares the GPU with other work",
      .parent = {},
      .metrics = {{kWaves, false}},
      .thresholds = {{"min_waves", 1.0, "only a kernel under one wave leaves SMs for others"}},
      .limiter = Limiter::kIsolatedKernel,
      .finding = "The kernel ran alone although it cannot fill the GPU.",
      .next_action = "Launch independent work on other streams (or in a CUDA graph) so it overlaps "
                     "this kernel; confirm with a timeline.",
      .priority = 60,
      .evaluate = eval_isolated,
  });
  return rules;
}

}  // namespace cutriage::triage::detail
