// `cutriage trace`: the file's GPU trace as Chrome trace event JSON, which Perfetto's UI and trace
// processor (and chrome://tracing) open.
//
// Layout of the output:
//  - one process per GPU, named "GPU 0 — NVIDIA H200" (pid = device + 2); one thread per stream,
//    named "stream 7" (tid = stream id), holding that stream's kernels and copies;
//  - one process "CPU" (pid 1) with one thread per OS thread that opened NVTX ranges
//    (tid = OS thread id, named "thread 1234"), the ranges nested by time;
//  - complete events ("ph":"X"), ts and dur in microseconds with three decimals (nanosecond
//    resolution), ts relative to the earliest event of the file, in time order (all tracks
//    together); "M" events name processes (before the events) and threads (after them, once every
//    lane is known).
// A track never holds events that overlap without nesting (Perfetto would drop them): kernels of
// one stream that ran at the same time (nodes of one CUDA graph) go to extra threads
// "stream 7 (concurrent 2)"; NVTX ranges that cross instead of nesting (start/end ranges) to
// "thread 1234 (overlapping 2)". Each CUDA graph launch is also one slice (category "graph") on
// its graph's track in the GPU's process, "CUDA graph 2 (its launches)", from its first node's
// start to its last node's end, with its kernels, copies and kernel time in its args; these
// slices come after the other events. Profiled launches (replayed: their durations include the
// profiler's replay) carry the category "profiled" and "replayed": true in their args. Files of
// agents before 2026-12-01 hold no execution of a profiled launch (CUPTI delivers its record
// without timestamps and those agents dropped it): such a launch is drawn from its KernelProfile
// record across the gap between the launches before and after it on its stream (stream order and
// correlation ids give the place), with "placed": true in its args, so the replay's time does not
// read as idle.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "file_reader.h"
#include "multi_file.h"

namespace cutriage::tools {

struct TraceExportStats {
  uint64_t kernels = 0;
  uint64_t copies = 0;
  uint64_t nvtx_ranges = 0;
  uint64_t extra_tracks = 0;  // overflow threads for overlapping events (see above)
  uint64_t trace_pauses = 0;  // pauses of a duty-cycled trace, on the "cutriage" track
  uint64_t graph_launches = 0;  // CUDA graph launches drawn as workloads on their graphs' tracks
  // Profiled launches without an execution in the trace (files of agents before 2026-12-01),
  // drawn from their KernelProfile records in the gap their replay left; and those left out
  // (no other event on their stream to place them by).
  uint64_t placed_profiled = 0;
  uint64_t unplaced_profiled = 0;
};

struct TraceExportError {
  enum class Kind : uint8_t {
    kNoTrace,      // the file has no TraceChunk: the run was made without tracing
    kWriteFailed,  // the stream went bad while writing
    kReadFailed,   // a file could not be read again (it was removed or replaced meanwhile)
  };
  Kind kind = Kind::kNoTrace;
  std::string message;  // one line for the user
};

// Writes the trace of `file` to `out`, event by event. Memory holds neither the JSON nor the
// events (issue 25): a first pass over the trace chunks finds the earliest event (the output's
// zero), the tracks and where profiled launches without an execution go; a second writes the
// events, each waiting in a window of 65,536 to be put in time order for its track's lanes. The
// chunks are `file`'s when it holds them (read with ReadScope::kEverything); read with kCurrent it
// holds none, and `paths` (its file, or a process's segments in order) are read again, one record
// at a time, for each pass. Returns the error, or nothing on success with `stats` (optional)
// filled.
std::optional<TraceExportError> export_chrome_trace(const ReadResult& file, std::ostream& out,
                                                    TraceExportStats* stats = nullptr,
                                                    const std::vector<std::string>* paths = nullptr);

// Several processes in one trace (`cutriage trace A.pb B.pb ...`, the files grouped by
// multi_file.h: segments of one process already merged; read with kCurrent, each process's chunks
// are read again from its paths, ProcessRun::segment_iids renumbering a segment's strings). One process with a trace writes what
// export_chrome_trace writes for it. Several: each process's GPUs, CPU and pause track are its own
// trace processes, named after it ("host:1234 GPU 0 — NVIDIA H200"), their pids moved up by
// 1,000,000 per process (the first keeps the one-file pids); times are on one clock, the Unix time
// of the earliest first event of them all (SessionHeader.start_time_unix_ns and
// trace_clock_at_start_ns tie each file's trace clock to it), so the ranks of a job line up.
// otherData lists the processes (name, pid_base, files, offset_ns, ...). Processes without a trace
// are left out with a note in `notes`; none with a trace is kNoTrace.
std::optional<TraceExportError> export_chrome_trace_runs(const std::vector<ProcessRun>& runs, std::ostream& out,
                                                         TraceExportStats* stats = nullptr,
                                                         std::vector<std::string>* notes = nullptr);

// `s` as a JSON string literal, quotes included: ", \ and control characters escaped; bytes that
// are not UTF-8 replaced by U+FFFD (a JSON text must be UTF-8).
std::string json_string(std::string_view s);

}  // namespace cutriage::tools
