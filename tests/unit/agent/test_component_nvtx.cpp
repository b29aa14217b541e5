// NvtxTracker on its own: the "outer/inner" paths of push/pop ranges per thread, the launches made
// inside them, the closed ranges handed to the next trace chunk (and the cap on them), start/end
// ranges, the include/exclude filters, and the bounds on what an unbalanced application can make
// it keep.
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "catch.h"
#include "config.h"
#include "instance_ids.h"
#include "nvtx_tracker.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_nvtx {

using namespace cutriage;
using agent::KernelFilter;
using agent::NvtxTracker;
using Kind = collectors::NvtxEvent::Kind;

namespace {

collectors::NvtxEvent push(std::string_view name, uint64_t ts, std::string_view domain = {}) {
  collectors::NvtxEvent e;
  e.kind = Kind::kPush;
  e.message = name;
  e.domain = domain;
  e.timestamp_ns = ts;
  e.thread_id = 77;
  return e;
}

collectors::NvtxEvent pop(uint64_t ts) {
  collectors::NvtxEvent e;
  e.kind = Kind::kPop;
  e.timestamp_ns = ts;
  e.thread_id = 77;
  return e;
}

collectors::NvtxEvent start_end(Kind kind, uint64_t id, std::string_view name, uint64_t ts, uint32_t thread) {
  collectors::NvtxEvent e;
  e.kind = kind;
  e.range_id = id;
  e.message = name;
  e.timestamp_ns = ts;
  e.thread_id = thread;
  return e;
}

// correlation id -> path text, for what was noted so far.
std::unordered_map<uint64_t, std::string> drained(NvtxTracker& t) {
  std::unordered_map<uint64_t, uint32_t> ids;
  t.drain_launches(ids);
  std::unordered_map<uint64_t, std::string> out;
  for (const auto& [corr, path] : ids) out[corr] = t.path_text(path);
  return out;
}

KernelFilter filter(const std::string& spec) {
  KernelFilter f;
  REQUIRE(f.set(spec, agent::NameBase::kFunction).empty());
  return f;
}

}  // namespace

TEST_CASE("nvtx: a launch inside nested ranges gets the outer/inner path", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  t.note_launch(1);  // no range open: nothing to remember
  t.on_event(push("train", 10));
  t.note_launch(2);
  t.on_event(push("forward", 20));
  t.note_launch(3);
  t.on_event(pop(30));
  t.on_event(push("backward", 40));
  t.note_launch(4);
  t.on_event(pop(50));
  t.on_event(pop(60));
  t.note_launch(5);  // all closed again
  const auto launches = drained(t);
  CHECK(launches.size() == 3);
  CHECK(launches.at(2) == "train");
  CHECK(launches.at(3) == "train/forward");
  CHECK(launches.at(4) == "train/backward");
  CHECK(launches.count(1) == 0);
  CHECK(launches.count(5) == 0);
  // Drained means moved: the next drain has nothing of them.
  CHECK(drained(t).empty());
  // Path ids are stable and shared: 0 is "no path".
  const std::vector<std::string> paths = t.paths();
  REQUIRE(paths.size() == 4);
  CHECK(paths[0].empty());
  CHECK(t.path_text(0).empty());
  CHECK(t.path_text(999).empty());
  t.on_event(push("train", 70));
  t.on_event(push("forward", 80));
  CHECK(t.paths().size() == 4);  // the same path again: no new id
}

TEST_CASE("nvtx: closed ranges carry their times, depth and domain, once", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  t.on_event(push("outer", 100, "app"));
  t.on_event(push("inner", 200));
  t.on_event(pop(300));
  t.on_event(pop(400));
  t.on_event(pop(500));  // unbalanced: nothing open, ignored
  std::vector<wire::NvtxRange> closed = t.take_closed(100);
  REQUIRE(closed.size() == 2);
  // In the order they closed: the inner one first.
  CHECK(closed[0].name == "inner");
  CHECK(closed[0].start_ns == 200);
  CHECK(closed[0].end_ns == 300);
  CHECK(closed[0].depth == 1);
  CHECK(closed[0].thread_id == 77);
  CHECK(closed[1].name == "outer");
  CHECK(closed[1].domain == "app");
  CHECK(closed[1].start_ns == 100);
  CHECK(closed[1].end_ns == 400);
  CHECK(closed[1].depth == 0);
  CHECK(t.take_closed(100).empty());
}

