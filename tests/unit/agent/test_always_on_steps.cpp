// Always-on's steps (CUTRIAGE_STEP_STAGES, step_profiler.h) on the fake platform: one collection
// whose passes are the application's steps gives every family of the step its own counters (the
// zoo's H200 captures), a graph launched every step is one of its launches, and a step whose
// passes differ or that outgrows its ranges is given up.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_always_on_steps {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::Harness;
using testing::kernel_records;
using testing::make_launch;

namespace {

// CUTRIAGE_STEP_STAGES=4 unless given: Step's step is four launches, learned over two.
AgentConfig steps_config(uint32_t step_launches = 4) {
  AgentConfig c = testing::always_on_driven(0.01);
  c.pc_sampling = false;
  c.pm_window = false;
  c.step_launches = step_launches;
  c.log_level = agent::LogLevel::kInfo;
  return c;
}

// A step of the zoo's fma_chain, strided_load twice and vector_add (fma_chain first: the family
// made first takes the step when no trace ranks them).
struct Step {
  Captured fma = capture_of("fma_chain");
  Captured strided = capture_of("strided_load");
  Captured vadd = capture_of("vector_add");
  std::unique_ptr<Harness> h;
  uint64_t launches = 0;

  explicit Step(AgentConfig cfg) {
    h = std::make_unique<Harness>(std::move(cfg), testing::counters_for({&fma, &strided, &vadd}));
    REQUIRE(h->ag->start());
  }
  void launch(const Captured& k) {
    h->platform.launch(make_launch(k.mangled.c_str(), ++launches, k.launch.grid, k.launch.block));
  }
  // Passes cost nothing on the fake's clock, so the budget never holds the next one back: the
  // passes come one a step.
  void costless() {
    h->platform.config.cost_switch_ns = 0;
    h->platform.config.cost_same_ns = 0;
    h->platform.config.cost_first_begin_ns = 0;
  }
  // Steps until `passes` passes have begun (at most max_steps), then one more (the last pass ends
  // at the anchor's next launch). The steps run.
  int run_passes(size_t passes, int max_steps = 5000);
  // n served batches: fma_chain, strided_load, a graph (exec 1, one vector_add node), vector_add,
  // strided_load.
  void run_with_graph(int n) {
    for (int i = 0; i < n; ++i) {
      h->platform.mono_ns += 50'000'000;
      launch(fma);
      launch(strided);
      h->platform.launch_graph(1, 1, 1000 + launches, {{vadd.mangled}}, vadd.mangled);
      launch(vadd);
      launch(strided);
    }
  }
  // One step; `skip_vadd`: this one leaves vector_add out.
  void run(int n, bool skip_vadd = false) {
    for (int i = 0; i < n; ++i) {
      h->platform.mono_ns += 50'000'000;
      launch(fma);
      launch(strided);
      if (!skip_vadd) launch(vadd);
      launch(strided);
    }
  }
};

std::map<std::string, const v1::KernelProfile*> last_profiled(const tools::ReadResult& r) {
  std::map<std::string, const v1::KernelProfile*> out;
  for (const v1::KernelProfile* k : kernel_records(r)) {
    if (k->status() == v1::PROFILE_STATUS_PROFILED) out[std::string(tools::lookup(r, k->mangled_name_iid()))] = k;
  }
  return out;
}

double value_of(const v1::KernelProfile& k, const tools::ReadResult& r, const std::string& name) {
  for (const v1::Metric& m : k.metrics()) {
    if (tools::lookup(r, m.name_iid()) == name) return m.value();
  }
  return -1;
}

// The step's record of kernel k: replay mode "application", with its own range's values (the
// duration its capture measured, not another launch's).
const v1::KernelProfile& step_record(const std::map<std::string, const v1::KernelProfile*>& profiled,
                                     const tools::ReadResult& r, const Captured& k) {
  INFO(k.mangled);
  auto it = profiled.find(k.mangled);
  REQUIRE(it != profiled.end());
  const v1::KernelProfile& p = *it->second;
  CHECK(p.replay_mode() == v1::REPLAY_MODE_APPLICATION);
  const std::optional<double> want = k.metrics.get("gpu__time_duration.sum");
  REQUIRE(want);
  CHECK(value_of(p, r, "gpu__time_duration.sum") == Approx(*want));
  return p;
}

// The begin() calls of steps (passes over launches): their metric lists.
std::vector<std::vector<std::string>> step_begins(const Step& s) {
  std::lock_guard<std::mutex> lock(s.h->platform.stats.mutex);
  std::vector<std::vector<std::string>> out;
  for (size_t i = 0; i < s.h->platform.stats.begin_replays.size(); ++i) {
    if (s.h->platform.stats.begin_replays[i] == collectors::PlanReplay::kLaunches) {
      out.push_back(s.h->platform.stats.begin_metrics[i]);
    }
  }
  return out;
}

int Step::run_passes(size_t passes, int max_steps) {
  int n = 0;
  while (n < max_steps && step_begins(*this).size() < passes) {
    run(1);
    ++n;
  }
  run(1);
  return n + 1;
}

// The record's check of `rule`, or null.
const v1::Check* check_of(const v1::KernelProfile& k, const std::string& rule) {
  for (const v1::DecisionVisit& d : k.diagnosis().path()) {
    for (const v1::Check& c : d.checks()) {
      if (c.rule_id() == rule) return &c;
    }
  }
  return nullptr;
}

// The agent finishes; its log must say that a step was given up for `why`.
void check_given_up(Step& s, const std::string& why) {
  s.h->ag->finish();
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("was given up: " + why) != std::string::npos);
}

}  // namespace

