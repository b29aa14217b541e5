// The agent's own thread and the application's signals (issue 25 item 7): the flush thread runs
// with every signal blocked, so a signal the application blocks in its threads (to take it with
// sigwait) is never delivered to, and never kills the process through, a thread of the agent.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "catch.h"
#include "flush_thread.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_flush_thread {

TEST_CASE("flush thread: every signal blocked on it, the caller's mask untouched", "[agent][flush_thread]") {
  sigset_t before;
  REQUIRE(pthread_sigmask(SIG_BLOCK, nullptr, &before) == 0);
  REQUIRE(sigismember(&before, SIGTERM) == 0);  // the test's own thread takes SIGTERM

  std::atomic<int> ticks{0};
  std::atomic<bool> all_blocked{true};
  cutriage::agent::FlushThread thread;
  REQUIRE(thread.start(1, [&] {
    sigset_t mine;
    if (pthread_sigmask(SIG_BLOCK, nullptr, &mine) != 0) all_blocked = false;
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGPIPE, SIGCHLD}) {
      if (sigismember(&mine, s) != 1) all_blocked = false;
    }
    ++ticks;
  }));
  for (int i = 0; i < 2000 && ticks.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  thread.stop();
  REQUIRE(ticks.load() > 0);
  CHECK(all_blocked.load());

  sigset_t after;
  REQUIRE(pthread_sigmask(SIG_BLOCK, nullptr, &after) == 0);
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) CHECK(sigismember(&after, s) == sigismember(&before, s));
}

}  // namespace test_flush_thread
