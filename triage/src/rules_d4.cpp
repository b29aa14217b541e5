// Decision 4: the kernel is compute-heavy; which pipeline limits it?
//
// Pipe names differ between chips (fma vs fmaheavy/fmalite, tensor sub-pipes), so the pipe rules
// scan the metric set by prefix and map whatever pipes are present to a Limiter.
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
#include "registry.h"
#include "rule_helpers.h"
#include "rule_numbers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kInstExecutedSum = "sm__inst_executed.sum";
constexpr std::string_view kInstIssuedSum = "sm__inst_issued.sum";
constexpr std::string_view kInstIssuedPct = "sm__inst_issued.avg.pct_of_peak_sustained_elapsed";
constexpr std::string_view kInstThroughputPct =
    "sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr std::string_view kFp64Sum = "sm__inst_executed_pipe_fp64.sum";
constexpr std::string_view kFp16FmaSum = "sm__inst_executed_pipe_fma_type_fp16.sum";
constexpr std::string_view kTensorSum = "sm__inst_executed_pipe_tensor.sum";
constexpr std::string_view kGmmaSum = "sm__inst_executed_pipe_tensor_op_gmma.sum";
constexpr std::string_view kDfma = "sm__sass_thread_inst_executed_ops_dadd_dmul_dfma_pred_on.sum";
constexpr std::string_view kFfma = "sm__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on.sum";
constexpr std::string_view kTensorCyclesPct =
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";

// Pipe utilization metrics GH100 exposes (what a collector should ask for). The rules accept any
// other sm__pipe_*_cycles_active / sm__inst_executed_pipe_* percentage present as well.
constexpr std::string_view kPipePctNames[] = {
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_cbu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tex.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
};

// Top-level pipes for instruction shares (sub-pipes such as fmaheavy or tensor_op_* would count
// the same instructions twice).
constexpr std::string_view kPipeSumNames[] = {
    "sm__inst_executed_pipe_adu.sum",    "sm__inst_executed_pipe_alu.sum",
    "sm__inst_executed_pipe_cbu.sum",    "sm__inst_executed_pipe_fma.sum",
    "sm__inst_executed_pipe_fp64.sum",   "sm__inst_executed_pipe_ipa.sum",
    "sm__inst_executed_pipe_lsu.sum",    "sm__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_tex.sum",    "sm__inst_executed_pipe_tma.sum",
    "sm__inst_executed_pipe_uniform.sum", "sm__inst_executed_pipe_xu.sum",
};

Limiter pipe_limiter(std::string_view pipe) {
  if (starts_with(pipe, "tensor")) return Limiter::kPipeTensor;
  if (starts_with(pipe, "fma") || starts_with(pipe, "fp16") || starts_with(pipe, "fp32")) {
    return Limiter::kPipeFma;
  }
  if (pipe == "alu") return Limiter::kPipeAlu;
  if (pipe == "fp64") return Limiter::kPipeFp64;
  if (starts_with(pipe, "lsu")) return Limiter::kPipeLsu;
  if (pipe == "xu") return Limiter::kPipeXu;
  return Limiter::kPipeOther;
}

std::string_view pipe_action(Limiter l) {
  switch (l) {
    case Limiter::kPipeFma:
      return "The FP32/FMA pipe is the bottleneck: cut FP32 instructions (fuse multiply-adds, "
             "hoist invariant math, packed half2 math where precision allows) or move matrix-like "
             "work onto tensor cores.";
    case Limiter::kPipeAlu:
      return "The integer/logic ALU pipe is the bottleneck: simplify index and address math "
             "(strength-reduce, hoist out of loops, use 32-bit indices), and cut comparisons and "
             "bit manipulation.";
    case Limiter::kPipeFp64:
      return "The FP64 pipe is the bottleneck: use FP32 (or mixed precision) wherever the "
             "numerics allow, and keep FP64 for accumulations that need it.";
    case Limiter::kPipeTensor:
      return "Tensor cores are the bottleneck: the math is already on the fastest path. Check "
             "Decision 7; gains now come from fewer wasted MMA tiles, lower-precision formats or "
             "sparsity, or a tuned library.";
    case Limiter::kPipeLsu:
      return "The load/store pipe is the bottleneck: issue fewer memory instructions (vector "
             "loads, data reuse in registers or shared memory) and check whether LSU writeback of "
             "wide loads, not the request side, is what saturates.";
    case Limiter::kPipeXu:
      return "The special-function pipe (transcendentals, conversions, integer division helpers) "
             "is the bottleneck: use fast intrinsics, avoid type conversions in inner loops, and "
             "replace divisions by multiplications where possible.";
    default:
      return "Reduce the instructions that run on the busiest pipe (see detail) or spread the "
             "work over other pipes.";
  }
}

