// Decision 6: which source lines contribute most?
//
// Reads KernelInput::pc_samples (cutriage's own PC sampling, correlated to source) through
// pc_samples.h. Stall samples exclude `selected` and `not_selected`: those are issue states, not
// stalls. Every check says why it was not evaluated when sampling failed, and the share checks
// refuse kernels with fewer than min_stall_samples stall samples.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pc_samples.h"
#include "registry.h"
#include "rule_helpers.h"
#include "rule_numbers.h"

namespace cutriage::triage::detail {

namespace {

Rule hot_line() {
  return Rule{
      .id = "d6.hot_line",
      .decision = Decision::kD6SourceLines,
      .title = "One source line holds a large share of stall samples",
      .parent = {},
      .metrics = {},
      .thresholds = {{"line_share", 0.30,
                      "guide 3.2.8: a line with more than ~30% of stall samples is the primary "
                      "target"},
                     min_stall_samples_threshold()},
      .limiter = Limiter::kHotSourceLine,
      .finding = "A single source line accounts for a large share of the stalls.",
      .next_action =
          "Work on this line first and change one mechanism at a time (indexing, tiling, "
          "instruction mix, synchronization); re-profile after each change and return to "
          "Decision 2.",
      .priority = 20,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        SampleView view;
        if (auto why = read_stall_samples(ctx, view)) return RuleVerdict::not_evaluated(*why);
        const SampleLocation& top = view.locations.front();
        double share = static_cast<double>(top.stall_samples) / static_cast<double>(view.stall_samples);
        ctx.note("hot_line_stall_samples", static_cast<double>(top.stall_samples));
        ctx.note("stall_samples_total", static_cast<double>(view.stall_samples));
        ctx.note("hot_line_share", share);
        double limit = ctx.threshold("line_share");
        std::string reading = describe_location(top) + " holds " + std::to_string(top.stall_samples) +
                              " of " + std::to_string(view.stall_samples) + " stall samples (" +
                              share_pct(share) + ")";
        std::string others;
        for (size_t i = 1; i < view.locations.size() && i < 5; ++i) {
          const SampleLocation& l = view.locations[i];
          if (l.stall_samples == 0) break;
          others += (others.empty() ? "" : ", ") + l.key + " " +
                    share_pct(static_cast<double>(l.stall_samples) / static_cast<double>(view.stall_samples));
        }
        if (!others.empty()) reading += "; next: " + others;
        reading += line_info_note(view) + sampled_launch_note(ctx.kernel());
        if (!(share > limit)) return RuleVerdict::not_fired(reading + "; no line above " + share_pct(limit));
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(limit) + ")", above(share, limit));
        v.detail = top.key;
        return v;
      },
  };
}

