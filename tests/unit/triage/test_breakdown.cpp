// Throughputs assembled from their breakdowns (always-on collection without replay), replayed
// against Nsight Compute's own breakdown captures of one H200 kernel (tests/data/breakdown/).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/plan.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_breakdown {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

using namespace cutriage::triage;

namespace {

// One row of `ncu --csv --page raw`: quoted fields, commas inside quotes.
std::vector<std::string> csv_row(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(field);
      field.clear();
    } else {
      field.push_back(c);
    }
  }
  out.push_back(field);
  return out;
}

// name -> value of the capture's one kernel (header, units, values rows).
std::map<std::string, double> read_capture(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string header, units, values;
  std::getline(in, header);
  std::getline(in, units);
  std::getline(in, values);
  const std::vector<std::string> names = csv_row(header);
  const std::vector<std::string> vals = csv_row(values);
  REQUIRE(names.size() == vals.size());
  std::map<std::string, double> out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].find("__") == std::string::npos) continue;
    std::string v;
    for (char c : vals[i]) {
      if (c != ',') v.push_back(c);
    }
    try {
      out[names[i]] = std::stod(v);
    } catch (...) {
    }
  }
  return out;
}

}  // namespace

TEST_CASE("each breakdown reproduces ncu's throughput on the H200 capture", "[breakdown]") {
  const auto dir = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "breakdown";
  REQUIRE(throughput_breakdowns().size() == 5);
  for (const ThroughputBreakdown& b : throughput_breakdowns()) {
    const std::string base = b.metric.substr(0, b.metric.find('.'));
    INFO(base);
    const std::map<std::string, double> capture = read_capture(dir / (base + ".csv"));
    REQUIRE(capture.count(b.metric) == 1);
    MetricSet m;
    for (const std::string& part : b.parts) {
      REQUIRE(capture.count(part) == 1);  // the table lists what ncu's breakdown lists
      m.set(part, capture.at(part), "%");
    }
    // Every name ncu's breakdown listed is in the table, as a part or as unreachable.
    for (const auto& [name, value] : capture) {
      if (name == b.metric || name.find(".avg.pct_of_peak_sustained_elapsed") == std::string::npos) continue;
      const bool listed = std::find(b.parts.begin(), b.parts.end(), name) != b.parts.end() ||
                          std::find(b.unreachable.begin(), b.unreachable.end(), name) != b.unreachable.end();
      CHECK(listed);
    }
    const std::vector<std::string> derived = derive_from_breakdowns(m);
    REQUIRE(std::find(derived.begin(), derived.end(), b.metric) != derived.end());
    const MetricValue* v = m.find(b.metric);
    REQUIRE(v != nullptr);
    CHECK(v->source == MetricSource::kDerived);
    // ncu prints two decimals; its parts were read in separate passes of the same replay.
    CHECK(v->value == Approx(capture.at(b.metric)).margin(0.1));
  }
}

