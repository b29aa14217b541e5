// ContextTable, DeviceCatalog and KernelBuilds on their own, with the fake platform's profilers:
// one profiled launch per context (claim refuses a busy one), one enabled range profiler per
// device (a claim disables the device's other contexts' profilers, never a busy one's), contexts
// first seen at a launch, idle profilers; device facts and profiler hosts asked once, failures
// remembered.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "catch.h"
#include "contexts.h"
#include "devices.h"
#include "family.h"
#include "fake_platform.h"
#include "instance_ids.h"
#include "log.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_contexts {

using namespace cutriage;
using agent::ContextState;
using agent::ContextTable;
using agent::DeviceCatalog;
using testing::FakePlatform;
using testing::make_launch;

namespace {

collectors::ContextEvent context(uint64_t id, uint32_t device) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an opaque fake handle, never dereferenced.
  return collectors::ContextEvent{id, reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + id)), device};
}

collectors::LaunchEvent launch_on(uint64_t context_id, uint32_t device, uint64_t correlation = 1) {
  collectors::LaunchEvent ev = make_launch("ctx_kernel", correlation, {1, 1, 1}, {32, 1, 1}, context_id);
  ev.device = device;
  return ev;
}

// Gives the context an enabled fake range profiler, as a profiled launch leaves it.
void enable_profiler(FakePlatform& platform, ContextState& ctx, int group) {
  std::lock_guard<std::mutex> lock(ctx.profiler_mutex);
  auto rp = platform.make_range_profiler(ctx.event, 1);
  REQUIRE(rp.is_ok());
  ctx.profiler = std::move(rp).value();
  collectors::MetricPlan plan;
  plan.metrics = {"gpu__time_duration.sum"};
  plan.passes = 1;
  REQUIRE(ctx.profiler->begin(plan).is_ok());
  (void)ctx.profiler->end();
  FakePlatform::began_on_this_thread() = false;  // no launch of this thread was replayed
  ctx.configured_group.store(group);
}

}  // namespace

TEST_CASE("contexts: a claim holds the context until released, a second claim is refused", "[component][contexts]") {
  ContextTable t;
  t.created(context(1, 0));
  std::shared_ptr<ContextState> held = t.claim(launch_on(1, 0));
  REQUIRE(held);
  CHECK(held->busy.load());
  CHECK(held->event.context_id == 1);
  CHECK(t.claim(launch_on(1, 0, 2)) == nullptr);
  CHECK(held->busy.load());  // the refused claim left the holder's flag alone
  held->busy.store(false);
  std::shared_ptr<ContextState> again = t.claim(launch_on(1, 0, 3));
  CHECK(again == held);
}

TEST_CASE("contexts: a claim disables the device's other contexts' profilers", "[component][contexts]") {
  FakePlatform platform;
  ContextTable t;
  t.created(context(1, 0));
  t.created(context(2, 0));
  t.created(context(3, 1));  // another device
  std::shared_ptr<ContextState> other = t.for_launch(launch_on(2, 0));
  std::shared_ptr<ContextState> elsewhere = t.for_launch(launch_on(3, 1));
  enable_profiler(platform, *other, 4);
  enable_profiler(platform, *elsewhere, 5);
  REQUIRE(platform.stats.enabled_context[0].load() == 2);
  REQUIRE(platform.stats.enabled_context[1].load() == 3);

  std::shared_ptr<ContextState> mine = t.claim(launch_on(1, 0));
  REQUIRE(mine);
  // Device 0's counters are free for context 1 now; the context forgot its configured group.
  CHECK(platform.stats.enabled_context[0].load() == 0);
  CHECK(other->configured_group.load() == -1);
  // Device 1 is none of this claim's business.
  CHECK(platform.stats.enabled_context[1].load() == 3);
  CHECK(elsewhere->configured_group.load() == 5);
}

TEST_CASE("contexts: a busy context on the device refuses the claim and keeps its profiler", "[component][contexts]") {
  FakePlatform platform;
  ContextTable t;
  t.created(context(1, 0));
  t.created(context(2, 0));
  std::shared_ptr<ContextState> busy = t.claim(launch_on(2, 0));
  REQUIRE(busy);
  enable_profiler(platform, *busy, 3);
  const int disables = platform.stats.disables.load();

  CHECK(t.claim(launch_on(1, 0)) == nullptr);
  // Never disabled under the profile in flight, and the refused context is not left busy.
  CHECK(platform.stats.disables.load() == disables);
  CHECK(platform.stats.enabled_context[0].load() == 2);
  CHECK(busy->configured_group.load() == 3);
  CHECK_FALSE(t.for_launch(launch_on(1, 0))->busy.load());

  busy->busy.store(false);
  CHECK(t.claim(launch_on(1, 0)) != nullptr);
  CHECK(platform.stats.enabled_context[0].load() == 0);
}

