// SASS for sampled PCs (tools/src/sass.h): the nvdisasm output parser on listings nvdisasm really
// printed, the architecture names, the search for nvdisasm, the run (against a stand-in script,
// since neither this machine nor CI has NVIDIA's tools) and the degraded path without nvdisasm.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "nvdisasm_stub.h"
#include "pc_sampling_fixture.h"
#include "sass.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_sass {

using namespace cutriage;
using cutriage::testing::kRawListing;
using cutriage::testing::temp_dir;
using cutriage::testing::write_fake_nvdisasm;
using cutriage::testing::write_script;

namespace {

// The same run with -hex: each instruction's 128-bit encoding follows as two comments.
constexpr const char* kHexListing =
    "\t.headerflags\t@\"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */\n"
    "                                                                       /* 0x000fe20000000800 */\n"
    "        /*0090*/               @P0 EXIT ;                              /* 0x000000000000094d */\n"
    "                                                                       /* 0x000fea0003800000 */\n"
    "        /*01f0*/                   BRA 0x1f0;                          /* 0xfffffffc00fc7947 */\n"
    "                                                                       /* 0xfffffffc00fc7947 */\n";

// And on the cubin itself with -g: sections, symbols, labels and line comments around the code.
constexpr const char* kCubinListing =
    "//--------------------- .text._Z7stencilPKfPfi    --------------------------\n"
    "\t.section\t.text._Z7stencilPKfPfi,\"ax\",@progbits\n"
    "\t.align\t128\n"
    "_Z7stencilPKfPfi:\n"
    ".text._Z7stencilPKfPfi:\n"
    "\t//## File \"/tmp/sass_probe/k.cu\", line 2\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0140*/              @!P0 BRA `(.L_x_1) ;\n"
    ".L_x_1:\n"
    "        /*0170*/                   BSYNC B0 ;\n";

std::map<std::string, std::string> g_env;  // the environment find_nvdisasm sees in a test
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

}  // namespace

TEST_CASE("sass: nvdisasm's raw-binary listing parses into offset -> instruction", "[sass]") {
  const tools::SassListing l = tools::parse_nvdisasm(kRawListing);
  CHECK(l.size() == 12);
  CHECK(l.at(0x0000) == "LDC R1, c[0x0][0x28]");
  CHECK(l.at(0x0090) == "@P0 EXIT");
  CHECK(l.at(0x00d0) == "LDG.E R0, desc[UR4][R2.64]");
  CHECK(l.at(0x00e0) == "LDG.E R7, desc[UR4][R2.64+-0x4]");
  CHECK(l.at(0x0140) == "@!P0 BRA 0x170");
  CHECK(l.at(0x01f0) == "BRA 0x1f0");  // no blank before ';'
  CHECK(l.at(0x0200) == "NOP");
  CHECK(l.count(0x0020) == 0);
}

TEST_CASE("sass: -hex encodings, cubin sections, labels and line comments are skipped", "[sass]") {
  const tools::SassListing hex = tools::parse_nvdisasm(kHexListing);
  CHECK(hex.size() == 3);
  CHECK(hex.at(0x0000) == "LDC R1, c[0x0][0x28]");
  CHECK(hex.at(0x0090) == "@P0 EXIT");
  CHECK(hex.at(0x01f0) == "BRA 0x1f0");
  const tools::SassListing cubin = tools::parse_nvdisasm(kCubinListing);
  CHECK(cubin.size() == 3);
  CHECK(cubin.at(0x0140) == "@!P0 BRA `(.L_x_1)");
  CHECK(cubin.at(0x0170) == "BSYNC B0");
  // Not instructions: empty text, a comment that only looks like an offset, garbage, CRLF.
  const tools::SassListing odd = tools::parse_nvdisasm(
      "/*0010*/ ;\n/*zz*/ MOV R1, R2 ;\n/*00000000000000000020*/ MOV R1, R2 ;\n"
      "  /*0030*/  { IADD R0, R0, 0x1 ; }\r\n/*0040*/   MOV   R1,   R2 ;\r\n");
  CHECK(odd.size() == 2);
  CHECK(odd.at(0x0030) == "IADD R0, R0, 0x1");
  CHECK(odd.at(0x0040) == "MOV R1, R2");
  CHECK(tools::parse_nvdisasm("").empty());
  CHECK(tools::parse_nvdisasm("nvdisasm fatal   : Cannot open object file /nonexistent\n").empty());
}