TEST_CASE("always-on steps: one collection over the step's repeats gives every family its own counters",
          "[agent][always_on][steps]") {
  Step s(steps_config());
  // Two steps learn it (twice CUTRIAGE_STEP_STAGES launches, repeating from fma_chain); the third
  // is the first pass.
  s.run(2);
  CHECK(step_begins(s).empty());
  s.run(1);
  REQUIRE(step_begins(s).size() == 1);
  const auto passes = static_cast<uint32_t>((step_begins(s).front().size() + 9) / 10);  // the fake's 10 a pass
  REQUIRE(passes > 2);
  s.run_passes(passes);
  s.h->ag->finish();
  CHECK(s.h->platform.made_max_ranges.load() == 4);
  // One configuration, one pass a step (nothing replayed).
  const std::vector<std::vector<std::string>> begun = step_begins(s);
  REQUIRE(begun.size() == passes);
  for (const auto& m : begun) CHECK(m == begun.front());
  const uint64_t first_pass = 9;  // launch #9: fma_chain, step 3
  tools::ReadResult r = s.h->read();
  const auto profiled = last_profiled(r);
  for (const Captured* k : {&s.fma, &s.strided, &s.vadd}) {
    INFO(k->mangled);
    const v1::KernelProfile& p = step_record(profiled, r, *k);
    // One launch a pass (after whatever single-pass groups took while the step was learned), whole
    // steps apart; the last carries the values and is the record's own launch.
    REQUIRE(p.assembled_launches_size() >= static_cast<int>(passes));
    const int from = p.assembled_launches_size() - static_cast<int>(passes);
    for (int i = from + 1; i < p.assembled_launches_size(); ++i) {
      const uint64_t apart = p.assembled_launches(i).launch_index() - p.assembled_launches(i - 1).launch_index();
      CHECK(apart % 4 == 0);
      CHECK(apart >= 4);
      CHECK(p.assembled_launches(i - 1).metrics() == 0);
    }
    // Paced by the budget: the second pass waits until the first pass's cost (the fake's switch,
    // 150 ms) is paid back at 1%, 15 s of steps of 50 ms; back to back it would be one step.
    const uint64_t first_gap =
        p.assembled_launches(from + 1).launch_index() - p.assembled_launches(from).launch_index();
    CHECK(first_gap >= uint64_t{1000});  // 250 steps of 4 launches
    CHECK(p.assembled_launches(p.assembled_launches_size() - 1).launch_index() == p.launch_index());
    CHECK(p.assembled_launches(p.assembled_launches_size() - 1).metrics() > 0);
    CHECK(p.diagnosis().classification() != v1::CLASSIFICATION_UNSPECIFIED);
    // Decision 0 compares the passes by their traced durations (the fake's trace times every
    // launch of a pass), one counter duration serving them all: evaluated, and alike.
    const auto traced = static_cast<double>(s.h->platform.captured_duration(k->mangled));
    for (int i = from; i < p.assembled_launches_size(); ++i) CHECK(p.assembled_launches(i).duration_ns() == Approx(traced));
    const v1::Check* d0 = check_of(p, "d0.assembled_launches");
    REQUIRE(d0 != nullptr);
    INFO(d0->reason());
    CHECK(d0->outcome() == v1::OUTCOME_NOT_FIRED);
  }
  // Each family at its first launch of the step: fma_chain the pass's first, strided_load its
  // second (not its fourth), vector_add its third.
  CHECK(profiled.at(s.fma.mangled)->assembled_launches(
            profiled.at(s.fma.mangled)->assembled_launches_size() - static_cast<int>(passes)).launch_index() ==
        first_pass);
  const v1::KernelProfile& st = *profiled.at(s.strided.mangled);
  CHECK(st.assembled_launches(st.assembled_launches_size() - static_cast<int>(passes)).launch_index() ==
        first_pass + 1);
  const v1::KernelProfile& va = *profiled.at(s.vadd.mangled);
  CHECK(va.assembled_launches(va.assembled_launches_size() - static_cast<int>(passes)).launch_index() ==
        first_pass + 2);
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("step at ") != std::string::npos);
  CHECK(log.find("passes over 4 launches, counters for 3 kernel families") != std::string::npos);
  CHECK(log.find("given up") == std::string::npos);
}

