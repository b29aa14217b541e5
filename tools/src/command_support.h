// What the cutriage commands share (commands.cpp, commands_export.cpp): exit codes of reads,
// usage errors, reading inputs, and the trace and pprof exports' handling of several files and
// pipes. Internal to the tool.
#pragma once

#include <string>
#include <vector>

#include "file_reader.h"
#include "multi_file.h"
#include "trace_export.h"

namespace cutriage::tools::commands {

// A usage error the parser cannot see (one option given without the one it goes with).
int usage_error(const char* command, const std::string& message);

// The whole file at `path` into `out`; false when it cannot be read.
bool read_text(const std::string& path, std::string& out);

// -o naming one of the command's inputs would destroy it (before: silently overwritten).
int refuse_input_as_output(const std::string& out_path, const std::vector<std::string>& inputs);

// The exit code of a read that ended with `status` (commands.h).
int exit_for(tools::ReadStatus status);

// Prints the one-line problem of a read. Returns false when nothing is usable.
bool usable(const std::string& path, const tools::ReadResult& result);

// A cutriage file for the views of the current state (report, --html): memory holds what they
// show, a killed run's trace folded from a second read (read_cutriage_file_current). `observe`
// sees every record of the first read (the HTML page's timeline takes its executions there).
bool load_current(const std::string& path, tools::ReadResult& result, const tools::RecordObserver& observe = {});

// The scope for commands that read a file's trace again (trace): the current records, the chunks
// read again from the files; a pipe cannot be read again, so its records are held whole.
tools::ReadScope rereading_scope(const std::vector<std::string>& paths);

// The files of `trace` or `pprof` grouped into processes (multi_file.h), the problems printed.
// Returns the exit code when nothing can be exported (kOk otherwise).
int read_several(const std::vector<std::string>& paths, tools::MultiRead& read, tools::ReadScope scope);

// Several inputs have no one name to derive the output's from (the first file's would read as
// that file's export alone): -o is required.
int need_output(const char* command, const std::vector<std::string>& files, const std::string& output);

// The problem of an export that failed, and its exit code.
int export_failed(const std::string& out_path, const tools::TraceExportError& error, const std::string& where);

// A pipe (or `-`) given to a command that reads its input more than once (trace) is copied first
// into a temporary file that is unlinked at once, so only this process can reach it and nothing is
// left behind; the command then reads /proc/self/fd/N, a regular file it can read again record by
// record, instead of holding every record of the pipe. Owns the descriptor.
class PipeSpool {
 public:
  PipeSpool() = default;
  PipeSpool(const PipeSpool&) = delete;
  PipeSpool& operator=(const PipeSpool&) = delete;
  ~PipeSpool();
  // The path to read `path` from: itself when it can be read again, else its spooled copy. Empty,
  // with `why`, when the copy failed (the temporary directory full or not writable).
  std::string readable(const std::string& path, std::string* why);

 private:
  std::vector<int> fds_;
};

}  // namespace cutriage::tools::commands
