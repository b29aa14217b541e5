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

// The pieces of triage_imports, for `cutriage triage` streaming one kernel at a time (a first
// pass over the CSVs gives the totals and each import's identity, a second triages and writes
// each row as it is read).
struct ImportTotals {
  double total_ns = 0;  // the captured launches' GPU time: time shares are relative to it
  size_t kernels = 0;
};
wire::SessionInfo new_session(const ImportOptions& options);
// Host, pid and command line from the first import that has them; its GPUs not seen yet (moved).
void add_import_identity(wire::SessionInfo& session, NcuImport& import);
// Clock control, replay mode, the unprofiled timing and the time share, then the diagnosis; a
// kernel without a timing adds a warning.
void triage_imported(wire::KernelRecord& k, const std::string& process_name, const ImportTotals& totals,
                     const ImportOptions& options, std::vector<std::string>& warnings);

// The bytes of a cutriage file holding `run` (session header first).
std::string encode_run(const TriageRun& run);

}  // namespace cutriage::tools
