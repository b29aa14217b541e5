// The report's application view and the reader's trace indexes, on the synthetic trace file of
// tests/support/trace_fixture.h (made-up inputs encoded by the agent's RecordEncoder, not a
// measurement).
#include <string>
#include <vector>

#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "report.h"
#include "report_text.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_report_trace {

using namespace cutriage;
using testing::columns;
using testing::lines_of;

namespace {

// Columns a terminal gives the line: code points, not bytes (names may hold "…" and non-ASCII).
size_t position(const std::string& text, const std::string& what) {
  size_t at = text.find(what);
  INFO("looking for: " << what);
  CHECK(at != std::string::npos);
  return at;
}

}  // namespace

TEST_CASE("reader: families by id, trace chunks, the summary, the highest revision per launch",
          "[reader][trace]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_trace_file());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(r.family_records.size() == 4);
  const v1::KernelFamily* gemm = tools::find_family(r, 1);
  REQUIRE(gemm != nullptr);
  CHECK(tools::lookup(r, gemm->display_name_iid()) == "gemm<128>");
  CHECK(tools::lookup(r, gemm->mangled_name_iid()) == "_Z4gemmILi128EEvPKfS1_Pf");
  CHECK(gemm->block().x() == 256);
  CHECK(tools::find_family(r, 0) == nullptr);
  CHECK(tools::find_family(r, 99) == nullptr);
  CHECK(tools::family_name(r, 3) == testing::SyntheticTrace::kLongName);
  CHECK(tools::family_name(r, 99) == "family 99");
  CHECK(r.trace_records.size() == 2);
  REQUIRE(tools::trace_summary(r) != nullptr);
  CHECK(tools::trace_summary(r)->families_size() == 4);

  // Revision 0 and 1 of launch 102 are both in the file; only revision 1 is current.
  int records_of_launch = 0;
  for (const v1::Record& rec : r.file.records()) {
    records_of_launch += rec.has_kernel() && rec.kernel().launch_index() == 102 ? 1 : 0;
  }
  CHECK(records_of_launch == 2);
  const auto current = tools::current_kernels(r);
  REQUIRE(current.size() == 1);
  CHECK(current[0]->revision() == 1);
  CHECK(current[0]->diagnosis().headline() == "memory_bound: DRAM at 91% of peak (revised)");

  // A copy of the result stays self-consistent (indexes, not pointers).
  const tools::ReadResult copy = r;
  REQUIRE(tools::trace_summary(copy) != nullptr);
  CHECK(tools::trace_summary(copy) != tools::trace_summary(r));
  CHECK(tools::family_name(copy, 1) == "gemm<128>");
}

TEST_CASE("reader: the highest revision wins in any order, equal revisions are all kept",
          "[reader][trace]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_trace_session());
  bytes += enc.kernel(testing::synthetic_profiled_gemm(2, "memory_bound: second rewrite"));
  bytes += enc.kernel(testing::synthetic_profiled_gemm(0, "memory_bound: first write"));
  bytes += enc.kernel(testing::synthetic_profiled_gemm(1, "memory_bound: first rewrite"));
  // Another launch of the same kernel, written twice at revision 0 (two captures whose IDs
  // coincide): both kept, as before revisions existed.
  wire::KernelRecord other = testing::synthetic_profiled_gemm(0, "memory_bound: other launch");
  other.input.launch_index = 7;
  bytes += enc.kernel(other);
  bytes += enc.kernel(other);
  // Another kernel with the same launch index (an import of two programs): its own launch.
  wire::KernelRecord different = testing::synthetic_profiled_gemm(0, "compute_bound: another kernel");
  different.input.mangled_name = "_Z5otherv";
  bytes += enc.kernel(different);

  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::vector<std::string> headlines;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) headlines.push_back(k->diagnosis().headline());
  CHECK(headlines == std::vector<std::string>{"memory_bound: second rewrite", "memory_bound: other launch",
                                              "memory_bound: other launch", "compute_bound: another kernel"});
  CHECK(r.trace_records.empty());
  CHECK(tools::trace_summary(r) == nullptr);
}

