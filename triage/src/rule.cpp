#include "cutriage/triage/rule.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "registry.h"

namespace cutriage::triage {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Text from the file, for a message: a value of 100,000 characters is not echoed in full.
std::string quoted(std::string_view text) {
  constexpr size_t kMax = 80;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace

std::optional<std::string> Thresholds::parse(std::string_view text) {
  std::map<std::string, double, std::less<>> parsed = overrides_;
  std::map<std::string, size_t, std::less<>> seen;  // key -> the line that set it in this text
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string at = "line " + std::to_string(line_no) + ": ";
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return at + "expected 'rule.threshold = number'";
    }
    std::string_view key = trim(line.substr(0, eq));
    std::string_view val = trim(line.substr(eq + 1));
    size_t dot = key.rfind('.');
    if (key.empty() || dot == std::string_view::npos || dot == 0 || dot + 1 == key.size()) {
      return at + "key '" + quoted(key) + "' must be '<rule id>.<threshold name>'";
    }
    const std::string_view id = key.substr(0, dot);
    const std::vector<ThresholdDef>* defs = nullptr;
    if (const Rule* rule = find_rule(id)) {
      defs = &rule->thresholds;
    } else if (const SessionCheckDef* check = find_session_check(id)) {
      defs = &check->thresholds;
    } else {
      return at + "no rule or session check '" + quoted(id) + "' (see `cutriage rules`)";
    }
    std::string_view tname = key.substr(dot + 1);
    bool known = std::any_of(defs->begin(), defs->end(), [&](const ThresholdDef& t) { return t.name == tname; });
    if (!known) {
      return at + "'" + std::string(id) + "' has no threshold '" + quoted(tname) + "' (see `cutriage rules`)";
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), value);
    if (ec != std::errc{} || ptr != val.data() + val.size() || !std::isfinite(value)) {
      return at + "'" + quoted(val) + "' is not a number";
    }
    // Every threshold is a share, a ratio, a count or a time: a negative one is a typo, and would
    // make its check fire (or never fire) on every kernel.
    if (value < 0) return at + std::string(key) + " = " + quoted(val) + ": thresholds are not negative";
    if (auto [it, fresh] = seen.emplace(std::string(key), line_no); !fresh) {
      return at + std::string(key) + " is set again (first on line " + std::to_string(it->second) +
             "); give each threshold once";
    }
    parsed[std::string(key)] = value;
  }
  overrides_ = std::move(parsed);
  return std::nullopt;
}

std::optional<double> Thresholds::override_for(std::string_view key) const {
  auto it = overrides_.find(key);
  if (it == overrides_.end()) return std::nullopt;
  return it->second;
}

RuleContext::RuleContext(const Rule& rule, const KernelInput& kernel, const MetricSet& metrics,
                         const std::optional<LaunchStats>& launch, const Thresholds& thresholds)
    : rule_(rule), kernel_(kernel), metrics_(metrics), launch_(launch), thresholds_(thresholds) {}

std::optional<double> RuleContext::metric(std::string_view name) {
  const MetricValue* v = metrics_.find(name);
  if (v == nullptr) return std::nullopt;
  bool already = std::any_of(evidence.begin(), evidence.end(),
                             [&](const Evidence& e) { return e.metric == name; });
  if (!already) {
    evidence.push_back(Evidence{std::string(name), v->value, v->unit,
                                v->source == MetricSource::kDerived});
  }
  return v->value;
}

double RuleContext::required(std::string_view name) {
  // The framework checked presence; a missing value here is a rule bug, read as NaN so that every
  // comparison against it is false rather than silently true.
  return metric(name).value_or(std::nan(""));
}

double RuleContext::threshold(std::string_view name) {
  double value = std::nan("");
  for (const ThresholdDef& t : rule_.thresholds) {
    if (t.name == name) value = t.value;
  }
  std::string key = std::string(rule_.id) + "." + std::string(name);
  if (auto o = thresholds_.override_for(key)) value = *o;
  bool already = std::any_of(thresholds_used.begin(), thresholds_used.end(),
                             [&](const ThresholdUse& t) { return t.name == key; });
  if (!already) thresholds_used.push_back(ThresholdUse{key, value});
  // A rule reads a number, then the threshold it holds it to: the first such pair is its main
  // comparison, the deciding number unless the rule names another (RuleVerdict::decided_by).
  if (!first_comparison_ && !evidence.empty()) first_comparison_ = {evidence.back().metric, std::string(name)};
  return value;
}

