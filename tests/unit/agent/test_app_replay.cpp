// Application replay (CUTRIAGE_REPLAY=application, issue 21 item 2), through the fake platform:
// no launch is ever replayed (every range profiler begin() is a single-pass plan without replay),
// each profiled launch carries one metric group, and the program's runs continue each other's
// counters (CUTRIAGE_RESUME) until the family is complete. Each run is one Harness with a pid of
// its own, as the processes `cutriage run --replay application` starts are; counter values are
// the real H200 captures the other agent tests use.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_app_replay {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::Harness;
using testing::make_launch;

namespace {

AgentConfig application_replay() {
  AgentConfig c;
  c.select = agent::SelectMode::kAll;
  c.replay = agent::Replay::kApplication;
  c.trace_flush_ms = 0;
  c.summary = false;
  return c;
}

// One run of the program: `launches` launches of the kernel, resuming from `resume` when given.
// `duration_scale` multiplies the capture's gpu__time_duration.sum (and so the traced durations):
// a run whose launches took longer than the earlier runs'.
struct Run {
  std::string bytes;
  std::string log;
  int begins = 0;     // range profiler begin() calls
  int pc_begins = 0;  // PC-sampled launches
  std::vector<collectors::PlanReplay> replays;
};

Run run_program(const Captured& a, int launches, uint64_t pid, const std::string& resume = {},
                double duration_scale = 1.0, AgentConfig config = application_replay()) {
  config.resume_path = resume;
  testing::FakeCounters counters = testing::counters_for({&a});
  if (duration_scale != 1.0) {
    triage::MetricSet& m = counters.by_kernel[a.mangled];
    const triage::MetricValue* d = m.find("gpu__time_duration.sum");
    REQUIRE(d != nullptr);
    const double value = d->value * duration_scale;
    const std::string unit = d->unit;
    m.set("gpu__time_duration.sum", value, unit);
  }
  Harness h(std::move(config), std::move(counters), std::nullopt, pid);
  REQUIRE(h.ag->start());
  for (int i = 1; i <= launches; ++i) {
    h.platform.launch(make_launch(a.mangled.c_str(), static_cast<uint64_t>(i), a.launch.grid, a.launch.block));
  }
  h.ag->finish();
  Run out;
  out.bytes = h.bytes;
  out.log = h.log_text();
  out.begins = h.platform.stats.begins.load();
  out.pc_begins = h.platform.stats.pc_begins.load();
  std::lock_guard<std::mutex> lock(h.platform.stats.mutex);
  out.replays = h.platform.stats.begin_replays;
  return out;
}

std::string saved(const std::string& bytes, const std::string& name) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("cutriage-app-replay-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

// The family's latest profiled record (file order: the last one written is its state).
const v1::KernelProfile* latest(const tools::ReadResult& r) {
  const v1::KernelProfile* out = nullptr;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (k->status() == v1::PROFILE_STATUS_PROFILED) out = k;
  }
  return out;
}
const v1::KernelProfile* latest(const tools::ReadResult&& r) = delete;

const v1::Check* check_of(const v1::KernelProfile& k, const std::string& rule) {
  for (const v1::DecisionVisit& d : k.diagnosis().path()) {
    for (const v1::Check& c : d.checks()) {
      if (c.rule_id() == rule) return &c;
    }
  }
  return nullptr;
}

// Deep mode with kernel replay on the same kernel: the verdict the same counters must reach.
v1::Diagnosis deep_verdict(const Captured& a) {
  AgentConfig c = testing::select_all();
  c.summary = false;
  c.pc_sampling = false;
  Harness h(std::move(c), testing::counters_for({&a}));
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 6; ++i) h.platform.launch(make_launch(a.mangled.c_str(), i, a.launch.grid, a.launch.block));
  h.ag->finish();
  const tools::ReadResult r = h.read();
  const v1::KernelProfile* k = latest(r);
  REQUIRE(k != nullptr);
  return k->diagnosis();
}

}  // namespace