Rule focused_stall_on_line() {
  return Rule{
      .id = "d6.focused_stall_on_line",
      .decision = Decision::kD6SourceLines,
      .title = "One stall reason dominates a hot line",
      .parent = {},
      .metrics = {},
      .thresholds = {{"reason_share", 0.50,
                      "guide 3.2.8: one reason above ~50% of a line's stall samples"},
                     {"min_line_share", 0.05,
                      "project: only lines with at least 5% of the kernel's stall samples are "
                      "considered, so a handful of samples cannot fire"},
                     min_stall_samples_threshold()},
      .limiter = Limiter::kFocusedStallOnLine,
      .finding = "A hot line stalls mostly for one reason: a focused root cause.",
      .next_action = "Act on the line's dominant stall reason (see detail).",
      .priority = 15,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        SampleView view;
        if (auto why = read_stall_samples(ctx, view)) return RuleVerdict::not_evaluated(*why);
        double reason_limit = ctx.threshold("reason_share");
        double min_line = ctx.threshold("min_line_share");
        std::string best_reading;
        for (const SampleLocation& loc : view.locations) {
          double line_share =
              static_cast<double>(loc.stall_samples) / static_cast<double>(view.stall_samples);
          if (line_share < min_line || loc.stall_samples == 0) break;  // sorted: rest are colder
          auto top = std::max_element(loc.stalls_by_reason.begin(), loc.stalls_by_reason.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
          double share = static_cast<double>(top->second) / static_cast<double>(loc.stall_samples);
          std::string reading = top->first + " holds " + share_pct(share) + " of the " +
                                std::to_string(loc.stall_samples) + " stall samples at " +
                                describe_location(loc) + " (" + share_pct(line_share) + " of the kernel's)";
          if (best_reading.empty()) best_reading = reading;
          if (share > reason_limit) {
            ctx.note("focused_line_reason_share", share);
            ctx.note("focused_line_share", line_share);
            RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(reason_limit) + ")" +
                                                   line_info_note(view),
                                               above(share, reason_limit));
            v.detail = top->first + " at " + loc.key;
            std::string action = "At " + loc.key + ": ";
            // Scoreboard waits: the samples sit on the consumer; point at the producer.
            std::string producer =
                consumer_producer_note(*ctx.kernel().pc_samples, site_at(loc, top->first), top->first);
            if (!producer.empty()) action += producer + " ";
            if (auto a = stall_next_action(top->first)) {
              action += std::string(*a);
            } else {
              action += "find what the '" + top->first + "' stall waits on at this line.";
            }
            v.next_action = std::move(action);
            return v;
          }
        }
        if (best_reading.empty()) {
          return RuleVerdict::not_fired("no line holds " + share_pct(min_line) + " of stall samples");
        }
        return RuleVerdict::not_fired(best_reading + "; no hot line has one reason above " +
                                      share_pct(reason_limit));
      },
  };
}

Rule sass_excess_transactions() {
  return Rule{
      .id = "d6.sass_excess_transactions",
      .decision = Decision::kD6SourceLines,
      .title = "Individual instructions move far more sectors or wavefronts than ideal",
      .parent = {},
      .metrics = {},
      .thresholds = {{"excess_ratio", 2.0,
                      "guide 3.2.8: actual sectors or wavefronts above ~2x the ideal per SASS "
                      "instruction"}},
      .limiter = Limiter::kHotSourceLine,
      .finding = "Specific memory instructions fetch far more than their data needs.",
      .next_action = "Fix the access pattern of the flagged instructions (coalescing, alignment, "
                     "bank mapping).",
      .priority = 16,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        if (auto why = samples_unusable(ctx.kernel())) return RuleVerdict::not_evaluated(*why);
        return RuleVerdict::not_evaluated(
            "needs per-instruction actual and ideal sector/wavefront counts (SASS source "
            "counters), which cutriage does not collect yet");
      },
  };
}

Rule absolute_tracking() {
  return Rule{
      .id = "d6.absolute_sample_tracking",
      .decision = Decision::kD6SourceLines,
      .title = "Hotspot tracked by absolute samples across iterations",
      .parent = {},
      .metrics = {},
      .thresholds = {},
      .limiter = Limiter::kHotSourceLine,
      .finding = "The hotspot's absolute stall samples changed differently from its share.",
      .next_action = "Track the hotspot by absolute stall samples, not by its percentage.",
      .priority = 90,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        if (auto why = samples_unusable(ctx.kernel())) return RuleVerdict::not_evaluated(*why);
        return RuleVerdict::not_evaluated(
            "needs a baseline profile of the same kernel to compare per-line sample counts with");
      },
  };
}

Rule hot_line_convergence() {
  return Rule{
      .id = "d6.hot_line_convergence",
      .decision = Decision::kD6SourceLines,
      .title = "The hot line is less converged than the kernel average",
      .parent = {},
      .metrics = {{"smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", false}},
      .thresholds = {},
      .limiter = Limiter::kWarpDivergence,
      .finding = "Warps executing the hot line have fewer active threads than the kernel "
                 "average.",
      .next_action = "Restructure the branches around the hot line so warps reach it converged.",
      .priority = 22,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        if (auto why = samples_unusable(ctx.kernel())) return RuleVerdict::not_evaluated(*why);
        return RuleVerdict::not_evaluated(
            "needs per-line predicated-on thread counts (SASS source counters); PC samples do "
            "not carry them");
      },
  };
}

