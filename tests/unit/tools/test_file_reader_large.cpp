// The file reader past 2 GiB and 4 GiB (issue 25, item 12): a generated source of more than 4 GiB
// of valid records, read through the same loop as a file, without the test holding its bytes.
// Before, the reader copied the file into one string and parsed it with a CodedInputStream sized
// in int: a 2.2 GB file read as "truncated: read 1 complete records".
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "catch.h"
#include "cutriage/v1/cutriage.pb.h"
#include "file_reader.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_file_reader_large {

using namespace cutriage;

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Pieces of bytes, each given `repeat` times in a row, produced on demand.
class GeneratedSource final : public tools::ByteSource {
 public:
  void add(std::string bytes, uint64_t repeat = 1) {
    total_ += bytes.size() * repeat;
    pieces_.push_back({std::move(bytes), repeat});
  }
  [[nodiscard]] uint64_t total() const { return total_; }

  size_t read(char* dst, size_t n) override {
    size_t done = 0;
    while (done < n && index_ < pieces_.size()) {
      const Piece& p = pieces_[index_];
      const size_t take = std::min(n - done, p.bytes.size() - offset_);
      std::copy_n(p.bytes.data() + offset_, take, dst + done);
      done += take;
      offset_ += take;
      if (offset_ == p.bytes.size()) {
        offset_ = 0;
        if (++repeated_ == p.repeat) {
          repeated_ = 0;
          ++index_;
        }
      }
    }
    return done;
  }

 private:
  struct Piece {
    std::string bytes;
    uint64_t repeat;
  };
  std::vector<Piece> pieces_;
  uint64_t total_ = 0;
  size_t index_ = 0;
  size_t offset_ = 0;
  uint64_t repeated_ = 0;
};

}  // namespace

TEST_CASE("file reader: records past 4 GiB are read, and a torn tail there is measured in 64 bits") {
  GeneratedSource source;
  {
    v1::Record header;
    header.mutable_session()->set_host("big-host");
    std::string framed = "\x0a";
    const std::string body = header.SerializeAsString();
    put_varint(framed, body.size());
    source.add(framed + body);
  }
  // Each big record is one InternedString whose `value` field is repeated 4096 times on the wire:
  // protobuf keeps the last, so a 64 MiB record parses into 16 KB and the test's memory stays
  // small while the file grows past 4 GiB.
  const std::string value(16000, 'v');
  std::string value_field = "\x12";
  put_varint(value_field, value.size());
  value_field += value;
  constexpr uint64_t kRepeats = 4096;
  const uint64_t interned_size = 2 + value_field.size() * kRepeats;  // id = 7, then the values
  std::string record_prefix = "\x12";  // Record.interned
  put_varint(record_prefix, interned_size);
  record_prefix += "\x08\x07";
  std::string frame = "\x0a";
  put_varint(frame, record_prefix.size() + interned_size - 2);
  constexpr int kBigRecords = 66;
  for (int i = 0; i < kBigRecords; ++i) {
    source.add(frame + record_prefix);
    source.add(value_field, kRepeats);
  }
  const uint64_t complete = source.total();
  REQUIRE(complete > (uint64_t{1} << 32));
  source.add(std::string("\x0a\x10\x12\x03", 4));  // a record torn after 2 of its 16 bytes

  const tools::ReadResult r = tools::read_cutriage_stream(source);
  CHECK(r.status == tools::ReadStatus::kTruncated);
  CHECK(r.file.records_size() == 1 + kBigRecords);
  CHECK(r.bytes_total == complete + 4);
  CHECK(r.bytes_skipped == 4);
  CHECK(r.message == "truncated: read 67 complete records, skipped the last 4 bytes (a torn or corrupt record)");
  CHECK(tools::lookup(r, 7) == value);
  REQUIRE(r.file.records_size() > 0);
  CHECK(r.file.records(0).session().host() == "big-host");
}

TEST_CASE("file reader: a corrupt length is never allocated before its bytes arrive") {
  // A header, then a record claiming 2 GiB - 1 bytes with 3 behind it.
  v1::Record header;
  header.mutable_session()->set_host("h");
  const std::string body = header.SerializeAsString();
  std::string bytes = "\x0a";
  put_varint(bytes, body.size());
  bytes += body;
  const size_t good = bytes.size();
  bytes += "\x0a";
  put_varint(bytes, 0x7fffffff);
  bytes += "abc";
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  CHECK(r.status == tools::ReadStatus::kTruncated);
  CHECK(r.file.records_size() == 1);
  CHECK(r.bytes_total == bytes.size());
  CHECK(r.bytes_skipped == bytes.size() - good);
}

}  // namespace test_file_reader_large
