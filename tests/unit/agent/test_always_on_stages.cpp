// Always-on with CUTRIAGE_STAGE_PASSES (always_on.h): a family's counters in stages, each one
// multi-pass plan (PlanReplay::kLaunches) with one pass on each of the family's next launches.
// Driven through the fake platform with the real H200 captures (tests/data/ncu/zoo); the fake host
// plans 10 names a pass, so a stage takes several launches.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "agent_harness.h"
#include "report.h"

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::Harness;
using testing::kernel_records;
using testing::make_launch;

namespace {

AgentConfig stages_config(double budget_fraction = 0.01) {
  AgentConfig c = testing::select_all();
  c.mode = agent::AgentMode::kAlwaysOn;
  c.budget_fraction = budget_fraction;
  c.summary = false;
  c.trace_flush_ms = 0;  // no flush thread: the test's launches drive everything
  c.pc_sampling = false;
  c.pm_window = false;  // the stages alone (the PM window's wait has its own test)
  c.stage_passes = true;
  c.log_level = agent::LogLevel::kInfo;  // each stage's cost is an info line
  return c;
}

struct Run {
  Captured a;
  std::unique_ptr<Harness> h;
  uint64_t launches = 0;
};

Run start(const char* program, AgentConfig cfg) {
  Run r;
  r.a = capture_of(program);
  r.h = std::make_unique<Harness>(std::move(cfg), testing::counters_for({&r.a}));
  r.h->platform.config.cost_switch_ns = 170'000'000;
  r.h->platform.config.cost_same_ns = 20'000'000;
  r.h->platform.config.switch_after_disable = true;
  REQUIRE(r.h->ag->start());
  return r;
}

void serve(Run& r, int n, uint64_t gap_ns, const Captured* other = nullptr) {
  for (int i = 0; i < n; ++i) {
    r.h->platform.mono_ns += gap_ns;
    r.h->platform.launch(make_launch(r.a.mangled.c_str(), ++r.launches, r.a.launch.grid, r.a.launch.block));
    if (other != nullptr) {
      r.h->platform.launch(make_launch(other->mangled.c_str(), ++r.launches, other->launch.grid, other->launch.block));
    }
  }
}

const v1::KernelProfile* last_profiled_of(const std::vector<const v1::KernelProfile*>& ks, const tools::ReadResult& r,
                                          const std::string& mangled) {
  const v1::KernelProfile* out = nullptr;
  for (const v1::KernelProfile* k : ks) {
    if (k->status() == v1::PROFILE_STATUS_PROFILED && tools::lookup(r, k->mangled_name_iid()) == mangled) out = k;
  }
  return out;
}

int complete_notices(const tools::ReadResult& r) {
  int n = 0;
  for (const v1::Record& rec : r.file.records()) {
    n += rec.has_notice() && rec.notice().code() == "always_on_complete" ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("always-on stages: a stage is one multi-pass plan over the family's next launches, one switch a stage",
          "[agent][always_on][stages]") {
  for (const char* program : {"strided_load", "fma_chain"}) {
    INFO(program);
    Run on = start(program, stages_config());
    serve(on, 3000, 100'000'000);  // five minutes, ten launches a second
    on.h->ag->finish();
    Run groups = start(program, [] {
      AgentConfig c = stages_config();
      c.stage_passes = false;
      return c;
    }());
    serve(groups, 3600, 1'000'000'000);  // an hour at a launch a second: the groups complete too
    groups.h->ag->finish();

    std::vector<std::vector<std::string>> begun;
    {
      std::lock_guard<std::mutex> lock(on.h->platform.stats.mutex);
      for (collectors::PlanReplay rp : on.h->platform.stats.begin_replays) {
        CHECK(rp == collectors::PlanReplay::kLaunches);  // never replayed: a pass on each launch
      }
      begun = on.h->platform.stats.begin_metrics;
    }
    REQUIRE(!begun.empty());
    // The passes of a stage run on consecutive profiled launches with the same plan; the first
    // stage is deep mode's (routing counters and riders) with the duration.
    std::vector<std::vector<std::string>> stages;
    for (const auto& m : begun) {
      if (stages.empty() || stages.back() != m) stages.push_back(m);
    }
    CHECK(stages.size() >= 1);
    CHECK(stages.size() <= 3);
    CHECK(begun.size() > stages.size());  // several passes a stage: 10 names a pass here
    CHECK(std::find(stages.front().begin(), stages.front().end(), "gpu__time_duration.sum") != stages.front().end());
    CHECK(std::find(stages.front().begin(), stages.front().end(), "sm__throughput.avg.pct_of_peak_sustained_elapsed") !=
          stages.front().end());

    tools::ReadResult r = on.h->read();
    const std::vector<const v1::KernelProfile*> ks = kernel_records(r);
    const v1::KernelProfile* k = last_profiled_of(ks, r, on.a.mangled);
    REQUIRE(k != nullptr);
    CHECK(k->replay_mode() == v1::REPLAY_MODE_APPLICATION);
    // Every pass's launch is listed; the values ride on each stage's last pass.
    CHECK(k->assembled_launches_size() == static_cast<int>(begun.size()));
    int carrying = 0;
    for (const v1::AssembledLaunch& a : k->assembled_launches()) carrying += a.metrics() > 0 ? 1 : 0;
    CHECK(carrying == static_cast<int>(stages.size()));
    CHECK(complete_notices(r) == 1);
    // One switch a stage: the budget counted the stages' first passes only.
    const wire::OverheadStats s = *on.h->ag->overhead();
    CHECK(s.group_switches == stages.size());

    // The same counters give the same verdict as the single-pass groups.
    tools::ReadResult rg = groups.h->read();
    const v1::KernelProfile* kg = last_profiled_of(kernel_records(rg), rg, groups.a.mangled);
    REQUIRE(kg != nullptr);
    REQUIRE(complete_notices(rg) == 1);
    INFO("stages: " << k->diagnosis().headline() << "\ngroups: " << kg->diagnosis().headline());
    CHECK(k->diagnosis().classification() == kg->diagnosis().classification());
    CHECK(k->diagnosis().primary_rule_id() == kg->diagnosis().primary_rule_id());
    // And sooner in switches, which are the cost: the groups took one a group.
    CHECK(rg.file.records_size() > 0);
    CHECK(groups.h->ag->overhead()->group_switches > 2 * s.group_switches);
    // The report says how the counters were assembled, and the log what each stage cost.
    const std::string text = tools::render_report(r, {});
    CHECK(text.find("stages of one pass a launch") != std::string::npos);
    const std::string log = on.h->log_text();
    size_t stage_lines = 0;
    for (size_t at = log.find(": a stage of "); at != std::string::npos; at = log.find(": a stage of ", at + 1)) {
      ++stage_lines;
    }
    CHECK(stage_lines == stages.size());
    CHECK(log.find("passes over its launches #") != std::string::npos);
    CHECK(log.find(": first pass ") != std::string::npos);
  }
}

TEST_CASE("always-on stages: a stage whose profiler was released between two passes starts again",
          "[agent][always_on][stages]") {
  Run on = start("strided_load", stages_config());
  // Two passes of the first stage, then a pause longer than the hold and the release: the flush
  // releases the idle profiler, which abandons CUPTI's collection.
  serve(on, 2, 100'000'000);
  const int begun_before = on.h->platform.stats.begins.load();
  REQUIRE(begun_before == 2);
  on.h->platform.mono_ns += 10'000'000'000;
  on.h->ag->flush();
  CHECK(on.h->platform.stats.disables.load() >= 1);
  serve(on, 3000, 100'000'000);
  on.h->ag->finish();
  tools::ReadResult r = on.h->read();
  const v1::KernelProfile* k = last_profiled_of(kernel_records(r), r, on.a.mangled);
  REQUIRE(k != nullptr);
  CHECK(complete_notices(r) == 1);
  // The abandoned passes are not among the record's launches: only the passes of stages that ran
  // to their end.
  CHECK(k->assembled_launches_size() < on.h->platform.stats.begins.load());
  CHECK(k->assembled_launches_size() == on.h->platform.stats.begins.load() - begun_before);
}

TEST_CASE("always-on stages: another family's launches leave the context to a stage in progress",
          "[agent][always_on][stages]") {
  // A (60% of the time) and B launch alternately. A's stage holds the context: B is never begun
  // between two of A's passes (that would abandon A's collection), and B gets stages of its own
  // once A is complete.
  Captured b = capture_of("fma_chain");
  Run on = start("strided_load", stages_config());
  on.h = std::make_unique<Harness>(stages_config(), testing::counters_for({&on.a, &b}));
  on.h->platform.config.cost_switch_ns = 170'000'000;
  on.h->platform.config.cost_same_ns = 20'000'000;
  on.h->platform.config.switch_after_disable = true;
  REQUIRE(on.h->ag->start());
  serve(on, 6000, 100'000'000, &b);
  on.h->ag->finish();
  tools::ReadResult r = on.h->read();
  const v1::KernelProfile* ka = last_profiled_of(kernel_records(r), r, on.a.mangled);
  const v1::KernelProfile* kb = last_profiled_of(kernel_records(r), r, b.mangled);
  REQUIRE(ka != nullptr);
  REQUIRE(kb != nullptr);
  CHECK(complete_notices(r) == 2);
  // Every stage's passes came back to back: no stage of the other family began between a stage's
  // first pass and its last (that would have abandoned it).
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // each stage's first and last launch
  for (const v1::KernelProfile* k : {ka, kb}) {
    uint64_t first = 0;
    for (const v1::AssembledLaunch& a : k->assembled_launches()) {
      if (first == 0) first = a.launch_index();
      if (a.metrics() > 0) {
        spans.emplace_back(first, a.launch_index());
        first = 0;
      }
    }
  }
  std::sort(spans.begin(), spans.end());
  REQUIRE(spans.size() >= 2);
  for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first > spans[i - 1].second);
  // One switch a stage.
  CHECK(on.h->ag->overhead()->group_switches == spans.size());
}

TEST_CASE("always-on stages: a family launched further apart than the hold goes on with groups",
          "[agent][always_on][stages]") {
  // A launch every 3 s: the idle profiler is released (CUTRIAGE_RELEASE_MS, 2 s) between two
  // passes, which abandons the stage. After two stages lost that way the family takes single-pass
  // groups, which lose nothing to a release, and completes.
  Run on = start("strided_load", stages_config(0.05));
  serve(on, 3000, 3'000'000'000);
  on.h->ag->finish();
  std::vector<collectors::PlanReplay> replays;
  {
    std::lock_guard<std::mutex> lock(on.h->platform.stats.mutex);
    replays = on.h->platform.stats.begin_replays;
  }
  REQUIRE(replays.size() >= 3);
  // The stages' first passes, then groups only.
  const auto first_group = std::find(replays.begin(), replays.end(), collectors::PlanReplay::kNone);
  REQUIRE(first_group != replays.end());
  CHECK(std::count(replays.begin(), first_group, collectors::PlanReplay::kLaunches) == 2);
  CHECK(std::count(first_group, replays.end(), collectors::PlanReplay::kLaunches) == 0);
  tools::ReadResult r = on.h->read();
  CHECK(complete_notices(r) == 1);
  const v1::KernelProfile* k = last_profiled_of(kernel_records(r), r, on.a.mangled);
  REQUIRE(k != nullptr);
  for (const v1::AssembledLaunch& a : k->assembled_launches()) CHECK(a.metric_group() != 0);  // no stage finished
}

TEST_CASE("always-on stages: a restarted process resumes from the earlier stages and runs only the rest",
          "[agent][always_on][stages][resume]") {
  // The first process runs the first stage (routing counters and riders) and stops; the second,
  // resuming from its file (CUTRIAGE_RESUME), collects only what the route still reads and reaches
  // the verdict a process from nothing reaches.
  Run fresh = start("fma_chain", stages_config(0.002));
  serve(fresh, 6000, 100'000'000);
  fresh.h->ag->finish();
  Run first = start("fma_chain", stages_config(0.002));
  serve(first, 30, 100'000'000);  // 3 s: the first stage, not the second (at 0.2% its debt takes minutes)
  first.h->ag->finish();
  const int first_begins = first.h->platform.stats.begins.load();

  REQUIRE(first_begins >= 2);
  REQUIRE(complete_notices(first.h->read()) == 0);
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("cutriage-stages-resume-" + std::to_string(::getpid()) + ".pb");
  { std::ofstream(file, std::ios::binary) << first.h->bytes; }
  AgentConfig cfg = stages_config(0.002);
  cfg.resume_path = file.string();
  Run second = start("fma_chain", cfg);
  serve(second, 6000, 100'000'000);
  second.h->ag->finish();
  std::filesystem::remove(file);

  tools::ReadResult r = second.h->read();
  REQUIRE(complete_notices(r) == 1);
  const v1::KernelProfile* k = last_profiled_of(kernel_records(r), r, second.a.mangled);
  REQUIRE(k != nullptr);
  int earlier = 0;
  for (const v1::AssembledLaunch& a : k->assembled_launches()) earlier += a.earlier_pid() != 0 ? 1 : 0;
  CHECK(earlier == first_begins);  // every pass of the first process's stage
  CHECK(second.h->platform.stats.begins.load() == k->assembled_launches_size() - earlier);
  CHECK(second.h->platform.stats.begins.load() < fresh.h->platform.stats.begins.load());
  tools::ReadResult rf = fresh.h->read();
  const v1::KernelProfile* kf = last_profiled_of(kernel_records(rf), rf, fresh.a.mangled);
  REQUIRE(kf != nullptr);
  CHECK(k->diagnosis().classification() == kf->diagnosis().classification());
  CHECK(k->diagnosis().primary_rule_id() == kf->diagnosis().primary_rule_id());
}

TEST_CASE("always-on stages: first stages wait for the PM window's first answer, 30 s at most",
          "[agent][always_on][stages]") {
  // With the PM window on, a family's first stage waits for the window, which may route it and so
  // put its verdict's decisions into that stage. Here no window runs (no flush thread polls it):
  // the stage begins once the wait is over.
  AgentConfig cfg = stages_config();
  cfg.pm_window = true;
  Run on = start("strided_load", cfg);
  serve(on, 250, 100'000'000);  // 25 s
  CHECK(on.h->platform.stats.begins.load() == 0);
  serve(on, 100, 100'000'000);  // 35 s
  CHECK(on.h->platform.stats.begins.load() > 0);
  on.h->ag->finish();
}
