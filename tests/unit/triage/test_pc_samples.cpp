// PC samples as input to the triage rules: the text form the tests write samples in
// (pc_sample_text.h), and the replay of captured samples with their expected verdicts.
//
// Replay: every tests/data/pc_samples/*.txt is a capture of one kernel's samples in that text form
// (real H200 captures, when they are added), with %expect lines naming the verdicts the rules must
// reach on it. Each is run through every rule that reads samples; none may fail internally, and
// every expectation must hold. Without the directory the replay checks only the synthetic capture
// below, which exercises the same path.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "cutriage/triage/engine.h"
#include "cutriage/triage/rule.h"
#include "pc_sample_text.h"
#include "rule_test_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_pc_samples {

using namespace cutriage::triage;
using namespace cutriage::triage::test_support;

namespace {

// The rules that read KernelInput::pc_samples.
constexpr std::string_view kSampleRules[] = {
    "d0.pc_samples_dropped", "d3.dominant_stall",      "d3.low_eligible_warps",
    "d3.bytes_in_flight",    "d5.memory_fences",       "d6.hot_line",
    "d6.focused_stall_on_line", "d6.shared_helper",    "d6.sass_excess_transactions",
    "d6.absolute_sample_tracking", "d6.hot_line_convergence"};

void replay(const std::string& name, std::string_view text) {
  INFO("capture " << name);
  const PcSampleText parsed = parse_pc_samples(text);
  CHECK_FALSE(parsed.expectations.empty());  // a capture states what the rules must conclude
  KernelInput k = kernel_with_samples(text);
  for (std::string_view id : kSampleRules) {
    INFO(id);
    REQUIRE(find_rule(id) != nullptr);
    const CheckResult c = run(id, k);
    CHECK_FALSE(contains(c.reason, "internal error"));
  }
  for (const SampleExpectation& e : parsed.expectations) {
    INFO(e.rule << " " << e.outcome << " '" << e.text << "'");
    REQUIRE(find_rule(e.rule) != nullptr);
    const CheckResult c = run(e.rule, k);
    INFO("reason: " << c.reason);
    CHECK(to_string(c.outcome) == e.outcome);
    if (!e.text.empty()) {
      const bool in_reason = contains(c.reason, e.text);
      const bool in_finding = c.finding && (contains(c.finding->next_action, e.text) || c.finding->detail == e.text);
      CHECK((in_reason || in_finding));
    }
  }
  Diagnosis d;
  REQUIRE_NOTHROW(d = triage_kernel(k));
}

// Synthetic, in the capture format: a stencil whose shared-memory reads feed an FFMA.
constexpr std::string_view kSyntheticCapture = R"(
# synthetic capture: stencil, short_scoreboard on the consumer of an LDS
%kernel _Z7stencilPKfPf
%line_info
%period 11
%total 2100
%dropped 5
%from_launch 3
_Z7stencilPKfPf 0x0200 stencil.cu:18 | LDS R4, [R3+0x4] | smsp__pcsamp_warps_issue_stalled_selected=150 smsp__pcsamp_warps_issue_stalled_mio_throttle=90 smsp__pcsamp_warps_issue_stalled_mio_throttle_not_issued=80
_Z7stencilPKfPf 0x0210 stencil.cu:18 | LDS R5, [R3+0x8] | smsp__pcsamp_warps_issue_stalled_selected=140
_Z7stencilPKfPf 0x0230 stencil.cu:19 | FFMA R6, R4, R5, R6 | smsp__pcsamp_warps_issue_stalled_short_scoreboard=1100 smsp__pcsamp_warps_issue_stalled_short_scoreboard_not_issued=1050 smsp__pcsamp_warps_issue_stalled_not_selected=200
_Z7stencilPKfPf 0x0300 stencil.cu:25 | STG.E desc[UR4][R8.64], R6 | smsp__pcsamp_warps_issue_stalled_drain=120 smsp__pcsamp_warps_issue_stalled_wait=200
%expect d3.dominant_stall fired short_scoreboard
%expect d3.dominant_stall fired stencil.cu:19 (1100 samples, 100.0%)
%expect d3.dominant_stall fired likely producer is LDS R5, [R3+0x8] @0x210 (stencil.cu:18)
%expect d6.hot_line fired stencil.cu:19
%expect d6.focused_stall_on_line fired short_scoreboard at stencil.cu:19
%expect d0.pc_samples_dropped not_fired 5 of 2100
%expect d3.low_eligible_warps fired sampled
)";

}  // namespace

TEST_CASE("PC sample text: directives and sampled PCs parse into a PcSampleSummary", "[pc]") {
  const PcSampleText t = parse_pc_samples(kSyntheticCapture);
  CHECK(t.kernel == "_Z7stencilPKfPf");
  CHECK(t.samples.has_line_info);
  CHECK(t.samples.sampling_period_log2 == 11);
  CHECK(t.samples.total_samples == 2100);
  CHECK(t.samples.dropped_samples == 5);
  CHECK(t.samples.from_launch_index == 3);
  CHECK(t.samples.error.empty());
  REQUIRE(t.samples.lines.size() == 4);
  const PcSampleLine& ffma = t.samples.lines[2];
  CHECK(ffma.function == "_Z7stencilPKfPf");
  CHECK(ffma.pc_offset == 0x230);
  CHECK(ffma.file == "stencil.cu");
  CHECK(ffma.line == 19);
  CHECK(ffma.sass == "FFMA R6, R4, R5, R6");
  CHECK(ffma.samples_by_reason.at("smsp__pcsamp_warps_issue_stalled_short_scoreboard") == 1100);
  CHECK(t.expectations.size() == 7);

  const PcSampleText bare = parse_pc_samples("%error CUPTI_ERROR_UNKNOWN: sampler\nk 0x10 - | | wait=3\n");
  CHECK(bare.samples.error == "CUPTI_ERROR_UNKNOWN: sampler");
  CHECK(bare.samples.total_samples == 3);  // the sum when %total is absent
  CHECK(bare.samples.lines[0].file.empty());
  CHECK(bare.samples.lines[0].sass.empty());
}

TEST_CASE("replay: the synthetic capture meets its expectations", "[pc][replay]") {
  replay("synthetic stencil", kSyntheticCapture);
}

TEST_CASE("replay: captured PC samples in tests/data/pc_samples meet their expectations", "[pc][replay]") {
  const std::filesystem::path dir = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "pc_samples";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    SUCCEED("no captures in " << dir.string());
    return;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  for (const auto& f : files) {
    std::ifstream in(f);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    replay(f.filename().string(), text.str());
  }
}

}  // namespace test_pc_samples
