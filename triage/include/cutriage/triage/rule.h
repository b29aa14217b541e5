// Declarative triage rules: one primary check of the Compute Triage Guide each.
//
// A rule names what it needs (metrics, required or optional), the thresholds it compares against
// (named, defaults from the guide, overridable), what it concludes (limiter, finding text, next
// action) and an evaluation. The framework, not the rule, turns a missing required metric into
// "not evaluated: missing X", so no rule can pass silently on absent data. Every metric or
// threshold a rule reads through its RuleContext is recorded as evidence on the check.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/triage/launch.h"

namespace cutriage::triage {

struct MetricNeed {
  std::string_view name;
  bool required = true;
};

struct ThresholdDef {
  std::string_view name;   // local to the rule; the overridable key is "<rule id>.<name>"
  double value = 0;        // the guide's default
  std::string_view note;   // where the number comes from
};

// Threshold overrides, read from a config text of `key = value` lines (`#` comments).
class Thresholds {
 public:
  // Parses `text`; on error returns a message naming the line, and leaves *this unchanged. Keys
  // are a kernel rule's or a session check's thresholds; values finite and not negative (every
  // threshold is a share, a ratio, a count or a time); a key given twice in one text is an error
  // (which one was meant?). Text quoted from the input is cut to 80 characters.
  std::optional<std::string> parse(std::string_view text);
  void set(std::string key, double value) { overrides_[std::move(key)] = value; }
  [[nodiscard]] std::optional<double> override_for(std::string_view key) const;
  [[nodiscard]] const std::map<std::string, double, std::less<>>& overrides() const { return overrides_; }

 private:
  std::map<std::string, double, std::less<>> overrides_;
};

struct Rule;

// What a rule's evaluation sees. Reads are recorded as the check's evidence.
class RuleContext {
 public:
  RuleContext(const Rule& rule, const KernelInput& kernel, const MetricSet& metrics,
              const std::optional<LaunchStats>& launch, const Thresholds& thresholds);

  // A metric by full name; nullopt when absent. Present values are recorded as evidence.
  std::optional<double> metric(std::string_view name);
  // A metric the rule declared required: the framework guarantees presence before evaluate().
  double required(std::string_view name);
  // A threshold declared by the rule (override applied). Recorded on the check.
  double threshold(std::string_view name);
  // Records a quantity the rule computed (a ratio, a share) as derived evidence.
  void note(std::string name, double value, std::string unit = {});

  [[nodiscard]] const KernelInput& kernel() const { return kernel_; }
  [[nodiscard]] const MetricSet& metrics() const { return metrics_; }
  [[nodiscard]] const std::optional<LaunchStats>& launch() const { return launch_; }

  // Filled as the rule reads; moved into the CheckResult by the engine.
  std::vector<Evidence> evidence;
  std::vector<ThresholdUse> thresholds_used;
  // The number read last before the first threshold, and that threshold's local name.
  [[nodiscard]] const std::optional<std::pair<std::string, std::string>>& first_comparison() const {
    return first_comparison_;
  }

 private:
  std::optional<std::pair<std::string, std::string>> first_comparison_;
  const Rule& rule_;
  const KernelInput& kernel_;
  const MetricSet& metrics_;
  const std::optional<LaunchStats>& launch_;
  const Thresholds& thresholds_;
};

struct RuleVerdict {
  Outcome outcome = Outcome::kNotEvaluated;
  std::string reading;  // one line with the numbers, e.g. "0.24 waves per SM (< 1)"
  // Optional refinements of the rule's static conclusion.
  std::string detail;                     // e.g. the dominant stall reason
  std::optional<Limiter> limiter;         // overrides Rule::limiter (e.g. which pipe)
  std::optional<std::string> next_action; // overrides Rule::next_action
  std::optional<double> estimated_speedup;
  std::string estimate_basis;
  double severity = 0;  // how far past the threshold, >= 0; ranks fired findings of equal priority
  // The number the reading rests on (a metric or a noted quantity's name) and the local name of
  // the threshold it was held to: the check's evidence and thresholds open with them. Rules that
  // read many candidates (pipes, memory tiers, stall reasons) name the one that decided.
  std::string deciding;
  std::string deciding_threshold;

