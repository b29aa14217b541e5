// Decision 6 rules, one at a time. All PC samples here are synthetic.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "catch.h"
#include "cutriage/triage/rule.h"
#include "pc_sample_text.h"
#include "rule_test_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rules_d6 {

using namespace cutriage::triage;
using namespace cutriage::triage::test_support;

namespace {

PcSampleLine line(std::string file, uint32_t ln, uint64_t pc, std::string sass, std::string function,
                  std::map<std::string, uint64_t> reasons) {
  PcSampleLine l;
  l.file = std::move(file);
  l.line = ln;
  l.pc_offset = pc;
  l.sass = std::move(sass);
  l.function = std::move(function);
  l.samples_by_reason = std::move(reasons);
  return l;
}

KernelInput kernel() {
  KernelInput k;
  k.mangled_name = "_Z6kernelPf";
  k.demangled_name = "kernel(float*)";
  k.function_name = "kernel";
  return k;
}

// A hot load consumer at gather.cu:42 (long_scoreboard), a colder barrier line, and a large
// `selected` count that must not be treated as a stall.
KernelInput hot_kernel(bool line_info = true) {
  KernelInput k = kernel();
  PcSampleSummary s;
  s.has_line_info = line_info;
  s.lines.push_back(line(line_info ? "gather.cu" : "", 42, 0x1a0, "FFMA R4, R2, R3, R4", "kernel",
                         {{"long_scoreboard", 500}, {"wait", 50}, {"selected", 5000}}));
  s.lines.push_back(line(line_info ? "gather.cu" : "", 42, 0x1b0, "IADD3 R5, R5, 1, RZ", "kernel",
                         {{"long_scoreboard", 100}}));
  s.lines.push_back(line(line_info ? "gather.cu" : "", 57, 0x2c0, "BAR.SYNC 0", "kernel",
                         {{"barrier", 200}, {"not_selected", 3000}}));
  s.lines.push_back(line(line_info ? "gather.cu" : "", 60, 0x300, "STG.E [R2], R4", "kernel",
                         {{"drain", 150}}));
  for (const auto& l : s.lines) {
    for (const auto& [r, c] : l.samples_by_reason) s.total_samples += c;
  }
  k.pc_samples = s;
  return k;
}

KernelInput flat_kernel() {
  KernelInput k = kernel();
  PcSampleSummary s;
  s.has_line_info = true;
  for (uint32_t i = 0; i < 10; ++i) {
    s.lines.push_back(line("flat.cu", 10 + i, uint64_t{0x10} * i, "FFMA", "kernel",
                           {{"long_scoreboard", 40}, {"wait", 30}, {"mio_throttle", 30}}));
  }
  k.pc_samples = s;
  return k;
}

}  // namespace

TEST_CASE("d6 rules are well formed and need PC samples", "[d6]") {
  auto rules = rules_for(Decision::kD6SourceLines);
  REQUIRE(rules.size() >= 6);
  KernelInput none = kernel();
  for (const Rule* r : rules) {
    INFO(r->id);
    CHECK(r->id.substr(0, 3) == "d6.");
    CHECK(!r->title.empty());
    CHECK(!r->next_action.empty());
    for (const ThresholdDef& t : r->thresholds) CHECK(!t.note.empty());
    auto c = run(r->id, none);
    CHECK(c.outcome == Outcome::kNotEvaluated);
    CHECK(contains(c.reason, "no PC samples"));
  }
}

TEST_CASE("d6.hot_line (synthetic)", "[d6]") {
  auto c = run("d6.hot_line", hot_kernel());
  REQUIRE(c.outcome == Outcome::kFired);
  REQUIRE(c.finding);
  CHECK(c.finding->limiter == Limiter::kHotSourceLine);
  CHECK(c.finding->detail == "gather.cu:42");
  // 650 of 1000 stall samples: selected/not_selected are excluded.
  CHECK(contains(c.reason, "650 of 1000"));
  CHECK(contains(c.reason, "65.0%"));
  CHECK(contains(c.reason, "FFMA R4, R2, R3, R4"));
  CHECK_FALSE(contains(c.reason, "-lineinfo"));

  auto flat = run("d6.hot_line", flat_kernel());
  CHECK(flat.outcome == Outcome::kNotFired);
  CHECK(contains(flat.reason, "10.0%"));
}

