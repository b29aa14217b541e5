// Helpers the tests on real captures share: reading a fixture, and the view of a capture that a
// staged collection would have after reading some counters.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cutriage/triage/inputs.h"
#include "cutriage/triage/plan.h"

namespace cutriage::testing {

// The whole file as bytes; empty when it cannot be read (the caller's checks then fail).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The measured values of `full` whose counters are all in `collected` (a ratio ncu measured
// directly counts as collected once its numerator and denominator are), plus what no counter
// backs (launch__*, device__*: the agent computes those itself).
inline triage::MetricSet collected_view(const triage::MetricSet& full, const std::set<std::string>& collected) {
  triage::MetricSet out;
  for (const auto& [name, v] : full.all()) {
    if (v.source != triage::MetricSource::kMeasured) continue;
    std::vector<std::string> inputs = triage::counter_inputs(name);
    if (!std::all_of(inputs.begin(), inputs.end(),
                     [&](const std::string& c) { return collected.count(c) > 0; })) {
      continue;
    }
    out.set(name, v.value, v.unit, v.source);
  }
  return out;
}

}  // namespace cutriage::testing
