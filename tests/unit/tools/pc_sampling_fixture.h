// SYNTHETIC PC-sampling records for the tool tests (wire round trip, report, pprof export) and for
// tests/cli/make_pc_sampling_file.cpp: every name, offset, count and byte below is made up, not
// measured on a GPU (real H200 captures will come under tests/data/). The offsets and instructions
// follow the layout nvdisasm printed for a small sm_90 stencil kernel, so the listings look real.
//
// The samples cover what the readers must handle: a reason reported in both device spellings
// ("<reason>" and its subset "<reason>_not_issued": counted once), a reason reported only as
// "_not_issued", a name that is a total and not a warp state (smsp__pcsamp_sample_count), the
// issue states selected/not_selected (kept, but not stalls), a line holding only issue states, a
// PC in a device function that was not inlined, SASS written by the agent for one PC, and more
// lines than the report lists.
//
// Expected numbers (stall samples; selected/not_selected excluded):
//   stencil.cu:5   700  (PC 0x0110 600 long_scoreboard, PC 0x00d0 100 lg_throttle)
//   stencil.cu:6   120  (PC 0x0130: wait 90, short_scoreboard 30 from its _not_issued form)
//   stencil.cu:7    60  (PC 0x01a0: lg_throttle 40, drain 20)
//   common.cuh:12   45  (PC 0x0010 of _Z6helperf: math_pipe_throttle)
//   stencil.cu:4    25  (PC 0x0040: imc_miss)
//   stencil.cu:8    15  (PC 0x0180: branch_resolving)
//   stencil.cu:3     0  (PC 0x0020: selected 30, not_selected 5)
//   965 stall samples, 1,095 samples in all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cutriage/wire/writer.h"

