// Launch calculator: H100/H200 (GH100) examples worked by hand.
#include "catch.h"
#include "cutriage/triage/launch.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_launch {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

using namespace cutriage::triage;

namespace {

DeviceLimits gh100() {
  auto d = known_device_limits("GH100");
  REQUIRE(d.has_value());
  return *d;
}

LaunchConfig cfg(uint32_t grid, uint32_t block, uint32_t regs, uint32_t dyn_smem = 0) {
  LaunchConfig c;
  c.grid = {grid, 1, 1};
  c.block = {block, 1, 1};
  c.registers_per_thread = regs;
  c.dynamic_shared_bytes = dyn_smem;
  return c;
}

}  // namespace

TEST_CASE("GH100 limits table", "[launch]") {
  DeviceLimits d = gh100();
  CHECK(d.cc_major == 9);
  CHECK(d.sm_count == 132);
  CHECK(d.max_warps_per_sm == 64);
  CHECK(d.max_blocks_per_sm == 32);
  CHECK(d.registers_per_sm == 65536);
  CHECK(d.shared_bytes_per_sm == 233472);
  CHECK(d.shared_bytes_per_block_optin == 232448);
  CHECK(d.reserved_shared_bytes_per_block == 1024);
  CHECK_FALSE(known_device_limits("GA100").has_value());
  CHECK(to_string(OccupancyLimiter::kRegisters) == "registers");
}

TEST_CASE("256 threads x 32 registers: 8 blocks, warp-slot limited, 100%", "[launch]") {
  // 8 warps/block; 32*32 = 1024 regs/warp -> 16 warps per sub-partition -> 64 warps -> 8 blocks;
  // warp slots 64/8 = 8 (tie: warp slots reported); block slots 32.
  auto r = compute_launch_stats(cfg(4224, 256, 32), gh100());
  REQUIRE(r.stats.has_value());
  const LaunchStats& s = *r.stats;
  CHECK(s.warps_per_block == 8);
  CHECK(s.blocks_limit_registers == 8);
  CHECK(s.blocks_limit_warps == 8);
  CHECK(s.blocks_limit_blocks == 32);
  CHECK(s.blocks_limit_shared == 32);  // no shared memory: never the limiter
  CHECK(s.blocks_per_sm == 8);
  CHECK(s.limiter == OccupancyLimiter::kWarpSlots);
  CHECK(s.theoretical_occupancy_pct == Approx(100.0));
  CHECK(s.waves_per_sm == Approx(4224.0 / 1056.0));  // exactly 4 waves
  CHECK(s.wave_efficiency == Approx(1.0));
}

TEST_CASE("1024 threads x 64 registers: 1 block, register limited, 50%", "[launch]") {
  // 64*32 = 2048 regs/warp -> 8 warps per sub-partition -> 32 warps -> 1 block of 32 warps.
  auto r = compute_launch_stats(cfg(132, 1024, 64), gh100());
  REQUIRE(r.stats.has_value());
  CHECK(r.stats->blocks_limit_registers == 1);
  CHECK(r.stats->blocks_limit_warps == 2);
  CHECK(r.stats->blocks_per_sm == 1);
  CHECK(r.stats->limiter == OccupancyLimiter::kRegisters);
  CHECK(r.stats->theoretical_occupancy_pct == Approx(50.0));
  CHECK(r.stats->waves_per_sm == Approx(1.0));
}

TEST_CASE("register allocation rounds up per warp", "[launch]") {
  // 33 regs: 1056 regs/warp -> 1280; 16384/1280 = 12 warps per sub-partition -> 48 warps -> 6 blocks.
  auto r = compute_launch_stats(cfg(1000, 256, 33), gh100());
  REQUIRE(r.stats.has_value());
  CHECK(r.stats->blocks_limit_registers == 6);
  CHECK(r.stats->limiter == OccupancyLimiter::kRegisters);
  CHECK(r.stats->theoretical_occupancy_pct == Approx(75.0));
}

TEST_CASE("48 KiB of dynamic shared memory: shared-memory limited", "[launch]") {
  // 49152 + 1024 reserved = 50176 B (a multiple of 128); 233472 / 50176 = 4 blocks of 4 warps.
  auto r = compute_launch_stats(cfg(1000, 128, 32, 49152), gh100());
  REQUIRE(r.stats.has_value());
  CHECK(r.stats->blocks_limit_shared == 4);
  CHECK(r.stats->limiter == OccupancyLimiter::kSharedMemory);
  CHECK(r.stats->theoretical_occupancy_pct == Approx(25.0));
  // A 100 KiB carve-out holds only 2 such blocks.
  LaunchConfig c = cfg(1000, 128, 32, 49152);
  c.shared_config_bytes_per_sm = 102400;
  auto r2 = compute_launch_stats(c, gh100());
  REQUIRE(r2.stats.has_value());
  CHECK(r2.stats->blocks_limit_shared == 2);
  CHECK(r2.stats->theoretical_occupancy_pct == Approx(12.5));
}

