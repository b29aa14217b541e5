// Where the agent's records go. Records are written as they complete, each with its own write(2)
// calls and no user-space buffering, so a crash or kill loses at most the record being written
// (the reader salvages the complete prefix).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
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
  // Segmented sinks: whether the current segment is full (size or age), so that the writer starts
  // the next one at a record boundary (a segment must be a complete file on its own: the writer
  // writes a header and its interned strings again after rotate()).
  [[nodiscard]] virtual bool rotation_due() const { return false; }
  // Publishes the current segment and opens the next (on its first append).
  virtual void rotate() {}
  // Publishes what is written so far (the last segment); appends after it start a new segment.
  virtual void close() {}
};

// Rotating protobuf segments for a long-running process (CUTRIAGE_SEGMENT_*).
struct SegmentOptions {
  uint64_t max_bytes = 0;     // rotate beyond this size (0: no size limit)
  uint64_t max_seconds = 0;   // rotate segments older than this (0: no age limit)
  uint32_t keep = 0;          // published segments kept, oldest deleted first (0: all)
  // Monotonic clock in seconds; tests pass a fake.
  std::function<double()> now_seconds;
};

// How the agent creates its output files (open_output_file below).
struct OutputFileOptions {
  // Permission bits of a file the agent creates (CUTRIAGE_OUTPUT_MODE): owner only by default,
  // since a file holds the command line and host name and arguments can carry secrets.
  unsigned mode = 0600;
  // Set when the path pattern has %n: the path for sequence number n. The first append then
  // claims the first free number with O_EXCL, so two processes expanding the pattern at once
  // never share a file (the `path` given to the sink is only the number seen free at start).
  std::function<std::string(uint64_t)> sequence;
};

// Opens `path` for writing as an output of the agent: never through a symbolic link
// (O_NOFOLLOW), never blocking (a FIFO is refused, not waited on), only a regular file. With
// `exclusive`, only a file it creates (O_EXCL: false with errno EEXIST when the name is taken);
// otherwise an existing regular file is truncated and given `mode`. Returns the descriptor, or -1
// with *error saying why (errno is kept). The file stays under an exclusive flock(2) while the
// descriptor is open; one that another open descriptor holds (another live agent writing it) is
// left as it is: -1 with errno EBUSY.
int open_output_file(const std::string& path, bool exclusive, unsigned mode, std::string* error);

// `path` with ".PID" before its extension ("out.pb" -> "out.1897.pb"; "out" -> "out.1897"): where
// a process writes when another live process holds `path`.
std::string with_pid(const std::string& path, long pid);

// A file created (truncated) on the first append, through open_output_file; when another process
// is writing that name, with_pid(path) instead (a warning names both). Failures (cannot
// create, not a regular file, disk full) are logged once as an error naming the path and the
// reason.
std::unique_ptr<RecordSink> make_file_sink(std::string path, Logger& log, OutputFileOptions options = {});

// Segments of `path` ("out.pb"): written as ".out.000001.pb.partial" in the same directory, each
// published by rename(2) to "out.000001.pb" when it is rotated or closed, so a reader listing
// *.pb never sees a half-written file; beyond `keep`, the oldest published segments are deleted.
std::unique_ptr<RecordSink> make_segment_sink(std::string path, SegmentOptions options, Logger& log,
                                              unsigned mode = 0600);
// The name of segment `n` (1-based) of `path`, published or in progress.
std::string segment_path(const std::string& path, uint64_t n, bool partial);
// The published segments of `path` found on disk, oldest first (names as segment_path gives them).
std::vector<std::string> published_segments(const std::string& path);

}  // namespace cutriage::agent
