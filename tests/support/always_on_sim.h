// A deterministic simulation of always-on mode over minutes of traffic, on the fake platform: the
// agent's own policy, budget and triage, a fake monotonic clock that only the simulated launches
// and the fake profiler's costs advance, and the switch cost model of BENCHMARKS.md (a metric-group
// switch, a launch of the configured group, the profiler's initialization once). The workload is
// synthetic: zoo kernels (their H200 ncu captures give the counter values) launched in a fixed
// pattern so that each family has the share of GPU time asked for. Shared by the unit test
// (tests/unit/agent/test_always_on_sim.cpp) and bench/always_on_sim.cpp, which prints the table.
//
// Simulated minutes run in seconds: no flush thread (the trace is delivered and idle profilers are
// released by cutriage_flush every flush_ns of simulated time, as the flush thread would).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "agent.h"
#include "agent_rig.h"
#include "fake_platform.h"
#include "cutriage/triage/plan.h"
#include "file_reader.h"
#include "groups.h"
#include "merge.h"
#include "pm_nodes.h"

namespace cutriage::testing::sim {

// One family of the synthetic workload: a zoo capture and its share of the GPU time.
struct FamilySpec {
  std::string program;  // tests/data/ncu/zoo/<program>.csv
  double share = 0;     // of the workload's GPU time
};

struct Options {
  double budget = 0.004;                    // CUTRIAGE_BUDGET (the default)
  double rate = 2.0;                        // CUTRIAGE_BUDGET_RATE (the default)
  uint64_t seconds = 900;                   // simulated wall time
  uint64_t step_ns = 7'000'000;             // one step of the application: every family's launches
  uint64_t flush_ns = 100'000'000;          // the flush thread's tick
  // The cost model (BENCHMARKS.md, "A switch, call by call", H200).
  uint64_t switch_ns = 170'000'000;         // first Start on a newly enabled object
  uint64_t same_group_ns = 30'000'000;      // Start/Stop of the configured group
  uint64_t init_ns = 90'000'000;            // cuptiProfilerInitialize, once per process
  uint32_t release_ms = 2000;               // CUTRIAGE_RELEASE_MS (the default)
  // The PM routing window (CUTRIAGE_PM_WINDOW, agent/src/pm_window.*). ASSUMPTIONS, to be measured
  // on the H200 (tests/gpu/run_always_on_pm.sh): Start 50 ms and Stop 10 ms, charged to the budget
  // but run on the agent's flush thread, so 0 on the application's timeline (pm_app_ns); while the
  // window runs the application's steps take pm_drag longer (PM sampling's throughput drag).
  bool pm_window = true;
  uint64_t pm_start_ns = 50'000'000;
  uint64_t pm_host_ns = 0;  // of pm_start_ns: its host-side part (configuration, counter-data image)
  uint64_t pm_stop_ns = 10'000'000;
  uint64_t pm_app_ns = 0;  // of start + stop on the application's thread: none (flush thread)
  double pm_drag = 0.10;
  // A fleet: this process is replica `replica_index` of `replica_count` (CUTRIAGE_REPLICA), with
  // its own pid, resuming from `resume_path` when set (CUTRIAGE_RESUME).
  uint32_t replica_index = 0;
  uint32_t replica_count = 1;
  uint64_t pid = 4242;
  std::string resume_path;
  // CUTRIAGE_STAGE_PASSES: stages of one multi-pass plan, a pass on each of the family's launches
  // (each pass after a stage's first costs same_group_ns). A plan's passes here: the GH100 groups
  // its names touch (breakdowns expanded), more than CUPTI's own packing needs (deep mode's
  // first stage: 9 passes on the H200).
  bool stage_passes = false;
  // CUTRIAGE_STEP_STAGES: one collection of every counter whose passes are the application's steps
  // (agent/src/step_profiler.*), for a step of at most this many launches; 0 off. A pass's begin
  // costs same_group_ns, the collection's first switch_ns; its passes are counted as the stages'.
  uint32_t step_stages = 0;
  // CUTRIAGE_WARMUP: the process's first Start (init_ns more than a switch's) paid at the first
  // launch, apart from the budget; off, the first profiled launch pays it from the budget.
  bool warm_up = false;
  // The agent's log at level debug in this file (appended); empty: warnings and errors on stderr.
  std::string log_path;
};

// A bench argument that sets the cost model: switch_ms=N (a new configuration's first pass),
// same_ms=N (a configured one's), pm_start_ms=N (a PM window's Start), pm_host_ms=N (that Start's
// host-side part) or first_ms=N (what the process's first Start costs besides a switch's), whole
// milliseconds. False when `arg` is none of them; sets *error when it is one with a bad value.
inline bool parse_cost_arg(const std::string& arg, Options& o, std::string* error) {
  static const std::pair<const char*, uint64_t Options::*> kCosts[] = {
      {"switch_ms=", &Options::switch_ns},     {"same_ms=", &Options::same_group_ns},
      {"pm_start_ms=", &Options::pm_start_ns}, {"pm_host_ms=", &Options::pm_host_ns},
      {"first_ms=", &Options::init_ns},
  };
  const auto* cost = std::find_if(std::begin(kCosts), std::end(kCosts),
                                  [&arg](const auto& c) { return arg.rfind(c.first, 0) == 0; });
  if (cost == std::end(kCosts)) return false;
  const std::string value = arg.substr(arg.find('=') + 1);
  char* end = nullptr;
  const unsigned long long ms = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0') {
    *error = "'" + arg + "' needs whole milliseconds";
    return true;
  }
  o.*(cost->second) = ms * 1'000'000ULL;
  return true;
}

