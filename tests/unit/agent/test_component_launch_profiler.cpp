// LaunchProfiler wired with the other components and the fake platform (tests/support/
// component_rig.h), driven launch by launch without Agent: a profiled launch's record (the fake's
// real H200 counters, the engine's diagnosis), a busy context, a permission failure, failed CUPTI
// calls, launches that are never replayed, the trace's view of a replayed launch, PC sampling after
// the counters, deep captures, and an always-on launch within its budget.
#include <algorithm>
#include <string>
#include <vector>

#include "component_rig.h"
#include "report.h"
#include "cutriage/triage/plan.h"
#include "stages.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_launch_profiler {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::ComponentRig;
using testing::counters_for;
using testing::kernel_records;
using testing::make_launch;

namespace {

AgentConfig deep_config(agent::MetricMode mode = agent::MetricMode::kFull, bool pc_sampling = false) {
  AgentConfig c = testing::select_all();
  c.metric_mode = mode;
  c.pc_sampling = pc_sampling;
  return c;
}

collectors::LaunchEvent launch_of(const Captured& k, uint64_t correlation) {
  return make_launch(k.mangled, correlation, k.launch.grid, k.launch.block);
}

}  // namespace

TEST_CASE("launch profiler: a profiled launch writes a PROFILED record with the fake's counters and the diagnosis",
          "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(), counters_for({&k}));
  REQUIRE(rig.launch(launch_of(k, 1)));
  CHECK(rig.platform.stats.begins.load() == 1);
  CHECK(rig.platform.stats.ends.load() == 1);

  tools::ReadResult r = rig.read();
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);
  const v1::KernelProfile& rec = *ks[0];
  CHECK(rec.status() == v1::PROFILE_STATUS_PROFILED);
  CHECK(rec.profile_number() == 1);
  CHECK(rec.launch_index() == 1);
  CHECK(rec.correlation_id() == 1);
  CHECK(rec.replay_mode() == v1::REPLAY_MODE_KERNEL);
  CHECK(rec.launch().registers_per_thread() == 32);  // from the platform's function attributes
  // Every measured value is the capture's.
  size_t measured = 0;
  for (const v1::Metric& m : rec.metrics()) {
    if (m.derived()) continue;
    const triage::MetricValue* v = k.metrics.find(std::string(tools::lookup(r, m.name_iid())));
    REQUIRE(v != nullptr);
    CHECK(m.value() == v->value);
    ++measured;
  }
  CHECK(measured > 0);
  // Every counter in one launch: the capture's own verdict.
  CHECK(rec.diagnosis().primary_rule_id() == k.reference.primary_rule);

  std::lock_guard<std::mutex> lock(rig.families.mutex());
  agent::Family& f = *rig.families.by_id_locked(1);
  CHECK(f.stats.profiled == 1);
  CHECK(rig.families.totals_locked().totals.profiled_launches == 1);
  REQUIRE(f.diagnosis);
  CHECK(f.diagnosis->classification == k.reference.classification);
  CHECK(f.complete);
  CHECK_FALSE(f.candidate.load());  // nothing left: no PC sampling either
  CHECK_FALSE(rig.contexts.for_launch(launch_of(k, 2))->busy.load());
}

TEST_CASE("launch profiler: a second launch adds what the route still lacks to the same record",
          "[component][launch_profiler]") {
  Captured k = capture_of("register_spill");
  ComponentRig rig(deep_config(agent::MetricMode::kAdaptive), counters_for({&k}));
  REQUIRE(rig.launch(launch_of(k, 1)));
  REQUIRE(rig.launch(launch_of(k, 2)));
  REQUIRE(rig.platform.stats.planned.size() == 2);
  CHECK(rig.platform.stats.planned[0].size() == agent::first_stage_counters("GH100").size());
  // The second plan asks for none of what the first one measured.
  for (const std::string& m : rig.platform.stats.planned[1]) {
    CHECK(std::find(rig.platform.stats.planned[0].begin(), rig.platform.stats.planned[0].end(), m) ==
          rig.platform.stats.planned[0].end());
  }
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 2);
  CHECK(ks[1]->profile_number() == 2);
  REQUIRE(ks[1]->combined_launch_indices_size() == 1);
  CHECK(ks[1]->combined_launch_indices(0) == 1);
  CHECK(ks[1]->metrics_size() > ks[0]->metrics_size());
}

