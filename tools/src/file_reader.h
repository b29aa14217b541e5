// Reads a cutriage file (a cutriage.v1.File written record by record) with the libprotobuf
// classes, salvaging every complete record of a file whose writer died mid-record, and indexes
// what the views need: interned strings, kernel families by id, the trace chunks, the trace
// summary, the current record of each profiled launch (the highest revision wins) and of each
// deep-capture request (the last one of its id). ReadScope says whether every record is kept or
// only those (then memory is bounded by what the views show, not by the file's length).
// stream_cutriage_records hands the records over one at a time and keeps none, for the commands
// that print each record as it is read (`cutriage json`, the trace export's passes).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cutriage/v1/cutriage.pb.h"

namespace cutriage::tools {

enum class ReadStatus : uint8_t {
  kOk,
  kTruncated,      // complete records read; a torn or corrupt tail was skipped
  kNotCutriage,    // the first bytes are not a cutriage record stream (or the file is empty)
  kUnreadable,     // missing file or I/O error
};

// What a read keeps of the records: every one, or what the views that show the current state need.
enum class ReadScope : uint8_t {
  // Every record as written, every revision: the trace export of a pipe (which cannot read its
  // trace again), `triage --report`, the tests. The commands that print every record stream them
  // instead (stream_cutriage_records).
  kEverything,
  // The current state, for the report (and its HTML page), diff, pprof and the trace export (which
  // reads the chunks again): memory holds the records they can show, not the file. Dropped as they
  // stream past: a TraceChunk's events (its count and pauses are kept; from a source read once,
  // ByteSource::rereadable, the events are also folded into the statistics a missing trace summary
  // is recomputed from, ReadResult::recomputed_summary); a KernelProfile of a lower revision than
  // its launch's highest so far, an earlier record of a ControlRequest id, an earlier definition
  // of a KernelFamily, an earlier TraceSummary; an InternedString record once its string is in
  // `interned`. What is kept reads as with kEverything: the same indexes, accessors and views'
  // output.
  kCurrent,
};

// The indexes below hold positions in `file.records()`, not pointers, so a ReadResult stays
// self-consistent when it is copied or moved.
struct ReadResult {
  ReadStatus status = ReadStatus::kOk;
  std::string message;          // one line for the user when status != kOk
  cutriage::v1::File file;      // the complete records kept (ReadScope), in order
  uint64_t records_read = 0;    // complete records read, kept or not
  uint64_t bytes_total = 0;
  uint64_t bytes_skipped = 0;   // the torn tail
  std::map<uint64_t, std::string> interned;  // resolved InternedString records
  std::map<uint64_t, int> family_records;    // KernelFamily.id -> record (the last definition)
  std::vector<int> trace_records;            // TraceChunk records kept, in file order
  uint64_t trace_chunks = 0;                 // TraceChunk records read, kept or not
  // The TraceChunks' events were dropped (ReadScope::kCurrent): only a file with a trace summary
  // (or a recomputed one) reads whole without them. needs_trace_events() says when the file must
  // be read again (fold_trace_events, trace_fold.h).
  bool trace_events_dropped = false;
  // The trace summary of a file that has a trace but none written (a run killed before its end),
  // recomputed from its events without holding them: folded as they were read from a source read
  // once, or by fold_trace_events reading the file again. recompute_summary() returns it.
  std::optional<cutriage::v1::TraceSummary> recomputed_summary;
  // The pauses of a duty-cycled trace (every TraceChunk.untraced), [start, end) on the trace
  // clock, sorted; kept whatever the scope.
  std::vector<std::pair<uint64_t, uint64_t>> pauses;
  int trace_summary_record = -1;             // the last TraceSummary record; -1: none
  // KernelProfile records that are current, in file order: of the records of one launch (same
  // launch_index and kernel), those with the highest revision. A revision is the agent's rewrite
  // of a record at the end of the session; equal revisions of one launch (two ncu captures
  // imported together whose IDs coincide) are all kept, as before revisions existed.
  std::vector<int> kernel_records;
  // ControlRequest records by id: the last record of each id (a request is written when it is
  // taken and again, with its outcome, when its window closes).
  std::map<uint64_t, int> control_records;
  // SessionHeader.segment_index: 1, 2, ... for a segment of a rotated run; 0 = the whole run.
  uint32_t segment_index = 0;
};

// Where a file's bytes come from, read once front to back (a descriptor, memory, a test's
// generator). The reader holds one buffer and one record of it at a time, and counts offsets in
// 64 bits, so a file's size is not limited by memory or by int.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `n` bytes into `dst`; the count, 0 at the end (or after an I/O error: see failed()).
  virtual size_t read(char* dst, size_t n) = 0;
  [[nodiscard]] virtual bool failed() const { return false; }
  // Skips to the end and returns how many bytes were left (to measure a torn or corrupt tail).
  // This one reads them; a regular file seeks instead.
  virtual uint64_t skip_rest();
  // Whether the same bytes can be read again (a regular file, by its name): only then may a read
  // leave to a later one what it drops (ReadScope::kCurrent's trace events, folded by a second
  // read when needed); a source read once has them folded as they pass.
  [[nodiscard]] virtual bool rereadable() const { return false; }
};

