#include "file_reader.h"

#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>

namespace cutriage::tools {

namespace {

constexpr uint32_t kRecordTag = (1u << 3) | 2u;  // File.records, length-delimited

}  // namespace

ReadResult read_cutriage_bytes(std::string_view bytes) {
  ReadResult r;
  r.bytes_total = bytes.size();
  if (bytes.empty()) {
    r.status = ReadStatus::kNotCutriage;
    r.message = "the file is empty";
    return r;
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT32_MAX);
  uint64_t good_end = 0;
  while (good_end < bytes.size()) {
    uint32_t tag = in.ReadTag();
    uint32_t length = 0;
    bool framed = tag == kRecordTag && in.ReadVarint32(&length);
    auto pos = static_cast<uint64_t>(in.CurrentPosition());
    bool complete = framed && pos + length <= bytes.size();
    cutriage::v1::Record record;
    bool parsed = complete && record.ParseFromArray(bytes.data() + pos, static_cast<int>(length)) &&
                  record.payload_case() != cutriage::v1::Record::PAYLOAD_NOT_SET;
    if (!parsed) {
      if (r.file.records_size() == 0) {
        r.status = ReadStatus::kNotCutriage;
        r.message = "not a cutriage file (no cutriage.v1 record at the start)";
        return r;
      }
      break;
    }
    if (r.file.records_size() == 0 && !record.has_session()) {
      r.status = ReadStatus::kNotCutriage;
      r.message = "not a cutriage file (the first record is not a session header)";
      return r;
    }
    if (record.has_interned()) r.interned[record.interned().id()] = record.interned().value();
    *r.file.add_records() = std::move(record);
    in.Skip(static_cast<int>(length));
    good_end = pos + length;
  }
  r.bytes_skipped = bytes.size() - good_end;
  if (r.bytes_skipped > 0) {
    r.status = ReadStatus::kTruncated;
    r.message = "truncated: read " + std::to_string(r.file.records_size()) +
                " complete records, skipped the last " + std::to_string(r.bytes_skipped) +
                " bytes (a torn or corrupt record)";
  }
  return r;
}

ReadResult read_cutriage_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    ReadResult r;
    r.status = ReadStatus::kUnreadable;
    r.message = "cannot open '" + path + "'";
    return r;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) {
    ReadResult r;
    r.status = ReadStatus::kUnreadable;
    r.message = "error reading '" + path + "'";
    return r;
  }
  return read_cutriage_bytes(ss.str());
}

std::string_view lookup(const ReadResult& r, uint64_t iid) {
  auto it = r.interned.find(iid);
  return it == r.interned.end() ? std::string_view{} : std::string_view{it->second};
}

}  // namespace cutriage::tools
