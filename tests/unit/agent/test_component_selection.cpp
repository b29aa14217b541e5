// Selector with DeepPolicy and with AlwaysOnPolicy on their own, over a FamilyTable and (for
// always-on) the fake platform's profiler host and monotonic clock: which launch is profiled and
// with which counters. The rules every mode shares (select modes and the ranking, launch_skip and
// launch_count, one shape per family, counters before PC sampling, captured and never-replayed
// launches, the deep-capture window) and always-on's own (the budget, the configured group).
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "always_on.h"
#include "catch.h"
#include "cutriage/triage/plan.h"
#include "devices.h"
#include "fake_platform.h"
#include "instance_ids.h"
#include "family.h"
#include "log.h"
#include "selection.h"
#include "stages.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_component_selection {

using namespace cutriage;
#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;  // Catch2 v3; v2 has it at global scope
#endif
using agent::AgentConfig;
using agent::Family;
using agent::Selection;
using testing::make_launch;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

AgentConfig with_select(agent::SelectMode mode) {
  AgentConfig c;
  c.select = mode;
  return c;
}

// The selection's parts as Agent wires them, either policy; the fake platform only for always-on's
// profiler host and the clock.
struct Selecting {
  explicit Selecting(AgentConfig c)
      : config(std::move(c)),
        devices(platform, log),
        families(testing::fresh_instance_id(), config.kernel_filter),
        deep(config),
        always_on(config.mode == agent::AgentMode::kAlwaysOn
                      ? std::make_unique<agent::AlwaysOnPolicy>(
                            config, families, devices, builds, log, triage_options,
                            agent::AlwaysOnPolicy::Clocks{[this] { return platform.mono_ns.load(); },
                                                          [] { return false; }, [this] { return trace_started.load(); }})
                      : nullptr),
        selector(config, families, always_on ? static_cast<agent::SelectionPolicy&>(*always_on) : deep, earlier,
                 state, trace_started, [this] { return platform.mono_ns.load(); }) {
    earlier.load(config, log);
    families.set_on_create([this](Family& f) {
      earlier.mark_locked(f);
      selector.update_candidate_locked(f);
    });
    if (always_on) groups = always_on->groups_for("GH100", true);
  }

  Family* family_of(const collectors::LaunchEvent& ev) { return families.for_launch(ev); }
  // A launch as the agent's callback hands it to the selection (counted first).
  Selection select(const collectors::LaunchEvent& ev, int configured_group = -1) {
    Family* f = families.for_launch(ev);
    if (f->names->matches_filter) selector.count_matching_launch();
    agent::ContextGroups context;
    context.groups = groups.get();
    context.configured = configured_group;
    context.configured_since_ns = platform.mono_ns.load();
    return selector.select(ev, ++launches, "GH100", *f, context);
  }
  // What a completed profile leaves on the family: a profiled record, nothing more wanted.
  void complete(Family& f) {
    std::lock_guard<std::mutex> lock(families.mutex());
    wire::KernelRecord r;
    r.status = wire::ProfileStatus::kProfiled;
    f.last_record = r;
    f.complete = true;
    selector.update_candidate_locked(f);
  }
  void rank(const std::vector<std::pair<Family*, uint64_t>>& traced_ns) {
    triage::TimelineAccumulator timeline;
    uint64_t t = 1000;
    for (const auto& [f, ns] : traced_ns) {
      triage::KernelSpan s;
      s.family = f->family_id;
      s.start_ns = t;
      s.end_ns = t + ns;
      timeline.add_kernel(s);
      t += ns + 1000;
    }
    selector.apply_ranking(timeline);
  }

  AgentConfig config;
  testing::FakePlatform platform;
  agent::Logger log;
  agent::DeviceCatalog devices;
  agent::KernelBuilds builds;
  triage::TriageOptions triage_options;
  std::atomic<wire::AgentState> state{wire::AgentState::kActive};
  std::atomic<bool> trace_started{false};
  agent::FamilyTable families;
  agent::EarlierRanking earlier;
  agent::DeepPolicy deep;
  std::unique_ptr<agent::AlwaysOnPolicy> always_on;
  agent::Selector selector;
  std::shared_ptr<const agent::MetricGroups> groups;
  uint64_t launches = 0;
};

}  // namespace