// Issue 23: every deep record listed pcie__read_bytes.sum and pcie__write_bytes.sum as "not
// collectable on this GPU", though GH100 collects them; CUPTI only refuses them in one config with
// dram__* (profiler_host.cpp). Refused beside a partner, a counter is asked again without it.
TEST_CASE("launch profiler: a counter refused only beside another is asked again, not called uncollectable",
          "[component][launch_profiler]") {
  Captured k = capture_of("register_spill");
  AgentConfig c = deep_config(agent::MetricMode::kAdaptive);
  c.max_profiles_per_kernel = 8;
  ComponentRig rig(c, counters_for({&k}));
  for (const char* pcie : {"pcie__read_bytes.sum", "pcie__write_bytes.sum"}) {
    rig.platform.config.conflicts[pcie] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
  }
  for (uint64_t i = 1; i <= 8; ++i) {
    if (!rig.launch(launch_of(k, i))) break;
  }
  // stats.planned holds what each plan accepted: the first stage kept dram__ and refused pcie__
  // beside it; a later stage, without dram__, collected pcie__.
  const auto has = [](const std::vector<std::string>& plan, const char* m) {
    return std::find(plan.begin(), plan.end(), m) != plan.end();
  };
  REQUIRE(rig.platform.stats.planned.size() >= 2);
  REQUIRE(has(rig.platform.stats.planned[0], "dram__throughput.avg.pct_of_peak_sustained_elapsed"));
  REQUIRE_FALSE(has(rig.platform.stats.planned[0], "pcie__read_bytes.sum"));
  bool retried = false;
  for (size_t i = 1; i < rig.platform.stats.planned.size(); ++i) {
    retried = retried || has(rig.platform.stats.planned[i], "pcie__read_bytes.sum");
  }
  CHECK(retried);
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE_FALSE(ks.empty());
  const v1::KernelProfile& last = *ks.back();
  for (const std::string& rejected : last.rejected_metrics()) CHECK(rejected.rfind("pcie__", 0) != 0);
  bool measured = false;
  for (const v1::Metric& m : last.metrics()) measured = measured || tools::lookup(r, m.name_iid()) == "pcie__read_bytes.sum";
  CHECK(measured);
}

TEST_CASE("launch profiler: a busy context leaves the launch unprofiled and the family waiting",
          "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(), counters_for({&k}));
  // Another thread's profile holds the context.
  std::shared_ptr<agent::ContextState> held = rig.contexts.claim(launch_of(k, 100));
  REQUIRE(held);
  CHECK_FALSE(rig.launch(launch_of(k, 1)));
  CHECK(rig.platform.stats.begins.load() == 0);
  CHECK(rig.bytes.empty());  // no record: the launch was not profiled, nor refused for good
  {
    std::lock_guard<std::mutex> lock(rig.families.mutex());
    agent::Family& f = *rig.families.by_id_locked(1);
    CHECK(f.profiles_started == 0);
    CHECK(rig.families.totals_locked().profiles_started == 0);
    CHECK(f.candidate.load());
  }
  held->busy.store(false);
  CHECK(rig.launch(launch_of(k, 2)));
  tools::ReadResult r = rig.read();
  REQUIRE(kernel_records(r).size() == 1);
  CHECK(kernel_records(r)[0]->launch_index() == 2);
}

