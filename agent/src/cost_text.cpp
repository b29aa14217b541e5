#include "cost_text.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace cutriage::agent {

std::string ms_text(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f ms", static_cast<double>(ns) / 1e6);
  return text;
}

std::string cost_parts_text(const wire::ProfileCost& c) {
  std::vector<std::pair<uint64_t, std::string>> parts = {
      {c.plan_ns, "plan"}, {c.evaluate_ns, "evaluate"}, {c.launch_ns, "launch"}};
  if (c.range_steps) {
    const wire::RangeProfilerSteps& r = *c.range_steps;
    parts.insert(parts.end(), {{r.enable_ns, "enable"},
                               {r.counter_data_ns, "counter-data image"},
                               {r.set_config_ns, "set config"},
                               {r.start_ns, "start"},
                               {r.stop_ns, "stop"},
                               {r.decode_ns, "decode"},
                               {r.disable_ns, "disable"}});
  }
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text;
  for (const auto& [ns, name] : parts) {
    if (ns < 1'000'000) continue;
    text += (text.empty() ? "" : ", ") + name + " " + ms_text(ns);
  }
  return text.empty() ? "every part under 1 ms" : text;
}

std::string stage_cost_line(const std::string& function, const std::vector<uint64_t>& launches,
                            const std::vector<uint64_t>& pass_ns, const std::optional<wire::ProfileCost>& first) {
  std::string line = function + ": a stage of " + std::to_string(launches.size()) + " passes over its launches #" +
                     std::to_string(launches.front()) + "-#" + std::to_string(launches.back()) + ": first pass " +
                     ms_text(pass_ns.front());
  if (first) line += " (" + cost_parts_text(*first) + ")";
  if (pass_ns.size() > 1) {
    uint64_t later = 0;
    for (size_t i = 1; i < pass_ns.size(); ++i) later += pass_ns[i];
    line += ", the others " + ms_text(later / (pass_ns.size() - 1)) + " on average";
  }
  return line;
}

}  // namespace cutriage::agent
