// Kernel families (a mangled name on one device with one block shape) and the table that owns
// them.
//
// Ownership: the FamilyTable owns every Family and never destroys one while it lives, so Family
// pointers stay valid for the launch callbacks' thread-local caches. The table's mutex guards the
// family list and every non-atomic field of Family; the atomics are read on the launch fast path
// without it. What the trace and the output know of a family (NVTX paths, whether its definition
// is in the file) belongs to those components, keyed by family id.
#pragma once

#include <atomic>
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
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/engine.h"
#include "cutriage/wire/prior_ranking.h"
#include "cutriage/wire/records.h"

namespace cutriage::agent {

// A mangled name, demangled and matched once, not per launch.
struct NameInfo {
  std::string demangled;
  std::string function;
  bool matches_filter = true;
  // Communication kernels (triage::is_communication_kernel): may wait on other kernels or GPUs.
  bool no_replay = false;
};

struct Family {
  // Identity: set at creation, never changed (read without the lock).
  uint64_t family_id = 0;
  std::string mangled;
  uint32_t device = 0;
  triage::Dim3 block;
  std::shared_ptr<const NameInfo> names;

  // The launch fast path's view (atomics).
  std::atomic<uint64_t> launches{0};        // launch callbacks seen
  std::atomic<uint64_t> not_replayable{0};  // cooperative or communication launches
  // Launches that reached the selection and were let pass: the process's first matching launches
  // (CUTRIAGE_LAUNCH_SKIP), and those made outside the NVTX filter. The report's reasons.
  std::atomic<uint64_t> skipped{0};
  std::atomic<uint64_t> nvtx_excluded{0};
  std::atomic<bool> candidate{false};       // the next launch goes through the selection
  std::atomic<bool> traced{false};          // an execution has been traced (durations known)
  // Always-on: its launches skip the selection until then (monotonic ns): it waits for a switch
  // the budget cannot pay yet, for the rate limit, or while other families take the configured
  // group, and the fast path must not run the selection on each of its launches meanwhile.
  std::atomic<uint64_t> not_before_ns{0};
  // Always-on: when a launch of this candidate last came through the fast path (monotonic ns); 0
  // after a launch of another shape than the one its counters are assembled on. The switch
  // policy's "still launching".
  std::atomic<uint64_t> seen_mono_ns{0};
  // Always-on: the earlier output has this family (name and block): its first candidate launch
  // comes to the selection whatever the budget says, to take it (nothing is profiled for that).
  std::atomic<bool> resume_pending{false};
  // Always-on (CUTRIAGE_STAGE_PASSES): until this time (monotonic ns) a stage is in progress, so
  // the fast path lets each launch through for its next pass whatever the budget says. A deadline,
  // not a flag: a stage whose launches stop coming to the selection (another shape, a launch cap)
  // must not keep every later launch off the fast path.
  std::atomic<uint64_t> stage_open_until_ns{0};
  std::atomic<bool> resumed_unwritten{false};  // resumed_record waits to be written

  // Ranking (from the trace's ranking, under the table's lock).
  bool ranked = false;
  uint32_t rank = 0;   // 1-based rank by traced GPU time; 0 = not ranked yet
  uint64_t launches_when_ranked = 0;  // launch callbacks seen when it was first ranked (the report's reasons)
  uint64_t captured_when_ranked = 0;  // of them, made into a capturing stream
  double share = 0.0;  // its share of the traced GPU time (always-on's switches)
  // CUTRIAGE_RANKING's entry for it (owned by EarlierRanking, set at creation); null: none.
  const wire::RankedFamily* earlier = nullptr;

  // Profiling state (the table's lock).
  wire::KernelLaunchStats stats;
  std::optional<wire::KernelRecord> last_record;  // latest profiled record, rewritten at the end
  uint32_t profiles_started = 0;
  bool complete = false;          // nothing more to collect for this kernel
  // A routed verdict: classified, with every counter of routing and of the decision naming the
  // limiter collected (triage::verdict_routed); deeper decisions may still be missing.
  bool routed = false;
  bool wrote_unprofiled = false;  // the one record saying why it is never profiled
  std::optional<triage::LaunchConfig> first_launch;
  triage::MetricSet measured;  // every value measured so far, over all profiled launches
  std::map<std::string, uint64_t, std::less<>> measured_on;  // name -> launch index
  std::vector<uint64_t> profiled_launches;
  std::set<std::string> attempted;  // counters asked for so far (accepted or rejected)
  std::vector<std::string> rejected;
  // Counters refused once beside another of their plan (RejectedMetric::conflict): asked again
  // by the next stage, which no longer holds their partner; refused twice, they are rejected.
  std::set<std::string> conflicted;
  std::optional<triage::Diagnosis> diagnosis;
  std::vector<std::string> uncollected;
  wire::ProfileStatus last_status = wire::ProfileStatus::kUnspecified;
  std::string last_detail;
  // PC sampling comes after the counters: one launch per family, then never again (failed
  // included); the selection sets it, a launch that could not be sampled after all clears it.
  // Always-on: sampled again CUTRIAGE_PC_SAMPLING_INTERVAL seconds after pc_sampled_mono_ns.
  bool pc_started = false;
  uint64_t pc_sampled_mono_ns = 0;
  uint64_t deep_request = 0;  // the deep-capture request that last profiled it