TEST_CASE("launch profiler: counters a busy context kept from a later launch are asked for again",
          "[component][launch_profiler]") {
  // The selection marks the counters it picks as attempted; when the launch then finds its context
  // busy, the profiler gives them back, in deep mode too (kept as attempted, the route's next
  // counters would count as tried and the family would end without them).
  Captured k = capture_of("register_spill");
  ComponentRig rig(deep_config(agent::MetricMode::kAdaptive), counters_for({&k}));
  REQUIRE(rig.launch(launch_of(k, 1)));
  std::vector<std::string> wanted_next;
  {
    std::lock_guard<std::mutex> lock(rig.families.mutex());
    agent::Family& f = *rig.families.by_id_locked(1);
    REQUIRE(f.diagnosis);
    wanted_next = triage::counters_still_needed(*f.diagnosis, f.measured, {f.attempted.begin(), f.attempted.end()});
  }
  REQUIRE_FALSE(wanted_next.empty());
  std::shared_ptr<agent::ContextState> held = rig.contexts.claim(launch_of(k, 100));
  REQUIRE(held);
  CHECK_FALSE(rig.launch(launch_of(k, 2)));
  {
    // The launch collected nothing: what it picked is still to be asked for.
    std::lock_guard<std::mutex> lock(rig.families.mutex());
    agent::Family& f = *rig.families.by_id_locked(1);
    CHECK(f.profiles_started == 1);
    size_t marked = 0;
    for (const std::string& m : wanted_next) marked += f.attempted.count(m);
    CHECK(marked == 0);
  }
  held->busy.store(false);
  CHECK(rig.launch(launch_of(k, 3)));
  REQUIRE(rig.platform.stats.planned.size() == 2);
  CHECK(rig.platform.stats.planned[1] == wanted_next);
}

TEST_CASE("launch profiler: a permission failure turns the agent inactive once", "[component][launch_profiler]") {
  Captured a = capture_of("vector_add");
  Captured b = capture_of("fma_chain");
  ComponentRig rig(deep_config(), counters_for({&a, &b}));
  rig.platform.config.begin_status =
      collectors::Status(collectors::StatusCode::kPermissionDenied, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (fake)");
  CHECK_FALSE(rig.launch(launch_of(a, 1)));
  REQUIRE(rig.inactive.size() == 1);
  CHECK(rig.inactive[0].first == wire::AgentState::kPermissionDenied);
  CHECK(rig.inactive[0].second.find("INSUFFICIENT_PRIVILEGES") != std::string::npos);
  // Later launches of this and other kernels do not try again.
  CHECK_FALSE(rig.launch(launch_of(a, 2)));
  CHECK_FALSE(rig.launch(launch_of(b, 3)));
  CHECK(rig.inactive.size() == 1);
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0]->status() == v1::PROFILE_STATUS_NOT_PROFILED_PERMISSION);
  CHECK_FALSE(rig.contexts.for_launch(launch_of(a, 4))->busy.load());
}

TEST_CASE("launch profiler: a failed decode is recorded as FAILED and the next launch profiles",
          "[component][launch_profiler]") {
  Captured k = capture_of("strided_load");
  ComponentRig rig(deep_config(), counters_for({&k}));
  rig.platform.config.fail_end_on_call = 1;
  CHECK(rig.launch(launch_of(k, 1)));
  CHECK(rig.launch(launch_of(k, 2)));
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0]->status() == v1::PROFILE_STATUS_FAILED);
  CHECK(ks[0]->status_detail().find("range profiler stop/decode") != std::string::npos);
  CHECK(ks[1]->status() == v1::PROFILE_STATUS_PROFILED);
  std::lock_guard<std::mutex> lock(rig.families.mutex());
  CHECK(rig.families.by_id_locked(1)->stats.failed == 1);
  CHECK(rig.families.totals_locked().totals.failed_profiles == 1);
  CHECK(rig.families.totals_locked().totals.profiled_launches == 1);
}

TEST_CASE("launch profiler: a context without a range profiler fails the launch, not the context's next",
          "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(), counters_for({&k}));
  rig.platform.config.range_profiler_status =
      collectors::Status(collectors::StatusCode::kNotSupported, "no range profiler (fake)");
  CHECK_FALSE(rig.launch(launch_of(k, 1)));
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0]->status() == v1::PROFILE_STATUS_FAILED);
  CHECK(!ks[0]->status_detail().empty());
  CHECK(rig.platform.stats.begins.load() == 0);
  CHECK_FALSE(rig.contexts.for_launch(launch_of(k, 2))->busy.load());
}

