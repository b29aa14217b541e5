// TraceFolder on its own, fed activity batches directly (the fake platform only pauses the trace
// and keeps its clock): families ranked by traced GPU time and the ranking hook, replayed
// executions kept out of the durations, the families the trace itself creates, NVTX paths on
// executions, the duty cycle's pauses (a kernel running across one is cut at it), the event cap,
// and the chunks and family definitions written to the output.
#include <algorithm>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "agent_harness.h"
#include "instance_ids.h"
#include "trace_folder.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_trace_folder {

using namespace cutriage;
#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;  // Catch2 v3; v2 has it at global scope
#endif
using agent::AgentConfig;
using agent::Family;
using agent::TraceFolder;

namespace {

struct Folder {
  explicit Folder(AgentConfig c = {})
      : config(std::move(c)),
        families(testing::fresh_instance_id(), config.kernel_filter),
        nvtx(testing::fresh_instance_id()),
        graphs(nvtx),
        output(std::make_unique<testing::MemorySink>(&bytes), false,
               [](uint32_t) {
                 wire::SessionInfo s;
                 s.agent_version = "test";
                 return s;
               }),
        trace(config, platform, log, families, nvtx, graphs, output, gate,
              [this](const triage::TimelineAccumulator& timeline) {
                ++rankings;
                last_ranking = timeline.ranking();
              },
              [this](wire::Severity, const std::string& code, const std::string&) { notices.push_back(code); }) {}

  Family* family(const std::string& name, triage::Dim3 block = {128, 1, 1}) {
    std::lock_guard<std::mutex> lock(families.mutex());
    return families.find_or_create_locked(name, 0, block);
  }
  [[nodiscard]] size_t family_count() const {
    std::lock_guard<std::mutex> lock(families.mutex());
    return families.all_locked().size();
  }
  // The family's timeline numbers so far (a copy, taken under the trace's lock).
  [[nodiscard]] std::optional<triage::FamilyTimeStats> stats(uint64_t id) const {
    std::unique_lock<std::mutex> lock = trace.lock();
    const triage::FamilyTimeStats* f = trace.timeline_locked().family(id);
    return f ? std::optional<triage::FamilyTimeStats>(*f) : std::nullopt;
  }
  [[nodiscard]] std::vector<double> durations(uint64_t id) const {
    triage::KernelInput in;
    trace.fill_inputs(id, in);
    return in.unprofiled_durations_ns;
  }
  // Every execution written, in file order.
  [[nodiscard]] std::vector<v1::KernelExecution> executions(const tools::ReadResult& r) const {
    std::vector<v1::KernelExecution> out;
    for (int i : r.trace_records) {
      for (const v1::KernelExecution& e : r.file.records(i).trace().kernels()) out.push_back(e);
    }
    return out;
  }

  AgentConfig config;
  testing::FakePlatform platform;
  agent::Logger log;
  std::string bytes;
  agent::FamilyTable families;
  agent::NvtxTracker nvtx;
  agent::GraphTable graphs;
  agent::RecordOutput output;
  std::shared_mutex gate;
  int rankings = 0;
  std::vector<uint64_t> last_ranking;
  std::vector<std::string> notices;
  TraceFolder trace;
};

collectors::KernelActivity exec(std::string_view name, uint64_t start, uint64_t duration, uint32_t correlation = 0,
                                triage::Dim3 block = {128, 1, 1}) {
  collectors::KernelActivity a;
  a.mangled_name = name;
  a.start_ns = start;
  a.end_ns = start + duration;
  a.correlation_id = correlation;
  a.block = block;
  a.grid = {64, 1, 1};
  a.stream_id = 7;
  a.context_id = 1;
  return a;
}

// The duty cycle traced half of every 2 s window.
AgentConfig half_duty() {
  AgentConfig c;
  c.trace_duty = 0.5;
  c.trace_period_s = 2;
  return c;
}

collectors::ActivityBatch batch(std::vector<collectors::KernelActivity> kernels) {
  collectors::ActivityBatch b;
  b.kernels = std::move(kernels);
  return b;
}

}  // namespace

