// `cutriage trace` (trace_export.h) from C++: errors, string escaping, and the lane rules on inputs
// the Python test (tests/cli/test_trace_export.py) does not build. Inputs are SYNTHETIC.
#include <chrono>
#include <sstream>
#include <string>

#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "trace_export.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_trace_export {

using namespace cutriage;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("trace export: a file without a trace is an error, and nothing is written", "[trace_export]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_trace_session());
  bytes += enc.kernel(testing::synthetic_profiled_gemm(0, "memory_bound: x"));
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  std::ostringstream out;
  auto error = tools::export_chrome_trace(r, out);
  REQUIRE(error.has_value());
  CHECK(error->kind == tools::TraceExportError::Kind::kNoTrace);
  CHECK(error->message.find("without tracing") != std::string::npos);
  CHECK(out.str().empty());
}

TEST_CASE("trace export: a stream that fails is reported", "[trace_export]") {
  const std::string bytes = testing::synthetic_trace_file();
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  auto error = tools::export_chrome_trace(r, out);
  REQUIRE(error.has_value());
  CHECK(error->kind == tools::TraceExportError::Kind::kWriteFailed);
}

TEST_CASE("trace export: JSON strings are escaped the way Perfetto's tokenizer reads them",
          "[trace_export]") {
  CHECK(tools::json_string("plain") == "\"plain\"");
  CHECK(tools::json_string("q\"b\\") == "\"q\\\"b\\\\\"");
  CHECK(tools::json_string("a\nb\tc\r\b\f") == "\"a\\nb\\tc\\r\\b\\f\"");
  // No \u escapes: other control characters and bytes that are not UTF-8 become U+FFFD.
  CHECK(tools::json_string(std::string("x\x01y\x7fz", 5)) == "\"x\xEF\xBF\xBDy\xEF\xBF\xBDz\"");
  CHECK(tools::json_string("caf\xe9") == "\"caf\xEF\xBF\xBD\"");
  CHECK(tools::json_string("pr\xC3\xA9" "fetch \xE2\x9C\x93") == "\"pr\xC3\xA9" "fetch \xE2\x9C\x93\"");
}