// A plan's passes as the GH100 single-pass groups table packs its names: an upper bound on what
// CUPTI packs into one config (always_on_sim's stage model; a group's own plan is one pass).
inline uint32_t gh100_groups_touched(const std::vector<std::string>& metrics) {
  static const std::string kChip = "GH100";
  const std::vector<std::vector<std::string>>& table = agent::offline_groups(kChip);
  const std::vector<std::string> expanded = triage::expand_breakdowns(metrics);
  const std::set<std::string> names(expanded.begin(), expanded.end());
  uint32_t touched = 0;
  for (const std::vector<std::string>& g : table) {
    touched += std::any_of(g.begin(), g.end(), [&](const std::string& m) { return names.count(m) > 0; }) ? 1 : 0;
  }
  return touched;
}

struct FamilyResult {
  std::string program;
  double share = 0;
  uint32_t launches_per_step = 0;
  std::string classification;  // of the last profiled record, "" when none
  std::string headline;
  double routed_s = -1;    // simulated seconds to the always_on_routed notice (or complete); -1 never
  double complete_s = -1;  // to always_on_complete; -1 never
  double first_profiled_s = -1;
  uint32_t profiled_launches = 0;  // assembled launches of its last record that has any
  uint32_t groups = 0;             // distinct metric groups among them, or stages (CUTRIAGE_STAGE_PASSES)
  // Its assembled launches: (simulated seconds, 1-based metric group).
  std::vector<std::pair<double, uint32_t>> steps;
};

struct Result {
  int pm_windows = 0;  // PM windows begun
  std::vector<FamilyResult> families;
  std::vector<std::string> notices;  // always_on_routed and always_on_complete, in order
  wire::OverheadStats overhead;
  std::string bytes;  // the agent's output file
  double first_admitted_s = -1;  // the first profiled launch of any family
};

