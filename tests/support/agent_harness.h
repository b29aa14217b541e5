// The agent core on the fake platform, for the agent tests: real H200 counter values (ncu captures
// of the zoo), an in-memory sink read back with the libprotobuf reader, a log file per harness.
// The set-up itself is agent_rig.h's, which the always-on simulation shares.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent.h"
#include "agent_rig.h"
#include "capture_support.h"
#include "catch.h"
#include "fake_platform.h"
#include "file_reader.h"

namespace cutriage::testing {

using agent::Agent;
using agent::AgentConfig;


// One captured kernel: its mangled name, launch shape and measured values.
struct Captured {
  std::string mangled;
  triage::LaunchConfig launch;
  triage::MetricSet metrics;
  triage::Diagnosis reference;  // the engine's verdict on the whole capture, as the agent would see it
};

inline Captured capture_of(const char* program) {
  const std::optional<wire::KernelRecord> k = zoo_kernel(program);
  REQUIRE(k);
  Captured c;
  c.mangled = agent_kernel_name(*k);
  c.launch = *k->input.launch;
  c.metrics = k->input.metrics;
  // What the agent's input looks like: no ncu launch__/device__ values, device limits from the
  // driver, kernel replay with the clocks as found.
  triage::KernelInput in;
  in.mangled_name = k->input.mangled_name;
  in.launch = k->input.launch;
  in.device_limits = *triage::known_device_limits("GH100");
  in.launch->registers_per_thread = 32;
  for (const auto& [name, v] : k->input.metrics.all()) {
    if (!triage::counter_inputs(name).empty() && v.source == triage::MetricSource::kMeasured) {
      in.metrics.set(name, v.value, v.unit);
    }
  }
  in.collection.replay_mode = triage::ReplayMode::kKernel;
  in.collection.clock_control = triage::ClockControl::kNone;
  c.reference = triage::triage_kernel(in);
  return c;
}

// The tests written before trace-first selection profile every kernel from its first launch
// (CUTRIAGE_SELECT=all); the trace still runs. The trace tests below pick their own policy.
inline AgentConfig select_all() {
  AgentConfig c;
  c.select = agent::SelectMode::kAll;
  return c;
}

// Always-on at `budget_fraction`, every family a candidate, driven by the test's own launches: no
// flush thread (metric groups are planned on the launching thread, at once) and no summary.
inline AgentConfig always_on_driven(double budget_fraction) {
  AgentConfig c = select_all();
  c.mode = agent::AgentMode::kAlwaysOn;
  c.budget_fraction = budget_fraction;
  c.summary = false;
  c.trace_flush_ms = 0;
  return c;
}

// The agent on the fake platform as a test process (pid 1234 unless given, testhost), logging at
// level info to a file of its own.
struct Harness : AgentRig {
  // `job`: the process's place in a distributed job, as injection.cpp reads it from the
  // launcher's environment (job_place.h); unset for a lone process.
  // `pid`: the process's (runs of one program are told apart by it, CUTRIAGE_RESUME).
  explicit Harness(AgentConfig cfg = select_all(), FakeCounters counters = {},
                   std::optional<wire::JobPlace> job = std::nullopt, uint64_t pid = 1234)
      : AgentRig(std::move(counters), fresh_log_path()) {
    agent::ProcessInfo p{pid, "testhost", {"./app", "--flag"}, [] { return uint64_t{1700000000000000000}; }, {}};
    p.job = std::move(job);
    make_agent(std::move(cfg), std::move(p));
  }
  ~Harness() { std::filesystem::remove(log_path); }
  std::string log_text() const { return slurp(log_path); }

  static std::filesystem::path fresh_log_path() {
    return std::filesystem::temp_directory_path() /
           ("cutriage-agent-test-" + std::to_string(::getpid()) + "-" + std::to_string(++serial) + ".log");
  }
  static inline int serial = 0;
};

inline FakeCounters counters_for(std::initializer_list<const Captured*> kernels) {
  FakeCounters c;
  for (const Captured* k : kernels) c.by_kernel[k->mangled] = k->metrics;
  return c;
}

// Pointers into `r`, which must outlive them: a temporary ReadResult does not compile.
// Kernel records as a reader keeps them: a record written again at the end of the session
// (higher revision, same launch index) replaces the earlier one in its place.
inline std::vector<const v1::KernelProfile*> kernel_records(const tools::ReadResult& r) {
  std::vector<const v1::KernelProfile*> out;
  // (launch index, mangled name) -> position in out; as the tool's reader: records resumed from
  // an earlier process (CUTRIAGE_RESUME) all have launch index 0.
  std::map<std::pair<uint64_t, uint64_t>, size_t> at;
  for (const v1::Record& rec : r.file.records()) {
    if (!rec.has_kernel()) continue;
    const v1::KernelProfile& k = rec.kernel();
    const std::pair<uint64_t, uint64_t> key{k.launch_index(), k.mangled_name_iid()};
    auto it = at.find(key);
    if (it != at.end() && k.revision() > out[it->second]->revision()) {
      out[it->second] = &k;
    } else if (it == at.end()) {
      at[key] = out.size();
      out.push_back(&k);
    }
  }
  return out;
}
std::vector<const v1::KernelProfile*> kernel_records(const tools::ReadResult&& r) = delete;

// The trace summary's row of the family named `mangled` (null when none); the summary must exist.
inline const v1::FamilyStats* family_stats(const tools::ReadResult& r, const std::string& mangled) {
  const v1::TraceSummary* s = tools::trace_summary(r);
  REQUIRE(s != nullptr);
  for (const v1::FamilyStats& f : s->families()) {
    const v1::KernelFamily* k = tools::find_family(r, f.family_id());
    if (k != nullptr && tools::lookup(r, k->mangled_name_iid()) == mangled) return &f;
  }
  return nullptr;
}

inline size_t count_lines_containing(const std::string& text, const std::string& needle) {
  size_t n = 0, pos = 0;
  while ((pos = text.find(needle, pos)) != std::string::npos) {
    ++n;
    pos += needle.size();
  }
  return n;
}


// Waits (at most 10 s) until the fake host has made `n` plans: those made ahead are made by the
// agent's flush thread.
inline bool wait_for_plans(FakePlatform& platform, int n) {
  for (int i = 0; i < 2000 && platform.stats.plans.load() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return platform.stats.plans.load() >= n;
}

}  // namespace cutriage::testing
