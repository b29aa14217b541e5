// Writes the agent's Prometheus export of a small run through the fake platform to argv[1], for
// tests/agent_lib/prometheus_parse.py (CTest agent.prometheus_parses). Synthetic launches: two
// kernels, one with quotes and a backslash in its name; the fake measures no counters. A second
// argument "dcgm" names the model label as dcgm-exporter does (CUTRIAGE_PROMETHEUS_DCGM_LABELS=1),
// for tests/agent_lib/promlint.py. "all" (and "all-dcgm") instead renders a snapshot that holds
// every series the agent can write (always-on budget and progress, CUDA graphs, two GPUs, verdicts),
// for `promtool check metrics` and the Prometheus server (tests/agent_lib/test_promtool.sh,
// test_prometheus_server.sh).
#include <cstdio>
#include <memory>
#include <string>

#include "agent.h"
#include "fake_platform.h"
#include "null_sink.h"
#include "prometheus.h"

namespace {

// Every optional part of the export filled in: what the fake platform's run does not reach.
int write_every_series(const char* path, bool dcgm) {
  using namespace cutriage::agent;
  PromSnapshot s;
  s.host = "node \"7\"";
  s.rank = 1;  // a rank of a job: every series carries the rank label too
  s.agent_state = "active";
  s.kernel_launches = 123456;
  s.profiled_launches = 17;
  s.sampled_launches = 3;
  s.dropped_trace_records = 2;
  s.gpus = {{0, "GPU-fake-0", "NVIDIA H200", 12.5, 60.0}, {1, "GPU-fake-1", "NVIDIA H200", 0.25, 60.0}};
  PromFamily gemm;
  gemm.family_id = 3;
  gemm.kernel = "sm90_gemm<float, 128>";
  gemm.gpu_seconds = 9.75;
  gemm.launches = 4000;
  gemm.share = 0.75;
  gemm.verdict = "compute_bound";
  gemm.limiter = "pipe_fma";
  gemm.complete = true;
  gemm.assembled_launches = 15;
  PromFamily odd;
  odd.family_id = 7;
  odd.device = 1;
  odd.kernel = "odd\"kernel\\name\nline";
  odd.gpu_seconds = 3.25;
  odd.launches = 90000;
  odd.share = 0.25;
  odd.assembled_launches = 4;
  odd.counters_missing = 38;
  PromFamily fresh;  // no verdict, nothing assembled: no verdict or progress series
  fresh.family_id = 9;
  fresh.kernel = "fresh";
  fresh.launches = 1;
  s.families = {gemm, odd, fresh};
  s.graphs = {{2, 500, 4.5, 5.0, 0.5}, {5, 10, 0.125, 0.25, 0.0625}};
  s.has_budget = true;
  s.budget_ratio = 0.004;
  s.overhead_seconds = 0.24;
  s.wall_seconds = 60.0;
  s.budget_admitted = 12;
  s.budget_deferred = 3400;
  s.trace_duty = 0.25;
  s.trace_paused_seconds = 45.0;
  s.dcgm_model_label = dcgm;
  const std::string error = write_atomically(path, render_prometheus(s));
  if (!error.empty()) std::fprintf(stderr, "%s\n", error.c_str());
  return error.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cutriage;
  const std::string mode = argc == 3 ? argv[2] : "";
  if (argc != 2 && !(argc == 3 && (mode == "dcgm" || mode == "all" || mode == "all-dcgm"))) return 2;
  if (mode == "all" || mode == "all-dcgm") return write_every_series(argv[1], mode == "all-dcgm");
  agent::AgentConfig cfg;
  cfg.select = agent::SelectMode::kAll;
  cfg.summary = false;
  cfg.prometheus_file = argv[1];
  cfg.prometheus_dcgm_labels = mode == "dcgm";
  testing::FakePlatform platform;
  agent::Logger log;
  (void)log.configure(agent::LogLevel::kOff, "");
  agent::ProcessInfo process{42, "node \"7\"", {"./service"}, [] { return uint64_t{1700000000000000000}; }, {}};
  agent::Agent ag(cfg, platform, std::make_unique<testing::NullSink>(), log, process);
  if (!ag.start()) return 1;
  for (uint64_t i = 1; i <= 10; ++i) {
    platform.launch(testing::make_launch("plain_gemm", i));
    platform.launch(testing::make_launch("odd\"kernel\\name", 100 + i, {64, 1, 1}, {128, 1, 1}));
  }
  ag.finish();
  return 0;
}
