// The decision tree: routes one kernel through Decisions 0-7 and 2A and assembles the diagnosis.
#pragma once

#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/triage/rule.h"

namespace cutriage::triage {

struct TriageOptions {
  Thresholds thresholds;
};

// Adds the quantities the engine can compute from what was measured (ratios the guide names but
// the hardware exposes as counters, e.g. stall-per-issue ratios from smsp__warps_issue_stalled_*
// and smsp__issue_active). Never overwrites a measured value. Marked MetricSource::kDerived.
void add_derived_metrics(MetricSet& metrics);

// Never throws: internal errors become a diagnosis with classification kInconclusive and a note.
Diagnosis triage_kernel(const KernelInput& kernel, const TriageOptions& options = {});

}  // namespace cutriage::triage