TEST_CASE("application replay: a family launched once completes over several runs, no launch replayed",
          "[agent][app_replay]") {
  for (const char* program : {"strided_load", "fma_chain"}) {
    INFO(program);
    const Captured a = capture_of(program);
    std::string resume;
    std::vector<std::string> files;
    int counter_runs = 0;
    bool done = false;
    Run last;
    for (uint64_t run = 1; run <= 40 && !done; ++run) {
      last = run_program(a, 1, 5000 + run, resume);
      INFO("run " << run << "\n" << last.log);
      // Never replayed: each begin() was a single-pass plan without replay, and the one launch
      // carried one group or the PC sampling, never both.
      for (collectors::PlanReplay p : last.replays) CHECK(p == collectors::PlanReplay::kNone);
      CHECK(last.begins + last.pc_begins <= 1);
      counter_runs += last.begins;
      const tools::ReadResult r = tools::read_cutriage_bytes(last.bytes);
      REQUIRE(r.status == tools::ReadStatus::kOk);
      REQUIRE(r.file.records(0).has_session());
      CHECK(r.file.records(0).session().mode() == "deep");
      CHECK(r.file.records(0).session().settings().replay_mode() == v1::REPLAY_MODE_APPLICATION);
      const v1::KernelProfile* k = latest(r);
      REQUIRE(k != nullptr);
      REQUIRE(k->has_application_replay());
      CHECK(k->replay_mode() == v1::REPLAY_MODE_NONE);
      CHECK(k->application_replay().runs() == static_cast<uint32_t>(counter_runs));
      CHECK(k->application_replay().counters_complete() == (k->application_replay().counters_wanted() == 0));
      done = k->application_replay().counters_complete() && k->has_pc_sampling();
      files.push_back(saved(last.bytes, std::to_string(run) + ".pb"));
      resume = files.back();
    }
    for (const std::string& f : files) std::filesystem::remove(f);
    REQUIRE(done);
    // Routing first, then what the route asks for: several runs, the last one sampling only.
    CHECK(counter_runs >= 2);
    CHECK(last.begins == 0);
    CHECK(last.pc_begins == 1);

    const tools::ReadResult r = tools::read_cutriage_bytes(last.bytes);
    const v1::KernelProfile* k = latest(r);
    REQUIRE(k != nullptr);
    CHECK(k->assembled_launches_size() == counter_runs);
    std::set<uint64_t> pids;
    for (const v1::AssembledLaunch& l : k->assembled_launches()) pids.insert(l.earlier_pid());
    CHECK(pids.size() == static_cast<size_t>(counter_runs));  // one launch of each earlier run
    CHECK(pids.count(0) == 0);
    // Decision 0 held the runs to the same test as always-on's launches, and they agreed.
    const v1::Check* d0 = check_of(*k, "d0.assembled_launches");
    REQUIRE(d0 != nullptr);
    CHECK(d0->outcome() == v1::OUTCOME_NOT_FIRED);
    CHECK(d0->reason().find("(" + std::to_string(counter_runs) + " in an earlier process)") != std::string::npos);
    // The same counters reach deep mode's verdict.
    const v1::Diagnosis deep = deep_verdict(a);
    CHECK(k->diagnosis().classification() == deep.classification());
    CHECK(k->diagnosis().primary_rule_id() == deep.primary_rule_id());
    // A family resumed, not profiled, in this run is still the profiled one in the summary.
    const v1::TraceSummary* s = tools::trace_summary(r);
    REQUIRE(s != nullptr);
    REQUIRE(s->families_size() == 1);
    CHECK(s->families(0).selection() == v1::FamilyStats::SELECTION_PROFILED);
    // The report says where the counters came from, and that they are complete.
    const std::string text = tools::render_report(r, {});
    INFO(text);
    CHECK(text.find("replay: application") != std::string::npos);
    CHECK(text.find("over " + std::to_string(counter_runs) + " runs of the application") != std::string::npos);
    CHECK(text.find("complete  yes, over " + std::to_string(counter_runs) + " runs") != std::string::npos);
  }
}