TEST_CASE("trace folder: families are ranked by traced time and the ranking hook runs per batch", "[component][trace_folder]") {
  Folder f;
  f.trace.started(0, 0);
  f.trace.on_activity(batch({exec("big", 1000, 30000), exec("small", 40000, 10000), exec("big", 60000, 30000),
                             exec("small", 100000, 10000), exec("small", 120000, 10000)}));
  const uint64_t big = f.family("big")->family_id;
  const uint64_t small = f.family("small")->family_id;
  CHECK(f.rankings == 1);
  CHECK(f.last_ranking == std::vector<uint64_t>{big, small});
  CHECK(f.family("big")->traced.load());
  // Another batch makes the small one the larger.
  f.trace.on_activity(batch({exec("small", 200000, 100000)}));
  CHECK(f.rankings == 2);
  CHECK(f.last_ranking == std::vector<uint64_t>{small, big});
  triage::KernelInput in;
  f.trace.fill_inputs(small, in);
  CHECK(in.time_share == Approx((3 * 10000.0 + 100000.0) / (2 * 30000.0 + 3 * 10000.0 + 100000.0)));
  CHECK(in.unprofiled_durations_ns.size() == 4);
  CHECK(in.ran_concurrently == std::optional<bool>(false));
}

TEST_CASE("trace folder: kernels never seen at a launch get their family from the trace", "[component][trace_folder]") {
  Folder f;
  Family* launched = f.family("launched_kernel");
  f.trace.on_activity(batch({exec("launched_kernel", 1000, 5000), exec("graph_kernel", 7000, 5000),
                             exec("graph_kernel", 13000, 5000, 0, {64, 1, 1})}));
  CHECK(f.family_count() == 3);  // graph_kernel with two block shapes
  CHECK(f.stats(launched->family_id)->launches == 1);
  CHECK(f.stats(f.family("graph_kernel")->family_id)->launches == 1);
  CHECK(f.stats(f.family("graph_kernel", {64, 1, 1})->family_id)->launches == 1);
  // An incomplete record (end before start) is no execution and makes no family.
  collectors::KernelActivity broken = exec("broken_kernel", 20000, 0);
  broken.end_ns = 10000;
  f.trace.on_activity(batch({broken}));
  CHECK(f.family_count() == 3);
}

TEST_CASE("trace folder: the range profiler's own kernel beside a profiled launch makes no family",
          "[component][trace_folder]") {
  // Synthetic records modelled on the H100 capture svc-steps4-h100 (tests/data/always_on): in a
  // pass without replay CUPTI ran `WaitNs` (80.8 us) on a stream of its own under each profiled
  // launch's correlation id, and the report listed it as one of the application's kernels.
  Folder f;
  f.trace.started(0, 0);
  f.trace.mark_replayed(42, "matmul", 7);
  f.trace.mark_replayed(60);  // a graph launch: its kernels are many, all the application's
  collectors::KernelActivity wait = exec("WaitNs", 12000, 80800, 42);
  wait.stream_id = 6;
  collectors::KernelActivity node = exec("node_kernel", 200000, 5000, 60);
  node.graph_id = 3;
  node.stream_id = 6;
  // Another kernel under that id on the launch's own stream is not told apart: kept.
  collectors::KernelActivity same_stream = exec("helper", 95000, 1000, 42);
  f.trace.on_activity(
      batch({exec("matmul", 1000, 10000, 42), wait, same_stream, exec("matmul", 100000, 10000, 43), node}));
  CHECK(f.family_count() == 3);  // matmul, helper, node_kernel
  {
    std::unique_lock<std::mutex> lock = f.trace.lock();
    CHECK(f.trace.profiler_kernels_locked() == 1);
  }
  const std::optional<triage::FamilyTimeStats> s = f.stats(f.family("matmul")->family_id);
  REQUIRE(s);
  CHECK(s->launches == 2);
  CHECK(s->replayed_launches == 1);
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(f.executions(r).size() == 4);  // every record but WaitNs's
}

