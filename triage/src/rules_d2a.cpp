// Decision 2A: is this an orchestration/dispatch bottleneck? (guide 3.2.4, 3.3.5)
//
// These checks read PM-sampling / timeline quantities that no collector produces yet. The names are
// cutriage's own, to be filled by a future PM-sampling or timeline collector (all in percent):
//   cutriage__dispatch_gap_pct          share of the kernel's active time between dispatch start
//                                       and the block-launch ramp reaching full occupancy
//   cutriage__gpu_idle_pct              share of the profiled range in which the SMs were idle or
//                                       waiting (queue wait, semaphore wait)
//   cutriage__copy_compute_overlap_pct  share of copy-engine busy time that overlapped compute
//   cutriage__copy_time_pct             share of the profiled range the copy engines were busy
// Until then each rule reports "not evaluated" with the missing name.
#include <string>

#include "metric_names.h"
#include "registry.h"
#include "rule_helpers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kOverlapPct = "cutriage__copy_compute_overlap_pct";
constexpr std::string_view kCopyTimePct = "cutriage__copy_time_pct";

RuleVerdict eval_gap(RuleContext& ctx) {
  const double gap = ctx.required(kDispatchGapPct);
  const double limit = ctx.threshold("max_gap_pct");
  std::string reading = "dispatch-to-launch ramp takes " + pct(gap) + " of the kernel's active time";
  if (gap > limit) return RuleVerdict::fired(reading + " (> " + pct(limit, 0) + ")", gap / limit - 1.0);
  return RuleVerdict::not_fired(reading);
}

RuleVerdict eval_idle(RuleContext& ctx) {
  const double idle = ctx.required(kGpuIdlePct);
  const double limit = ctx.threshold("max_idle_pct");
  std::string reading = "SMs idle or waiting for " + pct(idle) + " of the profiled range";
  if (idle > limit) return RuleVerdict::fired(reading + " (> " + pct(limit, 0) + ")", idle / limit - 1.0);
  return RuleVerdict::not_fired(reading);
}

RuleVerdict eval_serialized(RuleContext& ctx) {
  const double overlap = ctx.required(kOverlapPct);
  const double min_overlap = ctx.threshold("min_overlap_pct");
  const double min_copy = ctx.threshold("min_copy_time_pct");
  std::optional<double> copy = ctx.metric(kCopyTimePct);
  std::string reading = pct(overlap) + " of copy time overlaps compute";
  if (copy) reading += "; copies take " + pct(*copy) + " of the range";
  if (copy && *copy < min_copy) return RuleVerdict::not_fired(reading + ": too little copying to matter");
  if (overlap < min_overlap) {
    return RuleVerdict::fired(reading + ": copies and kernels run one after the other",
                              (min_overlap - overlap) / min_overlap);
  }
  return RuleVerdict::not_fired(reading);
}

}  // namespace

std::vector<Rule> make_d2a_rules() {
  std::vector<Rule> rules;
  rules.push_back(Rule{
      .id = "d2a.dispatch_gap",
      .decision = Decision::kD2ADispatch,
      .title = "Blocks launch promptly after dispatch",
      .parent = {},
      .metrics = {{kDispatchGapPct, true}},
      .thresholds = {{"max_gap_pct", 10.0,
                      "cutriage: 'a significant fraction' of active time read as more than 10%"}},
      .limiter = Limiter::kDispatchGaps,
      .finding = "Block launch ramps up slowly after dispatch.",
      .next_action = "Batch submissions and cut launch overhead (CUDA graphs, fewer tiny "
                     "launches), then profile again and return to Decision 2.",
      .priority = 10,
      .evaluate = eval_gap,
  });
  rules.push_back(Rule{
      .id = "d2a.gpu_idle",
      .decision = Decision::kD2ADispatch,
      .title = "The GPU is not left idle or waiting",
      .parent = {},
      .metrics = {{kGpuIdlePct, true}},
      .thresholds = {{"max_idle_pct", 10.0, "guide 3.2.4: idle or wait above ~10% of the range"}},
      .limiter = Limiter::kDispatchGaps,
      .finding = "The GPU spends a visible share of the range idle or waiting.",
      .next_action = "Narrow synchronization scope and check host-side submission latency and "
                     "dependency ordering before tuning kernels.",
      .priority = 20,
      .evaluate = eval_idle,
  });
  rules.push_back(Rule{
      .id = "d2a.serialized_copy_compute",
      .decision = Decision::kD2ADispatch,
      .title = "Copies overlap compute",
      .parent = {},
      .metrics = {{kOverlapPct, true}, {kCopyTimePct, false}},
      .thresholds = {{"min_overlap_pct", 10.0, "cutriage: 'fully serialized' read as under 10% overlap"},
                     {"min_copy_time_pct", 5.0, "copies shorter than this share of the range are ignored"}},
      .limiter = Limiter::kSerializedCopyCompute,
      .finding = "Copies and compute are serialized instead of overlapping.",
      .next_action = "Use pinned host memory, async copies on separate streams and chunked "
                     "pipelines so copies overlap kernels.",
      .priority = 30,
      .evaluate = eval_serialized,
  });
  return rules;
}

}  // namespace cutriage::triage::detail