TEST_CASE("launch profiler: an exception after the context's claim gives the context back",
          "[component][launch_profiler]") {
  // An allocation failing in the profiled launch's set-up (here the function attributes' call)
  // is caught at the callback's edge; the context it had claimed must not stay claimed, or no
  // launch on it is ever profiled again.
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(), counters_for({&k}));
  rig.platform.config.throw_in_launch_config = true;
  CHECK_FALSE(rig.launch(launch_of(k, 1)));
  CHECK_FALSE(rig.contexts.for_launch(launch_of(k, 2))->busy.load());
  CHECK(rig.launch(launch_of(k, 2)));
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE_FALSE(ks.empty());
  CHECK(ks.back()->status() == v1::PROFILE_STATUS_PROFILED);
}

TEST_CASE("launch profiler: cooperative and communication kernels get one record saying why",
          "[component][launch_profiler]") {
  ComponentRig rig(deep_config());
  for (uint64_t i = 1; i <= 3; ++i) {
    collectors::LaunchEvent coop = make_launch("coop_kernel", i);
    coop.cooperative = true;
    CHECK_FALSE(rig.launch(coop));
    CHECK_FALSE(rig.launch(make_launch("ncclDevKernel_Broadcast", 10 + i)));
  }
  CHECK(rig.platform.stats.begins.load() == 0);
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 2);
  for (const v1::KernelProfile* k : ks) CHECK(k->status() == v1::PROFILE_STATUS_NOT_PROFILED_NO_REPLAY);
  CHECK(ks[0]->status_detail().find("cooperative") != std::string::npos);
  CHECK(ks[1]->status_detail().find("communication") != std::string::npos);
  std::lock_guard<std::mutex> lock(rig.families.mutex());
  for (agent::Family* f : rig.families.all_locked()) CHECK_FALSE(f->candidate.load());
}

TEST_CASE("launch profiler: with the trace, a profiled launch is a replay in the timeline", "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(), counters_for({&k}));
  rig.trace_started.store(true);
  rig.trace.started(rig.platform.timestamp_ns(), 0);
  REQUIRE(rig.launch(launch_of(k, 5)));
  // The replayed launch's window stands in for its record, and a flush was forced for the buffer.
  {
    std::unique_lock<std::mutex> lock = rig.trace.lock();
    const triage::FamilyTimeStats* s = rig.trace.timeline_locked().family(1);
    REQUIRE(s != nullptr);
    CHECK(s->launches == 1);
    CHECK(s->replayed_launches == 1);
  }
  CHECK(rig.platform.forced_flushes.load() == 1);
  // A timed record of the same launch coming later is a replay too.
  collectors::ActivityBatch b;
  collectors::KernelActivity a;
  a.mangled_name = k.mangled;
  a.block = k.launch.block;
  a.start_ns = rig.platform.timestamp_ns();
  a.end_ns = a.start_ns + 1000;
  a.correlation_id = 5;
  b.kernels.push_back(a);
  rig.trace.on_activity(b);
  {
    std::unique_lock<std::mutex> lock = rig.trace.lock();
    CHECK(rig.trace.timeline_locked().family(1)->replayed_launches == 2);
  }
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0]->family_id() == 1);
}

TEST_CASE("launch profiler: PC sampling follows the counters and rewrites their record", "[component][launch_profiler]") {
  Captured k = capture_of("fma_chain");
  ComponentRig rig(deep_config(agent::MetricMode::kFull, true), counters_for({&k}));
  REQUIRE(rig.launch(launch_of(k, 1)));
  CHECK(rig.platform.stats.pc_begins.load() == 0);
  REQUIRE(rig.launch(launch_of(k, 2)));
  CHECK(rig.platform.stats.pc_begins.load() == 1);
  CHECK(rig.platform.stats.pc_ends.load() == 1);
  CHECK(rig.platform.stats.begins.load() == 1);  // no counters on the sampled launch
  CHECK_FALSE(rig.launch(launch_of(k, 3)));       // one sampled launch per family
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);  // the profiled launch's record, in its latest revision
  CHECK(ks[0]->launch_index() == 1);
  CHECK(ks[0]->revision() == 1);
  REQUIRE(ks[0]->has_pc_sampling());
  CHECK(ks[0]->pc_sampling().from_launch_index() == 2);
  CHECK(!ks[0]->pc_sampling().error().empty());  // the fake returned no samples
}

