// A process the application forks (issue 25 item 6): the child inherits the agent, its state and
// its output descriptor. At the child's exit the agent must write nothing (a second summary and
// session end would land in the parent's file) and print nothing; the parent's run goes on and
// ends with its own, single, session end. Driven through the fake platform; the kernel and its
// counter values are a real H200 capture.
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "agent_harness.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_fork {

using namespace cutriage;
using testing::Captured;
using testing::capture_of;
using testing::counters_for;
using testing::Harness;
using testing::make_launch;

TEST_CASE("fork: the child writes and prints nothing at its exit, the parent's file ends once", "[agent][fork]") {
  Captured a = capture_of("vector_add");
  Harness h(testing::select_all(), counters_for({&a}));
  REQUIRE(h.ag->start());
  h.platform.launch(make_launch(a.mangled, 1, a.launch.grid, a.launch.block));
  const size_t bytes_before = h.bytes.size();
  const std::string log_before = h.log_text();

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child: what its exit handlers would run. Its own copy of the output must not grow.
    h.ag->flush();
    h.ag->finish();
    ::_exit(h.bytes.size() == bytes_before ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(h.log_text() == log_before);  // the log file is shared: the child printed nothing to it

  h.ag->finish();
  const tools::ReadResult r = h.read();
  REQUIRE(r.status == tools::ReadStatus::kOk);
  int ends = 0;
  for (const v1::Record& rec : r.file.records()) ends += rec.has_session_end() ? 1 : 0;
  CHECK(ends == 1);
  CHECK(h.log_text() != log_before);  // the parent's exit summary
}

}  // namespace test_fork
