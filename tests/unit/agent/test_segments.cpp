// Rotating output segments (CUTRIAGE_SEGMENT_*, issue 6): the agent driven through the fake
// platform with synthetic durations (10 us per kernel), writing segments into a scratch directory.
// Each published segment must be a complete cutriage file on its own, at any moment of the run.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "agent_harness.h"
#include "output.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_segments {

using namespace cutriage;
using testing::make_launch;

namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("cutriage-seg-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  [[nodiscard]] std::vector<fs::path> published() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name[0] != '.' && e.path().extension() == ".pb") out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  [[nodiscard]] size_t partial() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".partial" ? 1 : 0;
    return n;
  }
};

// What one segment holds, checked to be a file of its own: complete, header first, every family
// an execution refers to defined before it in the same segment.
struct SegmentView {
  uint64_t executions = 0;
  bool summary = false;
  bool end = false;
};

SegmentView check_segment(const fs::path& p) {
  INFO(p.string());
  tools::ReadResult r = tools::read_cutriage_file(p.string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(r.bytes_skipped == 0);
  REQUIRE(r.file.records_size() > 0);
  CHECK(r.file.records(0).has_session());
  SegmentView v;
  std::set<uint64_t> defined;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_family()) defined.insert(rec.family().id());
    if (rec.has_trace()) {
      for (const v1::KernelExecution& e : rec.trace().kernels()) {
        CHECK(defined.count(e.family_id()) == 1);
        ++v.executions;
      }
    }
    if (rec.has_kernel() && rec.kernel().family_id() != 0) CHECK(defined.count(rec.kernel().family_id()) == 1);
    // Interned names resolve within the segment.
    if (rec.has_kernel()) CHECK(!tools::lookup(r, rec.kernel().mangled_name_iid()).empty());
    v.summary = v.summary || rec.has_trace_summary();
    v.end = v.end || rec.has_session_end();
  }
  return v;
}

void run_kernels(testing::FakePlatform& platform, int rounds, uint64_t& correlation) {
  for (int i = 0; i < rounds; ++i) {
    for (const char* k : {"alpha_kernel", "beta_kernel", "gamma_kernel"}) platform.launch(make_launch(k, ++correlation));
  }
}

agent::AgentConfig config() {
  agent::AgentConfig c;
  c.select = agent::SelectMode::kNone;  // trace only: the records are the trace
  c.summary = false;
  c.trace_flush_ms = 0;
  return c;
}

}  // namespace

TEST_CASE("segments: every published segment is a complete file, during and after the run", "[agent][segments]") {
  Scratch s("size");
  agent::Logger log;
  (void)log.configure(agent::LogLevel::kOff, "");
  testing::FakePlatform platform;
  agent::SegmentOptions o;
  o.max_bytes = 8 << 10;
  agent::Agent ag(config(), platform, agent::make_segment_sink((s.dir / "run.pb").string(), o, log), log,
                  agent::ProcessInfo{7, "h", {"./svc"}, [] { return uint64_t{1}; }, {}});
  REQUIRE(ag.start());
  uint64_t correlation = 0;
  run_kernels(platform, 200, correlation);
  // Mid-run: what a reader finds now is complete; the segment in progress is hidden.
  const std::vector<fs::path> mid = s.published();
  REQUIRE(mid.size() >= 2);
  CHECK(s.partial() == 1);
  for (const fs::path& p : mid) (void)check_segment(p);
  run_kernels(platform, 200, correlation);
  ag.finish();
  CHECK(s.partial() == 0);
  const std::vector<fs::path> all = s.published();
  REQUIRE(all.size() > mid.size());
  CHECK(all.front().filename() == "run.000001.pb");
  uint64_t executions = 0;
  for (const fs::path& p : all) executions += check_segment(p).executions;
  CHECK(executions == 1200);  // every execution in exactly one segment
  const SegmentView last = check_segment(all.back());
  CHECK(last.summary);
  CHECK(last.end);
}