TEST_CASE("trace folder: replayed executions are counted but kept out of the durations", "[component][trace_folder]") {
  Folder f;
  f.trace.mark_replayed(42);
  f.trace.mark_replayed(50);
  f.trace.on_activity(batch({exec("replayed", 1000, 10000, 41), exec("replayed", 20000, 1000000, 42),
                             exec("replayed", 1030000, 10000, 43), exec("only_replayed", 1050000, 900000, 50)}));
  const uint64_t id = f.family("replayed")->family_id;
  CHECK(f.durations(id) == std::vector<double>{10000, 10000});
  const std::optional<triage::FamilyTimeStats> s = f.stats(id);
  REQUIRE(s);
  CHECK(s->launches == 3);
  CHECK(s->replayed_launches == 1);
  CHECK(s->total_ns == Approx(20000));
  // A family seen only replayed has no traced duration: it is not "traced" for the selection.
  CHECK_FALSE(f.family("only_replayed")->traced.load());
  CHECK(f.family("replayed")->traced.load());
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  for (const v1::KernelExecution& e : f.executions(r)) CHECK(e.replayed() == (e.correlation_id() == 42 || e.correlation_id() == 50));
}

TEST_CASE("trace folder: only the newest profiled launches are remembered", "[component][trace_folder]") {
  // A process profiling for days marks a launch replayed every few seconds: the oldest ids go.
  Folder f;
  const uint64_t kept = agent::TraceFolder::kMaxReplayed;
  for (uint64_t id = 1; id <= kept + 10; ++id) f.trace.mark_replayed(id);
  f.trace.on_activity(batch({exec("oldest", 1000, 10000, 10), exec("newest", 20000, 10000, kept + 10)}));
  const std::optional<triage::FamilyTimeStats> oldest = f.stats(f.family("oldest")->family_id);
  const std::optional<triage::FamilyTimeStats> newest = f.stats(f.family("newest")->family_id);
  REQUIRE(oldest);
  REQUIRE(newest);
  CHECK(oldest->replayed_launches == 0);  // forgotten: counted as the application's own
  CHECK(newest->replayed_launches == 1);
}

TEST_CASE("trace folder: a profiled launch's replay window counts as a replayed execution", "[component][trace_folder]") {
  Folder f;
  Family* fam = f.family("windowed");
  collectors::LaunchEvent ev = testing::make_launch("windowed", 77, {512, 1, 1}, {128, 1, 1});
  f.trace.add_replay_window(*fam, ev, 5000, 9000);
  f.trace.add_replay_window(*fam, ev, 9000, 9000);  // empty: nothing
  const std::optional<triage::FamilyTimeStats> s = f.stats(fam->family_id);
  REQUIRE(s);
  CHECK(s->launches == 1);
  CHECK(s->replayed_launches == 1);
  CHECK(f.durations(fam->family_id).empty());
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  const std::vector<v1::KernelExecution> e = f.executions(r);
  REQUIRE(e.size() == 1);
  CHECK(e[0].replayed());
  CHECK(e[0].start_ns() == 5000);
  CHECK(e[0].end_ns() == 9000);
  CHECK(e[0].correlation_id() == 77);
  CHECK(e[0].grid().x() == 512);
}

TEST_CASE("trace folder: executions carry the NVTX path their launch was made in", "[component][trace_folder]") {
  Folder f;
  collectors::NvtxEvent push;
  push.kind = collectors::NvtxEvent::Kind::kPush;
  push.message = "epoch";
  f.nvtx.on_event(push);
  push.message = "step";
  f.nvtx.on_event(push);
  f.nvtx.note_launch(9);
  f.nvtx.note_launch(10);
  collectors::NvtxEvent pop;
  pop.kind = collectors::NvtxEvent::Kind::kPop;
  pop.timestamp_ns = 50000;
  f.nvtx.on_event(pop);
  f.trace.on_activity(batch({exec("in_range", 1000, 5000, 9), exec("in_range", 8000, 5000, 11)}));
  f.trace.on_activity(batch({exec("in_range", 15000, 5000, 10)}));
  const uint64_t id = f.family("in_range")->family_id;
  {
    std::unique_lock<std::mutex> lock = f.trace.lock();
    const std::map<uint32_t, uint64_t>* paths = f.trace.nvtx_launches_locked(id);
    REQUIRE(paths != nullptr);
    REQUIRE(paths->size() == 1);
    CHECK(f.nvtx.path_text(paths->begin()->first) == "epoch/step");
    CHECK(paths->begin()->second == 2);
    CHECK(f.trace.nvtx_launches_locked(id + 100) == nullptr);
  }
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  std::vector<std::string> texts;
  for (const v1::KernelExecution& e : f.executions(r)) texts.emplace_back(tools::lookup(r, e.nvtx_path_iid()));
  CHECK(texts == std::vector<std::string>{"epoch/step", "", "epoch/step"});
  // The closed "step" range went out with the first chunk.
  size_t ranges = 0;
  for (int i : r.trace_records) ranges += static_cast<size_t>(r.file.records(i).trace().nvtx_ranges_size());
  CHECK(ranges == 1);
}

