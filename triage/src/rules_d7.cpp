// Decision 7: are you close to hardware limits for this algorithm? (guide 3.2.9)
//
// The routed regime comes from the engine as the derived metric cutriage__routed_regime (see
// engine_regime.h): which resource Decisions 4/5 expected to be the limiter.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "engine_regime.h"
#include "metric_names.h"
#include "registry.h"
#include "rule_helpers.h"

namespace cutriage::triage::detail {

namespace {

struct Unit {
  std::string name;  // metric
  double value;
};

constexpr std::array<std::string_view, 4> kMemoryUnits{kGpuDram, kDram, kL2, kL1};
constexpr std::string_view kIssued = "sm__inst_issued.avg.pct_of_peak_sustained_elapsed";

bool is_pipe_metric(std::string_view name) {
  return (starts_with(name, "sm__pipe_") || starts_with(name, "sm__inst_executed_pipe_")) &&
         name.find(".avg.pct_of_peak_sustained_") != std::string_view::npos;
}

std::optional<Unit> top_memory_unit(RuleContext& ctx) {
  std::optional<Unit> best;
  for (std::string_view n : kMemoryUnits) {
    if (auto v = ctx.metric(n); v && (!best || *v > best->value)) best = Unit{std::string(n), *v};
  }
  return best;
}

std::optional<Unit> top_compute_unit(RuleContext& ctx, bool include_issue) {
  std::optional<Unit> best;
  std::vector<std::string> names;
  for (const auto& [name, v] : ctx.metrics().all()) {
    if (is_pipe_metric(name)) names.push_back(name);
  }
  if (include_issue && ctx.metrics().has(kIssued)) names.emplace_back(kIssued);
  for (const std::string& n : names) {
    if (auto v = ctx.metric(n); v && (!best || *v > best->value)) best = Unit{n, *v};
  }
  return best;
}

RoutedRegime routed(RuleContext& ctx) {
  std::optional<double> r = ctx.metric(kRoutedRegimeMetric);
  // Range-checked before the conversion: an imported capture may carry a column of this name with
  // any value, and converting a double outside int's range is undefined behaviour.
  if (!r || !(*r >= 0 && *r <= 4)) return RoutedRegime::kUnknown;
  return static_cast<RoutedRegime>(static_cast<int>(*r));
}

Limiter limiter_for_unit(std::string_view metric) {
  if (starts_with(metric, "dram__") || starts_with(metric, "gpu__dram")) return Limiter::kDramBandwidth;
  if (starts_with(metric, "lts__")) return Limiter::kL2Bandwidth;
  if (starts_with(metric, "l1tex__")) return Limiter::kL1texThroughput;
  return Limiter::kNearHardwareLimit;
}

RuleVerdict eval_expected(RuleContext& ctx) {
  const RoutedRegime r = routed(ctx);
  if (r == RoutedRegime::kUnknown || r == RoutedRegime::kLatency) {
    return RuleVerdict::not_evaluated("no throughput limiter was chosen in Decisions 4/5 (regime " +
                                      std::string(r == RoutedRegime::kLatency ? "latency" : "unknown") + ")");
  }
  const double sm = ctx.required(kSmThroughput);
  const double mem = ctx.required(kMemThroughput);
  const double busy = ctx.threshold("busy_pct");
  std::string problems;
  std::string reading;
  if (r == RoutedRegime::kMemory || r == RoutedRegime::kSaturated) {
    std::optional<Unit> top = top_memory_unit(ctx);
    const double v = top ? top->value : mem;
    const std::string n = top ? top->name : std::string(kMemThroughput);
    reading += "memory: top tier " + n + " = " + pct(v);
    if (v < busy) problems += "memory was expected to limit, but its busiest tier is at " + pct(v);
    if (r == RoutedRegime::kMemory && mem < sm) {
      if (!problems.empty()) problems += "; ";
      problems += "memory throughput (" + pct(mem) + ") is below SM throughput (" + pct(sm) + ")";
    }
  }
  if (r == RoutedRegime::kCompute || r == RoutedRegime::kSaturated) {
    std::optional<Unit> top = top_compute_unit(ctx, true);
    if (!reading.empty()) reading += "; ";
    if (!top) {
      if (r == RoutedRegime::kCompute) {
        return RuleVerdict::not_evaluated("no pipe utilization metric (sm__pipe_* / "
                                          "sm__inst_executed_pipe_*) to confirm the compute limiter");
      }
      reading += "compute: no pipe metrics";
    } else {
      reading += "compute: busiest pipe " + top->name + " = " + pct(top->value);
      if (top->value < busy) {
        if (!problems.empty()) problems += "; ";
        problems += "compute was expected to limit, but no pipe exceeds " + pct(top->value);
      }
    }
  }
  if (!problems.empty()) {
    RuleVerdict v = RuleVerdict::fired(problems + " (expected >= " + pct(busy, 0) + ")", 0.5);
    v.detail = reading;
    return v;
  }
  return RuleVerdict::not_fired(reading + ": the expected resource is the busy one");
}

RuleVerdict eval_near_peak(RuleContext& ctx) {
  const RoutedRegime r = routed(ctx);
  std::optional<Unit> best;
  auto consider = [&best](const std::optional<Unit>& u) {
    if (u && (!best || u->value > best->value)) best = u;
  };
  if (r != RoutedRegime::kCompute) consider(top_memory_unit(ctx));
  if (r != RoutedRegime::kMemory) consider(top_compute_unit(ctx, true));
  if (!best) {
    return RuleVerdict::not_evaluated("no unit throughput (dram/lts/l1tex throughput, sm__pipe_*, "
                                      "sm__inst_issued) was collected");
  }
  const double limit = ctx.threshold("near_peak_pct");
  std::string reading = "limiting unit " + best->name + " at " + pct(best->value) + " of peak";
  if (best->value >= limit) {
    RuleVerdict v = RuleVerdict::fired(reading + " (>= " + pct(limit, 0) +
                                           "): close to the hardware limit for this algorithm",
                                       best->value / limit - 1.0);
    v.detail = best->name;
    const Limiter l = limiter_for_unit(best->name);
    if (l != Limiter::kNearHardwareLimit) v.limiter = l;
    v.estimated_speedup = 100.0 / best->value > 1.0 ? 100.0 / best->value : 1.0;
    v.estimate_basis = "the limiting unit can rise at most to 100% of its peak";
    return std::move(v).decided_by(best->name, "near_peak_pct");
  }
  return RuleVerdict::not_fired(reading + " (< " + pct(limit, 0) + "): headroom remains")
      .decided_by(best->name, "near_peak_pct");
}

// `dominant`: the SM level also reads its dominant_ratio threshold, past which the finding says
// that the imbalance, not the average SM, sets the kernel's time (the engine then makes it the
// verdict, see Router::promote_dominant in engine.cpp).
RuleVerdict eval_imbalance(RuleContext& ctx, std::string_view max_name, std::string_view avg_name,
                           std::string_view level, bool dominant = false) {
  const double mx = ctx.required(max_name);
  const double avg = ctx.required(avg_name);
  if (!(avg > 0)) return RuleVerdict::not_evaluated(std::string(avg_name) + " is zero");
  const double ratio = mx / avg;
  ctx.note("cutriage__" + std::string(level) + "_cycles_active_max_over_avg.ratio", ratio);
  const double limit = ctx.threshold("max_ratio");
  std::string reading = "busiest " + std::string(level) + " active " + times(ratio) + " the average";
  if (ratio > limit) {
    reading += " (> " + times(limit, 1) + ")";
    if (dominant) {
      const double dominant_ratio = ctx.threshold("dominant_ratio");
      if (ratio >= dominant_ratio) {
        reading += ": the kernel lasts as long as its busiest " + std::string(level) +
                   ", the average one is idle " + pct(100.0 * (1.0 - 1.0 / ratio), 0) + " of that time";
      }
    }
    RuleVerdict v = RuleVerdict::fired(reading, ratio / limit - 1.0);
    v.estimated_speedup = ratio;
    v.estimate_basis = "perfect balance would end the kernel when the average " + std::string(level) +
                       " finishes: max / avg active cycles";
    return std::move(v).decided_by("cutriage__" + std::string(level) + "_cycles_active_max_over_avg.ratio",
                                   "max_ratio");
  }
  return RuleVerdict::not_fired(reading);
}

}  // namespace

std::vector<Rule> make_d7_rules() {
  std::vector<Rule> rules;
  rules.push_back(Rule{
      .id = "d7.expected_resource",
      .decision = Decision::kD7HardwareLimit,
      .title = "The busy resource is the one the routing expected",
      .parent = {},
      .metrics = {{kSmThroughput, true},
                  {kMemThroughput, true},
                  {kRoutedRegimeMetric, false},
                  {kMemoryUnits[0], false},
                  {kMemoryUnits[2], false},
                  {kMemoryUnits[3], false},
                  {kIssued, false},
                  {"dram__bytes.sum.per_second", false}},
      .thresholds = {{"busy_pct", 60.0, "guide 3.2.6: above ~60% is high pressure on a unit"}},
      .finding = "The resource chosen as the limiter is not the one near its peak.",
      .next_action = "Re-check the routing: expand the throughput breakdown and look for the unit "
                     "that really is busy, or for inefficiency on both sides.",
      .priority = 40,
      .evaluate = eval_expected,
  });
  rules.push_back(Rule{
      .id = "d7.limiter_near_peak",
      .decision = Decision::kD7HardwareLimit,
      .title = "The limiting unit runs within reach of its peak",
      .parent = {},
      .metrics = {{kRoutedRegimeMetric, false},
                  {kMemoryUnits[0], false},
                  {kMemoryUnits[1], false},
                  {kMemoryUnits[2], false},
                  {kMemoryUnits[3], false},
                  {kIssued, false},
                  {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", false},
                  {"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", false},
                  {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active", false},
                  {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", false},
                  {"sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", false},
                  {"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", false}},
      .thresholds = {{"near_peak_pct", 80.0, "guide 3.2.9: within ~80% of peak"}},
      .limiter = Limiter::kNearHardwareLimit,
      .finding = "The limiting unit is close to its peak: little is left to gain in this "
                 "implementation.",
      .next_action = "Stop micro-tuning; change the algorithm (less work or traffic, a different "
                     "decomposition, a tuned library) to go further.",
      .priority = 20,
      .evaluate = eval_near_peak,
  });
  rules.push_back(Rule{
      .id = "d7.sm_load_imbalance",
      .decision = Decision::kD7HardwareLimit,
      .title = "Work is balanced across SMs",
      .parent = {},
      .metrics = {{"sm__cycles_active.max", true}, {"sm__cycles_active.avg", true}},
      .thresholds = {{"max_ratio", 1.2, "guide 3.2.9: max/avg above ~1.2 is SM-level imbalance"},
                     {"dominant_ratio", 2.0,
                      "cutriage: at max/avg >= 2 the average SM idles half the kernel, so the "
                      "imbalance outranks the routed regime's findings; a partial last wave of "
                      "equal blocks alone stays below it (ceil(W)/W < 2 for W > 1 waves)"}},
      .limiter = Limiter::kLoadImbalance,
      .finding = "Some SMs stay busy much longer than the average SM.",
      .next_action = "Even out the work per block (split heavy blocks into more, smaller ones) or "
                     "add blocks so the slow ones overlap with others.",
      .priority = 30,
      .evaluate = [](RuleContext& ctx) {
        return eval_imbalance(ctx, "sm__cycles_active.max", "sm__cycles_active.avg", "sm", true);
      },
  });
  rules.push_back(Rule{
      .id = "d7.smsp_load_imbalance",
      .decision = Decision::kD7HardwareLimit,
      .title = "Work is balanced across SM sub-partitions",
      .parent = {},
      .metrics = {{"smsp__cycles_active.max", true}, {"smsp__cycles_active.avg", true}},
      .thresholds = {{"max_ratio", 1.2,
                      "cutriage: the guide flags smsp max/avg without a number; uses the SM "
                      "level's ~1.2"}},
      .limiter = Limiter::kLoadImbalance,
      .finding = "Some schedulers stay busy much longer than the average: warp-level imbalance.",
      .next_action = "Balance work across warps (avoid early-exiting warps and warp counts that "
                     "do not divide by 4 per block).",
      .priority = 35,
      .evaluate = [](RuleContext& ctx) {
        return eval_imbalance(ctx, "smsp__cycles_active.max", "smsp__cycles_active.avg", "smsp");
      },
  });
  return rules;
}

}  // namespace cutriage::triage::detail
