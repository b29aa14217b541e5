// `cutriage json`: a cutriage file's records in the proto3 JSON mapping, written record by record
// as they are read (issue 25: memory is one record, whatever the file's size). The text is what
// libprotobuf prints for the whole cutriage.v1.File with whitespace, byte for byte: each record
// is printed on its own and indented into the "records" array.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "file_reader.h"

namespace cutriage::tools {

struct RecordJsonResult {
  StreamedRead read;        // the status and counts of the read (a torn tail: kTruncated)
  std::string print_error;  // a record libprotobuf could not print; the output ends before it
};

// Streams `path` ("-": standard input) to `out`. Nothing is written for a file that is not a
// cutriage file; a torn tail ends the array after the complete records (as a whole read showed
// them); a read error or a record that cannot be printed ends the output where it happened, not
// as valid JSON (the caller says so and exits non-zero). Once `out` fails nothing more is printed
// (the caller checks it).
RecordJsonResult write_records_json(const std::string& path, std::ostream& out);
// The same from a file's bytes in memory (tests, fuzzers).
RecordJsonResult write_records_json_bytes(std::string_view bytes, std::ostream& out);

}  // namespace cutriage::tools