TEST_CASE("trace folder: each family is defined once in the file, before its executions", "[component][trace_folder]") {
  Folder f;
  f.trace.on_activity(batch({exec("defined", 1000, 1000), exec("defined", 3000, 1000)}));
  f.trace.on_activity(batch({exec("defined", 5000, 1000), exec("other", 7000, 1000)}));
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::vector<uint64_t> defined;
  std::set<uint64_t> seen;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_family()) {
      defined.push_back(rec.family().id());
      seen.insert(rec.family().id());
    }
    if (rec.has_trace()) {
      for (const v1::KernelExecution& e : rec.trace().kernels()) CHECK(seen.count(e.family_id()) == 1);
    }
  }
  CHECK(defined == std::vector<uint64_t>{f.family("defined")->family_id, f.family("other")->family_id});
  CHECK(f.executions(r).size() == 4);
}

TEST_CASE("trace folder: beyond trace_max_events the timeline counts on and the file does not", "[component][trace_folder]") {
  AgentConfig c;
  c.trace_max_events = 3;
  Folder f(c);
  std::vector<collectors::KernelActivity> five;
  for (uint64_t i = 0; i < 5; ++i) five.push_back(exec("capped", 1000 + i * 2000, 1000));
  f.trace.on_activity(batch(five));
  // NVTX ranges share the cap: none fits any more.
  collectors::NvtxEvent push;
  push.kind = collectors::NvtxEvent::Kind::kPush;
  push.message = "late_range";
  f.nvtx.on_event(push);
  collectors::NvtxEvent pop;
  pop.kind = collectors::NvtxEvent::Kind::kPop;
  f.nvtx.on_event(pop);
  f.trace.on_activity(batch({exec("capped", 20000, 1000)}));
  f.trace.close();
  CHECK(f.stats(f.family("capped")->family_id)->launches == 6);
  {
    std::unique_lock<std::mutex> lock = f.trace.lock();
    CHECK(f.trace.kernel_events_locked() == 3);
  }
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  CHECK(f.executions(r).size() == 3);
  for (int i : r.trace_records) CHECK(r.file.records(i).trace().nvtx_ranges_size() == 0);
}

TEST_CASE("trace folder: dropped records are counted and written even without executions", "[component][trace_folder]") {
  Folder f;
  collectors::ActivityBatch b;
  b.dropped_records = 4;
  f.trace.on_activity(b);
  f.trace.on_activity(collectors::ActivityBatch{});  // nothing at all: no chunk
  {
    std::unique_lock<std::mutex> lock = f.trace.lock();
    CHECK(f.trace.dropped_records_locked() == 4);
  }
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  REQUIRE(r.trace_records.size() == 1);
  CHECK(r.file.records(r.trace_records[0]).trace().dropped_records() == 4);
  CHECK(f.rankings == 2);  // the hook runs for every batch
}

