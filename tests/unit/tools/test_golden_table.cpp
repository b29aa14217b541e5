// The golden table (tests/data/golden/verdicts.tsv): real kernels, captured on the H200, with the
// verdict, deciding rule and limiter each must get, checked through every path that has data for
// it (issue 23: one verdict per kernel whatever the path):
//  - ncu:       the Nsight Compute capture (tests/data/ncu/zoo), imported as `cutriage triage` does;
//  - deep:      the same counters as the agent's deep mode collects them (one launch, kernel replay);
//  - adaptive:  the same counters revealed stage by stage as deep mode's adaptive sets ask for them
//               (routing counters first, then what the route still needs, until nothing is);
//  - always-on: the same counters assembled over several launches, nothing replayed;
//  - agent:     the agent's own record of the kernel (tests/data/agent, deep mode on the H200),
//               re-triaged by today's engine.
// The first four are one capture through four paths: the verdict must not move. The fifth is the
// agent's own measurement of the same program.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "capture_support.h"
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/plan.h"
#include "file_reader.h"
#include "import.h"
#include "ncu_csv.h"
#include "record_support.h"
#include "zoo_captures.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_golden_table {

using namespace cutriage;
using cutriage::testing::slurp;

namespace {

std::filesystem::path data(const std::string& rel) { return std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / rel; }

struct Row {
  std::string kernel;          // function name as the captures spell it
  std::string classification;  // to_string(Classification)
  std::string primary_rule;    // the check whose finding is the verdict
  std::string limiter;         // to_string(Limiter)
  std::string library;         // the library the engine must recognize, "-" for none
  std::string paths;           // "all" (every path with data) or a comma list
  size_t line = 0;
  [[nodiscard]] bool on(const std::string& path) const {
    return paths == "all" || ("," + paths + ",").find("," + path + ",") != std::string::npos;
  }
};

std::vector<Row> golden() {
  std::vector<Row> rows;
  std::istringstream in(slurp(data("golden/verdicts.tsv")));
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::istringstream cs(line);
    std::string cell;
    while (std::getline(cs, cell, '\t')) cells.push_back(cell);
    INFO("verdicts.tsv line " << n << ": " << line);
    REQUIRE(cells.size() == 6);
    rows.push_back(Row{cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], n});
  }
  return rows;
}

// Every ncu-captured kernel's import input, by function name (the first launch of each).
const std::map<std::string, triage::KernelInput>& ncu_inputs() {
  static const auto result = [] {
    std::map<std::string, triage::KernelInput> by_name;
    for (wire::KernelRecord& k : testing::zoo_ncu_records()) by_name.try_emplace(k.input.function_name, std::move(k.input));
    return by_name;
  }();
  return result;
}

// The agent's final record per function over every file of tests/data/agent, with its device.
struct AgentKernel {
  triage::KernelInput input;
  std::string file;
};
const std::map<std::string, AgentKernel>& agent_inputs() {
  static const auto result = [] {
    std::map<std::string, AgentKernel> by_name;
    for (const auto& e : std::filesystem::directory_iterator(data("agent"))) {
      if (e.path().extension() != ".pb") continue;
      tools::ReadResult read = tools::read_cutriage_file(e.path().string());
      if (read.status != tools::ReadStatus::kOk) continue;
      const v1::SessionHeader* header = nullptr;
      for (const v1::Record& r : read.file.records()) {
        if (r.has_session()) header = &r.session();
        if (header == nullptr || !r.has_kernel() || r.kernel().status() != v1::PROFILE_STATUS_PROFILED) continue;
        const std::string fn(tools::lookup(read, r.kernel().function_name_iid()));
        AgentKernel k{testing::input_from_record(read, r.kernel(), testing::device_limits_from_header(*header)),
                      e.path().filename().string()};
        by_name.insert_or_assign(fn, std::move(k));  // the latest record combines the earlier ones
      }
    }
    return by_name;
  }();
  return result;
}

// Deep mode's adaptive sets over one capture: the routing counters first, then, stage by stage,
// what the route still needs, until it needs nothing the capture has.
triage::KernelInput adaptive(const triage::KernelInput& full, int* stages) {
  triage::KernelInput k = full;
  // What the stages asked for so far (testing::collected_view: a ratio ncu measured directly is
  // revealed once the counters behind it are asked for).
  std::vector<std::string> first = triage::counters_for_decisions(triage::routing_decisions());
  std::set<std::string> asked(first.begin(), first.end());
  k.metrics = testing::collected_view(full.metrics, asked);
  *stages = 1;
  for (; *stages < 12; ++*stages) {
    const triage::Diagnosis d = triage::triage_kernel(k);
    const size_t before = k.metrics.size();
    for (std::string& c : triage::counters_still_needed(d, k.metrics)) asked.insert(std::move(c));
    k.metrics = testing::collected_view(full.metrics, asked);
    if (k.metrics.size() == before) break;
  }
  return k;
}