bool is_kernel_function(const KernelInput& k, std::string_view fn) {
  if (fn.empty()) return false;
  if (fn == k.mangled_name || fn == k.function_name || fn == k.demangled_name) return true;
  const std::string& d = k.demangled_name;
  if (d.size() > fn.size() && d.compare(0, fn.size(), fn) == 0 &&
      (d[fn.size()] == '(' || d[fn.size()] == '<')) {
    return true;
  }
  return false;
}

Rule shared_helper() {
  return Rule{
      .id = "d6.shared_helper",
      .decision = Decision::kD6SourceLines,
      .title = "Stall samples gather in a helper function",
      .parent = {},
      .metrics = {},
      .thresholds = {{"function_share", 0.30,
                      "project: a function other than the kernel holding more than 30% of stall "
                      "samples (the guide's hot-line share)"},
                     min_stall_samples_threshold()},
      .limiter = Limiter::kHotSourceLine,
      .finding = "Most stalls sit in a helper called from the kernel, which hides the expensive "
                 "call site.",
      .next_action =
          "Attribute the helper's samples to its call sites (inlined-function view, or "
          "temporarily mark the helper noinline) and optimize the call site that dominates.",
      .priority = 25,
      .blocking = false,
      .evaluate = [](RuleContext& ctx) {
        SampleView view;
        if (auto why = read_stall_samples(ctx, view)) return RuleVerdict::not_evaluated(*why);
        const KernelInput& k = ctx.kernel();
        if (k.mangled_name.empty() && k.function_name.empty() && k.demangled_name.empty()) {
          return RuleVerdict::not_evaluated("kernel name unknown");
        }
        std::map<std::string, uint64_t> by_function;
        const uint64_t total = view.stall_samples;
        bool any_function = false;
        for (const SampleLocation& loc : view.locations) {
          for (const SampledPc& pc : loc.pcs) {
            if (!pc.line->function.empty()) any_function = true;
            by_function[pc.line->function] += pc.stall_samples;
          }
        }
        if (!any_function) return RuleVerdict::not_evaluated("PC samples carry no function names");
        std::string best;
        uint64_t best_count = 0;
        for (const auto& [fn, count] : by_function) {
          if (fn.empty() || is_kernel_function(k, fn)) continue;
          if (count > best_count) {
            best = fn;
            best_count = count;
          }
        }
        double limit = ctx.threshold("function_share");
        if (best.empty()) {
          return RuleVerdict::not_fired("all stall samples are in the kernel's own function");
        }
        double share = static_cast<double>(best_count) / static_cast<double>(total);
        ctx.note("helper_function_share", share);
        std::string reading = "function " + best + " holds " + std::to_string(best_count) + " of " +
                              std::to_string(total) + " stall samples (" + share_pct(share) + ")";
        if (!(share > limit)) return RuleVerdict::not_fired(reading + ", <= " + share_pct(limit));
        RuleVerdict v = RuleVerdict::fired(reading + " (> " + share_pct(limit) + ")", above(share, limit));
        v.detail = best;
        return v;
      },
  };
}

}  // namespace

std::vector<Rule> make_d6_rules() {
  std::vector<Rule> rules;
  rules.push_back(hot_line());
  rules.push_back(focused_stall_on_line());
  rules.push_back(sass_excess_transactions());
  rules.push_back(absolute_tracking());
  rules.push_back(hot_line_convergence());
  rules.push_back(shared_helper());
  return rules;
}

}  // namespace cutriage::triage::detail
