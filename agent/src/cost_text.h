// What a profiled launch, and a stage of passes over launches, cost the application's thread, as
// log text (LaunchProfiler's stage line; the record carries the same as ProfileCost).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cutriage/wire/records.h"

namespace cutriage::agent {

// Milliseconds with one decimal: "531.3 ms".
std::string ms_text(uint64_t ns);

// The phases' parts of 1 ms or more, largest first: "start 170.0 ms, plan 90.0 ms".
std::string cost_parts_text(const wire::ProfileCost& cost);

// A finished stage: "FUNCTION: a stage of N passes over its launches #A-#B: first pass X ms
// (its parts), the others Y ms on average". `launches` and `pass_ns` (entry to end, each pass)
// are in pass order and not empty.
std::string stage_cost_line(const std::string& function, const std::vector<uint64_t>& launches,
                            const std::vector<uint64_t>& pass_ns, const std::optional<wire::ProfileCost>& first);

}  // namespace cutriage::agent