struct PipeReading {
  std::string pipe;    // "fma", "tensor_op_hmma", "lsu"
  std::string metric;  // the metric it came from
  double pct = 0;
};

// The pipe name inside a utilization metric, or empty when `name` is not one.
std::string pipe_of(std::string_view name) {
  constexpr std::pair<std::string_view, std::string_view> forms[] = {
      {"sm__pipe_", "_cycles_active.avg.pct_of_peak_sustained_active"},
      {"sm__pipe_", "_cycles_active.avg.pct_of_peak_sustained_elapsed"},
      {"sm__inst_executed_pipe_", ".avg.pct_of_peak_sustained_active"},
      {"sm__inst_executed_pipe_", ".avg.pct_of_peak_sustained_elapsed"},
  };
  for (const auto& [prefix, suffix] : forms) {
    if (starts_with(name, prefix) && ends_with(name, suffix) &&
        name.size() > prefix.size() + suffix.size()) {
      std::string_view pipe =
          name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
      // Variants that do not measure a pipe's load.
      if (ends_with(pipe, "_realtime") || pipe.find("_pred_") != std::string_view::npos ||
          pipe.find("_cmd_") != std::string_view::npos || pipe.find("_mem_") != std::string_view::npos) {
        return {};
      }
      return std::string(pipe);
    }
  }
  return {};
}

// Every pipe utilization present, highest first. Reads become evidence only for the winner(s)
// the caller reports; all are read through ctx so the evidence is complete.
std::vector<PipeReading> read_pipes(RuleContext& ctx) {
  std::vector<PipeReading> out;
  std::vector<std::string> names;
  for (const auto& [name, value] : ctx.metrics().all()) {
    if (!pipe_of(name).empty()) names.push_back(name);
  }
  for (const std::string& name : names) {
    std::optional<double> v = ctx.metric(name);
    if (!v || !std::isfinite(*v)) continue;
    out.push_back(PipeReading{pipe_of(name), name, *v});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PipeReading& a, const PipeReading& b) { return a.pct > b.pct; });
  return out;
}

std::vector<MetricNeed> pipe_pct_needs() {
  std::vector<MetricNeed> out;
  for (std::string_view n : kPipePctNames) out.push_back(MetricNeed{n, false});
  return out;
}

Rule limiting_pipe() {
  return Rule{
      .id = "d4.limiting_pipe",
      .decision = Decision::kD4ComputePipe,
      .title = "One execution pipe is near its peak",
      .parent = {},
      .metrics = pipe_pct_needs(),
      .thresholds = {{"high_pct", 60.0, "guide 3.2.6: above ~60% of peak is high pressure"},
                     {"binding_pct", 80.0, "guide 3.2.6: above ~80% is likely the binding limit"}},
      .limiter = Limiter::kPipeOther,
      .finding = "The busiest execution pipe runs close to its peak rate.",
      .next_action = "Reduce pressure on the busiest pipe (see detail).",
      .priority = 45,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        std::vector<PipeReading> pipes = read_pipes(ctx);
        if (pipes.empty()) {
          return RuleVerdict::not_evaluated(
              "missing sm__pipe_*_cycles_active.avg.pct_of_peak_sustained_active and "
              "sm__inst_executed_pipe_*.avg.pct_of_peak_sustained_active (no pipe utilization "
              "measured)");
        }
        const PipeReading& top = pipes.front();
        double high = ctx.threshold("high_pct");
        double binding = ctx.threshold("binding_pct");
        std::string reading = top.pipe + " pipe at " + num(top.pct, 1) + "% of peak (" + top.metric + ")";
        // The runner-up is another pipe: one pipe is measured under two names (its cycles
        // active and its instructions executed), which must not read as a second pipe.
        // fmaheavy and fmalite are halves of the fma pipe, not other pipes.
        auto same_pipe = [&top](const PipeReading& p) {
          return p.pipe.rfind(top.pipe, 0) == 0 || top.pipe.rfind(p.pipe, 0) == 0;
        };
        auto next = std::find_if(pipes.begin() + 1, pipes.end(), [&](const PipeReading& p) { return !same_pipe(p); });
        // The threshold right after the number it applies to, the runner-up after both.
        const std::string runner_up = next != pipes.end() ? "; next " + next->pipe + " " + num(next->pct, 1) + "%" : "";
        if (!(top.pct > high)) {
          return RuleVerdict::not_fired(reading + ": no pipe above " + num(high, 0) + "%" + runner_up)
              .decided_by(top.metric, "high_pct");
        }
        bool is_binding = top.pct > binding;
        RuleVerdict v = RuleVerdict::fired(
            reading + (is_binding ? " (> " + num(binding, 0) + "%: binding)" : " (> " + num(high, 0) + "%: high pressure)") +
                runner_up,
            above(top.pct, high));
        v.limiter = pipe_limiter(top.pipe);
        v.detail = top.pipe;
        v.next_action = std::string(pipe_action(*v.limiter));
        return std::move(v).decided_by(top.metric, is_binding ? "binding_pct" : "high_pct");
      },
  };
}

