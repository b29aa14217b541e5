// The router: runs one kernel through Decisions 0-7 and 2A and assembles the diagnosis.
//
// Route (guide 3.2):  0 -> 1 -> 2 -> {2A} -> {3, 4, 5} -> 6 -> 7
//   D0  always. A firing blocking rule makes the kernel untrusted and stops routing.
//   D1  always.
//   D2  always. d2.compute_memory_balance classifies (engine_regime.h):
//         both_low -> D3; compute_dominant -> D4; memory_dominant -> D5; both_high -> D4 (+ D7,
//         classification saturated); ambiguous -> the occupancy x utilization quadrant:
//         low occ + low util -> D1 (already run) + D3; high occ + low util -> D3;
//         low or high occ + high util -> D4, or D5 when memory is the busier side (3.8.1: "optimize
//         the hot pipeline or memory tier first"); high + high also confirms in D7 (always run).
//       d2.issue_starvation firing adds D3 when the route does not already include it.
//   D2A when a timeline quantity (cutriage__dispatch_gap_pct, cutriage__gpu_idle_pct,
//       cutriage__copy_compute_overlap_pct) is present or d2.dispatch_gaps fired.
//   D3/D4/D5 as routed, in decision order. When the rule "d5.no_tier_near_peak" (looked up by id)
//       fires, D3 is entered after D5 and the kernel is treated as latency-bound.
//   D6  always (its checks mostly need PC samples). D7 always, last.
//
// Classification precedence (first that applies):
//   untrusted (D0 blocking) > inconclusive (D2's comparison, or the quadrant it needed, could not be
//   evaluated) > dispatch_bound (a D2A check fired) > undersized (d1.waves_below_one fired and
//   neither SM nor memory throughput reaches D2's "high" threshold) > the routed regime:
//   saturated (both_high), compute_bound (D4), memory_bound (D5), latency_bound (D3).
//
// Primary finding: the fired check with the lowest Rule::priority, then the highest severity,
// among the decisions that classified the kernel (latency: D3, plus D1 for the low/low quadrant;
// compute: D4; memory: D5; saturated: D7 and D4; undersized: D1; dispatch: D2A); when none of
// those fired, D1, then D7, then the other visited decisions 3-5, D6, then D2 (whose classifier
// checks then give the headline; the quadrant only when it decided the route). For the routed
// regimes, a fired check past its rule's "dominant_ratio" (a severe SM imbalance, a mostly empty
// last wave) then takes the verdict over that choice (Router::promote_dominant).
#include "cutriage/triage/engine.h"

#include <algorithm>
#include <array>
#include <exception>
#include <string>
#include <vector>

#include "cutriage/triage/library.h"
#include "engine_limits.h"
#include "engine_regime.h"
#include "rule_helpers.h"

namespace cutriage::triage {

namespace {

using detail::Quadrant;
using detail::Regime;
using detail::RoutedRegime;

constexpr std::string_view kNoTierRule = "d5.no_tier_near_peak";
constexpr std::string_view kWgmmaRule = "d4.wgmma_count_note";
constexpr std::array<std::string_view, 3> kTimelineMetrics{
    "cutriage__dispatch_gap_pct", "cutriage__gpu_idle_pct", "cutriage__copy_compute_overlap_pct"};

const CheckResult* find_check(const DecisionVisit& v, std::string_view id) {
  for (const CheckResult& c : v.checks) {
    if (c.rule_id == id) return &c;
  }
  return nullptr;
}

bool fired(const CheckResult* c) { return c != nullptr && c->outcome == Outcome::kFired; }

std::optional<double> threshold_used(const CheckResult* c, std::string_view key) {
  if (c == nullptr) return std::nullopt;
  for (const ThresholdUse& t : c->thresholds) {
    if (t.name == key) return t.value;
  }
  return std::nullopt;
}

std::string_view decision_label(Decision d) {
  switch (d) {
    case Decision::kD3IssueStalls: return "Decision 3";
    case Decision::kD4ComputePipe: return "Decision 4";
    case Decision::kD5MemoryMechanism: return "Decision 5";
    default: break;
  }
  return to_string(d);
}

class Router {
 public:
  Router(const KernelInput& kernel, const TriageOptions& options)
      : kernel_(kernel), options_(options), metrics_(kernel.metrics) {}

  Diagnosis run();

