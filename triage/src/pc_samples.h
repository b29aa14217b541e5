// Internal: reading KernelInput::pc_samples (cutriage's warp-state samples per SASS instruction),
// shared by the sample-based rules of Decisions 0, 3, 5 and 6.
//
// Every rule that reads samples goes through samples_unusable() first, so "none collected" and
// "collection failed" read the same way everywhere, and through aggregate_samples(), so each
// device spelling of a warp state is counted once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/triage/inputs.h"
#include "cutriage/triage/rule.h"

namespace cutriage::triage::detail {

// ---- stall-reason vocabulary (defined in rules_d3.cpp, next to the reason -> action table) ----

// "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued", "smsp__average_warps_issue_
// stalled_long_scoreboard_per_issue_active.ratio" and "long_scoreboard" all -> "long_scoreboard".
std::string_view canonical_stall_reason(std::string_view raw);
// selected and not_selected: the warp issued, or could have. Not stalls (guide 3.8.2).
bool is_issue_state_not_stall(std::string_view reason);
std::optional<std::string_view> stall_next_action(std::string_view reason);

// ---- sample thresholds every sample-based rule declares under its own id ---------------------

// Below this many stall samples a share is noise: the sampling error of a share p over n samples
// is sqrt(p(1-p)/n), about 4.6 points for p = 0.3 at n = 100, as wide as the margins the 30% and
// 50% thresholds are read with.
inline constexpr double kMinStallSamples = 100;
inline constexpr std::string_view kMinStallSamplesNote =
    "project: below 100 stall samples a share's sampling error (sqrt(p(1-p)/n), ~5 points at "
    "30%) is as wide as the margins the share thresholds test; shares are not trusted";
inline ThresholdDef min_stall_samples_threshold() {
  return ThresholdDef{"min_stall_samples", kMinStallSamples, kMinStallSamplesNote};
}

// ---- reading the samples ---------------------------------------------------------------------

// nullopt when the kernel's samples can be read; otherwise why not, as a not-evaluated reason:
// "no PC samples (...)" or "PC sampling failed: <error>".
std::optional<std::string> samples_unusable(const KernelInput& kernel);

// " (sampled on launch 17)" when the samples come from another launch than the record's, else "".
std::string sampled_launch_note(const KernelInput& kernel);

// Warp states of one sampled PC by canonical name. The sampler reports each state twice, all
// samples ("..._long_scoreboard") and the subset on which the scheduler issued nothing
// ("..._long_scoreboard_not_issued"); the all-samples count is used when present, the not-issued
// one only when it is the sole spelling, so no sample is counted twice. Names that are not warp
// states (smsp__pcsamp_sample_count) are left out.
std::map<std::string, uint64_t, std::less<>> warp_states(const PcSampleLine& line);

// One sampled PC with its canonical warp states.
struct SampledPc {
  const PcSampleLine* line = nullptr;  // points into the PcSampleSummary aggregated
  std::map<std::string, uint64_t, std::less<>> states;
  uint64_t stall_samples = 0;  // selected and not_selected excluded
};

// One source location: file:line, or (without line information) a function and a PC offset.
struct SampleLocation {
  std::string key;  // "gather.cu:42" or "_Z6kernelPf pc 0x1a0"
  std::vector<SampledPc> pcs;
  uint64_t stall_samples = 0;
  std::map<std::string, uint64_t, std::less<>> stalls_by_reason;
  // The PC carrying most stall samples here (for display): its index in `pcs`.
  size_t hottest_pc = 0;
};

struct SampleView {
  std::vector<SampleLocation> locations;  // most stall samples first
  std::map<std::string, uint64_t, std::less<>> stalls_by_reason;
  uint64_t stall_samples = 0;       // every true stall
  uint64_t selected = 0;            // the warp issued
  uint64_t not_selected = 0;        // eligible, another warp issued
  uint64_t warp_state_samples = 0;  // every state, selected and not_selected included
  bool has_line_info = false;
};

SampleView aggregate_samples(const PcSampleSummary& pcs);

// For rules that read stall shares from samples (they declare min_stall_samples_threshold()):
// nullopt with `view` filled when the samples can be read and hold at least min_stall_samples
// stall samples; otherwise why not, as a not-evaluated reason (no samples, sampling failed, no
// stall samples, too few). Records the stall-sample count as evidence.
std::optional<std::string> read_stall_samples(RuleContext& ctx, SampleView& view);

// The stall reason with most samples, and its share of the stall samples; nullopt without stalls.
struct SampledReason {
  std::string reason;
  uint64_t samples = 0;
  double share = 0;
};
std::optional<SampledReason> dominant_sampled_reason(const SampleView& view);

// Where the samples of `reason` sit: the location, the PC there holding most of them.
struct ReasonSite {
  const SampleLocation* location = nullptr;
  const SampledPc* pc = nullptr;  // the hottest PC for `reason` at that location
  uint64_t samples = 0;           // samples of `reason` at the location
  double share = 0;               // of all samples of `reason`
};
// The samples of `reason` at one location, with the PC there holding most of them.
ReasonSite site_at(const SampleLocation& loc, std::string_view reason);
// At most `max_sites` locations holding most samples of `reason`, hottest first. Beyond the first,
// a location is listed only when it holds at least `min_share` of the reason's samples.
std::vector<ReasonSite> sites_of_reason(const SampleView& view, std::string_view reason,
                                        size_t max_sites, double min_share);

// "gather.cu:42 [FFMA R4, R2, R3, R4 @0x1a0]": a location with its hottest instruction.
std::string describe_location(const SampleLocation& loc);
// "0x1a0"
std::string hex(uint64_t v);
// "; no line information in the cubin (build with -lineinfo), SASS offsets shown" or "".
std::string line_info_note(const SampleView& view);

// The opcode of a SASS line without modifiers: "@!P0 LDG.E.128 R4, [R2.64] ;" -> "LDG".
std::string_view sass_opcode(std::string_view sass);

// For a site dominated by a scoreboard wait (long_scoreboard, short_scoreboard): the samples sit
// on the instruction consuming a result, not on the instruction producing it (guide 3.8.2). Names
// the consumer and the likely producer: the nearest sampled instruction before the consumer in
// the same function whose opcode can set that scoreboard (long: L1TEX loads, atomics and
// reductions; short: shared-memory loads and atomics, MUFU), with its offset and location, when
// the samples carry SASS text. Otherwise says the producer is an earlier load on the consumer's or
// a preceding line. Empty for other reasons.
std::string consumer_producer_note(const PcSampleSummary& pcs, const ReasonSite& site,
                                   std::string_view reason);

}  // namespace cutriage::triage::detail
