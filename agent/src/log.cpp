#include "log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "cutriage/base/read_file.h"

namespace cutriage::agent {

Logger::~Logger() {
  if (owns_fd_) ::close(fd_);
}

std::string Logger::configure(LogLevel level, const std::string& file) {
  std::lock_guard<std::mutex> lock(mutex_);
  level_ = level;
  if (file.empty()) return {};
  const std::string named = "CUTRIAGE_LOG_FILE=\"" + file + "\": ";
  // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of blocking the application
  // in cuInit; one with a reader is refused below. O_NOFOLLOW: a symbolic link planted at the name
  // does not redirect our writes into another file.
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) return named + "is a symbolic link, which the agent does not follow; name a regular file";
    if (err == ENXIO) return named + "is a named pipe (FIFO) or a socket, not a regular file";
    if (err == EISDIR) return named + base::describe_not_regular(S_IFDIR);
    // Not strerror: its buffer is shared by every thread of the application we run in.
    return named + "cannot open (" + std::generic_category().message(err) + ")";
  }
  // Regular files only: a device or a pipe with a reader could block or swallow every line.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return named + base::describe_not_regular(st.st_mode);
  }
  if (owns_fd_) ::close(fd_);
  fd_ = fd;
  owns_fd_ = true;
  return {};
}

bool Logger::enabled(LogLevel level) const {
  return level != LogLevel::kOff && level_ != LogLevel::kOff &&
         static_cast<int>(level) <= static_cast<int>(level_);
}

void Logger::write_line(std::string_view line) {
  std::string out;
  out.reserve(line.size() + 12);
  out += "cutriage: ";
  out += line;
  out += '\n';
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report a failing log; never disturb the application
    done += static_cast<size_t>(n);
  }
}

void Logger::log(LogLevel level, std::string_view message) {
  if (!enabled(level)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  write_line(message);
}

void Logger::log_once(LogLevel level, std::string_view key, std::string_view message) {
  if (!enabled(level)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!once_keys_.emplace(key).second) return;
  write_line(message);
}

void Logger::summary(std::string_view line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (level_ == LogLevel::kOff) return;
  write_line(line);
}

}  // namespace cutriage::agent
