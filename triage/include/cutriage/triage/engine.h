// The decision tree: routes one kernel through Decisions 0-7 and 2A and assembles the diagnosis.
#pragma once

#include <string>
#include <vector>

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
// Also sets each throughput of throughput_breakdowns() that is absent to the largest of its parts
// when every single-pass part is present (derive_from_breakdowns).
void add_derived_metrics(MetricSet& metrics);

// A kernel's own PM samples (in a graph, GraphScope::node_sampling, or in always-on's routing
// window, KernelInput::pm_window) carry no
// gpu__compute_memory_throughput (PM sampling has no one-pass form of it) and no L2 value the rules
// may read (PM's differs: docs/graphs.md). Decision 2's memory side is then stood in for by the
// larger of the DRAM and L1 throughputs, marked derived; returns the note saying so, empty when
// nothing was set (no node sampling, the value present, or neither input).
std::string add_node_sampling_stand_ins(const KernelInput& kernel, MetricSet& metrics);

// The breakdown step of add_derived_metrics alone; returns the names it set.
std::vector<std::string> derive_from_breakdowns(MetricSet& metrics);
// One line per throughput in `metrics` that was derived from its breakdown: the value, the part
// that set it, and the parts that could not be collected without replay (a lower bound then).
std::vector<std::string> breakdown_notes(const MetricSet& metrics);
// A throughput is by definition the largest of its breakdown parts, so it is never below a part,
// or below a throughput made of its parts only (l1tex__throughput inside
// gpu__compute_memory_throughput). Values from different passes or launches (kernel replay,
// always-on assembly) can break that, and then two paths routed the same kernel differently
// (issue 23: one GEMM "saturated" from ncu, "compute bound" from adaptive sets). The engine, on
// its own copy of the metrics, raises such a throughput to its largest part present; one line per
// raise says from what to what and why. Returns those lines.
std::vector<std::string> reconcile_breakdowns(MetricSet& metrics);

// Never throws: internal errors become a diagnosis with classification kInconclusive and a note.
Diagnosis triage_kernel(const KernelInput& kernel, const TriageOptions& options = {});

}  // namespace cutriage::triage
