// Writes the agent's Prometheus export of a small run through the fake platform to argv[1], for
// tests/agent_lib/prometheus_parse.py (CTest agent.prometheus_parses). Synthetic launches: two
// kernels, one with quotes and a backslash in its name; the fake measures no counters. A second
// argument "dcgm" names the model label as dcgm-exporter does (CUTRIAGE_PROMETHEUS_DCGM_LABELS=1),
// for tests/agent_lib/promlint.py.
#include <memory>
#include <string>

#include "agent.h"
#include "fake_platform.h"
#include "null_sink.h"

int main(int argc, char** argv) {
  using namespace cutriage;
  if (argc != 2 && !(argc == 3 && std::string(argv[2]) == "dcgm")) return 2;
  agent::AgentConfig cfg;
  cfg.select = agent::SelectMode::kAll;
  cfg.summary = false;
  cfg.prometheus_file = argv[1];
  cfg.prometheus_dcgm_labels = argc == 3;
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
