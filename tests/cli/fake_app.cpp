// A stand-in for a CUDA program under `cutriage run`, without a GPU (tests/cli/test_app_replay.sh):
// the real agent core on the fake platform, configured from this process's CUTRIAGE_* variables
// as libcutriage.so would be, writing its file where CUTRIAGE_OUTPUT says. Its kernels are the
// zoo's H200 captures (tests/data/ncu/zoo), so the agent triages real counter values.
//
// usage: fake_app DATA_DIR KERNEL[:N]...   launches each capture N times (1 by default), in turn
// Environment, for the tests:
//   FAKE_APP_RUNS=FILE        a line is appended per run: "run R resume=PATH ranking=PATH"
//   FAKE_APP_SHAPE_FROM=R     from run R on (counted in FAKE_APP_RUNS) every grid is twice as large
//                             (the program's inputs changed: earlier runs' counters do not apply)
//   FAKE_APP_FAIL_FROM=R      from run R on the range profiler cannot start (another profiler holds
//                             the GPU): the runs collect nothing
//   FAKE_APP_EXIT_ON=R:S      run R exits with status S (after its launches, as a failing program)
//   FAKE_APP_LATE_TRACE=1     trace records come back only at the end (launches queued back to back)
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "agent.h"
#include "fake_platform.h"
#include "ncu_csv.h"
#include "output.h"

using namespace cutriage;

namespace {

std::string env_or(const char* name, const std::string& fallback = {}) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): single-threaded until the agent starts
  return v != nullptr ? std::string(v) : fallback;
}

uint32_t to_count(const std::string& text, uint32_t fallback) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 6) return fallback;
  return static_cast<uint32_t>(std::stoul(text));
}

struct Kernel {
  std::string mangled;
  triage::LaunchConfig launch;
  triage::MetricSet metrics;
  uint32_t launches = 1;
};

bool load(const std::string& data_dir, const std::string& spec, Kernel* out) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  out->launches = colon == std::string::npos ? 1 : to_count(spec.substr(colon + 1), 1);
  std::ifstream in(data_dir + "/ncu/zoo/" + name + ".csv", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  tools::NcuCsvResult r = tools::parse_ncu_csv(text.str());
  if (!r.import || r.import->kernels.empty() || !r.import->kernels.front().input.launch) return false;
  const wire::KernelRecord& k = r.import->kernels.front();
  out->mangled = k.input.mangled_name.empty() ? k.input.demangled_name : k.input.mangled_name;
  out->launch = *k.input.launch;
  out->metrics = k.input.metrics;
  return true;
}

std::string host() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fake_app DATA_DIR KERNEL[:N]...\n";
    return 2;
  }
  std::vector<Kernel> kernels;
  testing::FakeCounters counters;
  for (int i = 2; i < argc; ++i) {
    Kernel k;
    if (!load(argv[1], argv[i], &k)) {
      std::cerr << "fake_app: no capture " << argv[i] << "\n";
      return 2;
    }
    counters.by_kernel[k.mangled] = k.metrics;
    kernels.push_back(std::move(k));
  }

  // Which run of the program this is, as the test counts them.
  uint32_t run = 1;
  const std::string runs_file = env_or("FAKE_APP_RUNS");
  if (!runs_file.empty()) {
    std::ifstream in(runs_file);
    std::string line;
    while (std::getline(in, line)) ++run;
    std::ofstream(runs_file, std::ios::app) << "run " << run << " resume=" << env_or("CUTRIAGE_RESUME", "none")
                                            << " ranking=" << env_or("CUTRIAGE_RANKING", "none") << "\n";
  }
  const uint32_t grid_scale = run >= to_count(env_or("FAKE_APP_SHAPE_FROM"), UINT32_MAX) ? 2 : 1;
  int exit_status = 0;
  if (const std::string e = env_or("FAKE_APP_EXIT_ON"); e.find(':') != std::string::npos) {
    if (to_count(e.substr(0, e.find(':')), 0) == run) exit_status = static_cast<int>(to_count(e.substr(e.find(':') + 1), 0));
  }

  // The agent, as injection.cpp starts it.
  agent::ConfigResult parsed = agent::parse_config(agent::process_environment());
  for (const agent::ConfigIssue& issue : parsed.issues) std::cerr << "cutriage: " << issue.message << "\n";
  agent::Logger log;
  testing::FakePlatform platform(std::move(counters));
  // Declared after what it uses, so that it is destroyed first (its profilers live in the platform).
  std::unique_ptr<agent::Agent> ag;
  if (run >= to_count(env_or("FAKE_APP_FAIL_FROM"), UINT32_MAX)) {
    platform.config.begin_status = collectors::Status(collectors::StatusCode::kUnavailable,
                                                      "cuptiRangeProfilerStart: CUPTI_ERROR_HARDWARE_BUSY (fake)");
  }
  if (env_or("FAKE_APP_LATE_TRACE") == "1") {
    platform.config.deliver_each_launch = false;
    platform.config.deliver_on_flush = false;
  }
  if (parsed.ok() && parsed.config.enabled) {
    agent::PathContext ctx;
    ctx.pid = static_cast<uint64_t>(::getpid());
    ctx.host = host();
    ctx.getenv = [](std::string_view name) -> std::optional<std::string> {
      const std::string v = env_or(std::string(name).c_str(), "\x01");
      if (v == "\x01") return std::nullopt;
      return v;
    };
    ctx.exists = [](const std::string& p) { return std::ifstream(p).good(); };
    std::string error;
    const std::optional<std::string> path = agent::expand_path_pattern(parsed.config.output_pattern, ctx, &error);
    if (!path) {
      std::cerr << "fake_app: CUTRIAGE_OUTPUT: " << error << "\n";
      return 2;
    }
    (void)log.configure(parsed.config.log_level, parsed.config.log_file);
    agent::OutputFileOptions file;
    file.mode = parsed.config.output_mode;
    agent::ProcessInfo process{ctx.pid, ctx.host, {argv[0]}, [] {
                                 return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                  std::chrono::system_clock::now().time_since_epoch())
                                                                  .count());
                               },
                               {}};
    ag = std::make_unique<agent::Agent>(std::move(parsed.config), platform, agent::make_file_sink(*path, log, file),
                                        log, std::move(process));
    if (!ag->start()) ag.reset();
  }

  uint64_t correlation = 0;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (const Kernel& k : kernels) {
      if (round >= k.launches) continue;
      any = true;
      const triage::Dim3 grid{k.launch.grid.x * grid_scale, k.launch.grid.y, k.launch.grid.z};
      platform.launch(testing::make_launch(k.mangled, ++correlation, grid, k.launch.block));
    }
    if (!any) break;
  }
  if (ag) ag->finish();
  std::cout << "fake_app: run " << run << " done\n";
  return exit_status;
}
