#include "import.h"

#include <chrono>

#include "cutriage/wire/writer.h"

namespace cutriage::tools {

namespace {

bool timing_matches(const TimingEntry& t, const triage::KernelInput& k,
                    const std::string& process_name) {
  // A timing line names its program; ncu's "Process Name" is the program's file name.
  if (!t.program.empty() && !process_name.empty() &&
      process_name.find(t.program) == std::string::npos) {
    return false;
  }
  if (t.kernel == "*") return true;
  return t.kernel == k.function_name || k.demangled_name.rfind(t.kernel + "(", 0) == 0 ||
         k.demangled_name.find(" " + t.kernel + "(") != std::string::npos;
}

}  // namespace

wire::SessionInfo new_session(const ImportOptions& options) {
  wire::SessionInfo s;
  s.agent_version = CUTRIAGE_VERSION;
  s.start_time_unix_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  s.replay_mode = triage::ReplayMode::kKernel;
  s.clock_control = options.clock_control;
  s.source = wire::SessionSource::kNcuCsv;
  s.source_path = options.source_path;
  return s;
}

void add_import_identity(wire::SessionInfo& s, NcuImport& import) {
  if (s.host.empty()) {
    s.host = import.host;
    s.pid = import.pid;
  }
  if (!import.process_name.empty()) s.command_line.push_back(import.process_name);
  for (wire::GpuInfo& g : import.gpus) {
    bool seen = false;
    for (const wire::GpuInfo& have : s.gpus) seen = seen || have.device == g.device;
    if (!seen) s.gpus.push_back(std::move(g));
  }
}

void triage_imported(wire::KernelRecord& k, const std::string& process_name, const ImportTotals& totals,
                     const ImportOptions& options, std::vector<std::string>& warnings) {
  k.input.collection.clock_control = options.clock_control;
  if (k.input.collection.replay_mode == triage::ReplayMode::kUnspecified) {
    k.input.collection.replay_mode = triage::ReplayMode::kKernel;
  }
  bool matched = false;
  for (const TimingEntry& t : options.timings) {
    if (timing_matches(t, k.input, process_name) && t.median_ns > 0) {
      // One median per kernel: the timing file already aggregates the launches.
      k.input.unprofiled_durations_ns.assign(1, t.median_ns);
      matched = true;
      break;
    }
  }
  if (!options.timings.empty() && !matched) {
    warnings.push_back("no unprofiled timing for kernel '" + k.input.function_name + "'");
  }
  if (totals.total_ns > 0 && k.duration_ns > 0 && totals.kernels > 1) {
    k.input.time_share = k.duration_ns / totals.total_ns;
  }
  k.diagnosis = triage::triage_kernel(k.input, options.triage);
}

TriageRun triage_imports(std::vector<NcuImport> imports, const ImportOptions& options) {
  TriageRun run;
  run.session = new_session(options);
  // Time shares are relative to the captured launches: an ncu capture is a sample of the run,
  // so this is not the application's share (the agent's trace gives that).
  ImportTotals totals;
  for (const NcuImport& import : imports) {
    for (const wire::KernelRecord& k : import.kernels) totals.total_ns += k.duration_ns;
    totals.kernels += import.kernels.size();
  }
  for (NcuImport& import : imports) {
    add_import_identity(run.session, import);
    for (std::string& w : import.warnings) run.warnings.push_back(std::move(w));
    for (wire::KernelRecord& k : import.kernels) {
      triage_imported(k, import.process_name, totals, options, run.warnings);
      run.kernels.push_back(std::move(k));
    }
  }
  return run;
}

std::string encode_run(const TriageRun& run) {
  wire::RecordEncoder enc;
  std::string out = enc.session(run.session);
  for (const wire::KernelRecord& k : run.kernels) out += enc.kernel(k);
  return out;
}

}  // namespace cutriage::tools
