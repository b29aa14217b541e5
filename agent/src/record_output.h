// The agent's file: encodes records (with their interned strings) and appends them to the sink,
// one record at a time, in the order they are written.
//
// Owns the encoder, the sink and which family definitions the file (or the current segment)
// holds, behind one mutex. Every record is preceded by the session header once per file or
// segment; a segmented sink starts its next segment at a record boundary with the header, the
// interned strings and every family defined so far again, so that each segment reads on its own.
// The header comes from a callback, called under the output's mutex (so it must not write).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cutriage/wire/records.h"
#include "cutriage/wire/writer.h"
#include "output.h"

namespace cutriage::agent {

class RecordOutput {
 public:
  // The header of a file or segment (`segment_index`: 1, 2, ... with segments; 0 = one file).
  using HeaderSource = std::function<wire::SessionInfo(uint32_t segment_index)>;
  RecordOutput(std::unique_ptr<RecordSink> sink, bool segmented, HeaderSource header);

  void write_kernel(const wire::KernelRecord& record);
  void write_notice(const wire::Notice& notice);
  void write_control(const wire::ControlRequest& request);
  void write_trace_summary(const wire::TraceSummary& summary);
  // A trace chunk, after the definitions of the families its executions reference (`families`:
  // those of the chunk's executions; each is defined once per file or segment).
  void write_chunk(const wire::TraceChunk& chunk, const std::vector<wire::FamilyDef>& families);
  // The session end (unless `write_end` is false), then publishes what was written: anything
  // written later (a late callback) starts a file or segment of its own.
  void close(const wire::SessionEnd& end, bool write_end);

  [[nodiscard]] bool has_sink() const { return sink_ != nullptr; }
  [[nodiscard]] std::string describe() const { return sink_ ? sink_->describe() : ""; }
  [[nodiscard]] bool failed() const { return sink_ && sink_->failed(); }

 private:
  // Encodes (after any segment rotation, so the bytes use the new segment's interning) and
  // appends one record (mutex_ held).
  void write_locked(const std::function<std::string()>& encode);
  void rotate_if_due_locked();
  void ensure_header_locked();

  mutable std::mutex mutex_;
  std::unique_ptr<RecordSink> sink_;
  HeaderSource header_;
  wire::RecordEncoder encoder_;
  bool header_written_ = false;
  std::vector<wire::FamilyDef> defined_;  // families defined in the file, in order
  std::set<uint64_t> defined_ids_;
  uint32_t segment_index_ = 0;            // 1, 2, ... with segments; 0 = one file
};

}  // namespace cutriage::agent
