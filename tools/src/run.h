// `cutriage run [options] [--] APP [ARGS...]`: runs APP with libcutriage.so injected
// (CUDA_INJECTION64_PATH), the options passed as CUTRIAGE_* variables, a line on stderr for each
// kernel profiled while it runs (progress.h), then the report of the file the agent wrote.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli.h"
#include "file_reader.h"

namespace cutriage::tools {

enum class Rerun : uint8_t { kAuto, kNever, kAlways };

struct RunOptions {
  // An agent option given as a flag: its variable, the flag as typed (for messages) and the value.
  struct Setting {
    std::string env;
    std::string flag;
    std::string value;
  };
  std::vector<Setting> settings;  // in the order of the agent's option table
  std::string library;            // empty: find it (find_agent_library)
  bool report = true;             // --no-report: false
  bool quiet = false;             // --quiet: no progress lines
  Rerun rerun = Rerun::kAuto;     // --rerun
  bool rerun_given = false;       // --rerun was on the command line
  uint32_t max_runs = 40;         // --max-runs: application replay's most runs of APP
  std::vector<std::string> app;   // APP ARGS...
  std::string self_exe = "/proc/self/exe";

  // What the parser binds to: the agent's flags, one per agent::config_options() entry, and
  // --no-report.
  std::vector<std::string> agent_values;
  bool no_report = false;
  std::string rerun_text = "auto";
};

// What the first run's file says about running the program again with its ranking: the families
// ranked (selected) but never profiled because their launches were over before the ranking came,
// and those whose direct launches were, leaving them only their graph's counters.
struct RerunNeed {
  uint32_t families = 0;
  uint32_t graph_scoped = 0;  // of them, those with only their graph's counters (direct launches unprofiled)
  double time_share = 0;  // theirs, summed
  std::string first;      // the first one's name, for the message
  bool includes_top = false;  // the family with the most GPU time is one of them
};
RerunNeed rerun_need(const ReadResult& first_run);
// `--rerun auto`'s rule: a second run is worth it when it would profile the family with the most
// GPU time, or families holding at least kRerunMinShare of it together. A kernel ranked after its
// last launch with 0.1% of the time (a serving loop's one-off copy) is not worth running a
// program again; the report still names it, and `--rerun always` runs it.
inline constexpr double kRerunMinShare = 0.05;
[[nodiscard]] inline bool rerun_worth(const RerunNeed& need) {
  return need.families > 0 && (need.includes_top || need.time_share >= kRerunMinShare);
}

// Under application replay (`--replay application`, CUTRIAGE_REPLAY=application): where a run's
// file leaves the families the selection chose. A family is incomplete when its latest record says
// another run adds counters (ApplicationReplay.counters_complete false), when PC sampling is on and
// its record has no PC sampling yet, or when it was ranked only after its last launch (the next
// run, given the first run's ranking, profiles it from its first launch).
struct ReplayState {
  // One family's record: what another run can only add to.
  struct Family {
    uint64_t values = 0;    // measured metric values
    uint64_t rejected = 0;  // counters asked for that gave no value (not asked again)
    uint64_t wanted = 0;    // counters the route still reads that a metric group holds
    bool sampled = false;   // its PC sampling is in the record
  };
  // By family: mangled name, device, block ("name/0/256x1x1").
  std::map<std::string, Family> families;
  uint32_t ranked_late = 0;  // chosen, but ranked only after their last launch (no record)
  uint32_t incomplete = 0;   // families another run may add to, the ranked-late ones included
  std::string first;         // the first incomplete family's name, for the progress line
};
ReplayState replay_state(const ReadResult& run, bool pc_sampling);
// What `after` (a run resumed from `before`'s file) did with it, family by family: added
// something (a family, a value, a counter tried, samples, a late-ranked family profiled), nothing,
// or nothing while some families of `before` are gone or hold less (the program launched other
// kernels or shapes: what is lost stays lost in every later run).
enum class ReplayStep : uint8_t { kProgress, kNothing, kLost };
ReplayStep replay_step(const ReplayState& before, const ReplayState& after);

// Declares the flags: one per entry of the agent's option table (agent/src/config.cpp), named as
// it names them ("-c, --launch-count"), and the tool's own.
void bind_run(CLI::App& app, RunOptions& o);
// After parsing: the settings given, with their spellings, and the application's command line.
void finish_run(const CLI::App& app, const cli::Spelling& spelling, RunOptions& o);

// Returns the application's exit status (128 + signal number when it was killed), or 1 for a
// usage or configuration error, 8 when libcutriage.so cannot be found, 9 when APP cannot start.
int cmd_run(const RunOptions& o);

// The table's entry (commands.h).
cli::Command run_command_entry(std::function<int(const RunOptions&)> run = cmd_run);

// Where libcutriage.so is: `explicit_path` if given, else $CUTRIAGE_LIBRARY, else next to the
// tool (build tree: ../agent/libcutriage.so; install: ../lib/libcutriage.so). Empty when none
// exists.
std::string find_agent_library(const std::string& explicit_path, const std::string& self_exe);

// `message` (from the agent's configuration parser, which names variables) with each variable in
// `settings` named by the flag that set it instead: "-c \"ten\": expected ..." for
// "CUTRIAGE_LAUNCH_COUNT=\"ten\": expected ...".
std::string name_flags(std::string message, const std::vector<RunOptions::Setting>& settings);

}  // namespace cutriage::tools