TEST_CASE("always-on steps: passes whose launches ran at different speeds make the verdict untrusted",
          "[agent][always_on][steps]") {
  // Synthetic durations: strided_load runs 3x longer from the third pass on (other work beside
  // it), which its traced durations show; the one counter duration of the step could not.
  Step s(steps_config());
  s.run(3);
  REQUIRE(step_begins(s).size() == 1);
  const auto passes = static_cast<uint32_t>((step_begins(s).front().size() + 9) / 10);
  REQUIRE(passes > 2);
  s.run_passes(2);
  s.h->platform.config.durations_ns[s.strided.mangled] = 3 * s.h->platform.captured_duration(s.strided.mangled);
  s.run_passes(passes);
  s.h->ag->finish();
  tools::ReadResult r = s.h->read();
  const auto profiled = last_profiled(r);
  for (const Captured* k : {&s.strided, &s.vadd}) {
    INFO(k->mangled);
    const v1::KernelProfile& p = step_record(profiled, r, *k);
    const v1::Check* d0 = check_of(p, "d0.assembled_launches");
    REQUIRE(d0 != nullptr);
    INFO(d0->reason());
    if (k == &s.strided) {
      CHECK(d0->outcome() == v1::OUTCOME_FIRED);
      CHECK(p.diagnosis().classification() == v1::CLASSIFICATION_UNTRUSTED);
    } else {
      CHECK(d0->outcome() == v1::OUTCOME_NOT_FIRED);
    }
  }
}

TEST_CASE("always-on steps: with a flush thread a completed step is evaluated off the application's thread",
          "[agent][always_on][steps]") {
  // Evaluating every counter of every range took seconds on the H100 (a step of 15 launches): on
  // the launch that ends the last pass it would hold the application that long.
  AgentConfig c = steps_config();
  c.trace_flush_ms = 5;
  Step s(c);
  s.costless();
  s.run(3);
  REQUIRE(step_begins(s).size() == 1);
  {
    // Single-pass groups evaluate on the launching thread; from here on the step holds the context.
    std::lock_guard<std::mutex> lock(s.h->platform.stats.mutex);
    s.h->platform.stats.evaluate_threads.clear();
  }
  s.run_passes((step_begins(s).front().size() + 9) / 10);
  // The records come from the flush thread's next tick.
  for (int i = 0; i < 400 && s.h->log_text().find("counters for 3 kernel families") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.h->ag->finish();
  const tools::ReadResult r = s.h->read();  // the records' owner, for as long as they are read
  for (const auto& [name, k] : last_profiled(r)) {
    INFO(name);
    CHECK(k->replay_mode() == v1::REPLAY_MODE_APPLICATION);
  }
  {
    std::lock_guard<std::mutex> lock(s.h->platform.stats.mutex);
    const std::set<std::thread::id>& threads = s.h->platform.stats.evaluate_threads;
    CHECK(!threads.empty());
    CHECK(threads.count(std::this_thread::get_id()) == 0);
  }
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("counters for 3 kernel families") != std::string::npos);
  CHECK(log.find("off the application's thread") != std::string::npos);
}

