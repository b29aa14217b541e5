#include "cutriage/triage/inputs.h"

namespace cutriage::triage {

void MetricSet::set(std::string name, double value, std::string unit, MetricSource source) {
  values_[std::move(name)] = MetricValue{value, std::move(unit), source};
}

const MetricValue* MetricSet::find(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<double> MetricSet::get(std::string_view name) const {
  const MetricValue* v = find(name);
  if (v == nullptr) return std::nullopt;
  return v->value;
}

}  // namespace cutriage::triage
