// `cutriage pprof`: a file's PC samples as a pprof profile (google/pprof's profile.proto,
// tools/proto/pprof/profile.proto, gzip-compressed) for `go tool pprof`, Perfetto or speedscope.
//
// Stacks, root to leaf (pprof stores them leaf first, in Sample.location_id):
//   kernel      its demangled name
//   line        "stencil.cu:42" (the file as the cubin's line table names it); "pc 0x01a0" for a
//               PC without line information (a cubin built without -lineinfo)
//   PC          "0x01a0 LDG.E R0, desc[UR4][R2.64]", or "0x01a0" when the SASS is not known
//               (nvdisasm not installed: see sass.h)
//   warp state  the canonical name: "long_scoreboard", "barrier", ..., "selected", "not_selected"
// A PC in a function other than the kernel's own (a device function that was not inlined) says
// so: "pc 0x0040 in helper", "0x0040 FFMA R9, R9, R9, 1 [in helper]".
// One Sample per (kernel, PC, warp state), two values: sample_type "samples"/"count", and
// "cycles"/"count" = samples x 2^N, the SM cycles they stand for (one sample per SM every 2^N
// cycles, PcSampling.sampling_period_log2). Kernels sampled at different periods compare by cycles
// only (torch_loop.pb: 2^12 and 2^8), so "cycles" is the default sample type. period_type
// "cycles"/"count", period = 2^N, or 0 when the kernels exported were sampled at different periods
// (the comments then list each one's).
// A kernel's samples that the device counted (PcSampling.total_samples) but no PC holds form the
// stack kernel > "(samples not attributed to a PC)", label kind=unattributed: the profile's total
// is then the sum of the report's per-launch totals ("PC sampling of launch #N: T samples").
// The issue states `selected` (the warp issued) and `not_selected` (eligible, another warp
// issued) are real warp states and stay as leaves, so the total is every sample; every Sample
// carries the label kind=stall, kind=issue (or kind=unattributed, above) to tell them apart (`pprof -tagignore=kind=issue`
// shows the stalls only). Warp states fold as pc_samples.h says (no sample counted twice).
// Every current KernelProfile record (file_reader.h) with PC samples is exported; two current
// records holding the samples of the same sampled launch count once.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "file_reader.h"
#include "pprof/profile.pb.h"
#include "sass.h"

namespace cutriage::tools {

struct PprofOptions {
  // Only kernels whose mangled or demangled name contains this; empty = every kernel.
  std::string kernel;
  std::string source_name;  // the input's name, for the profile's first comment
};

struct PprofStats {
  uint64_t kernels = 0;        // records exported
  uint64_t samples = 0;        // sum of the Sample "samples" values: the report's total
  uint64_t stall_samples = 0;  // of which kind=stall
  uint64_t unattributed_samples = 0;  // of which kind=unattributed
  uint64_t cycles = 0;         // sum of the "cycles" values (samples x 2^period)
  uint64_t stacks = 0;         // Samples
  std::vector<std::string> notes;  // for the user: SASS notes (nvdisasm), kernels skipped
};

struct PprofError {
  enum class Kind : uint8_t {
    kNoSamples,    // no exported record holds a sample (none sampled, filtered out, or failed)
    kWriteFailed,  // compression failed or the stream went bad
  };
  Kind kind = Kind::kNoSamples;
  std::string message;  // one line for the user
};

// One input of a profile over several files (`cutriage pprof A.pb B.pb ...`): a process's file
// (its segments merged, multi_file.h) and its name "host:pid". With several processes every Sample
// also carries the label process=host:pid, so their stacks stay apart and the profile's totals are
// the sum of each process's; one process has no label (`process` empty) and reads as its file alone.
struct PprofSource {
  const ReadResult* file = nullptr;
  std::string process;
};

// Fills `profile` (uncompressed). `sass` supplies the SASS text of PCs the writer did not know.
std::optional<PprofError> build_pprof(const ReadResult& file, const PprofOptions& options,
                                      SassResolver& sass, perftools::profiles::Profile& profile,
                                      PprofStats* stats = nullptr);

// The profile of several sources (all named, or one unnamed): the samples of them all.
std::optional<PprofError> build_pprof(const std::vector<PprofSource>& sources, const PprofOptions& options,
                                      SassResolver& sass, perftools::profiles::Profile& profile,
                                      PprofStats* stats = nullptr);

// Builds the profile and writes it gzip-compressed to `out`.
std::optional<PprofError> export_pprof(const ReadResult& file, const PprofOptions& options,
                                       SassResolver& sass, std::ostream& out,
                                       PprofStats* stats = nullptr);

std::optional<PprofError> export_pprof(const std::vector<PprofSource>& sources, const PprofOptions& options,
                                       SassResolver& sass, std::ostream& out, PprofStats* stats = nullptr);

// `bytes` as one gzip member (RFC 1952; zlib's deflate, default level). False with `error` set
// when zlib fails.
bool gzip_compress(std::string_view bytes, std::string& out, std::string& error);

}  // namespace cutriage::tools