TEST_CASE("report: the application view opens the report, like nsys stats with verdicts",
          "[report][trace]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_trace_file());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const std::string text = tools::render_report(r, {});
  INFO(text);

  // Order: header, application view (devices, families, findings), then the per-kernel sections.
  size_t view = position(text, "application view: 10 kernel executions, 2 copies traced; 573 us of kernel time");
  size_t families = position(text, "kernel families by GPU time");
  size_t findings = position(text, "session findings");
  size_t kernels = position(text, "1 profiled kernel, longest first");
  CHECK(view < families);
  CHECK(families < findings);
  CHECK(findings < kernels);
  CHECK(position(text, "profiled: the top family by GPU time") < families);

  // Devices: span, busy and idle with percentages, copies serialized with compute.
  CHECK(text.find("GPU 0 (NVIDIA H200): span 1.29 ms, busy 483 us (37.4%), idle 808 us (62.6%, with profiling)") != std::string::npos);
  CHECK(text.find("2 copies, busy 71.0 us; 70.0 us serialized with compute (5.4% of span), 70.0 us pageable") !=
        std::string::npos);
  CHECK(text.find("6 idle gaps, 808 us in all; longest 246 us") != std::string::npos);
  CHECK(text.find("GPU 1 (NVIDIA H200): span 250 us, busy 250 us (100.0%), idle 0 (0.0%, with profiling)") != std::string::npos);

  // Families ranked by total GPU time, with launches, share and Amdahl ceiling.
  size_t long_row = position(text, "   1  very_long_kernel_name_for_width\u2026        1   250 us   250 us");
  size_t gemm_row = position(text, "   2  gemm<128>                               5   208 us  52.0 us");
  size_t graph_row = position(text, "   3  elementwise<\"q\\x\">                      2   100 us  50.0 us");
  size_t reduce_row = position(text, "   4  reduce                                  2  15.0 us  7.50 us");
  CHECK(long_row < gemm_row);
  CHECK(gemm_row < graph_row);
  CHECK(graph_row < reduce_row);
  CHECK(text.find("43.6%   1.77x\n") != std::string::npos);  // 250 of 573 us; 1 / (1 - 0.436)
  CHECK(text.find("36.3%   1.57x\n") != std::string::npos);
  // The long name is cut in the table and given in full below its row.
  CHECK(text.find(std::string("name: ") + testing::SyntheticTrace::kLongName) != std::string::npos);

  // The profiled family: the verdict of revision 1 (revision 0 is superseded), its next action,
  // a pointer to the per-kernel section, its NVTX paths.
  CHECK(position(text, "        MEMORY BOUND - DRAM at 91% of peak (revised) (see [1])\n") > gemm_row);
  CHECK(text.find("next: Move fewer bytes: fuse the epilogue") != std::string::npos);
  CHECK(text.find("nvtx: train/step/forward, train/step") != std::string::npos);
  CHECK(text.find("first write") == std::string::npos);
  // The others say why they were not profiled.
  CHECK(position(text, "not profiled: outside the top 1 (not ranked)") > long_row);
  CHECK(position(text, "not profiled: only launched from CUDA graphs") > graph_row);
  CHECK(position(text, "not profiled: name filter regex:gemm (filtered)") > reduce_row);

  // Findings: fired first with its numbers, then not evaluated with the reason, then not fired.
  size_t fired = position(text, "FIRED  [d2a.idle_gaps] GPU 0 idle 62.5% of the span in 6 gaps");
  position(text, "evidence  cutriage__gpu_idle_pct = 62.5 %");
  position(text, "threshold d2a.idle_gaps.max_idle_pct = 20");
  position(text, "next      Keep the GPU fed: batch small launches, use CUDA graphs");
  size_t not_evaluated = position(text, "not evaluated  [d2a.copy_compute_overlap] no copy ran next to a kernel");
  size_t not_fired = position(text, "not fired: d1.isolated_kernels");
  CHECK(fired < not_evaluated);
  CHECK(not_evaluated < not_fired);

  // The per-kernel section keeps its place and content.
  CHECK(position(text, "[1] gemm<128>") > findings);
  CHECK(text.find("    verdict   MEMORY BOUND - DRAM at 91% of peak (revised)") != std::string::npos);

  // Sane width: every line of the view is at most 100 columns, except the full-name line.
  for (const std::string& line : lines_of(text.substr(view, kernels - view))) {
    if (line.find("name: ") != std::string::npos) continue;
    INFO(line);
    CHECK(columns(line) <= 100);
  }
}

