// The report's always-on parts on SYNTHETIC records (made-up values encoded with the agent's
// RecordEncoder, not a measurement): the header's mode, the overhead the agent spent of its budget
// (SessionEnd.overhead), the deep-capture requests (ControlRequest), the launches a kernel's
// metrics were assembled from, and the wording for a segment of a rotated run.
#include <string>
#include <vector>

#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "report.h"
#include "report_text.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_report_always_on {

using namespace cutriage;
using testing::columns;
using testing::lines_of;

namespace {

// A paragraph that put_wrapped broke into lines: the line starting with `first`, then the
// continuation lines (those starting with `indent` followed by text), joined with spaces.
std::string paragraph(const std::string& text, const std::string& first, const std::string& indent) {
  std::string joined;
  bool in = false;
  for (const std::string& line : lines_of(text)) {
    if (!in) {
      if (line.rfind(first, 0) == 0) {
        joined = line;
        in = true;
      }
      continue;
    }
    if (line.size() > indent.size() && line.rfind(indent, 0) == 0 && line[indent.size()] != ' ') {
      joined += " " + line.substr(indent.size());
    } else {
      break;
    }
  }
  INFO("looking for a paragraph starting with: " << first << "\nin:\n" << text);
  CHECK(in);
  return joined;
}

size_t position(const std::string& text, const std::string& what) {
  size_t at = text.find(what);
  INFO("looking for: " << what);
  CHECK(at != std::string::npos);
  return at;
}

std::string render(const std::string& bytes) {
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  return tools::render_report(r, {});
}

wire::SessionInfo always_on_session() {
  wire::SessionInfo s = testing::synthetic_trace_session();
  s.mode = "always-on";
  return s;
}

wire::SessionEnd session_end() {
  wire::SessionEnd end;
  end.state = wire::AgentState::kActive;
  end.kernel_launches = 1000;
  end.profiled_launches = 12;
  return end;
}

wire::OverheadStats overhead() {
  wire::OverheadStats o;
  o.budget_fraction = 0.005;
  o.max_profiles_per_second = 20;
  o.wall_ns = 10'000'000'000ULL;   // 10 s
  o.spent_ns = 12'345'678;         // 0.123% of it
  o.max_window_spent_ns = 4'000'000;
  o.window_ns = 1'000'000'000;
  o.admitted = 120;
  o.deferred = 30;
  o.group_switches = 45;
  return o;
}

}  // namespace

TEST_CASE("report: the header's mode and the overhead spent of the budget", "[report][always-on]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(always_on_session());
  wire::SessionEnd end = session_end();
  end.overhead = overhead();
  bytes += enc.session_end(end);
  const std::string text = render(bytes);
  INFO(text);
  const size_t mode = position(text, "\nmode: always-on\n");
  const size_t launches = position(text, "launches: 1000 kernel launches, 12 profiled\n");
  CHECK(mode < launches);
  CHECK(paragraph(text, "overhead: ", "          ") ==
        "overhead: budget 0.5% of wall time; spent 12.3 ms of 10.0 s (0.123%); worst window 4.00 ms of "
        "1.00 s (0.4%); 120 launches admitted, 30 deferred; 45 metric-group switches");
  CHECK(position(text, "overhead: ") > launches);
  CHECK(text.find("over the budget") == std::string::npos);
  for (const std::string& line : lines_of(text)) CHECK(columns(line) <= 100);

  // Spent more than the budget allows (0.5% of 10 s = 50 ms, plus two allowances of 0.5% of the
  // 1 s window: a bound of 60 ms): said so.
  const auto overhead_text = [](uint64_t spent_ns) {
    wire::SessionEnd over = session_end();
    over.overhead = overhead();
    over.overhead->spent_ns = spent_ns;
    std::string over_bytes = wire::RecordEncoder().session(always_on_session());
    over_bytes += wire::RecordEncoder().session_end(over);
    return paragraph(render(over_bytes), "overhead: ", "          ");
  };
  const std::string over_text = overhead_text(80'000'000);
  INFO(over_text);
  CHECK(over_text.find("spent 80.0 ms of 10.0 s (0.8%), over the budget's bound of 60.0 ms (the share and two "
                       "allowances);") != std::string::npos);
  // Over the share, within the bound (a short run's up-front work not yet paid back): both said.
  const std::string within_text = overhead_text(55'000'000);
  INFO(within_text);
  CHECK(within_text.find("spent 55.0 ms of 10.0 s (0.55%), over the budget's share but within its bound of 60.0 ms "
                         "(the share and two allowances);") != std::string::npos);
  CHECK(within_text.find("start-up") == std::string::npos);
  // CUPTI's start-up paid before the first profile (CUTRIAGE_WARMUP): said apart, and not in the spent
  // figure nor against the bound (55 ms stays within 60 ms with 700 ms of start-up beside it).
  {
    wire::SessionEnd warm = session_end();
    warm.overhead = overhead();
    warm.overhead->spent_ns = 55'000'000;
    warm.overhead->startup_ns = 700'000'000;
    std::string warm_bytes = wire::RecordEncoder().session(always_on_session());
    warm_bytes += wire::RecordEncoder().session_end(warm);
    const std::string warm_text = paragraph(render(warm_bytes), "overhead: ", "          ");
    INFO(warm_text);
    CHECK(warm_text.find("spent 55.0 ms of 10.0 s (0.55%), over the budget's share but within its bound of 60.0 ms "
                         "(the share and two allowances); CUPTI's start-up 700 ms before the first profile, apart; "
                         "worst window") != std::string::npos);
  }

  // Neither a mode nor an overhead: neither line.
  wire::SessionInfo plain_session = testing::synthetic_trace_session();
  std::string plain = wire::RecordEncoder().session(plain_session);
  plain += wire::RecordEncoder().session_end(session_end());
  const std::string plain_text = render(plain);
  INFO(plain_text);
  CHECK(plain_text.find("mode:") == std::string::npos);
  CHECK(plain_text.find("overhead") == std::string::npos);
  CHECK(plain_text.find("launches: 1000 kernel launches") != std::string::npos);
}

