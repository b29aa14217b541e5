// The agent's side of PC sampling: how long a sampling period to ask for, which cubins to keep for
// source correlation, and how a collector batch becomes the triage engine's PcSampleSummary (one
// entry per sampled instruction, with its file:line and its warp states by name).
//
// No CUPTI here: the collector's plain structs come in, the Platform answers CRC and line queries.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/wire/records.h"

namespace cutriage::agent {

// Samples a kernel should yield: enough that a line with 5% of them has a few hundred, few enough
// that the sampler's buffers never fill. Project choice.
inline constexpr uint64_t kTargetPcSamples = 20000;

// The sampling period (log2 cycles, CUPTI's 5..31) that gives about `target` samples for a kernel
// of `duration_ns` on `sm_count` SMs clocked at `sm_clock_hz`: each SM takes one sample per
// period. Unknown inputs (0) give 2^12, CUPTI's middle ground.
uint32_t auto_sampling_period_log2(double duration_ns, double sm_clock_hz, uint32_t sm_count,
                                   uint64_t target = kTargetPcSamples);

// Cubins of loaded modules, kept so that sampled PCs can be mapped to source lines later. Bounded
// by bytes: the oldest modules are dropped first (their kernels' samples then show SASS offsets
// only). Thread-safe. The CRC CUPTI stamps on samples is computed on first lookup, not at load,
// so that loading modules (frameworks load hundreds) costs a copy and nothing more.
class CubinCache {
 public:
  using Crc = std::function<collectors::Result<uint64_t>(const std::vector<uint8_t>&)>;
  explicit CubinCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}
  void add(std::vector<uint8_t> cubin);
  // The cubin whose CRC is `crc`, or null. `crc_of` computes a cubin's CRC (Platform::cubin_crc).
  std::shared_ptr<const std::vector<uint8_t>> find(uint64_t crc, const Crc& crc_of);
  [[nodiscard]] uint64_t bytes() const;
  [[nodiscard]] uint64_t dropped_modules() const;

 private:
  struct Entry {
    std::shared_ptr<const std::vector<uint8_t>> cubin;
    bool crc_known = false;
    uint64_t crc = 0;
  };
  mutable std::mutex mutex_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t dropped_ = 0;
  std::deque<Entry> entries_;  // oldest first
};

struct PcSummaryLimits {
  size_t max_correlated_pcs = 2000;     // hottest distinct PCs mapped to lines; the rest keep offsets
  size_t max_code_bytes = size_t{512} << 10;  // per function, for the tool's disassembly
  size_t max_functions_with_code = 8;
  // Line queries for finding the calling lines of inlined helpers (every instruction of a function
  // that has samples in another file than its own), over the whole batch.
  size_t max_inline_queries = 50000;
};

// A batch turned into what the engine and the file need.
struct PcSummary {
  triage::PcSampleSummary summary;    // lines hottest first
  std::vector<wire::FunctionCode> code;  // instructions of the sampled functions
  std::string sm_arch;                // "sm_90"; empty when no cubin was found
  uint64_t correlated_pcs = 0;        // PCs given a file:line
  bool cubin_missing = false;         // a sampled function's cubin was not in the cache
};

// Merges duplicate PCs (a batch may come in several drains), names the warp states from the
// batch's reason table, orders the PCs hottest first and maps them to source lines through the
// cached cubins. A cubin without a line table (built without -lineinfo) is not queried: its PCs
// keep their offsets and the summary says has_line_info = false.
//
// Inlined helpers: CUPTI's line of an instruction inlined from a helper (atomicAdd's body in
// device_atomic_functions.hpp) is the helper's. Such a PC is attributed to the calling line: the
// nearest earlier instruction of its function whose line is in the function's own file (the file
// of its first instruction), and the helper's position is kept as inlined_file/inlined_line. A
// heuristic (code motion can put the call site's instructions elsewhere), used because neither
// CUPTI nor the cubin API says which line an inlined instruction was called from.
PcSummary build_pc_summary(const collectors::PcSampleBatch& batch, CubinCache& cubins,
                           collectors::Platform& platform, const PcSummaryLimits& limits = {});

}  // namespace cutriage::agent