std::vector<MetricNeed> pipe_sum_needs() {
  std::vector<MetricNeed> out{{kInstExecutedSum, true}};
  for (std::string_view n : kPipeSumNames) out.push_back(MetricNeed{n, false});
  return out;
}

Rule pipe_instruction_share() {
  return Rule{
      .id = "d4.pipe_instruction_share",
      .decision = Decision::kD4ComputePipe,
      .title = "One pipe executes a disproportionate share of instructions",
      .parent = {},
      .metrics = pipe_sum_needs(),
      .thresholds = {{"share", 0.5,
                      "project: one pipe executing more than half of all warp instructions "
                      "(guide 3.2.6 gives no number)"}},
      .limiter = Limiter::kPipeOther,
      .finding = "Most instructions go to one pipe.",
      .next_action = "Reduce pressure on the busiest pipe (see detail).",
      .priority = 47,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double total = ctx.required(kInstExecutedSum);
        if (!(total > 0)) return RuleVerdict::not_evaluated("no instructions executed");
        std::string best;
        double best_count = -1;
        size_t seen = 0;
        for (std::string_view name : kPipeSumNames) {
          auto v = ctx.metric(name);
          if (!v) continue;
          ++seen;
          if (*v > best_count) {
            best_count = *v;
            constexpr std::string_view prefix = "sm__inst_executed_pipe_";
            best = std::string(name.substr(prefix.size(), name.size() - prefix.size() - 4));
          }
        }
        if (seen == 0) {
          return RuleVerdict::not_evaluated(
              "missing sm__inst_executed_pipe_*.sum (no per-pipe instruction counts measured)");
        }
        double share = best_count / total;
        ctx.note("pipe_instruction_share." + best, share);
        double limit = ctx.threshold("share");
        std::string reading = best + " pipe executes " + share_pct(share) + " of instructions (" +
                              num(best_count, 0) + " of " + num(total, 0) + ")";
        if (!(share > limit)) return RuleVerdict::not_fired(reading + ", <= " + share_pct(limit));
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(limit) + ")", above(share, limit));
        v.limiter = pipe_limiter(best);
        v.detail = best;
        v.next_action = std::string(pipe_action(*v.limiter));
        return std::move(v).decided_by("pipe_instruction_share." + best, "share");
      },
  };
}

