// FamilyTable and Family on their own: one family per (mangled name, device, block shape), dense
// 1-based ids, the creation hook, the names worked out once per kernel, and the launch path's
// thread-local cache, which must never answer with a family of another table or another name.
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.h"
#include "fake_platform.h"
#include "family.h"
#include "instance_ids.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_family {

using namespace cutriage;
using agent::Family;
using agent::FamilyTable;
using agent::KernelFilter;
using testing::make_launch;

namespace {

Family* create(FamilyTable& t, const std::string& name, uint32_t device, triage::Dim3 block) {
  std::lock_guard<std::mutex> lock(t.mutex());
  return t.find_or_create_locked(name, device, block);
}

}  // namespace

TEST_CASE("family: one family per name, device and block shape", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  Family* a = create(t, "gemm", 0, {256, 1, 1});
  CHECK(create(t, "gemm", 0, {256, 1, 1}) == a);
  Family* other_block = create(t, "gemm", 0, {128, 1, 1});
  Family* other_y = create(t, "gemm", 0, {256, 2, 1});
  Family* other_device = create(t, "gemm", 1, {256, 1, 1});
  Family* other_name = create(t, "softmax", 0, {256, 1, 1});
  const std::set<Family*> distinct{a, other_block, other_y, other_device, other_name};
  CHECK(distinct.size() == 5);
  CHECK(other_block->block == triage::Dim3{128, 1, 1});
  CHECK(other_device->device == 1);
  // Families of one kernel share its names, worked out once.
  CHECK(other_block->names == a->names);
  CHECK(other_name->names != a->names);
  CHECK(a->stats.mangled_name == "gemm");
}

TEST_CASE("family: ids are 1-based, dense and in creation order", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  std::vector<Family*> made;
  for (uint32_t x : {32U, 64U, 128U, 256U}) made.push_back(create(t, "k", 0, {x, 1, 1}));
  (void)create(t, "k", 0, {64, 1, 1});  // not new
  std::lock_guard<std::mutex> lock(t.mutex());
  REQUIRE(t.all_locked().size() == made.size());
  for (size_t i = 0; i < made.size(); ++i) {
    CHECK(made[i]->family_id == i + 1);
    CHECK(t.by_id_locked(i + 1) == made[i]);
    CHECK(t.all_locked()[i] == made[i]);
  }
  CHECK(t.by_id_locked(0) == nullptr);
  CHECK(t.by_id_locked(made.size() + 1) == nullptr);
}

TEST_CASE("family: the creation hook runs once per family, under the table's lock", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  std::vector<uint64_t> created;
  bool always_locked = true;
  t.set_on_create([&](Family& f) {
    created.push_back(f.family_id);
    // Another thread cannot take the lock while the hook runs.
    bool other_got_it = false;
    std::thread([&] {
      if (t.mutex().try_lock()) {
        other_got_it = true;
        t.mutex().unlock();
      }
    }).join();
    always_locked = always_locked && !other_got_it;
    // The hook sees the family complete: its id and identity are set before it runs.
    CHECK(f.family_id != 0);
    CHECK(!f.mangled.empty());
    CHECK(f.names != nullptr);
    f.candidate.store(true);
  });
  for (int i = 0; i < 3; ++i) {
    (void)t.for_launch(make_launch("hook_a", 1));
    (void)t.for_launch(make_launch("hook_b", 2));
  }
  (void)create(t, "hook_a", 0, {256, 1, 1});  // the launches' block: the same family
  (void)create(t, "hook_a", 0, {32, 1, 1});   // new
  CHECK(created == std::vector<uint64_t>{1, 2, 3});
  CHECK(always_locked);
  std::lock_guard<std::mutex> lock(t.mutex());
  for (Family* f : t.all_locked()) CHECK(f->candidate.load());
}

TEST_CASE("family: a launch finds its family by name, device and block", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  Family* a = t.for_launch(make_launch("launch_a", 1, {1024, 1, 1}, {256, 1, 1}));
  // Another grid is the same family (the block decides), another block is not.
  CHECK(t.for_launch(make_launch("launch_a", 2, {2048, 1, 1}, {256, 1, 1})) == a);
  Family* b = t.for_launch(make_launch("launch_a", 3, {1024, 1, 1}, {64, 1, 1}));
  CHECK(b != a);
  collectors::LaunchEvent dev1 = make_launch("launch_a", 4);
  dev1.device = 1;
  Family* c = t.for_launch(dev1);
  CHECK(c != a);
  CHECK(c->device == 1);
  // What the launch path found is what the table holds.
  CHECK(create(t, "launch_a", 0, {256, 1, 1}) == a);
  CHECK(create(t, "launch_a", 0, {64, 1, 1}) == b);
  // A launch without a known shape (no launch config) is the 0x0x0 block's family.
  collectors::LaunchEvent shapeless = make_launch("launch_a", 5);
  shapeless.launch.reset();
  Family* d = t.for_launch(shapeless);
  CHECK(d->block == triage::Dim3{0, 0, 0});
  CHECK(d != a);
}