TEST_CASE("selection: select=all profiles from the first launch with the first stage's counters", "[component][selection]") {
  Selecting s(with_select(agent::SelectMode::kAll));
  const Selection sel = s.select(make_launch("first_kernel", 1));
  REQUIRE(sel.kind == Selection::Kind::kCounters);
  CHECK(sel.metrics == agent::first_stage_counters("GH100"));
  CHECK(sel.deep == 0);
  Family* f = s.family_of(make_launch("first_kernel", 2));
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK(f->profiles_started == 1);
  CHECK(s.families.totals_locked().profiles_started == 1);
  CHECK(f->attempted.size() == std::set<std::string>(sel.metrics.begin(), sel.metrics.end()).size());
  REQUIRE(f->first_launch);
  CHECK(f->first_launch->grid == triage::Dim3{1024, 1, 1});
}

TEST_CASE("selection: the metric mode decides a launch's counters", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.max_profiles_per_kernel = 1;  // no second launch to adapt on: everything at once
  CHECK(Selecting(c).select(make_launch("one_shot", 1)).metrics == agent::all_counters());
  c.max_profiles_per_kernel = 3;
  c.metric_mode = agent::MetricMode::kFull;
  CHECK(Selecting(c).select(make_launch("full", 1)).metrics == agent::all_counters());
  c.metric_mode = agent::MetricMode::kBase;
  CHECK(Selecting(c).select(make_launch("base", 1)).metrics ==
        triage::counters_for_decisions(triage::routing_decisions()));
  c.metric_mode = agent::MetricMode::kList;
  c.metric_list = {"dram__bytes_read.sum", "gpu__time_duration.sum"};
  CHECK(Selecting(c).select(make_launch("list", 1)).metrics == c.metric_list);
}

TEST_CASE("selection: launch_skip lets the first matching launches pass", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.launch_skip = 2;
  Selecting s(c);
  CHECK(s.select(make_launch("skipped", 1)).kind == Selection::Kind::kSkip);
  CHECK(s.select(make_launch("skipped", 2)).kind == Selection::Kind::kSkip);
  CHECK(s.select(make_launch("skipped", 3)).kind == Selection::Kind::kCounters);
}

TEST_CASE("selection: launch_count bounds the counter launches of every family together", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.launch_count = 1;
  Selecting s(c);
  CHECK(s.select(make_launch("counted_a", 1)).kind == Selection::Kind::kCounters);
  CHECK(s.select(make_launch("counted_a", 2)).kind == Selection::Kind::kSkip);
  CHECK(s.select(make_launch("counted_b", 3)).kind == Selection::Kind::kSkip);
  std::lock_guard<std::mutex> lock(s.families.mutex());
  for (Family* f : s.families.all_locked()) CHECK_FALSE(f->candidate.load());
}

TEST_CASE("selection: a second launch shape of a family is skipped", "[component][selection]") {
  Selecting s(with_select(agent::SelectMode::kAll));
  CHECK(s.select(make_launch("shaped", 1, {1024, 1, 1})).kind == Selection::Kind::kCounters);
  Family* f = s.family_of(make_launch("shaped", 2));
  f->seen_mono_ns.store(5);
  CHECK(s.select(make_launch("shaped", 2, {2048, 1, 1})).kind == Selection::Kind::kSkip);
  CHECK(f->seen_mono_ns.load() == 0);  // a launch of no use is not "still launching"
  CHECK(s.select(make_launch("shaped", 3, {1024, 1, 1})).kind == Selection::Kind::kCounters);
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK(f->profiles_started == 2);
}

TEST_CASE("selection: PC sampling comes after the counters, once", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.pc_sampling = true;
  Selecting s(c);
  CHECK(s.select(make_launch("sampled", 1)).kind == Selection::Kind::kCounters);
  Family* f = s.family_of(make_launch("sampled", 2));
  {
    // A profiled record, counters still wanted: counters first.
    std::lock_guard<std::mutex> lock(s.families.mutex());
    wire::KernelRecord r;
    r.status = wire::ProfileStatus::kProfiled;
    f->last_record = r;
  }
  CHECK(s.select(make_launch("sampled", 2)).kind == Selection::Kind::kCounters);
  s.complete(*f);
  CHECK(f->candidate.load());  // sampling is left
  const Selection sel = s.select(make_launch("sampled", 3));
  CHECK(sel.kind == Selection::Kind::kPcSampling);
  CHECK(sel.cost == agent::CostKind::kPcSampling);
  CHECK_FALSE(f->candidate.load());
  CHECK(s.select(make_launch("sampled", 4)).kind == Selection::Kind::kSkip);

  // Without a profiled record there is nothing for samples to join.
  Family* g = s.family_of(make_launch("never_profiled", 5));
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    g->complete = true;
    s.selector.update_candidate_locked(*g);
  }
  CHECK_FALSE(g->candidate.load());
}