// Sees every complete record as it is read, before the scope keeps or drops it (the HTML page's
// timeline takes its executions this way).
using RecordObserver = std::function<void(const cutriage::v1::Record&)>;

ReadResult read_cutriage_stream(ByteSource& source, ReadScope scope = ReadScope::kEverything,
                                const RecordObserver& observe = {});
ReadResult read_cutriage_bytes(std::string_view bytes, ReadScope scope = ReadScope::kEverything);
// Streams the file (a regular file, a pipe; "-" is standard input): memory holds the records
// kept, never a copy of it.
ReadResult read_cutriage_file(const std::string& path, ReadScope scope = ReadScope::kEverything,
                              const RecordObserver& observe = {});

// What a record-by-record read found, without the records: ReadResult's status and counts.
struct StreamedRead {
  ReadStatus status = ReadStatus::kOk;
  std::string message;  // one line for the user when status != kOk
  uint64_t records_read = 0;
  uint64_t bytes_total = 0;
  uint64_t bytes_skipped = 0;
};
// Each complete record, in file order, the sink's to read or move from; nothing is kept. A
// source whose first record is not a session header gives the sink nothing (kNotCutriage). A
// torn tail, a read error or a corrupt record ends the stream after the records before it: the
// sink has seen those (a streaming command's output is then the records before the fault).
using RecordSink = std::function<void(cutriage::v1::Record&)>;
StreamedRead stream_cutriage_records(ByteSource& source, const RecordSink& each);
StreamedRead stream_cutriage_file(const std::string& path, const RecordSink& each);
StreamedRead stream_cutriage_bytes(std::string_view bytes, const RecordSink& each);
// Whether `path` can be read a second time and give the same bytes: a regular file by its name
// (not a pipe, a FIFO, or "-").
bool rereadable_path(const std::string& path);

// Whether a view needs the trace events a kCurrent read dropped: the file has a trace but no
// summary (a run killed before its end, a segment before a rotated run's last), which the views
// recompute from the events, and none was folded while it was read. Its reader then folds them
// in a second read, record by record (fold_trace_events, trace_fold.h).
bool needs_trace_events(const ReadResult& r);
// One file for the views of the current state: read with kCurrent, its events folded in a second
// read when it needs them (a run of several files decides per process instead: multi_file.h).
ReadResult read_cutriage_file_current(const std::string& path, const RecordObserver& observe = {});

// Resolves an interned id; "" for 0 or an id never defined.
std::string_view lookup(const ReadResult& r, uint64_t iid);

// The family with this id; null for 0 or an id never defined.
const cutriage::v1::KernelFamily* find_family(const ReadResult& r, uint64_t id);
// A family's name for people: its display name, else its mangled name, else "family N".
std::string family_name(const ReadResult& r, uint64_t id);
// The trace summary; null when the file has none (a run without tracing, or one that was killed).
const cutriage::v1::TraceSummary* trace_summary(const ReadResult& r);
// The current KernelProfile records (see ReadResult::kernel_records), in file order.
std::vector<const cutriage::v1::KernelProfile*> current_kernels(const ReadResult& r);
// The deep-capture requests in their latest state (see ReadResult::control_records), by id.
std::vector<const cutriage::v1::ControlRequest*> control_requests(const ReadResult& r);
// ReadResult::pauses; and their starts alone, sorted, for triage::cut_at_pause.
std::vector<std::pair<uint64_t, uint64_t>> trace_pauses(const ReadResult& r);
std::vector<uint64_t> trace_pause_starts(const ReadResult& r);
// Pointer-returning accessors must not outlive `r`: a temporary ReadResult does not compile.
const cutriage::v1::KernelFamily* find_family(const ReadResult&& r, uint64_t id) = delete;
const cutriage::v1::TraceSummary* trace_summary(const ReadResult&& r) = delete;
std::vector<const cutriage::v1::KernelProfile*> current_kernels(const ReadResult&& r) = delete;
std::vector<const cutriage::v1::ControlRequest*> control_requests(const ReadResult&& r) = delete;

}  // namespace cutriage::tools