TEST_CASE("report: the control section lists deep-capture requests in their latest state",
          "[report][always-on]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(always_on_session());
  bytes += enc.family({1, "_Z4gemmILi128EEvPKfS1_Pf", "gemm<128>", 0, {256, 1, 1}});
  bytes += enc.family({2, "_Z6reducePf", "reduce", 0, {512, 1, 1}});
  wire::ControlRequest first;
  first.id = 1;
  first.source = wire::ControlSource::kSignal;
  first.target = "top:3";
  first.window_seconds = 2.5;
  first.requested_unix_ns = 1'700'000'000'100'000'000ULL;
  first.state = wire::ControlState::kStarted;
  bytes += enc.control(first);
  wire::ControlRequest rejected;
  rejected.id = 2;
  rejected.source = wire::ControlSource::kFile;
  rejected.target = "regex:attention";
  rejected.window_seconds = 30;
  rejected.state = wire::ControlState::kRejected;
  rejected.detail = "another deep capture (#1) is in progress";
  bytes += enc.control(rejected);
  // Request 1 closes after request 2 was rejected: its last record is the one shown.
  wire::ControlRequest expired = first;
  expired.ended_unix_ns = 1'700'000'002'600'000'000ULL;
  expired.state = wire::ControlState::kExpired;
  expired.family_ids = {1, 9};  // 9: no KernelFamily record, named by id
  expired.profiled_launches = 5;
  expired.detail = "reduce was not launched in the window";
  bytes += enc.control(expired);
  wire::ControlRequest api;
  api.id = 3;
  api.source = wire::ControlSource::kApi;
  api.target = "regex:gemm";
  api.window_seconds = 1;
  api.state = wire::ControlState::kCompleted;
  api.family_ids = {1};
  api.profiled_launches = 1;
  bytes += enc.control(api);
  bytes += enc.session_end(session_end());

  const std::string text = render(bytes);
  INFO(text);
  const size_t launches = position(text, "launches: 1000 kernel launches");
  const size_t section = position(text, "\ncontrol: 3 deep-capture requests\n");
  CHECK(launches < section);
  const size_t one = position(text, "  #1  top:3 for 2.5 s");
  CHECK(paragraph(text, "  #1  ", "        ") ==
        "  #1  top:3 for 2.5 s (from a signal): expired before every family was captured; 5 launches "
        "profiled with replay");
  CHECK(position(text, "      families: gemm<128>, family 9\n") > one);
  CHECK(position(text, "      reduce was not launched in the window\n") > one);
  const size_t two = position(text, "  #2  regex:attention for 30 s (from a request file): rejected\n");
  CHECK(position(text, "      another deep capture (#1) is in progress\n") > two);
  const size_t three = position(text, "  #3  regex:gemm for 1 s");
  CHECK(paragraph(text, "  #3  ", "        ") ==
        "  #3  regex:gemm for 1 s (from the API): completed; 1 launch profiled with replay");
  CHECK(section < one);
  CHECK(one < two);
  CHECK(two < three);
  // The superseded state of request 1 is not shown.
  CHECK(text.find("window open") == std::string::npos);
  for (const std::string& line : lines_of(text)) CHECK(columns(line) <= 100);

  // Without requests, no section.
  std::string none = wire::RecordEncoder().session(always_on_session());
  CHECK(render(none).find("control:") == std::string::npos);
}

