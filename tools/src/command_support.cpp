#include "command_support.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "commands.h"
#include "output_file.h"

namespace cutriage::tools::commands {

int usage_error(const char* command, const std::string& message) {
  std::cerr << "cutriage " << command << ": " << message << "\n(`cutriage " << command
            << " --help` lists its options)\n";
  return kUsage;
}

bool read_text(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return !f.bad();
}

int refuse_input_as_output(const std::string& out_path, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    if (!in.empty() && tools::same_file(out_path, in)) {
      std::cerr << "cutriage: the output '" << out_path << "' is the input '" << in
                << "'; name another file with -o\n";
      return kUsage;
    }
  }
  return kOk;
}

int exit_for(tools::ReadStatus status) {
  switch (status) {
    case tools::ReadStatus::kOk: return kOk;
    case tools::ReadStatus::kTruncated: return kTruncated;
    case tools::ReadStatus::kNotCutriage: return kNotCutriage;
    case tools::ReadStatus::kUnreadable: return kUnreadable;
  }
  return kUnreadable;
}

bool usable(const std::string& path, const tools::ReadResult& result) {
  if (result.status == tools::ReadStatus::kOk) return true;
  std::cerr << "cutriage: " << path << ": " << result.message << "\n";
  return result.status == tools::ReadStatus::kTruncated;
}

bool load_current(const std::string& path, tools::ReadResult& result, const tools::RecordObserver& observe) {
  result = tools::read_cutriage_file_current(path, observe);
  return usable(path, result);
}

tools::ReadScope rereading_scope(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (!tools::rereadable_path(p)) return tools::ReadScope::kEverything;
  }
  return tools::ReadScope::kCurrent;
}

int read_several(const std::vector<std::string>& paths, tools::MultiRead& read, tools::ReadScope scope) {
  // Neither trace nor pprof shows an application view: a killed run's events are not folded.
  read = tools::read_runs(paths, scope, /*fold=*/false);
  for (const std::string& m : read.messages) std::cerr << "cutriage: " << m << "\n";
  if (!read.conflict.empty()) {
    std::cerr << "cutriage: " << read.conflict << "\n";
    return kUsage;
  }
  if (read.processes.empty()) return exit_for(read.status);
  return kOk;
}

int need_output(const char* command, const std::vector<std::string>& files, const std::string& output) {
  if (files.size() > 1 && output.empty()) {
    return usage_error(command, "several files need -o OUT (the output's name is not derived from one of them)");
  }
  if (files.front() == "-" && output.empty()) {
    return usage_error(command, "standard input (-) has no name to derive the output's from: give -o OUT");
  }
  return kOk;
}

int export_failed(const std::string& out_path, const tools::TraceExportError& error, const std::string& where) {
  switch (error.kind) {
    case tools::TraceExportError::Kind::kNoTrace:
      std::cerr << "cutriage: " << where << error.message << "\n";
      return kNoTrace;
    case tools::TraceExportError::Kind::kReadFailed:
      std::cerr << "cutriage: " << error.message << "\n";
      return kUnreadable;
    case tools::TraceExportError::Kind::kWriteFailed:
      break;
  }
  std::cerr << "cutriage: cannot write '" << out_path << "'" << (error.message.empty() ? "" : ": ") << error.message
            << "\n";
  return kWriteFailed;
}

PipeSpool::~PipeSpool() {
  for (int fd : fds_) ::close(fd);
}

std::string PipeSpool::readable(const std::string& path, std::string* why) {
  struct stat st {};
  // A regular file is read as it is; a name that cannot be opened is left to the reader, which
  // says why (not found: exit 2).
  if (tools::rereadable_path(path) || (path != "-" && ::stat(path.c_str(), &st) != 0)) return path;
  const char* tmp = std::getenv("TMPDIR");
  std::string name = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cutriage-spool-XXXXXX";
  const int out = ::mkstemp(name.data());
  if (out < 0) {
    *why = "cannot create a temporary file in " + name.substr(0, name.rfind('/')) + " to read the pipe from (" +
           std::generic_category().message(errno) + ")";
    return {};
  }
  ::unlink(name.c_str());
  fds_.push_back(out);
  const int in = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return "/proc/self/fd/" + std::to_string(out);  // the reader says why it cannot open it
  std::vector<char> buf(size_t{1} << 16);
  while (true) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        *why = "cannot copy the pipe to a temporary file (" + std::generic_category().message(errno) + ")";
        if (in != STDIN_FILENO) ::close(in);
        return {};
      }
      done += w;
    }
  }
  if (in != STDIN_FILENO) ::close(in);
  return "/proc/self/fd/" + std::to_string(out);
}

}  // namespace cutriage::tools::commands