TEST_CASE("nvtx: take_closed hands out at most its cap and drops the rest", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  for (uint64_t i = 0; i < 5; ++i) {
    t.on_event(push("range", 10 * i));
    t.on_event(pop(10 * i + 5));
  }
  std::vector<wire::NvtxRange> some = t.take_closed(2);
  REQUIRE(some.size() == 2);
  CHECK(some[0].start_ns == 0);
  CHECK(some[1].start_ns == 10);
  // The trace's event cap is reached: what did not fit is gone, not held for later.
  CHECK(t.take_closed(100).empty());
}

TEST_CASE("nvtx: start/end ranges close by id with the starting thread", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  t.on_event(start_end(Kind::kStart, 7, "load", 1000, 11));
  t.on_event(start_end(Kind::kStart, 8, "save", 1100, 12));
  t.on_event(start_end(Kind::kEnd, 99, "", 1150, 13));  // never started: nothing
  t.on_event(start_end(Kind::kEnd, 8, "", 1200, 13));
  std::vector<wire::NvtxRange> closed = t.take_closed(10);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].name == "save");
  CHECK(closed[0].start_ns == 1100);
  CHECK(closed[0].end_ns == 1200);
  CHECK(closed[0].thread_id == 12);
  t.on_event(start_end(Kind::kEnd, 7, "", 1300, 11));
  closed = t.take_closed(10);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].name == "load");
  // Start/end ranges are no thread's stack: a launch meanwhile has no path.
  t.on_event(start_end(Kind::kStart, 9, "open", 1400, 11));
  t.note_launch(1);
  CHECK(drained(t).empty());
  // Marks are neither ranges nor paths.
  collectors::NvtxEvent mark;
  mark.kind = Kind::kMark;
  mark.message = "mark";
  t.on_event(mark);
  CHECK(t.take_closed(10).empty());
  CHECK(t.paths().size() == 1);
}

TEST_CASE("nvtx: each thread has its own ranges, and a drain collects every thread's launches", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  t.on_event(push("main_range", 1));
  std::thread([&] {
    t.note_launch(10);  // this thread has nothing open
    t.on_event(push("worker_range", 2));
    t.note_launch(11);
    t.on_event(pop(3));
  }).join();
  t.note_launch(12);
  const auto launches = drained(t);
  CHECK(launches.size() == 2);
  CHECK(launches.at(11) == "worker_range");
  CHECK(launches.at(12) == "main_range");
}

TEST_CASE("nvtx: one tracker's ranges are not another's", "[component][nvtx]") {
  NvtxTracker a(testing::fresh_instance_id());
  NvtxTracker b(testing::fresh_instance_id());
  a.on_event(push("only_in_a", 1));
  b.note_launch(5);
  CHECK(drained(b).empty());
  CHECK(b.paths().size() == 1);
}

TEST_CASE("nvtx: a thread's stack stays bounded when ranges are pushed without pops", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  constexpr int kPushes = 5000;
  for (int i = 0; i < kPushes; ++i) t.on_event(push("leak", static_cast<uint64_t>(i)));
  int closed = 0;
  for (int i = 0; i < kPushes; ++i) {
    t.on_event(pop(static_cast<uint64_t>(kPushes) + static_cast<uint64_t>(i)));
    closed += static_cast<int>(t.take_closed(kPushes).size());
  }
  // Only what the stack kept could be closed, and the pops emptied it.
  CHECK(closed > 0);
  CHECK(closed < kPushes);
  t.note_launch(1);
  CHECK(drained(t).empty());
}

TEST_CASE("nvtx: include and exclude filters look at every range open on the thread", "[component][nvtx]") {
  NvtxTracker t(testing::fresh_instance_id());
  const KernelFilter none;
  const KernelFilter include = filter("regex:^train");
  const KernelFilter exclude = filter("regex:warmup");
  // No filter: always.
  CHECK(t.allows(none, none));
  // Include: nothing open matches nothing.
  CHECK_FALSE(t.allows(include, none));
  CHECK(t.allows(none, exclude));
  t.on_event(push("train_step", 1));
  t.on_event(push("attention", 2));  // the inner range does not match, the outer one does
  CHECK(t.allows(include, none));
  CHECK(t.allows(include, exclude));
  t.on_event(push("warmup_pass", 3));
  CHECK_FALSE(t.allows(include, exclude));
  CHECK_FALSE(t.allows(none, exclude));
  t.on_event(pop(4));
  CHECK(t.allows(include, exclude));
  t.on_event(pop(5));
  t.on_event(pop(6));
  t.on_event(push("eval", 7));
  CHECK_FALSE(t.allows(include, none));
  // Another thread's open ranges do not count for this one.
  std::thread([&] { t.on_event(push("train_other_thread", 8)); }).join();
  CHECK_FALSE(t.allows(include, none));
}

}  // namespace test_component_nvtx
