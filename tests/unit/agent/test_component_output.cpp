// RecordOutput on its own, over in-memory sinks read back with tools::read_cutriage_bytes: the
// session header once per file, each family defined once and before the chunk that needs it, and
// on a rotating sink every segment a file of its own (header, interned strings and every family
// defined so far written again); the session end and what comes after close().
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.h"
#include "file_reader.h"
#include "output.h"
#include "record_output.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_output {

using namespace cutriage;
using agent::RecordOutput;

namespace {

// Segments in memory: rotation is due when the test says so; close() publishes the segment, and
// anything appended later goes into a new one, as with the segment sink on disk.
class SegmentedMemorySink final : public agent::RecordSink {
 public:
  explicit SegmentedMemorySink(std::vector<std::string>* segments) : segments_(segments) { segments_->emplace_back(); }
  bool append(std::string_view bytes) override {
    if (fail_) return false;
    if (closed_) {
      segments_->emplace_back();
      closed_ = false;
    }
    segments_->back().append(bytes);
    return true;
  }
  [[nodiscard]] std::string describe() const override { return "memory segments"; }
  [[nodiscard]] bool failed() const override { return fail_; }
  [[nodiscard]] bool rotation_due() const override { return due && !segments_->back().empty(); }
  void rotate() override {
    segments_->emplace_back();
    due = false;
  }
  void close() override {
    ++closes;
    closed_ = true;
  }
  bool due = false;
  bool fail_ = false;
  int closes = 0;

 private:
  std::vector<std::string>* segments_;
  bool closed_ = false;
};

struct Output {
  explicit Output(bool segmented) {
    auto s = std::make_unique<SegmentedMemorySink>(&segments);
    sink = s.get();
    out = std::make_unique<RecordOutput>(std::move(s), segmented, [this](uint32_t segment) {
      headers.push_back(segment);
      wire::SessionInfo info;
      info.agent_version = "test";
      info.pid = 4321;
      info.segment_index = segment;
      return info;
    });
  }
  std::vector<std::string> segments;
  std::vector<uint32_t> headers;  // the header callback's calls
  SegmentedMemorySink* sink = nullptr;
  std::unique_ptr<RecordOutput> out;
};

wire::KernelRecord kernel(const std::string& mangled, uint64_t launch_index) {
  wire::KernelRecord k;
  k.input.mangled_name = mangled;
  k.input.function_name = mangled + "_fn";
  k.input.launch_index = launch_index;
  k.status = wire::ProfileStatus::kProfiled;
  return k;
}

wire::FamilyDef family(uint64_t id) {
  wire::FamilyDef f;
  f.id = id;
  f.mangled_name = "family_kernel_" + std::to_string(id);
  f.display_name = "family " + std::to_string(id);
  f.block = {128, 1, 1};
  return f;
}

wire::TraceChunk chunk_of(std::initializer_list<uint64_t> family_ids, const std::string& nvtx = "step") {
  wire::TraceChunk c;
  uint64_t t = 1000;
  for (uint64_t id : family_ids) {
    wire::KernelExecution e;
    e.family_id = id;
    e.start_ns = t;
    e.end_ns = t + 500;
    e.nvtx_path = nvtx;
    c.kernels.push_back(e);
    t += 1000;
  }
  return c;
}

size_t count(const tools::ReadResult& r, bool (v1::Record::*has)() const) {
  size_t n = 0;
  for (const v1::Record& rec : r.file.records()) n += (rec.*has)() ? 1 : 0;
  return n;
}

// Reads one segment and checks that it stands on its own: complete, header first, every family
// an execution names defined before it, every interned name it uses resolved.
tools::ReadResult read_alone(const std::string& bytes) {
  tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(r.bytes_skipped == 0);
  REQUIRE(r.file.records_size() > 0);
  CHECK(r.file.records(0).has_session());
  CHECK(count(r, &v1::Record::has_session) == 1);
  std::set<uint64_t> defined;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_family()) {
      CHECK(defined.insert(rec.family().id()).second);  // once per segment
      CHECK(!tools::lookup(r, rec.family().mangled_name_iid()).empty());
    }
    if (rec.has_trace()) {
      for (const v1::KernelExecution& e : rec.trace().kernels()) {
        CHECK(defined.count(e.family_id()) == 1);
        CHECK(!tools::lookup(r, e.nvtx_path_iid()).empty());
      }
    }
    if (rec.has_kernel()) CHECK(!tools::lookup(r, rec.kernel().mangled_name_iid()).empty());
  }
  return r;
}

}  // namespace

