#include "cutriage/triage/plan.h"

#include <algorithm>
#include <set>

#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"
#include "rule_helpers.h"

namespace cutriage::triage {

namespace detail {
// derived.cpp: numerator and denominator of a derived ratio, empty when `metric` is not derived.
std::vector<std::string> derivation_inputs(std::string_view metric);
}  // namespace detail

namespace {

constexpr std::string_view kStallRatioPrefix = "smsp__average_warps_issue_stalled_";
constexpr std::string_view kStallRatioSuffix = "_per_issue_active.ratio";

bool backed_by_no_counter(std::string_view name) {
  return detail::starts_with(name, "launch__") || detail::starts_with(name, "device__") ||
         detail::starts_with(name, "cutriage__") ||
         name == "sm__maximum_warps_per_active_cycle_pct";
}

// Rules that only refine a routed verdict's detail: they neither block (Decision 0) nor classify,
// and without their optional metrics they say "not evaluated" and why. Their optional metrics are
// not part of what a verdict rests on (verdict_counters, verdict_routed): always-on collects them
// after the route. d2.sysmem_peer_traffic: the off-device traffic check (PCIe bytes, L2 aperture
// sectors, DRAM throughput; on GH100 the PCIe counters alone fill a single-pass group).
bool refines_only(const Rule& rule, const MetricNeed& need) {
  return !need.required && rule.id == "d2.sysmem_peer_traffic";
}

void add_rule_counters(Decision decision, std::set<std::string>& out, bool verdict_only = false) {
  for (const Rule* rule : rules_for(decision)) {
    for (const MetricNeed& need : rule->metrics) {
      if (verdict_only && refines_only(*rule, need)) continue;
      for (std::string& c : counter_inputs(need.name)) out.insert(std::move(c));
    }
  }
}

}  // namespace

std::vector<std::string> counter_inputs(std::string_view metric) {
  if (backed_by_no_counter(metric)) return {};
  if (detail::starts_with(metric, kStallRatioPrefix) && detail::ends_with(metric, kStallRatioSuffix) &&
      metric.size() > kStallRatioPrefix.size() + kStallRatioSuffix.size()) {
    std::string_view reason = metric.substr(
        kStallRatioPrefix.size(), metric.size() - kStallRatioPrefix.size() - kStallRatioSuffix.size());
    return {"smsp__warps_issue_stalled_" + std::string(reason) + ".sum", "smsp__issue_active.sum"};
  }
  std::vector<std::string> inputs = detail::derivation_inputs(metric);
  if (!inputs.empty()) return inputs;
  return {std::string(metric)};
}

std::vector<std::string> counters_for_decisions(const std::vector<Decision>& decisions) {
  std::set<std::string> out;
  for (Decision d : decisions) add_rule_counters(d, out);
  return {out.begin(), out.end()};
}

std::vector<std::string> verdict_counters_for(const std::vector<Decision>& decisions) {
  std::set<std::string> out;
  for (Decision d : decisions) add_rule_counters(d, out, /*verdict_only=*/true);
  return {out.begin(), out.end()};
}

const std::vector<Decision>& routing_decisions() {
  // Never destroyed: the injected agent triages from an atexit handler, which can run after the
  // destructors of statics first used after it was registered.
  static const auto& kRouting = *new std::vector<Decision>{
      Decision::kD0Trust, Decision::kD1WorkloadSize, Decision::kD2Regime};
  return kRouting;
}

namespace {

// The counters the rules of `decisions` read that `have` lacks (after derivations), less `exclude`.
std::vector<std::string> missing_for(const std::vector<Decision>& decisions, const MetricSet& have,
                                     const std::vector<std::string>& exclude, bool verdict_only = false) {
  MetricSet with_derived = have;
  add_derived_metrics(with_derived);
  std::set<std::string> wanted;
  for (Decision decision : decisions) {
    if (decision == Decision::kD6SourceLines || decision == Decision::kD2ADispatch) continue;
    for (const Rule* rule : rules_for(decision)) {
      for (const MetricNeed& need : rule->metrics) {
        if (verdict_only && refines_only(*rule, need)) continue;
        // A need the engine can already read (measured or derived) needs no counter.
        if (with_derived.has(need.name)) continue;
        for (std::string& c : counter_inputs(need.name)) {
          if (!with_derived.has(c)) wanted.insert(std::move(c));
        }
      }
    }
  }
  for (const std::string& e : exclude) wanted.erase(e);
  return {wanted.begin(), wanted.end()};
}

}  // namespace

std::vector<std::string> counters_still_needed(const Diagnosis& diagnosis, const MetricSet& have,
                                               const std::vector<std::string>& exclude) {
  std::vector<Decision> decisions;
  for (const DecisionVisit& visit : diagnosis.path) decisions.push_back(visit.decision);
  // A route through Decision 3 continues into Decision 5 when the dominant stall is a memory wait
  // (long_scoreboard, lg_throttle, membar, drain), which the stall counters being asked for now
  // will decide. Asking for Decision 5's counters in the same launch costs a few passes; waiting
  // for the stalls first would cost a third launch with passes of its own.
  // Not for saturated or compute-bound kernels, which visit Decision 3 only on the side and do
  // not take the follow-up.
  if (diagnosis.classification != Classification::kSaturated &&
      diagnosis.classification != Classification::kComputeBound &&
      std::find(decisions.begin(), decisions.end(), Decision::kD3IssueStalls) != decisions.end() &&
      std::find(decisions.begin(), decisions.end(), Decision::kD5MemoryMechanism) == decisions.end()) {
    decisions.push_back(Decision::kD5MemoryMechanism);
  }
  return missing_for(decisions, have, exclude);
}

const std::vector<Decision>& verdict_decisions(Classification classification) {
  static const auto& kByClass = *new std::vector<std::vector<Decision>>{
      {},                                                                        // unspecified
      {Decision::kD0Trust},                                                      // untrusted
      {Decision::kD0Trust, Decision::kD1WorkloadSize},                           // undersized
      {Decision::kD0Trust, Decision::kD1WorkloadSize, Decision::kD2Regime},      // dispatch-bound
      {Decision::kD0Trust, Decision::kD1WorkloadSize, Decision::kD2Regime, Decision::kD3IssueStalls},
      {Decision::kD0Trust, Decision::kD1WorkloadSize, Decision::kD2Regime, Decision::kD4ComputePipe},
      {Decision::kD0Trust, Decision::kD1WorkloadSize, Decision::kD2Regime, Decision::kD5MemoryMechanism},
      {Decision::kD0Trust, Decision::kD1WorkloadSize, Decision::kD2Regime, Decision::kD4ComputePipe,
       Decision::kD7HardwareLimit},                                              // saturated
      {},                                                                        // inconclusive
  };
  const auto i = static_cast<size_t>(classification);
  return i < kByClass.size() ? kByClass[i] : kByClass.front();
}

bool verdict_routed(const Diagnosis& diagnosis, const MetricSet& have, const std::vector<std::string>& exclude) {
  if (diagnosis.classification == Classification::kUnspecified ||
      diagnosis.classification == Classification::kInconclusive) {
    return false;
  }
  return missing_for(verdict_decisions(diagnosis.classification), have, exclude, /*verdict_only=*/true).empty();
}

}  // namespace cutriage::triage
