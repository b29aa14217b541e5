// The agent core on the fake platform, writing its file to memory: the set-up the agent tests'
// Harness (agent_harness.h) and the always-on simulation (always_on_sim.h) share, with the zoo's
// ncu captures (tests/data/ncu/zoo, H200) that give the fake counters their values. No Catch2
// here: the simulation is also a benchmark program (bench/always_on_sim.cpp).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "agent.h"
#include "capture_support.h"
#include "fake_platform.h"
#include "file_reader.h"
#include "import.h"
#include "ncu_csv.h"

namespace cutriage::testing {

class MemorySink final : public agent::RecordSink {
 public:
  explicit MemorySink(std::string* out) : out_(out) {}
  bool append(std::string_view bytes) override {
    out_->append(bytes);
    return true;
  }
  [[nodiscard]] std::string describe() const override { return "memory"; }
  [[nodiscard]] bool failed() const override { return false; }

 private:
  std::string* out_;
};

// The first kernel of a zoo program's capture (tests/data/ncu/zoo/<program>.csv), as imported;
// nullopt when the file cannot be read or holds no kernel with its launch shape.
inline std::optional<wire::KernelRecord> zoo_kernel(const std::string& program) {
  const auto path = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "ncu" / "zoo" / (program + ".csv");
  tools::NcuCsvResult r = tools::parse_ncu_csv(slurp(path));
  if (!r.import || r.import->kernels.empty() || !r.import->kernels.front().input.launch) return std::nullopt;
  return std::move(r.import->kernels.front());
}

// The name the agent sees for a captured kernel: ncu CSVs carry the demangled name, the agent the
// mangled one (both work as names here).
inline std::string agent_kernel_name(const wire::KernelRecord& k) {
  return k.input.mangled_name.empty() ? k.input.demangled_name : k.input.mangled_name;
}

// The fake platform, a logger, and an agent on them whose file's bytes go to `bytes`.
struct AgentRig {
  // `log_file`: the log's file, at level info (a file there before is removed first); empty, the
  // logger as the agent starts it (warnings and errors on stderr).
  explicit AgentRig(FakeCounters counters, std::filesystem::path log_file = {})
      : platform(std::move(counters)), log_path(std::move(log_file)) {
    if (!log_path.empty()) {
      std::filesystem::remove(log_path);
      (void)log.configure(agent::LogLevel::kInfo, log_path.string());
    }
  }
  // The agent's clock points back at this rig's platform: neither copied nor moved.
  AgentRig(const AgentRig&) = delete;
  AgentRig& operator=(const AgentRig&) = delete;

  // Makes `ag`, for `process` with the fake GPU's clock as its monotonic clock (the always-on
  // budget's clock, which profiled launches advance). A separate step, so that platform.config can
  // be set before the agent exists (the simulation does).
  void make_agent(agent::AgentConfig cfg, agent::ProcessInfo process) {
    process.monotonic_ns = [this] { return platform.mono_ns.load(); };
    ag = std::make_unique<agent::Agent>(std::move(cfg), platform, std::make_unique<MemorySink>(&bytes), log,
                                        std::move(process));
  }
  tools::ReadResult read() const { return tools::read_cutriage_bytes(bytes); }

  FakePlatform platform;
  agent::Logger log;
  std::filesystem::path log_path;  // empty when the log is not in a file
  std::string bytes;
  std::unique_ptr<agent::Agent> ag;
};

}  // namespace cutriage::testing