TEST_CASE("output: the header comes once, before the first record", "[component][output]") {
  Output o(false);
  CHECK(o.headers.empty());  // nothing written yet: no header either
  o.out->write_kernel(kernel("first_kernel", 1));
  o.out->write_notice(wire::Notice{wire::Severity::kInfo, "test_notice", "hello", 0, 0});
  o.out->write_kernel(kernel("second_kernel", 2));
  o.out->write_kernel(kernel("first_kernel", 3));
  CHECK(o.headers == std::vector<uint32_t>{0});
  REQUIRE(o.segments.size() == 1);
  tools::ReadResult r = read_alone(o.segments[0]);
  CHECK(r.file.records(0).session().pid() == 4321);
  CHECK(r.segment_index == 0);
  CHECK(count(r, &v1::Record::has_kernel) == 3);
  CHECK(count(r, &v1::Record::has_notice) == 1);
  std::vector<std::string> names;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_kernel()) names.emplace_back(tools::lookup(r, rec.kernel().mangled_name_iid()));
  }
  CHECK(names == std::vector<std::string>{"first_kernel", "second_kernel", "first_kernel"});
}

TEST_CASE("output: each family is defined once, before the chunk that needs it", "[component][output]") {
  Output o(false);
  o.out->write_chunk(chunk_of({1, 2}), {family(1), family(2)});
  o.out->write_chunk(chunk_of({2, 3}), {family(2), family(3)});  // 2 offered again
  o.out->write_chunk(chunk_of({1}), {});
  tools::ReadResult r = read_alone(o.segments[0]);
  std::vector<uint64_t> defined;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_family()) defined.push_back(rec.family().id());
  }
  CHECK(defined == std::vector<uint64_t>{1, 2, 3});
  CHECK(count(r, &v1::Record::has_trace) == 3);
  CHECK(tools::family_name(r, 3) == "family 3");
}

TEST_CASE("output: a rotated segment repeats the header, interning and every family", "[component][output]") {
  Output o(true);
  o.out->write_chunk(chunk_of({1, 2}, "train/step"), {family(1), family(2)});
  o.out->write_kernel(kernel("rotating_kernel", 1));
  // The segment is full: the next record starts the next segment.
  o.sink->due = true;
  o.out->write_kernel(kernel("rotating_kernel", 2));
  o.out->write_chunk(chunk_of({1, 3}, "train/step"), {family(3)});
  o.sink->due = true;
  // A chunk rotates too, at its record boundary.
  o.out->write_chunk(chunk_of({2}, "train/step"), {});
  o.out->write_trace_summary(wire::TraceSummary{});
  CHECK(o.headers == std::vector<uint32_t>{1, 2, 3});
  REQUIRE(o.segments.size() == 3);

  tools::ReadResult first = read_alone(o.segments[0]);
  CHECK(first.segment_index == 1);
  CHECK(first.family_records.size() == 2);
  tools::ReadResult second = read_alone(o.segments[1]);
  CHECK(second.segment_index == 2);
  // The families of the first segment, then the one defined in this one.
  std::vector<uint64_t> ids;
  for (const auto& [id, at] : second.family_records) ids.push_back(id);
  CHECK(ids == std::vector<uint64_t>{1, 2, 3});
  CHECK(tools::family_name(second, 1) == "family 1");
  REQUIRE(count(second, &v1::Record::has_kernel) == 1);
  tools::ReadResult third = read_alone(o.segments[2]);
  CHECK(third.segment_index == 3);
  CHECK(third.family_records.size() == 3);
  CHECK(third.trace_summary_record >= 0);
  // No segment was left half-written: each ends with what was written into it.
  CHECK(count(first, &v1::Record::has_kernel) == 1);
  CHECK(count(third, &v1::Record::has_trace) == 1);
}