TEST_CASE("application replay: a family launched L times gets up to L groups in one run", "[agent][app_replay]") {
  const Captured a = capture_of("strided_load");
  const Run run = run_program(a, 60, 6001);
  INFO(run.log);
  REQUIRE(!run.replays.empty());
  for (collectors::PlanReplay p : run.replays) CHECK(p == collectors::PlanReplay::kNone);
  CHECK(run.begins >= 2);
  CHECK(run.begins < 60);  // complete before the launches ran out
  CHECK(run.pc_begins == 1);
  const tools::ReadResult r = tools::read_cutriage_bytes(run.bytes);
  const v1::KernelProfile* k = latest(r);
  REQUIRE(k != nullptr);
  REQUIRE(k->has_application_replay());
  CHECK(k->application_replay().runs() == 1);
  CHECK(k->application_replay().counters_complete());
  CHECK(k->has_pc_sampling());
  CHECK(k->assembled_launches_size() == run.begins);
  std::set<uint32_t> groups;
  for (const v1::AssembledLaunch& l : k->assembled_launches()) {
    CHECK(l.earlier_pid() == 0);
    CHECK(groups.insert(l.metric_group()).second);  // each launch another group
  }
  const v1::Diagnosis deep = deep_verdict(a);
  CHECK(k->diagnosis().classification() == deep.classification());
  CHECK(k->diagnosis().primary_rule_id() == deep.primary_rule_id());
}

TEST_CASE("application replay: counters continue from the earlier run's file", "[agent][app_replay]") {
  const Captured a = capture_of("strided_load");
  const Run first = run_program(a, 2, 7001);
  REQUIRE(first.begins == 2);
  const std::string file = saved(first.bytes, "continue.pb");
  const Run second = run_program(a, 2, 7002, file);
  std::filesystem::remove(file);
  INFO(second.log);
  CHECK(second.log.find("CUTRIAGE_RESUME: 1 families measured by process 7001") != std::string::npos);
  for (collectors::PlanReplay p : second.replays) CHECK(p == collectors::PlanReplay::kNone);
  const tools::ReadResult r = tools::read_cutriage_bytes(second.bytes);
  const v1::KernelProfile* k = latest(r);
  REQUIRE(k != nullptr);
  std::set<uint32_t> earlier_groups, own_groups;
  for (const v1::AssembledLaunch& l : k->assembled_launches()) {
    if (l.earlier_pid() != 0) {
      CHECK(l.earlier_pid() == 7001);
      earlier_groups.insert(l.metric_group());
    } else {
      own_groups.insert(l.metric_group());
    }
  }
  CHECK(earlier_groups.size() == 2);
  CHECK(own_groups.size() == static_cast<size_t>(second.begins));
  for (uint32_t g : own_groups) CHECK(earlier_groups.count(g) == 0);  // only what the first run lacked
  REQUIRE(k->has_application_replay());
  CHECK(k->application_replay().runs() == (second.begins > 0 ? 2U : 1U));
  // The record written where it was resumed says so.
  bool resumed = false;
  for (const v1::KernelProfile* p : tools::current_kernels(r)) {
    if (p->status_detail().find("resumed from") == std::string::npos) continue;
    resumed = true;
    CHECK(p->has_application_replay());
    CHECK(p->assembled_launches_size() == 2);
  }
  CHECK(resumed);
}