TEST_CASE("launch profiler: a sampler that cannot start says so in the record", "[component][launch_profiler]") {
  Captured k = capture_of("fma_chain");
  ComponentRig rig(deep_config(agent::MetricMode::kFull, true), counters_for({&k}));
  rig.platform.config.pc_begin_status = collectors::Status(collectors::StatusCode::kInternal, "pc begin failed (fake)");
  REQUIRE(rig.launch(launch_of(k, 1)));
  CHECK_FALSE(rig.launch(launch_of(k, 2)));
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);
  REQUIRE(ks[0]->has_pc_sampling());
  CHECK(ks[0]->pc_sampling().error().find("pc begin failed") != std::string::npos);
  CHECK_FALSE(rig.contexts.for_launch(launch_of(k, 3))->busy.load());
}

TEST_CASE("launch profiler: the exit of another launch completes nothing", "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(), counters_for({&k}));
  auto [f, index] = rig.count_launch(launch_of(k, 1));
  testing::FakePlatform::current_kernel() = k.mangled;
  REQUIRE(rig.profiler.enter(launch_of(k, 1), *f, index));
  rig.profiler.exit(launch_of(k, 99));
  CHECK(rig.platform.stats.ends.load() == 0);
  CHECK(rig.bytes.empty());
  rig.profiler.exit(launch_of(k, 1));
  CHECK(rig.platform.stats.ends.load() == 1);
  tools::ReadResult r = rig.read();
  CHECK(kernel_records(r).size() == 1);
  testing::FakePlatform::began_on_this_thread() = false;
}

TEST_CASE("launch profiler: a deep-capture window profiles its family with every counter, then samples it",
          "[component][launch_profiler]") {
  Captured k = capture_of("strided_load");
  AgentConfig c = deep_config(agent::MetricMode::kAdaptive, true);
  c.select = agent::SelectMode::kNone;  // nothing is profiled outside the window
  ComponentRig rig(c, counters_for({&k}));
  CHECK_FALSE(rig.launch(launch_of(k, 1)));
  {
    std::lock_guard<std::mutex> lock(rig.families.mutex());
    agent::DeepWindow w;
    w.request.id = 7;
    REQUIRE(w.filter.set("regex:.", agent::NameBase::kFunction).empty());
    rig.selector.deep_locked() = std::move(w);
    rig.selector.update_all_locked();
  }
  rig.selector.set_deep_open(true);
  REQUIRE(rig.launch(launch_of(k, 2)));
  REQUIRE(rig.platform.stats.planned.size() == 1);
  std::vector<std::string> all = agent::all_counters();
  std::vector<std::string> planned = rig.platform.stats.planned[0];
  for (const std::string& m : planned) CHECK(std::find(all.begin(), all.end(), m) != all.end());
  CHECK(planned.size() + rig.platform.config.chip_rejects.size() >= all.size());
  CHECK(rig.deep_profiled == 1);
  REQUIRE(rig.launch(launch_of(k, 3)));
  CHECK(rig.platform.stats.pc_begins.load() == 1);
  CHECK(rig.deep_profiled == 2);
  CHECK_FALSE(rig.launch(launch_of(k, 4)));  // done with it in this window
  std::lock_guard<std::mutex> lock(rig.families.mutex());
  CHECK(rig.families.by_id_locked(1)->deep_request == 7);
}

