// Encodes cutriage.v1 records (proto/cutriage/v1/cutriage.proto) with protozero, header-only, so
// the injected agent needs no libprotobuf. The schema file stays the single source of truth: the
// tests parse this writer's output with the libprotobuf-generated classes field by field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cutriage/wire/records.h"

namespace cutriage::wire {

// Produces the bytes of a cutriage file, one record at a time. Each call returns the bytes to
// append (complete `File.records` fields), so a caller can write them out immediately and a
// crash loses at most the record being written. Strings repeated across records are interned;
// the InternedString records they need come first in the returned bytes.
class RecordEncoder {
 public:
  std::string session(const SessionInfo& session);
  std::string kernel(const KernelRecord& kernel);
  std::string notice(const Notice& notice);
  std::string session_end(const SessionEnd& end);
  std::string family(const FamilyDef& family);
  std::string trace_chunk(const TraceChunk& chunk);
  std::string trace_summary(const TraceSummary& summary);
  std::string control(const ControlRequest& request);

 private:
  uint64_t intern(std::string_view value, std::string& out);
  std::unordered_map<std::string, uint64_t> interned_;
  uint64_t next_id_ = 1;
};

}  // namespace cutriage::wire