  RuleVerdict&& decided_by(std::string metric, std::string threshold = {}) && {
    deciding = std::move(metric);
    deciding_threshold = std::move(threshold);
    return std::move(*this);
  }

  static RuleVerdict fired(std::string reading, double severity = 1.0) {
    RuleVerdict v;
    v.outcome = Outcome::kFired;
    v.reading = std::move(reading);
    v.severity = severity;
    return v;
  }
  static RuleVerdict not_fired(std::string reading) {
    RuleVerdict v;
    v.outcome = Outcome::kNotFired;
    v.reading = std::move(reading);
    return v;
  }
  static RuleVerdict not_evaluated(std::string why) {
    RuleVerdict v;
    v.outcome = Outcome::kNotEvaluated;
    v.reading = std::move(why);
    return v;
  }
};

// What a Decision 0 check speaks for. Only data checks (the counters and durations) decide
// whether the verdict can be trusted; source-mapping checks (line table, device-debug build) limit
// what can be said about source lines and how far the build represents a release, never whether
// the counters are right, so they are said beside the verdict (Diagnosis::source_notes).
enum class TrustScope : uint8_t {
  kData = 0,
  kSourceMapping = 1,
};

struct Rule {
  std::string_view id;        // "d1.waves_below_one": decision prefix + check name
  Decision decision = Decision::kUnspecified;
  std::string_view title;     // the primary check, in the project's words
  std::string_view parent;    // rule id this one refines, or empty
  std::vector<MetricNeed> metrics;
  std::vector<ThresholdDef> thresholds;
  Limiter limiter = Limiter::kUnspecified;
  std::string_view finding;      // what it concludes when it fires
  std::string_view next_action;  // what to do then
  // Lower = closer to a root cause; the primary finding is the fired one with the lowest priority
  // (then highest severity) in the decision that classified the kernel.
  int priority = 50;
  // Decision 0 only: a firing blocking rule makes the diagnosis untrusted (no verdict).
  bool blocking = false;
  // A note: when it fires it qualifies the other findings (how to read a count), its reading and
  // evidence stay on the path, but it is never the primary finding, so never the headline.
  bool note = false;
  // Decision 0 only: whether the check speaks for the data (trust) or for source mapping.
  TrustScope scope = TrustScope::kData;
  std::function<RuleVerdict(RuleContext&)> evaluate;
};

// Every rule, in guide order. Built once; never mutated.
const std::vector<Rule>& all_rules();
std::vector<const Rule*> rules_for(Decision decision);
const Rule* find_rule(std::string_view id);

// A session-level check of the timeline (triage_timeline, timeline.h). It reads the run's trace,
// not one kernel's counters, so it is not a Rule; its thresholds are named and overridden the same
// way ("session.d2a.idle_gaps.max_idle_pct = 20" in a thresholds file), and this table is where
// their defaults live. Built once; never mutated.
struct SessionCheckDef {
  std::string_view id;  // "session.d2a.idle_gaps"
  Decision decision = Decision::kUnspecified;
  std::string_view title;
  std::vector<ThresholdDef> thresholds;
};
const std::vector<SessionCheckDef>& session_checks();
const SessionCheckDef* find_session_check(std::string_view id);

// Every metric name any rule reads (required or optional), sorted, without duplicates: what a
// collector should ask for. Derived metrics (launch__*) are included; callers filter them.
std::vector<std::string> all_metric_names();

// Runs one rule: checks required metrics, evaluates, packages the result.
CheckResult run_rule(const Rule& rule, const KernelInput& kernel, const MetricSet& metrics,
                     const std::optional<LaunchStats>& launch, const Thresholds& thresholds);

}  // namespace cutriage::triage