// Always-on's assembly over one capture: the same counters, from three launches of the same shape
// and duration, one metric group each, nothing replayed.
triage::KernelInput assembled(const triage::KernelInput& full) {
  triage::KernelInput k = full;
  k.collection.collector = triage::Collector::kAgent;
  k.collection.replay_mode = triage::ReplayMode::kNone;
  k.collection.cache_control = "none";
  k.collection.passes = 0;
  const double duration = full.metrics.get("gpu__time_duration.sum").value_or(0);
  for (uint32_t g = 1; g <= 3; ++g) {
    triage::AssembledLaunch a;
    a.launch_index = uint64_t{10} * g;
    if (full.launch) {
      a.grid = full.launch->grid;
      a.block = full.launch->block;
      a.dynamic_shared_bytes = full.launch->dynamic_shared_bytes;
    }
    a.duration_ns = duration;
    a.metric_group = g;
    a.metrics = static_cast<uint32_t>(full.metrics.size() / 3);
    k.assembled_launches.push_back(a);
  }
  return k;
}

void check_row(const Row& row, const triage::Diagnosis& d, const std::string& path) {
  INFO("golden row " << row.line << " (" << row.kernel << ") through the " << path << " path: " << d.headline);
  CHECK(std::string(triage::to_string(d.classification)) == row.classification);
  CHECK(d.primary_rule == row.primary_rule);
  CHECK(std::string(triage::to_string(d.primary_limiter)) == row.limiter);
  CHECK(d.library == (row.library == "-" ? std::string() : row.library));
}

}  // namespace

TEST_CASE("golden table: every row's kernel has real data, and the table covers every zoo capture", "[golden]") {
  const std::vector<Row> rows = golden();
  REQUIRE(rows.size() >= 12);
  std::set<std::string> named;
  for (const Row& row : rows) {
    INFO("golden row " << row.line << ": " << row.kernel);
    CHECK((ncu_inputs().count(row.kernel) == 1 || agent_inputs().count(row.kernel) == 1));
    CHECK(named.insert(row.kernel).second);  // one row per kernel
  }
  for (const auto& [name, input] : ncu_inputs()) {
    INFO(name << " was captured by ncu but has no golden row");
    CHECK(named.count(name) == 1);
  }
}

TEST_CASE("golden table: one capture, four paths (ncu, deep, adaptive, always-on), one verdict", "[golden]") {
  size_t checked = 0;
  for (const Row& row : golden()) {
    auto it = ncu_inputs().find(row.kernel);
    if (it == ncu_inputs().end()) continue;
    const triage::KernelInput& ncu = it->second;
    if (row.on("ncu")) check_row(row, triage::triage_kernel(ncu), "ncu");

    triage::KernelInput deep = ncu;
    deep.collection.collector = triage::Collector::kAgent;
    deep.collection.replay_mode = triage::ReplayMode::kKernel;
    deep.collection.cache_control = "all";
    if (row.on("deep")) check_row(row, triage::triage_kernel(deep), "deep");

    int stages = 0;
    triage::KernelInput staged = adaptive(deep, &stages);
    INFO(stages << " adaptive stages, " << staged.metrics.size() << " of " << ncu.metrics.size() << " values");
    if (row.on("adaptive")) check_row(row, triage::triage_kernel(staged), "adaptive");

    if (row.on("always-on")) check_row(row, triage::triage_kernel(assembled(ncu)), "always-on");
    ++checked;
  }
  CHECK(checked >= 12);
}

TEST_CASE("golden table: the agent's own H200 records get the table's verdicts", "[golden]") {
  size_t checked = 0;
  for (const Row& row : golden()) {
    auto it = agent_inputs().find(row.kernel);
    if (it == agent_inputs().end() || !row.on("agent")) continue;
    INFO("agent file " << it->second.file);
    check_row(row, triage::triage_kernel(it->second.input), "agent");
    ++checked;
  }
  CHECK(checked >= 14);
}

}  // namespace test_golden_table