TEST_CASE("trace folder: the duty cycle pauses the trace and cuts an execution running across the pause", "[component][trace_folder]") {
  Folder f(half_duty());
  constexpr uint64_t kSecond = 1'000'000'000;
  const uint64_t mono0 = 10 * kSecond;
  f.trace.started(f.platform.timestamp_ns(), mono0);
  f.trace.cycle(mono0 + kSecond / 2);  // inside the traced part of the window
  CHECK(f.platform.trace_pauses.load() == 0);
  f.platform.advance_clock(kSecond);
  f.trace.cycle(mono0 + 3 * kSecond / 2);
  CHECK(f.platform.trace_pauses.load() == 1);
  const uint64_t paused_at = f.platform.timestamp_ns();
  CHECK(f.notices == std::vector<std::string>{"trace_duty"});
  // Records of kernels that ran before the pause arrive after it; one was still running at it.
  f.trace.on_activity(batch({exec("across", paused_at - 50000, 10000), exec("across", paused_at - 20000, 100000000)}));
  const uint64_t id = f.family("across")->family_id;
  CHECK(f.durations(id) == std::vector<double>{10000});
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  std::vector<v1::KernelExecution> e = f.executions(r);
  REQUIRE(e.size() == 2);
  CHECK_FALSE(e[0].cut_by_pause());
  CHECK(e[1].cut_by_pause());
  CHECK(e[1].end_ns() == paused_at);

  // The next window: resumed, and the pause is in the file and the paused time.
  f.platform.advance_clock(kSecond);
  const uint64_t resumed_at = f.platform.timestamp_ns();
  f.trace.cycle(mono0 + 2 * kSecond + kSecond / 10);
  CHECK(f.platform.trace_resumes.load() == 1);
  CHECK(f.trace.paused_ns() == resumed_at - paused_at);
  r = tools::read_cutriage_bytes(f.bytes);
  const std::vector<std::pair<uint64_t, uint64_t>> pauses = tools::trace_pauses(r);
  REQUIRE(pauses.size() == 1);
  CHECK(pauses[0] == std::make_pair(paused_at, resumed_at));
  // A kernel after the resume is not cut.
  f.trace.on_activity(batch({exec("across", resumed_at + 1000, 10000)}));
  CHECK(f.durations(id).size() == 2);
  // Pausing again: the notice is not written twice.
  f.trace.cycle(mono0 + 3 * kSecond + kSecond / 2);
  CHECK(f.platform.trace_pauses.load() == 2);
  CHECK(f.notices.size() == 1);
}

TEST_CASE("trace folder: ending inside a pause writes the pause", "[component][trace_folder]") {
  Folder f(half_duty());
  constexpr uint64_t kSecond = 1'000'000'000;
  f.trace.started(f.platform.timestamp_ns(), 0);
  f.trace.cycle(3 * kSecond / 2);
  const uint64_t paused_at = f.platform.timestamp_ns();
  f.platform.advance_clock(kSecond / 4);
  f.trace.close();
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  const std::vector<std::pair<uint64_t, uint64_t>> pauses = tools::trace_pauses(r);
  REQUIRE(pauses.size() == 1);
  CHECK(pauses[0].first == paused_at);
  CHECK(pauses[0].second == paused_at + kSecond / 4);
  CHECK(f.trace.paused_ns() == kSecond / 4);
}