TEST_CASE("selection: captured and never-replayed launches", "[component][selection]") {
  Selecting s(with_select(agent::SelectMode::kAll));
  collectors::LaunchEvent captured = make_launch("captured", 1);
  captured.stream_capturing = true;
  CHECK(s.select(captured).kind == Selection::Kind::kSkip);
  CHECK(s.select(captured).kind == Selection::Kind::kSkip);
  {
    Family* f = s.family_of(captured);
    std::lock_guard<std::mutex> lock(s.families.mutex());
    CHECK(f->stats.captured == 2);
    CHECK(s.families.totals_locked().totals.captured_launches == 2);
    CHECK(f->profiles_started == 0);
  }
  collectors::LaunchEvent coop = make_launch("cooperative", 2);
  coop.cooperative = true;
  CHECK(s.select(coop).kind == Selection::Kind::kNoReplay);
  CHECK(s.select(make_launch("ncclDevKernel_AllReduce", 3)).kind == Selection::Kind::kNoReplay);
}

TEST_CASE("selection: nothing is selected unless the agent is active and the name passes the filter", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  REQUIRE(c.kernel_filter.set("regex:^wanted", agent::NameBase::kFunction).empty());
  Selecting s(c);
  CHECK_FALSE(s.family_of(make_launch("other_kernel", 1))->candidate.load());
  CHECK(s.select(make_launch("other_kernel", 1)).kind == Selection::Kind::kSkip);
  CHECK(s.family_of(make_launch("wanted_kernel", 2))->candidate.load());
  s.state.store(wire::AgentState::kPermissionDenied);
  CHECK(s.select(make_launch("wanted_kernel", 2)).kind == Selection::Kind::kSkip);
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    s.selector.update_all_locked();
  }
  CHECK_FALSE(s.family_of(make_launch("wanted_kernel", 3))->candidate.load());
}

TEST_CASE("selection: select=top profiles by name until the trace runs, then the top families", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kTop);
  c.select_top = 1;
  Selecting s(c);
  Family* early = s.family_of(make_launch("before_trace", 1));
  CHECK(early->candidate.load());  // no trace: profiled by name, as with "all"
  s.trace_started.store(true);
  Family* big = s.family_of(make_launch("big", 2));
  Family* small = s.family_of(make_launch("small", 3));
  CHECK_FALSE(big->candidate.load());  // not ranked yet
  s.rank({{big, 90000}, {small, 10000}});
  CHECK(big->candidate.load());
  CHECK_FALSE(small->candidate.load());
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    CHECK(big->rank == 1);
    CHECK(small->rank == 2);
    CHECK(big->share == Approx(0.9));
  }
  CHECK(s.select(make_launch("small", 4)).kind == Selection::Kind::kSkip);
  // The ranking follows the trace.
  s.rank({{big, 90000}, {small, 10000}, {small, 200000}});
  CHECK(small->candidate.load());
  CHECK_FALSE(big->candidate.load());
}

TEST_CASE("selection: select=share profiles the families above the share", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kShare);
  c.select_min_share = 0.3;
  Selecting s(c);
  s.trace_started.store(true);
  Family* a = s.family_of(make_launch("share_a", 1));
  Family* b = s.family_of(make_launch("share_b", 2));
  Family* d = s.family_of(make_launch("share_d", 3));
  s.rank({{a, 50000}, {b, 35000}, {d, 15000}});
  CHECK(a->candidate.load());
  CHECK(b->candidate.load());
  CHECK_FALSE(d->candidate.load());
}

TEST_CASE("selection: select=none profiles nothing, the ranking still names ranks and shares", "[component][selection]") {
  // Ranks and shares are kept in every mode (a top:N deep capture targets by rank), but only
  // select=top and share turn them into candidates.
  Selecting s(with_select(agent::SelectMode::kNone));
  s.trace_started.store(true);
  Family* f = s.family_of(make_launch("trace_only", 1));
  CHECK_FALSE(f->candidate.load());
  CHECK(s.select(make_launch("trace_only", 1)).kind == Selection::Kind::kSkip);
  s.rank({{f, 1000}});
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK(f->share == 1.0);
  CHECK(f->rank == 1);
  CHECK_FALSE(f->ranked);
  CHECK_FALSE(f->candidate.load());
}

