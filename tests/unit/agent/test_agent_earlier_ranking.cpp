// CUTRIAGE_RANKING (issue 21), through the fake platform: a short program whose launches are all
// queued before its trace comes back (CUPTI returns activity buffers late) is ranked too late to
// profile its top kernel; a second run handed the first run's file profiles it from its first
// launch, and says whether its trace matched. Durations are synthetic; counter values are the real
// H200 captures the other agent tests use.
#include <filesystem>
#include <fstream>
#include <string>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_agent_earlier_ranking {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::make_launch;

namespace {

struct Program {
  Captured init = capture_of("vector_add");  // stands for the inputs' random fill: short, first
  Captured top = capture_of("fma_chain");    // stands for the GEMM: most of the GPU time
  int top_launches = 3;
};

// These runs are about the earlier run's ranking: the first run must miss the top kernel, as it
// does when the family is launched once, so its second launch is not waited for here
// (CUTRIAGE_RANK_EARLY=0; the early ranking has its own tests below).
AgentConfig top1(const std::string& ranking = "") {
  AgentConfig c;
  c.select = agent::SelectMode::kTop;
  c.select_top = 1;
  c.trace_flush_ms = 0;
  c.pc_sampling = false;
  c.ranking_path = ranking;
  c.rank_early = false;
  return c;
}

// Runs the program under the agent: every launch made before any trace record comes back, as a
// script's launches queued without synchronizing are. Returns the agent's file and its log.
struct Run {
  std::string bytes;
  std::string log;
};
// The fake as CUPTI's global queue on the H200: records come back only at a forced flush (or a
// full buffer); the top family's executions are long, the init's short.
void like_the_global_queue(Harness& h, const Program& p) {
  h.platform.config.deliver_each_launch = false;
  h.platform.config.deliver_on_flush = false;
  h.platform.config.durations_ns[p.init.mangled] = 20000;
  h.platform.config.durations_ns[p.top.mangled] = 900000;
}

Run run(const Program& p, AgentConfig config, bool wait_each = false, bool other_stream_first = false) {
  Harness h(std::move(config), counters_for({&p.init, &p.top}));
  like_the_global_queue(h, p);
  REQUIRE(h.ag->start());
  uint64_t corr = 0;
  collectors::LaunchEvent init = make_launch(p.init.mangled, ++corr, p.init.launch.grid, p.init.launch.block);
  if (other_stream_first) init.stream = reinterpret_cast<void*>(uintptr_t{0x5000});  // NOLINT(performance-no-int-to-ptr)
  h.platform.launch(init);
  for (int i = 0; i < p.top_launches; ++i) {
    h.platform.launch(make_launch(p.top.mangled, ++corr, p.top.launch.grid, p.top.launch.block));
    if (wait_each) h.platform.synchronize();  // a loop that waits for each step (loss.item())
  }
  h.ag->finish();
  return {h.bytes, h.log_text()};
}

std::string saved(const std::string& bytes, const std::string& name) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("cutriage-ranking-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

bool profiled(const tools::ReadResult& r, const std::string& mangled) {
  for (int i : r.kernel_records) {
    const v1::KernelProfile& k = r.file.records(i).kernel();
    if (k.status() == v1::PROFILE_STATUS_PROFILED && tools::lookup(r, k.mangled_name_iid()) == mangled) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("ranking: the first run misses a short program's top kernel", "[agent][ranking]") {
  Program p;
  const Run first = run(p, top1());
  tools::ReadResult r = tools::read_cutriage_bytes(first.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK_FALSE(profiled(r, p.top.mangled));
  const v1::FamilyStats* top = testing::family_stats(r, p.top.mangled);
  REQUIRE(top != nullptr);
  CHECK(top->selection() == v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);
  CHECK(top->selection_detail().find("only after its last launch (3;") != std::string::npos);
  CHECK(top->application_launches() == 3);
  CHECK_FALSE(tools::trace_summary(r)->has_ranking_source());
}

TEST_CASE("ranking: with the first run's file, the top kernel is profiled from its first launch",
          "[agent][ranking]") {
  Program p;
  const std::string first = saved(run(p, top1()).bytes, "first.pb");
  const Run second = run(p, top1(first));
  tools::ReadResult r = tools::read_cutriage_bytes(second.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(profiled(r, p.top.mangled));
  CHECK_FALSE(profiled(r, p.init.mangled));  // #2 in the earlier ranking: outside top:1
  const v1::FamilyStats* top = testing::family_stats(r, p.top.mangled);
  REQUIRE(top != nullptr);
  CHECK(top->selection() == v1::FamilyStats::SELECTION_PROFILED);
  CHECK(top->application_launches() == 3);  // replays not counted
  const v1::FamilyStats* init = testing::family_stats(r, p.init.mangled);
  REQUIRE(init != nullptr);
  CHECK(init->selection() == v1::FamilyStats::SELECTION_NOT_RANKED);
  CHECK(init->selection_detail().find("#2") != std::string::npos);

  const v1::RankingSource& source = tools::trace_summary(r)->ranking_source();
  CHECK(source.path() == first);
  CHECK(source.pid() == 1234);
  CHECK(source.families_selected() == 1);
  CHECK(source.trace_matches());
  CHECK(source.families_compared() == 2);
  CHECK(source.families_differing() == 0);
  CHECK(source.differences().empty());
  CHECK(source.matching_time_share() == 1.0);
  CHECK(second.log.find("CUTRIAGE_RANKING: 1 of the 2 families") != std::string::npos);
  const std::string report = tools::render_report(r, tools::ReportOptions{});
  CHECK(report.find("ranking: from an earlier run of this program (pid 1234") != std::string::npos);
  CHECK(report.find("this run's trace matches it: the same 2 families, each launched as often") != std::string::npos);
  std::filesystem::remove(first);
}

TEST_CASE("ranking: a second run that differs from the first says how", "[agent][ranking]") {
  Program p;
  const std::string first = saved(run(p, top1()).bytes, "differs.pb");
  p.top_launches = 4;
  tools::ReadResult r = tools::read_cutriage_bytes(run(p, top1(first)).bytes);
  CHECK(profiled(r, p.top.mangled));  // still chosen by the earlier ranking
  const v1::RankingSource& source = tools::trace_summary(r)->ranking_source();
  CHECK_FALSE(source.trace_matches());
  CHECK(source.families_differing() == 1);
  REQUIRE(source.differences_size() == 1);
  CHECK(source.differences(0).find("3 launches then, 4 now") != std::string::npos);
  CHECK(source.matching_time_share() < 0.1);  // the init kernel's time only
  const std::string report = tools::render_report(r, tools::ReportOptions{});
  CHECK(report.find("this run's trace differs from it: 1 of 2 families") != std::string::npos);
  CHECK(report.find("3 launches then, 4 now") != std::string::npos);
  std::filesystem::remove(first);
}

TEST_CASE("ranking: an unusable file is said once and this run ranks by its own trace", "[agent][ranking]") {
  Program p;
  SECTION("missing") {
    const Run second = run(p, top1("/nonexistent/cutriage-ranking.pb"));
    CHECK(second.log.find("CUTRIAGE_RANKING=\"/nonexistent/cutriage-ranking.pb\"") != std::string::npos);
    tools::ReadResult r = tools::read_cutriage_bytes(second.bytes);
    CHECK_FALSE(profiled(r, p.top.mangled));
    CHECK_FALSE(tools::trace_summary(r)->has_ranking_source());
  }
  SECTION("not a cutriage file") {
    const std::string junk = saved("a text file, not a profile\n", "junk.pb");
    const Run second = run(p, top1(junk));
    CHECK(second.log.find("cutriage file") != std::string::npos);
    CHECK(second.log.find("this run ranks the families by its own trace") != std::string::npos);
    std::filesystem::remove(junk);
  }
  SECTION("no trace summary (a run with the trace off)") {
    AgentConfig untraced = top1();
    untraced.select = agent::SelectMode::kAll;
    untraced.trace = false;
    const std::string file = saved(run(p, untraced).bytes, "untraced.pb");
    const Run second = run(p, top1(file));
    CHECK(second.log.find("no trace summary") != std::string::npos);
    std::filesystem::remove(file);
  }
  SECTION("a selection that ranks nothing does not read it") {
    AgentConfig all = top1("/nonexistent/cutriage-ranking.pb");
    all.select = agent::SelectMode::kAll;
    const Run second = run(p, all);
    CHECK(second.log.find("ranks nothing, so it is not read") != std::string::npos);
  }
}

TEST_CASE("ranking: a loop that waits after each launch is ranked in time, once the wait is seen",
          "[agent][ranking]") {
  // With one global activity queue an unforced flush delivers nothing; the launch-time flush is
  // forced when the family's previous launch ended before a wait, so its first execution comes
  // back at the second launch and a later launch is profiled (H200: a directly injected PyTorch
  // loop went from 1 profiled launch to 18 with a forced flush).
  Program p;
  const Run waited = run(p, top1(), /*wait_each=*/true);
  tools::ReadResult r = tools::read_cutriage_bytes(waited.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(profiled(r, p.top.mangled));
  const v1::FamilyStats* top = testing::family_stats(r, p.top.mangled);
  REQUIRE(top != nullptr);
  CHECK(top->selection() != v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);

  // A stream wait does not count once a launch went to another stream: the waited stream may not
  // be the family's, so the flush stays unforced (a forced one could lose a running kernel's
  // record) and the family is ranked after its last launch, as without the wait.
  const Run other = run(p, top1(), /*wait_each=*/true, /*other_stream_first=*/true);
  tools::ReadResult o = tools::read_cutriage_bytes(other.bytes);
  REQUIRE(o.status == tools::ReadStatus::kOk);
  CHECK_FALSE(profiled(o, p.top.mangled));
}

TEST_CASE("ranking: a training loop that waits every few steps is ranked at its first wait, and no record is lost",
          "[agent][ranking]") {
  // bench/torch_loop.py's shape: each step launches the top family twice and another family once,
  // and the loss is read (a stream wait) every 10 steps. The 2nd, 4th, 8th... launches of the top
  // family never follow a wait directly, so only a flush at the wait's exit ranks it in time (H200:
  // the directly injected loop profiled 1 launch without it). The fake drops the records of kernels
  // still running at a forced flush, as CUPTI's global queue does: none may be lost.
  Program p;
  Harness h(top1(), counters_for({&p.init, &p.top}));
  like_the_global_queue(h, p);
  h.platform.config.forced_flush_loses_running = true;
  REQUIRE(h.ag->start());
  uint64_t corr = 0;
  int launched = 0;
  for (int step = 0; step < 20; ++step) {
    h.platform.launch(make_launch(p.init.mangled, ++corr, p.init.launch.grid, p.init.launch.block));
    for (int i = 0; i < 2; ++i) {
      h.platform.launch(make_launch(p.top.mangled, ++corr, p.top.launch.grid, p.top.launch.block));
      ++launched;
    }
    if (step % 10 == 9) h.platform.synchronize();
  }
  h.platform.synchronize(/*whole_context=*/true);
  h.ag->finish();
  CHECK(h.platform.lost_records.load() == 0);
  CHECK(h.platform.forced_flushes.load() >= 1);
  tools::ReadResult r = tools::read_cutriage_bytes(h.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(profiled(r, p.top.mangled));
  const v1::FamilyStats* top = testing::family_stats(r, p.top.mangled);
  REQUIRE(top != nullptr);
  CHECK(top->selection() != v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);
  // Every launch is accounted for: traced, or replayed by the profiler (no record lost).
  CHECK(top->launches() == static_cast<uint64_t>(launched));
}

TEST_CASE("ranking: a wait does not force the flush while a launch may still run", "[agent][ranking]") {
  // Launches on two streams and the application waits for one of them: the other stream's kernel
  // may still be running, so the flush stays unforced. A context wait covers both streams.
  Program p;
  for (const bool whole_context : {false, true}) {
    Harness h(top1(), counters_for({&p.init, &p.top}));
    like_the_global_queue(h, p);
    h.platform.config.forced_flush_loses_running = true;
    REQUIRE(h.ag->start());
    uint64_t corr = 0;
    collectors::LaunchEvent side = make_launch(p.init.mangled, ++corr, p.init.launch.grid, p.init.launch.block);
    side.stream = reinterpret_cast<void*>(uintptr_t{0x5000});  // NOLINT(performance-no-int-to-ptr)
    h.platform.launch(side);
    h.platform.launch(make_launch(p.top.mangled, ++corr, p.top.launch.grid, p.top.launch.block));
    h.platform.synchronize(whole_context);
    CHECK(h.platform.forced_flushes.load() == (whole_context ? 1 : 0));
    h.ag->finish();
    CHECK(h.platform.lost_records.load() == 0);
  }
}

}  // namespace test_agent_earlier_ranking
