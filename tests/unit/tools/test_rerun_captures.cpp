// Issue 21's short PyTorch scripts on the H200 (tests/data/rerun/README.md): run once, their top
// families were ranked only after their last launch; run again with that ranking, the top family
// has a verdict and the second run's trace matched the first. And `--rerun auto`'s rule on those
// and on the H200's CUDA-graph serving loop, whose first run leaves only one-off kernels behind.
#include <string>

#include "catch.h"
#include "file_reader.h"
#include "report.h"
#include "run.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rerun_captures {

using namespace cutriage;

namespace {

tools::ReadResult read(const std::string& name) {
  tools::ReadResult r = tools::read_cutriage_file(std::string(CUTRIAGE_TEST_DATA_DIR) + "/rerun/" + name);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  return r;
}

const v1::FamilyStats& top_family(const tools::ReadResult& r) {
  const v1::TraceSummary* s = tools::trace_summary(r);
  REQUIRE(s != nullptr);
  REQUIRE(s->families_size() > 0);
  return s->families(0);
}

}  // namespace

TEST_CASE("rerun captures: run once, the top family was ranked only after its last launch", "[tools][rerun]") {
  for (const char* name : {"matmul10-once.pb", "conv2d-once.pb", "layernorm-once.pb"}) {
    INFO(name);
    const tools::ReadResult r = read(name);
    const v1::FamilyStats& top = top_family(r);
    CHECK(top.selection() == v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);
    CHECK(top.application_launches() == 10);
    const tools::RerunNeed need = tools::rerun_need(r);
    CHECK(need.families >= 1);
    CHECK(need.first == tools::family_name(r, top.family_id()));
    CHECK(need.time_share >= top.time_share());
  }
}

TEST_CASE("rerun captures: a second run for the top family or 5% of the GPU time, not for a one-off kernel",
          "[tools][rerun]") {
  // The scripts' first runs missed their top family: `--rerun auto` runs them again.
  for (const char* name : {"matmul10-once.pb", "conv2d-once.pb", "layernorm-once.pb"}) {
    INFO(name);
    const tools::RerunNeed need = tools::rerun_need(read(name));
    CHECK(need.includes_top);
    CHECK(tools::rerun_worth(need));
  }
  // The CUDA-graph serving loop under `cutriage run` (H200, tests/data/graphs/): every family of
  // the graph has its verdict; two one-off kernels (a copy, a fill) ran before the ranking, with
  // 0.2% of the GPU time. Running the whole loop again for them is not worth it.
  for (const char* name : {"graph_mlp-deep.pb", "graph_mlp-pm-alu-issue.pb"}) {
    INFO(name);
    const tools::ReadResult r = tools::read_cutriage_file(std::string(CUTRIAGE_TEST_DATA_DIR) + "/graphs/" + name);
    REQUIRE(r.status == tools::ReadStatus::kOk);
    const tools::RerunNeed need = tools::rerun_need(r);
    CHECK(need.families >= 1);
    CHECK_FALSE(need.includes_top);
    CHECK(need.time_share < 0.01);
    CHECK_FALSE(tools::rerun_worth(need));
  }
  // Synthetic (the rule alone): several small ones that add up to 5% are worth it.
  tools::RerunNeed several;
  several.families = 3;
  several.time_share = 0.06;
  CHECK(tools::rerun_worth(several));
  several.time_share = 0.04;
  CHECK_FALSE(tools::rerun_worth(several));
  several.includes_top = true;
  CHECK(tools::rerun_worth(several));
}

TEST_CASE("rerun captures: run again with that ranking, the top family has a verdict", "[tools][rerun]") {
  struct Case {
    const char* file;
    const char* verdict;  // the report's verdict line for the top family
  };
  for (const Case& c : {Case{"matmul10.pb", "SATURATED"}, Case{"conv2d.pb", "COMPUTE BOUND"}}) {
    INFO(c.file);
    const tools::ReadResult r = read(c.file);
    const v1::FamilyStats& top = top_family(r);
    CHECK(top.selection() == v1::FamilyStats::SELECTION_PROFILED);
    CHECK(top.application_launches() == 10);
    const v1::RankingSource& source = tools::trace_summary(r)->ranking_source();
    CHECK(source.trace_matches());
    CHECK(source.families_selected() == 5);
    CHECK(source.families_differing() == 0);
    CHECK(source.path().find(".ranking-run") != std::string::npos);
    CHECK(tools::rerun_need(r).families == 0);
    const std::string report = tools::render_report(r, tools::ReportOptions{});
    CHECK(report.find("this run's trace matches it") != std::string::npos);
    // The verdict follows the top family's row (and its full name).
    const size_t row = report.find("\n   1  ");
    REQUIRE(row != std::string::npos);
    const size_t verdict = report.find(c.verdict, row);
    REQUIRE(verdict != std::string::npos);
    CHECK(report.find("\n   2  ", row) > verdict);
  }
}

}  // namespace test_rerun_captures