TEST_CASE("segments: a reader listing the directory while segments rotate never sees a torn file",
          "[agent][segments]") {
  Scratch s("reader");
  agent::Logger log;
  (void)log.configure(agent::LogLevel::kOff, "");
  testing::FakePlatform platform;
  agent::SegmentOptions o;
  o.max_bytes = 4 << 10;
  o.keep = 6;  // retention deletes segments under the reader's feet too
  agent::Agent ag(config(), platform, agent::make_segment_sink((s.dir / "run.pb").string(), o, log), log,
                  agent::ProcessInfo{7, "h", {"./svc"}, [] { return uint64_t{1}; }, {}});
  REQUIRE(ag.start());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    // What a dashboard does: list *.pb, read each whole. A file may vanish (retention) between the
    // listing and the read; one that is read must be complete.
    while (!done.load()) {
      for (const fs::path& p : s.published()) {
        tools::ReadResult r = tools::read_cutriage_file(p.string());
        if (r.status == tools::ReadStatus::kOk || r.bytes_total > 0) {
          ++reads;
          if (r.status != tools::ReadStatus::kOk || r.bytes_skipped != 0 || r.file.records_size() == 0 ||
              !r.file.records(0).has_session()) {
            ++torn;
          }
        }
      }
    }
  });
  uint64_t correlation = 0;
  run_kernels(platform, 600, correlation);
  // On a loaded machine the reader may not have been scheduled yet: let it read once at least
  // before the last rotation (bounded, so a reader that never reads still fails below).
  for (int i = 0; i < 500 && reads.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ag.finish();
  done.store(true);
  reader.join();
  CHECK(reads.load() > 0);
  CHECK(torn.load() == 0);
  // Each segment says which one it is, counting up in file order.
  const std::vector<fs::path> all = s.published();
  REQUIRE(all.size() == 6);
  uint32_t previous = 0;
  for (const fs::path& p : all) {
    tools::ReadResult r = tools::read_cutriage_file(p.string());
    REQUIRE(r.file.records_size() > 0);
    const uint32_t index = r.file.records(0).session().segment_index();
    CHECK(index > previous);
    previous = index;
  }
}

TEST_CASE("segments: retention keeps the newest, age rotates a quiet stream", "[agent][segments]") {
  Scratch s("keep");
  agent::Logger log;
  (void)log.configure(agent::LogLevel::kOff, "");
  testing::FakePlatform platform;
  double now = 0;
  agent::SegmentOptions o;
  o.max_seconds = 60;
  o.keep = 3;
  o.now_seconds = [&now] { return now; };
  agent::Agent ag(config(), platform, agent::make_segment_sink((s.dir / "svc.pb").string(), o, log), log,
                  agent::ProcessInfo{7, "h", {"./svc"}, [] { return uint64_t{1}; }, {}});
  REQUIRE(ag.start());
  uint64_t correlation = 0;
  for (int minute = 0; minute < 6; ++minute) {
    run_kernels(platform, 5, correlation);  // a few records a minute: far below any size limit
    now += 61;
  }
  ag.finish();
  const std::vector<fs::path> kept = s.published();
  REQUIRE(kept.size() == 3);
  // The newest three: segments 5, 6 and 7 (the last one holds the summary written at exit).
  CHECK(kept[0].filename() == "svc.000005.pb");
  CHECK(kept[2].filename() == "svc.000007.pb");
  for (const fs::path& p : kept) (void)check_segment(p);
  CHECK(check_segment(kept.back()).end);
}

TEST_CASE("segments: names", "[agent][segments]") {
  CHECK(agent::segment_path("/var/log/cutriage/run.pb", 3, false) == "/var/log/cutriage/run.000003.pb");
  CHECK(agent::segment_path("/var/log/cutriage/run.pb", 3, true) == "/var/log/cutriage/.run.000003.pb.partial");
  CHECK(agent::segment_path("run", 12, false) == "run.000012");
  CHECK(agent::segment_path(".hidden", 1, false) == ".hidden.000001");
}

}  // namespace test_segments