TEST_CASE("always-on steps: a family that groups profiled at another shape keeps only the step's launches",
          "[agent][always_on][steps]") {
  // A model runs one GEMM kernel with several shapes (forward, backward): one family. A launch
  // that a single-pass group profiled at another grid must not be assembled with the step's, which
  // Decision 0 would call untrusted (launches of different configurations).
  Step s(steps_config());
  s.costless();
  // fma_chain at twice its grid, each followed by one to five strided_load launches (no step of
  // at most four launches: learning gives up, and the groups go meanwhile, the step no longer
  // holding them back), until a single-pass group has profiled such a launch.
  const triage::Dim3 twice{s.fma.launch.grid.x * 2, s.fma.launch.grid.y, s.fma.launch.grid.z};
  for (int n = 0; n < 2000 && last_profiled(s.h->read()).count(s.fma.mangled) == 0; ++n) {
    s.h->platform.mono_ns += 50'000'000;
    s.h->platform.launch(make_launch(s.fma.mangled.c_str(), ++s.launches, twice, s.fma.launch.block));
    for (int k = 0; k <= n % 5; ++k) s.launch(s.strided);
  }
  REQUIRE(last_profiled(s.h->read()).count(s.fma.mangled) == 1);
  // Learning that began at those launches finds no period and waits kRetryNs; a later one does.
  for (int n = 0; n < 2000 && step_begins(s).empty(); ++n) s.run(1);
  REQUIRE(step_begins(s).size() == 1);
  s.run_passes((step_begins(s).front().size() + 9) / 10);
  s.h->ag->finish();
  tools::ReadResult r = s.h->read();
  const auto profiled = last_profiled(r);
  REQUIRE(profiled.count(s.fma.mangled) == 1);
  const v1::KernelProfile& p = *profiled.at(s.fma.mangled);
  CHECK(p.replay_mode() == v1::REPLAY_MODE_APPLICATION);
  for (const v1::AssembledLaunch& a : p.assembled_launches()) {
    CHECK(a.grid().x() == s.fma.launch.grid.x);
  }
  CHECK(p.diagnosis().classification() != v1::CLASSIFICATION_UNTRUSTED);
}

TEST_CASE("always-on steps: a counter the step's configuration refuses beside a partner does not keep its families "
          "incomplete",
          "[agent][always_on][steps]") {
  // GH100 refuses the PCIe counters beside the DRAM ones in one configuration. A step collects
  // once: the refused counters are not asked again, and the families are complete (Decision 2's
  // off-device rule reads the L2 aperture sectors instead).
  Step s(steps_config());
  s.costless();
  for (const char* pcie : {"pcie__read_bytes.sum", "pcie__write_bytes.sum"}) {
    s.h->platform.config.conflicts[pcie] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
  }
  s.run(3);
  REQUIRE(step_begins(s).size() == 1);
  s.run_passes((step_begins(s).front().size() + 9) / 10);
  s.h->ag->finish();
  const std::string log = s.h->log_text();
  INFO(log);
  REQUIRE(log.find("counters for 3 kernel families") != std::string::npos);
  for (const char* f : {"zoo_fma_chain", "zoo_strided_load", "zoo_vector_add"}) {
    CHECK(log.find(std::string(f) + ": diagnosis complete") != std::string::npos);
  }
  tools::ReadResult r = s.h->read();
  const v1::KernelProfile& p = *last_profiled(r).at(s.fma.mangled);
  bool rejected = false;
  for (const std::string& m : p.rejected_metrics()) rejected |= m == "pcie__read_bytes.sum";
  CHECK(rejected);
}

