// The export commands: `trace` (Chrome trace JSON) and `pprof` (a pprof profile of the PC samples).
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "command_support.h"
#include "commands.h"
#include "multi_file.h"
#include "output_file.h"
#include "pprof_export.h"
#include "trace_export.h"

namespace cutriage::tools::commands {

// ---------------------------------------------------------------------------------------------
// trace

namespace {

// An export's inputs and its -o: `files` says what the files must hold and how several are
// combined, `suffix` what the default output's name appends to the input's.
void bind_export_files(CLI::App& app, std::vector<std::string>& files, std::string& output, const std::string& files_help,
                       const std::string& suffix) {
  app.add_option("FILE.pb", files, files_help)->required();
  app.add_option("-o,--output", output,
                 "where to write it (default: FILE.pb with " + suffix +
                     " appended; required with several files; - for stdout)")
      ->type_name("OUT" + suffix.substr(suffix.find('.', 1)))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// Runs `write` (an export returning its error, if any) on stdout for "-", else on `out_path`,
// committed only when complete: a failed write leaves the name as it was (output_file.h). Returns
// the exit code when the file cannot be opened (said on stderr), kOk otherwise with `error` set.
template <typename Write>
int export_to(const std::string& out_path, std::optional<tools::TraceExportError>& error, Write write) {
  if (out_path == "-") {
    error = write(std::cout);
    return kOk;
  }
  tools::OutputFile out;
  std::string why;
  if (!out.open(out_path, &why)) {
    std::cerr << "cutriage: cannot write '" << out_path << "': " << why << "\n";
    return kWriteFailed;
  }
  error = write(out.stream());
  if (!error && !out.commit(&why)) error = tools::TraceExportError{tools::TraceExportError::Kind::kWriteFailed, why};
  return kOk;
}

}  // namespace

void bind_trace(CLI::App& app, TraceOptions& o) {
  bind_export_files(app, o.files, o.output,
                    "cutriage files written with the kernel trace on; several: the segments of one process are "
                    "merged, processes are drawn apart on one clock",
                    ".trace.json");
}

namespace {

// `trace A.pb B.pb ...`.
int trace_several(const TraceOptions& o) {
  const std::string& out_path = o.output;
  if (out_path != "-") {
    if (int rc = refuse_input_as_output(out_path, o.files); rc != kOk) return rc;
  }
  // The current records: each process's trace chunks are read again from its files, twice, one
  // record at a time (trace_export.h); a pipe is spooled to a temporary file to be read again.
  PipeSpool spool;
  std::vector<std::string> files;
  for (const std::string& f : o.files) {
    std::string why;
    files.push_back(spool.readable(f, &why));
    if (files.back().empty()) {
      std::cerr << "cutriage: " << f << ": " << why << "\n";
      return kWriteFailed;
    }
  }
  tools::MultiRead read;
  if (const int rc = read_several(files, read, rereading_scope(files)); rc != kOk) return rc;
  bool any_trace = false;
  for (const tools::ProcessRun& run : read.processes) any_trace = any_trace || run.file.trace_chunks != 0;
  if (!any_trace) {
    // Checked before the output is opened, so no empty file is left behind.
    std::cerr << "cutriage: no file has a trace: the runs were made without tracing, so there is no "
                 "timeline to export\n";
    return kNoTrace;
  }
  std::optional<tools::TraceExportError> error;
  tools::TraceExportStats stats;
  std::vector<std::string> notes;
  if (const int rc = export_to(out_path, error, [&](std::ostream& os) {
        return tools::export_chrome_trace_runs(read.processes, os, &stats, &notes);
      });
      rc != kOk) {
    return rc;
  }
  for (const std::string& note : notes) std::cerr << "cutriage: note: " << note << "\n";
  if (error) return export_failed(out_path, *error, "");
  if (out_path != "-") {
    std::cerr << "cutriage: " << read.processes.size() << (read.processes.size() == 1 ? " process, " : " processes, ")
              << stats.kernels << " kernels, " << stats.copies << " copies, " << stats.nvtx_ranges
              << " NVTX ranges -> " << out_path << "\n";
  }
  return exit_for(read.status);
}

}  // namespace

int cmd_trace(const TraceOptions& o) {
  if (const int rc = need_output("trace", o.files, o.output); rc != kOk) return rc;
  if (o.files.size() > 1) return trace_several(o);
  const std::string& path = o.files.front();
  std::string out_path = o.output;
  if (out_path.empty()) out_path = path + ".trace.json";
  if (out_path != "-") {
    if (int rc = refuse_input_as_output(out_path, {path}); rc != kOk) return rc;
  }
  // The current records (the file is read twice more for its trace, one record at a time:
  // trace_export.h); a pipe is spooled to a temporary file first, so that it can be read again.
  PipeSpool spool;
  std::string spool_error;
  const std::string read_path = spool.readable(path, &spool_error);
  if (read_path.empty()) {
    std::cerr << "cutriage: " << path << ": " << spool_error << "\n";
    return kWriteFailed;
  }
  const std::vector<std::string> paths = {read_path};
  tools::ReadResult r = tools::read_cutriage_file(read_path, rereading_scope(paths));
  if (!usable(path, r)) return exit_for(r.status);
  if (r.trace_chunks == 0) {
    // Checked before the output is opened, so no empty file is left behind.
    std::cerr << "cutriage: " << path
              << ": the file has no trace: the run was made without tracing, so there is no "
                 "timeline to export\n";
    return kNoTrace;
  }
  std::optional<tools::TraceExportError> error;
  tools::TraceExportStats stats;
  if (const int rc = export_to(out_path, error, [&](std::ostream& os) {
        return tools::export_chrome_trace(r, os, &stats, &paths);
      });
      rc != kOk) {
    return rc;
  }
  if (error) return export_failed(out_path, *error, path + ": ");
  if (out_path != "-") {
    std::cerr << "cutriage: " << stats.kernels << " kernels, " << stats.copies << " copies, "
              << stats.nvtx_ranges << " NVTX ranges";
    if (stats.placed_profiled != 0) {
      std::cerr << ", " << stats.placed_profiled << " profiled launches placed from their records";
    }
    std::cerr << " -> " << out_path << "\n";
  }
  return exit_for(r.status);
}

// ---------------------------------------------------------------------------------------------
// pprof

void bind_pprof(CLI::App& app, PprofOptions& o) {
  bind_export_files(app, o.files, o.output,
                    "cutriage files with PC samples; several: the segments of one process are merged, each "
                    "process's samples are labelled process=host:pid",
                    ".pprof.pb.gz");
  app.add_option("--kernel", o.kernel, "only kernels whose mangled or demangled name contains NAME")
      ->type_name("NAME")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::not_empty());
}

int cmd_pprof(const PprofOptions& o) {
  if (const int rc = need_output("pprof", o.files, o.output); rc != kOk) return rc;
  const std::string& path = o.files.front();
  std::string out_path = o.output;
  tools::PprofOptions options;
  options.kernel = o.kernel;
  if (out_path.empty()) out_path = path + ".pprof.pb.gz";
  if (out_path != "-") {
    if (int rc = refuse_input_as_output(out_path, o.files); rc != kOk) return rc;
  }
  options.source_name = path;
  for (size_t i = 1; i < o.files.size(); ++i) options.source_name += ", " + o.files[i];
  // One file is read as itself; several are grouped into processes (segments merged), each
  // process's samples labelled with its name when there are several.
  tools::ReadResult r;
  tools::MultiRead read;
  std::vector<tools::PprofSource> sources;
  if (o.files.size() == 1) {
    // The current records; pprof shows no application view, so a killed run's trace is not folded.
    r = tools::read_cutriage_file(path, tools::ReadScope::kCurrent);
    if (!usable(path, r)) return exit_for(r.status);
    sources.push_back({&r, {}});
  } else {
    if (const int rc = read_several(o.files, read, tools::ReadScope::kCurrent); rc != kOk) return rc;
    r.status = read.status;
    for (const tools::ProcessRun& run : read.processes) {
      sources.push_back({&run.file, read.processes.size() > 1 ? run.name : std::string()});
    }
  }
  // Made in memory before the output is opened, so that no empty file is left behind when
  // there is nothing to export.
  tools::SassResolver sass;
  tools::PprofStats stats;
  std::ostringstream buffer;
  if (std::optional<tools::PprofError> error = tools::export_pprof(sources, options, sass, buffer, &stats)) {
    if (error->kind == tools::PprofError::Kind::kNoSamples) {
      std::cerr << "cutriage: " << (o.files.size() == 1 ? path + ": " : std::string()) << error->message << "\n";
      return kNoSamples;
    }
    std::cerr << "cutriage: cannot encode the profile"
              << (error->message.empty() ? "" : ": " + error->message) << "\n";
    return kWriteFailed;
  }
  for (const std::string& note : stats.notes) std::cerr << "cutriage: note: " << note << "\n";
  const std::string compressed = buffer.str();
  if (out_path == "-") {
    std::cout.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "cutriage: cannot write to stdout\n";
      return kWriteFailed;
    }
    return exit_for(r.status);
  }
  {
    // Committed only when complete: a failed write leaves the name as it was (output_file.h).
    tools::OutputFile out;
    std::string why;
    if (out.open(out_path, &why)) out.stream().write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
    if (!why.empty() || !out.commit(&why)) {
      std::cerr << "cutriage: cannot write '" << out_path << "': " << why << "\n";
      return kWriteFailed;
    }
  }
  std::cerr << "cutriage: " << stats.kernels << (stats.kernels == 1 ? " kernel, " : " kernels, ")
            << stats.samples << " samples (" << stats.stall_samples << " stalls";
  if (stats.unattributed_samples != 0) std::cerr << ", " << stats.unattributed_samples << " not attributed to a PC";
  std::cerr << "), " << stats.cycles << " SM cycles, in " << stats.stacks << " stacks -> " << out_path << "\n";
  return exit_for(r.status);
}

}  // namespace cutriage::tools::commands
