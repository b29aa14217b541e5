#include "record_output.h"

namespace cutriage::agent {

RecordOutput::RecordOutput(std::unique_ptr<RecordSink> sink, bool segmented, HeaderSource header)
    : sink_(std::move(sink)), header_(std::move(header)), segment_index_(segmented ? 1 : 0) {}

void RecordOutput::write_kernel(const wire::KernelRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked([&] { return encoder_.kernel(record); });
}

void RecordOutput::write_notice(const wire::Notice& notice) {
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked([&] { return encoder_.notice(notice); });
}

void RecordOutput::write_control(const wire::ControlRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked([&] { return encoder_.control(request); });
}

void RecordOutput::write_trace_summary(const wire::TraceSummary& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked([&] { return encoder_.trace_summary(summary); });
}

void RecordOutput::write_chunk(const wire::TraceChunk& chunk, const std::vector<wire::FamilyDef>& families) {
  std::lock_guard<std::mutex> lock(mutex_);
  rotate_if_due_locked();
  ensure_header_locked();
  for (const wire::FamilyDef& f : families) {
    if (!defined_ids_.insert(f.id).second) continue;
    defined_.push_back(f);
    if (sink_) sink_->append(encoder_.family(f));
  }
  if (sink_) sink_->append(encoder_.trace_chunk(chunk));
}

void RecordOutput::close(const wire::SessionEnd& end, bool write_end) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (write_end) write_locked([&] { return encoder_.session_end(end); });
  if (sink_) {
    sink_->close();
    encoder_ = wire::RecordEncoder();
    header_written_ = false;
  }
}

void RecordOutput::write_locked(const std::function<std::string()>& encode) {
  rotate_if_due_locked();
  ensure_header_locked();
  std::string bytes = encode();
  if (sink_) sink_->append(bytes);
}

void RecordOutput::rotate_if_due_locked() {
  if (!sink_ || !sink_->rotation_due()) return;
  sink_->rotate();
  ++segment_index_;
  encoder_ = wire::RecordEncoder();
  header_written_ = false;
  ensure_header_locked();
}

void RecordOutput::ensure_header_locked() {
  if (header_written_) return;
  header_written_ = true;
  const wire::SessionInfo s = header_(segment_index_);
  if (!sink_) return;
  sink_->append(encoder_.session(s));
  // A new segment (rotation, or records after close()) reads on its own: the families its
  // records may name are defined again, with its own interning.
  for (const wire::FamilyDef& f : defined_) sink_->append(encoder_.family(f));
}

}  // namespace cutriage::agent