TEST_CASE("32-thread blocks: block-slot limited at 50%", "[launch]") {
  auto r = compute_launch_stats(cfg(8448, 32, 16), gh100());
  REQUIRE(r.stats.has_value());
  CHECK(r.stats->blocks_limit_blocks == 32);
  CHECK(r.stats->blocks_limit_warps == 64);
  CHECK(r.stats->limiter == OccupancyLimiter::kBlockSlots);
  CHECK(r.stats->theoretical_occupancy_pct == Approx(50.0));
}

TEST_CASE("waves and wave efficiency", "[launch]") {
  auto r = compute_launch_stats(cfg(32, 256, 32), gh100());
  REQUIRE(r.stats.has_value());
  CHECK(r.stats->waves_per_sm == Approx(32.0 / 1056.0));
  CHECK(r.stats->wave_efficiency == Approx(32.0 / 1056.0));
  // 1100 blocks on 1056 slots: 2 waves, the second nearly empty.
  auto r2 = compute_launch_stats(cfg(1100, 256, 32), gh100());
  REQUIRE(r2.stats.has_value());
  CHECK(r2.stats->wave_efficiency == Approx(1100.0 / 2112.0));
}

TEST_CASE("the calculator names what is missing or invalid", "[launch]") {
  DeviceLimits d = gh100();
  d.sm_count = 0;
  auto r = compute_launch_stats(cfg(10, 256, 32), d);
  CHECK_FALSE(r.stats.has_value());
  CHECK(r.missing == "device sm_count unknown");
  auto r2 = compute_launch_stats(cfg(10, 256, 0), gh100());
  CHECK_FALSE(r2.stats.has_value());
  CHECK(r2.missing == "registers_per_thread unknown");
  auto r3 = compute_launch_stats(cfg(10, 2048, 32), gh100());
  CHECK_FALSE(r3.stats.has_value());
  CHECK(r3.missing.find("exceeds") != std::string::npos);
}

TEST_CASE("add_launch_metrics adds derived launch__* values and keeps measured ones", "[launch]") {
  KernelInput k;
  k.launch = cfg(64, 256, 32);
  k.device_limits = gh100();
  k.metrics.set("launch__grid_size", 64, "", MetricSource::kMeasured);
  MetricSet m = k.metrics;
  m.set("launch__grid_size", 99, "");  // a measured value that differs: must be kept
  auto r = add_launch_metrics(k, m);
  REQUIRE(r.stats.has_value());
  CHECK(m.get("launch__grid_size") == 99);
  CHECK(m.find("launch__grid_size")->source == MetricSource::kMeasured);
  CHECK(m.get("launch__block_size") == 256);
  CHECK(m.find("launch__block_size")->source == MetricSource::kDerived);
  CHECK(m.get("launch__sm_count") == 132);
  CHECK(*m.get("launch__waves_per_multiprocessor") == Approx(64.0 / 1056.0));
  CHECK(m.get("launch__occupancy_limit_registers") == 8);
  CHECK(m.get("launch__occupancy_limit_warps") == 8);
  CHECK(m.get("launch__occupancy_limit_blocks") == 32);
  CHECK(m.get("launch__occupancy_limit_shared_mem") == 32);
  CHECK(*m.get("sm__maximum_warps_per_active_cycle_pct") == Approx(100.0));
  CHECK(m.get("launch__registers_per_thread") == 32);
  CHECK(m.get("launch__thread_count") == 64 * 256);
}

TEST_CASE("add_launch_metrics: chip-only limits are completed, measured SM count wins", "[launch]") {
  KernelInput k;
  k.launch = cfg(114, 256, 32);
  DeviceLimits only_chip;
  only_chip.chip = "GH100";
  k.device_limits = only_chip;
  MetricSet m;
  m.set("launch__sm_count", 114, "SM");  // e.g. an H100 PCIe or a green context
  auto r = add_launch_metrics(k, m);
  REQUIRE(r.stats.has_value());
  CHECK(*m.get("launch__waves_per_multiprocessor") == Approx(114.0 / (8.0 * 114.0)));
}

TEST_CASE("add_launch_metrics without device limits adds only the configuration", "[launch]") {
  KernelInput k;
  k.launch = cfg(10, 48, 32);
  MetricSet m;
  auto r = add_launch_metrics(k, m);
  CHECK_FALSE(r.stats.has_value());
  CHECK(m.get("launch__block_size") == 48);
  CHECK_FALSE(m.has("launch__waves_per_multiprocessor"));
  KernelInput none;
  MetricSet m2;
  CHECK_FALSE(add_launch_metrics(none, m2).stats.has_value());
  CHECK(m2.size() == 0);
}

}  // namespace test_launch
