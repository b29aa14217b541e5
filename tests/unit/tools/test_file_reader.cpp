// Salvage rules of the cutriage file reader: complete records survive a torn tail; anything that
// is not a cutriage record stream is refused with a clear message.
#include <string>

#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_file_reader {

using namespace cutriage;

namespace {

std::string two_kernel_file(size_t* first_kernel_end = nullptr) {
  wire::RecordEncoder enc;
  wire::SessionInfo s;
  s.host = "h";
  std::string bytes = enc.session(s);
  wire::KernelRecord k;
  k.input.function_name = "first";
  k.input.metrics.set("a.sum", 1);
  bytes += enc.kernel(k);
  if (first_kernel_end != nullptr) *first_kernel_end = bytes.size();
  k.input.function_name = "second";
  bytes += enc.kernel(k);
  return bytes;
}

int count_kernels(const tools::ReadResult& r) {
  int n = 0;
  for (const auto& rec : r.file.records()) n += rec.has_kernel() ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("a complete file reads without loss", "[reader]") {
  tools::ReadResult r = tools::read_cutriage_bytes(two_kernel_file());
  CHECK(r.status == tools::ReadStatus::kOk);
  CHECK(count_kernels(r) == 2);
  CHECK(r.bytes_skipped == 0);
}

TEST_CASE("a torn last record is skipped and counted", "[reader]") {
  size_t first_end = 0;
  std::string bytes = two_kernel_file(&first_end);
  // Cut three bytes before the end: inside the second kernel's record (the interned name record
  // that precedes it stays complete and is kept).
  std::string torn = bytes.substr(0, bytes.size() - 3);
  tools::ReadResult r = tools::read_cutriage_bytes(torn);
  CHECK(r.status == tools::ReadStatus::kTruncated);
  CHECK(count_kernels(r) == 1);
  CHECK(r.bytes_skipped > 0);
  CHECK(r.bytes_skipped < bytes.size() - first_end);
  CHECK(r.bytes_total == torn.size());
  CHECK(r.message.find("skipped the last " + std::to_string(r.bytes_skipped) + " bytes") !=
        std::string::npos);
}

TEST_CASE("files that are not cutriage files are refused", "[reader]") {
  CHECK(tools::read_cutriage_bytes("").status == tools::ReadStatus::kNotCutriage);
  CHECK(tools::read_cutriage_bytes("\"ID\",\"Kernel Name\"\n1,2\n").status ==
        tools::ReadStatus::kNotCutriage);
  std::string noise(64, '\xff');
  CHECK(tools::read_cutriage_bytes(noise).status == tools::ReadStatus::kNotCutriage);
  // A valid record stream that does not start with a session header is not ours either.
  wire::RecordEncoder enc;
  wire::KernelRecord k;
  k.input.function_name = "orphan";
  tools::ReadResult r = tools::read_cutriage_bytes(enc.kernel(k));
  CHECK(r.status == tools::ReadStatus::kNotCutriage);
  CHECK(r.message.find("session header") != std::string::npos);
}

TEST_CASE("a missing file is unreadable, not empty", "[reader]") {
  tools::ReadResult r = tools::read_cutriage_file("/nonexistent/dir/file.pb");
  CHECK(r.status == tools::ReadStatus::kUnreadable);
  CHECK(r.message.find("cannot open") != std::string::npos);
}

}  // namespace test_file_reader
