// Reads the ranking an earlier run of the program made (its last TraceSummary), so that a second
// run can profile the top families from their first launch (CUTRIAGE_RANKING, `cutriage run
// --rerun`): in a short program the top kernel's launches are often over before its own trace
// has ranked it. protozero only, like the writer: the injected agent loads no libprotobuf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cutriage/triage/inputs.h"

namespace cutriage::wire {

// One family of the earlier run, as its trace summary ranked it.
struct RankedFamily {
  std::string mangled_name;
  uint32_t device = 0;
  triage::Dim3 block{0, 0, 0};
  uint32_t rank = 0;        // 1 = most GPU time
  // FamilyStats.application_launches; in older files, the traced executions that were not
  // replays of a profiled launch (`launches_approximate`).
  uint64_t launches = 0;
  bool launches_approximate = false;
  double total_ns = 0;
  double time_share = 0;    // of the run's kernel time, in [0, 1]
};

struct PriorRanking {
  uint64_t pid = 0;
  uint64_t start_unix_ns = 0;
  std::string mode;                   // "deep" or "always-on"
  bool truncated = false;             // the file ended inside a record: read up to there
  std::vector<RankedFamily> families;  // most GPU time first
};

// Parses the bytes of one cutriage file: the last trace summary's families, named through the
// file's KernelFamily and InternedString records. Returns nullopt with `error` set when the bytes
// are not a cutriage file, or hold no trace summary (a run with CUTRIAGE_TRACE=0, or one killed
// before its end: there is no ranking to reuse).
std::optional<PriorRanking> parse_prior_ranking(std::string_view bytes, std::string* error);

}  // namespace cutriage::wire