TEST_CASE("always-on steps: a step that launches one family several times in a row is learned whole",
          "[agent][always_on][steps]") {
  // fma_chain three times (a model's layers), then strided_load and vector_add: its first launches
  // repeat with a period of one, which is not the step.
  Step s(steps_config(8));
  s.costless();
  const auto layered = [&](int n) {
    for (int i = 0; i < n; ++i) {
      s.h->platform.mono_ns += 50'000'000;
      for (int layer = 0; layer < 3; ++layer) s.launch(s.fma);
      s.launch(s.strided);
      s.launch(s.vadd);
    }
  };
  layered(3);  // 15 launches: fewer than twice CUTRIAGE_STEP_STAGES, still learning
  CHECK(step_begins(s).empty());
  layered(1);  // 20: the next launch begins the collection
  CHECK(step_begins(s).empty());
  layered(1);
  REQUIRE(step_begins(s).size() == 1);
  layered(static_cast<int>((step_begins(s).front().size() + 9) / 10));
  s.h->ag->finish();
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("passes over 5 launches, counters for 3 kernel families") != std::string::npos);
  CHECK(log.find("given up") == std::string::npos);
}

TEST_CASE("always-on steps: a pass that ran other launches than the first gives the step up",
          "[agent][always_on][steps]") {
  Step s(steps_config());
  s.costless();
  s.run(4);                      // learned, passes 1 and 2
  s.run(1, /*skip_vadd=*/true);  // pass 3 runs strided_load where vector_add was
  s.run(3);
  check_given_up(s, "pass 3 ran other launches than the first (zoo_strided_load at launch 3 of 4)");
  CHECK(step_begins(s).size() == 3);
  // Nothing of the given-up collection became a record.
  tools::ReadResult r = s.h->read();
  for (const auto& [name, k] : last_profiled(r)) CHECK(k->replay_mode() != v1::REPLAY_MODE_APPLICATION);
}

TEST_CASE("always-on steps: between two passes the step is still followed, and one that changes is given up",
          "[agent][always_on][steps]") {
  Step s(steps_config());  // the fake's costs: the second pass waits about 300 steps
  s.run(4);                // learned, pass 1 (step 3) ended at step 4's first launch
  REQUIRE(step_begins(s).size() == 1);
  s.run(20);
  CHECK(step_begins(s).size() == 1);  // waiting for the budget, following the steps
  s.run(1, /*skip_vadd=*/true);
  s.run(100);  // 5 s: no second pass (nor a new step before kRetryNs)
  check_given_up(s, "between passes 1 and 2 the step ran other launches than the first "
                    "(zoo_strided_load at launch 3 of 4)");
  CHECK(step_begins(s).size() == 1);
}

TEST_CASE("always-on steps: a short pass is found at the boundary", "[agent][always_on][steps]") {
  Step s(steps_config());
  s.costless();
  s.run(4);
  s.h->platform.mono_ns += 50'000'000;
  s.launch(s.fma);
  s.launch(s.strided);
  s.launch(s.vadd);  // the second strided_load missing
  s.run(1);
  check_given_up(s, "pass 3 ran other launches than the first (zoo_fma_chain at launch 4 of 4)");
}

