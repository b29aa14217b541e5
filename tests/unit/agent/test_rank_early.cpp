// Deep mode's early ranking (CUTRIAGE_RANK_EARLY, Agent::rank_at_second_launch) on the fake
// platform as CUPTI's global activity queue behaves on the H200: records come back only at a
// forced flush, which loses those of kernels still running. A short script queues its launches
// without a wait, so its top kernel's first execution has not come back at its second launch:
// the agent waits for the context there once, ranks the family, and profiles that launch.
#include <string>

#include "agent_harness.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_rank_early {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::make_launch;

namespace {

// The script: a short init kernel once (the inputs' random fill), then the top kernel (the GEMM)
// `top_launches` times back to back, no wait until the end.
struct Script {
  Captured init = capture_of("vector_add");
  Captured top = capture_of("fma_chain");
  int top_launches = 10;
};

AgentConfig top1() {
  AgentConfig c;
  c.select = agent::SelectMode::kTop;
  c.select_top = 1;
  c.trace_flush_ms = 0;
  c.pc_sampling = false;
  return c;
}

struct Outcome {
  tools::ReadResult read;
  std::string log;
  int waits = 0;
  int lost = 0;
};

// `before`: runs on the harness after start (a graph, a failing wait); `capturing`: the top
// kernel's launches go into a capturing stream.
template <typename Before>
Outcome run_script(const Script& s, AgentConfig cfg, Before before, bool capturing = false) {
  Harness h(std::move(cfg), counters_for({&s.init, &s.top}));
  h.platform.config.deliver_each_launch = false;
  h.platform.config.deliver_on_flush = false;
  h.platform.config.forced_flush_loses_running = true;
  h.platform.config.durations_ns[s.init.mangled] = 20000;
  h.platform.config.durations_ns[s.top.mangled] = 900000;
  REQUIRE(h.ag->start());
  before(h);
  uint64_t corr = 0;
  h.platform.launch(make_launch(s.init.mangled, ++corr, s.init.launch.grid, s.init.launch.block));
  for (int i = 0; i < s.top_launches; ++i) {
    collectors::LaunchEvent e = make_launch(s.top.mangled, ++corr, s.top.launch.grid, s.top.launch.block);
    e.stream_capturing = capturing;
    h.platform.launch(e);
  }
  h.platform.synchronize(/*whole_context=*/true);
  h.ag->finish();
  Outcome o{tools::read_cutriage_bytes(h.bytes), h.log_text(), h.platform.context_waits.load(),
            h.platform.lost_records.load()};
  REQUIRE(o.read.status == tools::ReadStatus::kOk);
  return o;
}

Outcome run_script(const Script& s, AgentConfig cfg) {
  return run_script(s, std::move(cfg), [](Harness&) {});
}

// The profiled record of `mangled` (its launch index), or 0 when none.
uint64_t profiled_launch(const tools::ReadResult& r, const std::string& mangled) {
  for (int i : r.kernel_records) {
    const v1::KernelProfile& k = r.file.records(i).kernel();
    if (k.status() == v1::PROFILE_STATUS_PROFILED && tools::lookup(r, k.mangled_name_iid()) == mangled) {
      return k.launch_index();
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("rank early: a script's top kernel queued without a wait is ranked at its second launch and profiled "
          "in the same run",
          "[agent][ranking][rank_early]") {
  const Script s;
  const Outcome early = run_script(s, top1());
  // One wait, at the top kernel's second launch (launch 3 of the run), which is then profiled.
  CHECK(early.waits == 1);
  CHECK(profiled_launch(early.read, s.top.mangled) == 3);
  CHECK(early.lost == 0);  // the flush came with nothing in flight
  const v1::FamilyStats* top = testing::family_stats(early.read, s.top.mangled);
  REQUIRE(top != nullptr);
  CHECK(top->selection() == v1::FamilyStats::SELECTION_PROFILED);
  CHECK(top->application_launches() == static_cast<uint64_t>(s.top_launches));  // one replayed launch not counted twice

  // The same script without it: ranked only after its last launch (`cutriage run` would run it again).
  AgentConfig off = top1();
  off.rank_early = false;
  const Outcome late = run_script(s, off);
  CHECK(late.waits == 0);
  CHECK(profiled_launch(late.read, s.top.mangled) == 0);
  const v1::FamilyStats* missed = testing::family_stats(late.read, s.top.mangled);
  REQUIRE(missed != nullptr);
  CHECK(missed->selection() == v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);
}

TEST_CASE("rank early: no wait for a family launched once, in always-on mode or into a capturing stream",
          "[agent][ranking][rank_early]") {
  Script s;
  SECTION("launched once: nothing to wait at, the re-run's case") {
    s.top_launches = 1;
    const Outcome o = run_script(s, top1());
    CHECK(o.waits == 0);
    CHECK(testing::family_stats(o.read, s.top.mangled)->selection() == v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);
  }
  SECTION("always-on waits for its budget, not for a ranking") {
    AgentConfig ao = testing::always_on_driven(0.004);
    ao.select = agent::SelectMode::kTop;
    ao.select_top = 1;
    CHECK(run_script(s, ao).waits == 0);
  }
  SECTION("a capturing stream: the launch does not run, and a wait would end the capture") {
    CHECK(run_script(s, top1(), [](Harness&) {}, /*capturing=*/true).waits == 0);
  }
}

TEST_CASE("rank early: once the process uses CUDA graphs, or a wait fails, the agent waits no more",
          "[agent][ranking][rank_early]") {
  const Script s;
  SECTION("a graph was made (another thread may be capturing)") {
    const Outcome o = run_script(s, top1(), [](Harness& h) {
      collectors::GraphEvent g;
      g.kind = collectors::GraphEvent::Kind::kNodeCreated;
      g.graph_id = 1;
      g.node_id = 100;
      h.platform.observer()->on_graph(g);
    });
    CHECK(o.waits == 0);
    CHECK(profiled_launch(o.read, s.top.mangled) == 0);
  }
  SECTION("the wait failed: said once, ranked at the application's own waits from then on") {
    const Outcome o = run_script(s, top1(), [](Harness& h) {
      h.platform.config.context_wait_status =
          collectors::Status(collectors::StatusCode::kInternal, "cuCtxSynchronize_v2(ctx) failed with CUresult 999");
    });
    CHECK(o.waits == 1);
    CHECK(o.log.find("CUTRIAGE_RANK_EARLY: waiting for the context failed (cuCtxSynchronize_v2(ctx) failed with "
                     "CUresult 999)") != std::string::npos);
    CHECK(profiled_launch(o.read, s.top.mangled) == 0);
  }
}

}  // namespace test_rank_early