namespace detail {

struct Kernel {
  std::string mangled;
  triage::LaunchConfig launch;
  triage::MetricSet metrics;
  uint64_t duration_ns = 0;
};

inline Kernel load(const std::string& program) {
  const std::optional<wire::KernelRecord> k = zoo_kernel(program);
  if (!k) {
    std::fprintf(stderr, "always-on sim: no capture for %s\n", program.c_str());
    std::abort();
  }
  Kernel out;
  out.mangled = agent_kernel_name(*k);
  out.launch = *k->input.launch;
  out.metrics = k->input.metrics;
  return out;
}

// "<name>: ... routed 12.3 s after the agent started ...": the seconds.
inline double seconds_in(const std::string& message) {
  const size_t at = message.find(" s after the agent started");
  if (at == std::string::npos) return -1;
  size_t begin = message.rfind(' ', at - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  const std::string number = message.substr(begin, at - begin);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  return end == number.c_str() ? -1 : value;
}

}  // namespace detail

inline Result run(const Options& o, const std::vector<FamilySpec>& specs) {
  std::vector<detail::Kernel> kernels;
  FakeCounters counters;
  for (const FamilySpec& s : specs) {
    kernels.push_back(detail::load(s.program));
    counters.by_kernel[kernels.back().mangled] = kernels.back().metrics;
  }
  // The agent as the tests' Harness sets it up (agent_rig.h); its log as the agent starts it
  // (warnings and errors on stderr).
  AgentRig rig(std::move(counters));
  if (!o.log_path.empty() && !rig.log.configure(agent::LogLevel::kDebug, o.log_path).empty()) std::abort();
  FakePlatform& platform = rig.platform;
  // Each kernel runs as long as its capture says (Decision 0 compares those durations); the shares
  // come from how many times a step launches it: the largest share's kernel once.
  std::vector<uint32_t> per_step;
  double unit = 0;  // GPU ns per step of the largest family
  for (size_t i = 0; i < specs.size(); ++i) {
    kernels[i].duration_ns = platform.captured_duration(kernels[i].mangled);
    unit = std::max(unit, static_cast<double>(kernels[i].duration_ns) / std::max(specs[i].share, 1e-9));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    per_step.push_back(std::max<uint32_t>(
        1, static_cast<uint32_t>(std::lround(unit * specs[i].share / static_cast<double>(kernels[i].duration_ns)))));
  }
  platform.config.deliver_each_launch = false;  // delivered by the flush ticks, in batches
  platform.config.cost_switch_ns = o.switch_ns;
  platform.config.cost_same_ns = o.same_group_ns;
  platform.config.cost_first_begin_ns = o.init_ns;
  platform.config.warm_up = o.warm_up;
  platform.config.names_per_pass = 1000;     // the GH100 table's groups are one pass each
  if (o.stage_passes || o.step_stages > 0) platform.config.passes_of = gh100_groups_touched;
  platform.config.switch_after_disable = true;  // a released profiler is a new object next time
  platform.config.pm_start_cost_ns = o.pm_start_ns;
  platform.config.pm_start_host_config_ns = o.pm_host_ns;
  platform.config.pm_stop_cost_ns = o.pm_stop_ns;
  // Synthetic PM values: what the range profiler's capture says under the rules' names, handed out
  // under PM's names (pm_nodes.cpp's mapping, read backwards) for samples inside each kernel.
  for (const detail::Kernel& k : kernels) {
    for (const agent::PmMapping& m : agent::pm_rule_mapping()) {
      if (std::optional<double> v = k.metrics.get(m.rule_name)) platform.config.pm_values[k.mangled][std::string(m.pm_name)] = *v;
    }
  }

  agent::AgentConfig cfg;
  cfg.mode = agent::AgentMode::kAlwaysOn;
  cfg.budget_fraction = o.budget;
  cfg.budget_rate = o.rate;
  cfg.release_ms = o.release_ms;
  cfg.summary = false;
  cfg.trace_flush_ms = 0;  // no flush thread: the loop below ticks
  cfg.pc_sampling = false;  // counters only: what the verdicts need
  cfg.pm_window = o.pm_window;
  cfg.stage_passes = o.stage_passes;
  cfg.step_launches = o.step_stages;
  cfg.warmup = o.warm_up;
  cfg.replica_index = o.replica_index;
  cfg.replica_count = o.replica_count;
  cfg.resume_path = o.resume_path;
  rig.make_agent(std::move(cfg),
                 agent::ProcessInfo{o.pid, "sim", {"./sim"}, [] { return uint64_t{1700000000000000000}; }, {}});
  agent::Agent& ag = *rig.ag;
  if (!ag.start()) std::abort();

  const uint64_t start = platform.mono_ns.load();
  const uint64_t end = start + o.seconds * 1'000'000'000ULL;
  uint64_t n = 0;
  uint64_t next_flush = start + o.flush_ns;
  std::vector<uint64_t> time_of{0};  // by launch index (1-based), relative to start
  time_of.reserve(static_cast<size_t>(static_cast<double>(o.seconds) * 1e9 / static_cast<double>(o.step_ns)) * 8);
  while (platform.mono_ns.load() < end) {
    const uint64_t step_start = platform.mono_ns.load();
    for (size_t i = 0; i < kernels.size(); ++i) {
      for (uint32_t k = 0; k < per_step[i]; ++k) {
        time_of.push_back(platform.mono_ns.load() - start);
        platform.launch(make_launch(kernels[i].mangled, ++n, kernels[i].launch.grid, kernels[i].launch.block));
      }
    }
    // The application's step takes step_ns; a profiled launch's cost (already on the clock) delays it;
    // while a PM window samples, PM sampling's drag lengthens it.
    const uint64_t now = platform.mono_ns.load();
    const bool sampling = platform.stats.pm_context[0].load() != 0;
    const auto step = static_cast<uint64_t>(static_cast<double>(o.step_ns) * (sampling ? 1.0 + o.pm_drag : 1.0));
    platform.mono_ns.store(std::max(now, step_start + step));
    if (platform.mono_ns.load() >= next_flush) {
      const int begins = platform.stats.pm_begins.load();
      ag.flush();
      // The share of the window's Start and Stop the application's thread waits for (none: the
      // flush thread runs them), on the application's timeline.
      if (platform.stats.pm_begins.load() != begins) platform.mono_ns += o.pm_app_ns;
      next_flush = platform.mono_ns.load() + o.flush_ns;
    }
  }
  ag.finish();

  Result out;
  out.bytes = rig.bytes;
  out.overhead = *ag.overhead();
  out.pm_windows = platform.stats.pm_begins.load();
  tools::ReadResult r = rig.read();
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < specs.size(); ++i) {
    FamilyResult f;
    f.program = specs[i].program;
    f.share = specs[i].share;
    f.launches_per_step = per_step[i];
    out.families.push_back(f);
    by_name[kernels[i].mangled] = i;
  }
  auto at = [&](uint64_t launch_index) {
    return launch_index < time_of.size() ? static_cast<double>(time_of[launch_index]) / 1e9 : -1.0;
  };
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_kernel() && rec.kernel().status() == v1::PROFILE_STATUS_PROFILED) {
      const v1::KernelProfile& k = rec.kernel();
      auto it = by_name.find(std::string(tools::lookup(r, k.mangled_name_iid())));
      if (it == by_name.end()) continue;
      FamilyResult& f = out.families[it->second];
      // The launches and groups from the latest record that has them: a PM window's record,
      // written again after each partial range-profiler record while it stands, has none.
      if (k.assembled_launches_size() > 0) {
        std::set<uint32_t> groups;
        f.steps.clear();
        uint32_t stages = 0;  // CUTRIAGE_STAGE_PASSES: a stage's last pass carries its values (group 0)
        for (const v1::AssembledLaunch& l : k.assembled_launches()) {
          if (l.metric_group() != 0) groups.insert(l.metric_group());
          if (l.metric_group() == 0 && l.metrics() > 0) ++stages;
          f.steps.emplace_back(at(l.launch_index()), l.metric_group());
        }
        const double first = at(k.assembled_launches(0).launch_index());
        if (f.first_profiled_s < 0 || first < f.first_profiled_s) f.first_profiled_s = first;
        if (out.first_admitted_s < 0 || first < out.first_admitted_s) out.first_admitted_s = first;
        f.profiled_launches = static_cast<uint32_t>(k.assembled_launches_size());
        f.groups = static_cast<uint32_t>(groups.size()) + stages;
      }
      f.headline = k.diagnosis().headline();
      f.classification = v1::Classification_Name(k.diagnosis().classification());
    }
    if (rec.has_notice() &&
        (rec.notice().code() == "always_on_routed" || rec.notice().code() == "always_on_complete")) {
      const std::string& m = rec.notice().message();
      out.notices.push_back(m);
      for (size_t i = 0; i < kernels.size(); ++i) {
        // The message starts with the function's name (the zoo's mangled names demangle to it).
        const std::string fn = kernels[i].mangled.substr(0, kernels[i].mangled.find('('));
        if (m.rfind(fn + ":", 0) != 0 && m.find(fn + ":") == std::string::npos) continue;
        FamilyResult& f = out.families[i];
        const double s = detail::seconds_in(m);
        if (f.routed_s < 0) f.routed_s = s;
        if (rec.notice().code() == "always_on_complete") f.complete_s = s;
      }
    }
  }
  return out;
}

