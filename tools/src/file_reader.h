// Reads a cutriage file (a cutriage.v1.File written record by record) with the libprotobuf
// classes, salvaging every complete record of a file whose writer died mid-record.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/v1/cutriage.pb.h"

namespace cutriage::tools {

enum class ReadStatus : uint8_t {
  kOk,
  kTruncated,      // complete records read; a torn or corrupt tail was skipped
  kNotCutriage,    // the first bytes are not a cutriage record stream (or the file is empty)
  kUnreadable,     // missing file or I/O error
};

struct ReadResult {
  ReadStatus status = ReadStatus::kOk;
  std::string message;          // one line for the user when status != kOk
  cutriage::v1::File file;      // the complete records, in order
  uint64_t bytes_total = 0;
  uint64_t bytes_skipped = 0;   // the torn tail
  std::map<uint64_t, std::string> interned;  // resolved InternedString records
};

ReadResult read_cutriage_bytes(std::string_view bytes);
ReadResult read_cutriage_file(const std::string& path);

// Resolves an interned id; "" for 0 or an id never defined.
std::string_view lookup(const ReadResult& r, uint64_t iid);

}  // namespace cutriage::tools