TEST_CASE("trace folder: a full duty cycle never pauses", "[component][trace_folder]") {
  Folder f;  // trace_duty 1
  f.trace.started(0, 0);
  for (uint64_t s = 0; s < 200; s += 7) f.trace.cycle(s * 1'000'000'000);
  CHECK(f.platform.trace_pauses.load() == 0);
  CHECK(f.notices.empty());
}

TEST_CASE("trace folder: copies go into the timeline and the chunk", "[component][trace_folder]") {
  Folder f;
  collectors::ActivityBatch b;
  collectors::CopyActivity copy;
  copy.start_ns = 1000;
  copy.end_ns = 3000;
  copy.bytes = 1 << 20;
  copy.kind = triage::CopyKind::kHostToDevice;
  copy.pageable = true;
  b.copies.push_back(copy);
  collectors::CopyActivity broken = copy;
  broken.end_ns = 500;  // incomplete: ignored
  b.copies.push_back(broken);
  f.trace.on_activity(b);
  {
    std::unique_lock<std::mutex> lock = f.trace.lock();
    const triage::TimelineSummary s = f.trace.timeline_locked().summary();
    CHECK(s.copy_executions == 1);
    REQUIRE(s.devices.size() == 1);
    CHECK(s.devices[0].pageable_copy_ns == Approx(2000));
  }
  tools::ReadResult r = tools::read_cutriage_bytes(f.bytes);
  REQUIRE(r.trace_records.size() == 1);
  REQUIRE(r.file.records(r.trace_records[0]).trace().copies_size() == 1);
  CHECK(r.file.records(r.trace_records[0]).trace().copies(0).bytes() == (1 << 20));
}

namespace {
// Synthetic: a record of graph 2's node `node` under correlation id `correlation`.
collectors::KernelActivity graph_exec(std::string_view name, uint64_t start, uint64_t duration, uint32_t correlation,
                                      uint64_t node) {
  collectors::KernelActivity a = exec(name, start, duration, correlation);
  a.graph_id = 2;
  a.graph_node_id = node;
  return a;
}
}  // namespace

TEST_CASE("trace folder: a watched graph launch whose id another launch shares has no span and says why",
          "[component][trace_folder][graphs]") {
  // Synthetic timings; the case is real (tests/data/graphs/graph_mlp-always-on-repeated-ids.txt):
  // CUPTI gave later graph launches the watched launch's id, and its span grew to 125 s.
  Folder f;
  f.trace.started(0, 0);
  f.trace.watch_graph_launch(25849);
  f.trace.watch_graph_nodes(25849);
  f.trace.watch_graph_launch(25851);
  f.trace.on_activity(batch({graph_exec("gemm", 1000, 800, 25849, 1), graph_exec("norm", 1800, 200, 25849, 2),
                             graph_exec("gemm", 3000, 800, 25851, 1), graph_exec("norm", 3800, 200, 25851, 2)}));
  // One launch each so far: spans of 1000 ns.
  CHECK(f.trace.graph_launch_span(25849) == std::optional<double>(1000));
  CHECK(f.trace.graph_launch_span(25851) == std::optional<double>(1000));
  CHECK(f.trace.graph_launch_executions(25849).size() == 2);
  CHECK(f.trace.graph_launch_unusable(25849).empty());
  // A minute later, another launch under 25849: its nodes again. Not a 60 s span.
  f.trace.on_activity(batch({graph_exec("gemm", 60'000'001'000, 800, 25849, 1)}));
  CHECK_FALSE(f.trace.graph_launch_span(25849).has_value());
  CHECK(f.trace.graph_launch_executions(25849).empty());
  CHECK(f.trace.graph_launch_unusable(25849).find("node 1 twice") != std::string::npos);
  CHECK(f.trace.graph_launch_span(25851) == std::optional<double>(1000));
  // The graph view counts the three launches as three replays of 1000 ns, not two.
  {
    std::unique_lock<std::mutex> lock = f.trace.lock();
    const std::vector<triage::GraphStats> graphs = f.trace.graph_accumulator_locked().summary();
    REQUIRE(graphs.size() == 1);
    CHECK(graphs[0].replays == 3);
  }
}

TEST_CASE("trace folder: a watched graph launch with a kernel cut by a pause has no span",
          "[component][trace_folder][graphs]") {
  Folder f(half_duty());
  constexpr uint64_t kSecond = 1'000'000'000;
  const uint64_t mono0 = 10 * kSecond;
  f.trace.started(f.platform.timestamp_ns(), mono0);
  f.trace.watch_graph_launch(7);
  f.platform.advance_clock(kSecond);
  f.trace.cycle(mono0 + 3 * kSecond / 2);  // paused
  const uint64_t paused_at = f.platform.timestamp_ns();
  f.trace.on_activity(batch({graph_exec("gemm", paused_at - 900, 800, 7, 1), graph_exec("norm", paused_at - 100, 5000, 7, 2)}));
  CHECK_FALSE(f.trace.graph_launch_span(7).has_value());
  CHECK(f.trace.graph_launch_unusable(7).find("running when the trace paused") != std::string::npos);
}

}  // namespace test_component_trace_folder
