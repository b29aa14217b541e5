// Misuses the C API the way a service might: calls before start, twice, after finish, bad
// configuration strings, and every function from many threads at once. Every call must be
// harmless: no crash, no hang, at most one line on stderr, and the answers the header promises.
// Runs on CI without a GPU (the agent then stays off after one line) and on the GPU machine.
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "cutriage/cutriage.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  // Before anything: inactive, and the rest are no-ops.
  expect(cutriage_active() == 0, "inactive before start");
  cutriage_flush();
  cutriage_stop();
  expect(cutriage_request_deep_capture(nullptr, 0) == 0, "no deep capture before start");
  expect(cutriage_request_deep_capture("regex:(", 5) == 0, "no deep capture before start, bad target or not");
  cutriage_finish();
  expect(std::strlen(cutriage_version()) > 0, "a version");

  // Configuration strings: refused ones return 0, valid ones 1; the last call wins.
  expect(cutriage_init("no equals sign") == 0, "an entry without '=' is refused");
  expect(cutriage_init("SELECT=top:3") == 0, "a name outside CUTRIAGE_* is refused");
  expect(cutriage_init("CUTRIAGE_SELECT=bogus") == 0, "a bad value is refused");
  expect(cutriage_init(nullptr) == 1, "an empty configuration is valid");
  expect(cutriage_init(" CUTRIAGE_SUMMARY=0 ;\nCUTRIAGE_OUTPUT=api-misuse-%p.pb; ") == 1, "a valid configuration");

  // Everything at once from many threads.
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        switch ((t + i) % 7) {
          case 0: (void)cutriage_start(); break;
          case 1: (void)cutriage_active(); break;
          case 2: cutriage_flush(); break;
          case 3: (void)cutriage_init("CUTRIAGE_SUMMARY=0"); break;
          case 4: cutriage_stop(); break;
          case 5: (void)cutriage_request_deep_capture("top:1", 1); break;
          default: (void)cutriage_version(); break;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const int started = cutriage_start();
  expect(cutriage_start() == started, "start answers the same every time");
  expect(cutriage_init("CUTRIAGE_SUMMARY=1") == 0, "init after start is refused (the configuration is fixed)");

  // Finish twice, then calls after finish.
  cutriage_finish();
  cutriage_finish();
  cutriage_flush();
  cutriage_stop();
  expect(cutriage_request_deep_capture(nullptr, 0) == 0, "no deep capture after finish");
  expect(cutriage_start() == started, "start after finish answers as before");
  std::printf("api: %s (started=%d)\n", failures == 0 ? "ok" : "FAILED", started);
  return failures == 0 ? 0 : 1;
}
