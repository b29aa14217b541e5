// `cutriage run --replay application`'s decision after each run (tools/src/run.cpp, replay_step):
// another run when the last one added something, family by family; the loop ends when it added
// nothing or lost what the earlier runs had measured. The whole loop runs in tests/cli/
// test_app_replay.sh, with the agent core on the fake platform as the program.
#include "catch.h"
#include "run.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_replay_step {

using cutriage::tools::replay_step;
using cutriage::tools::ReplayState;
using cutriage::tools::ReplayStep;

namespace {

ReplayState with(std::initializer_list<std::pair<const char*, ReplayState::Family>> families, uint32_t late = 0) {
  ReplayState s;
  for (const auto& [key, f] : families) s.families[key] = f;
  s.ranked_late = late;
  return s;
}

}  // namespace

TEST_CASE("replay step: what counts as another run adding something", "[tools][app_replay]") {
  const ReplayState::Family a{20, 2, 30, false};
  const ReplayState before = with({{"gemm/0/256x1x1", a}});
  CHECK(replay_step(before, before) == ReplayStep::kNothing);
  CHECK(replay_step(before, with({{"gemm/0/256x1x1", {21, 2, 29, false}}})) == ReplayStep::kProgress);
  // A group whose counters gave no value still settles them: fewer left to collect.
  CHECK(replay_step(before, with({{"gemm/0/256x1x1", {20, 9, 23, false}}})) == ReplayStep::kProgress);
  CHECK(replay_step(before, with({{"gemm/0/256x1x1", {20, 2, 30, true}}})) == ReplayStep::kProgress);
  CHECK(replay_step(before, with({{"gemm/0/256x1x1", a}, {"norm/0/128x1x1", {5, 0, 40, false}}})) ==
        ReplayStep::kProgress);
  // The late-ranked family profiled at last (the first run ranked it after its last launch).
  CHECK(replay_step(with({}, 1), with({{"gemm/0/256x1x1", a}})) == ReplayStep::kProgress);
  // Gone, or holding less, with nothing gained: the program ran other kernels or shapes.
  CHECK(replay_step(before, with({})) == ReplayStep::kLost);
  CHECK(replay_step(before, with({{"gemm/0/256x1x1", {12, 2, 30, false}}})) == ReplayStep::kLost);
  CHECK(replay_step(before, with({{"gemm/0/512x1x1", {12, 2, 30, false}}})) == ReplayStep::kProgress);
  // A family the earlier ranking no longer selects drops out while the others go on: still progress.
  CHECK(replay_step(with({{"gemm/0/256x1x1", a}, {"init/0/64x1x1", {8, 0, 50, false}}}),
                    with({{"gemm/0/256x1x1", {24, 2, 26, false}}})) == ReplayStep::kProgress);
}

}  // namespace test_replay_step