TEST_CASE("always-on steps: a graph launched every step is one launch of it, and one launched in a pass only gives "
          "the step up",
          "[agent][always_on][steps]") {
  SECTION("a graph every step") {
    // A served batch: fma_chain, strided_load, the graph, vector_add, strided_load. CUPTI fails a
    // pass with a graph launch inside it (the fake as the H200's probe): each pass runs from the
    // launch after the graph (vector_add) up to the graph, and every kernel family gets its range.
    Step s(steps_config(5));
    s.costless();
    // The step holds the graph's stages back (its kernel is ranked) until it is collected.
    for (int n = 0; n < 2000 && step_begins(s).empty(); ++n) s.run_with_graph(1);
    REQUIRE(step_begins(s).size() == 1);
    s.run_with_graph(static_cast<int>((step_begins(s).front().size() + 9) / 10));
    s.h->ag->finish();
    const std::string log = s.h->log_text();
    INFO(log);
    CHECK(log.find("step at zoo_vector_add: 17 passes over 4 launches, counters for 3 kernel families") !=
          std::string::npos);
    CHECK(log.find("given up") == std::string::npos);
    tools::ReadResult r = s.h->read();
    const auto profiled = last_profiled(r);
    // Each its own range's values, not the graph's range beside it.
    for (const Captured* k : {&s.fma, &s.strided, &s.vadd}) (void)step_record(profiled, r, *k);
  }
  SECTION("a graph at the end of every step") {
    // The step's last launch is the graph: the passes begin at the anchor as without one, and end
    // before the graph.
    Step s(steps_config(5));
    s.costless();
    const auto served = [&s](int n) {
      for (int i = 0; i < n; ++i) {
        s.h->platform.mono_ns += 50'000'000;
        s.launch(s.fma);
        s.launch(s.strided);
        s.launch(s.vadd);
        s.launch(s.strided);
        s.h->platform.launch_graph(1, 1, 1000 + s.launches, {{s.vadd.mangled}}, s.vadd.mangled);
      }
    };
    for (int n = 0; n < 2000 && step_begins(s).empty(); ++n) served(1);
    REQUIRE(step_begins(s).size() == 1);
    served(static_cast<int>((step_begins(s).front().size() + 9) / 10));
    s.h->ag->finish();
    const std::string log = s.h->log_text();
    INFO(log);
    CHECK(log.find("step at zoo_fma_chain: 17 passes over 4 launches, counters for 3 kernel families") !=
          std::string::npos);
    CHECK(log.find("given up") == std::string::npos);
  }
  SECTION("a graph in one pass only") {
    Step s(steps_config());
    s.costless();
    s.run(4);  // learned without a graph; pass 2 in progress
    s.h->platform.mono_ns += 50'000'000;
    s.launch(s.fma);
    s.launch(s.strided);
    s.h->platform.launch_graph(1, 1, 1000, {{s.vadd.mangled}}, s.vadd.mangled);
    s.launch(s.vadd);
    s.launch(s.strided);
    s.run(1);
    check_given_up(s, "pass 3 ran other launches than the first (graph exec 1 at launch 3 of 4)");
  }
}

// The replay of each begin() so far: kLaunches for a step's pass, kApplication for a graph stage's.
std::vector<collectors::PlanReplay> begin_kinds(const Step& s) {
  std::lock_guard<std::mutex> lock(s.h->platform.stats.mutex);
  return s.h->platform.stats.begin_replays;
}

TEST_CASE("always-on steps: a graph launched more often than a step is learned leaves the lane to the step until "
          "it is collected",
          "[agent][always_on][steps]") {
  // The fake's costs (a configuration 150 ms): each stage or pass is paid back before the next,
  // and the graph, launched every step, would take each turn before the step is learned again.
  Step s(steps_config(5));
  for (int n = 0; n < 5000 && step_begins(s).empty(); ++n) s.run_with_graph(1);
  REQUIRE(step_begins(s).size() == 1);
  const std::vector<collectors::PlanReplay> before = begin_kinds(s);
  CHECK(std::count(before.begin(), before.end(), collectors::PlanReplay::kApplication) == 0);
  // The step's passes, each paid back before the next, then the graph's stages.
  bool collected = false;
  for (int n = 0; n < 100 && !collected; ++n) {
    s.run_with_graph(100);
    collected = s.h->log_text().find("passes over 4 launches, counters for 3 kernel families") != std::string::npos;
  }
  REQUIRE(collected);
  const size_t at_end = begin_kinds(s).size();
  for (int n = 0; n < 100; ++n) {
    const std::vector<collectors::PlanReplay> kinds = begin_kinds(s);
    if (std::count(kinds.begin() + static_cast<std::ptrdiff_t>(at_end), kinds.end(),
                   collectors::PlanReplay::kApplication) > 0) {
      break;
    }
    s.run_with_graph(100);
  }
  const std::vector<collectors::PlanReplay> after = begin_kinds(s);
  CHECK(std::count(after.begin() + static_cast<std::ptrdiff_t>(at_end), after.end(),
                   collectors::PlanReplay::kApplication) > 0);
  s.h->ag->finish();
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("graph exec 1: its next stage waits for the application's step to be collected") !=
        std::string::npos);
  CHECK(log.find("given up") == std::string::npos);
}

