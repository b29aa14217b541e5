// STUB: to_string tables and Diagnosis helpers (engine owner replaces).
#include "cutriage/triage/diagnosis.h"

namespace cutriage::triage {
const CheckResult* Diagnosis::check(std::string_view rule_id) const {
  for (const auto& v : path)
    for (const auto& c : v.checks)
      if (c.rule_id == rule_id) return &c;
  return nullptr;
}
bool Diagnosis::fired(std::string_view rule_id) const {
  const CheckResult* c = check(rule_id);
  return c != nullptr && c->outcome == Outcome::kFired;
}
bool Diagnosis::visited(Decision d) const {
  for (const auto& v : path)
    if (v.decision == d) return true;
  return false;
}
std::string_view to_string(Decision) { return "?"; }
std::string_view to_string(Outcome) { return "?"; }
std::string_view to_string(Classification) { return "?"; }
std::string_view to_string(Limiter) { return "?"; }
std::string_view to_string(Trust) { return "?"; }
}  // namespace cutriage::triage
