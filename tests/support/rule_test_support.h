// Helpers for tests that run one triage rule on synthetic inputs.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "catch.h"
#include "cutriage/triage/rule.h"

namespace cutriage::triage::test_support {

using MetricList = std::initializer_list<std::pair<std::string_view, double>>;

inline KernelInput kernel_with(MetricList metrics) {
  KernelInput k;
  k.function_name = "synthetic_kernel";
  for (const auto& [name, value] : metrics) k.metrics.set(std::string(name), value);
  return k;
}

// Runs rule `id` alone on `k` (no launch stats), as the engine would.
inline CheckResult run(std::string_view id, const KernelInput& k, const Thresholds& t = {}) {
  const Rule* rule = find_rule(id);
  REQUIRE(rule != nullptr);
  return run_rule(*rule, k, k.metrics, std::nullopt, t);
}

inline bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

}  // namespace cutriage::triage::test_support