TEST_CASE("trace export: many events at once stay valid and cheap (lanes)", "[trace_export]") {
  // 2,000 kernels of one stream all running at once (a pathological file) and 200 NVTX
  // start/end ranges each crossing the next: every event gets a lane where it neither overlaps
  // (GPU) nor crosses (NVTX) another, without a quadratic search.
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_trace_session());
  bytes += enc.family({1, "_Z1kv", "k", 0, {32, 1, 1}});
  wire::TraceChunk chunk;
  for (uint64_t i = 0; i < 2000; ++i) {
    chunk.kernels.push_back({1, 1'000 + i, 1'000'000 + i, 7, 1, i, {1, 1, 1}, 0, 0, false, ""});
  }
  for (uint64_t i = 0; i < 200; ++i) {
    chunk.nvtx_ranges.push_back({"r", 1'000 + 10 * i, 5'000 + 10 * i, 99, 0, ""});
  }
  bytes += enc.trace_chunk(chunk);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::ostringstream out;
  tools::TraceExportStats stats;
  const auto start = std::chrono::steady_clock::now();
  REQUIRE_FALSE(tools::export_chrome_trace(r, out, &stats).has_value());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  const std::string json = out.str();
  CHECK(stats.kernels == 2000);
  CHECK(stats.nvtx_ranges == 200);
  // Every lane is a named thread: one per GPU track and NVTX thread, plus the extra ones.
  CHECK(count(json, "\"name\":\"thread_name\"") == 2 + stats.extra_tracks);
  // Each kernel overlaps all others: one thread per kernel.
  CHECK(count(json, "\"stream 7 (concurrent ") == 1999);
  CHECK(json.find("\"stream 7 (concurrent 2000)\"") != std::string::npos);
  // Each range crosses the ones around it; past 64 nested lanes the overflow lanes hold no overlap.
  CHECK(json.find("\"thread 99\"") != std::string::npos);
  CHECK(json.find("\"thread 99 (overlapping 2)\"") != std::string::npos);
  CHECK(json.rfind("{\"traceEvents\":[\n", 0) == 0);
  CHECK(json.find("NaN") == std::string::npos);
  CHECK(json.find("inf") == std::string::npos);
}

TEST_CASE("trace export: times are microseconds from the earliest event, exact to the nanosecond",
          "[trace_export]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_trace_file());
  std::ostringstream out;
  REQUIRE_FALSE(tools::export_chrome_trace(r, out).has_value());
  const std::string json = out.str();
  // The earliest event is the NVTX range "train" (second chunk): ts 0.
  CHECK(json.find("{\"ph\":\"X\",\"ts\":0.000,\"dur\":2000.000,\"pid\":1,\"tid\":4242,\"name\":\"train\"") !=
        std::string::npos);
  // reduce at +10 us for 5 us on GPU 0 (pid 2), stream 13.
  CHECK(json.find("{\"ph\":\"X\",\"ts\":10.000,\"dur\":5.000,\"pid\":2,\"tid\":13,\"name\":\"reduce\"") !=
        std::string::npos);
  // The profiled launch.
  CHECK(json.find("\"ts\":500.000,\"dur\":60.000,\"pid\":2,\"tid\":7,\"name\":\"gemm<128>\",\"cat\":\"profiled\"") !=
        std::string::npos);
  CHECK(json.find("\"time_origin_unix_ns\":1700000000000001000") != std::string::npos);
}

TEST_CASE("trace export: a kernel running across a pause is drawn up to it", "[trace_export]") {
  // Synthetic: a pause from 2.5 ms to 4 ms and a gemm record from 2.4 ms to 100 ms, as CUPTI gave
  // graph kernels in flight at a pause on the H200, in a file whose agent did not cut it.
  constexpr uint64_t T = testing::SyntheticTrace::kClock;
  wire::TraceChunk late;
  late.untraced.emplace_back(T + 2'500'000, T + 4'000'000);
  late.kernels.push_back({1, T + 2'400'000, T + 100'000'000, 7, 1, 900, {264, 1, 1}, 5, 1, false, ""});
  const std::string bytes = testing::synthetic_trace_file() + wire::RecordEncoder().trace_chunk(late);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::ostringstream out;
  REQUIRE_FALSE(tools::export_chrome_trace(r, out).has_value());
  const std::string json = out.str();
  const size_t at = json.find("\"correlation_id\":900,");
  REQUIRE(at != std::string::npos);
  const size_t begin = json.rfind("{\"ph\":\"X\"", at);
  const std::string event = json.substr(begin, json.find("}}", at) - begin);
  INFO(event);
  CHECK(event.find("\"ts\":2400.000,\"dur\":100.000,") != std::string::npos);
  CHECK(event.find("\"duration_ns\":100000,") != std::string::npos);
  CHECK(event.find("\"cut_by_pause\":true") != std::string::npos);
}

TEST_CASE("trace export: the pauses of a duty-cycled trace get a track of their own", "[trace_export]") {
  // Synthetic: the fixture's trace plus one chunk holding only a pause, 2.5 ms to 4 ms after its
  // earliest event (the NVTX range "train" at kClock).
  constexpr uint64_t T = testing::SyntheticTrace::kClock;
  wire::TraceChunk pause;
  pause.untraced.emplace_back(T + 2'500'000, T + 4'000'000);
  const std::string bytes = testing::synthetic_trace_file() + wire::RecordEncoder().trace_chunk(pause);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::ostringstream out;
  tools::TraceExportStats stats;
  REQUIRE_FALSE(tools::export_chrome_trace(r, out, &stats).has_value());
  const std::string json = out.str();
  CHECK(stats.trace_pauses == 1);
  CHECK(json.find("\"name\":\"process_name\",\"args\":{\"name\":\"cutriage\"}") != std::string::npos);
  CHECK(json.find("\"name\":\"thread_name\",\"args\":{\"name\":\"kernel trace paused (CUTRIAGE_TRACE_DUTY)\"}") !=
        std::string::npos);
  CHECK(json.find("{\"ph\":\"X\",\"ts\":2500.000,\"dur\":1500.000,\"pid\":999998,\"tid\":1,\"name\":\"trace paused\"") !=
        std::string::npos);
  // Without pauses, no such track.
  std::ostringstream plain;
  REQUIRE_FALSE(tools::export_chrome_trace(tools::read_cutriage_bytes(testing::synthetic_trace_file()), plain).has_value());
  CHECK(plain.str().find("trace paused") == std::string::npos);
}

}  // namespace test_trace_export
