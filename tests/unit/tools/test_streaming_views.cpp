// The commands that used to hold every record (issue 25), now streaming: `cutriage json` prints
// record by record, `cutriage trace` reads the trace again chunk by chunk and puts events in time
// order through a bounded window, a killed run's view is folded from its events (TraceFold), and
// the HTML page's timeline keeps at most its cap of executions. Each is checked against what the
// whole read gives on the committed captures, and on SYNTHETIC inputs larger than its window.
// tests/cli/test_report_memory.sh checks their memory on files of hundreds of MiB.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "capture_support.h"
#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "html_report.h"
#include "record_json.h"
#include "trace_export.h"
#include "trace_fold.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_streaming_views {

using namespace cutriage;
namespace v1 = cutriage::v1;

namespace {

// Every committed capture that reads (whole or with a torn tail).
std::vector<std::string> captures() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CUTRIAGE_TEST_DATA_DIR)) {
    if (entry.is_regular_file() && entry.path().extension() == ".pb") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool usable(const tools::ReadResult& r) {
  return r.status == tools::ReadStatus::kOk || r.status == tools::ReadStatus::kTruncated;
}

std::string whole_json(const tools::ReadResult& r) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  REQUIRE(google::protobuf::util::MessageToJsonString(r.file, &out, options).ok());
  return out + "\n";
}

// The complete events ("ph":"X") of a trace export: (pid, tid) -> [start, end) in ns.
std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<uint64_t, uint64_t>>> x_events(const std::string& json) {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<uint64_t, uint64_t>>> tracks;
  std::istringstream lines(json);
  auto number = [](const std::string& line, const std::string& key) {
    const size_t at = line.find(key);
    REQUIRE(at != std::string::npos);
    return std::strtod(line.c_str() + at + key.size(), nullptr);
  };
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{\"ph\":\"X\"", 0) != 0) continue;
    const auto start = static_cast<uint64_t>(std::llround(number(line, "\"ts\":") * 1000));
    const auto dur = static_cast<uint64_t>(std::llround(number(line, "\"dur\":") * 1000));
    const auto pid = static_cast<uint64_t>(number(line, "\"pid\":"));
    const auto tid = static_cast<uint64_t>(number(line, "\"tid\":"));
    tracks[{pid, tid}].emplace_back(start, start + dur);
  }
  return tracks;
}

}  // namespace

TEST_CASE("streaming json: record by record, the text libprotobuf prints for the whole file", "[json][streaming]") {
  int files = 0;
  for (const std::string& path : captures()) {
    const tools::ReadResult whole = tools::read_cutriage_file(path);
    if (!usable(whole)) continue;
    INFO(path);
    ++files;
    std::ostringstream streamed;
    const tools::RecordJsonResult r = tools::write_records_json(path, streamed);
    CHECK(r.read.status == whole.status);
    CHECK(r.read.records_read == whole.records_read);
    CHECK(r.print_error.empty());
    CHECK(streamed.str() == whole_json(whole));
  }
  CHECK(files > 50);
}

TEST_CASE("streaming json: a torn tail ends the array after the complete records, a foreign file prints nothing",
          "[json][streaming]") {
  const std::string bytes = testing::synthetic_trace_file();
  const std::string torn = bytes.substr(0, bytes.size() - 7);
  const tools::ReadResult whole = tools::read_cutriage_bytes(torn);
  REQUIRE(whole.status == tools::ReadStatus::kTruncated);
  std::ostringstream streamed;
  const tools::RecordJsonResult r = tools::write_records_json_bytes(torn, streamed);
  CHECK(r.read.status == tools::ReadStatus::kTruncated);
  CHECK(r.read.message == whole.message);
  CHECK(streamed.str() == whole_json(whole));
  std::ostringstream nothing;
  CHECK(tools::write_records_json_bytes("\"ID\",\"Kernel Name\"\n1,2\n", nothing).read.status ==
        tools::ReadStatus::kNotCutriage);
  CHECK(nothing.str().empty());
}

TEST_CASE("trace fold: a window far smaller than the trace folds what the whole trace folds", "[fold][streaming]") {
  // The captures' chunks are in time order but for a few (22 records of pcsampling/torch_loop.pb,
  // the agent's own count): with 256 events waiting, every summary is the one every event sorted
  // gives. With 2, the records more than the window out of place are late: every execution is
  // still counted.
  int traced = 0;
  for (const std::string& path : captures()) {
    const tools::ReadResult r = tools::read_cutriage_file(path);
    if (!usable(r) || r.trace_records.empty()) continue;
    INFO(path);
    ++traced;
    const std::optional<v1::TraceSummary> whole = tools::recompute_summary(r);
    for (const size_t window : {size_t{256}, size_t{2}}) {
      tools::TraceFold fold(window);
      fold.seed(r);
      for (const int i : r.trace_records) fold.add_chunk(r.file.records(i).trace());
      const std::optional<v1::TraceSummary> folded = fold.finish(r);
      REQUIRE(folded.has_value() == whole.has_value());
      if (!whole) continue;
      CHECK(folded->kernel_executions() == whole->kernel_executions());
      CHECK(folded->copy_executions() == whole->copy_executions());
      CHECK(folded->families_size() == whole->families_size());
      if (window == 256) CHECK(folded->SerializeAsString() == whole->SerializeAsString());
    }
  }
  CHECK(traced > 10);
}