TEST_CASE("sass: sm_ names map to nvdisasm --binary's", "[sass]") {
  CHECK(tools::nvdisasm_arch("sm_90") == "SM90");
  CHECK(tools::nvdisasm_arch("sm_90a") == "SM90a");
  CHECK(tools::nvdisasm_arch("sm_120a") == "SM120a");
  CHECK_FALSE(tools::nvdisasm_arch(""));
  CHECK_FALSE(tools::nvdisasm_arch("sm_"));
  CHECK_FALSE(tools::nvdisasm_arch("90"));
  CHECK_FALSE(tools::nvdisasm_arch("compute_90"));
  CHECK_FALSE(tools::nvdisasm_arch("sm_90 -o x"));
  CHECK_FALSE(tools::nvdisasm_arch("sm_90A"));
  CHECK_FALSE(tools::nvdisasm_arch("sm_90ab"));
}

TEST_CASE("sass: nvdisasm is looked for in CUTRIAGE_NVDISASM, PATH, CUDA_HOME, then the defaults", "[sass]") {
  const std::string dir = temp_dir("search");
  std::filesystem::create_directories(dir + "/path/bin");
  std::filesystem::create_directories(dir + "/cuda/bin");
  std::filesystem::create_directories(dir + "/default");
  std::filesystem::create_directories(dir + "/empty");
  write_script(dir + "/cuda/bin/nvdisasm", "exit 0\n");
  write_script(dir + "/default/nvdisasm", "exit 0\n");
  {
    std::ofstream(dir + "/path/bin/nvdisasm") << "not executable";
  }
  tools::NvdisasmSearch search;
  search.getenv = fake_getenv;
  search.fallback_dirs = {dir + "/default"};

  g_env = {{"PATH", ":" + dir + "/empty:" + dir + "/path/bin"}, {"CUDA_HOME", dir + "/cuda"}};
  CHECK(tools::find_nvdisasm(search).path == dir + "/cuda/bin/nvdisasm");  // PATH's is not executable
  g_env = {{"PATH", dir + "/empty"}};
  CHECK(tools::find_nvdisasm(search).path == dir + "/default/nvdisasm");
  write_script(dir + "/empty/nvdisasm", "exit 0\n");
  CHECK(tools::find_nvdisasm(search).path == dir + "/empty/nvdisasm");

  // An explicit path is the only place looked.
  g_env = {{"CUTRIAGE_NVDISASM", dir + "/default/nvdisasm"}, {"PATH", dir + "/empty"}};
  CHECK(tools::find_nvdisasm(search).path == dir + "/default/nvdisasm");
  g_env = {{"CUTRIAGE_NVDISASM", dir + "/path/bin/nvdisasm"}, {"PATH", dir + "/empty"}};
  tools::NvdisasmLookup bad = tools::find_nvdisasm(search);
  CHECK(bad.path.empty());
  CHECK(bad.note == "CUTRIAGE_NVDISASM=" + dir + "/path/bin/nvdisasm is not an executable file: PCs are "
                    "shown as offsets, without SASS");

  g_env = {{"PATH", dir + "/path/bin"}};
  search.fallback_dirs = {dir + "/nowhere"};
  tools::NvdisasmLookup none = tools::find_nvdisasm(search);
  CHECK(none.path.empty());
  CHECK(none.note == "nvdisasm not found (looked in $CUTRIAGE_NVDISASM, $PATH, $CUDA_HOME/bin, " + dir +
                         "/nowhere): PCs are shown as offsets, without SASS; install the CUDA toolkit or "
                         "set CUTRIAGE_NVDISASM");
  std::filesystem::remove_all(dir);
}

