// Reads back what an earlier process of the program measured, from the agent's own output file,
// so that always-on collection can resume where it stopped (CUTRIAGE_RESUME) instead of starting
// every family over after a restart. protozero only, like the writer: the injected agent loads no
// libprotobuf. Only the fields resuming needs are read; everything else is skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/triage/inputs.h"

namespace cutriage::wire {

// One family's latest always-on record in the earlier run: the counters it had measured and the
// launches they came from.
struct PriorFamily {
  std::string mangled_name;
  std::string chip;     // of the GPU the record was made on ("GH100"); empty when the file has none
  uint32_t device = 0;  // that process's device index
  triage::LaunchConfig launch;
  uint64_t launch_index = 0;  // of the record, in that process's numbering
  // Measured values only (no derived ones), with their units.
  struct Value {
    std::string name;
    double value = 0;
    std::string unit;
    uint64_t launch_index = 0;  // the launch it was measured on (that process's numbering)
  };
  std::vector<Value> metrics;
  // Asked for and not collected (not collectable, or no value came back): not asked again.
  std::vector<std::string> rejected;
  std::vector<triage::AssembledLaunch> assembled;  // earlier_pid/start set when the file's were 0
};

struct PriorRun {
  uint64_t pid = 0;
  uint64_t start_unix_ns = 0;
  std::string agent_version;
  std::string mode;  // "always-on" (or "deep" with application_replay) for a file worth resuming from
  // Written under application replay (SessionHeader.settings.replay_mode APPLICATION): its records
  // are single-pass assembled ones, as always-on's.
  bool application_replay = false;
  bool truncated = false;  // the file ended inside a record (a killed process): read up to there
  std::vector<PriorFamily> families;
};

// Parses the bytes of one cutriage file (or segment). Keeps, per family (mangled name, device,
// block), the always-on record (no replay, assembled launches) with the highest launch index and
// revision. Launches that were themselves resumed keep the process that measured them. A file that
// ends inside a record is read up to there (`truncated`). Returns nullopt with `error` set when
// the bytes are not a cutriage file (no session header before the first unreadable byte).
std::optional<PriorRun> parse_prior_run(std::string_view bytes, std::string* error);

}  // namespace cutriage::wire