Rule slow_path_arithmetic() {
  return Rule{
      .id = "d4.slow_path_arithmetic",
      .decision = Decision::kD4ComputePipe,
      .title = "Arithmetic runs on a slow path",
      .parent = {},
      .metrics = {{kInstExecutedSum, true},
                  {kFp64Sum, true},
                  {kFp16FmaSum, false},
                  {kTensorSum, false},
                  {kDfma, false},
                  {kFfma, false}},
      .thresholds = {{"fp64_share", 0.10,
                      "project: FP64 instructions above 10% of all warp instructions are worth "
                      "questioning (guide 3.2.6 flags FP64 where FP32 suffices, no number)"},
                     {"fp16_share", 0.10,
                      "project: FP16 math on the FMA pipe above 10% of instructions while the "
                      "tensor pipe is idle"}},
      .limiter = Limiter::kSlowPathArithmetic,
      .finding = "A noticeable share of the math uses a slower instruction path than needed.",
      .next_action =
          "Move the math to a faster path: FP32 instead of FP64 where precision allows, and "
          "tensor-core MMA for matrix-shaped FP16/BF16 work.",
      .priority = 30,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double total = ctx.required(kInstExecutedSum);
        double fp64 = ctx.required(kFp64Sum);
        if (!(total > 0)) return RuleVerdict::not_evaluated("no instructions executed");
        double fp64_share = fp64 / total;
        ctx.note("fp64_instruction_share", fp64_share);
        double fp64_limit = ctx.threshold("fp64_share");
        std::string reading = "FP64 pipe runs " + share_pct(fp64_share) + " of instructions";
        if (auto d = ctx.metric(kDfma)) {
          if (auto f = ctx.metric(kFfma); f && (*d + *f) > 0) {
            double dshare = *d / (*d + *f);
            ctx.note("fp64_share_of_fp_thread_ops", dshare);
            reading += " (" + share_pct(dshare) + " of FP32+FP64 thread add/mul/fma)";
          }
        }
        if (fp64_share > fp64_limit) {
          RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(fp64_limit) + ")",
                                             above(fp64_share, fp64_limit));
          v.detail = "fp64";
          v.next_action =
              "Check whether the FP64 math needs double precision; convert it to FP32 (or keep "
              "FP64 only for accumulation) and make literals and math functions single-precision "
              "(1.0f, sinf) so they do not promote silently.";
          return v;
        }
        auto fp16 = ctx.metric(kFp16FmaSum);
        auto tensor = ctx.metric(kTensorSum);
        if (fp16 && tensor) {
          double fp16_share = *fp16 / total;
          ctx.note("fp16_fma_instruction_share", fp16_share);
          double fp16_limit = ctx.threshold("fp16_share");
          reading += "; FP16 on the FMA pipe " + share_pct(fp16_share) + ", tensor pipe " +
                     num(*tensor, 0) + " instructions";
          if (fp16_share > fp16_limit && *tensor == 0) {
            RuleVerdict v = RuleVerdict::fired(
                reading + " (FP16 share > " + share_pct(fp16_limit) + " with tensor cores idle)",
                above(fp16_share, fp16_limit));
            v.detail = "fp16_without_tensor";
            v.next_action =
                "Half-precision math runs as scalar/packed FMA while tensor cores are idle: if it "
                "is matrix-shaped (GEMM, convolution, attention), use MMA through cuBLAS, CUTLASS "
                "or WMMA/WGMMA.";
            return v;
          }
        } else {
          reading += "; tensor-core use not checked (needs " + std::string(kFp16FmaSum) + " and " +
                     std::string(kTensorSum) + ")";
        }
        return RuleVerdict::not_fired(reading + ", <= " + share_pct(fp64_limit));
      },
  };
}

