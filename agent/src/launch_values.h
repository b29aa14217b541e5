// What a profiled launch's readings become in its record: display units from a counter's name, and
// the launch's entry among the launches a record's counters were assembled from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::agent {

// Base units for display, from the metric name's shape (the range profiler gives bare numbers).
std::string unit_for(const std::string& name);

// One launch a record's counters were assembled from (always-on's groups, a stage's or a step's
// passes): its shape, and when `readings` are its own, its duration and how many counters it gave.
triage::AssembledLaunch assembled_launch(const collectors::LaunchEvent& event, uint64_t launch_index,
                                         const std::vector<collectors::MetricReading>* readings);

}  // namespace cutriage::agent