TEST_CASE("trace fold: a pipe's events are folded as they pass, families and pauses taken as they come",
          "[fold][streaming]") {
  // The synthetic trace without its summary (a killed run), its chunk out of time order included.
  const std::string bytes = testing::synthetic_trace_file(false);
  const tools::ReadResult whole = tools::read_cutriage_bytes(bytes);
  const tools::ReadResult once = tools::read_cutriage_bytes(bytes, tools::ReadScope::kCurrent);
  REQUIRE(once.recomputed_summary.has_value());
  const std::optional<v1::TraceSummary> want = tools::recompute_summary(whole);
  REQUIRE(want.has_value());
  CHECK(once.recomputed_summary->SerializeAsString() == want->SerializeAsString());
  CHECK(once.trace_records.empty());
}

TEST_CASE("trace export: a file read again chunk by chunk exports what a whole read exports", "[trace_export][streaming]") {
  int traced = 0;
  for (const std::string& path : captures()) {
    const tools::ReadResult whole = tools::read_cutriage_file(path);
    if (!usable(whole) || whole.trace_records.empty()) continue;
    INFO(path);
    ++traced;
    const tools::ReadResult current = tools::read_cutriage_file(path, tools::ReadScope::kCurrent);
    REQUIRE(current.trace_records.empty());
    const std::vector<std::string> paths = {path};
    std::ostringstream held, again;
    tools::TraceExportStats held_stats, again_stats;
    REQUIRE_FALSE(tools::export_chrome_trace(whole, held, &held_stats).has_value());
    REQUIRE_FALSE(tools::export_chrome_trace(current, again, &again_stats, &paths).has_value());
    CHECK(again.str() == held.str());
    CHECK(again_stats.kernels == held_stats.kernels);
  }
  CHECK(traced > 10);
}

TEST_CASE("trace export: events more than a window out of order neither overlap nor cross on a track",
          "[trace_export][streaming]") {
  // SYNTHETIC: 80,000 kernels of one stream, one after another, the later half written first;
  // 70,000 NVTX ranges inside one that spans them all, written last (as ranges close). The window
  // holds 65,536 events: the early kernels and the outer range come after later events were
  // written. They go to lanes where they fit, never onto one they would overlap or cross.
  constexpr uint64_t T = testing::SyntheticTrace::kClock;
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_trace_session());
  bytes += enc.family({1, "_Z1kv", "k", 0, {32, 1, 1}});
  wire::TraceChunk late_half, early_half, ranges;
  for (uint64_t i = 0; i < 80'000; ++i) {
    wire::KernelExecution k{1, T + 10 * i, T + 10 * i + 5, 7, 1, i + 1, {1, 1, 1}, 0, 0, false, ""};
    (i < 40'000 ? early_half : late_half).kernels.push_back(k);
  }
  for (uint64_t i = 0; i < 70'000; ++i) ranges.nvtx_ranges.push_back({"step", T + 10 * i + 1, T + 10 * i + 4, 99, 1, ""});
  ranges.nvtx_ranges.push_back({"train", T, T + uint64_t{10} * 70'000, 99, 0, ""});
  bytes += enc.trace_chunk(late_half) + enc.trace_chunk(early_half) + enc.trace_chunk(ranges);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::ostringstream out;
  tools::TraceExportStats stats;
  REQUIRE_FALSE(tools::export_chrome_trace(r, out, &stats).has_value());
  CHECK(stats.kernels == 80'000);
  CHECK(stats.nvtx_ranges == 70'001);
  size_t events = 0;
  for (auto& [track, spans] : x_events(out.str())) {
    INFO("pid " << track.first << " tid " << track.second);
    events += spans.size();
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<uint64_t> open;  // ends of the ranges open around the next span
    for (const auto& [start, end] : spans) {
      if (track.first != 1) {  // a GPU track: no overlap at all
        if (!open.empty()) CHECK(start >= open.back());
        open = {end};
        continue;
      }
      while (!open.empty() && open.back() <= start) open.pop_back();
      if (!open.empty()) CHECK(end <= open.back());  // an NVTX track: nested or after
      open.push_back(end);
    }
  }
  CHECK(events == 150'001);
  // The late ones took the window's way: a second lane each (a whole sort would have found them
  // room on the first), the rest the stream's and the thread's own.
  const std::string json = out.str();
  for (const char* thread : {"stream 7", "stream 7 (concurrent 2)", "thread 99", "thread 99 (overlapping 2)"}) {
    CHECK(json.find("\"name\":\"thread_name\",\"args\":{\"name\":\"" + std::string(thread) + "\"}") !=
          std::string::npos);
  }
  CHECK(stats.extra_tracks == 2);
}

TEST_CASE("html: the timeline draws at most its cap of executions and says what it left out", "[html][streaming]") {
  const std::string bytes = testing::synthetic_trace_file();
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  uint64_t executions = 0;
  for (const int i : r.trace_records) {
    executions += static_cast<uint64_t>(r.file.records(i).trace().kernels_size() + r.file.records(i).trace().copies_size());
  }
  REQUIRE(executions > 3);
  tools::TimelineSpans capped(3);
  for (const int i : r.trace_records) capped.add_chunk(r.file.records(i).trace());
  CHECK(capped.spans().size() == 3);
  CHECK(capped.seen() == executions);
  const std::string page = tools::render_html_report(r, {}, &capped);
  CHECK(page.find("data-drawn=\"3\" data-seen=\"" + std::to_string(executions) + "\"") != std::string::npos);
  CHECK(page.find("the other " + std::to_string(executions - 3) + " are not drawn") != std::string::npos);
  // Under the cap, the whole trace is drawn and nothing is said.
  const std::string whole = tools::render_html_report(r, {});
  CHECK(whole.find("timeline-cut") == std::string::npos);
  CHECK(whole.find("<svg class=\"timeline\"") != std::string::npos);
}

}  // namespace test_streaming_views