void RuleContext::note(std::string name, double value, std::string unit) {
  for (Evidence& e : evidence) {
    if (e.metric == name) {
      e.value = value;
      return;
    }
  }
  evidence.push_back(Evidence{std::move(name), value, std::move(unit), true});
}

const std::vector<Rule>& all_rules() {
  // Never destroyed: the injected agent triages from an atexit handler, which can run after the
  // destructors of statics first used after it was registered.
  static const std::vector<Rule>& rules = *new std::vector<Rule>([] {
    std::vector<Rule> out;
    for (auto make : {detail::make_d0_rules, detail::make_d1_rules, detail::make_d2_rules,
                      detail::make_d2a_rules, detail::make_d3_rules, detail::make_d4_rules,
                      detail::make_d5_rules, detail::make_d6_rules, detail::make_d7_rules}) {
      for (Rule& r : make()) out.push_back(std::move(r));
    }
    return out;
  }());
  return rules;
}

std::vector<const Rule*> rules_for(Decision decision) {
  std::vector<const Rule*> out;
  for (const Rule& r : all_rules()) {
    if (r.decision == decision) out.push_back(&r);
  }
  return out;
}

const Rule* find_rule(std::string_view id) {
  for (const Rule& r : all_rules()) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

std::vector<std::string> all_metric_names() {
  std::set<std::string> names;
  for (const Rule& r : all_rules()) {
    for (const MetricNeed& m : r.metrics) names.emplace(m.name);
  }
  return {names.begin(), names.end()};
}

CheckResult run_rule(const Rule& rule, const KernelInput& kernel, const MetricSet& metrics,
                     const std::optional<LaunchStats>& launch, const Thresholds& thresholds) {
  CheckResult result;
  result.rule_id = std::string(rule.id);
  result.decision = rule.decision;
  result.title = std::string(rule.title);

  std::string missing;
  for (const MetricNeed& need : rule.metrics) {
    if (need.required && !metrics.has(need.name)) {
      if (!missing.empty()) missing += ", ";
      missing += need.name;
    }
  }
  if (!missing.empty()) {
    result.outcome = Outcome::kNotEvaluated;
    result.reason = "missing " + missing;
    return result;
  }

  RuleContext ctx(rule, kernel, metrics, launch, thresholds);
  RuleVerdict verdict;
  try {
    verdict = rule.evaluate ? rule.evaluate(ctx) : RuleVerdict::not_evaluated("rule has no evaluation");
  } catch (const std::exception& e) {
    verdict = RuleVerdict::not_evaluated(std::string("internal error: ") + e.what());
  } catch (...) {
    verdict = RuleVerdict::not_evaluated("internal error");
  }
  result.outcome = verdict.outcome;
  result.reason = std::move(verdict.reading);
  result.evidence = std::move(ctx.evidence);
  result.thresholds = std::move(ctx.thresholds_used);
  // The deciding number first, the others in the order the rule read them.
  if (verdict.deciding.empty() && ctx.first_comparison()) {
    verdict.deciding = ctx.first_comparison()->first;
    if (verdict.deciding_threshold.empty()) verdict.deciding_threshold = ctx.first_comparison()->second;
  }
  if (!verdict.deciding.empty()) {
    auto it = std::find_if(result.evidence.begin(), result.evidence.end(),
                           [&](const Evidence& e) { return e.metric == verdict.deciding; });
    if (it != result.evidence.end()) {
      it->deciding = true;
      std::rotate(result.evidence.begin(), it, it + 1);
    }
  }
  if (!verdict.deciding_threshold.empty()) {
    const std::string key = std::string(rule.id) + "." + verdict.deciding_threshold;
    auto it = std::find_if(result.thresholds.begin(), result.thresholds.end(),
                           [&](const ThresholdUse& t) { return t.name == key; });
    if (it != result.thresholds.end()) std::rotate(result.thresholds.begin(), it, it + 1);
  }
  if (verdict.outcome == Outcome::kFired) {
    Finding f;
    f.limiter = verdict.limiter.value_or(rule.limiter);
    f.summary = result.reason.empty() ? std::string(rule.finding) : result.reason;
    f.detail = std::move(verdict.detail);
    f.next_action = verdict.next_action.value_or(std::string(rule.next_action));
    f.estimated_speedup = verdict.estimated_speedup;
    f.estimate_basis = std::move(verdict.estimate_basis);
    f.severity = verdict.severity;
    result.finding = std::move(f);
  }
  return result;
}

}  // namespace cutriage::triage