TEST_CASE("selection: a deep-capture window targets its families, every counter, then one sampled launch", "[component][selection]") {
  AgentConfig c = with_select(agent::SelectMode::kTop);
  c.select_top = 2;
  c.launch_skip = 100;  // the window ignores it
  c.pc_sampling = true;
  Selecting s(c);
  s.trace_started.store(true);
  Family* top = s.family_of(make_launch("deep_top", 1));
  Family* second = s.family_of(make_launch("deep_second", 2));
  s.rank({{top, 90000}, {second, 10000}});
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    agent::DeepWindow w;
    w.request.id = 9;
    w.top = 1;
    s.selector.deep_locked() = std::move(w);
    CHECK(s.selector.deep_targets_locked(*top));
    CHECK_FALSE(s.selector.deep_targets_locked(*second));
  }
  Selection sel = s.select(make_launch("deep_top", 3));
  REQUIRE(sel.kind == Selection::Kind::kCounters);
  CHECK(sel.deep == 9);
  CHECK(sel.metrics == agent::all_counters());
  CHECK(s.select(make_launch("deep_second", 4)).kind == Selection::Kind::kSkip);  // launch_skip still holds
  // Nothing to sample until the capture's record is in.
  CHECK(s.select(make_launch("deep_top", 5)).kind == Selection::Kind::kSkip);
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    wire::KernelRecord r;
    r.status = wire::ProfileStatus::kProfiled;
    top->last_record = r;
  }
  sel = s.select(make_launch("deep_top", 6));
  CHECK(sel.kind == Selection::Kind::kPcSampling);
  CHECK(sel.deep == 9);
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK_FALSE(s.selector.deep_targets_locked(*top));  // done in this window
  CHECK(top->deep_request == 9);
  CHECK(s.selector.deep_locked()->captured.count(top->family_id) == 1);
  CHECK(s.selector.deep_locked()->sampled.count(top->family_id) == 1);
}

TEST_CASE("selection: a deep-capture window by name overrides select=none", "[component][selection]") {
  Selecting s(with_select(agent::SelectMode::kNone));
  Family* f = s.family_of(make_launch("named_target", 1));
  CHECK_FALSE(f->candidate.load());
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    agent::DeepWindow w;
    w.request.id = 3;
    REQUIRE(w.filter.set("named_target", agent::NameBase::kFunction).empty());
    s.selector.deep_locked() = std::move(w);
    s.selector.update_all_locked();
  }
  CHECK(f->candidate.load());
  CHECK_FALSE(s.family_of(make_launch("bystander", 2))->candidate.load());
  CHECK(s.select(make_launch("named_target", 3)).deep == 3);
}

TEST_CASE("selection: a top:N deep-capture window ranks families when the select mode does not",
          "[component][selection]") {
  // CUTRIAGE_DEEP_TARGET's default is top:3, and a trace-only run (select=none) is where a deep
  // capture on request is most natural: the ranking keeps every family's rank whatever the select
  // mode, so a top:N window finds the largest families.
  Selecting s(with_select(agent::SelectMode::kNone));
  s.trace_started.store(true);
  Family* big = s.family_of(make_launch("untargeted_big", 1));
  Family* small = s.family_of(make_launch("untargeted_small", 2));
  s.rank({{big, 90000}, {small, 10000}});
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK(big->rank == 1);
  agent::DeepWindow w;
  w.request.id = 1;
  w.top = 1;
  s.selector.deep_locked() = std::move(w);
  CHECK(s.selector.deep_targets_locked(*big));
}

// ---- always-on ---------------------------------------------------------------------------