// The table bench/always_on_sim.sh prints.
inline std::string table(const Options& o, const Result& r) {
  std::string t;
  char line[512];
  auto when = [](double s) {
    char b[32];
    if (s < 0) return std::string("never");
    std::snprintf(b, sizeof(b), "%.0f s", s);
    return std::string(b);
  };
  std::snprintf(line, sizeof(line),
                "Simulated always-on (synthetic workload, fake platform): budget %.2f%%, %llu s, a step every %.0f ms; "
                "switch %.0f ms, configured group %.0f ms, init %.0f ms\n\n",
                o.budget * 100, static_cast<unsigned long long>(o.seconds), static_cast<double>(o.step_ns) / 1e6,
                static_cast<double>(o.switch_ns) / 1e6, static_cast<double>(o.same_group_ns) / 1e6,
                static_cast<double>(o.init_ns) / 1e6);
  t += line;
  t += "| family | share | verdict | first profiled | routed | complete | launches | groups or stages |\n";
  t += "|---|---|---|---|---|---|---|---|\n";
  for (const FamilyResult& f : r.families) {
    std::snprintf(line, sizeof(line), "| %s | %.0f%% | %s | %s | %s | %s | %u | %u |\n", f.program.c_str(),
                  f.share * 100, f.classification.empty() ? "-" : f.classification.c_str(),
                  when(f.first_profiled_s).c_str(), when(f.routed_s).c_str(), when(f.complete_s).c_str(),
                  f.profiled_launches, f.groups);
    t += line;
  }
  const wire::OverheadStats& s = r.overhead;
  std::snprintf(line, sizeof(line),
                "\nfirst profiled launch %s; %llu admitted, %llu group switches; spent %.2f s of %.0f s (%.3f%%); "
                "worst %.0f s window %.2f s (%.2f%%); start-up %.2f s apart\n",
                when(r.first_admitted_s).c_str(), static_cast<unsigned long long>(s.admitted),
                static_cast<unsigned long long>(s.group_switches), static_cast<double>(s.spent_ns) / 1e9,
                static_cast<double>(s.wall_ns) / 1e9,
                100.0 * static_cast<double>(s.spent_ns) / static_cast<double>(std::max<uint64_t>(s.wall_ns, 1)),
                static_cast<double>(s.window_ns) / 1e9, static_cast<double>(s.max_window_spent_ns) / 1e9,
                100.0 * static_cast<double>(s.max_window_spent_ns) / static_cast<double>(std::max<uint64_t>(s.window_ns, 1)),
                static_cast<double>(s.startup_ns) / 1e9);
  t += line;
  // Issue 22's three times: the first routed verdict, every family of 5% or more routed, and
  // complete (-1: never within the run).
  double first = -1, all_routed = 0, all_complete = 0;
  for (const FamilyResult& f : r.families) {
    if (f.routed_s >= 0 && (first < 0 || f.routed_s < first)) first = f.routed_s;
    if (f.share < 0.05) continue;
    all_routed = all_routed < 0 || f.routed_s < 0 ? -1 : std::max(all_routed, f.routed_s);
    all_complete = all_complete < 0 || f.complete_s < 0 ? -1 : std::max(all_complete, f.complete_s);
  }
  std::snprintf(line, sizeof(line),
                "PM windows %d (%s; Start %.0f ms of which %.0f ms host-side and not charged, Stop %.0f ms charged, "
                "%.0f ms on the application's thread, drag %.0f%%: assumed); first routed verdict %s, every family "
                ">= 5%% routed %s, complete %s\n",
                r.pm_windows, o.pm_window ? "on" : "off", static_cast<double>(o.pm_start_ns) / 1e6,
                static_cast<double>(o.pm_host_ns) / 1e6, static_cast<double>(o.pm_stop_ns) / 1e6, static_cast<double>(o.pm_app_ns) / 1e6, o.pm_drag * 100,
                when(first).c_str(), when(all_routed).c_str(), when(all_complete).c_str());
  t += line;
  return t;
}

