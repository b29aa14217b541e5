// `cutriage merge`: one kernel family's always-on counters assembled from several processes'
// files into one new cutriage file. Replicas of one service (several processes of the same
// program on GPUs of the same chip, CUTRIAGE_REPLICA=K/N spreading their metric groups) each
// measure different single-pass groups; the merged file holds, per family, the union of what they
// measured, the launches each process measured it on (AssembledLaunch.earlier_pid), and today's
// verdict from those counters. A replica restarted with CUTRIAGE_RESUME=merged.pb continues from
// the fleet's counters (wire::parse_prior_run reads the merged file as any always-on file).
//
// Families are matched by mangled name, chip, block and grid: counters of different launch shapes
// are never combined. Per match: a counter measured by several processes keeps the value of the
// process with the most counters for that family (ties: the lowest pid, then the input order);
// rejected = rejected by any contributing process and measured by none; the assembled launches
// of every process (each keeping its pid), at most kMaxMergedLaunches. docs/commands.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cutriage::tools {

inline constexpr size_t kMaxMergedLaunches = 64;

struct MergeInput {
  std::string path;   // for the messages
  std::string bytes;  // the whole file
};

enum class MergeStatus : uint8_t {
  kOk,
  kNotCutriage,  // an input is not a cutriage file: `error` names it
  kNoAlwaysOn,   // no input was written in always-on mode (or under application replay)
};

struct MergeResult {
  MergeStatus status = MergeStatus::kOk;
  std::string error;                  // one line, naming the file, when status != kOk
  std::vector<std::string> warnings;  // one line each: inputs skipped, inputs cut short
  std::string bytes;                  // the merged cutriage file
  size_t families = 0;                // merged families written
  size_t files = 0;                   // inputs that contributed (always-on ones)
  size_t across_processes = 0;        // families whose launches came from more than one process
};

// Merges the inputs, in order (the first always-on input's command line heads the output). Never
// throws for bad input bytes.
MergeResult merge_always_on(const std::vector<MergeInput>& inputs);

}  // namespace cutriage::tools