  // Always-on (the table's lock).
  std::vector<triage::AssembledLaunch> assembled;  // the launches the counters come from
  // What the selection last found this family still wants (breakdown parts expanded), sorted;
  // other families' group choices count it, so that one switch serves several.
  std::vector<std::string> ao_wanted;
  // CUTRIAGE_STAGE_PASSES: the stage in progress (its counters, sorted; empty: none), the launches
  // its passes ran on so far, and the stages abandoned halfway (their context reconfigured or
  // released between two passes).
  std::vector<std::string> ao_stage;
  std::vector<uint64_t> ao_stage_launches;
  std::vector<uint64_t> ao_stage_pass_ns;  // what each of those passes cost the launching thread
  std::optional<wire::ProfileCost> ao_stage_first_cost;  // the stage's first pass, by part (its record)
  uint32_t ao_stages_abandoned = 0;
  // The stage's collection id (RangeProfiler: a pass of another collection starts over), unique in
  // the process; 0 = none. And when its latest pass began (0: none in flight): a launch on another
  // thread meanwhile waits for that pass instead of taking the stage for lost.
  uint64_t ao_stage_id = 0;
  uint64_t ao_stage_pass_begun_ns = 0;
  bool complete_noted = false;   // the "diagnosis complete" notice was written
  bool routed_noted = false;     // the "routed" notice was written
  bool resume_checked = false;   // CUTRIAGE_RESUME was looked up for this family
  // Launches of another shape than the earlier process's that came to the selection while the
  // family waited for one of that shape (AlwaysOnPolicy::resume_locked).
  uint32_t resume_shape_misses = 0;
  std::optional<wire::KernelRecord> resumed_record;  // what it resumed, until written

  // Always-on's PM routing window (pm_window.h): the record of the family's own PM samples, while
  // no record with complete range-profiler counters supersedes it; whether it routed the verdict
  // (classified, trusted); windows that sampled the family without giving it enough samples.
  std::optional<wire::KernelRecord> pm_record;
  bool pm_routed = false;
  bool pm_superseded = false;
  uint32_t pm_windows_missed = 0;
  std::optional<triage::Diagnosis> pm_diag_;  // pm_record's diagnosis (shown_diagnosis)

  // The verdict to show (summary, Prometheus): the PM window's while its record stands, else the
  // range profiler's.
  [[nodiscard]] const std::optional<triage::Diagnosis>& shown_diagnosis() const {
    if (pm_record && !pm_superseded) return pm_diag_;
    return diagnosis;
  }
  // Sets pm_record and the diagnosis shown from it.
  void set_pm_record(wire::KernelRecord record) {
    pm_diag_ = record.diagnosis;
    pm_record = std::move(record);
  }
  // Adds a counter to those asked for and not collected, once.
  void note_rejected(const std::string& name);
  // From the diagnosis: the counters its route still wants; complete when none; routed when the
  // verdict's own decisions want none.
  void update_completeness();
  // CUTRIAGE_STAGE_PASSES: the stage in progress is over (completed or given up).
  void clear_stage();
  // A pass of the stage with collection id `collection` ended, CUPTI's pass `index` of its
  // collection. False when the family no longer has that stage (the pass is dropped); drops the
  // launches of a collection CUPTI started over (counted as an abandoned stage).
  bool reconcile_stage_pass(uint64_t collection, uint32_t index);
  // Its definition as the file's records reference it.
  [[nodiscard]] wire::FamilyDef definition() const;
};

// Counts over every family (the table's lock).
struct ProfileTotals {
  uint64_t profiles_started = 0;  // counter launches begun (CUTRIAGE_LAUNCH_COUNT)
  wire::SessionEnd totals;        // captured, profiled and failed launches
};

class FamilyTable {
 public:
  // Called with the lock held when a family is created (the agent marks candidates and resumes).
  using OnCreate = std::function<void(Family&)>;
  FamilyTable(uint64_t instance_id, const KernelFilter& kernel_filter);

  void set_on_create(OnCreate on_create) { on_create_ = std::move(on_create); }
  // Guards the family list, the totals and every non-atomic Family field.
  [[nodiscard]] std::mutex& mutex() const { return mutex_; }

  // The family of a launch: a thread-local cache in front of find_or_create_locked.
  Family* for_launch(const collectors::LaunchEvent& event);
  Family* find_or_create_locked(std::string_view mangled, uint32_t device, const triage::Dim3& block);
  // By id (1-based), null for an unknown id (lock held).
  [[nodiscard]] Family* by_id_locked(uint64_t id) const;
  [[nodiscard]] const std::vector<Family*>& all_locked() const { return families_; }
  [[nodiscard]] ProfileTotals& totals_locked() { return totals_; }
  [[nodiscard]] const ProfileTotals& totals_locked() const { return totals_; }

 private:
  const uint64_t instance_id_;  // tells thread-local caches of different agents apart
  const KernelFilter& kernel_filter_;
  OnCreate on_create_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const NameInfo>, std::less<>> names_;  // by mangled name
  std::map<std::tuple<std::string, uint32_t, uint32_t, uint32_t, uint32_t>, std::unique_ptr<Family>, std::less<>>
      by_key_;                     // (mangled name, device, block shape)
  std::vector<Family*> families_;  // by family id - 1
  ProfileTotals totals_;
};

}  // namespace cutriage::agent