TEST_CASE("output: close writes the session end, and later records start a file of their own", "[component][output]") {
  Output o(false);
  o.out->write_kernel(kernel("closing_kernel", 1));
  wire::SessionEnd end;
  end.kernel_launches = 17;
  o.out->close(end, true);
  CHECK(o.sink->closes == 1);
  // A late callback after the end.
  o.out->write_notice(wire::Notice{wire::Severity::kWarning, "late", "after the end", 0, 0});
  REQUIRE(o.segments.size() == 2);
  tools::ReadResult closed = read_alone(o.segments[0]);
  const v1::Record& last = closed.file.records(closed.file.records_size() - 1);
  REQUIRE(last.has_session_end());
  CHECK(last.session_end().kernel_launches() == 17);
  tools::ReadResult late = read_alone(o.segments[1]);
  CHECK(count(late, &v1::Record::has_notice) == 1);
  CHECK(o.headers.size() == 2);
}

TEST_CASE("output: a chunk written after close defines the families it names", "[component][output]") {
  // close() promises that a late record starts a segment of its own, and a segment must read on
  // its own: a late chunk (an activity buffer CUPTI hands back after the agent finished) names
  // families defined before close(), so the new segment's header comes with their definitions, as
  // a rotation's does.
  Output o(true);
  o.out->write_chunk(chunk_of({1, 2}), {family(1), family(2)});
  o.out->close(wire::SessionEnd{}, true);
  o.out->write_chunk(chunk_of({2}), {});
  REQUIRE(o.segments.size() == 2);
  (void)read_alone(o.segments[0]);
  tools::ReadResult late = read_alone(o.segments[1]);
  CHECK(late.family_records.count(2) == 1);
}

TEST_CASE("output: close without the end writes no session end", "[component][output]") {
  Output o(false);
  o.out->write_kernel(kernel("no_end", 1));
  o.out->close(wire::SessionEnd{}, false);
  tools::ReadResult r = read_alone(o.segments[0]);
  CHECK(count(r, &v1::Record::has_session_end) == 0);
  CHECK(o.sink->closes == 1);
}

TEST_CASE("output: without a sink nothing is written and nothing fails", "[component][output]") {
  int headers = 0;
  RecordOutput out(nullptr, false, [&](uint32_t) {
    ++headers;
    return wire::SessionInfo{};
  });
  CHECK_FALSE(out.has_sink());
  CHECK(out.describe().empty());
  out.write_kernel(kernel("nowhere", 1));
  out.write_chunk(chunk_of({1}), {family(1)});
  out.close(wire::SessionEnd{}, true);
  CHECK_FALSE(out.failed());
}

TEST_CASE("output: a failed sink is reported", "[component][output]") {
  Output o(false);
  CHECK_FALSE(o.out->failed());
  o.sink->fail_ = true;
  o.out->write_kernel(kernel("lost", 1));
  CHECK(o.out->failed());
  CHECK(o.out->describe() == "memory segments");
}

TEST_CASE("output: records written from several threads interleave whole", "[component][output]") {
  Output o(true);
  constexpr int kThreads = 4;
  constexpr int kEach = 60;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto id = static_cast<uint64_t>(t) + 1;
      for (int i = 0; i < kEach; ++i) {
        o.out->write_kernel(kernel("threaded_" + std::to_string(t) + "_" + std::to_string(i % 5), 1 + i));
        if (i % 20 == 0) {
          o.out->write_chunk(chunk_of({id}), {family(id)});
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  size_t kernels = 0;
  for (const std::string& s : o.segments) {
    tools::ReadResult r = read_alone(s);
    kernels += count(r, &v1::Record::has_kernel);
  }
  CHECK(kernels == static_cast<size_t>(kThreads) * static_cast<size_t>(kEach));
}

}  // namespace test_component_output
