// `cutriage diff BEFORE AFTER`: did the change work, and did it work for the reason the BEFORE
// verdict gave? Kernel families are matched across the two runs (by mangled name; --match pairs a
// renamed kernel); per family the duration per launch is the ground truth (keep when faster beyond
// the noise, revert when slower), beside the verdicts, limiters and deciding metrics of both runs
// and the causal chain (causal.h): did the counter the BEFORE verdict named move the way its fix
// predicts? `--ledger` appends one JSON line per compared family to an experiment ledger.
// docs/diff.md describes the output, the ledger and the exit codes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "causal.h"
#include "multi_file.h"

namespace cutriage::tools {

// `diff`'s exit code when --fail-if-slower trips (main.cpp's list; the others are main's).
constexpr int kExitSlower = 11;

enum class DiffFormat : uint8_t { kText, kJsonLines };

struct DiffOptions {
  std::vector<std::string> before;  // the files of each side (several: segments, processes)
  std::vector<std::string> after;
  std::vector<std::pair<std::string, std::string>> matches;  // --match OLD=NEW
  double noise_pct = 5;
  std::optional<double> fail_if_slower_pct;
  std::string ledger_path;  // empty: no ledger
  std::string label;        // --label: the change, for the ledger
  DiffFormat format = DiffFormat::kText;
  uint64_t now_unix_ns = 0;  // the ledger's time stamp; 0: the clock's (tests pin it)
};

// One kernel family of one side, the processes of the side summed.
struct FamilySide {
  std::string key;       // the mangled name (the display name when the file has none)
  std::string name;      // for people: the display name, else the key
  std::string function;  // the profiled record's function name (no parameters), when known
  uint64_t launches = 0;        // timed launches (replays not counted)
  double total_ns = 0;
  double median_ns = 0;         // 0: not known (the file gives a mean only)
  double mean_ns = 0;
  bool profiled = false;        // a diagnosis was found for it
  std::string classification;   // "memory_bound"
  std::string limiter;          // "uncoalesced_global"
  std::string rule_id;          // the verdict's rule
  std::string next_action;
  std::string deciding_metric;  // the verdict's deciding number ("" when it has none)
  double deciding_value = 0;
  std::vector<std::string> evidence;      // the verdict's evidence metrics, deciding first
  std::map<std::string, double> counters; // every metric of the profile and every evidence value
};

struct RunView {
  std::vector<std::string> paths;
  std::vector<std::string> processes;  // their names
  std::vector<FamilySide> families;    // most GPU time first
  double total_kernel_ns = 0;          // every family's GPU time
  double span_ns = 0;                  // first kernel start to last end; 0: not known (imports)
  // The application's wall time, the agent's start to its session end (the longest process);
  // 0: not known (an import, a killed run).
  double wall_ns = 0;
};

// The families of the processes (each process's trace summary, or its kernel records when it
// has none: an Nsight Compute import).
RunView run_view(const std::vector<ProcessRun>& runs);

struct FamilyDiff {
  size_t before = 0;  // index in DiffResult::before.families
  size_t after = 0;
  bool renamed = false;        // paired by --match
  std::string basis;           // "median" or "mean": per launch, the same on both sides
  double before_ns = 0;
  double after_ns = 0;
  double change_pct = 0;       // negative: faster
  std::string call;            // "keep", "revert", "neutral"
  bool predicted = false;      // the BEFORE verdict's rule has a prediction (causal.h)
  std::string prediction_why;
  std::optional<CounterMove> counter;
  ChainLabel chain = ChainLabel::kNoChange;
  bool over_limit = false;     // slower than --fail-if-slower
};

struct DiffResult {
  RunView before;
  RunView after;
  std::vector<FamilyDiff> matched;   // BEFORE's order (most GPU time first)
  std::vector<size_t> only_before;
  std::vector<size_t> only_after;
  // Every matched family's time per launch times its BEFORE launch count, on each side: the
  // total --fail-if-slower holds (launch counts that differ between runs do not count).
  double matched_before_ns = 0;
  double matched_after_ns = 0;
  double total_change_pct = 0;       // of the matched totals
  bool total_over_limit = false;
  bool fail = false;                 // --fail-if-slower tripped
  std::vector<std::string> warnings; // --match names not found
};

DiffResult compute_diff(RunView before, RunView after, const DiffOptions& options);

std::string render_diff_text(const DiffResult& diff, const DiffOptions& options);
std::string render_diff_json(const DiffResult& diff, const DiffOptions& options);

// The ledger's lines, one JSON object per matched family (docs/diff.md).
std::vector<std::string> ledger_lines(const DiffResult& diff, const DiffOptions& options);
// Appends `lines` to the ledger in one write: opened O_APPEND|O_CREAT|O_NOFOLLOW, mode 0600 when
// created; an existing ledger is never truncated. False and `error` set on failure.
bool append_ledger(const std::string& path, const std::vector<std::string>& lines, std::string& error);

// The whole command: reads both sides, prints the diff to `out`, problems to `err`, writes the
// ledger. Returns main.cpp's exit code: 0, 2/3 (an input unreadable / not a cutriage file),
// 4 (a truncated input; its complete records were used), 1 (usage: the same segment twice),
// 6 (the ledger cannot be written), kExitSlower.
int cmd_diff(const DiffOptions& options, std::ostream& out, std::ostream& err);

}  // namespace cutriage::tools
