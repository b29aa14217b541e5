// The CUPTI Profiler Host API collector for GH100 (the H200's chip), offline: the host API needs
// the chip name only, so these run on CI without GPU or driver (CUDA 13.0's libcupti).
//
// Pass counts below are what CUDA 13.0's CUPTI reports offline for GH100; the shared notes saw
// the same on the H200 (sm__throughput alone 8, gpu__compute_memory_throughput 5, dram__throughput
// 1). A CUPTI upgrade that schedules differently shows up here first.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catch.h"
#include "host_api_guard.h"
#include "cutriage/collectors/range_profiler.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_profiler_host {

using cutriage::collectors::ConflictSearch;
using cutriage::collectors::CounterData;
using cutriage::collectors::make_cupti_profiler_host;
using cutriage::collectors::MetricPlan;
using cutriage::collectors::ProfilerHost;
using cutriage::collectors::RejectedMetric;
using cutriage::collectors::StatusCode;


namespace {

const std::string kSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const std::string kDramThroughput = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
const std::string kComputeMemory = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
const std::string kDuration = "gpu__time_duration.sum";
const std::string kInstExecuted = "sm__inst_executed.sum";
const std::string kStallBarrier = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One host per process, as the agent has one per chip: creating it costs a few milliseconds.
ProfilerHost& gh100() {
  static std::unique_ptr<ProfilerHost> host = [] {
    auto made = make_cupti_profiler_host("GH100");
    INFO(made.status().message());
    REQUIRE(made.is_ok());
    return std::move(made).value();
  }();
  return *host;
}

// The same host with bisection alone (ConflictSearch::kBisectOnly): what CUPTI itself refuses.
ProfilerHost& gh100_bisect_only() {
  static std::unique_ptr<ProfilerHost> host = [] {
    auto made = make_cupti_profiler_host("GH100", ConflictSearch::kBisectOnly);
    INFO(made.status().message());
    REQUIRE(made.is_ok());
    return std::move(made).value();
  }();
  return *host;
}

MetricPlan plan_ok(const std::vector<std::string>& metrics) {
  auto plan = gh100().plan(metrics);
  INFO(plan.status().message());
  REQUIRE(plan.is_ok());
  return std::move(plan).value();
}

const RejectedMetric* find_rejected(const MetricPlan& plan, const std::string& name) {
  for (const RejectedMetric& r : plan.rejected) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

// The metric names the triage rules read (tests/data/ncu/metrics.txt, from `cutriage metrics`).
std::vector<std::string> rule_metrics() {
  std::ifstream in(std::string(CUTRIAGE_TEST_DATA_DIR) + "/ncu/metrics.txt");
  REQUIRE(in.good());
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

}  // namespace

TEST_CASE("the GH100 host plans single metrics with the pass counts CUPTI schedules", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  CHECK(gh100().chip() == "GH100");
  const MetricPlan sm = plan_ok({kSmThroughput});
  CHECK(sm.chip == "GH100");
  CHECK(sm.metrics == std::vector<std::string>{kSmThroughput});
  CHECK(sm.rejected.empty());
  CHECK(sm.passes == 8);
  CHECK_FALSE(sm.config_image.empty());

  CHECK(plan_ok({kDramThroughput}).passes == 1);
  CHECK(plan_ok({kComputeMemory}).passes == 5);
  CHECK(plan_ok({kDuration}).passes == 1);
  CHECK(plan_ok({kSmThroughput, kDramThroughput}).passes == 8);  // dram fits in sm's passes
  // An instrumented (SASS) metric: one pass of its own.
  CHECK(plan_ok({kDramThroughput, "sm__sass_data_bytes_mem_global_op_ld.sum"}).passes == 2);
}

TEST_CASE("invalid names are rejected with a reason and do not poison the valid ones", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  // CUPTI poisons a host object after one rejected ConfigAddMetrics: valid names after an invalid
  // one would then fail too. The plan must keep every valid name, in request order.
  const std::vector<std::string> request = {
      kSmThroughput,
      "cutriage__invented_metric.sum",                 // not a metric at all
      kDramThroughput,
      "launch__grid_size",                             // Nsight Compute's own
      "launch__occupancy_limit_registers",
      "sm__maximum_warps_per_active_cycle_pct",        // derived by Nsight Compute
      kInstExecuted,
      "sm__inst_executed",                             // bare counter: no rollup
      "sm__throughput",                                // bare throughput
      "sm__throughput.avg",                            // throughput without a peak
      "sm__throughput.avg.pct_of_peak_sustained_elapsed.bogus",
      "",
      kStallBarrier,
  };
  const MetricPlan plan = plan_ok(request);
  CHECK(plan.metrics == std::vector<std::string>{kSmThroughput, kDramThroughput, kInstExecuted, kStallBarrier});
  REQUIRE(plan.rejected.size() == 9);
  // Rejections come in request order.
  CHECK(plan.rejected[0].name == "cutriage__invented_metric.sum");
  CHECK(plan.rejected[1].name == "launch__grid_size");
  CHECK(plan.rejected[8].name.empty());
  for (const RejectedMetric& r : plan.rejected) {
    INFO(r.name << ": " << r.reason);
    CHECK_FALSE(r.reason.empty());
  }
  CHECK(contains(find_rejected(plan, "cutriage__invented_metric.sum")->reason, "not a GH100 metric"));
  CHECK(contains(find_rejected(plan, "launch__grid_size")->reason, "launch configuration"));
  CHECK(contains(find_rejected(plan, "sm__maximum_warps_per_active_cycle_pct")->reason, "not a GH100 metric"));
  CHECK(contains(find_rejected(plan, "sm__inst_executed")->reason, "rollup"));
  CHECK(contains(find_rejected(plan, "sm__throughput")->reason, "pct_of_peak_sustained_elapsed"));
  CHECK(contains(find_rejected(plan, "sm__throughput.avg")->reason, "not a valid suffix"));
  CHECK(contains(find_rejected(plan, "sm__throughput.avg")->reason, ".avg.pct_of_peak_sustained_elapsed"));

  // Same config as asking for the valid names alone.
  const MetricPlan clean = plan_ok(plan.metrics);
  CHECK(clean.passes == plan.passes);
  CHECK(clean.passes == 9);  // observed: sm__throughput (8) plus the others needs 9
  CHECK(clean.config_image == plan.config_image);
  CHECK(clean.rejected.empty());
}

TEST_CASE("names CUPTI takes alone but not together are rejected, naming the conflict", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  // Seen offline on GH100: pcie__* and dram__throughput are each fine, together ConfigAddMetrics
  // answers CUPTI_ERROR_NOT_SUPPORTED. Request order decides who stays.
  const MetricPlan pcie_only = plan_ok({"pcie__read_bytes.sum", "pcie__write_bytes.sum"});
  CHECK(pcie_only.rejected.empty());
  CHECK(pcie_only.passes == 1);

  const MetricPlan plan = plan_ok({kDramThroughput, kDuration, "pcie__read_bytes.sum", "pcie__write_bytes.sum"});
  CHECK(plan.metrics == std::vector<std::string>{kDramThroughput, kDuration});
  REQUIRE(plan.rejected.size() == 2);
  for (const RejectedMetric& r : plan.rejected) {
    INFO(r.name << ": " << r.reason);
    CHECK(contains(r.reason, "cannot be collected in one config with " + kDramThroughput));
  }
  CHECK(plan.passes == 1);
}

TEST_CASE("every GH100 dram__ metric and every pcie__ metric refuse to share a config", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  // What the host's known exclusive units (dram__ and pcie__ on GH100) rest on, asked of CUPTI
  // with bisection alone for every pair of the two units' base metrics, in both orders. If a
  // CUPTI release lifts the restriction, this fails and the units' entry must go.
  std::ifstream in(std::string(CUTRIAGE_TEST_DATA_DIR) + "/gh100_base_metrics.txt");
  REQUIRE(in.good());
  std::vector<std::string> dram;
  std::vector<std::string> pcie;
  std::string base;
  while (std::getline(in, base)) {
    const std::string name =
        base + (base.ends_with("__throughput") ? ".avg.pct_of_peak_sustained_elapsed" : ".sum");
    if (base.starts_with("dram__")) dram.push_back(name);
    if (base.starts_with("pcie__")) pcie.push_back(name);
  }
  REQUIRE(dram.size() >= 10);
  REQUIRE(pcie.size() >= 5);
  for (const std::string& d : dram) {
    for (const std::string& p : pcie) {
      for (const auto& [first, second] : {std::pair{d, p}, std::pair{p, d}}) {
        auto plan = gh100_bisect_only().plan({first, second});
        INFO(first << " then " << second << ": " << plan.status().message());
        REQUIRE(plan.is_ok());
        CHECK(plan.value().metrics == std::vector<std::string>{first});
        REQUIRE(plan.value().rejected.size() == 1);
        CHECK(plan.value().rejected[0].name == second);
        CHECK(plan.value().rejected[0].conflict);
      }
    }
  }
}

TEST_CASE("pcie__ metrics give way to dram__ ones on GH100 before any compile", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  // Where bisection alone drops the same names (the PCIe ones come late, or refuse a metric asked
  // before them), the plans are the same but for the partner a reason names.
  std::vector<std::string> rules = rule_metrics();
  std::vector<std::string> reversed(rules.rbegin(), rules.rend());
  const std::vector<std::vector<std::string>> same_as_bisection = {
      rules,
      reversed,
      {kDuration, kDramThroughput, "pcie__read_bytes.sum", "pcie__write_bytes.sum"},
      {kSmThroughput, "dram__bytes_read.sum", "made__up.sum", "pcie__throughput.avg.pct_of_peak_sustained_elapsed"},
      {kDuration, "pcie__read_bytes.sum", "pcie__write_bytes.sum"},
  };
  for (const std::vector<std::string>& request : same_as_bisection) {
    INFO("request of " << request.size() << " names, first " << request.front());
    const MetricPlan fast = plan_ok(request);
    auto slow = gh100_bisect_only().plan(request);
    REQUIRE(slow.is_ok());
    CHECK(fast.metrics == slow.value().metrics);
    CHECK(fast.passes == slow.value().passes);
    CHECK(fast.config_image == slow.value().config_image);
    REQUIRE(fast.rejected.size() == slow.value().rejected.size());
    for (size_t i = 0; i < fast.rejected.size(); ++i) {
      INFO(fast.rejected[i].name << ": " << fast.rejected[i].reason);
      CHECK(fast.rejected[i].name == slow.value().rejected[i].name);
      CHECK(fast.rejected[i].conflict == slow.value().rejected[i].conflict);
      if (fast.rejected[i].name.starts_with("pcie__")) {
        CHECK(contains(fast.rejected[i].reason, "CUPTI refuses pcie__ and dram__ metrics together on GH100"));
      } else {
        CHECK(fast.rejected[i].reason == slow.value().rejected[i].reason);
      }
    }
  }

  // A PCIe counter asked first: bisection keeps it and drops every later metric that refuses it;
  // the PCIe counters give way instead.
  const std::vector<std::string> pcie_first = {"pcie__read_bytes.sum", kDuration, kDramThroughput, kSmThroughput,
                                               "pcie__write_bytes.sum"};
  auto slow = gh100_bisect_only().plan(pcie_first);
  REQUIRE(slow.is_ok());
  CHECK(slow.value().metrics == std::vector<std::string>{"pcie__read_bytes.sum", kDuration, "pcie__write_bytes.sum"});
  const MetricPlan fast = plan_ok(pcie_first);
  CHECK(fast.metrics == std::vector<std::string>{kDuration, kDramThroughput, kSmThroughput});
  REQUIRE(fast.rejected.size() == 2);
  for (const RejectedMetric& r : fast.rejected) {
    INFO(r.name << ": " << r.reason);
    CHECK(r.name.starts_with("pcie__"));
    CHECK(r.conflict);
    CHECK(contains(r.reason, "cannot be collected in one config with " + kDramThroughput));
  }
}

TEST_CASE("the rule metrics plan on GH100 in one config", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  const std::vector<std::string> request = rule_metrics();
  REQUIRE(request.size() >= 100);
  const MetricPlan plan = plan_ok(request);
  // Every rule metric is a real GH100 metric; only the two PCIe counters cannot share the config
  // with the DRAM ones (they come later in the list).
  std::set<std::string> rejected;
  for (const RejectedMetric& r : plan.rejected) {
    INFO(r.name << ": " << r.reason);
    CHECK(contains(r.reason, "cannot be collected in one config with"));
    rejected.insert(r.name);
  }
  CHECK(rejected == std::set<std::string>{"pcie__read_bytes.sum", "pcie__write_bytes.sum"});
  CHECK(plan.metrics.size() + plan.rejected.size() == request.size());
  // Observed offline with CUDA 13.0: 20 passes for these 112 names (the shared notes saw 19 for a
  // 90-name set of Decisions 0-7; ncu's --set full is 38). Added one call per name instead of in
  // one call, CUPTI schedules the same names in 136 passes.
  CHECK(plan.passes == 20);
}

TEST_CASE("GH100 base metrics from the shared notes plan with their suffixes", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  const std::string path = std::string(CUTRIAGE_SHARED_NOTES_DIR) + "/cupti-metrics-GH100.tsv";
  std::ifstream in(path);
  if (!in.good()) {
    CUTRIAGE_SKIP_TEST(path + " is not here (the shared notes live outside the repository)");
  }
  std::vector<std::string> names;
  std::string line;
  size_t row = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    std::string type;
    std::getline(fields, name, '\t');
    std::getline(fields, type, '\t');
    if (name.find('.') != std::string::npos) continue;  // unit-prefixed aliases
    if (row++ % 40 != 0) continue;                      // a sample across the list
    if (type == "counter") names.push_back(name + ".sum");
    if (type == "ratio") names.push_back(name + ".ratio");
    if (type == "throughput") names.push_back(name + ".avg.pct_of_peak_sustained_elapsed");
  }
  REQUIRE(names.size() >= 50);
  for (const std::string& name : names) {
    auto plan = gh100().plan({name});
    INFO(name << ": " << plan.status().message());
    REQUIRE(plan.is_ok());
    CHECK(plan.value().metrics == std::vector<std::string>{name});
    CHECK(plan.value().passes >= 1);
    CHECK(plan.value().passes <= 8);
  }
}

TEST_CASE("plan errors (empty request, nothing collectable) and duplicates planned once", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  auto empty = gh100().plan({});
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);