Rule issue_rate() {
  std::vector<MetricNeed> metrics{{kInstIssuedPct, true}, {kSmThroughput, false}};
  for (std::string_view n : kPipePctNames) metrics.push_back(MetricNeed{n, false});
  return Rule{
      .id = "d4.issue_rate",
      .decision = Decision::kD4ComputePipe,
      .title = "Instruction issue rate is at capacity, or low behind a slow pipe",
      .parent = {},
      .metrics = std::move(metrics),
      .thresholds = {{"near_capacity_pct", 60.0,
                      "guide 3.2.6: issue above ~60% of peak is near capacity"},
                     {"low_pct", 20.0, "guide 3.2.6: issue below ~20% while SM throughput is high"},
                     {"sm_high_pct", 80.0, "guide 3.2.3: SM throughput above ~80% is high"}},
      .limiter = Limiter::kIssueSlots,
      .finding = "The issue rate explains the compute limit.",
      .next_action =
          "Issue slots are nearly full: execute fewer instructions (vector memory operations, "
          "fused math, less index arithmetic, hoisted invariants), then check Decision 7.",
      .priority = 50,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double issued = ctx.required(kInstIssuedPct);
        double near = ctx.threshold("near_capacity_pct");
        double low = ctx.threshold("low_pct");
        std::string reading = "instruction issue at " + num(issued, 1) + "% of peak";
        if (issued > near) {
          RuleVerdict v = RuleVerdict::fired(reading + " (> " + num(near, 0) + "%: near capacity)",
                                             above(issued, near));
          v.detail = "near_capacity";
          return v;
        }
        auto sm = ctx.metric(kSmThroughput);
        if (!(issued < low)) {
          return RuleVerdict::not_fired(reading + ", between " + num(low, 0) + "% and " +
                                        num(near, 0) + "%");
        }
        if (!sm) {
          return RuleVerdict::not_evaluated(reading + " (< " + num(low, 0) + "%); missing " +
                                            std::string(kSmThroughput) +
                                            " to tell a slow pipe from starvation");
        }
        double sm_high = ctx.threshold("sm_high_pct");
        reading += ", SM throughput " + num(*sm, 1) + "%";
        if (!(*sm > sm_high)) {
          return RuleVerdict::not_fired(reading + ": low issue with SM throughput not high (<= " +
                                        num(sm_high, 0) + "%), a latency case");
        }
        RuleVerdict v = RuleVerdict::fired(
            reading + ": low issue (< " + num(low, 0) + "%) with high SM throughput (> " +
                num(sm_high, 0) + "%): a slow pipe limits",
            (low - issued) / low);
        v.detail = "slow_pipe";
        std::vector<PipeReading> pipes = read_pipes(ctx);
        if (!pipes.empty()) {
          v.limiter = pipe_limiter(pipes.front().pipe);
          v.detail = "slow_pipe:" + pipes.front().pipe;
          v.next_action = std::string(pipe_action(*v.limiter));
        } else {
          v.limiter = Limiter::kPipeOther;
          v.next_action = std::string(pipe_action(Limiter::kPipeOther));
        }
        return v;
      },
  };
}

Rule replay_overhead() {
  return Rule{
      .id = "d4.replay_overhead",
      .decision = Decision::kD4ComputePipe,
      .title = "Replays or predication waste issue bandwidth",
      .parent = {},
      .metrics = {{kInstIssuedPct, true},
                  {kInstThroughputPct, true},
                  {kInstIssuedSum, false},
                  {kInstExecutedSum, false},
                  {kThreadsPerInst, false},
                  {kPredOnPerInst, false}},
      .thresholds = {{"gap_points", 20.0,
                      "project: instruction throughput more than 20 points above the issue rate "
                      "is a 'large gap' (guide 3.2.6 gives no number)"},
                     {"replay_fraction", 0.10,
                      "project: more than 10% of issued instructions are re-issues (issued vs "
                      "executed counts, when measured)"},
                     {"slow_pipe_pct", 80.0,
                      "guide 3.2.6: a pipe above ~80% is the binding constraint and explains a "
                      "throughput-above-issue gap"}},
      .limiter = Limiter::kInstructionReplay,
      .finding = "Part of the issue bandwidth goes to replays or predicated-off work.",
      .next_action =
          "If the excess comes from memory replays, fix the access pattern (Decision 5: "
          "coalescing, bank conflicts); if from predication, restructure branches and guards.",
      .priority = 40,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        double issued = ctx.required(kInstIssuedPct);
        double throughput = ctx.required(kInstThroughputPct);
        double gap = throughput - issued;
        ctx.note("instruction_throughput_minus_issue_pct", gap, "%");
        std::string reading = "instruction throughput " + num(throughput, 1) + "% vs issue " +
                              num(issued, 1) + "% (gap " + num(gap, 1) + " points)";
        if (auto a = ctx.metric(kThreadsPerInst)) {
          if (auto p = ctx.metric(kPredOnPerInst)) {
            reading += "; " + num(*a - *p, 1) + " predicated-off threads per instruction";
          }
        }
        auto issued_n = ctx.metric(kInstIssuedSum);
        auto executed_n = ctx.metric(kInstExecutedSum);
        if (issued_n && executed_n && *executed_n > 0) {
          double replay = *issued_n / *executed_n - 1.0;
          ctx.note("replayed_issue_fraction", replay);
          double limit = ctx.threshold("replay_fraction");
          reading += "; " + num(*issued_n, 0) + " issued vs " + num(*executed_n, 0) +
                     " executed (" + share_pct(replay) + " re-issued)";
          if (!(replay > limit)) return RuleVerdict::not_fired(reading + ", <= " + share_pct(limit));
          RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(limit) + ")", above(replay, limit));
          v.detail = "replay";
          if (issued >= 60.0) {
            v.estimated_speedup = *issued_n / *executed_n;
            v.estimate_basis =
                "issue-bound kernel (issue >= 60% of peak): dropping the re-issued instructions "
                "frees issued/executed = " +
                num(*v.estimated_speedup) + "x the issue slots";
          }
          return v;
        }
        double limit = ctx.threshold("gap_points");
        if (!(gap > limit)) return RuleVerdict::not_fired(reading + ", <= " + num(limit, 0) + " points");
        // Without issued/executed counts, a gap is also what a saturated slow pipe looks like
        // (FP64 or XU accept a warp instruction every few cycles): then it is not overhead.
        std::vector<PipeReading> pipes = read_pipes(ctx);
        const double busy = ctx.threshold("slow_pipe_pct");
        if (!pipes.empty() && pipes.front().pct >= busy) {
          return RuleVerdict::not_fired(reading + ", explained by the " + pipes.front().pipe +
                                        " pipe at " + num(pipes.front().pct, 1) +
                                        "% (a saturated pipe, not replays)");
        }
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + num(limit, 0) + " points)",
                                           above(gap, limit));
        v.detail = "throughput_gap";
        return v;
      },
  };
}

