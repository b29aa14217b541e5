// What the two ways of profiling without replay share: always-on (AlwaysOnPolicy, within a budget)
// and application replay (ApplicationReplayPolicy, deep mode's selection, CUTRIAGE_REPLAY=
// application). Each profiled launch carries one single-pass metric group of its chip (groups.h),
// planned once per chip; a family's counters assemble over its launches, and over processes: a
// family the earlier output holds (CUTRIAGE_RESUME) continues from the counters measured there.
//
// Threading: the resume table and the families' fields sit behind the family table's lock (the
// `_locked` members); the metric groups behind groups_mutex_, which comes before it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "config.h"
#include "cutriage/triage/engine.h"
#include "cutriage/wire/prior_run.h"
#include "devices.h"
#include "family.h"
#include "groups.h"
#include "log.h"
#include "selection.h"

namespace cutriage::agent {

// The most of one CUTRIAGE_RESUME file (or segment) read into the application's memory.
inline constexpr size_t kMaxResumeFileBytes = size_t{256} << 20;
// One single-pass group per launch: as many launches as the route needs groups (bounded, should
// the route keep asking), over every process a family was resumed through.
inline constexpr uint32_t kMaxAssembledLaunches = 64;

// What a family collects first of what its route still wants (sorted, breakdowns expanded): while
// it has no verdict, only the routing counters (an unrouted diagnosis also visits Decision 7,
// whose counters say nothing before the route is known); once classified and until routed
// (Family::routed), only the counters of the decisions its verdict rests on; then the rest. Each
// stage falls through to the next when it wants nothing the groups hold.
std::vector<std::string> staged_wants(const Family& family, const std::set<std::string>& want);

// The start of every single-pass choice: `wanted` with its breakdowns expanded (what the route
// still wants in all), and the current stage's part of it stored in family.ao_wanted.
std::set<std::string> stage_wants(Family& family, const std::vector<std::string>& wanted);

// How many counters of `wanted` (breakdowns expanded) not in `attempted` a group of `groups` holds.
size_t collectable_in_groups(const MetricGroups& groups, const std::vector<std::string>& wanted,
                             const std::set<std::string>& attempted);

class SinglePassPolicy : public SelectionPolicy {
 public:
  struct Clocks {
    std::function<uint64_t()> monotonic_ns;
    std::function<bool()> on_flush_thread;  // planning there is not the application's time
    std::function<bool()> trace_started;    // resumed records carry their family id then
  };
  // `label` opens its log lines ("always-on", "application replay").
  SinglePassPolicy(std::string label, const AgentConfig& config, FamilyTable& families, DeviceCatalog& devices,
                   const KernelBuilds& builds, Logger& log, const triage::TriageOptions& triage_options,
                   Clocks clocks);

  // CUTRIAGE_RESUME: reads the earlier output (before anything is written: it may be the same file).
  void load_resume();
  // Whether the earlier output has this family's name and block (its first launch then comes to
  // the selection around the budget).
  [[nodiscard]] bool resumable_locked(const Family& family) const;
  // Resumes the family from the earlier output on its first selected launch (sets resumed_record).
  bool prepare_locked(Family& family, const collectors::LaunchEvent& event, uint64_t launch_index,
                      const std::string& chip, bool deep_targeted, const ContextGroups& context) final;

  // The chip's single-pass groups, planned on first use. With `may_plan` false (an application
  // thread while the flush thread runs) a chip not planned yet is left to the flush thread and
  // null returned.
  std::shared_ptr<const MetricGroups> groups_for(const std::string& chip, bool may_plan);
  void plan_pending_groups();  // flush thread

 protected:
  // What planning a chip's groups cost an application thread (always-on charges its budget).
  virtual void planning_cost(uint64_t /*cost_ns*/) {}
  // A resumed family's record, before it is written (the lock held): application replay says
  // there whether another run adds counters.
  virtual void resumed_locked(Family& /*family*/, wire::KernelRecord& /*record*/, const ContextGroups& /*context*/) {}
  [[nodiscard]] uint64_t now_ns() const { return clocks_.monotonic_ns(); }

  const std::string label_;
  const AgentConfig& config_;
  FamilyTable& families_;
  DeviceCatalog& devices_;
  const KernelBuilds& builds_;
  Logger& log_;
  const triage::TriageOptions& triage_options_;
  Clocks clocks_;

 private:
  std::optional<wire::KernelRecord> resume_locked(Family& family, const collectors::LaunchEvent& event,
                                                  uint64_t launch_index, const std::string& chip,
                                                  const ContextGroups& context, bool* wait_for_shape);

  // CUTRIAGE_RESUME: what the earlier process measured, per family (mangled name, chip, block);
  // written by load_resume() before any callback, then read and erased under the lock.
  std::map<std::tuple<std::string, std::string, uint32_t, uint32_t, uint32_t>, wire::PriorFamily> resume_;
  std::string resume_source_;  // the file(s) it came from, for the records and the log

  std::mutex groups_mutex_;
  std::map<std::string, std::shared_ptr<const MetricGroups>> groups_;  // by chip
  std::set<std::string> groups_failed_;
  std::set<std::string> groups_pending_;  // chips the flush thread plans next
};

}  // namespace cutriage::agent