  auto nothing = gh100().plan({"launch__grid_size", "made__up.sum"});
  REQUIRE_FALSE(nothing.is_ok());
  CHECK(nothing.status().code() == StatusCode::kInvalidArgument);
  CHECK(contains(nothing.status().message(), "launch__grid_size"));
  CHECK(contains(nothing.status().message(), "made__up.sum"));

  const MetricPlan dup = plan_ok({kDuration, kDramThroughput, kDuration});
  CHECK(dup.metrics == std::vector<std::string>{kDuration, kDramThroughput});
  CHECK(dup.rejected.empty());
}

TEST_CASE("an unknown chip fails with a clear status", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  auto unknown = make_cupti_profiler_host("GX999");
  REQUIRE_FALSE(unknown.is_ok());
  CHECK(unknown.status().code() == StatusCode::kInvalidArgument);
  CHECK(contains(unknown.status().message(), "GX999"));
  CHECK(contains(unknown.status().message(), "CUPTI_ERROR_INVALID_CHIP_NAME"));
  CHECK(contains(unknown.status().message(), "GH100"));  // the supported list

  CHECK(make_cupti_profiler_host("").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("evaluating counter data that end() did not produce fails, without a crash", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  // CUPTI's EvaluateToGpuValues and GetCounterDataInfo segfault on such images (seen offline);
  // the host must refuse them before CUPTI reads them.
  const MetricPlan plan = plan_ok({kDramThroughput, kDuration});

  CounterData garbage;
  garbage.image.assign(4096, 0xAB);
  garbage.ranges = 1;
  auto result = gh100().evaluate(plan, garbage, 0);
  REQUIRE_FALSE(result.is_ok());
  CHECK(result.status().code() == StatusCode::kInvalidArgument);
  CHECK(contains(result.status().message(), "checksum"));

  CounterData empty;
  empty.ranges = 1;
  CHECK(gh100().evaluate(plan, empty, 0).status().code() == StatusCode::kInvalidArgument);

  CounterData no_ranges;
  CHECK(gh100().evaluate(plan, no_ranges, 0).status().code() == StatusCode::kInvalidArgument);

  MetricPlan other_chip = plan;
  other_chip.chip = "GA100";
  CHECK(gh100().evaluate(other_chip, garbage, 0).status().code() == StatusCode::kInvalidArgument);

  CHECK(gh100().evaluate(MetricPlan{}, garbage, 0).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("plan and evaluate are safe from several threads", "[collectors][host]") {
  SKIP_IF_HOST_API_BLOCKED();
  const std::vector<std::vector<std::string>> requests = {
      {kSmThroughput, "launch__grid_size", kDramThroughput},
      {kComputeMemory, kDuration},
      {kStallBarrier, kInstExecuted, "bogus__x.sum"},
  };
  std::vector<uint32_t> expected;
  expected.reserve(requests.size());
  for (const auto& request : requests) expected.push_back(plan_ok(request).passes);

  constexpr int kThreads = 6;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        const size_t which = static_cast<size_t>(t + i) % requests.size();
        auto plan = gh100().plan(requests[which]);
        if (!plan.is_ok() || plan.value().passes != expected[which]) ++failures[static_cast<size_t>(t)];
        CounterData garbage;
        garbage.image.assign(64, 1);
        garbage.ranges = 1;
        if (plan.is_ok() && gh100().evaluate(plan.value(), garbage, 0).is_ok()) {
          ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(std::count(failures.begin(), failures.end(), 0) == kThreads);
}

}  // namespace test_profiler_host
