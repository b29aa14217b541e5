// The process's place in a distributed job (agent/src/job_place.h): read from each launcher's
// variables on a fake environment, written into the session header by the agent on the fake
// platform, and carried as the `rank` label of every Prometheus series.
#include <filesystem>
#include <map>
#include <string>

#include "agent_harness.h"
#include "job_place.h"
#include "prometheus.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_job_place {

using namespace cutriage;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::make_launch;

namespace {

agent::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("job place: each launcher's variables", "[agent][job]") {
  SECTION("torchrun") {
    auto p = agent::job_place_from(env_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}));
    REQUIRE(p);
    CHECK(p->rank == 3);
    CHECK(p->local_rank == 1);
    CHECK(p->has_local_rank);
    CHECK(p->world_size == 8);
    CHECK(p->rank_variable == "RANK");
  }
  SECTION("Open MPI") {
    auto p = agent::job_place_from(env_of({{"OMPI_COMM_WORLD_RANK", "5"},
                                           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                           {"OMPI_COMM_WORLD_SIZE", "6"}}));
    REQUIRE(p);
    CHECK(p->rank == 5);
    CHECK(p->local_rank == 1);
    CHECK(p->world_size == 6);
    CHECK(p->rank_variable == "OMPI_COMM_WORLD_RANK");
  }
  SECTION("Slurm") {
    auto p = agent::job_place_from(env_of({{"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "2"}}));
    REQUIRE(p);
    CHECK(p->rank == 0);
    CHECK(p->has_local_rank);
    CHECK(p->world_size == 2);
    CHECK(p->rank_variable == "SLURM_PROCID");
  }
  SECTION("PMI: no local rank") {
    auto p = agent::job_place_from(env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}}));
    REQUIRE(p);
    CHECK(p->rank == 1);
    CHECK_FALSE(p->has_local_rank);
    CHECK(p->world_size == 4);
    CHECK(p->rank_variable == "PMI_RANK");
  }
  SECTION("no launcher") {
    CHECK_FALSE(agent::job_place_from(env_of({{"HOME", "/root"}})));
    CHECK_FALSE(agent::job_place_from(agent::EnvLookup{}));
  }
}

TEST_CASE("job place: torchrun under Slurm names the worker, not the Slurm task", "[agent][job]") {
  auto p = agent::job_place_from(env_of({{"RANK", "3"}, {"LOCAL_RANK", "3"}, {"WORLD_SIZE", "4"},
                                         {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "1"}}));
  REQUIRE(p);
  CHECK(p->rank == 3);
  CHECK(p->world_size == 4);
  CHECK(p->rank_variable == "RANK");
}

TEST_CASE("job place: values that are not non-negative integers are ignored", "[agent][job]") {
  for (const std::string bad : {"", "-1", "+1", " 1", "1 ", "one", "0x1", "1.0", "4294967296"}) {
    INFO("RANK=\"" << bad << "\"");
    // A rank that does not parse: the next launcher's is taken, the torchrun sizes are not mixed in.
    auto p = agent::job_place_from(env_of({{"RANK", bad}, {"WORLD_SIZE", "8"}, {"PMI_RANK", "2"}, {"PMI_SIZE", "3"}}));
    REQUIRE(p);
    CHECK(p->rank == 2);
    CHECK(p->world_size == 3);
    CHECK(p->rank_variable == "PMI_RANK");
    CHECK_FALSE(agent::job_place_from(env_of({{"RANK", bad}})));
    // A local rank or world size that does not parse is unknown; the rank stands.
    auto q = agent::job_place_from(env_of({{"RANK", "1"}, {"LOCAL_RANK", bad}, {"WORLD_SIZE", bad}}));
    REQUIRE(q);
    CHECK(q->rank == 1);
    CHECK_FALSE(q->has_local_rank);
    CHECK(q->world_size == 0);
  }
  CHECK(agent::job_place_from(env_of({{"RANK", "4294967295"}}))->rank == 4294967295u);
  CHECK(agent::job_place_from(env_of({{"RANK", "007"}}))->rank == 7);
  // A world size not above the rank is not a world this rank is in.
  CHECK(agent::job_place_from(env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}))->world_size == 0);
  CHECK(agent::job_place_from(env_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}}))->world_size == 2);
}