TEST_CASE("a breakdown with a part missing derives nothing, a measured value is kept (synthetic)", "[breakdown]") {
  const ThroughputBreakdown* b = find_breakdown("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  REQUIRE(b != nullptr);
  REQUIRE(b->parts.size() > 2);
  MetricSet m;
  for (size_t i = 0; i + 1 < b->parts.size(); ++i) m.set(b->parts[i], 10.0 + static_cast<double>(i), "%");
  const std::vector<std::string> partial = derive_from_breakdowns(m);
  CHECK(std::find(partial.begin(), partial.end(), b->metric) == partial.end());
  CHECK_FALSE(m.has(b->metric));
  m.set(b->parts.back(), 95.0, "%");
  add_derived_metrics(m);  // the engine's derivation step runs it too
  REQUIRE(m.get(b->metric).has_value());
  CHECK(*m.get(b->metric) == Approx(95.0));
  // sm__instruction_throughput's parts are a subset of sm__throughput's: it was derived too.
  std::string note;
  for (const std::string& n : breakdown_notes(m)) {
    if (n.rfind("sm__throughput ", 0) == 0) note = n;
  }
  CHECK(note.find("sm__throughput = 95.00%") != std::string::npos);
  CHECK(note.find(b->parts.back().substr(0, b->parts.back().find('.'))) != std::string::npos);
  CHECK(note.find("lower bound") != std::string::npos);  // sm__mio_inst_issued needs replay

  MetricSet measured;
  measured.set(b->metric, 42.0, "%");
  for (const std::string& part : b->parts) measured.set(part, 99.0, "%");
  const std::vector<std::string> again = derive_from_breakdowns(measured);
  CHECK(std::find(again.begin(), again.end(), b->metric) == again.end());
  CHECK(*measured.get(b->metric) == Approx(42.0));
  CHECK(measured.find(b->metric)->source == MetricSource::kMeasured);
  for (const std::string& n : breakdown_notes(measured)) CHECK(n.rfind("sm__throughput ", 0) != 0);
}

TEST_CASE("expand_breakdowns replaces multi-pass throughputs by their parts", "[breakdown]") {
  const std::vector<std::string> wanted = {"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                           "sm__instruction_throughput.avg.pct_of_peak_sustained_elapsed"};
  const std::vector<std::string> out = expand_breakdowns(wanted);
  CHECK(out.front() == wanted[0]);  // no breakdown: kept, in place
  CHECK(std::find(out.begin(), out.end(), wanted[1]) == out.end());
  CHECK(std::find(out.begin(), out.end(), "sm__issue_active.avg.pct_of_peak_sustained_elapsed") != out.end());
  const std::set<std::string> unique(out.begin(), out.end());
  CHECK(unique.size() == out.size());  // shared parts (sm__issue_active) once
}

TEST_CASE("the engine notes a throughput assembled from its breakdown (synthetic)", "[breakdown]") {
  KernelInput k;
  const ThroughputBreakdown* b = find_breakdown("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  REQUIRE(b != nullptr);
  for (const std::string& part : b->parts) k.metrics.set(part, part.rfind("dram__", 0) == 0 ? 88.0 : 5.0, "%");
  k.metrics.set("gpu__time_duration.sum", 100000, "nsecond");
  const Diagnosis d = triage_kernel(k);
  bool noted = false;
  for (const std::string& n : d.trust_notes) noted = noted || n.find("gpu__compute_memory_throughput = 88.00%") == 0;
  CHECK(noted);
}

TEST_CASE("verdict counters: routing without the off-device traffic check's optional counters", "[plan]") {
  using cutriage::triage::counters_for_decisions;
  using cutriage::triage::routing_decisions;
  using cutriage::triage::verdict_counters_for;
  const std::vector<std::string> all = counters_for_decisions(routing_decisions());
  const std::vector<std::string> verdict = verdict_counters_for(routing_decisions());
  auto has = [](const std::vector<std::string>& v, const char* m) { return std::find(v.begin(), v.end(), m) != v.end(); };
  // d2.sysmem_peer_traffic neither blocks nor classifies: its optional counters refine the detail.
  for (const char* m : {"pcie__read_bytes.sum", "pcie__write_bytes.sum", "lts__t_sectors_aperture_sysmem.sum",
                        "lts__t_sectors_aperture_peer.sum", "lts__t_sectors.sum",
                        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"}) {
    INFO(m);
    CHECK(has(all, m));
    CHECK_FALSE(has(verdict, m));
  }
  // What a classification rests on stays: D0's blocking contradiction check reads the DRAM, L2 and
  // L1 throughputs (optional there), D2 compares SM and memory throughput.
  for (const char* m : {"dram__throughput.avg.pct_of_peak_sustained_elapsed",
                        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
                        "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
                        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                        "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__cycles_elapsed.avg.per_second"}) {
    INFO(m);
    CHECK(has(verdict, m));
  }
  for (const std::string& m : verdict) CHECK(has(all, m.c_str()));
  CHECK(all.size() - verdict.size() == 6);  // only those six
}

}  // namespace test_breakdown