TEST_CASE("application replay: Decision 0 distrusts counters of runs whose launches took different times",
          "[agent][app_replay]") {
  const Captured a = capture_of("strided_load");
  const Run first = run_program(a, 2, 8001);
  const std::string file1 = saved(first.bytes, "d0-1.pb");
  // The second run's launches took three times as long (other inputs, another GPU's load).
  const Run second = run_program(a, 2, 8002, file1, 3.0);
  const std::string file2 = saved(second.bytes, "d0-2.pb");
  // A third run only continues the same counters (nothing collected on the launch it resumes at).
  const Run third = run_program(a, 1, 8003, file2, 3.0);
  // And the control: the same launches in one run, alike.
  const Run alike = run_program(a, 4, 8004);
  std::filesystem::remove(file1);
  std::filesystem::remove(file2);
  REQUIRE(second.begins > 0);

  const tools::ReadResult r2 = tools::read_cutriage_bytes(second.bytes);
  const v1::KernelProfile* k = latest(r2);
  REQUIRE(k != nullptr);
  const v1::Check* d0 = check_of(*k, "d0.assembled_launches");
  REQUIRE(d0 != nullptr);
  INFO(d0->reason());
  CHECK(d0->outcome() == v1::OUTCOME_FIRED);
  CHECK(d0->reason().find("(2 in an earlier process)") != std::string::npos);
  CHECK(d0->reason().find("(3.00x)") != std::string::npos);
  CHECK(k->diagnosis().trust() == v1::TRUST_UNTRUSTED);

  // The same counters give the same verdict on every path: the record written where run 3
  // resumed them, and run 3's end-of-run record.
  const tools::ReadResult r3 = tools::read_cutriage_bytes(third.bytes);
  int resumed_records = 0;
  for (const v1::Record& rec : r3.file.records()) {  // every revision, the resumed record's too
    if (!rec.has_kernel() || rec.kernel().status() != v1::PROFILE_STATUS_PROFILED) continue;
    const v1::KernelProfile* p = &rec.kernel();
    const v1::Check* c = check_of(*p, "d0.assembled_launches");
    REQUIRE(c != nullptr);
    CHECK(c->outcome() == v1::OUTCOME_FIRED);
    CHECK(p->diagnosis().trust() == v1::TRUST_UNTRUSTED);
    resumed_records += p->status_detail().find("resumed from") != std::string::npos ? 1 : 0;
  }
  CHECK(resumed_records == 1);

  const tools::ReadResult ra = tools::read_cutriage_bytes(alike.bytes);
  const v1::KernelProfile* ka = latest(ra);
  REQUIRE(ka != nullptr);
  const v1::Check* da = check_of(*ka, "d0.assembled_launches");
  REQUIRE(da != nullptr);
  CHECK(da->outcome() == v1::OUTCOME_NOT_FIRED);
}

TEST_CASE("application replay: no deep capture, and no resuming from a run with kernel replay",
          "[agent][app_replay]") {
  const Captured a = capture_of("strided_load");
  {
    Harness h(application_replay(), testing::counters_for({&a}));
    REQUIRE(h.ag->start());
    std::string error;
    CHECK(h.ag->request_deep_capture(wire::ControlSource::kApi, "top:1", 10, &error) == 0);
    CHECK(error.find("CUTRIAGE_REPLAY=application") != std::string::npos);
    h.ag->finish();
  }
  AgentConfig deep = testing::select_all();
  deep.summary = false;
  const Run kernel_replay = run_program(a, 3, 9001, {}, 1.0, deep);
  bool replayed = false;
  for (collectors::PlanReplay p : kernel_replay.replays) replayed = replayed || p == collectors::PlanReplay::kKernel;
  CHECK(replayed);
  const std::string file = saved(kernel_replay.bytes, "kernel-replay.pb");
  const Run app = run_program(a, 1, 9002, file);
  std::filesystem::remove(file);
  CHECK(app.log.find("neither in always-on mode nor under application replay; skipped") != std::string::npos);
  const tools::ReadResult r = tools::read_cutriage_bytes(app.bytes);
  const v1::KernelProfile* k = latest(r);
  REQUIRE(k != nullptr);
  CHECK(k->assembled_launches_size() == 1);  // started afresh
}

}  // namespace test_app_replay
