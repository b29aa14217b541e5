// The agent's only way to print. Everything goes to one place (stderr or CUTRIAGE_LOG_FILE), one
// whole line per write(2) so lines from several threads never interleave, every line prefixed
// "cutriage: " so users can tell it from their application's output. `once` keys let a message
// that could repeat per launch appear a single time.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "config.h"

namespace cutriage::agent {

class Logger {
 public:
  // Writes to `fd` (2 = stderr) until configure() opens a file.
  Logger() = default;
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Opens `file` (append) when not empty: a regular file, or a new one; never a symbolic link, a
  // FIFO or a device, and never blocking. Returns an error message naming CUTRIAGE_LOG_FILE,
  // empty on success; on failure the logger keeps writing to stderr (the agent then stays off).
  std::string configure(LogLevel level, const std::string& file);

  void error(std::string_view message) { log(LogLevel::kError, message); }
  void warn(std::string_view message) { log(LogLevel::kWarn, message); }
  void info(std::string_view message) { log(LogLevel::kInfo, message); }
  void debug(std::string_view message) { log(LogLevel::kDebug, message); }
  void log(LogLevel level, std::string_view message);
  // Logs `message` only the first time `key` is seen.
  void log_once(LogLevel level, std::string_view key, std::string_view message);
  // The exit summary: printed regardless of the level unless the level is off.
  void summary(std::string_view line);

  [[nodiscard]] bool enabled(LogLevel level) const;

 private:
  void write_line(std::string_view line);

  std::mutex mutex_;
  int fd_ = 2;
  bool owns_fd_ = false;
  LogLevel level_ = LogLevel::kWarn;
  std::set<std::string, std::less<>> once_keys_;
};

}  // namespace cutriage::agent