Rule wgmma_count_note() {
  return Rule{
      .id = "d4.wgmma_count_note",
      .decision = Decision::kD4ComputePipe,
      .title = "Hopper warp-group MMA counts four warp instructions per operation",
      .parent = {},
      .metrics = {{kGmmaSum, false}, {kTensorSum, false}, {kTensorCyclesPct, false}},
      .thresholds = {{"warp_instructions_per_wgmma", 4.0,
                      "guide 3.2.6 note: one warp-group MMA shows as 4 warp instructions, one "
                      "per scheduler"},
                     {"min_tensor_active_pct", 5.0,
                      "cutriage: with only the tensor pipe's activity known, below this share of "
                      "peak the tensor work is too small for its instruction count to matter"}},
      .limiter = Limiter::kPipeTensor,
      .finding = "Tensor instruction counts include warp-group MMA, counted once per scheduler.",
      .next_action =
          "Divide warp-group MMA instruction counts by 4 before comparing them with the number of "
          "MMA operations the algorithm should issue; a low issue rate is expected for "
          "tensor-heavy kernels.",
      .priority = 95,
      .blocking = false,
      .note = true,  // how to read tensor counts, never what limits the kernel
      .evaluate = [](RuleContext& ctx) {
        const auto& dev = ctx.kernel().device_limits;
        if (!dev || (dev->cc_major == 0 && dev->chip.empty())) {
          return RuleVerdict::not_evaluated("device unknown: the note applies to compute "
                                            "capability 9.x (Hopper) only");
        }
        bool hopper = dev->cc_major == 9 || dev->chip == "GH100";
        if (!hopper) {
          return RuleVerdict::not_evaluated("not a Hopper device (cc " + std::to_string(dev->cc_major) +
                                            "." + std::to_string(dev->cc_minor) + ")");
        }
        double per = ctx.threshold("warp_instructions_per_wgmma");
        auto gmma = ctx.metric(kGmmaSum);
        auto tensor = ctx.metric(kTensorSum);
        auto cycles = ctx.metric(kTensorCyclesPct);
        if (!gmma && !tensor && !cycles) {
          return RuleVerdict::not_evaluated("missing " + std::string(kGmmaSum) + " (or " +
                                            std::string(kTensorSum) + ", " +
                                            std::string(kTensorCyclesPct) + ")");
        }
        if (gmma && *gmma > 0) {
          double logical = *gmma / per;
          ctx.note("wgmma_logical_operations", logical);
          return RuleVerdict::fired(num(*gmma, 0) + " warp-group MMA warp instructions = " +
                                        num(logical, 0) + " warp-group MMA operations (/" +
                                        num(per, 0) + ")",
                                    0.0);
        }
        bool active = (tensor && *tensor > 0) || (cycles && *cycles > 0);
        if (!active) return RuleVerdict::not_fired("tensor pipe idle");
        const double min_active = ctx.threshold("min_tensor_active_pct");
        if (!tensor && cycles && *cycles < min_active) {
          return RuleVerdict::not_fired("tensor pipe at " + num(*cycles, 1) + "% of peak, below " + num(min_active, 0) +
                                        "%: too little tensor work for the count to matter");
        }
        std::string reading = "tensor pipe active";
        if (tensor) {
          double logical = *tensor / per;
          ctx.note("tensor_instructions_if_all_wgmma", logical);
          reading += ": " + num(*tensor, 0) + " tensor warp instructions; if they are warp-group "
                     "MMA that is " + num(logical, 0) + " operations (/" + num(per, 0) + ")";
        } else {
          reading += " (" + num(*cycles, 1) + "% of peak); warp-group MMA counts need /" + num(per, 0);
        }
        return RuleVerdict::fired(reading, 0.0);
      },
  };
}

}  // namespace