TEST_CASE("contexts: concurrent claims never hold two contexts of one device", "[component][contexts]") {
  ContextTable t;
  for (uint64_t id = 1; id <= 4; ++id) t.created(context(id, 0));
  std::atomic<int> holders{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (uint64_t th = 0; th < 8; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < 2000; ++i) {
        std::shared_ptr<ContextState> ctx = t.claim(launch_on(1 + (th + i) % 4, 0, i));
        if (!ctx) continue;
        if (holders.fetch_add(1) != 0) ++overlaps;
        ++granted;
        holders.fetch_sub(1);
        ctx->busy.store(false);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(overlaps.load() == 0);
  CHECK(granted.load() > 0);
}

TEST_CASE("contexts: a context first seen at a launch is added and counted once", "[component][contexts]") {
  ContextTable t;
  CHECK(t.seen() == 0);
  t.created(context(1, 0));
  CHECK(t.seen() == 1);
  std::shared_ptr<ContextState> known = t.for_launch(launch_on(1, 0));
  CHECK(t.seen() == 1);
  std::shared_ptr<ContextState> late = t.for_launch(launch_on(9, 0));
  CHECK(t.seen() == 2);
  CHECK(late->event.context_id == 9);
  CHECK(late->event.device == 0);
  CHECK(late != known);
  CHECK(t.for_launch(launch_on(9, 0, 2)) == late);
  CHECK(t.seen() == 2);
}

TEST_CASE("contexts: a destroyed context's profilers go with it, unless a launch holds it", "[component][contexts]") {
  FakePlatform platform;
  ContextTable t;
  t.created(context(1, 0));
  t.created(context(2, 0));
  std::shared_ptr<ContextState> idle = t.for_launch(launch_on(1, 0));
  enable_profiler(platform, *idle, 0);
  std::shared_ptr<ContextState> in_flight = t.claim(launch_on(2, 0));
  REQUIRE(in_flight);
  {
    std::lock_guard<std::mutex> lock(in_flight->profiler_mutex);
    auto rp = platform.make_range_profiler(in_flight->event, 1);
    REQUIRE(rp.is_ok());
    in_flight->profiler = std::move(rp).value();
  }
  t.destroying(context(1, 0));
  t.destroying(context(2, 0));
  t.destroying(context(7, 0));  // never known: nothing
  CHECK(idle->profiler == nullptr);
  CHECK(in_flight->profiler != nullptr);  // the launch in flight still ends its profile
  // Forgotten: a launch on the same id later is a new context.
  CHECK(t.for_launch(launch_on(1, 0)) != idle);
}

TEST_CASE("contexts: profilers idle for the release time are found, others are not", "[component][contexts]") {
  FakePlatform platform;
  ContextTable t;
  t.created(context(1, 0));
  t.created(context(2, 0));
  t.created(context(3, 0));
  std::shared_ptr<ContextState> a = t.for_launch(launch_on(1, 0));
  std::shared_ptr<ContextState> b = t.for_launch(launch_on(2, 0));
  a->profiled_end_mono_ns.store(1000);
  b->profiled_end_mono_ns.store(5000);
  // Context 3 never profiled: never idle.
  CHECK(t.idle_since(1500, 1000).empty());
  std::vector<std::shared_ptr<ContextState>> idle = t.idle_since(2000, 1000);
  REQUIRE(idle.size() == 1);
  CHECK(idle[0] == a);
  CHECK(t.idle_since(6000, 1000).size() == 2);

  enable_profiler(platform, *a, 2);
  {
    std::lock_guard<std::mutex> lock(a->profiler_mutex);
    a->release_locked();
  }
  CHECK(platform.stats.enabled_context[0].load() == 0);
  CHECK(a->configured_group.load() == -1);
  CHECK(a->profiled_end_mono_ns.load() == 0);
  CHECK(t.idle_since(6000, 1000).size() == 1);
}

TEST_CASE("devices: a device's facts are asked once and remembered", "[component][devices]") {
  FakePlatform platform;
  agent::Logger log;
  DeviceCatalog devices(platform, log);
  CHECK_FALSE(devices.known(0));  // not asked yet
  CHECK(platform.stats.device_info_calls.load() == 0);
  std::optional<collectors::DeviceInfo> d = devices.info(0);
  REQUIRE(d);
  CHECK(d->limits.chip == platform.config.chip);
  for (int i = 0; i < 3; ++i) REQUIRE(devices.info(0));
  CHECK(platform.stats.device_info_calls.load() == 1);
  REQUIRE(devices.known(0));
  CHECK(devices.known(0)->uuid == d->uuid);
  (void)devices.info(2);
  const auto all = devices.all();
  REQUIRE(all.size() == 2);
  CHECK(all.count(0) == 1);
  CHECK(all.count(2) == 1);
  CHECK(platform.stats.device_info_calls.load() == 2);
}

TEST_CASE("devices: a device that cannot be read is not asked again", "[component][devices]") {
  FakePlatform platform;
  platform.config.failing_devices = {1};
  agent::Logger log;
  DeviceCatalog devices(platform, log);
  CHECK_FALSE(devices.info(1));
  CHECK_FALSE(devices.info(1));
  CHECK_FALSE(devices.known(1));
  CHECK(platform.stats.device_info_calls.load() == 1);
  CHECK(devices.all().empty());
  CHECK(devices.info(0));  // other devices are asked as usual
}

TEST_CASE("devices: one profiler host per chip, a chip without one is not asked again", "[component][devices]") {
  FakePlatform platform;
  agent::Logger log;
  DeviceCatalog devices(platform, log);
  std::string error;
  std::shared_ptr<collectors::ProfilerHost> h = devices.host("GH100", &error);
  REQUIRE(h);
  CHECK(devices.host("GH100", &error) == h);
  CHECK(platform.stats.host_calls.load() == 1);
  CHECK(devices.host("GB100", &error) != h);
  CHECK(platform.stats.host_calls.load() == 2);

  platform.config.host_status = collectors::Status(collectors::StatusCode::kNotSupported, "no host for this chip");
  error.clear();
  CHECK(devices.host("AD102", &error) == nullptr);
  CHECK(error.find("no host for this chip") != std::string::npos);
  platform.config.host_status = collectors::Status::ok();  // would work now, but is not asked again
  error.clear();
  CHECK(devices.host("AD102", &error) == nullptr);
  CHECK(!error.empty());
  CHECK(platform.stats.host_calls.load() == 3);
  CHECK(devices.host("GH100", &error) == h);
}

TEST_CASE("devices: build notes are filled for kernels whose module was seen", "[component][devices]") {
  agent::KernelBuilds builds;
  builds.add({"with_lines", "also_with_lines"}, true, false);
  builds.add({"debug_build"}, false, true);
  triage::KernelInput lines;
  builds.fill("also_with_lines", lines);
  CHECK(lines.collection.has_line_info == std::optional<bool>(true));
  CHECK(lines.collection.debug_build == std::optional<bool>(false));
  triage::KernelInput debug;
  builds.fill("debug_build", debug);
  CHECK(debug.collection.has_line_info == std::optional<bool>(false));
  CHECK(debug.collection.debug_build == std::optional<bool>(true));
  // A module loaded before the agent: nothing is known of the build.
  triage::KernelInput unseen;
  builds.fill("never_loaded", unseen);
  CHECK_FALSE(unseen.collection.has_line_info.has_value());
  CHECK_FALSE(unseen.collection.debug_build.has_value());
}

TEST_CASE("devices: a launch's input takes the device's known limits", "[component][devices]") {
  FakePlatform platform;
  agent::Logger log;
  DeviceCatalog devices(platform, log);
  agent::KernelFilter filter;
  agent::FamilyTable families(testing::fresh_instance_id(), filter);
  agent::Family* f = nullptr;
  {
    std::lock_guard<std::mutex> lock(families.mutex());
    f = families.find_or_create_locked("_Z6scalarPf", 0, {32, 1, 1});
  }
  const collectors::LaunchEvent ev = launch_on(1, 0);
  triage::KernelInput before;
  agent::fill_launch_input(*f, ev, 5, devices, before);
  CHECK(before.mangled_name == "_Z6scalarPf");
  CHECK(before.function_name == "scalar");
  CHECK(before.launch_index == 5);
  CHECK_FALSE(before.device_limits);  // not read yet: fill_launch_input does not ask
  CHECK(platform.stats.device_info_calls.load() == 0);
  REQUIRE(devices.info(0));
  triage::KernelInput after;
  agent::fill_launch_input(*f, ev, 6, devices, after);
  REQUIRE(after.device_limits);
  CHECK(after.device_limits->chip == platform.config.chip);
  REQUIRE(after.launch);
  CHECK(after.launch->block == triage::Dim3{32, 1, 1});
}

}  // namespace test_component_contexts