TEST_CASE("sass: run_nvdisasm passes the code and the architecture, and reports nvdisasm's failure",
          "[sass]") {
  const std::string dir = temp_dir("run");
  const std::string fake = dir + "/nvdisasm";
  const std::string code(0x280, '\x5a');
  write_fake_nvdisasm(fake, code.size());
  tools::SassListing listing;
  REQUIRE_FALSE(tools::run_nvdisasm(fake, "sm_90", code, listing));
  CHECK(listing.size() == 12);
  CHECK(listing.at(0x0110) == "FADD R0, R0, R7");

  std::optional<tools::SassError> e = tools::run_nvdisasm(fake, "sm_90a", code, listing);
  REQUIRE(e);
  CHECK(e->message == "nvdisasm exited with status 1: nvdisasm fatal : Value 'SM90a' is not defined for "
                      "option 'binary'");
  CHECK(listing.empty());
  e = tools::run_nvdisasm(fake, "sm_90", code.substr(1), listing);
  REQUIRE(e);
  CHECK(e->message == "nvdisasm exited with status 1: nvdisasm fatal : unexpected input size");
  e = tools::run_nvdisasm(fake, "gfx90a", code, listing);
  REQUIRE(e);
  CHECK(e->message == "no nvdisasm architecture for 'gfx90a'");
  e = tools::run_nvdisasm(dir + "/missing", "sm_90", code, listing);
  REQUIRE(e);
  CHECK(e->message == "cannot run " + dir + "/missing: No such file or directory");
  write_script(dir + "/silent", "exit 0\n");
  e = tools::run_nvdisasm(dir + "/silent", "sm_90", code, listing);
  REQUIRE(e);
  CHECK(e->message == "nvdisasm printed no instructions: no message");
  // The code's temporary file is gone whatever happened: nothing named cutriage-sass-* is left
  // in a TMPDIR of our own.
  const std::string tmp = dir + "/tmp";
  std::filesystem::create_directories(tmp);
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir != nullptr ? old_tmpdir : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): no other thread runs here
  (void)tools::run_nvdisasm(fake, "sm_90", code, listing);
  (void)tools::run_nvdisasm(fake, "sm_90a", code, listing);
  if (old_tmpdir != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);  // NOLINT(concurrency-mt-unsafe): as above
  } else {
    ::unsetenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): as above
  }
  CHECK(std::filesystem::is_empty(tmp));
  std::filesystem::remove_all(dir);
}

TEST_CASE("sass: the resolver disassembles each body once and says once that nvdisasm is missing",
          "[sass]") {
  wire::RecordEncoder enc;
  const std::string bytes = enc.session(testing::synthetic_pc_session()) + enc.kernel(testing::synthetic_pc_kernel());
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const v1::PcSampling& pcs = tools::current_kernels(r).at(0)->pc_sampling();
  using P = testing::SyntheticPc;

  const std::string dir = temp_dir("resolver");
  tools::NvdisasmSearch none;
  none.getenv = fake_getenv;
  none.fallback_dirs = {dir + "/nowhere"};
  g_env = {{"PATH", dir}};
  tools::SassResolver missing(none);
  CHECK(missing.instruction(r, pcs, P::kKernel, 0x0110).empty());
  CHECK(missing.instruction(r, pcs, P::kHelper, 0x0010).empty());
  std::vector<std::string> notes = missing.take_notes();
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].rfind("nvdisasm not found (looked in", 0) == 0);
  CHECK(missing.instruction(r, pcs, P::kKernel, 0x00d0).empty());
  CHECK(missing.take_notes().empty());  // said once

  // With a stand-in nvdisasm that counts its runs.
  write_fake_nvdisasm(dir + "/real", P::kKernelCodeBytes);
  write_script(dir + "/nvdisasm", "echo run >> '" + dir + "/runs'\nexec '" + dir + "/real' \"$@\"\n");
  tools::SassResolver found(none);
  CHECK(found.instruction(r, pcs, P::kKernel, 0x0110) == "FADD R0, R0, R7");
  CHECK(found.instruction(r, pcs, P::kKernel, 0x00d0) == "LDG.E R0, desc[UR4][R2.64]");
  CHECK(found.instruction(r, pcs, P::kKernel, 0x0118).empty());  // inside an instruction
  CHECK(found.instruction(r, pcs, "_Z7unknownv", 0x0110).empty());  // no code for it
  // The helper's body has another size: the stand-in fails on it, once, with nvdisasm's words.
  CHECK(found.instruction(r, pcs, P::kHelper, 0x0010).empty());
  CHECK(found.instruction(r, pcs, P::kHelper, 0x0020).empty());
  notes = found.take_notes();
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "nvdisasm failed on _Z6helperf: nvdisasm exited with status 1: nvdisasm fatal : "
                    "unexpected input size");
  std::ifstream runs(dir + "/runs");
  std::ostringstream all;
  all << runs.rdbuf();
  CHECK(all.str() == "run\nrun\n");  // the kernel once, the helper once
  std::filesystem::remove_all(dir);
}

