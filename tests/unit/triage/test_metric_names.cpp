// Every metric name a rule asks for must be one the H200 (GH100) can give: a base metric from the
// offline Profiler Host API listing plus a valid rollup/submetric. Names that are Nsight Compute's
// own (launch__*, ...) or that the engine derives are listed and skipped.
//
// tests/data/gh100_base_metrics.txt is the first column of shared/notes/cupti-metrics-GH100.tsv
// (sorted); some rows carry a configuration prefix ("LTS.TriageCompute.lts__throughput"), which is
// stripped here.
#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_metric_names {

using namespace cutriage::triage;

namespace {

std::set<std::string, std::less<>> load_base_metrics() {
  std::set<std::string, std::less<>> out;
  std::ifstream in(CUTRIAGE_TEST_DATA_DIR "/gh100_base_metrics.txt");
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    size_t dot = line.rfind('.');
    out.insert(dot == std::string::npos ? line : line.substr(dot + 1));
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Names outside the CUPTI base-metric listing that rules read on purpose.
constexpr std::string_view kSkippedPrefixes[] = {"launch__", "cutriage__", "device__",
                                                 "gpu__time_duration"};
constexpr std::string_view kKnownDerived[] = {
    // Theoretical occupancy: Nsight Compute's name; the engine computes it from launch arithmetic.
    "sm__maximum_warps_per_active_cycle_pct",
    // Nsight Compute's bytes-per-sector ratios; the engine derives them as
    // l1tex__t_bytes_pipe_lsu_mem_global_op_{ld,st}.sum / l1tex__t_sectors_..._op_{ld,st}.sum.
    "l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_ld.ratio",
    "l1tex__average_t_bytes_per_t_sector_pipe_lsu_mem_global_op_st.ratio",
};

constexpr std::string_view kRollups[] = {"sum", "avg", "min", "max"};
constexpr std::string_view kSubmetrics[] = {
    "pct_of_peak_sustained_active", "pct_of_peak_sustained_elapsed", "pct_of_peak_sustained_region",
    "pct_of_peak_sustained_frame",  "per_cycle_active",             "per_cycle_elapsed",
    "per_cycle_in_region",          "per_cycle_in_frame",           "per_second",
    "peak_sustained",               "peak_sustained_active",        "peak_sustained_elapsed",
    "ratio",                        "pct",                          "max_rate"};

bool in(std::string_view s, const auto& list) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// base.rollup[.submetric] or base.ratio/.pct/.max_rate
bool valid_tail(std::string_view tail) {
  if (tail == "ratio" || tail == "pct" || tail == "max_rate") return true;
  size_t dot = tail.find('.');
  std::string_view rollup = tail.substr(0, dot);
  if (!in(rollup, kRollups)) return false;
  if (dot == std::string_view::npos) return true;
  return in(tail.substr(dot + 1), kSubmetrics);
}

// Error text, or empty when `name` is a base metric plus a valid tail.
std::string check_name(std::string_view name, const std::set<std::string, std::less<>>& bases) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return "no rollup or submetric";
  std::string_view base = name.substr(0, dot);
  if (!bases.count(base)) return "base '" + std::string(base) + "' is not a GH100 metric";
  if (!valid_tail(name.substr(dot + 1))) {
    return "'" + std::string(name.substr(dot + 1)) + "' is not a valid rollup/submetric";
  }
  return {};
}

}  // namespace

TEST_CASE("the GH100 base metric list is present", "[metric_names]") {
  auto bases = load_base_metrics();
  REQUIRE(bases.size() > 3000);
  CHECK(bases.count("smsp__issue_active"));
  CHECK(bases.count("lts__throughput"));  // from a prefixed row
  CHECK(check_name("dram__throughput.avg.pct_of_peak_sustained_elapsed", bases).empty());
  CHECK(check_name("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", bases).empty());
  CHECK_FALSE(check_name("smsp__issue_active", bases).empty());
  CHECK_FALSE(check_name("smsp__issue_active.bogus", bases).empty());
  CHECK_FALSE(check_name("no_such__metric.sum", bases).empty());
}

TEST_CASE("every metric a rule reads exists on GH100", "[metric_names]") {
  auto bases = load_base_metrics();
  REQUIRE(!bases.empty());
  std::vector<std::string> bad;
  for (const std::string& name : all_metric_names()) {
    bool skip = in(std::string_view(name), kKnownDerived);
    for (std::string_view p : kSkippedPrefixes) skip = skip || starts_with(name, p);
    if (skip) continue;
    std::string err = check_name(name, bases);
    if (!err.empty()) bad.push_back(std::string(name).append(": ").append(err));
  }
  for (const std::string& b : bad) UNSCOPED_INFO(b);
  CHECK(bad.empty());
}

TEST_CASE("D3-D6 rule metrics exist on GH100", "[metric_names]") {
  auto bases = load_base_metrics();
  for (Decision d : {Decision::kD3IssueStalls, Decision::kD4ComputePipe,
                     Decision::kD5MemoryMechanism, Decision::kD6SourceLines}) {
    for (const Rule* r : rules_for(d)) {
      for (const MetricNeed& m : r->metrics) {
        std::string_view name = m.name;
        bool skip = in(name, kKnownDerived);
        for (std::string_view p : kSkippedPrefixes) skip = skip || starts_with(name, p);
        if (skip) continue;
        INFO(r->id << ": " << name);
        CHECK(check_name(name, bases).empty());
      }
    }
  }
}

}  // namespace test_metric_names
