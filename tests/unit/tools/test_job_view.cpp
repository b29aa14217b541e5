// The job view (tools/src/job_view.h) on tests/data/job/: real H200 captures with SYNTHETIC rank
// headers (that directory's README says how they were made). The variants below change the files
// further in memory, each SYNTHETIC and said so where it is made: a family renamed to an NCCL
// kernel's name (no real capture runs one), one rank's kernels made longer, rank headers taken
// away or doubled.
#include <algorithm>
#include <string>
#include <vector>

#include "catch.h"
#include "file_reader.h"
#include "job_view.h"
#include "multi_file.h"
#include "report.h"
#include "report_model.h"
#include "table_export.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_job_view {

using namespace cutriage;

namespace {

const std::string kData = CUTRIAGE_TEST_DATA_DIR;

tools::ReadResult reread(const v1::File& f) {
  std::string bytes;
  f.SerializeToString(&bytes);
  return tools::read_cutriage_bytes(bytes);
}

std::vector<tools::ProcessRun> job_runs() {
  tools::MultiRead read = tools::read_runs({kData + "/job/rank1.pb", kData + "/job/rank0.pb"});
  REQUIRE(read.status == tools::ReadStatus::kOk);
  REQUIRE(read.processes.size() == 2);
  return read.processes;
}

v1::TraceSummary* summary_of(v1::File& f) {
  for (v1::Record& r : *f.mutable_records()) {
    if (r.has_trace_summary()) return r.mutable_trace_summary();
  }
  return nullptr;
}

// SYNTHETIC: the family named `from` in `run` renamed to `to` (its interned display name).
void rename_family(tools::ProcessRun& run, const std::string& from, const std::string& to) {
  v1::File f = run.file.file;
  bool renamed = false;
  for (v1::Record& r : *f.mutable_records()) {
    if (r.has_interned() && r.interned().value() == from) {
      r.mutable_interned()->set_value(to);
      renamed = true;
    }
  }
  REQUIRE(renamed);
  run.file = reread(f);
}

// The device numbers as the report reads them (span without the paused time, idle = span - busy).
struct Timing {
  double idle = 0;
  double span = 0;
};
Timing timing_of(const tools::ReadResult& r) {
  Timing t;
  for (const v1::DeviceTimeline& d : tools::trace_summary(r)->devices()) {
    const double span = double(d.last_end_ns() - d.first_start_ns()) - d.untraced_ns();
    t.span += span;
    t.idle += span - d.busy_ns();
  }
  return t;
}

}  // namespace

TEST_CASE("job view: the ranks of one job, sorted by rank, with their numbers", "[job]") {
  const std::vector<tools::ProcessRun> runs = job_runs();  // rank 1's file given first
  const std::optional<tools::JobView> job = tools::job_view(runs);
  REQUIRE(job);
  CHECK(job->world_size == 2);
  CHECK(job->missing.empty());
  CHECK(job->rank_variables == std::vector<std::string>{"RANK"});
  REQUIRE(job->ranks.size() == 2);
  CHECK(job->ranks[0].rank == 0);
  CHECK(job->ranks[1].rank == 1);
  CHECK(job->ranks[0].process == 1);  // the index of its file among the runs
  for (const tools::RankStats& r : job->ranks) {
    const tools::ReadResult& file = runs[r.process].file;
    const v1::TraceSummary* ts = tools::trace_summary(file);
    REQUIRE(ts != nullptr);
    REQUIRE(r.has_trace);
    CHECK(r.kernel_ns == ts->total_kernel_ns());
    const Timing t = timing_of(file);
    CHECK(r.idle_ns == Approx(t.idle));
    CHECK(r.span_ns == Approx(t.span));
    CHECK(r.idle_share() == Approx(t.idle / t.span));
    // No communication kernel in these programs: compute is all of the kernel time.
    CHECK(r.communication_ns == 0);
    CHECK(r.compute_ns == r.kernel_ns);
    REQUIRE(!r.families.empty());
    CHECK(r.families[0].name == "zoo_strided_load");
    CHECK(r.families[0].classification == "memory_bound");
    CHECK(r.families[0].verdict == "memory bound");
  }
}