TEST_CASE("report: families beyond the limit are summed up, --verbose lists them all", "[report][trace]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_trace_file());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  tools::ReportOptions two;
  two.max_families = 2;
  const std::string text = tools::render_report(r, two);
  INFO(text);
  CHECK(text.find("   2  gemm<128>") != std::string::npos);
  CHECK(text.find("   3  elementwise") == std::string::npos);
  CHECK(text.find("... 2 more families, 20.1% of kernel time (--verbose lists them)") != std::string::npos);

  tools::ReportOptions verbose = two;
  verbose.verbose = true;
  const std::string all = tools::render_report(r, verbose);
  INFO(all);
  CHECK(all.find("   4  reduce") != std::string::npos);
  CHECK(all.find("launches: 0 profiled, 2 from CUDA graphs, 2 concurrent with another kernel") != std::string::npos);
  CHECK(all.find("  [d1.isolated_kernels] kernels overlap") != std::string::npos);
}

TEST_CASE("report: a trace without its summary (killed run) says so, no trace, no view",
          "[report][trace]") {
  const tools::ReadResult killed = tools::read_cutriage_bytes(testing::synthetic_trace_file(false));
  REQUIRE(killed.status == tools::ReadStatus::kOk);
  const std::string text = tools::render_report(killed, {});
  INFO(text);
  // The view is recomputed from the trace chunks with the agent's accumulator (families ranked by
  // the unreplayed durations of the trace: the same numbers as the synthetic summary).
  size_t note = position(text, "note: the file has a trace but no trace summary");
  // The findings name families by their display names.
  CHECK(text.find("family 1 ") == std::string::npos);
  size_t view = position(text, "application view: 10 kernel executions, 2 copies traced; 573 us of kernel time");
  CHECK(note < view);
  size_t long_row = position(text, "   1  very_long_kernel_name_for_width\u2026        1   250 us");
  size_t gemm_row = position(text, "   2  gemm<128>                               5   208 us  52.0 us");
  CHECK(long_row < gemm_row);
  CHECK(position(text, "   4  reduce                                  2  15.0 us") > gemm_row);
  // Only revision 0 was written before the kill: it is the current one, matched by family_id.
  CHECK(position(text, "        MEMORY BOUND - first write (see [1])\n") > gemm_row);
  CHECK(position(text, "verdict   MEMORY BOUND - first write") > view);
  CHECK(position(text, "not profiled: the selection was not recorded") > long_row);
  CHECK(text.find("revised") == std::string::npos);
  for (const std::string& line : lines_of(text)) {
    if (line.find("name: ") == std::string::npos) CHECK(columns(line) <= 100);
  }

  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_trace_session());
  bytes += enc.kernel(testing::synthetic_profiled_gemm(0, "memory_bound: plain file"));
  const tools::ReadResult plain = tools::read_cutriage_bytes(bytes);
  const std::string report = tools::render_report(plain, {});
  CHECK(report.find("application view") == std::string::npos);
  CHECK(report.find("trace") == std::string::npos);
  CHECK(report.find("verdict   MEMORY BOUND - plain file") != std::string::npos);
}

TEST_CASE("report: long details and next actions are wrapped, not cut", "[report][trace]") {
  // The agent's detail for a graph-only family is several sentences long.
  wire::TraceSummary summary = testing::synthetic_trace_summary();
  const std::string detail =
      "launched only from CUDA graphs: the range profiler cannot replay a kernel inside a graph launch "
      "(on CUDA 13.0 auto-range replay of cuGraphLaunch gave no ranges and lost the graph's results), so "
      "graph kernels are traced and ranked but not profiled";
  summary.outcomes[4].selection_detail = detail;
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_trace_session());
  bytes += enc.family({4, "_Z11elementwisev", "elementwise", 0, {128, 1, 1}});
  bytes += enc.trace_summary(summary);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const std::string text = tools::render_report(r, {});
  INFO(text);
  std::string joined;  // the detail's words, from the wrapped lines
  for (const std::string& line : lines_of(text)) {
    if (line.find("name: ") == std::string::npos) CHECK(columns(line) <= 100);
    if (line.rfind("        not profiled: launched only", 0) == 0) {
      joined = line.substr(8);
    } else if (!joined.empty() && line.rfind("          ", 0) == 0 && joined.find("(graph only)") == std::string::npos) {
      joined += " " + line.substr(10);
    }
  }
  CHECK(joined == "not profiled: " + detail + " (graph only)");
  // Families without a name record are named by id.
  CHECK(text.find("family 1") != std::string::npos);
}

}  // namespace test_report_trace