TEST_CASE("d6.hot_line without line info reports SASS offsets (synthetic)", "[d6]") {
  auto c = run("d6.hot_line", hot_kernel(false));
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(contains(c.reason, "-lineinfo"));
  CHECK(contains(c.finding->detail, "0x1a0"));
  CHECK(contains(c.reason, "550 of 1000"));
}

TEST_CASE("d6 rules with only issue-state samples are not evaluated (synthetic)", "[d6]") {
  KernelInput k = kernel();
  PcSampleSummary s;
  s.has_line_info = true;
  s.lines.push_back(line("a.cu", 1, 0, "FFMA", "kernel", {{"selected", 100}, {"not_selected", 50}}));
  k.pc_samples = s;
  for (std::string_view id : {"d6.hot_line", "d6.focused_stall_on_line", "d6.shared_helper"}) {
    INFO(id);
    auto c = run(id, k);
    CHECK(c.outcome == Outcome::kNotEvaluated);
    CHECK(contains(c.reason, "no stall samples"));
  }
}

TEST_CASE("d6.focused_stall_on_line (synthetic)", "[d6]") {
  auto c = run("d6.focused_stall_on_line", hot_kernel());
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(c.finding->limiter == Limiter::kFocusedStallOnLine);
  CHECK(c.finding->detail == "long_scoreboard at gather.cu:42");
  CHECK(contains(c.finding->next_action, "gather.cu:42"));
  CHECK(contains(c.finding->next_action, "latency"));

  auto flat = run("d6.focused_stall_on_line", flat_kernel());
  CHECK(flat.outcome == Outcome::kNotFired);
}

TEST_CASE("d6 checks that need data cutriage does not collect are not evaluated", "[d6]") {
  for (std::string_view id :
       {"d6.sass_excess_transactions", "d6.absolute_sample_tracking", "d6.hot_line_convergence"}) {
    INFO(id);
    auto c = run(id, hot_kernel());
    CHECK(c.outcome == Outcome::kNotEvaluated);
    CHECK(!c.reason.empty());
    CHECK_FALSE(contains(c.reason, "no PC samples"));
  }
}

TEST_CASE("d6.shared_helper (synthetic)", "[d6]") {
  KernelInput k = kernel();
  PcSampleSummary s;
  s.has_line_info = true;
  s.lines.push_back(line("math.cuh", 12, 0x40, "MUFU.EX2", "fast_exp", {{"short_scoreboard", 700}}));
  s.lines.push_back(line("k.cu", 30, 0x90, "FFMA", "kernel", {{"wait", 300}}));
  k.pc_samples = s;
  auto c = run("d6.shared_helper", k);
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(c.finding->detail == "fast_exp");
  CHECK(contains(c.reason, "70.0%"));

  auto own = run("d6.shared_helper", hot_kernel());
  CHECK(own.outcome == Outcome::kNotFired);

  KernelInput mangled = kernel();
  PcSampleSummary s2;
  s2.lines.push_back(line("", 0, 0x40, "LDG", "_Z6kernelPf", {{"long_scoreboard", 700}}));
  mangled.pc_samples = s2;
  CHECK(run("d6.shared_helper", mangled).outcome == Outcome::kNotFired);

  KernelInput nameless = kernel();
  PcSampleSummary s3;
  s3.lines.push_back(line("", 0, 0x40, "LDG", "", {{"long_scoreboard", 700}}));
  nameless.pc_samples = s3;
  CHECK(run("d6.shared_helper", nameless).outcome == Outcome::kNotEvaluated);
}

TEST_CASE("d6 rules say why when PC sampling failed (synthetic)", "[d6][pc]") {
  KernelInput k = kernel();
  PcSampleSummary s;
  s.error = "cuptiPCSamplingEnable: CUPTI_ERROR_NOT_SUPPORTED";
  k.pc_samples = s;
  for (const Rule* r : rules_for(Decision::kD6SourceLines)) {
    INFO(r->id);
    auto c = run(r->id, k);
    CHECK(c.outcome == Outcome::kNotEvaluated);
    CHECK(contains(c.reason, "PC sampling failed: cuptiPCSamplingEnable: CUPTI_ERROR_NOT_SUPPORTED"));
  }
}

