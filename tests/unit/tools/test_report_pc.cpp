// The report's "source" section (PC sampling per source line) on the SYNTHETIC samples of
// pc_sampling_fixture.h: the lines with the most stall samples, shares, dominant reasons, the
// hottest instruction, the totals and the notes; without nvdisasm (PCs as offsets) and with a
// stand-in for it.
#include <string>
#include <vector>

#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "nvdisasm_stub.h"
#include "pc_sampling_fixture.h"
#include "report.h"
#include "report_text.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_report_pc {

using namespace cutriage;
using testing::columns;
using testing::lines_of;
using testing::SyntheticPc;

namespace {

// The lines of `text` from the one starting with `first` up to (without) the next empty line.
std::string block(const std::string& text, const std::string& first) {
  size_t at = text.find(first);
  INFO("looking for: " << first << "\nin:\n" << text);
  REQUIRE(at != std::string::npos);
  size_t end = text.find("\n\n", at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string report(const std::string& bytes, const tools::NvdisasmSearch& search, bool verbose = false) {
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  tools::ReportOptions options;
  options.verbose = verbose;
  options.nvdisasm = search;
  return tools::render_report(r, options);
}

}  // namespace

TEST_CASE("report: source lines of a sampled kernel, PCs as offsets without nvdisasm", "[report][pc]") {
  const std::string text = report(testing::synthetic_pc_file(), testing::no_nvdisasm());
  INFO(text);
  // The whole section of the stencil kernel, as a user reads it.
  const std::string stencil = block(text, "    source    PC sampling of launch #18");
  CHECK(stencil ==
        "    source    PC sampling of launch #18: 1,095 samples (965 stalls), 7 dropped (the sampler's\n"
        "              buffers filled: shares are approximate), one sample per SM every 2^12 cycles\n"
        "               #  location                              stalls   share  dominant stall\n"
        "               1  src/stencil.cu:5                         700   72.5%  long_scoreboard 85.7%\n"
        "                  pc 0x0110\n"
        "               2  src/stencil.cu:6                         120   12.4%  wait 75.0%\n"
        "                  pc 0x0130\n"
        "               3  src/stencil.cu:7                          60    6.2%  lg_throttle 66.7%\n"
        "                  0x01a0  STG.E desc[UR4][R2.64], R9\n"
        "               4  src/common.cuh:12                         45    4.7%  math_pipe_throttle 100.0%\n"
        "                  pc 0x0010 in helper\n"
        "               5  src/stencil.cu:4                          25    2.6%  imc_miss 100.0%\n"
        "                  pc 0x0040\n"
        "              (2 more lines, 1.6% of the stall samples; --verbose lists 20)\n"
        "              note: nvdisasm not found (looked in $CUTRIAGE_NVDISASM, $PATH, $CUDA_HOME/bin): PCs\n"
        "                    are shown as offsets, without SASS; install the CUDA toolkit or set\n"
        "                    CUTRIAGE_NVDISASM\n");
  // The section sits in the kernel's block, after its verdict.
  CHECK(text.find("verdict   LATENCY BOUND - long_scoreboard stalls") < text.find("    source    PC sampling of launch #18"));

  // Without line information: the PC and its function stand for the line, and a note says why.
  CHECK(block(text, "    source    PC sampling of launch #31") ==
        "    source    PC sampling of launch #31: 80 samples (60 stalls), one sample per SM every 2^10 cycles\n"
        "               #  location                              stalls   share  dominant stall\n"
        "               1  pc 0x0050 in scale                        60  100.0%  long_scoreboard 100.0%\n"
        "              note: built without -lineinfo: showing SASS offsets\n");
  // A failed sampling says why, and nothing else.
  CHECK(block(text, "    source    PC sampling of launch #41") ==
        "    source    PC sampling of launch #41 failed: cuptiPCSamplingEnable:\n"
        "              CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n");
  // One section per sampled kernel, none for the kernel never sampled, the nvdisasm note once.
  CHECK(count_of(text, "    source    ") == 3);
  CHECK(count_of(text, "nvdisasm not found") == 1);
  for (const std::string& line : lines_of(text)) {
    INFO(line);
    CHECK(columns(line) <= 100);
  }
}

TEST_CASE("report: with nvdisasm each line shows its hottest instruction", "[report][pc][sass]") {
  const std::string dir = testing::temp_dir("report");
  testing::write_fake_nvdisasm(dir + "/nvdisasm", SyntheticPc::kKernelCodeBytes);
  const std::string text = report(testing::synthetic_pc_file(), testing::nvdisasm_only_in(dir), true);
  INFO(text);
  const std::string stencil = block(text, "    source    PC sampling of launch #18");
  CHECK(stencil.find("               1  src/stencil.cu:5                         700   72.5%  long_scoreboard 85.7%\n"
                     "                  0x0110  FADD R0, R0, R7\n") != std::string::npos);
  CHECK(stencil.find("                  0x01a0  STG.E desc[UR4][R2.64], R9\n") != std::string::npos);
  // The stand-in refuses the helper's body: its PC stays an offset, and the failure is said once.
  CHECK(stencil.find("                  pc 0x0010 in helper\n") != std::string::npos);
  CHECK(count_of(text, "note: nvdisasm failed on _Z6helperf: nvdisasm exited with status 1:") == 1);
  // --verbose lists every line with stall samples (six here); the issue-only line is left out.
  CHECK(stencil.find("               6  src/stencil.cu:8                          15    1.6%  branch_resolving 100.0%\n")
        != std::string::npos);
  CHECK(stencil.find("src/stencil.cu:3") == std::string::npos);
  CHECK(stencil.find("more line") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("report: only issue states, no samples, a full buffer, a long path", "[report][pc]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_pc_session());
  wire::KernelRecord issuing = testing::synthetic_pc_kernel();
  issuing.input.pc_samples->lines = {testing::synthetic_pc(
      "src/stencil.cu", 3, 0x20, SyntheticPc::kKernel,
      {{testing::pcsamp("selected"), 30}, {testing::pcsamp("not_selected"), 5}})};
  issuing.input.pc_samples->total_samples = 35;
  issuing.input.pc_samples->dropped_samples = 0;
  issuing.input.pc_samples->hardware_buffer_full = true;
  issuing.pc_code.clear();
  bytes += enc.kernel(issuing);
  wire::KernelRecord empty = testing::synthetic_pc_kernel_without_lines();
  empty.input.pc_samples->lines.clear();
  empty.input.pc_samples->total_samples = 0;
  empty.input.pc_samples->has_line_info = true;
  bytes += enc.kernel(empty);
  wire::KernelRecord deep = testing::synthetic_pc_kernel();
  deep.input.launch_index = 60;
  deep.input.pc_samples->from_launch_index = 0;
  deep.input.mangled_name = "_Z4deepv";
  for (triage::PcSampleLine& l : deep.input.pc_samples->lines) {
    if (!l.file.empty()) l.file = "/home/someone/projects/a/rather/long/path/to/the/sources/" + l.file;
  }
  bytes += enc.kernel(deep);
  wire::KernelRecord long_name = testing::synthetic_pc_kernel_without_lines();
  long_name.input.mangled_name = "_Z34a_very_long_kernel_name_for_widthsPfi";
  long_name.input.launch_index = 70;
  long_name.input.pc_samples->from_launch_index = 71;
  long_name.input.pc_samples->lines[0].function = long_name.input.mangled_name;
  bytes += enc.kernel(long_name);

  const std::string text = report(bytes, testing::no_nvdisasm());
  INFO(text);
  CHECK(block(text, "    source    PC sampling of launch #18") ==
        "    source    PC sampling of launch #18: 35 samples (0 stalls), one sample per SM every 2^12 cycles,\n"
        "              hardware buffer full\n"
        "              no stall samples: every sample found the warp issuing or eligible (selected,\n"
        "              not_selected)\n");
  CHECK(block(text, "    source    PC sampling of launch #31") ==
        "    source    PC sampling of launch #31: 0 samples (0 stalls), one sample per SM every 2^10 cycles\n"
        "              no samples were taken on this launch\n");
  // A path too long for the column keeps its end, where the file name and line are; the record's
  // own launch stands in when the sampled launch is not named.
  const std::string deep_section = block(text, "    source    PC sampling of launch #60");
  CHECK(deep_section.find("               1  \u2026ath/to/the/sources/src/stencil.cu:5     700") != std::string::npos);
  // Without a line the PC leads, so a long function name is cut at its end instead.
  CHECK(block(text, "    source    PC sampling of launch #71").find(
            "               1  pc 0x0050 in a_very_long_kernel_nam\u2026      60  100.0%") != std::string::npos);
  for (const std::string& line : lines_of(text)) {
    INFO(line);
    CHECK(columns(line) <= 100);
  }
}

}  // namespace test_report_pc