Rule divergent_lanes_on_busy_pipe() {
  return Rule{
      .id = "d4.divergent_lanes_on_busy_pipe",
      .decision = Decision::kD4ComputePipe,
      .title = "The busy pipe executes mostly inactive lanes",
      .parent = "d4.replay_overhead",
      .metrics = {{kThreadsPerInst, true}, {kPredOnPerInst, false}},
      .thresholds = {{"lanes_per_instruction", 24.0,
                      "guide 3.2.5/3.8.6: fewer than ~24 of 32 threads per executed instruction"},
                     {"busy_pipe_pct", 60.0, "guide 3.2.6: a pipe above ~60% is under high pressure"}},
      .limiter = Limiter::kWarpDivergence,
      .finding = "Warps reach the saturated pipe with most lanes masked off: divergence, not arithmetic, "
                 "fills it.",
      .next_action =
          "Make the warp's lanes take the same path: sort or bin work so neighbouring threads "
          "branch alike, move the per-lane variation into data (select, table lookup) instead of "
          "control flow, or give divergent cases their own kernel or warp.",
      // Ranks before the busy-pipe finding it explains (limiting_pipe, 45).
      .priority = 25,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        const double lanes = ctx.required(kThreadsPerInst);
        const double lane_limit = ctx.threshold("lanes_per_instruction");
        std::string reading = num(lanes, 1) + " of 32 threads active per executed instruction";
        if (!(lanes < lane_limit)) return RuleVerdict::not_fired(reading + ", >= " + num(lane_limit, 0));
        std::vector<PipeReading> pipes = read_pipes(ctx);
        if (pipes.empty()) return RuleVerdict::not_evaluated(reading + "; no pipe utilization metric");
        const double busy = ctx.threshold("busy_pipe_pct");
        reading += ", busiest pipe " + pipes.front().pipe + " at " + num(pipes.front().pct, 1) + "%";
        if (!(pipes.front().pct > busy)) {
          return RuleVerdict::not_fired(reading + " (<= " + num(busy, 0) +
                                        "%: Decision 3's divergence check covers idle pipes)");
        }
        RuleVerdict v = RuleVerdict::fired(reading, above(lane_limit, lanes));
        v.detail = pipes.front().pipe;
        v.estimated_speedup = 32.0 / std::max(lanes, 1.0);
        v.estimate_basis = "a pipe-bound kernel whose warps ran converged would issue " +
                           num(lanes, 1) + "/32 of the instructions on its busiest pipe";
        return v;
      },
  };
}

std::vector<Rule> make_d4_rules() {
  std::vector<Rule> rules;
  rules.push_back(limiting_pipe());
  rules.push_back(pipe_instruction_share());
  rules.push_back(slow_path_arithmetic());
  rules.push_back(issue_rate());
  rules.push_back(replay_overhead());
  rules.push_back(divergent_lanes_on_busy_pipe());
  rules.push_back(wgmma_count_note());
  return rules;
}

}  // namespace cutriage::triage::detail
