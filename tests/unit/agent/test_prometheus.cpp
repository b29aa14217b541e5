// The Prometheus export (agent/src/prometheus.h): the renderer on synthetic snapshots (labelled),
// the atomic rewrite, and the agent writing the file from a run through the fake platform with
// real H200 counter values. tests/agent_lib/prometheus_parse.py reads the same output with the
// prometheus_client parser (CTest agent.prometheus_parses).
#include <filesystem>
#include <fstream>
#include <string>

#include "agent_harness.h"
#include "prometheus.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_prometheus {

using namespace cutriage;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::make_launch;

namespace {

// Synthetic: one GPU, two families, one with a name full of characters labels must escape.
agent::PromSnapshot synthetic() {
  agent::PromSnapshot s;
  s.host = "node-7";
  s.agent_state = "active";
  s.kernel_launches = 1234;
  s.profiled_launches = 3;
  s.sampled_launches = 1;
  s.gpus.push_back({0, "GPU-1234", "NVIDIA H200", 2.5, 10.0});
  agent::PromFamily a;
  a.family_id = 1;
  a.kernel = "void gemm<\"quoted\", back\\slash>(float*)\nnext";
  a.gpu_seconds = 1.5;
  a.launches = 40;
  a.share = 0.6;
  a.verdict = "compute_bound";
  a.limiter = "pipe_fma";
  agent::PromFamily b;
  b.family_id = 2;
  b.kernel = "reduce";
  b.gpu_seconds = 0.25;
  b.launches = 400;
  b.share = 0.1;
  s.families = {a, b};
  return s;
}


}  // namespace

TEST_CASE("prometheus: series, labels and escaping", "[agent][prometheus]") {
  const std::string text = agent::render_prometheus(synthetic());
  INFO(text);
  CHECK(text.find("# TYPE cutriage_kernel_family_gpu_seconds_total counter\n") != std::string::npos);
  CHECK(text.find("cutriage_kernel_launches_total{Hostname=\"node-7\"} 1234\n") != std::string::npos);
  // dcgm-exporter's label names, so the series join with DCGM's.
  CHECK(text.find("cutriage_gpu_busy_seconds{gpu=\"0\",UUID=\"GPU-1234\",model_name=\"NVIDIA H200\",Hostname=\"node-7\"} 2.5\n") !=
        std::string::npos);
  // Quotes, backslashes and newlines in a kernel name are escaped; no raw newline inside a label.
  CHECK(text.find("kernel=\"void gemm<\\\"quoted\\\", back\\\\slash>(float*)\\nnext\"") != std::string::npos);
  for (size_t at = text.find('{'); at != std::string::npos; at = text.find('{', at + 1)) {
    const size_t end = text.find("} ", at);
    REQUIRE(end != std::string::npos);
    CHECK(text.substr(at, end - at).find('\n') == std::string::npos);
  }
  CHECK(text.find("cutriage_kernel_family_gpu_seconds_total{gpu=\"0\",UUID=\"GPU-1234\",model_name=\"NVIDIA H200\","
                  "Hostname=\"node-7\",family=\"2\",kernel=\"reduce\"} 0.25\n") != std::string::npos);
  // The verdict series only for diagnosed families.
  CHECK(text.find("verdict=\"compute_bound\",limiter=\"pipe_fma\"} 1\n") != std::string::npos);
  CHECK(text.find("cutriage_kernel_family_verdict{gpu=\"0\",UUID=\"GPU-1234\",model_name=\"NVIDIA H200\","
                  "Hostname=\"node-7\",family=\"2\"") == std::string::npos);
}