 private:
  size_t visit(Decision d, std::string because) {
    DecisionVisit v;
    v.decision = d;
    v.entered_because = std::move(because);
    for (const Rule* r : rules_for(d)) {
      v.checks.push_back(run_rule(*r, kernel_, metrics_, launch_, options_.thresholds));
    }
    dx_.path.push_back(std::move(v));
    return dx_.path.size() - 1;
  }
  const DecisionVisit& at(size_t i) const { return dx_.path[i]; }
  const CheckResult* check(std::string_view id) const { return dx_.check(id); }

  void assess_trust(size_t d0);
  void choose_primary(const std::vector<Decision>& classifying, std::string_view skip_id = {});
  void wgmma_note();
  void promote_dominant();

  const KernelInput& kernel_;
  const TriageOptions& options_;
  MetricSet metrics_;
  std::optional<LaunchStats> launch_;
  Diagnosis dx_;
};

void Router::assess_trust(size_t d0) {
  bool blocked = false;
  bool caveat = false;
  for (const CheckResult& c : at(d0).checks) {
    const Rule* rule = find_rule(c.rule_id);
    const bool blocking = rule != nullptr && rule->blocking;
    if (rule != nullptr && rule->scope == TrustScope::kSourceMapping) {
      // Said beside the verdict, never a caveat on the counters (rule.h, TrustScope).
      if (c.outcome == Outcome::kFired) dx_.source_notes.push_back(c.rule_id + ": " + c.reason);
      if (c.outcome == Outcome::kNotEvaluated) dx_.source_notes.push_back(c.rule_id + " not evaluated: " + c.reason);
      continue;
    }
    if (c.outcome == Outcome::kFired) {
      if (blocking) {
        blocked = true;
      } else {
        caveat = true;
        dx_.trust_notes.push_back(c.rule_id + ": " + c.reason);
      }
    } else if (c.outcome == Outcome::kNotEvaluated) {
      caveat = true;
      dx_.trust_notes.push_back(c.rule_id + " not evaluated: " + c.reason);
    }
  }
  dx_.trust = blocked ? Trust::kUntrusted : caveat ? Trust::kSuspect : Trust::kTrusted;
}

void Router::choose_primary(const std::vector<Decision>& classifying, std::string_view skip_id) {
  std::vector<std::vector<Decision>> tiers;
  if (!classifying.empty()) tiers.push_back(classifying);
  tiers.push_back({Decision::kD1WorkloadSize});
  tiers.push_back({Decision::kD7HardwareLimit});
  tiers.push_back({Decision::kD3IssueStalls, Decision::kD4ComputePipe, Decision::kD5MemoryMechanism});
  tiers.push_back({Decision::kD6SourceLines});
  tiers.push_back({Decision::kD2Regime});
  for (const auto& tier : tiers) {
    const CheckResult* best = nullptr;
    int best_priority = 0;
    for (const DecisionVisit& v : dx_.path) {
      if (std::find(tier.begin(), tier.end(), v.decision) == tier.end()) continue;
      for (const CheckResult& c : v.checks) {
        if (c.outcome != Outcome::kFired || !c.finding || c.rule_id == skip_id) continue;
        const Rule* rule = find_rule(c.rule_id);
        if (rule != nullptr && rule->note) continue;
        const int priority = rule != nullptr ? rule->priority : 50;
        if (best == nullptr || priority < best_priority ||
            (priority == best_priority && c.finding->severity > best->finding->severity)) {
          best = &c;
          best_priority = priority;
        }
      }
    }
    if (best != nullptr) {
      dx_.primary_limiter = best->finding->limiter;
      dx_.primary_rule = best->rule_id;
      dx_.headline = std::string(to_string(dx_.classification)) + ": " + best->finding->summary;
      dx_.next_action = best->finding->next_action;
      dx_.estimated_speedup = best->finding->estimated_speedup;
      return;
    }
  }
  dx_.headline = std::string(to_string(dx_.classification)) + ": no check fired";
}

// Issue 23: a severe imbalance or tail outranks the routed regime's own findings. A fired check
// whose rule declares a "dominant_ratio" threshold becomes the verdict once its estimated gain
// reaches it (d7.sm_load_imbalance: busiest/average SM active cycles; d1.tail_wave: ceil(waves) /
// waves); the largest gain wins when several do. Past that point the SMs sit idle for a large share
// of the kernel (1 - 1/ratio on average), the throughputs Decisions 2-5 read are averages diluted
// by that idle time, and no per-SM fix can beat the time the busiest SM (or the last wave) takes.
// The classification stays the routed one: the guide's regimes are Decisions 2-5's reading of the
// throughputs, while Decision 7's balance check ("limits scaling even when the average case is
// fully optimized") and Decision 1's waves qualify a regime rather than name a new one; the
// primary limiter (load_imbalance, tail_wave) and the headline say what the verdict is.
// Not under one wave (d1.waves_below_one fired): there the idle SMs are the grid's size, which
// Decision 1 names (the guide, 3.8.5: separate algorithmic imbalance from tiny-grid effects). Not
// on a graph's counters either: their imbalance spans every kernel of the graph, not this one's
// blocks.
void Router::promote_dominant() {
  if (fired(check("d1.waves_below_one")) || kernel_.graph_scope) return;
  const CheckResult* best = nullptr;
  for (const DecisionVisit& v : dx_.path) {
    for (const CheckResult& c : v.checks) {
      if (c.outcome != Outcome::kFired || !c.finding || !c.finding->estimated_speedup) continue;
      const std::optional<double> dominant = threshold_used(&c, c.rule_id + ".dominant_ratio");
      if (!dominant || *c.finding->estimated_speedup < *dominant) continue;
      if (best == nullptr || *c.finding->estimated_speedup > *best->finding->estimated_speedup) best = &c;
    }
  }
  if (best == nullptr || best->rule_id == dx_.primary_rule) return;
  dx_.primary_limiter = best->finding->limiter;
  dx_.primary_rule = best->rule_id;
  dx_.headline = std::string(to_string(dx_.classification)) + ": " + best->finding->summary;
  dx_.next_action = best->finding->next_action;
  dx_.estimated_speedup = best->finding->estimated_speedup;
}

void Router::wgmma_note() {
  if (find_rule(kWgmmaRule) != nullptr) return;  // Decision 4 owns the note as a check
  std::optional<DeviceLimits> dev = detail::device_limits_of(kernel_);
  if (!dev || dev->cc_major != 9) return;
  for (const auto& [name, v] : metrics_.all()) {
    if (detail::starts_with(name, "sm__inst_executed_pipe_tensor") ||
        detail::starts_with(name, "sm__pipe_tensor")) {
      dx_.trust_notes.push_back(
          "Hopper warp-group MMA (WGMMA) instructions count as 4 warp instructions, one per "
          "scheduler: divide tensor instruction counts by 4 for logical MMA operations");
      return;
    }
  }
}

Diagnosis Router::run() {
  LaunchStatsResult lr = add_launch_metrics(kernel_, metrics_);
  launch_ = lr.stats;
  add_derived_metrics(metrics_);
  const std::string node_note = add_node_sampling_stand_ins(kernel_, metrics_);
  std::vector<std::string> reconciled = reconcile_breakdowns(metrics_);
  if (kernel_.time_share && *kernel_.time_share >= 0 && *kernel_.time_share < 1) {
    dx_.amdahl_ceiling = 1.0 / (1.0 - *kernel_.time_share);
  }

  // Decision 0.
  const size_t d0 = visit(Decision::kD0Trust, "always first: metrics must be trustworthy before routing");
  assess_trust(d0);
  // Throughputs assembled from their breakdowns: said next to Decision 0's notes, since the
  // verdict rests on them like on any counter.
  for (std::string& note : breakdown_notes(metrics_)) {
    // A raised throughput is marked derived too; its own line says why.
    if (std::none_of(reconciled.begin(), reconciled.end(), [&note](const std::string& r) {
          return r.compare(0, r.find(' '), note, 0, note.find(' ')) == 0;
        })) {
      dx_.trust_notes.push_back(std::move(note));
    }
  }
  for (std::string& note : reconciled) dx_.trust_notes.push_back(std::move(note));
  if (!node_note.empty()) dx_.trust_notes.push_back(node_note);
  if (dx_.trust == Trust::kUntrusted) {
    dx_.classification = Classification::kUntrusted;
    choose_primary({Decision::kD0Trust});
    dx_.primary_limiter = Limiter::kUntrustedMetrics;
    return std::move(dx_);
  }
  if (!launch_ && kernel_.launch && !metrics_.has("launch__waves_per_multiprocessor")) {
    dx_.trust_notes.push_back("launch arithmetic unavailable: " + lr.missing);
  }

  // Decision 1.
  std::string d1_because = "always after Decision 0: does the launch fill the GPU?";
  if (auto w = metrics_.get("launch__waves_per_multiprocessor")) {
    d1_because += " (" + detail::fmt(*w, 2) + " waves per SM)";
  }
  visit(Decision::kD1WorkloadSize, d1_because);

  // Decision 2.
  visit(Decision::kD2Regime, "always after Decision 1: latency- or throughput-limited?");
  const CheckResult* balance = check("d2.compute_memory_balance");
  const CheckResult* quadrant_check = check("d2.occupancy_utilization_quadrant");
  const Regime regime = fired(balance) ? detail::parse_regime(balance->finding->detail) : Regime::kUnknown;
  const Quadrant quadrant =
      fired(quadrant_check) ? detail::parse_quadrant(quadrant_check->finding->detail) : Quadrant::kUnknown;
  const std::optional<double> sm = metrics_.get(detail::kSmThroughput);
  const std::optional<double> mem = metrics_.get(detail::kMemThroughput);
  const bool memory_hotter = sm && mem && *mem > *sm;

  std::vector<std::pair<Decision, std::string>> route;
  auto add_route = [&route](Decision d, std::string because) {
    for (const auto& r : route) {
      if (r.first == d) return;
    }
    route.emplace_back(d, std::move(because));
  };
  RoutedRegime routed = RoutedRegime::kUnknown;
  std::vector<Decision> classifying;
  std::string missing;
  const std::string balance_reading = balance != nullptr ? balance->rule_id + ": " + balance->reason : "";
  switch (regime) {
    case Regime::kBothLow:
      add_route(Decision::kD3IssueStalls, balance_reading);
      routed = RoutedRegime::kLatency;
      break;
    case Regime::kComputeDominant:
      add_route(Decision::kD4ComputePipe, balance_reading);
      routed = RoutedRegime::kCompute;
      break;
    case Regime::kMemoryDominant:
      add_route(Decision::kD5MemoryMechanism, balance_reading);
      routed = RoutedRegime::kMemory;
      break;
    case Regime::kBothHigh:
      add_route(Decision::kD4ComputePipe, balance_reading + "; find the pipe, then confirm the limit in Decision 7");
      routed = RoutedRegime::kSaturated;
      break;
    case Regime::kAmbiguous: {
      const std::string q = quadrant_check != nullptr ? quadrant_check->rule_id + ": " + quadrant_check->reason : "";
      const std::string because = balance_reading + "; " + q;
      switch (quadrant) {
        case Quadrant::kLowOccLowUtil:
          add_route(Decision::kD3IssueStalls, because + " (Decision 1 was checked above)");
          routed = RoutedRegime::kLatency;
          classifying.push_back(Decision::kD1WorkloadSize);
          break;
        case Quadrant::kHighOccLowUtil:
        case Quadrant::kUnknownOccLowUtil:
          add_route(Decision::kD3IssueStalls, because);
          routed = RoutedRegime::kLatency;
          break;
        case Quadrant::kLowOccHighUtil:
        case Quadrant::kHighOccHighUtil:
        case Quadrant::kUnknownOccHighUtil:
          if (memory_hotter) {
            add_route(Decision::kD5MemoryMechanism, because + "; memory is the busier side");
            routed = RoutedRegime::kMemory;
          } else {
            add_route(Decision::kD4ComputePipe, because);
            routed = RoutedRegime::kCompute;
          }
          break;
        case Quadrant::kUnknown:
          missing = "the SM/memory comparison is ambiguous and the occupancy x utilization "
                    "quadrant could not be evaluated (" +
                    (quadrant_check != nullptr ? quadrant_check->reason : std::string("no rule")) + ")";
          break;
      }
      break;
    }
    case Regime::kUnknown:
      missing = "cannot route: " + (balance != nullptr ? balance->reason : std::string("no D2 comparison rule"));
      break;
  }
  const CheckResult* starvation = check("d2.issue_starvation");
  if (fired(starvation)) add_route(Decision::kD3IssueStalls, starvation->rule_id + ": " + starvation->reason);

  // Decision 2A.
  bool timeline = false;
  for (std::string_view n : kTimelineMetrics) timeline = timeline || metrics_.has(n);
  const CheckResult* gaps = check("d2.dispatch_gaps");
  bool dispatch_bound = false;
  if (timeline || fired(gaps)) {
    const size_t d2a = visit(Decision::kD2ADispatch,
                             fired(gaps) ? gaps->rule_id + ": " + gaps->reason
                                         : std::string("timeline quantities are present: check orchestration"));
    for (const CheckResult& c : at(d2a).checks) dispatch_bound = dispatch_bound || c.outcome == Outcome::kFired;
  }

  // Decisions 3, 4, 5 in decision order, with the D5 -> D3 re-entry.
  std::sort(route.begin(), route.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  bool reentered = false;
  for (const auto& [d, because] : route) {
    const size_t i = visit(d, because);
    if (d == Decision::kD5MemoryMechanism && find_rule(kNoTierRule) != nullptr) {
      const CheckResult* no_tier = find_check(at(i), kNoTierRule);
      if (fired(no_tier)) {
        reentered = true;
        routed = RoutedRegime::kLatency;
        const std::string why = std::string(kNoTierRule) + " fired: " + no_tier->reason +
                                "; re-entering as latency-bound";
        if (!dx_.visited(Decision::kD3IssueStalls)) {
          visit(Decision::kD3IssueStalls, why);
        } else {
          dx_.path[i].entered_because += " (then " + why + ")";
        }
      }
    }
  }
  // A latency-bound kernel whose warps mostly wait on memory also gets Decision 5's access-pattern
  // checks: the guide sends long_scoreboard stalls to the producing load (3.8.2) and names L2
  // atomic serialization "with moderate L2 throughput and high latency stalls" (Decision 5, 3.7.1).
  // The classification stays latency-bound; D5's findings compete for the verdict by priority.
  if (routed == RoutedRegime::kLatency && !dx_.visited(Decision::kD5MemoryMechanism)) {
    const CheckResult* stall = check("d3.dominant_stall");
    if (fired(stall)) {
      const std::string& reason = stall->finding->detail;
      if (reason == "long_scoreboard" || reason == "lg_throttle" || reason == "membar" ||
          reason == "drain") {
        visit(Decision::kD5MemoryMechanism,
              "warps wait on memory (" + reason + " dominates the stalls): which access pattern?");
      }
    }
  }
  if (dx_.visited(Decision::kD4ComputePipe)) wgmma_note();

  // Decision 6.
  std::string d6_because = "source localization";
  for (const auto& r : route) d6_because += std::string(r.first == route.front().first ? " after " : ", ") +
                                            std::string(decision_label(r.first));
  if (route.empty()) d6_because = "routing incomplete; source-line checks run on what was collected";
  visit(Decision::kD6SourceLines, d6_because);

  // Decision 7.
  if (routed != RoutedRegime::kUnknown) {
    metrics_.set(std::string(detail::kRoutedRegimeMetric), static_cast<double>(routed), "",
                 MetricSource::kDerived);
  }
  const size_t d7 = visit(Decision::kD7HardwareLimit,
                          regime == Regime::kBothHigh
                              ? balance_reading + ": confirm the hardware limit"
                              : std::string("always last: is the limiter close to its peak, and is "
                                            "the work balanced?"));
  dx_.at_hardware_limit = fired(find_check(at(d7), "d7.limiter_near_peak"));

  // Classification.
  const CheckResult* waves = check("d1.waves_below_one");
  const double high = threshold_used(balance, "d2.compute_memory_balance.high_pct").value_or(80.0);
  const bool nothing_saturated = sm && mem && *sm < high && *mem < high;
  if (!missing.empty()) {
    dx_.classification = Classification::kInconclusive;
  } else if (dispatch_bound) {
    dx_.classification = Classification::kDispatchBound;
    classifying = {Decision::kD2ADispatch};
  } else if (fired(waves) && nothing_saturated) {
    dx_.classification = Classification::kUndersized;
    classifying = {Decision::kD1WorkloadSize};
  } else {
    switch (routed) {
      case RoutedRegime::kLatency:
        dx_.classification = Classification::kLatencyBound;
        classifying.insert(classifying.begin(), Decision::kD3IssueStalls);
        // D5 ran after D3 (re-entry, or the memory-wait follow-up): its access-pattern findings
        // can explain the latency better than the generic stall ones.
        if (reentered || dx_.visited(Decision::kD5MemoryMechanism)) {
          classifying.push_back(Decision::kD5MemoryMechanism);
        }
        break;
      case RoutedRegime::kCompute:
        dx_.classification = Classification::kComputeBound;
        classifying = {Decision::kD4ComputePipe};
        break;
      case RoutedRegime::kMemory:
        dx_.classification = Classification::kMemoryBound;
        classifying = {Decision::kD5MemoryMechanism};
        break;
      case RoutedRegime::kSaturated:
        dx_.classification = Classification::kSaturated;
        classifying = {Decision::kD7HardwareLimit, Decision::kD4ComputePipe};
        break;
      case RoutedRegime::kUnknown:
        dx_.classification = Classification::kInconclusive;
        missing = "no route was found";
        break;
    }
  }
  if (dx_.classification == Classification::kInconclusive) {
    choose_primary({});
    dx_.headline = "inconclusive: " + missing;
    // Name what routing lacks, not what was collected (a PM-sampled node has both throughputs).
    std::vector<std::string_view> lacking;
    for (std::string_view m : {detail::kSmThroughput, detail::kMemThroughput}) {
      if (!metrics_.get(m)) lacking.push_back(m);
    }
    if (lacking.empty()) {
      dx_.next_action = "Collect the counters of a full profile (cutriage run, or ncu --set full), then triage again.";
    } else {
      std::string names(lacking[0]);
      if (lacking.size() > 1) names += " and " + std::string(lacking[1]);
      dx_.next_action = "Collect " + names + ", then triage again.";
    }
    dx_.estimated_speedup.reset();
    return std::move(dx_);
  }
  // The quadrant speaks for the kernel only when it decided the route.
  choose_primary(classifying, regime == Regime::kAmbiguous ? std::string_view{}
                                                            : std::string_view{"d2.occupancy_utilization_quadrant"});
  if (dx_.classification != Classification::kDispatchBound && dx_.classification != Classification::kUndersized) {
    promote_dominant();
  }
  return std::move(dx_);
}

}  // namespace

Diagnosis triage_kernel(const KernelInput& kernel, const TriageOptions& options) {
  try {
    Router router(kernel, options);
    Diagnosis d = router.run();
    // Whose counters the verdict rests on, said before anything else in the headline (after its
    // classification), when they are not this kernel's own launch's.
    auto scoped = [&d](const std::string& scope) {
      const size_t colon = d.headline.find(": ");
      d.headline = colon == std::string::npos ? scope + ": " + d.headline
                                              : d.headline.substr(0, colon + 2) + scope + ": " + d.headline.substr(colon + 2);
    };
    auto samples = [](uint64_t n) { return std::to_string(n) + (n == 1 ? " sample" : " samples"); };
    if (d.trust == Trust::kUntrusted) {
      // No verdict to qualify.
    } else if (kernel.graph_scope && kernel.graph_scope->node_sampling) {
      // This kernel's own PM samples inside the graph.
      scoped("own PM samples in graph " + std::to_string(kernel.graph_scope->graph_id) + " (" +
             samples(kernel.graph_scope->node_sampling->samples) + ")");
    } else if (kernel.pm_window) {
      // Always-on's PM routing window: the kernel's own samples over its ordinary launches.
      scoped("own PM samples in a PM window (" + samples(kernel.pm_window->samples) + ")");
    } else if (kernel.graph_scope) {
      // A whole graph launch's counters: the verdict is the graph's, weighted by this kernel's part.
      scoped("graph " + std::to_string(kernel.graph_scope->graph_id) + " as a whole (this kernel " +
             detail::pct(100.0 * kernel.graph_scope->share_of_graph, 0) + " of it)");
    }
    // A library's kernel (cuBLAS, NCCL, PyTorch, ...): the verdict stands, the next action becomes
    // one its caller can take (library.h).
    apply_library_advice(kernel, d);
    return d;
  } catch (const std::exception& e) {
    Diagnosis d;
    d.classification = Classification::kInconclusive;
    d.trust = Trust::kUnspecified;
    d.headline = "inconclusive: internal error during triage";
    d.trust_notes.push_back(std::string("internal error: ") + e.what());
    return d;
  } catch (...) {
    Diagnosis d;
    d.classification = Classification::kInconclusive;
    d.headline = "inconclusive: internal error during triage";
    d.trust_notes.push_back("internal error (unknown exception)");
    return d;
  }
}

}  // namespace cutriage::triage