TEST_CASE("report: a kernel assembled from launches without replay says from which",
          "[report][always-on]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(always_on_session());
  wire::KernelRecord k = testing::synthetic_profiled_gemm(0, "memory_bound: assembled");
  k.input.assembled_launches.push_back({201, {264, 1, 1}, {256, 1, 1}, 0, 52'500, 2, 10});
  k.input.assembled_launches.push_back({187, {264, 1, 1}, {256, 1, 1}, 0, 50'000, 1, 12});
  k.input.assembled_launches.push_back({230, {264, 1, 1}, {256, 1, 1}, 0, 51'000, 3, 8});
  k.input.assembled_launches.push_back({244, {264, 1, 1}, {256, 1, 1}, 0, 0, 3, 0});  // not measured
  bytes += enc.kernel(k);
  wire::KernelRecord replayed = testing::synthetic_profiled_gemm(0, "compute_bound: replayed");
  replayed.input.mangled_name = "_Z5otherv";
  replayed.input.function_name = "other";
  replayed.input.launch_index = 300;
  replayed.duration_ns = 10'000;  // listed after the gemm (longest first)
  bytes += enc.kernel(replayed);
  wire::KernelRecord unmeasured = testing::synthetic_profiled_gemm(0, "compute_bound: one group");
  unmeasured.input.mangled_name = "_Z5thirdv";
  unmeasured.input.function_name = "third";
  unmeasured.input.launch_index = 400;
  unmeasured.duration_ns = 1'000;
  unmeasured.input.assembled_launches.push_back({399, {1, 1, 1}, {32, 1, 1}, 0, 0, 1, 4});
  bytes += enc.kernel(unmeasured);

  const std::string text = render(bytes);
  INFO(text);
  const size_t gemm = position(text, "[1] gemm<128>\n");
  const size_t line = position(text, "    assembled from 4 launches without replay (groups 1, 2, 3), durations "
                                     "50.0 us\u201352.5 us\n");
  const size_t verdict = position(text, "    verdict   MEMORY BOUND - assembled\n");
  CHECK(gemm < line);
  CHECK(line < verdict);
  // A kernel whose metrics came from one replayed launch has no such line.
  const size_t other = position(text, "[2] other\n");
  const size_t third = position(text, "[3] third\n");
  CHECK(text.find("assembled from", other) > third);
  position(text, "    assembled from 1 launch without replay (group 1), durations not measured\n");
}

TEST_CASE("report: a segment of a rotated run without a session end is not a crash",
          "[report][always-on][segments]") {
  // Segment 2 of a run: header, families, a trace chunk, a kernel; the session end and the trace
  // summary come in the run's last segment.
  wire::SessionInfo s = always_on_session();
  s.segment_index = 2;
  wire::RecordEncoder enc;
  std::string bytes = enc.session(s);
  bytes += enc.family({1, "_Z4gemmILi128EEvPKfS1_Pf", "gemm<128>", 0, {256, 1, 1}});
  wire::TraceChunk chunk;
  constexpr uint64_t T = testing::SyntheticTrace::kClock;
  chunk.kernels.push_back({1, T + 1'000, T + 51'000, 7, 1, 100, {264, 1, 1}, 0, 0, false, ""});
  chunk.kernels.push_back({1, T + 100'000, T + 152'000, 7, 1, 101, {264, 1, 1}, 0, 0, false, ""});
  bytes += enc.trace_chunk(chunk);
  bytes += enc.kernel(testing::synthetic_profiled_gemm(0, "memory_bound: in a segment"));

  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(r.segment_index == 2);
  const std::string text = tools::render_report(r, {});
  INFO(text);
  CHECK(text.find("did not exit normally") == std::string::npos);
  CHECK(paragraph(text, "note: this is segment", "      ") ==
        "note: this is segment 2 of a rotated run: the run's end (launch counts, trace summary) is in a "
        "later segment; every complete record of this one is shown");
  CHECK(paragraph(text, "note: this segment has a trace", "      ") ==
        "note: this segment has a trace but no trace summary (the run's is in its last segment): the "
        "application view of this segment is recomputed from its trace, without the agent's selection");
  CHECK(text.find("application view: 2 kernel executions") != std::string::npos);
  CHECK(text.find("verdict   MEMORY BOUND - in a segment") != std::string::npos);

  // The run's last segment ends with the session end: no note.
  std::string last = bytes + enc.session_end(session_end());
  const std::string last_text = render(last);
  INFO(last_text);
  CHECK(last_text.find("note: this is segment") == std::string::npos);
  CHECK(last_text.find("launches: 1000 kernel launches") != std::string::npos);

  // A run written to one file (segment index 0) without a session end: the process did not exit
  // normally, as before.
  s.segment_index = 0;
  std::string whole = wire::RecordEncoder().session(s);
  whole += wire::RecordEncoder().kernel(testing::synthetic_profiled_gemm(0, "memory_bound: killed"));
  const std::string whole_text = render(whole);
  INFO(whole_text);
  CHECK(whole_text.find("note: the file has no session end: the process did not exit normally") !=
        std::string::npos);
  CHECK(whole_text.find("segment") == std::string::npos);
}

}  // namespace test_report_always_on