TEST_CASE("always-on steps: a pass CUPTI fails to end is given up with where it failed", "[agent][always_on][steps]") {
  // The example service's steps on an H100 ended in CUPTI_ERROR_UNKNOWN at Stop with nothing
  // more said: the log names the pass, its launches, where it ended, and the time into the step.
  Step s(steps_config(5));
  s.costless();
  for (int n = 0; n < 2000 && step_begins(s).empty(); ++n) s.run_with_graph(1);
  REQUIRE(step_begins(s).size() == 1);
  {
    std::lock_guard<std::mutex> lock(s.h->platform.stats.mutex);
    s.h->platform.config.fail_end_on_call = s.h->platform.stats.ends + 2;  // the step's second pass
  }
  s.run_with_graph(3);
  check_given_up(s, "range profiler, ending pass 2 of ");
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("(the pass just run: 4 launches, ended before the step's graph launch; 100 ms after the step began): "
                 "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN (injected)") != std::string::npos);
}

TEST_CASE("always-on steps: a step longer than CUTRIAGE_STEP_STAGES is never learned, given up three times at most",
          "[agent][always_on][steps]") {
  Step s(steps_config(3));  // four launches a step
  for (int i = 0; i < 5; ++i) {
    s.run(4);
    s.h->platform.mono_ns += agent::StepProfiler::kRetryNs;  // the next step may begin
  }
  s.h->ag->finish();
  CHECK(step_begins(s).empty());
  const std::string log = s.h->log_text();
  INFO(log);
  size_t given_up = 0;
  const std::string why = "no step of at most 3 launches (CUTRIAGE_STEP_STAGES) repeated within 10 launches";
  for (size_t at = log.find(why); at != std::string::npos; at = log.find(why, at + 1)) ++given_up;
  CHECK(given_up == agent::StepProfiler::kMaxAbandoned);
  CHECK(log.find("no more steps in this process") != std::string::npos);
}

TEST_CASE("always-on steps: off by default, range profilers hold one range", "[agent][always_on][steps]") {
  AgentConfig c = steps_config();
  c.step_launches = 0;
  Step s(c);
  s.run(20);
  s.h->ag->finish();
  CHECK(s.h->platform.made_max_ranges.load() == 1);
  std::lock_guard<std::mutex> lock(s.h->platform.stats.mutex);
  for (collectors::PlanReplay rp : s.h->platform.stats.begin_replays) CHECK(rp == collectors::PlanReplay::kNone);
}

TEST_CASE("always-on steps: another thread launching on another device meanwhile leaves the step alone",
          "[agent][always_on][steps]") {
  Step s(steps_config());
  s.costless();
  const Captured other = capture_of("transpose");
  s.run(3);  // learned, and its collection begun (one step at a time: the other device's waits)
  REQUIRE(step_begins(s).size() == 1);
  std::atomic<bool> stop{false};
  std::thread elsewhere([&] {
    uint64_t correlation = 1'000'000;
    while (!stop.load()) {
      // On another device: its family never competes with the step's for the top (a family's
      // rank is per device).
      collectors::LaunchEvent ev =
          make_launch(other.mangled.c_str(), ++correlation, other.launch.grid, other.launch.block, /*context_id=*/2);
      ev.device = 1;
      s.h->platform.launch(ev);
    }
  });
  s.run(40);  // its passes (fewer than 40)
  stop.store(true);
  elsewhere.join();
  s.h->ag->finish();
  const std::string log = s.h->log_text();
  INFO(log);
  CHECK(log.find("passes over 4 launches, counters for 3 kernel families") != std::string::npos);
  // (transpose's own step on device 1 may begin afterwards, and finish() gives that one up)
  CHECK(log.find("step at zoo_fma_chain was given up") == std::string::npos);
}

}  // namespace test_always_on_steps
