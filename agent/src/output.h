// Where the agent's records go. Records are written as they complete, each with its own write(2)
// calls and no user-space buffering, so a crash or kill loses at most the record being written
// (the reader salvages the complete prefix).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace cutriage::agent {

class Logger;

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Appends `bytes`. Returns false once the sink has failed; it then stays failed and later calls
  // are no-ops (the caller keeps profiling; results are just not saved).
  virtual bool append(std::string_view bytes) = 0;
  [[nodiscard]] virtual std::string describe() const = 0;  // the path, for messages
  [[nodiscard]] virtual bool failed() const = 0;
};

// A file created (truncated) on the first append. Failures (cannot create, disk full) are logged
// once as an error naming the path and the reason.
std::unique_ptr<RecordSink> make_file_sink(std::string path, Logger& log);

}  // namespace cutriage::agent