TEST_CASE("launch profiler: an always-on launch collects one group without replay and is charged",
          "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  AgentConfig c = testing::select_all();
  c.mode = agent::AgentMode::kAlwaysOn;
  c.release_ms = 0;  // the profiler is disabled as the launch ends
  ComponentRig rig(c, counters_for({&k}));
  // The budget starts with a full allowance: the first launch goes at once.
  REQUIRE(rig.launch(launch_of(k, 1)));
  REQUIRE(rig.platform.stats.begin_replays.size() == 1);
  CHECK(rig.platform.stats.begin_replays[0] == collectors::PlanReplay::kNone);
  CHECK(rig.platform.stats.enabled_context[0].load() == 0);  // released
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0]->replay_mode() == v1::REPLAY_MODE_NONE);
  REQUIRE(ks[0]->assembled_launches_size() == 1);
  CHECK(ks[0]->assembled_launches(0).launch_index() == 1);
  CHECK(ks[0]->assembled_launches(0).metric_group() >= 1);
  std::lock_guard<std::mutex> lock(rig.families.mutex());
  const wire::OverheadStats s = rig.always_on->stats_locked();
  CHECK(s.admitted == 1);
  CHECK(s.group_switches == 1);
  CHECK(s.spent_ns >= rig.platform.config.cost_switch_ns);  // what the fake's begin() cost
}

TEST_CASE("launch profiler: a profiled launch's record says what each phase cost on the application's thread",
          "[component][launch_profiler]") {
  Captured k = capture_of("vector_add");
  ComponentRig rig(deep_config(agent::MetricMode::kFull, /*pc_sampling=*/true), counters_for({&k}));
  // The fake's clock moves by its configured costs (a new plan's begin, a PC sampler's begin) and
  // by what the test adds for the launch itself, between the entry and exit callbacks.
  constexpr uint64_t kLaunchNs = 7'000'000;
  auto launch = [&](uint64_t correlation) {
    const collectors::LaunchEvent ev = launch_of(k, correlation);
    auto [f, index] = rig.count_launch(ev);
    testing::FakePlatform::current_kernel() = std::string(ev.mangled_name);
    REQUIRE(rig.profiler.enter(ev, *f, index));
    rig.platform.mono_ns += kLaunchNs;
    rig.profiler.exit(ev);
  };
  launch(1);  // the counters
  launch(2);  // PC sampling
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE_FALSE(ks.empty());
  const v1::KernelProfile& rec = *ks.back();  // the record again, with the samples
  REQUIRE(rec.has_cost());
  CHECK(rec.cost().start_ns() == rig.platform.config.cost_switch_ns);
  CHECK(rec.cost().launch_ns() == kLaunchNs);
  CHECK(rec.cost().passes() == rec.passes());
  CHECK(rec.cost().passes() >= 1);
  REQUIRE(rec.has_pc_sampling());
  REQUIRE(rec.pc_sampling().has_cost());
  CHECK(rec.pc_sampling().cost().start_ns() == rig.platform.config.cost_pc_ns);
  CHECK(rec.pc_sampling().cost().launch_ns() == kLaunchNs);
  CHECK(rec.pc_sampling().cost().passes() == 0);
  tools::ReportOptions verbose;
  verbose.verbose = true;
  const std::string report = tools::render_report(r, verbose);
  CHECK(report.find("    cost      setup ") != std::string::npos);
  CHECK(report.find("    pc cost   setup ") != std::string::npos);
  CHECK(tools::render_report(r, tools::ReportOptions{}).find("    cost      ") == std::string::npos);
}

TEST_CASE("launch profiler: a counter list is planned once, whatever kernel asks for it again",
          "[component][launch_profiler]") {
  Captured a = capture_of("vector_add");
  Captured b = capture_of("fma_chain");
  ComponentRig rig(deep_config(agent::MetricMode::kFull), counters_for({&a, &b}));
  REQUIRE(rig.launch(launch_of(a, 1)));
  REQUIRE(rig.launch(launch_of(b, 2)));
  CHECK(rig.platform.stats.begins.load() == 2);
  CHECK(rig.platform.stats.plans.load() == 1);  // both asked for every counter: one plan
  // And both records are as complete as with a plan each.
  tools::ReadResult r = rig.read();
  std::vector<const v1::KernelProfile*> ks = kernel_records(r);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0]->metrics_size() == ks[1]->metrics_size());
  CHECK(ks[0]->passes() == ks[1]->passes());
}

}  // namespace test_component_launch_profiler