TEST_CASE("job view: the straggler is the rank furthest above the median, with its numbers", "[job]") {
  std::vector<tools::ProcessRun> runs = job_runs();
  SECTION("as captured: the rank whose GPU idled longer") {
    const std::optional<tools::JobView> job = tools::job_view(runs);
    REQUIRE(job);
    const tools::RankStats& a = job->ranks[0];
    const tools::RankStats& b = job->ranks[1];
    // Two ranks: the median is their mean, and the excess of the larger is half the difference.
    const double compute_excess = std::abs(a.compute_ns - b.compute_ns) / 2;
    const double idle_excess = std::abs(a.idle_ns - b.idle_ns) / 2;
    REQUIRE(idle_excess > compute_excess);  // the captures: the same kernels, different host time
    REQUIRE(job->straggler);
    const size_t expected = a.idle_ns > b.idle_ns ? 0 : 1;
    CHECK(job->straggler->index == expected);
    CHECK_FALSE(job->straggler->by_compute);
    CHECK(job->straggler->value_ns == job->ranks[expected].idle_ns);
    CHECK(job->straggler->median_ns == Approx((a.idle_ns + b.idle_ns) / 2));
    const std::string text = tools::render_job_view(*job);
    INFO(text);
    CHECK(text.find("straggler: rank " + std::to_string(job->ranks[expected].rank) + " (" +
                    job->ranks[expected].name + "): idle ") != std::string::npos);
  }
  SECTION("SYNTHETIC: rank 1's kernels made ten times as long: the straggler by compute") {
    tools::ProcessRun& rank1 = runs[0];
    v1::File f = rank1.file.file;
    v1::TraceSummary* ts = summary_of(f);
    REQUIRE(ts != nullptr);
    for (v1::FamilyStats& fs : *ts->mutable_families()) fs.set_total_ns(10 * fs.total_ns());
    ts->set_total_kernel_ns(10 * ts->total_kernel_ns());
    rank1.file = reread(f);
    const std::optional<tools::JobView> job = tools::job_view(runs);
    REQUIRE(job);
    REQUIRE(job->straggler);
    CHECK(job->ranks[job->straggler->index].rank == 1);
    CHECK(job->straggler->by_compute);
    CHECK(job->straggler->value_ns == Approx(job->ranks[1].kernel_ns));
    CHECK(job->straggler->median_ns == Approx((job->ranks[0].compute_ns + job->ranks[1].compute_ns) / 2));
    CHECK(tools::render_job_view(*job).find("straggler: rank 1 (" + job->ranks[1].name + "): compute ") !=
          std::string::npos);
  }
  SECTION("SYNTHETIC: the same file as both ranks: no straggler") {
    v1::File f = runs[1].file.file;  // rank 0's
    f.mutable_records(0)->mutable_session()->mutable_job()->set_rank(1);
    runs[0].file = reread(f);
    const std::optional<tools::JobView> job = tools::job_view(runs);
    REQUIRE(job);
    CHECK_FALSE(job->straggler);
    CHECK(tools::render_job_view(*job).find("straggler: none;") != std::string::npos);
  }
}

