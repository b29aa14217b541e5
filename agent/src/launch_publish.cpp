// The launch profiler's records: a profiled launch's counters triaged and written (the range
// profiler's, a stage pass's, a step's collection). Split from launch_profiler.cpp, which owns the
// launch from entry to exit.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cost_text.h"
#include "launch_active.h"
#include "launch_profiler.h"
#include "launch_values.h"

namespace cutriage::agent {

using collectors::LaunchEvent;

void LaunchProfiler::publish_step(const LaunchEvent& event, Family& family, uint64_t launch_index,
                                  const collectors::MetricPlan& plan,
                                  const std::vector<collectors::MetricReading>& readings,
                                  std::vector<uint64_t> step_launches, std::vector<double> traced_ns,
                                  uint64_t entered_ns, uint64_t stopped_ns) {
  std::unique_ptr<Active> active = new_active(nullptr, family, event, launch_index);
  active->plan = plan;
  active->step = true;
  active->step_launches = std::move(step_launches);
  active->step_traced_ns = std::move(traced_ns);
  active->entered_ns = entered_ns;
  active->exit_ns = entered_ns;
  {
    // Asked for (the selection marks what it asks for; a step is not the selection's): a counter
    // of the plan that gave no value is not asked for again.
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    family.attempted.insert(plan.metrics.begin(), plan.metrics.end());
  }
  publish_counters(*active, readings, stopped_ns);
}

void LaunchProfiler::publish_counters(Active& active, const std::vector<collectors::MetricReading>& readings,
                                      uint64_t stopped) {
  Family& f = *active.family;
  wire::KernelRecord record;
  std::string stage_line;  // a stage's last pass: what the stage cost, for the log
  std::optional<wire::ProfileCost> first_pass_cost;  // and what its first pass cost, by part
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    fill_launch_input(f, active.event, active.launch_index, p_.devices, record.input);
    if (active.deep != 0) {
      // A deep capture measures everything on this one launch: its verdict stands on its own, not
      // mixed with values assembled from earlier launches.
      f.measured = triage::MetricSet();
      f.measured_on.clear();
      f.profiled_launches.clear();
      f.assembled.clear();
    }
    if (active.group >= 0) {
      triage::AssembledLaunch a = assembled_launch(active.event, active.launch_index, &readings);
      a.metric_group = static_cast<uint32_t>(active.group) + 1;
      f.assembled.push_back(a);
    }
    if (active.stage_pass) {
      // The stage's launches, one pass each: the values are the stage's, evaluated after its last
      // pass (this launch), which carries them and the duration; Decision 0 compares that with the
      // family's other stages and groups, as it compares the groups' launches.
      std::vector<uint64_t> passes = std::move(f.ao_stage_launches);
      passes.push_back(active.launch_index);
      // What the stage cost, pass by pass, for the log (the budget has each pass's own charge).
      std::vector<uint64_t> costs = std::move(f.ao_stage_pass_ns);
      costs.push_back(stopped > active.entered_ns ? stopped - active.entered_ns : 0);
      first_pass_cost = f.ao_stage_first_cost;
      stage_line = stage_cost_line(f.names->function, passes, costs, first_pass_cost);
      for (uint64_t li : passes) {
        f.assembled.push_back(
            assembled_launch(active.event, li, li == active.launch_index ? &readings : nullptr));
      }
      f.clear_stage();
    }
    if (active.step) {
      // A step's passes: one launch of the family in each (the first in the step), the values
      // those of the last pass's launch, which carries them (step_profiler.h). The verdict stands
      // on them alone: a family's group launches may have another shape (one kernel, two shapes).
      f.measured = triage::MetricSet();
      f.measured_on.clear();
      f.assembled.clear();
      // Durations from the trace: the step's one counter duration is its last pass's range.
      for (size_t i = 0; i < active.step_launches.size(); ++i) {
        const uint64_t li = active.step_launches[i];
        f.assembled.push_back(assembled_launch(active.event, li, li == active.launch_index ? &readings : nullptr));
        f.assembled.back().duration_ns = i < active.step_traced_ns.size() ? active.step_traced_ns[i] : 0;
      }
    }
    for (const collectors::MetricReading& r : readings) {
      f.measured.set(r.name, r.value, unit_for(r.name));
      f.measured_on[r.name] = active.launch_index;
    }
    for (const collectors::RejectedMetric& rj : active.plan.rejected) {
      // A counter refused only beside a partner of this plan (pcie__* beside dram__* on GH100) is
      // not "not collectable on this GPU": the next stage asks again without the partner, once.
      if (rj.conflict && active.group < 0 && !active.step && f.conflicted.insert(rj.name).second) {
        f.attempted.erase(rj.name);
        continue;
      }
      // A step collects once, everything together: what its configuration refused (a partner's
      // conflict included) is not asked for again, and the rule reading it says so.
      if (active.step) f.attempted.insert(rj.name);
      f.note_rejected(rj.name);
    }
    if (active.group >= 0 || active.stage_pass || active.step) {
      // A counter of the group that gave no value is not asked for again (attempted); the record
      // says so, so that a process resuming from it (CUTRIAGE_RESUME) does not ask either.
      for (const std::string& m : active.plan.metrics) {
        if (!f.measured.has(m)) f.note_rejected(m);
      }
    }
    record.input.metrics = f.measured;
    p_.builds.fill(f.mangled, record.input);
    for (const auto& [name, launch] : f.measured_on) {
      if (launch != active.launch_index) record.metric_launch[name] = launch;
    }
    // The launch a family was resumed at (CUTRIAGE_RESUME) may be profiled too, now that the
    // budget starts with a full allowance: it is one launch, listed once.
    const bool resumed_here = !f.profiled_launches.empty() && f.profiled_launches.back() == active.launch_index;
    record.combined_launch_indices = f.profiled_launches;
    if (resumed_here) {
      record.combined_launch_indices.pop_back();  // this launch itself
    } else {
      f.profiled_launches.push_back(active.launch_index);
    }
    record.profile_number = static_cast<uint32_t>(f.profiled_launches.size());
    record.rejected_metrics = f.rejected;
    record.input.assembled_launches = f.assembled;
    ++f.stats.profiled;
    ++p_.families.totals_locked().totals.profiled_launches;
  }
  if (!stage_line.empty()) p_.log.info(stage_line);
  if (active.group >= 0) {
    // One pass on the launch as the application ran it: caches as it left them.
    record.input.collection.replay_mode = triage::ReplayMode::kNone;
    record.input.collection.cache_control = "none";
  } else if (active.stage_pass || active.step) {
    // The stage's passes were the family's own launches (a step's: the application's steps), each
    // run once as the application ran it.
    record.input.collection.replay_mode = triage::ReplayMode::kApplication;
    record.input.collection.cache_control = "none";
  } else {
    record.input.collection.replay_mode = triage::ReplayMode::kKernel;
    record.input.collection.cache_control = "all";
  }
  record.input.collection.clock_control = triage::ClockControl::kNone;
  record.input.collection.collector = triage::Collector::kAgent;
  record.input.collection.passes = active.plan.passes;
  record.context_id = active.event.context_id;
  record.stream_id = active.event.stream_id;
  record.correlation_id = active.event.correlation_id;
  record.launch_api = launch_api_of(active.event.api);
  record.status = wire::ProfileStatus::kProfiled;
  if (auto d = record.input.metrics.get("gpu__time_duration.sum")) record.duration_ns = *d;
  if (p_.trace_started.load()) {
    record.family_id = f.family_id;
    // Decision 0 compares this replayed duration with the family's unprofiled ones traced so far;
    // the end of the session rewrites the record with everything traced by then.
    p_.trace.fill_inputs(f.family_id, record.input);
  }

