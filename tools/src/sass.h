// SASS text for sampled PCs. The agent never disassembles inside the application: it ships each
// sampled function's raw .text bytes (PcSampling.code) and the tool runs NVIDIA's nvdisasm on them
// (`nvdisasm --binary SM90 FILE`: raw instruction input for the asserted architecture) when it is
// installed. Without nvdisasm, PCs are shown as offsets ("pc 0x0070") and one note says why.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "file_reader.h"

namespace cutriage::tools {

// One function's instructions: byte offset -> instruction text as nvdisasm prints it, predicate
// included, whitespace runs collapsed, without the final ';' ("@P0 EXIT", "LDG.E R0, desc[UR4][R2.64]").
using SassListing = std::map<uint64_t, std::string>;

// Parses nvdisasm's text output. Every line "/*0070*/ <instruction> ;" gives one entry; header
// directives, labels, line-info comments and the /* 0x... */ encodings of -hex are skipped. Pure
// (no process, no file), so the format is unit-tested without NVIDIA's tools.
SassListing parse_nvdisasm(std::string_view text);

// "sm_90" -> "SM90", "sm_90a" -> "SM90a": nvdisasm --binary's names. nullopt for anything that is
// not "sm_" + digits + an optional lower-case suffix letter.
std::optional<std::string> nvdisasm_arch(std::string_view sm_arch);

// Where nvdisasm is looked for, in order: $CUTRIAGE_NVDISASM (a path to the program; when set,
// the only place looked), each directory of $PATH (empty entries, which mean the current
// directory, are skipped), $CUDA_HOME/bin, then `fallback_dirs`. Injectable for tests.
struct NvdisasmSearch {
  std::function<const char*(const char*)> getenv;  // null: the process environment
  std::vector<std::string> fallback_dirs = {"/usr/local/cuda/bin"};
};

struct NvdisasmLookup {
  std::string path;  // empty: not found
  std::string note;  // when not found: one line saying where it was looked for
};
NvdisasmLookup find_nvdisasm(const NvdisasmSearch& search);

struct SassError {
  std::string message;  // one line for the user
};

// Writes `code` to a temporary file and runs `nvdisasm --binary <arch> FILE` with posix_spawn
// (an argument vector, no shell), stdin from /dev/null, stdout and stderr captured. Fills
// `listing`; the error says what failed (spawn, exit status with nvdisasm's own message, output
// without instructions). The temporary file is removed in every case.
std::optional<SassError> run_nvdisasm(const std::string& nvdisasm, std::string_view sm_arch,
                                      std::string_view code, SassListing& listing);

// Disassembles the functions of PcSampling records on demand, each distinct function body once
// (cached by architecture, name and content), and looks nvdisasm up once, on first need. A
// report or an export makes one and asks it for every PC it shows. It also remembers the
// FunctionCode messages it was asked about by address, so it must not outlive the ReadResult
// they belong to.
class SassResolver {
 public:
  explicit SassResolver(NvdisasmSearch search = {});

  // The instruction at `pc_offset` of `function` (mangled), disassembled from the body `pcs`
  // carries for it; "" when there is none, nvdisasm is missing or failed, or nothing starts there.
  std::string instruction(const ReadResult& file, const cutriage::v1::PcSampling& pcs,
                          std::string_view function, uint64_t pc_offset);

  // Disassembles, before a view asks for them one by one, every function body that `kernels`'
  // PC samples show without SASS, up to `parallel` nvdisasm processes at a time (0: one per
  // core, at most 8). A view of many sampled kernels otherwise waits for one process after
  // another. Its notes (missing, failed) are said by instruction(), where the PCs are shown.
  void prefetch(const ReadResult& file, const std::vector<const cutriage::v1::KernelProfile*>& kernels,
                unsigned parallel = 0);

  // Notes for the user since the last call (nvdisasm not found, an architecture it cannot
  // name, a failed run), each said once in the resolver's life.
  std::vector<std::string> take_notes();

 private:
  void note(std::string text);
  // Looks nvdisasm up on first need.
  void look_up();
  // look_up(), and false when it is not there (the note is said).
  bool have_nvdisasm();

  NvdisasmSearch search_;
  bool looked_up_ = false;
  std::string nvdisasm_;  // empty: not found (after looked_up_)
  std::string missing_note_;  // why nvdisasm_ is empty
  // Prefetched bodies whose run failed: the note, said when instruction() first serves the body.
  std::map<std::string, std::string, std::less<>> failures_;
  std::map<std::string, SassListing, std::less<>> listings_;  // by cache key
  std::map<const cutriage::v1::FunctionCode*, const SassListing*> by_code_;  // hashed once each
  std::set<std::string, std::less<>> said_;
  std::vector<std::string> pending_;
};

}  // namespace cutriage::tools