TEST_CASE("sass: prefetch runs nvdisasm for the shown bodies side by side, then serves them from its cache",
          "[sass]") {
  wire::RecordEncoder enc;
  const std::string bytes = enc.session(testing::synthetic_pc_session()) + enc.kernel(testing::synthetic_pc_kernel());
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const std::vector<const v1::KernelProfile*> kernels = tools::current_kernels(r);
  const v1::PcSampling& pcs = kernels.at(0)->pc_sampling();
  using P = testing::SyntheticPc;

  const std::string dir = temp_dir("prefetch");
  write_fake_nvdisasm(dir + "/real", P::kKernelCodeBytes);
  // Each run waits for the other to have started before it answers (a rendezvous, not a clock:
  // run one after the other, the first gives up after its wait and fails), so both bodies can be
  // disassembled only when the two processes run at once.
  write_script(dir + "/nvdisasm", "echo run >> '" + dir + "/runs'\n"
                                  "touch '" + dir + "/started.'$$\n"
                                  "i=0\n"
                                  "while [ \"$(ls '" + dir + "' | grep -c '^started')\" -lt 2 ]; do\n"
                                  "  i=$((i+1)); [ $i -gt 300 ] && { echo 'nvdisasm fatal : alone' >&2; exit 3; }\n"
                                  "  sleep 0.05\n"
                                  "done\n"
                                  "exec '" + dir + "/real' \"$@\"\n");
  tools::NvdisasmSearch search;
  search.getenv = fake_getenv;
  search.fallback_dirs.clear();
  g_env = {{"PATH", dir}};
  tools::SassResolver sass(search);
  sass.prefetch(r, kernels, 2);
  CHECK(sass.take_notes().empty());  // said where the PCs are shown, not here
  CHECK(sass.instruction(r, pcs, P::kKernel, 0x0110) == "FADD R0, R0, R7");
  CHECK(sass.take_notes().empty());
  // The helper's body has another size than the stand-in expects: its failure is nvdisasm's own
  // words, not the rendezvous giving up, said once when its PC is first asked for.
  CHECK(sass.instruction(r, pcs, P::kHelper, 0x0010).empty());
  std::vector<std::string> notes = sass.take_notes();
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "nvdisasm failed on _Z6helperf: nvdisasm exited with status 1: nvdisasm fatal : "
                    "unexpected input size");
  CHECK(sass.instruction(r, pcs, P::kHelper, 0x0020).empty());
  CHECK(sass.take_notes().empty());
  sass.prefetch(r, kernels, 2);        // nothing left to run
  std::ifstream runs(dir + "/runs");
  std::ostringstream all;
  all << runs.rdbuf();
  CHECK(all.str() == "run\nrun\n");
  std::filesystem::remove_all(dir);
}

}  // namespace test_sass