// The issue's workload shape: five families with 60/20/10/5/5% of the GPU time.
inline std::vector<FamilySpec> issue_workload() {
  return {{"cublas_gemm", 0.60}, {"strided_load", 0.20}, {"transpose", 0.10}, {"fma_chain", 0.05},
          {"vector_add", 0.05}};
}

// A fleet (issue 22): `replicas` processes of the service (CUTRIAGE_REPLICA=K/N, pids 5000+K) run
// `o.seconds` each, their files are merged (`cutriage merge`), and a new process resumed from the
// merged file (CUTRIAGE_RESUME) runs `resume_seconds`: a family complete there at once had its
// counters complete across the fleet. One replica is a process alone, resumed from its own file.
struct FleetResult {
  uint32_t replicas = 0;
  size_t merged_families = 0;
  size_t across_processes = 0;       // families whose counters came from more than one replica
  std::vector<std::string> complete;  // families complete in the resumed process
  std::string resumed_bytes;          // that process's output file
};

inline FleetResult run_fleet(const Options& o, const std::vector<FamilySpec>& specs, uint32_t replicas,
                             uint64_t resume_seconds = 2) {
  FleetResult out;
  out.replicas = replicas;
  std::vector<tools::MergeInput> inputs;
  for (uint32_t k = 0; k < replicas; ++k) {
    Options r = o;
    r.replica_index = k;
    r.replica_count = replicas;
    r.pid = 5000 + k;
    inputs.push_back({"replica-" + std::to_string(k), run(r, specs).bytes});
  }
  std::string merged;
  if (replicas == 1) {
    merged = inputs.front().bytes;  // alone: its own file
  } else {
    const tools::MergeResult m = tools::merge_always_on(inputs);
    if (m.status != tools::MergeStatus::kOk) std::abort();
    merged = m.bytes;
    out.merged_families = m.families;
    out.across_processes = m.across_processes;
  }
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("cutriage-fleet-" + std::to_string(::getpid()) + "-" + std::to_string(replicas) + ".pb");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(merged.data(), static_cast<std::streamsize>(merged.size()));
  }
  Options after = o;
  after.seconds = resume_seconds;
  after.resume_path = path.string();
  after.pid = 6000;
  after.pm_window = false;  // what the fleet measured, not a new window
  const Result resumed = run(after, specs);
  std::filesystem::remove(path);
  for (const FamilyResult& f : resumed.families) {
    if (f.complete_s >= 0) out.complete.push_back(f.program);
  }
  out.resumed_bytes = resumed.bytes;
  return out;
}

}  // namespace cutriage::testing::sim
