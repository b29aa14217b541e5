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
#include <thread>
#include <vector>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_always_on_stages {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::Harness;
using testing::kernel_records;
using testing::make_launch;

namespace {

AgentConfig stages_config(double budget_fraction = 0.01) {
  AgentConfig c = testing::always_on_driven(budget_fraction);
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

TEST_CASE("always-on stages: the stage's record says what its first pass cost, part by part",
          "[agent][always_on][stages]") {
  // The H200 showed a stage's first pass at 531 ms against 24.5 ms for the others, with no split:
  // the record and the log now carry the plan made on the launching thread and the range
  // profiler's calls. The fake charges a plan 90 ms and a begin() to CUPTI's Start.
  Run on = start("fma_chain", stages_config());
  serve(on, 1, 100'000'000);  // the chip's groups are planned, and the first stage, at launch #1
  on.h->platform.config.cost_plan_ns = 90'000'000;
  serve(on, 600, 100'000'000);  // a minute, ten launches a second
  on.h->ag->finish();
  tools::ReadResult r = on.h->read();
  const v1::KernelProfile* k = nullptr;  // the last stage's record
  for (const v1::KernelProfile* p : kernel_records(r)) {
    if (p->status() == v1::PROFILE_STATUS_PROFILED && p->has_first_pass_cost()) k = p;
  }
  REQUIRE(k != nullptr);
  REQUIRE(k->passes() > 1);
  const v1::ProfileCost& first = k->first_pass_cost();
  CHECK(first.plan_ns() == 90'000'000);                  // made on the launching thread, inside setup
  CHECK(first.setup_ns() >= first.plan_ns());
  CHECK(first.range_steps().start_ns() == 170'000'000);  // a new configuration: the switch's cost
  CHECK(first.start_ns() >= first.range_steps().start_ns());
  CHECK(first.passes() == k->passes());
  // The last pass (the record's own cost) reused both.
  CHECK(k->cost().plan_ns() == 0);
  CHECK(k->cost().range_steps().start_ns() == 20'000'000);
  // The log's line for that stage, its parts largest first.
  const std::string log = on.h->log_text();
  const size_t line = log.rfind(": first pass ");
  REQUIRE(line != std::string::npos);
  const std::string last_line = log.substr(line, log.find('\n', line) - line);
  INFO(last_line);
  CHECK(last_line.find(": first pass 260.0 ms (start 170.0 ms, plan 90.0 ms)") != std::string::npos);
  // The report's verbose cost lines show both.
  tools::ReportOptions verbose;
  verbose.verbose = true;
  const std::string text = tools::render_report(r, verbose);
  CHECK(text.find("1st pass  setup 90.0 ms (plan 90.0 ms)") != std::string::npos);
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

TEST_CASE("always-on stages: another family's stage with the same counters starts CUPTI's collection over",
          "[agent][always_on][stages]") {
  // A's first stage runs three of its passes and A stops launching; its idle profiler is not
  // released for a minute (CUTRIAGE_RELEASE_MS), so after the hold B's first stage, with the same
  // counters (the same plan), begins on an object halfway through A's collection. B's stage must
  // start a collection of its own: the fake gives no counters for a collection whose passes ran on
  // two kernels, as CUPTI's image would mix their counts.
  Captured b = capture_of("fma_chain");
  AgentConfig cfg = stages_config(0.2);
  cfg.release_ms = 60'000;
  Run on = start("strided_load", cfg);
  on.h = std::make_unique<Harness>(cfg, testing::counters_for({&on.a, &b}));
  on.h->platform.config.switch_after_disable = true;
  REQUIRE(on.h->ag->start());
  serve(on, 3, 100'000'000);
  REQUIRE(on.h->platform.stats.begins.load() == 3);
  const int disables_before = on.h->platform.stats.disables.load();
  on.h->platform.mono_ns += 31'000'000'000;  // A is no longer "still launching"; the hold is over
  Run b_run{b, std::move(on.h), on.launches};
  serve(b_run, 600, 100'000'000);
  b_run.h->ag->finish();
  CHECK(b_run.h->platform.stats.disables.load() > disables_before);  // A's collection abandoned
  tools::ReadResult r = b_run.h->read();
  const v1::KernelProfile* kb = last_profiled_of(kernel_records(r), r, b.mangled);
  REQUIRE(kb != nullptr);
  bool has_throughput = false;
  for (const v1::Metric& m : kb->metrics()) {
    has_throughput = has_throughput || tools::lookup(r, m.name_iid()) == "sm__throughput.avg.pct_of_peak_sustained_elapsed";
  }
  CHECK(has_throughput);
  // B's first stage lists B's launches only.
  std::set<uint64_t> b_launches;
  for (const v1::AssembledLaunch& a : kb->assembled_launches()) b_launches.insert(a.launch_index());
  for (uint64_t li = 1; li <= 3; ++li) CHECK(b_launches.count(li) == 0);
}

TEST_CASE("always-on stages: a stage whose values cannot be read is not continued as if intact",
          "[agent][always_on][stages]") {
  // The first stage's values cannot be evaluated (the host fails on its first evaluate()). The
  // family's next launch must start a new stage, admitted as one (a switch), not pass for the next
  // pass of a stage CUPTI has already finished.
  Run probe = start("strided_load", stages_config());
  serve(probe, 40, 100'000'000);
  probe.h->ag->finish();
  std::vector<std::vector<std::string>> begun;
  {
    std::lock_guard<std::mutex> lock(probe.h->platform.stats.mutex);
    begun = probe.h->platform.stats.begin_metrics;
  }
  size_t first_stage = 0;
  while (first_stage < begun.size() && begun[first_stage] == begun.front()) ++first_stage;
  REQUIRE(first_stage >= 2);

  Run on = start("strided_load", stages_config());
  on.h->platform.config.fail_evaluate_on_call = 1;  // the first stage's, after its last pass
  serve(on, 3000, 100'000'000);
  on.h->ag->finish();
  tools::ReadResult r = on.h->read();
  CHECK(complete_notices(r) == 1);
  // Every switch admitted started a stage; the failed one counts as one of them, and nothing was
  // begun as a "next pass" beyond the passes the stages' plans have.
  std::vector<std::vector<std::string>> after;
  {
    std::lock_guard<std::mutex> lock(on.h->platform.stats.mutex);
    after = on.h->platform.stats.begin_metrics;
  }
  size_t runs = 0;
  for (size_t i = 0; i < after.size(); ++i) runs += i == 0 || after[i] != after[i - 1] ? 1 : 0;
  const v1::KernelProfile* k = last_profiled_of(kernel_records(r), r, on.a.mangled);
  REQUIRE(k != nullptr);
  // The failed stage was run again in full: the stage's counters appear in two runs of begins
  // (or more), and the record's launches are those of completed stages only.
  CHECK(static_cast<int>(after.size()) - static_cast<int>(first_stage) == k->assembled_launches_size());
  CHECK(runs >= 2);
}

TEST_CASE("always-on stages: the fast path lets a stage's launches through only while the stage can go on",
          "[agent][always_on][stages]") {
  // A stage begins; then the family's launches change shape (never profiled: the first shape is
  // the family's) for a minute, a hundred a second, as a kernel whose grid follows the batch does.
  // Once the stage's hold is over they do not all take the slow path to the selection (a driver
  // query and the family table's lock each): a launch of another shape holds the family's fast
  // path closed for a second.
  Run on = start("strided_load", stages_config(0.004));
  serve(on, 2, 100'000'000);
  REQUIRE(on.h->platform.stats.begins.load() == 2);
  const int details_before = on.h->platform.details_calls.load();
  triage::Dim3 other_grid = on.a.launch.grid;
  other_grid.x += 1;
  for (int i = 0; i < 6000; ++i) {
    on.h->platform.mono_ns += 10'000'000;
    on.h->platform.launch(make_launch(on.a.mangled.c_str(), ++on.launches, other_grid, on.a.launch.block));
  }
  on.h->ag->finish();
  // The 2 s hold (200 launches), then about one a second.
  CHECK(on.h->platform.details_calls.load() - details_before < 400);
}

TEST_CASE("always-on budget: a launch admitted but not profiled teaches the estimates nothing",
          "[agent][always_on][budget]") {
  agent::Budget b(agent::BudgetOptions{0.01, 100.0, 60'000'000'000}, 0);
  const uint64_t t = 120'000'000'000;
  REQUIRE(b.admit(t, agent::CostKind::kGroupSwitch));
  const uint64_t estimate = b.estimate_ns(agent::CostKind::kGroupSwitch);
  const wire::OverheadStats before = b.stats(t);
  b.cancel(t + 1000, agent::CostKind::kGroupSwitch, 1000);  // its context was taken: microseconds
  CHECK(b.estimate_ns(agent::CostKind::kGroupSwitch) == estimate);
  const wire::OverheadStats after = b.stats(t + 1000);
  CHECK(after.group_switches + 1 == before.group_switches);
  // The next real switch is still CUPTI's start-up (left out of the mean), not the cancelled one.
  REQUIRE(b.admit(t + 20'000'000, agent::CostKind::kGroupSwitch));
  b.charge(t + 20'000'000 + 700'000'000, agent::CostKind::kGroupSwitch, 700'000'000);
  CHECK(b.estimate_ns(agent::CostKind::kGroupSwitch) < 700'000'000);
}

TEST_CASE("always-on stages: without a flush thread, a profiler a stage left halfway is still released",
          "[agent][always_on][stages]") {
  // CUTRIAGE_RELEASE_MS below the stage's hold and no flush thread: the release falls to a launch
  // once due, and the first time it is due the stage's hold still keeps the profiler. It must be
  // looked at again once the hold is over, not left enabled (slowing every launch) for good.
  AgentConfig cfg = stages_config();
  cfg.release_ms = 500;
  Run on = start("strided_load", cfg);
  serve(on, 3, 100'000'000);
  REQUIRE(on.h->platform.stats.begins.load() == 3);
  const int disables_before = on.h->platform.stats.disables.load();
  // Then only launches of another shape (never profiled), ten a second for ten seconds.
  triage::Dim3 other_grid = on.a.launch.grid;
  other_grid.x += 1;
  for (int i = 0; i < 100; ++i) {
    on.h->platform.mono_ns += 100'000'000;
    on.h->platform.launch(make_launch(on.a.mangled.c_str(), ++on.launches, other_grid, on.a.launch.block));
  }
  CHECK(on.h->platform.stats.disables.load() > disables_before);
  on.h->ag->finish();
}

TEST_CASE("always-on stages: a launch on another thread while a pass is in flight waits for it",
          "[agent][always_on][stages]") {
  // Two threads launch the family. While the stage's first pass is in flight on one (its Start
  // takes up to 200 ms on the H200), the other's launch must not take the stage for lost: it runs
  // unprofiled, and the stage goes on with the passes that follow, none lost.
  Run on = start("strided_load", stages_config());
  int other_thread_launches = 0;
  on.h->platform.config.while_profiled = [&] {
    if (other_thread_launches >= 3) return;
    ++other_thread_launches;
    std::thread other([&] {
      on.h->platform.launch(make_launch(on.a.mangled.c_str(), 900000 + other_thread_launches, on.a.launch.grid,
                                        on.a.launch.block));
    });
    other.join();
  };
  serve(on, 3000, 100'000'000);
  on.h->ag->finish();
  REQUIRE(other_thread_launches == 3);
  tools::ReadResult r = on.h->read();
  CHECK(complete_notices(r) == 1);
  const v1::KernelProfile* k = last_profiled_of(kernel_records(r), r, on.a.mangled);
  REQUIRE(k != nullptr);
  // Every pass begun is one of a stage that completed: nothing abandoned, nothing begun twice.
  CHECK(k->assembled_launches_size() == on.h->platform.stats.begins.load());
}

}  // namespace test_always_on_stages