TEST_CASE("job view: the communication share is the time of communication kernels, by name", "[job]") {
  std::vector<tools::ProcessRun> runs = job_runs();
  // SYNTHETIC: rank 1's fill kernel renamed as NCCL's all-reduce (the captures run no NCCL).
  rename_family(runs[0], "fill_strided_input", "ncclDevKernel_AllReduce_Sum_f32");
  std::optional<tools::JobView> job = tools::job_view(runs);
  REQUIRE(job);
  const tools::RankStats& r1 = job->ranks[1];
  const v1::TraceSummary* ts = tools::trace_summary(runs[0].file);
  double nccl_ns = 0;
  for (const v1::FamilyStats& fs : ts->families()) {
    if (tools::family_name(runs[0].file, fs.family_id()) == "ncclDevKernel_AllReduce_Sum_f32") nccl_ns += fs.total_ns();
  }
  REQUIRE(nccl_ns > 0);
  CHECK(r1.communication_ns == nccl_ns);
  CHECK(r1.communication_share() == Approx(nccl_ns / ts->total_kernel_ns()));
  CHECK(r1.compute_ns == Approx(ts->total_kernel_ns() - nccl_ns));
  CHECK(job->ranks[0].communication_ns == 0);
  auto nccl = std::find_if(r1.families.begin(), r1.families.end(),
                           [](const tools::RankFamily& f) { return f.communication; });
  REQUIRE(nccl != r1.families.end());
  CHECK(nccl->verdict == "communication");
  const std::string text = tools::render_job_view(*job);
  INFO(text);
  CHECK(text.find(tools::model::percent(nccl_ns, ts->total_kernel_ns())) != std::string::npos);
  CHECK(text.find("communication") != std::string::npos);

  // The same rule as the agent's: a name that only contains "nccl" is not a communication kernel.
  std::vector<tools::ProcessRun> other = job_runs();
  rename_family(other[0], "fill_strided_input", "my_nccl_helper");
  CHECK(tools::job_view(other)->ranks[1].communication_ns == 0);
}

TEST_CASE("job view: json and csv rows get the rank after the process, and --rows ranks one row per rank", "[job]") {
  const std::vector<tools::ProcessRun> runs = job_runs();
  const std::optional<tools::JobView> job = tools::job_view(runs);
  REQUIRE(job);
  std::string error;
  const std::string csv = tools::render_runs_table(runs, tools::TableFormat::kCsv, tools::TableRows::kFamilies, error);
  REQUIRE(error.empty());
  CHECK(csv.rfind("process,rank,family_id,name,", 0) == 0);
  // Rank 0's rows first, though its file was given second.
  const size_t first_row = csv.find("\r\n") + 2;
  CHECK(csv.compare(first_row, job->ranks[0].name.size() + 3, job->ranks[0].name + ",0,") == 0);
  CHECK(csv.find("\r\n" + job->ranks[1].name + ",1,") != std::string::npos);
  const std::string json = tools::render_runs_table(runs, tools::TableFormat::kJsonLines, tools::TableRows::kKernels, error);
  REQUIRE(error.empty());
  size_t rows = 0;
  for (size_t p = 0; p < json.size(); p = json.find('\n', p) + 1) {
    const std::string line = json.substr(p, json.find('\n', p) - p);
    const bool rank0 = line.rfind("{\"process\":\"" + job->ranks[0].name + "\",\"rank\":0,\"launch_index\":", 0) == 0;
    const bool rank1 = line.rfind("{\"process\":\"" + job->ranks[1].name + "\",\"rank\":1,\"launch_index\":", 0) == 0;
    CHECK((rank0 || rank1));
    ++rows;
  }
  CHECK(rows >= 2);

  const std::string ranks = tools::render_runs_table(runs, tools::TableFormat::kCsv, tools::TableRows::kRanks, error);
  REQUIRE(error.empty());
  INFO(ranks);
  CHECK(ranks.rfind("rank,local_rank,process,world_size,span_ns,busy_ns,idle_ns,idle_share,kernel_ns,"
                    "communication_ns,communication_share,compute_ns,straggler,top_family,top_family_share,"
                    "top_family_verdict\r\n",
                    0) == 0);
  const std::string straggler = job->straggler->by_compute ? "compute" : "idle";
  const std::string row0 = "0,0," + job->ranks[0].name + ",2,";
  const std::string row1 = "1,1," + job->ranks[1].name + ",2,";
  REQUIRE(ranks.find("\r\n" + row0) != std::string::npos);
  REQUIRE(ranks.find("\r\n" + row1) != std::string::npos);
  const std::string& straggler_row = job->straggler->index == 0 ? row0 : row1;
  const size_t at = ranks.find("\r\n" + straggler_row);
  CHECK(ranks.substr(at, ranks.find("\r\n", at + 2) - at).find("," + straggler + ",zoo_strided_load,") !=
        std::string::npos);
  const std::string ranks_json = tools::render_runs_table(runs, tools::TableFormat::kJsonLines, tools::TableRows::kRanks, error);
  CHECK(ranks_json.rfind("{\"rank\":0,\"local_rank\":0,\"process\":", 0) == 0);
  CHECK(ranks_json.find("\"top_family_verdict\":\"memory_bound\"}") != std::string::npos);
}

