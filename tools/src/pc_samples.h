// PC sampling as the views read it (the report's source lines, `cutriage pprof`): the samples of a
// KernelProfile.pc_sampling with interned names resolved and warp states under their canonical
// names, and the same samples summed per source line.
//
// Warp states: the device names them "smsp__pcsamp_warps_issue_stalled_<reason>", and for each
// reason may also report "..._<reason>_not_issued", the subset of those samples in which the
// warp scheduler issued nothing (CUPTI's latency samples). Both fold to "<reason>"; where a PC has
// both forms of one reason, only the plain form (all samples) counts, so no sample is counted
// twice. Other smsp__pcsamp_* names (smsp__pcsamp_sample_count) are totals and are left out.
// `selected` and `not_selected` are issue states (the warp issued, or was eligible and
// another warp issued); every other state is a stall.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "file_reader.h"

namespace cutriage::tools {

// "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued" -> "long_scoreboard": the triage
// library's vocabulary, so that the report, the export and the verdicts name a reason alike.
std::string warp_state_name(std::string_view device_name);
// `selected` and `not_selected` (canonical or as the device names them).
bool is_issue_state(std::string_view state);

// "0x01a0": a byte offset in a function, at least four hex digits.
std::string pc_hex(uint64_t offset);

struct WarpStateSamples {
  std::string state;  // canonical name
  uint64_t samples = 0;
  bool stall = false;  // not an issue state
};

struct SampledInstruction {
  std::string function;  // mangled name of the function holding the PC
  uint64_t pc_offset = 0;
  std::string file;      // "" = unknown
  uint32_t line = 0;     // 0 = unknown
  std::string sass;      // as the writer knew it; "" = not written (see sass.h)
  // In a helper inlined into `function`: file/line are the calling line, these the helper's.
  std::string inlined_file;
  uint32_t inlined_line = 0;
  std::vector<WarpStateSamples> states;  // most samples first, then by name; none with 0
  uint64_t samples = 0;        // every state
  uint64_t stall_samples = 0;  // stall states only
};

struct PcSamplingView {
  std::vector<SampledInstruction> pcs;  // most samples first, then function and offset
  uint64_t samples = 0;                 // sum over pcs (PcSampling.total_samples is the device's)
  uint64_t stall_samples = 0;
  bool has_line_info = false;  // PcSampling.has_line_info: without it, lines are not keyed
};

// The samples of `pcs`; names through `file`'s interned strings.
PcSamplingView read_pc_sampling(const ReadResult& file, const cutriage::v1::PcSampling& pcs);

// The samples of one source line, or of one PC whose line is unknown (a cubin built without
// -lineinfo, or a PC the line table does not cover).
struct SourceLineSamples {
  std::string file;      // "" = no line: the key is (function, pc_offset)
  uint32_t line = 0;
  // The PC with the most stall samples on the line (then the most samples), index into
  // PcSamplingView::pcs: the instruction to show for the line. Without a line, the PC itself.
  size_t hottest = 0;
  std::string function;    // the hottest PC's function (mangled)
  uint64_t pc_offset = 0;  // and its offset
  uint64_t samples = 0;
  uint64_t stall_samples = 0;
  std::vector<std::pair<std::string, uint64_t>> stalls;  // stall reason -> samples, most first
};

// Lines by stall samples, most first (then by samples, then by file, line, function and offset).
std::vector<SourceLineSamples> source_lines(const PcSamplingView& view);

}  // namespace cutriage::tools