TEST_CASE("selection (always-on): the budget holds launches back until the allowance accrues", "[component][selection][always_on]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.mode = agent::AgentMode::kAlwaysOn;
  Selecting s(c);
  REQUIRE(s.groups);
  REQUIRE(!s.groups->plans.empty());
  // The budget starts with a full allowance: the first launch takes a group at once, and its
  // estimated cost (the first switch's, with CUPTI's start-up) spends more than the allowance.
  Family* f = s.family_of(make_launch("budgeted", 1));
  CHECK(s.always_on->admits_fast(*f));
  const Selection first = s.select(make_launch("budgeted", 1));
  REQUIRE(first.kind == Selection::Kind::kCounters);
  CHECK(first.cost == agent::CostKind::kGroupSwitch);
  // Admitted: the allowance is spent, the fast path closes until it accrues again.
  CHECK_FALSE(s.always_on->admits_fast(*f));
  s.platform.mono_ns += kSecond;
  CHECK(s.select(make_launch("budgeted", 2)).kind == Selection::Kind::kSkip);  // held back
  CHECK(f->not_before_ns.load() > s.platform.mono_ns.load());  // its launches wait on the fast path
  {
    std::lock_guard<std::mutex> lock(s.families.mutex());
    CHECK(s.always_on->stats_locked().deferred >= 1);
    CHECK(s.always_on->stats_locked().admitted == 1);
  }
  s.platform.mono_ns += 3600 * kSecond;
  CHECK(s.always_on->admits_fast(*f));
  CHECK(f->seen_mono_ns.load() == s.platform.mono_ns.load());
  const Selection sel = s.select(make_launch("budgeted", 3));
  REQUIRE(sel.kind == Selection::Kind::kCounters);
  REQUIRE(sel.group >= 0);
  CHECK(sel.metrics == s.groups->plans[static_cast<size_t>(sel.group)].metrics);
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK(s.always_on->stats_locked().admitted == 2);
}

TEST_CASE("selection (always-on): the configured group goes on credit before a switch could", "[component][selection][always_on]") {
  // The same history twice: one family's launch takes a group (a switch); then a second family's
  // launches come each second, on a context with that group configured, or with none. The launch
  // of the configured group is admitted sooner, as the cheap kind, in that group.
  struct Admitted {
    uint64_t after_s = 0;
    Selection selection;
    int owner_group = -1;
    uint64_t switches = 0;
  };
  auto first_admitted = [](bool configured) {
    AgentConfig c = with_select(agent::SelectMode::kAll);
    c.mode = agent::AgentMode::kAlwaysOn;
    Selecting s(c);
    s.platform.mono_ns += 3600 * kSecond;
    const Selection owner = s.select(make_launch("group_owner", 1));
    REQUIRE(owner.kind == Selection::Kind::kCounters);
    REQUIRE(owner.group >= 0);
    Admitted a;
    a.owner_group = owner.group;
    for (uint64_t t = 1; t <= 3600; ++t) {
      s.platform.mono_ns += kSecond;
      a.selection = s.select(make_launch("group_guest", 1 + t), configured ? owner.group : -1);
      if (a.selection.kind == Selection::Kind::kCounters) {
        a.after_s = t;
        break;
      }
    }
    std::lock_guard<std::mutex> lock(s.families.mutex());
    a.switches = s.always_on->stats_locked().group_switches;
    return a;
  };
  const Admitted same = first_admitted(true);
  const Admitted other = first_admitted(false);
  REQUIRE(same.after_s > 0);
  REQUIRE(other.after_s > 0);
  CHECK(same.after_s < other.after_s);
  CHECK(same.selection.group == same.owner_group);
  CHECK(same.selection.cost == agent::CostKind::kSameGroup);
  CHECK(same.switches == 1);
  CHECK(other.selection.cost == agent::CostKind::kGroupSwitch);
  CHECK(other.switches == 2);
}

TEST_CASE("selection (always-on): the family's own wait and a pending resume decide the fast path", "[component][selection][always_on]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.mode = agent::AgentMode::kAlwaysOn;
  Selecting s(c);
  s.platform.mono_ns += 3600 * kSecond;
  Family* f = s.family_of(make_launch("waiting", 1));
  CHECK(s.always_on->admits_fast(*f));
  f->not_before_ns.store(s.platform.mono_ns.load() + 10 * kSecond);
  CHECK_FALSE(s.always_on->admits_fast(*f));
  f->resume_pending.store(true);
  CHECK(s.always_on->admits_fast(*f));
}

