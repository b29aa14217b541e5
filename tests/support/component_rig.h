// The agent's components wired together as Agent wires them, without Agent: for the component
// tests of LaunchProfiler and SessionView, which work with the others. The fake platform stands for
// CUPTI and the driver, its counters are real H200 captures (capture_of), the output goes to memory.
// What Agent's callbacks would supply (the launch count, the agent state, the trace's start) the
// test sets itself; what the components call back (set_inactive, notices) is recorded here.
#pragma once

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "agent_harness.h"
#include "always_on.h"
#include "contexts.h"
#include "devices.h"
#include "family.h"
#include "graph_table.h"
#include "instance_ids.h"
#include "launch_profiler.h"
#include "nvtx_tracker.h"
#include "record_output.h"
#include "selection.h"
#include "session_view.h"
#include "trace_folder.h"

namespace cutriage::testing {

struct ComponentRig {
  explicit ComponentRig(agent::AgentConfig cfg = select_all(), FakeCounters counters = {})
      : config(std::move(cfg)),
        platform(std::move(counters)),
        cubins(config.cubin_cache_mb << 20),
        devices(platform, log),
        output(std::make_unique<MemorySink>(&bytes), false,
               [this](uint32_t segment) {
                 wire::SessionInfo s;
                 s.agent_version = "component-test";
                 s.segment_index = segment;
                 s.mode = std::string(agent::mode_name(config.mode));
                 return s;
               }),
        nvtx(fresh_instance_id()),
        graphs(nvtx),
        families(fresh_instance_id(), config.kernel_filter),
        always_on(config.mode == agent::AgentMode::kAlwaysOn
                      ? std::make_unique<agent::AlwaysOnPolicy>(
                            config, families, devices, builds, log, triage_options,
                            agent::AlwaysOnPolicy::Clocks{[this] { return platform.mono_ns.load(); },
                                                          [] { return false; },
                                                          [this] { return trace_started.load(); }})
                      : nullptr),
        deep_policy(config),
        selector(config, families,
                 always_on ? static_cast<agent::SelectionPolicy&>(*always_on) : deep_policy, earlier, state,
                 trace_started, [this] { return platform.mono_ns.load(); }),
        trace(config, platform, log, families, nvtx, graphs, output, gate,
              [this](const triage::TimelineAccumulator& timeline) { selector.apply_ranking(timeline); },
              [this](wire::Severity, const std::string& code, const std::string&) { notices.push_back(code); }),
        profiler(agent::LaunchProfiler::Parts{
            config, platform, log, families, selector, always_on.get(), devices, builds, contexts, trace,
            trace_started, nvtx, output, cubins, gate, triage_options, launch_counter, flush_running, finished,
            [this] { return platform.mono_ns.load(); },
            [this](wire::AgentState s, const std::string& detail) {
              inactive.emplace_back(s, detail);
              state.store(s);
            },
            [this](wire::Severity, const std::string& code, const std::string&, uint64_t) { notices.push_back(code); },
            [this] { ++deep_profiled; }, plans, nullptr, {}}),
        view(agent::SessionView::Parts{config, families, trace, trace_started, nvtx, devices, always_on.get(),
                                       earlier, triage_options, counts, state, "rig-host"}) {
    earlier.load(config, log);
    families.set_on_create([this](agent::Family& f) {
      earlier.mark_locked(f);
      if (always_on && always_on->resumable_locked(f)) f.resume_pending.store(true);
      selector.update_candidate_locked(f);
    });
  }

  // The launch's family, counted as Agent's launch callback counts it; the launch index.
  std::pair<agent::Family*, uint64_t> count_launch(const collectors::LaunchEvent& ev) {
    agent::Family* f = families.for_launch(ev);
    f->launches.fetch_add(1);
    counts.kernel_launches.fetch_add(1);
    const uint64_t index = launch_counter.fetch_add(1) + 1;
    counts.launches.store(index);
    if (f->names->matches_filter) selector.count_matching_launch();
    if (ev.cooperative || f->names->no_replay) {
      f->not_replayable.fetch_add(1);
      counts.not_replayable.fetch_add(1);
    }
    return {f, index};
  }

  // One launch through the profiler: entry, the kernel (the fake profiler reads which one), exit.
  // Returns whether the entry took the launch.
  bool launch(const collectors::LaunchEvent& ev) {
    auto [f, index] = count_launch(ev);
    FakePlatform::current_kernel() = std::string(ev.mangled_name);
    const bool entered = profiler.enter(ev, *f, index);
    // The replay passes hold the GPU a while (the trace clock moves), as in FakePlatform::launch.
    if (std::exchange(FakePlatform::began_on_this_thread(), false)) platform.advance_clock(500000);
    if (entered) profiler.exit(ev);
    return entered;
  }

  [[nodiscard]] tools::ReadResult read() const { return tools::read_cutriage_bytes(bytes); }

  agent::AgentConfig config;
  FakePlatform platform;
  agent::Logger log;
  std::string bytes;
  std::atomic<wire::AgentState> state{wire::AgentState::kActive};
  std::atomic<bool> trace_started{false};
  std::atomic<bool> flush_running{false};
  std::atomic<bool> finished{false};
  std::atomic<uint64_t> launch_counter{0};
  agent::LaunchCounts counts;
  std::shared_mutex gate;
  triage::TriageOptions triage_options;
  std::vector<std::pair<wire::AgentState, std::string>> inactive;  // set_inactive's calls
  std::vector<std::string> notices;                                // notice codes, in order
  int deep_profiled = 0;

  agent::CubinCache cubins;
  agent::KernelBuilds builds;
  agent::DeviceCatalog devices;
  agent::ContextTable contexts;
  agent::RecordOutput output;
  agent::NvtxTracker nvtx;
  agent::GraphTable graphs;
  agent::FamilyTable families;
  agent::EarlierRanking earlier;  // config.ranking_path, loaded by the constructor
  std::unique_ptr<agent::AlwaysOnPolicy> always_on;
  agent::DeepPolicy deep_policy;
  agent::Selector selector;
  agent::TraceFolder trace;
  agent::PlanCache plans;  // before the profiler, which refers to it
  agent::LaunchProfiler profiler;
  agent::SessionView view;
};

}  // namespace cutriage::testing