TEST_CASE("job view: files that are not one job's ranks read as before", "[job]") {
  const std::vector<tools::ProcessRun> ranked = job_runs();
  tools::ReportOptions options;
  // SYNTHETIC: the same files without their rank headers: processes apart, no job section, no
  // rank column; what the report printed for them before the job view.
  std::vector<tools::ProcessRun> plain = ranked;
  for (tools::ProcessRun& run : plain) {
    v1::File f = run.file.file;
    f.mutable_records(0)->mutable_session()->clear_job();
    run.file = reread(f);
  }
  CHECK_FALSE(tools::job_view(plain));
  const std::string text = tools::render_runs_report(plain, options);
  std::string expected = "2 processes\n";
  for (const tools::ProcessRun& run : plain) {
    expected += "\n=== process " + run.name + " (" + run.paths[0] + ") ===\n" + tools::render_report(run.file, options);
  }
  CHECK(text == expected);
  std::string error;
  CHECK(tools::render_runs_table(plain, tools::TableFormat::kCsv, tools::TableRows::kFamilies, error)
            .rfind("process,family_id,", 0) == 0);
  CHECK(tools::render_runs_table(plain, tools::TableFormat::kCsv, tools::TableRows::kRanks, error).empty());
  CHECK(error.find("not the ranks of one job") != std::string::npos);

  // One rank alone: the report of its file, as for any one file.
  const std::vector<tools::ProcessRun> one = {ranked[0]};
  CHECK_FALSE(tools::job_view(one));
  CHECK(tools::render_runs_report(one, options) == tools::render_report(ranked[0].file, options));

  // SYNTHETIC: two world sizes, or one rank twice: not one job.
  std::vector<tools::ProcessRun> sizes = ranked;
  v1::File f = sizes[0].file.file;
  f.mutable_records(0)->mutable_session()->mutable_job()->set_world_size(4);
  sizes[0].file = reread(f);
  CHECK_FALSE(tools::job_view(sizes));
  std::vector<tools::ProcessRun> twice = ranked;
  f = twice[0].file.file;
  f.mutable_records(0)->mutable_session()->mutable_job()->set_rank(0);
  twice[0].file = reread(f);
  CHECK_FALSE(tools::job_view(twice));
}

TEST_CASE("job view: the report opens with the job section, then each rank by rank", "[job]") {
  const std::vector<tools::ProcessRun> runs = job_runs();
  const std::string text = tools::render_runs_report(runs, tools::ReportOptions{});
  INFO(text);
  CHECK(text.rfind("2 processes\n\njob: 2 ranks of world size 2, rank from RANK\n", 0) == 0);
  const size_t job = text.find("job: 2 ranks");
  const size_t s0 = text.find("=== process " + runs[1].name + " (" + runs[1].paths[0] + "), rank 0 ===");
  const size_t s1 = text.find("=== process " + runs[0].name + " (" + runs[0].paths[0] + "), rank 1 ===");
  REQUIRE(s0 != std::string::npos);
  REQUIRE(s1 != std::string::npos);
  CHECK(job < s0);
  CHECK(s0 < s1);
  // The families side by side: one line, each rank's share and verdict.
  const size_t families = text.find("top families: share of each rank's kernel time, verdict\n");
  REQUIRE(families < s0);
  const size_t line = text.find("  zoo_strided_load ", families);
  REQUIRE(line < s0);
  const std::string row = text.substr(line, text.find('\n', line) - line);
  CHECK(row.find("memory bound") != row.rfind("memory bound"));  // twice: rank 0 and rank 1
  // Deep-mode captures: the note that profiling is in the timing.
  CHECK(text.find("note: deep mode:") < s0);
}

}  // namespace test_job_view