TEST_CASE("family: the thread-local cache does not answer for another table", "[component][family]") {
  KernelFilter filter;
  FamilyTable first(testing::fresh_instance_id(), filter);
  FamilyTable second(testing::fresh_instance_id(), filter);
  const collectors::LaunchEvent ev = make_launch("cached_kernel", 1);
  Family* f1 = first.for_launch(ev);
  Family* f2 = second.for_launch(ev);
  REQUIRE(f1 != f2);
  // Alternating between the tables on one thread, each answers with its own family.
  for (int i = 0; i < 4; ++i) {
    CHECK(first.for_launch(ev) == f1);
    CHECK(second.for_launch(ev) == f2);
  }
  std::lock_guard<std::mutex> lock(second.mutex());
  CHECK(second.all_locked().size() == 1);
  CHECK(second.by_id_locked(1) == f2);
}

TEST_CASE("family: the cache does not answer for another name at the same address", "[component][family]") {
  // CUPTI's name pointers may be reused for another kernel's name: the cache compares the text.
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  std::string buffer = "reused_a";
  collectors::LaunchEvent ev = make_launch("placeholder", 1);
  ev.mangled_name = buffer;
  Family* a = t.for_launch(ev);
  buffer.back() = 'b';  // same address, same length, another kernel
  ev.mangled_name = buffer;
  Family* b = t.for_launch(ev);
  CHECK(a != b);
  CHECK(a->mangled == "reused_a");
  CHECK(b->mangled == "reused_b");
}

TEST_CASE("family: the cache keeps working beyond its few entries", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  std::vector<Family*> first_round;
  first_round.reserve(20);
  for (int i = 0; i < 20; ++i) first_round.push_back(t.for_launch(make_launch("many_" + std::to_string(i), 1)));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 20; ++i) CHECK(t.for_launch(make_launch("many_" + std::to_string(i), 2)) == first_round[i]);
  }
  std::lock_guard<std::mutex> lock(t.mutex());
  CHECK(t.all_locked().size() == 20);
}

TEST_CASE("family: launches from many threads make one family per key", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  std::atomic<int> hooks{0};
  t.set_on_create([&](Family&) { ++hooks; });
  constexpr int kThreads = 8;
  std::vector<std::vector<Family*>> seen(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < 200; ++i) {
        const uint32_t block = 32U << (i % 4);
        seen[th].push_back(t.for_launch(make_launch("threaded_" + std::to_string(i % 3), 1, {8, 1, 1}, {block, 1, 1})));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(hooks.load() == 12);  // 3 names x 4 blocks
  std::lock_guard<std::mutex> lock(t.mutex());
  REQUIRE(t.all_locked().size() == 12);
  for (size_t i = 0; i < 12; ++i) CHECK(t.all_locked()[i]->family_id == i + 1);
  // Every thread saw the same family for the same launch.
  for (int th = 1; th < kThreads; ++th) CHECK(seen[th] == seen[0]);
}

TEST_CASE("family: the kernel-name filter and communication kernels are decided at creation", "[component][family]") {
  KernelFilter filter;
  REQUIRE(filter.set("regex:^keep", agent::NameBase::kFunction).empty());
  FamilyTable t(testing::fresh_instance_id(), filter);
  CHECK(create(t, "keep_this", 0, {1, 1, 1})->names->matches_filter);
  CHECK_FALSE(create(t, "drop_this", 0, {1, 1, 1})->names->matches_filter);
  CHECK(create(t, "ncclDevKernel_AllReduce_Sum_f32", 0, {1, 1, 1})->names->no_replay);
  CHECK_FALSE(create(t, "keep_gemm", 0, {1, 1, 1})->names->no_replay);
  // The rule itself is triage's (test_library.cpp), shared with the report's communication share.
  CHECK(create(t, "at::native::ncclLaunch", 0, {1, 1, 1})->names->no_replay);
  CHECK(create(t, "nvshmemi_barrier_kernel", 0, {1, 1, 1})->names->no_replay);
  CHECK_FALSE(create(t, "my_nccl_helper", 0, {1, 1, 1})->names->no_replay);
}

TEST_CASE("family: a mangled name is demangled for its display name", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  Family* f = create(t, "_Z10vector_addPKfS0_Pfi", 2, {128, 1, 1});
  CHECK(f->names->demangled == "vector_add(float const*, float const*, float*, int)");
  CHECK(f->names->function == "vector_add");
  const wire::FamilyDef d = f->definition();
  CHECK(d.id == f->family_id);
  CHECK(d.mangled_name == "_Z10vector_addPKfS0_Pfi");
  CHECK(d.display_name == "vector_add");
  CHECK(d.device == 2);
  CHECK(d.block == triage::Dim3{128, 1, 1});
}

TEST_CASE("family: a rejected counter is noted once", "[component][family]") {
  KernelFilter filter;
  FamilyTable t(testing::fresh_instance_id(), filter);
  Family* f = create(t, "rejects", 0, {1, 1, 1});
  std::lock_guard<std::mutex> lock(t.mutex());
  f->note_rejected("launch__grid_size");
  f->note_rejected("sm__cycles_elapsed.avg");
  f->note_rejected("launch__grid_size");
  CHECK(f->rejected == std::vector<std::string>{"launch__grid_size", "sm__cycles_elapsed.avg"});
}

}  // namespace test_component_family