TEST_CASE("prometheus: each CUDA graph's replays, kernel time, span and idle time between nodes", "[agent][prometheus][graphs]") {
  agent::PromSnapshot s = synthetic();
  CHECK(agent::render_prometheus(s).find("cutriage_graph_") == std::string::npos);  // no graph, no series
  s.graphs.push_back({2, 300, 0.25, 0.3, 0.05});  // synthetic
  const std::string text = agent::render_prometheus(s);
  INFO(text);
  CHECK(text.find("# TYPE cutriage_graph_replays_total counter\n") != std::string::npos);
  CHECK(text.find("cutriage_graph_replays_total{Hostname=\"node-7\",graph=\"2\"} 300\n") != std::string::npos);
  CHECK(text.find("cutriage_graph_kernel_seconds_total{Hostname=\"node-7\",graph=\"2\"} 0.25\n") != std::string::npos);
  CHECK(text.find("cutriage_graph_span_seconds_total{Hostname=\"node-7\",graph=\"2\"} 0.3\n") != std::string::npos);
  CHECK(text.find("cutriage_graph_idle_between_nodes_seconds_total{Hostname=\"node-7\",graph=\"2\"} 0.05\n") !=
        std::string::npos);
  for (uint32_t g = 3; g < 3 + agent::kMaxPromGraphs + 5; ++g) s.graphs.push_back({g, 1, 0.001, 0.001, 0});
  const std::string many = agent::render_prometheus(s);
  size_t series = 0;
  for (size_t at = many.find("cutriage_graph_replays_total{"); at != std::string::npos;
       at = many.find("cutriage_graph_replays_total{", at + 1)) {
    ++series;
  }
  CHECK(series == agent::kMaxPromGraphs);
}

TEST_CASE("prometheus: the always-on budget's series, only in always-on mode", "[agent][prometheus]") {
  agent::PromSnapshot s = synthetic();
  CHECK(agent::render_prometheus(s).find("cutriage_budget_ratio") == std::string::npos);
  s.has_budget = true;
  s.budget_ratio = 0.005;
  s.overhead_seconds = 0.75;
  s.startup_seconds = 0.62;
  s.wall_seconds = 300;
  s.budget_admitted = 12;
  s.budget_deferred = 7;
  const std::string text = agent::render_prometheus(s);
  INFO(text);
  CHECK(text.find("# TYPE cutriage_budget_ratio gauge\ncutriage_budget_ratio{Hostname=\"node-7\"} 0.005\n") !=
        std::string::npos);
  CHECK(text.find("cutriage_overhead_seconds_total{Hostname=\"node-7\"} 0.75\n") != std::string::npos);
  CHECK(text.find("cutriage_agent_seconds_total{Hostname=\"node-7\"} 300\n") != std::string::npos);
  CHECK(text.find("# TYPE cutriage_startup_seconds gauge\ncutriage_startup_seconds{Hostname=\"node-7\"} 0.62\n") !=
        std::string::npos);
  CHECK(text.find("cutriage_budget_deferred_total{Hostname=\"node-7\"} 7\n") != std::string::npos);
  // The trace's duty: 1 unless CUTRIAGE_TRACE_DUTY pauses it.
  CHECK(text.find("cutriage_trace_duty_ratio{Hostname=\"node-7\"} 1\n") != std::string::npos);
  s.trace_duty = 0.25;
  s.trace_paused_seconds = 45;
  const std::string paused = agent::render_prometheus(s);
  CHECK(paused.find("# TYPE cutriage_trace_duty_ratio gauge\ncutriage_trace_duty_ratio{Hostname=\"node-7\"} 0.25\n") !=
        std::string::npos);
  CHECK(paused.find("# TYPE cutriage_trace_paused_seconds_total counter\n"
                    "cutriage_trace_paused_seconds_total{Hostname=\"node-7\"} 45\n") != std::string::npos);
}

TEST_CASE("prometheus: at most kMaxPromFamilies families, long names cut", "[agent][prometheus]") {
  agent::PromSnapshot s = synthetic();
  s.families.clear();
  for (uint64_t i = 1; i <= agent::kMaxPromFamilies + 10; ++i) {
    agent::PromFamily f;
    f.family_id = i;
    f.kernel = std::string(500, 'k');
    s.families.push_back(f);
  }
  const std::string text = agent::render_prometheus(s);
  size_t series = 0;
  for (size_t at = text.find("\ncutriage_kernel_family_launches_total{"); at != std::string::npos;
       at = text.find("\ncutriage_kernel_family_launches_total{", at + 1)) {
    ++series;
  }
  CHECK(series == agent::kMaxPromFamilies);
  CHECK(text.find(std::string(agent::kMaxKernelLabel, 'k') + "...\"") != std::string::npos);
  CHECK(text.find(std::string(agent::kMaxKernelLabel + 1, 'k')) == std::string::npos);
}

