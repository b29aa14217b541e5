// The ranks of one distributed job read as one (issue 26): `cutriage report rank*.pb` opens with
// the job view when every process read is a rank of the same job (SessionHeader.job set in each,
// one world size, no rank twice). Per rank: GPU busy time, kernel time, idle share, the share of
// kernel time in communication kernels (triage::is_communication_kernel, the rule by which the
// agent leaves them unreplayed), compute time, its top families and their verdicts side by side;
// then the straggler. `report --format json|csv` adds a `rank` column to every row, and
// `--rows ranks` gives these numbers one row per rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "multi_file.h"
#include "table_export.h"

namespace cutriage::tools {

// One family as a rank saw it, families of the same name summed (one kernel launched with two
// block shapes is one row of the job view).
struct RankFamily {
  std::string name;            // the family's display name (raw bytes from the file)
  double total_ns = 0;         // unreplayed executions, as FamilyStats.total_ns
  double share = 0;            // of the rank's kernel time, [0, 1]
  bool communication = false;  // a communication kernel by name
  // "memory bound", ... of its profiled launch (the largest family of the name that has one);
  // "communication" for a communication kernel without one; "not profiled" otherwise.
  std::string verdict;
  std::string classification;  // "memory_bound", ... as table_export writes it; "" when none
};

struct RankStats {
  size_t process = 0;  // index into the ProcessRun list the view was made from
  std::string name;    // the process's "host:pid"
  uint32_t rank = 0;
  std::optional<uint32_t> local_rank;
  bool has_trace = false;  // no trace summary and no trace events: only the rank's place is known
  // Over the rank's devices (DeviceTimeline): traced span (paused time left out), busy time (kernels
  // and copies) and idle time (span - busy: the GPU waited for its host).
  double span_ns = 0;
  double busy_ns = 0;
  double idle_ns = 0;
  double kernel_ns = 0;         // summed kernel durations (TraceSummary.total_kernel_ns)
  double communication_ns = 0;  // of kernel_ns, in communication kernels
  double compute_ns = 0;        // kernel_ns - communication_ns
  std::vector<RankFamily> families;  // largest first

  [[nodiscard]] double idle_share() const { return span_ns > 0 ? idle_ns / span_ns : 0; }
  [[nodiscard]] double communication_share() const { return kernel_ns > 0 ? communication_ns / kernel_ns : 0; }
};

// The rank that holds the others up: the one whose compute time or idle time exceeds the median
// of the ranks by most. A rank that computes longer makes the others wait inside their collectives
// (their communication time grows); a rank whose GPU idles longer waits for its own host (data
// loading, CPU work) and the others wait for it the same way.
struct Straggler {
  size_t index = 0;  // into JobView::ranks
  bool by_compute = true;  // compute time, else idle time
  double value_ns = 0;     // its compute (or idle) time
  double median_ns = 0;    // the median of the ranks'
  double median_span_ns = 0;
};

struct JobView {
  uint32_t world_size = 0;  // 0 = not known
  std::vector<std::string> rank_variables;  // the variables the ranks came from, each once
  std::vector<RankStats> ranks;              // sorted by rank
  std::vector<uint32_t> missing;             // ranks below world_size that no file holds
  bool deep_mode = false;  // a rank ran in deep mode: its profiling is in its busy and idle time
  // Unset when fewer than two ranks have a trace, or no rank exceeds the median by at least
  // kStragglerMinSpanShare of the median span.
  std::optional<Straggler> straggler;
};

// A rank is named the straggler only when its excess over the median is at least this share of
// the median rank's traced span: below it the ranks wait on each other too little to act on.
inline constexpr double kStragglerMinSpanShare = 0.01;
// Families per rank that enter the side-by-side table (the table holds their union).
inline constexpr size_t kJobFamiliesPerRank = 5;

// The job view of `runs`; nullopt when they are not the ranks of one job: fewer than two
// processes, one without a rank, two world sizes, or one rank twice.
std::optional<JobView> job_view(const std::vector<ProcessRun>& runs);

// The job section of the text report.
std::string render_job_view(const JobView& job);

// `--rows ranks`: one row per rank (columns: table_columns(TableRows::kRanks)).
std::string render_rank_table(const JobView& job, TableFormat format);

}  // namespace cutriage::tools
