// Application replay (CUTRIAGE_REPLAY=application, deep mode): like `ncu --replay-mode
// application`, no launch is ever replayed in the process. Deep mode's selection (top:K, share:P,
// all, the filters, CUTRIAGE_RANKING) chooses the families; each profiled launch carries one
// single-pass metric group (PlanReplay::kNone), as always-on's do, but without a budget: a family
// launched L times gets up to L groups in one run, and the program is run again for the rest
// (`cutriage run --replay application`), each run continuing the last one's counters through
// CUTRIAGE_RESUME (single_pass.h). PC sampling follows once the counters are complete, as in deep
// mode (it replays nothing either).
//
// For programs whose kernels cannot be replayed in the process (they depend on the host, or their
// device memory is too large to save and restore), and as the cheapest mode for small programs.
// Decision 0's d0.assembled_launches holds the runs to the same test as always-on's launches: one
// launch shape, durations within 1.5x.
//
// Threading: as SinglePassPolicy's; everything here runs under the family table's lock.
#pragma once

#include <string>
#include <vector>

#include "single_pass.h"

namespace cutriage::agent {

class ApplicationReplayPolicy final : public SinglePassPolicy {
 public:
  ApplicationReplayPolicy(const AgentConfig& config, FamilyTable& families, DeviceCatalog& devices,
                          const KernelBuilds& builds, Logger& log, const triage::TriageOptions& triage_options,
                          Clocks clocks);

  bool admits_fast(Family&) override { return true; }  // no budget
  [[nodiscard]] bool resamples() const override { return false; }
  // Each launch is one group: as many as the route needs (CUTRIAGE_MAX_PROFILES_PER_KERNEL, deep
  // mode's limit on replayed launches, does not apply).
  [[nodiscard]] uint32_t max_counter_launches() const override { return kMaxAssembledLaunches; }
  [[nodiscard]] bool samples_again_locked(const Family&) const override { return false; }
  bool admit_sampling_locked(Family&) override { return true; }
  // The routing counters: each group is a launch of its own, and the route decides which of the
  // others it needs.
  [[nodiscard]] std::vector<std::string> first_counters(const std::string& chip) const override;
  // The group holding the most of what the family's current stage (routing, its limiter, then
  // depth) still lacks; the context's configured group when it holds any (no reconfiguration).
  Choice choose_locked(Family& family, std::vector<std::string> wanted, const ContextGroups& context) override;

  // After a profiled or resumed record of the family (its diagnosis updated): whether another run
  // adds counters (Family::complete set when no group holds one the route still reads; with
  // CUTRIAGE_METRICS other than adaptive, one of its list), and what the record says of its runs.
  // `groups`: the chip's (null when not planned: complete is left to the next launch's selection).
  wire::ApplicationReplay settle_locked(Family& family, const MetricGroups* groups) const;

 protected:
  void resumed_locked(Family& family, wire::KernelRecord& record, const ContextGroups& context) override;
};

// The runs a family's counters were assembled over: the earlier processes its assembled launches
// name (pid and start time), and this one when it measured any of them.
uint32_t runs_assembled(const std::vector<triage::AssembledLaunch>& launches);

}  // namespace cutriage::agent
