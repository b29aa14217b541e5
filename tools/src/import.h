// `cutriage triage`: turns an Nsight Compute import into diagnosed kernel records and a file.
#pragma once

#include <string>
#include <vector>

#include "cutriage/triage/engine.h"
#include "cutriage/wire/records.h"
#include "ncu_csv.h"

namespace cutriage::tools {

struct TriageRun {
  wire::SessionInfo session;
  std::vector<wire::KernelRecord> kernels;
  std::vector<std::string> warnings;
};

struct ImportOptions {
  std::string source_path;
  triage::ClockControl clock_control = triage::ClockControl::kUnspecified;
  std::vector<TimingEntry> timings;
  triage::TriageOptions triage;
};

// Attaches unprofiled timings and time shares, runs the engine on every kernel of every import
// (several CSVs, e.g. one per program, become one session).
TriageRun triage_imports(std::vector<NcuImport> imports, const ImportOptions& options);

// The bytes of a cutriage file holding `run` (session header first).
std::string encode_run(const TriageRun& run);

}  // namespace cutriage::tools