TEST_CASE("prometheus: the file is replaced atomically, no temporary left", "[agent][prometheus]") {
  const auto dir = std::filesystem::temp_directory_path() / ("cutriage-prom-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "cutriage.prom";
  CHECK(agent::write_atomically(path.string(), "first\n").empty());
  CHECK(agent::write_atomically(path.string(), "second\n").empty());
  CHECK(testing::slurp(path) == "second\n");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  // An unwritable place: an error naming the path, nothing left behind.
  const std::string error = agent::write_atomically((dir / "missing" / "x.prom").string(), "x");
  CHECK(error.find("missing") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("prometheus: a symbolic link planted at the temporary name is never written through", "[agent][prometheus]") {
  const auto dir = std::filesystem::temp_directory_path() / ("cutriage-prom-link-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto victim = dir / "victim.txt";
  { std::ofstream(victim) << "keep me"; }
  const auto path = dir / "cutriage.prom";
  const auto tmp = dir / (".cutriage.prom.tmp." + std::to_string(::getpid()));
  std::filesystem::create_symlink(victim, tmp);
  const std::string error = agent::write_atomically(path.string(), "series 1\n");
  CHECK_FALSE(error.empty());
  CHECK(testing::slurp(victim) == "keep me");  // before: the link's target was truncated and written
  CHECK(std::filesystem::is_symlink(tmp));       // not ours: left where it was
  CHECK_FALSE(std::filesystem::exists(path));
  // A leftover regular file of our own at that name (a crashed process with the same pid) is
  // replaced.
  std::filesystem::remove(tmp);
  { std::ofstream(tmp) << "stale"; }
  CHECK(agent::write_atomically(path.string(), "series 2\n").empty());
  CHECK(testing::slurp(path) == "series 2\n");
  CHECK_FALSE(std::filesystem::exists(tmp));
  std::filesystem::remove_all(dir);
}

TEST_CASE("prometheus: the agent writes its families and verdicts at exit", "[agent][prometheus]") {
  const testing::Captured a = capture_of("vector_add");
  const auto dir = std::filesystem::temp_directory_path() / ("cutriage-prom-agent-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  agent::AgentConfig cfg = testing::select_all();
  cfg.prometheus_file = (dir / "cutriage.prom").string();
  Harness h(cfg, counters_for({&a}));
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 6; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
  h.ag->finish();
  const std::string text = testing::slurp(dir / "cutriage.prom");
  INFO(text);
  CHECK(text.find("cutriage_kernel_launches_total{Hostname=\"testhost\"} 6\n") != std::string::npos);
  CHECK(text.find("UUID=\"GPU-fake-0\"") != std::string::npos);
  CHECK(text.find("cutriage_kernel_family_launches_total{") != std::string::npos);
  // The kernel was profiled: its verdict is a series.
  CHECK(text.find("cutriage_kernel_family_verdict{") != std::string::npos);
  CHECK(text.find("verdict=\"memory_bound\"") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("prometheus: always-on families' progress, only in always-on mode", "[agent][prometheus]") {
  agent::PromSnapshot s = synthetic();  // synthetic values
  s.families[0].complete = true;
  s.families[0].assembled_launches = 17;
  s.families[1].assembled_launches = 4;
  s.families[1].counters_missing = 52;
  CHECK(agent::render_prometheus(s).find("cutriage_kernel_family_diagnosis_complete") == std::string::npos);
  s.has_budget = true;
  const std::string text = agent::render_prometheus(s);
  INFO(text);
  const std::string reduce = "{gpu=\"0\",UUID=\"GPU-1234\",model_name=\"NVIDIA H200\",Hostname=\"node-7\",family=\"2\","
                             "kernel=\"reduce\"}";
  CHECK(text.find("# TYPE cutriage_kernel_family_diagnosis_complete gauge\n") != std::string::npos);
  CHECK(text.find("cutriage_kernel_family_diagnosis_complete" + reduce + " 0\n") != std::string::npos);
  CHECK(text.find("cutriage_kernel_family_assembled_launches" + reduce + " 4\n") != std::string::npos);
  CHECK(text.find("cutriage_kernel_family_counters_missing" + reduce + " 52\n") != std::string::npos);
  CHECK(text.find("family=\"1\",kernel=\"void gemm") != std::string::npos);
  CHECK(text.find("cutriage_kernel_family_assembled_launches{gpu=\"0\",UUID=\"GPU-1234\",model_name=\"NVIDIA H200\","
                  "Hostname=\"node-7\",family=\"1\"") != std::string::npos);
  // A family with nothing assembled yet has no progress series.
  s.families[1].assembled_launches = 0;
  CHECK(agent::render_prometheus(s).find("cutriage_kernel_family_counters_missing" + reduce) == std::string::npos);
}

TEST_CASE("prometheus: an always-on run exports its families' progress", "[agent][prometheus]") {
  const testing::Captured a = capture_of("strided_load");
  const auto dir = std::filesystem::temp_directory_path() / ("cutriage-prom-ao-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  agent::AgentConfig cfg = testing::select_all();
  cfg.mode = agent::AgentMode::kAlwaysOn;
  cfg.budget_fraction = 0.01;
  cfg.summary = false;
  cfg.trace_flush_ms = 0;
  cfg.prometheus_file = (dir / "cutriage.prom").string();
  Harness h(cfg, counters_for({&a}));
  REQUIRE(h.ag->start());
  uint64_t n = 0;
  auto serve = [&](int seconds) {
    for (int i = 0; i < seconds; ++i) {
      h.platform.mono_ns += 1'000'000'000;
      h.platform.launch(make_launch(a.mangled, ++n, a.launch.grid, a.launch.block));
    }
  };
  serve(150);  // partway: a few groups assembled
  h.ag->flush();
  const std::string partway = testing::slurp(dir / "cutriage.prom");
  serve(900);  // complete
  h.ag->finish();
  const std::string done = testing::slurp(dir / "cutriage.prom");
  INFO(partway << "\n----\n" << done);
  auto value = [](const std::string& text, const std::string& series) {
    const size_t at = text.find(series + "{");
    REQUIRE(at != std::string::npos);
    const size_t space = text.find("} ", at);
    return std::stod(text.substr(space + 2, text.find('\n', space) - space - 2));
  };
  CHECK(value(partway, "cutriage_kernel_family_diagnosis_complete") == 0);
  CHECK(value(partway, "cutriage_kernel_family_assembled_launches") >= 2);
  CHECK(value(partway, "cutriage_kernel_family_counters_missing") > 0);
  CHECK(value(done, "cutriage_kernel_family_diagnosis_complete") == 1);
  CHECK(value(done, "cutriage_kernel_family_counters_missing") == 0);
  CHECK(value(done, "cutriage_kernel_family_assembled_launches") > value(partway, "cutriage_kernel_family_assembled_launches"));
  std::filesystem::remove_all(dir);
}

// `promtool check metrics` failed every file on the label modelName (not snake_case): the model is
// model_name unless CUTRIAGE_PROMETHEUS_DCGM_LABELS asks for dcgm-exporter's name.
TEST_CASE("prometheus: label names are snake_case unless dcgm-exporter's are asked for", "[agent][prometheus]") {
  agent::PromSnapshot s = synthetic();
  const std::string text = agent::render_prometheus(s);
  CHECK(text.find("modelName") == std::string::npos);
  CHECK(text.find(",model_name=\"NVIDIA H200\",") != std::string::npos);
  s.dcgm_model_label = true;
  const std::string dcgm = agent::render_prometheus(s);
  CHECK(dcgm.find("model_name") == std::string::npos);
  CHECK(dcgm.find(",modelName=\"NVIDIA H200\",") != std::string::npos);

  agent::AgentConfig cfg;
  CHECK_FALSE(cfg.prometheus_dcgm_labels);
}

}  // namespace test_prometheus