namespace {

// The file of a run of one kernel launched twice: the agent writes its header with the first
// record.
void run_one_kernel(Harness& h) {
  const testing::Captured a = capture_of("vector_add");
  REQUIRE(h.ag->start());
  for (uint64_t i = 1; i <= 2; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
  h.ag->finish();
}

}  // namespace

TEST_CASE("job place: the agent writes it into the session header", "[agent][job]") {
  SECTION("a rank of a job") {
    Harness h(testing::select_all(), {}, wire::JobPlace{1, 2, 1, true, "RANK"});
    run_one_kernel(h);
    const tools::ReadResult r = h.read();
    REQUIRE(r.status == tools::ReadStatus::kOk);
    const v1::SessionHeader& s = r.file.records(0).session();
    REQUIRE(s.has_job());
    CHECK(s.job().rank() == 1);
    CHECK(s.job().world_size() == 2);
    CHECK(s.job().local_rank() == 1);
    CHECK(s.job().has_local_rank());
    CHECK(s.job().rank_variable() == "RANK");
    CHECK(s.host() == "testhost");  // the rest of the header as before
  }
  SECTION("rank 0 reads as rank 0, not as no rank") {
    Harness h(testing::select_all(), {}, wire::JobPlace{0, 2, 0, true, "SLURM_PROCID"});
    run_one_kernel(h);
    const tools::ReadResult r = h.read();
    REQUIRE(r.status == tools::ReadStatus::kOk);
    REQUIRE(r.file.records(0).session().has_job());
    CHECK(r.file.records(0).session().job().rank() == 0);
    CHECK(r.file.records(0).session().job().rank_variable() == "SLURM_PROCID");
  }
  SECTION("a lone process has none") {
    Harness h;
    run_one_kernel(h);
    const tools::ReadResult r = h.read();
    REQUIRE(r.status == tools::ReadStatus::kOk);
    CHECK_FALSE(r.file.records(0).session().has_job());
  }
}

TEST_CASE("job place: every Prometheus series carries the rank when it is known", "[agent][job][prometheus]") {
  const testing::Captured a = capture_of("vector_add");
  const auto dir = std::filesystem::temp_directory_path() / ("cutriage-prom-rank-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  agent::AgentConfig cfg = testing::select_all();
  cfg.prometheus_file = (dir / "cutriage.prom").string();
  {
    Harness h(cfg, counters_for({&a}), wire::JobPlace{1, 2, 1, true, "RANK"});
    REQUIRE(h.ag->start());
    for (uint64_t i = 1; i <= 6; ++i) h.platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
    h.ag->finish();
  }
  const std::string text = testing::slurp(dir / "cutriage.prom");
  INFO(text);
  CHECK(text.find("cutriage_kernel_launches_total{Hostname=\"testhost\",rank=\"1\"} 6\n") != std::string::npos);
  CHECK(text.find("cutriage_agent_info{Hostname=\"testhost\",rank=\"1\",state=\"active\"} 1\n") != std::string::npos);
  // Every sample line with labels has the rank right after the host.
  size_t samples = 0;
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
    if (text[at] == '#') continue;
    const size_t brace = text.find('{', at);
    if (brace == std::string::npos || brace > text.find('\n', at)) continue;
    ++samples;
    CHECK(text.substr(brace, text.find('}', brace) - brace).find("Hostname=\"testhost\",rank=\"1\"") != std::string::npos);
  }
  CHECK(samples > 5);
  std::filesystem::remove_all(dir);

  // Without a rank, no rank label (the files of a lone process are as before).
  agent::PromSnapshot lone;
  lone.host = "h";
  lone.gpus.push_back({0, "GPU-1", "NVIDIA H200", 1, 2});
  CHECK(agent::render_prometheus(lone).find("rank=") == std::string::npos);
  lone.rank = 0;
  CHECK(agent::render_prometheus(lone).find("cutriage_gpu_busy_seconds{gpu=\"0\",UUID=\"GPU-1\",model_name=\"NVIDIA H200\","
                                            "Hostname=\"h\",rank=\"0\"} 1\n") != std::string::npos);
}

}  // namespace test_job_place