TEST_CASE("selection (always-on): counters no single-pass group holds complete the family", "[component][selection][always_on]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.mode = agent::AgentMode::kAlwaysOn;
  Selecting s(c);
  Family* f = s.family_of(make_launch("unreachable", 1));
  std::lock_guard<std::mutex> lock(s.families.mutex());
  agent::ContextGroups context;
  context.groups = s.groups.get();
  const agent::SelectionPolicy::Choice choice =
      s.always_on->choose_locked(*f, {"not_a_counter_of_any_group.sum"}, context);
  CHECK(choice.kind == agent::SelectionPolicy::Choice::Kind::kComplete);
  // Without the chip's groups nothing can be collected yet: it waits.
  context.groups = nullptr;
  CHECK(s.always_on->choose_locked(*f, {"gpu__time_duration.sum"}, context).kind ==
        agent::SelectionPolicy::Choice::Kind::kWait);
}

TEST_CASE("selection (always-on): a sampled family is sampled again after the interval", "[component][selection][always_on]") {
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.mode = agent::AgentMode::kAlwaysOn;
  c.pc_sampling_interval_s = 600;
  Selecting s(c);
  s.platform.mono_ns += 3600 * kSecond;
  Family* f = s.family_of(make_launch("resampled", 1));
  std::lock_guard<std::mutex> lock(s.families.mutex());
  CHECK(s.always_on->resamples());
  CHECK_FALSE(s.always_on->samples_again_locked(*f));  // never sampled
  f->pc_sampled_mono_ns = s.platform.mono_ns.load() - 10 * kSecond;
  CHECK_FALSE(s.always_on->samples_again_locked(*f));
  f->pc_sampled_mono_ns = s.platform.mono_ns.load() - 601 * kSecond;
  CHECK(s.always_on->samples_again_locked(*f));
  // Deep mode samples once.
  CHECK_FALSE(s.deep.samples_again_locked(*f));
  CHECK_FALSE(s.deep.resamples());
}

TEST_CASE("selection (always-on): a step holding the lane keeps the groups off and begins once the budget is out of debt",
          "[component][selection][always_on][steps]") {
  // CUTRIAGE_STEP_STAGES: the first group launch leaves the budget in debt (its estimate, the
  // first switch's, exceeds the allowance). A step that wants the lane then keeps every family's
  // launch off the fast path, and may begin only once that debt is paid back at the budget's
  // share; the graphs' stages wait for the step, the step's own passes do not.
  AgentConfig c = with_select(agent::SelectMode::kAll);
  c.mode = agent::AgentMode::kAlwaysOn;
  Selecting s(c);
  s.platform.mono_ns += 3600 * kSecond;
  Family* f = s.family_of(make_launch("grouped", 1));
  REQUIRE(s.select(make_launch("grouped", 1)).kind == Selection::Kind::kCounters);
  uint64_t now = s.platform.mono_ns.load();
  s.always_on->charge_since(agent::CostKind::kGroupSwitch, now - 500'000'000);  // it cost 500 ms
  // 500 ms against the 240 ms allowance: 260 ms of debt, paid back at 0.4% in 65 s.
  CHECK(s.always_on->graph_ready(now));
  CHECK_FALSE(s.always_on->step_ready(now));
  CHECK(s.always_on->step_ready(now + 66 * kSecond));
  CHECK_FALSE(s.always_on->step_ready(now + 64 * kSecond));

  s.platform.mono_ns += 70 * kSecond;
  now = s.platform.mono_ns.load();
  CHECK(s.always_on->admits_fast(*f));
  s.always_on->step_wants_lane(now + kSecond);
  CHECK(s.always_on->step_holds_lane(now));
  CHECK_FALSE(s.always_on->admits_fast(*f));                                 // the groups wait
  CHECK_FALSE(s.always_on->admit_graph(agent::CostKind::kGroupSwitch));      // so do graph stages
  CHECK(s.always_on->admit_step(agent::CostKind::kGroupSwitch));             // the step goes
  s.always_on->charge_since(agent::CostKind::kGroupSwitch, now);
  // A hold nobody renews lapses; one dropped ends at once.
  CHECK(s.always_on->admits_fast(*f) == false);
  s.platform.mono_ns += 2 * kSecond;
  CHECK_FALSE(s.always_on->step_holds_lane(s.platform.mono_ns.load()));
  s.always_on->step_wants_lane(s.platform.mono_ns.load() + kSecond);
  s.always_on->step_lane_done();
  CHECK_FALSE(s.always_on->step_holds_lane(s.platform.mono_ns.load()));
  CHECK(s.always_on->admits_fast(*f));
}

}  // namespace test_component_selection