  const uint64_t triage_begin = p_.monotonic_ns();
  record.diagnosis = triage::triage_kernel(record.input, p_.triage_options);
  record.cost = active.phases(stopped, p_.monotonic_ns() - triage_begin);
  record.first_pass_cost = first_pass_cost;
  std::optional<wire::KernelRecord> pm_rewrite;
  std::vector<std::string> next_stage;

  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    f.diagnosis = record.diagnosis;
    f.last_status = record.status;
    f.last_detail.clear();
    if (active.deep != 0) {
      f.complete = true;  // a deep capture measured everything the route can read
      f.uncollected.clear();
    } else if (p_.config.metric_mode != MetricMode::kAdaptive && single_pass_ == nullptr) {
      f.complete = true;
    } else {
      f.update_completeness();
    }
    if (p_.flush_running.load() && (single_pass_ == nullptr || active.stage_pass) && active.deep == 0 &&
        p_.config.metric_mode == MetricMode::kAdaptive && f.diagnosis) {
      // The next stage (deep mode's, or always-on's with CUTRIAGE_STAGE_PASSES): the list the
      // family's next profiled launch will hand the collector, planned on the flush thread
      // meanwhile. A launch that comes first makes it itself; one that finds it being made waits
      // for what is left.
      next_stage = p_.selector.next_list_locked(f, active.plan.chip);
    }
    // Application replay: whether another run adds counters, and over how many runs these were
    // assembled (the tool's loop reads it).
    if (p_.app_replay != nullptr && active.deep == 0) {
      record.application_replay = p_.app_replay->settle_locked(f, active.groups.get());
    }
    // Always-on's PM routing window (pm_window.h): its record stands until these counters are
    // complete, then this record supersedes it (a reader drops the launches a record combines);
    // until then the window's record is written again to supersede this partial one.
    // (note_complete supersedes it once complete).
    if (f.pm_record && !f.pm_superseded && !f.complete) {
      f.pm_record->revision += 1;
      f.pm_record->combined_launch_indices = f.profiled_launches;
      pm_rewrite = f.pm_record;
    }
    f.last_record = record;
    p_.selector.update_candidate_locked(f);  // after last_record: PC sampling follows a profiled record
  }
  p_.output.write_kernel(record);
  if (pm_rewrite) p_.output.write_kernel(*pm_rewrite);
  if (!next_stage.empty()) queue_plans(active.plan.chip, {std::move(next_stage)});
  note_complete(f);
  if (active.deep != 0) p_.deep_profiled();
}

}  // namespace cutriage::agent
