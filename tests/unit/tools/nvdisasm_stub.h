// A stand-in for NVIDIA's nvdisasm, for the tool tests (neither this machine nor CI has the CUDA
// binary utilities): a shell script that checks the arguments `cutriage` passes and prints a
// listing nvdisasm really printed. Also: a temporary directory, an executable script.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "catch.h"
#include "sass.h"

namespace cutriage::testing {

// Captured on the H200 machine: nvdisasm 13.0.85 (CUDA 13.0), `nvdisasm --binary SM90 text.bin`
// on the .text section of a small stencil kernel compiled with `nvcc -cubin -arch=sm_90 -lineinfo`
// (a non-inlined helper follows the kernel's EXIT). Abridged: the middle instructions are left out.
inline constexpr const char* kRawListing =
    "\t.headerflags\t@\"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n"
    "\t.headerflags\t@\"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/                   S2R R5, SR_CTAID.X ;\n"
    "        /*0090*/               @P0 EXIT ;\n"
    "        /*00d0*/                   LDG.E R0, desc[UR4][R2.64] ;\n"
    "        /*00e0*/                   LDG.E R7, desc[UR4][R2.64+-0x4] ;\n"
    "        /*0110*/                   FADD R0, R0, R7 ;\n"
    "        /*0140*/              @!P0 BRA 0x170 ;\n"
    "        /*0160*/                   CALL.REL.NOINC 0x1c0 ;\n"
    "        /*01a0*/                   STG.E desc[UR4][R2.64], R9 ;\n"
    "        /*01e0*/                   RET.REL.NODEC R2 0x0 ;\n"
    "        /*01f0*/                   BRA 0x1f0;\n"
    "        /*0200*/                   NOP;\n";

inline std::string temp_dir(const char* tag) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / (std::string("cutriage-test-") + tag + "-XXXXXX")).string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

inline void write_script(const std::string& path, const std::string& body) {
  {
    std::ofstream f(path);
    f << "#!/bin/sh\n" << body;
  }
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

// The stand-in: checks its arguments and the input file's size, then prints the
// listing nvdisasm printed for that code (kRawListing), or fails like nvdisasm does.
inline void write_fake_nvdisasm(const std::string& path, size_t expected_bytes) {
  std::string listing = kRawListing;
  write_script(path,
               "[ \"$1\" = --binary ] || { echo \"nvdisasm fatal   : bad option $1\" >&2; exit 2; }\n"
               "[ \"$2\" = SM90 ] || {\n"
               "  echo \"nvdisasm fatal   : Value '$2' is not defined for option 'binary'\" >&2; exit 1; }\n"
               "[ \"$(wc -c < \"$3\")\" -eq " + std::to_string(expected_bytes) +
                   " ] || { echo \"nvdisasm fatal   : unexpected input size\" >&2; exit 1; }\n"
                   "cat <<'EOF'\n" + listing + "EOF\n");
}

// A search that sees only `path_dir` (as $PATH; nothing else set, no default directories):
// pins where a test's report or export finds nvdisasm, whatever this machine has installed.
inline tools::NvdisasmSearch nvdisasm_only_in(const std::string& path_dir) {
  auto path = std::make_shared<std::string>(path_dir);
  tools::NvdisasmSearch search;
  search.getenv = [path](const char* name) -> const char* {
    return std::string(name) == "PATH" ? path->c_str() : nullptr;
  };
  search.fallback_dirs.clear();
  return search;
}
// And one that finds nothing.
inline tools::NvdisasmSearch no_nvdisasm() { return nvdisasm_only_in("/nonexistent/cutriage-test"); }

}  // namespace cutriage::testing