namespace cutriage::testing {

struct SyntheticPc {
  static constexpr const char* kKernel = "_Z7stencilPKfPfi";
  static constexpr const char* kKernelDemangled = "stencil(const float*, float*, int)";
  static constexpr const char* kHelper = "_Z6helperf";
  static constexpr const char* kFile = "src/stencil.cu";
  static constexpr const char* kHeader = "src/common.cuh";
  static constexpr uint64_t kLaunch = 17;
  static constexpr uint64_t kSampledLaunch = 18;
  static constexpr uint64_t kStallSamples = 965;
  static constexpr uint64_t kSamples = 1095;
  static constexpr size_t kKernelCodeBytes = 0x280;
  static constexpr size_t kHelperCodeBytes = 0x40;
};

inline std::string pcsamp(const char* state) {
  return std::string("smsp__pcsamp_warps_issue_stalled_") + state;
}

inline triage::PcSampleLine synthetic_pc(const char* file, uint32_t line, uint64_t pc, const char* function,
                                         std::initializer_list<std::pair<std::string, uint64_t>> states,
                                         const char* sass = "") {
  triage::PcSampleLine l;
  l.file = file;
  l.line = line;
  l.pc_offset = pc;
  l.function = function;
  l.sass = sass;
  for (const auto& [name, n] : states) l.samples_by_reason[name] = n;
  return l;
}

inline triage::PcSampleSummary synthetic_pc_samples(bool with_lines = true) {
  using P = SyntheticPc;
  triage::PcSampleSummary s;
  s.from_launch_index = P::kSampledLaunch;
  s.sampling_period_log2 = 12;
  s.total_samples = P::kSamples;
  s.dropped_samples = 7;
  s.hardware_buffer_full = false;
  s.has_line_info = with_lines;
  const char* f = with_lines ? P::kFile : "";
  const char* h = with_lines ? P::kHeader : "";
  auto ln = [&](uint32_t n) { return with_lines ? n : 0U; };
  s.lines = {
      synthetic_pc(f, ln(5), 0x0110, P::kKernel,
                   {{pcsamp("long_scoreboard"), 600}, {pcsamp("long_scoreboard_not_issued"), 550},
                    {pcsamp("selected"), 50}, {pcsamp("not_selected"), 10}}),
      synthetic_pc(f, ln(5), 0x00d0, P::kKernel, {{pcsamp("lg_throttle"), 100}, {pcsamp("selected"), 20}}),
      synthetic_pc(f, ln(6), 0x0130, P::kKernel,
                   {{pcsamp("wait"), 90}, {pcsamp("short_scoreboard_not_issued"), 30}, {pcsamp("selected"), 10}}),
      synthetic_pc(f, ln(7), 0x01a0, P::kKernel, {{pcsamp("lg_throttle"), 40}, {pcsamp("drain"), 20}},
                   "STG.E desc[UR4][R2.64], R9"),
      synthetic_pc(h, ln(12), 0x0010, P::kHelper, {{pcsamp("math_pipe_throttle"), 45}, {pcsamp("selected"), 5}}),
      synthetic_pc(f, ln(3), 0x0020, P::kKernel, {{pcsamp("selected"), 30}, {pcsamp("not_selected"), 5}}),
      synthetic_pc(f, ln(4), 0x0040, P::kKernel, {{pcsamp("imc_miss"), 25}}),
      synthetic_pc(f, ln(8), 0x0180, P::kKernel,
                   {{pcsamp("branch_resolving"), 15}, {"smsp__pcsamp_sample_count", 999}}),
  };
  return s;
}

// Made-up bytes standing for a function's .text (the tests never run them through a real
// disassembler).
inline std::vector<uint8_t> synthetic_code(size_t n, uint8_t seed) {
  std::vector<uint8_t> code(n);
  for (size_t i = 0; i < n; ++i) code[i] = static_cast<uint8_t>(seed + i * 7);
  return code;
}

inline wire::KernelRecord synthetic_pc_kernel(bool with_lines = true) {
  using P = SyntheticPc;
  wire::KernelRecord k;
  k.input.mangled_name = P::kKernel;
  k.input.demangled_name = P::kKernelDemangled;
  k.input.function_name = "stencil";
  k.input.launch_index = P::kLaunch;
  k.input.pc_samples = synthetic_pc_samples(with_lines);
  k.status = wire::ProfileStatus::kProfiled;
  k.duration_ns = 2500;
  k.diagnosis.classification = triage::Classification::kLatencyBound;
  k.diagnosis.headline = "latency_bound: long_scoreboard stalls";
  k.pc_code = {{P::kKernel, synthetic_code(P::kKernelCodeBytes, 1)},
               {P::kHelper, synthetic_code(P::kHelperCodeBytes, 2)}};
  k.pc_sm_arch = "sm_90";
  return k;
}

// A second sampled kernel, from a cubin without line information, and a third whose sampling
// failed; a fourth kernel without PC sampling at all.
inline wire::KernelRecord synthetic_pc_kernel_without_lines() {
  wire::KernelRecord k;
  k.input.mangled_name = "_Z5scalePfi";
  k.input.demangled_name = "scale(float*, int)";
  k.input.function_name = "scale";
  k.input.launch_index = 30;
  triage::PcSampleSummary s;
  s.from_launch_index = 31;
  s.sampling_period_log2 = 10;
  s.total_samples = 80;
  s.has_line_info = false;
  s.lines = {synthetic_pc("", 0, 0x0050, "_Z5scalePfi", {{pcsamp("long_scoreboard"), 60}, {pcsamp("selected"), 20}})};
  k.input.pc_samples = s;
  k.status = wire::ProfileStatus::kProfiled;
  k.duration_ns = 900;
  k.pc_code = {{"_Z5scalePfi", synthetic_code(0x100, 3)}};
  k.pc_sm_arch = "sm_90";
  return k;
}

inline wire::KernelRecord synthetic_pc_kernel_failed() {
  wire::KernelRecord k;
  k.input.mangled_name = "_Z6reducePKfPf";
  k.input.demangled_name = "reduce(const float*, float*)";
  k.input.function_name = "reduce";
  k.input.launch_index = 40;
  triage::PcSampleSummary s;
  s.from_launch_index = 41;
  s.error = "cuptiPCSamplingEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  k.input.pc_samples = s;
  k.status = wire::ProfileStatus::kProfiled;
  k.duration_ns = 500;
  return k;
}

inline wire::KernelRecord synthetic_unsampled_kernel() {
  wire::KernelRecord k;
  k.input.mangled_name = "_Z4copyPKfPf";
  k.input.demangled_name = "copy(const float*, float*)";
  k.input.function_name = "copy";
  k.input.launch_index = 50;
  k.status = wire::ProfileStatus::kProfiled;
  k.duration_ns = 100;
  return k;
}

inline wire::SessionInfo synthetic_pc_session() {
  wire::SessionInfo s;
  s.agent_version = "synthetic";
  s.host = "synthetic-host";
  s.pid = 77;
  s.command_line = {"./synthetic_stencil"};
  s.start_time_unix_ns = 1'700'000'000'000'000'000ULL;
  s.source = wire::SessionSource::kAgent;
  return s;
}

// A whole file: the session, the four kernels above.
inline std::string synthetic_pc_file() {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(synthetic_pc_session());
  bytes += enc.kernel(synthetic_pc_kernel());
  bytes += enc.kernel(synthetic_pc_kernel_without_lines());
  bytes += enc.kernel(synthetic_pc_kernel_failed());
  bytes += enc.kernel(synthetic_unsampled_kernel());
  return bytes;
}

}  // namespace cutriage::testing