TEST_CASE("d6 share checks refuse kernels with too few stall samples (synthetic)", "[d6][pc]") {
  // 99 stall samples, all on one line: a 100% share of almost nothing.
  KernelInput k = kernel_with_samples(R"(
%line_info
kernel 0x10 few.cu:3 | FFMA R1, R2, R3, R1 | long_scoreboard=99 selected=4000
helper 0x20 few.cu:9 | MUFU.EX2 R4, R4 | selected=10
)");
  for (std::string_view id : {"d6.hot_line", "d6.focused_stall_on_line", "d6.shared_helper"}) {
    INFO(id);
    auto c = run(id, k);
    CHECK(c.outcome == Outcome::kNotEvaluated);
    CHECK(contains(c.reason, "only 99 stall samples (< 100)"));
  }
  // At the threshold they are evaluated; an override can lower it.
  Thresholds t;
  t.set("d6.hot_line.min_stall_samples", 50);
  CHECK(run("d6.hot_line", k, t).outcome == Outcome::kFired);
}

TEST_CASE("d6 counts each warp state once across the device's spellings (synthetic)", "[d6][pc]") {
  // The same kernel as hot_kernel(), in the names the CUDA 13 PC sampling API reports: every
  // state with its _not_issued subset, plus a sample-count total that is not a warp state.
  KernelInput k = kernel_with_samples(R"(
%line_info
kernel 0x1a0 gather.cu:42 | FFMA R4, R2, R3, R4 | smsp__pcsamp_warps_issue_stalled_long_scoreboard=500 smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued=480 smsp__pcsamp_warps_issue_stalled_wait=50 smsp__pcsamp_warps_issue_stalled_wait_not_issued=10 smsp__pcsamp_warps_issue_stalled_selected=5000 smsp__pcsamp_sample_count=9999
kernel 0x1b0 gather.cu:42 | IADD3 R5, R5, 1, RZ | smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued=100
kernel 0x2c0 gather.cu:57 | BAR.SYNC 0 | smsp__pcsamp_warps_issue_stalled_barrier=200 smsp__pcsamp_warps_issue_stalled_not_selected=3000
kernel 0x300 gather.cu:60 | STG.E [R2], R4 | smsp__pcsamp_warps_issue_stalled_drain=150 smsp__pcsamp_warps_issue_stalled_drain_not_issued=150
)");
  auto c = run("d6.hot_line", k);
  REQUIRE(c.outcome == Outcome::kFired);
  CHECK(contains(c.reason, "650 of 1000"));  // as with the bare names
  CHECK(c.finding->detail == "gather.cu:42");

  auto f = run("d6.focused_stall_on_line", k);
  REQUIRE(f.outcome == Outcome::kFired);
  CHECK(f.finding->detail == "long_scoreboard at gather.cu:42");
}

TEST_CASE("d6.focused_stall_on_line points from the consumer to the producing load (synthetic)", "[d6][pc]") {
  auto c = run("d6.focused_stall_on_line", kernel_with_samples(R"(
%line_info
kernel 0x180 gather.cu:41 | @P0 LDG.E.CONSTANT R2, desc[UR4][R6.64] | selected=40
kernel 0x1a0 gather.cu:42 | FFMA R4, R2, R3, R4 | long_scoreboard=500 wait=50
kernel 0x2c0 gather.cu:57 | BAR.SYNC 0 | barrier=200
)"));
  REQUIRE(c.outcome == Outcome::kFired);
  const std::string& action = c.finding->next_action;
  CHECK(contains(action, "At gather.cu:42: The long_scoreboard samples sit on the instruction that waits for "
                         "the result (FFMA R4, R2, R3, R4 @0x1a0)"));
  CHECK(contains(action, "likely producer is @P0 LDG.E.CONSTANT R2, desc[UR4][R6.64] @0x180 (gather.cu:41)"));

  // A line dominated by a non-scoreboard reason gets no producer sentence.
  auto b = run("d6.focused_stall_on_line", kernel_with_samples(R"(
%line_info
kernel 0x2c0 sync.cu:57 | BAR.SYNC 0 | barrier=500 wait=50
)"));
  REQUIRE(b.outcome == Outcome::kFired);
  CHECK_FALSE(contains(b.finding->next_action, "producer"));
}

TEST_CASE("d6.hot_line says which launch was sampled (synthetic)", "[d6][pc]") {
  KernelInput k = hot_kernel();
  k.launch_index = 9;
  k.pc_samples->from_launch_index = 12;
  CHECK(contains(run("d6.hot_line", k).reason, "(sampled on launch 12)"));
  k.pc_samples->from_launch_index = 9;
  CHECK_FALSE(contains(run("d6.hot_line", k).reason, "sampled on launch"));
}

}  // namespace test_rules_d6
