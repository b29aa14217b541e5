// PC sampling in the agent (issue 5), driven through the fake platform: counter values are the
// real H200 captures the other agent tests use; the sample batches below are synthetic (labelled
// per test), and the cubins are real nvcc output (tests/fuzz/seeds/cubin, built from
// tests/data/cubin/kernels.cu) so the agent's cubin cache, line-table check and code extraction
// run on real ELF images.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agent_harness.h"
#include "pc_summary.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_agent_pcsampling {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::Harness;
using testing::kernel_records;
using testing::make_launch;

namespace {

constexpr const char* kKernel = "plain_kernel";  // extern "C" in kernels.cu: the mangled name

std::vector<uint8_t> seed_cubin(const char* variant) {
  const std::string bytes = testing::slurp(std::filesystem::path(CUTRIAGE_SOURCE_DIR) / "tests/fuzz/seeds/cubin" /
                                           (std::string(variant) + ".cubin"));
  REQUIRE(!bytes.empty());
  return {bytes.begin(), bytes.end()};
}

// Synthetic batch: three PCs of plain_kernel, the one at 0x80 hot with long_scoreboard.
collectors::PcSampleBatch synthetic_batch(uint64_t crc, uint32_t correlation = 0) {
  collectors::PcSampleBatch b;
  b.reason_names = {"smsp__pcsamp_warps_issue_stalled_selected", "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                    "smsp__pcsamp_warps_issue_stalled_wait"};
  auto pc = [&](uint64_t off, std::vector<collectors::PcStallCount> stalls) {
    collectors::PcSampleRecord r;
    r.cubin_crc = crc;
    r.pc_offset = off;
    r.function = kKernel;
    r.correlation_id = correlation;
    r.stalls = std::move(stalls);
    b.pcs.push_back(r);
  };
  pc(0x40, {{0, 100}, {2, 200}});
  pc(0x80, {{0, 50}, {1, 3000}, {2, 100}});
  pc(0x80, {{1, 500}});  // the same PC again, from a second drain: merged
  pc(0xa0, {{2, 400}});
  b.total_samples = 4350;
  return b;
}

struct Run {
  std::unique_ptr<Harness> h;
  Captured a;
};

// A harness whose fake GPU runs plain_kernel with the vector_add capture's counters, with the
// module's cubin loaded.
Run make_run(AgentConfig cfg, const char* cubin_variant = "lineinfo") {
  Run run;
  run.a = capture_of("vector_add");
  testing::FakeCounters counters;
  counters.by_kernel[kKernel] = run.a.metrics;
  run.h = std::make_unique<Harness>(std::move(cfg), counters);
  Harness& h = *run.h;
  REQUIRE(h.ag->start());
  collectors::ModuleEvent m;
  m.context_id = 1;
  m.module_id = 1;
  m.cubin = seed_cubin(cubin_variant);
  const uint64_t crc = testing::FakePlatform::fake_crc(m.cubin);
  h.platform.config.pc_batches[kKernel] = synthetic_batch(crc);
  h.platform.config.source_lines[{kKernel, 0x40}] = {"/src/kernels.cu", 12};
  h.platform.config.source_lines[{kKernel, 0x80}] = {"/src/kernels.cu", 14};
  h.platform.config.source_lines[{kKernel, 0xa0}] = {"/src/kernels.cu", 14};
  h.ag->on_module_loaded(m);
  return run;
}

void launch_n(Run& run, int n) {
  for (int i = 1; i <= n; ++i) {
    run.h->platform.launch(make_launch(kKernel, static_cast<uint64_t>(i), run.a.launch.grid, run.a.launch.block));
  }
}

const v1::Check* find_check(const v1::KernelProfile& k, const std::string& id) {
  for (const v1::DecisionVisit& d : k.diagnosis().path()) {
    for (const v1::Check& c : d.checks()) {
      if (c.rule_id() == id) return &c;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("pc sampling: one launch after the counters, never beside the range profiler", "[agent][pcsampling]") {
  Run run = make_run(testing::select_all());
  Harness& h = *run.h;
  launch_n(run, 8);
  h.ag->finish();

  // Exactly one sampled launch, and it came after every counter launch: the fake refuses to begin
  // either collector while the other is enabled on the context, so a wrong order fails here.
  CHECK(h.platform.stats.pc_begins.load() == 1);
  CHECK(h.platform.stats.pc_ends.load() == 1);
  REQUIRE(h.platform.stats.pc_kernels.size() == 1);
  CHECK(h.platform.stats.pc_kernels[0] == kKernel);
  const int counter_launches = h.platform.stats.begins.load();
  CHECK(counter_launches >= 1);

  tools::ReadResult r = h.read();
  auto ks = kernel_records(r);
  REQUIRE(!ks.empty());
  const v1::KernelProfile& k = *ks.back();  // the last counter launch's record carries the samples
  REQUIRE(k.has_pc_sampling());
  const v1::PcSampling& pcs = k.pc_sampling();
  CHECK(pcs.error().empty());
  // The sampled launch is the one after the last counter launch, not the profiled record's own.
  CHECK(pcs.from_launch_index() == static_cast<uint64_t>(counter_launches) + 1);
  CHECK(pcs.from_launch_index() != k.launch_index());
  CHECK(pcs.has_line_info());
  CHECK(pcs.total_samples() == 4350);
  REQUIRE(pcs.pcs_size() == 3);  // 0x80 seen twice, merged
  // Hottest first: 0x80 with 3650 samples, at kernels.cu:14.
  const v1::SampledPc& hot = pcs.pcs(0);
  CHECK(hot.pc_offset() == 0x80);
  CHECK(tools::lookup(r, hot.file_iid()) == "/src/kernels.cu");
  CHECK(hot.line() == 14);
  uint64_t hot_total = 0;
  for (const v1::StallCount& s : hot.stalls()) hot_total += s.samples();
  CHECK(hot_total == 3650);
  // The sampled function's instructions are in the file for the tool's disassembly.
  REQUIRE(pcs.code_size() >= 1);
  CHECK(tools::lookup(r, pcs.code(0).function_iid()) == kKernel);
  CHECK(!pcs.code(0).text().empty());
  CHECK(pcs.sm_arch() == "sm_90");

  // Decision 6 ran on the samples: line 14 holds (3000 + 500 + 100) of the 3700 stall samples.
  const v1::Check* hot_line = find_check(k, "d6.hot_line");
  REQUIRE(hot_line != nullptr);
  INFO(hot_line->reason());
  CHECK(hot_line->outcome() == v1::OUTCOME_FIRED);
  CHECK(hot_line->reason().find("kernels.cu:14") != std::string::npos);
}

TEST_CASE("pc sampling: the period follows the kernel's duration unless set", "[agent][pcsampling]") {
  SECTION("auto") {
    Run run = make_run(testing::select_all());
    launch_n(run, 8);
    run.h->ag->finish();
    REQUIRE(run.h->platform.stats.pc_options.size() == 1);
    const triage::DeviceLimits limits = *triage::known_device_limits("GH100");
    const double duration = *run.a.metrics.get("gpu__time_duration.sum");
    const std::string unit = run.a.metrics.find("gpu__time_duration.sum")->unit;
    // The capture's duration in the unit the agent sees (the fake's evaluate passes it through).
    const uint32_t want = agent::auto_sampling_period_log2(duration, limits.sm_clock_hz, limits.sm_count);
    INFO("duration " << duration << " " << unit);
    CHECK(run.h->platform.stats.pc_options[0].period_log2 == want);
  }
  SECTION("CUTRIAGE_PC_SAMPLING_PERIOD") {
    AgentConfig cfg = testing::select_all();
    cfg.pc_sampling_period_log2 = 9;
    Run run = make_run(cfg);
    launch_n(run, 8);
    run.h->ag->finish();
    REQUIRE(run.h->platform.stats.pc_options.size() == 1);
    CHECK(run.h->platform.stats.pc_options[0].period_log2 == 9);
    auto r = run.h->read();
    auto ks = kernel_records(r);
    REQUIRE(!ks.empty());
    CHECK(ks.back()->pc_sampling().sampling_period_log2() == 9);
  }
}

TEST_CASE("pc sampling: auto period gives about the target number of samples", "[agent][pcsampling]") {
  // H200: 132 SMs at 1.98 GHz.
  const double hz = 1.98e9;
  // 10 us: 2.6 M SM-cycles / 20000 = 130 -> 2^7.
  CHECK(agent::auto_sampling_period_log2(10e3, hz, 132) == 7);
  // 1 ms: 261 M / 20000 = 13068 -> 2^13.
  CHECK(agent::auto_sampling_period_log2(1e6, hz, 132) == 13);
  // Tiny kernels hit CUPTI's floor, very long ones its ceiling.
  CHECK(agent::auto_sampling_period_log2(500, hz, 132) == 5);
  CHECK(agent::auto_sampling_period_log2(1e15, hz, 132) == 31);
  // Unknown inputs: the middle ground.
  CHECK(agent::auto_sampling_period_log2(0, hz, 132) == 12);
  CHECK(agent::auto_sampling_period_log2(1e6, 0, 132) == 12);
  CHECK(agent::auto_sampling_period_log2(1e6, hz, 0) == 12);
}

TEST_CASE("pc sampling: off, unsupported, failing", "[agent][pcsampling]") {
  SECTION("CUTRIAGE_PC_SAMPLING=0 samples nothing") {
    AgentConfig cfg = testing::select_all();
    cfg.pc_sampling = false;
    Run run = make_run(cfg);
    launch_n(run, 8);
    run.h->ag->finish();
    CHECK(run.h->platform.stats.pc_begins.load() == 0);
    auto r = run.h->read();
    auto ks = kernel_records(r);
    REQUIRE(!ks.empty());
    for (const v1::KernelProfile* k : ks) CHECK(!k->has_pc_sampling());
  }
  SECTION("a platform without PC sampling: the record says why, Decision 6 is not evaluated") {
    Run run = make_run(testing::select_all());
    run.h->platform.config.pc_sampler_status =
        collectors::Status(collectors::StatusCode::kNotSupported, "CUPTI_ERROR_NOT_SUPPORTED (fake)");
    launch_n(run, 8);
    run.h->ag->finish();
    auto r = run.h->read();
    auto ks = kernel_records(r);
    REQUIRE(!ks.empty());
    REQUIRE(ks.back()->has_pc_sampling());
    CHECK(ks.back()->pc_sampling().error().find("CUPTI_ERROR_NOT_SUPPORTED") != std::string::npos);
    CHECK(ks.back()->pc_sampling().pcs_size() == 0);
    const v1::Check* hot_line = find_check(*ks.back(), "d6.hot_line");
    REQUIRE(hot_line != nullptr);
    CHECK(hot_line->outcome() == v1::OUTCOME_NOT_EVALUATED);
    // One sampling attempt only: later launches run untouched.
    CHECK(run.h->platform.stats.pc_begins.load() == 0);
  }
  SECTION("end() fails: the error is recorded, and the range profiler works again afterwards") {
    Run run = make_run(testing::select_all());
    run.h->platform.config.pc_end_status =
        collectors::Status(collectors::StatusCode::kInternal, "cuptiPCSamplingGetData: CUPTI_ERROR_UNKNOWN (fake)");
    launch_n(run, 8);
    // A second kernel profiled after the failed sampling: its counters still come.
    const std::string other = "other_kernel";
    const int begins_before = run.h->platform.stats.begins.load();
    run.h->platform.launch(make_launch(other, 100, run.a.launch.grid, run.a.launch.block));
    CHECK(run.h->platform.stats.begins.load() == begins_before + 1);
    run.h->ag->finish();
    CHECK(run.h->platform.stats.pc_ends.load() == 1);
    auto r = run.h->read();
    auto ks = kernel_records(r);
    const v1::KernelProfile* sampled = nullptr;
    for (const v1::KernelProfile* k : ks) {
      if (k->has_pc_sampling()) sampled = k;
    }
    REQUIRE(sampled != nullptr);
    CHECK(sampled->pc_sampling().error().find("CUPTI_ERROR_UNKNOWN") != std::string::npos);
    CHECK(run.h->log_text().find("HARDWARE_BUSY") == std::string::npos);
    CHECK(run.h->log_text().find("INVALID_PARAMETER") == std::string::npos);
  }
}

TEST_CASE("pc sampling: a cubin without a line table gives SASS offsets, not lines", "[agent][pcsampling]") {
  Run run = make_run(testing::select_all(), "plain");
  launch_n(run, 8);
  run.h->ag->finish();
  CHECK(run.h->platform.stats.sass_queries.load() == 0);  // no line table: never asked
  auto r = run.h->read();
  auto ks = kernel_records(r);
  REQUIRE(!ks.empty());
  const v1::PcSampling& pcs = ks.back()->pc_sampling();
  CHECK(!pcs.has_line_info());
  REQUIRE(pcs.pcs_size() == 3);
  CHECK(pcs.pcs(0).pc_offset() == 0x80);
  CHECK(pcs.pcs(0).file_iid() == 0);
  CHECK(pcs.code_size() >= 1);  // the instructions still travel: the tool shows SASS
  const v1::Check* hot_line = find_check(*ks.back(), "d6.hot_line");
  REQUIRE(hot_line != nullptr);
  INFO(hot_line->reason());
  CHECK(hot_line->reason().find("-lineinfo") != std::string::npos);
  CHECK(hot_line->reason().find("0x80") != std::string::npos);
}

TEST_CASE("pc sampling: a cooperative kernel is never sampled", "[agent][pcsampling]") {
  Run run = make_run(testing::select_all());
  for (int i = 1; i <= 8; ++i) {
    collectors::LaunchEvent ev = make_launch(kKernel, static_cast<uint64_t>(i), run.a.launch.grid, run.a.launch.block);
    ev.cooperative = true;
    ev.api = collectors::LaunchApi::kLaunchCooperative;
    run.h->platform.launch(ev);
  }
  run.h->ag->finish();
  CHECK(run.h->platform.stats.pc_begins.load() == 0);
  CHECK(run.h->platform.stats.begins.load() == 0);
}

TEST_CASE("pc sampling: the cubin cache is bounded and finds cubins by CRC", "[agent][pcsampling]") {
  const std::vector<uint8_t> a = seed_cubin("plain");
  const std::vector<uint8_t> b = seed_cubin("lineinfo");
  const std::vector<uint8_t> c = seed_cubin("debug");
  int crc_calls = 0;
  auto crc = [&](const std::vector<uint8_t>& x) -> collectors::Result<uint64_t> {
    ++crc_calls;
    return testing::FakePlatform::fake_crc(x);
  };
  agent::CubinCache cache(a.size() + b.size() + c.size() - 1);  // one short of all three
  cache.add(a);
  cache.add(b);
  CHECK(cache.dropped_modules() == 0);
  CHECK(cache.find(testing::FakePlatform::fake_crc(a), crc) != nullptr);
  const int after_first = crc_calls;
  CHECK(cache.find(testing::FakePlatform::fake_crc(b), crc) != nullptr);
  CHECK(crc_calls == after_first);  // CRCs are computed once per cubin
  cache.add(c);                     // over the bound: the oldest goes
  CHECK(cache.dropped_modules() >= 1);
  CHECK(cache.bytes() == b.size() + c.size());
  CHECK(cache.find(testing::FakePlatform::fake_crc(a), crc) == nullptr);
  CHECK(cache.find(testing::FakePlatform::fake_crc(c), crc) != nullptr);
  CHECK(cache.find(testing::FakePlatform::fake_crc(b), crc) != nullptr);
  CHECK(cache.find(12345, crc) == nullptr);
  agent::CubinCache none(0);
  none.add(a);
  CHECK(none.bytes() == 0);
}

TEST_CASE("pc sampling: a PC inlined from a helper is attributed to its calling line", "[agent][pcsampling]") {
  // Synthetic line table: the kernel's own file at 0x0 and 0x80, a helper header at 0xa0 (as
  // atomicAdd's body in device_atomic_functions.hpp is, seen on the H200).
  Run run = make_run(testing::select_all());
  auto& lines = run.h->platform.config.source_lines;
  lines.clear();
  lines[{kKernel, 0x0}] = {"/src/kernels.cu", 10};
  lines[{kKernel, 0x40}] = {"/src/kernels.cu", 12};
  lines[{kKernel, 0x80}] = {"/src/kernels.cu", 14};
  lines[{kKernel, 0xa0}] = {"/usr/local/cuda/include/helper.hpp", 226};
  launch_n(run, 8);
  run.h->ag->finish();
  auto r = run.h->read();
  auto ks = kernel_records(r);
  REQUIRE(!ks.empty());
  const v1::PcSampling& pcs = ks.back()->pc_sampling();
  const v1::SampledPc* inlined = nullptr;
  const v1::SampledPc* own = nullptr;
  for (const v1::SampledPc& pc : pcs.pcs()) {
    if (pc.pc_offset() == 0xa0) inlined = &pc;
    if (pc.pc_offset() == 0x80) own = &pc;
  }
  REQUIRE(inlined != nullptr);
  REQUIRE(own != nullptr);
  // The calling line: the nearest earlier instruction in the kernel's own file (0x80, line 14).
  CHECK(tools::lookup(r, inlined->file_iid()) == "/src/kernels.cu");
  CHECK(inlined->line() == 14);
  CHECK(tools::lookup(r, inlined->inlined_file_iid()) == "/usr/local/cuda/include/helper.hpp");
  CHECK(inlined->inlined_line() == 226);
  // A PC of the kernel's own file is left alone.
  CHECK(own->line() == 14);
  CHECK(own->inlined_file_iid() == 0);
  CHECK(own->inlined_line() == 0);
}

// Deep mode's default (CUTRIAGE_METRICS unset, through parse_config as injection reads it): the
// first profiled launch collects every counter and the second is PC-sampled, so a kernel launched
// twice gets its whole diagnosis with source lines. Adaptive, asked for, takes a second counter
// launch on the vector_add capture (its route wants Decision 4's counters) and samples later.
TEST_CASE("pc sampling: deep mode's default counters take one launch, the next one is sampled",
          "[agent][pcsampling][metrics]") {
  struct Case {
    const char* metrics;  // nullptr: unset
    int counter_launches;
    uint64_t sampled_launch;
  };
  for (const Case c : {Case{nullptr, 1, 2}, Case{"adaptive", 2, 3}}) {
    INFO("CUTRIAGE_METRICS=" << (c.metrics != nullptr ? c.metrics : "(unset)"));
    std::vector<std::pair<std::string, std::string>> env = {{"CUTRIAGE_SELECT", "all"}};
    if (c.metrics != nullptr) env.emplace_back("CUTRIAGE_METRICS", c.metrics);
    const agent::ConfigResult parsed = agent::parse_config(env);
    REQUIRE(parsed.ok());
    Run run = make_run(parsed.config);
    Harness& h = *run.h;
    launch_n(run, 4);
    h.ag->finish();
    CHECK(h.platform.stats.begins.load() == c.counter_launches);
    CHECK(h.platform.stats.pc_begins.load() == 1);
    tools::ReadResult r = h.read();
    auto ks = kernel_records(r);
    REQUIRE(!ks.empty());
    const v1::KernelProfile& k = *ks.back();
    REQUIRE(k.has_pc_sampling());
    CHECK(k.pc_sampling().from_launch_index() == c.sampled_launch);
    CHECK(k.diagnosis().classification() != v1::CLASSIFICATION_UNSPECIFIED);
  }
}

}  // namespace test_agent_pcsampling
