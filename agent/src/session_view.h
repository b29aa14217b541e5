// What the agent tells about the session: the application view (families ranked by GPU time,
// why each was or was not profiled, the session findings), the launch counts of the session end,
// the Prometheus snapshot and the summary printed at exit. Reads the other components' state under
// their locks (the trace's first, then the family table's) and owns none.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "always_on.h"
#include "config.h"
#include "contexts.h"
#include "devices.h"
#include "earlier_ranking.h"
#include "family.h"
#include "log.h"
#include "nvtx_tracker.h"
#include "prometheus.h"
#include "trace_folder.h"

namespace cutriage::agent {

// One kernel as the summary shows it.
struct KernelSummary {
  std::string function_name;
  std::string mangled_name;
  uint32_t device = 0;
  wire::KernelLaunchStats stats;
  std::optional<triage::Diagnosis> diagnosis;  // latest, over all combined launches
  wire::ProfileStatus last_status = wire::ProfileStatus::kUnspecified;
  std::string last_status_detail;
  std::vector<std::string> uncollected;  // counters the route still wanted when profiling stopped
};

// Counted on the launch fast path, without a lock.
struct LaunchCounts {
  std::atomic<uint64_t> launches{0};         // launch index of the latest launch
  std::atomic<uint64_t> kernel_launches{0};
  std::atomic<uint64_t> graph_launches{0};
  std::atomic<uint64_t> not_replayable{0};
  std::atomic<uint64_t> repeated_correlation{0};  // launches with LaunchEvent::correlation_repeated
};

class SessionView {
 public:
  struct Parts {
    const AgentConfig& config;
    FamilyTable& families;
    TraceFolder& trace;
    const std::atomic<bool>& trace_started;
    NvtxTracker& nvtx;
    DeviceCatalog& devices;
    const AlwaysOnPolicy* always_on;  // null in deep mode
    const EarlierRanking& earlier;
    const triage::TriageOptions& triage_options;
    const LaunchCounts& counts;
    const std::atomic<wire::AgentState>& state;
    std::string host;
    std::optional<uint32_t> rank = std::nullopt;  // the process's rank in its job (ProcessInfo::job), when known
    // Always-on: how long the launch gate has had the callbacks off so far (null: no gate).
    std::function<uint64_t()> callbacks_off_ns = nullptr;
  };
  explicit SessionView(Parts parts) : p_(std::move(parts)) {}

  // The application view so far. Empty without the trace.
  [[nodiscard]] wire::TraceSummary trace_summary() const;
  // The same, for a timeline summary made under the trace's lock (held).
  [[nodiscard]] wire::TraceSummary trace_summary_locked(const triage::TimelineSummary& timeline) const;
  // Launches the application made of a family (FamilyStats.application_launches); `f` may be null
  // (never traced).
  static uint64_t application_launches(const Family& k, const triage::FamilyTimeStats* f);
  // FamilyStats.direct_launches_before_rank's count, for a family whose counters (if any) are
  // its graph's: its direct launches when all came before its rank was known; 0 otherwise. The
  // table's lock held.
  static uint64_t direct_launches_before_rank(const Family& k);
  // Its direct launch callbacks (not into a capturing stream), all and those seen when it was
  // first ranked. The table's lock held.
  struct DirectLaunches {
    uint64_t all = 0;
    uint64_t when_ranked = 0;
  };
  static DirectLaunches direct_launches(const Family& k);
  // "; N of its launches were ..." for each way its launches went unprofiled that the run counted
  // (captured, skipped, outside the NVTX filter, the launch count reached); empty when none did.
  // The table's lock held.
  std::string unprofiled_launches_locked(const Family& k) const;
  [[nodiscard]] wire::SessionEnd session_end(const std::string& state_detail) const;
  [[nodiscard]] std::vector<KernelSummary> kernels() const;
  [[nodiscard]] PromSnapshot prometheus_snapshot(uint64_t sampled_launches) const;
  [[nodiscard]] std::optional<wire::OverheadStats> overhead() const;
  // The summary at exit, on the log (`file`: where the details are, empty when not saved).
  void print_summary(Logger& log, const wire::SessionEnd& end, const std::string& file) const;

 private:
  // Why a family whose executions ran mostly inside graph launches was not profiled, with the
  // numbers (the table's lock).
  [[nodiscard]] std::string graph_detail_locked(const Family& k, const triage::FamilyTimeStats& f) const;
  // This run's trace against CUTRIAGE_RANKING's (the family table's lock held).
  [[nodiscard]] wire::RankingSource ranking_source_locked(const triage::TimelineSummary& timeline) const;
  // The graph nodes each family ran as, most time first, at most 8 (the trace's lock).
  [[nodiscard]] std::map<uint64_t, std::vector<wire::GraphNodeRef>> graph_nodes_of(
      const std::vector<triage::GraphStats>& graphs, const std::vector<std::string>& paths) const;
  [[nodiscard]] wire::FamilyOutcome outcome_locked(const Family& k, const triage::FamilyTimeStats& f,
                                                   const std::vector<std::string>& paths) const;
  [[nodiscard]] std::vector<std::string> summary_lines(const wire::TraceSummary& trace) const;

  Parts p_;
};

}  // namespace cutriage::agent
