// The control file against a writer that misbehaves (issue 25, docs/guarantees.md): junk written
// again and again must not fill the output or the log, and a name that is not a regular file is
// neither read, blocked on, nor deleted. Driven through the fake platform with the flush thread.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "agent_harness.h"
#include "control.h"
#include "deep_capture.h"
#include "trace_export.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_control_hardening {

using namespace cutriage;
using agent::AgentConfig;
using testing::Captured;
using testing::Harness;

namespace {

size_t count_lines_with(const std::string& text, const std::string& needle) {
  size_t n = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t eol = std::min(text.find('\n', at), text.size());
    if (text.substr(at, eol - at).find(needle) != std::string::npos) ++n;
    at = eol + 1;
  }
  return n;
}

struct ControlDir {
  std::filesystem::path dir;
  ControlDir() {
    dir = std::filesystem::temp_directory_path() /
          ("cutriage-control-hardening-" + std::to_string(::getpid()) + "-" + std::to_string(++serial));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~ControlDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  [[nodiscard]] std::filesystem::path control() const { return dir / "control"; }
  static inline int serial = 0;
};

AgentConfig polling(const ControlDir& d) {
  AgentConfig c = testing::select_all();
  c.mode = agent::AgentMode::kAlwaysOn;
  c.summary = false;
  c.control_file = d.control().string();
  c.trace_flush_ms = 2;
  return c;
}

// Renames `text` into place, as a writer should, and waits until the agent took it.
bool submit(const ControlDir& d, const std::string& text) {
  std::ofstream(d.dir / "control.tmp") << text;
  std::filesystem::rename(d.dir / "control.tmp", d.control());
  for (int i = 0; i < 2000 && std::filesystem::exists(d.control()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return !std::filesystem::exists(d.control());
}

// A few launches, so that the agent saw GPU work and finish() writes the session's end.
void launch_some(Harness& h, const Captured& a) {
  for (uint64_t i = 1; i <= 3; ++i) {
    h.platform.mono_ns += 1'000'000;
    h.platform.launch(testing::make_launch(a.mangled.c_str(), i, a.launch.grid, a.launch.block));
  }
}

}  // namespace

TEST_CASE("control file: 200 junk files give a few records and warnings, and the count of the rest",
          "[agent][control]") {
  // Before: 200 rejected records and 200 warning lines, one per file.
  ControlDir d;
  Captured a = testing::capture_of("strided_load");
  Harness h(polling(d), testing::counters_for({&a}));
  REQUIRE(h.ag->start());
  constexpr int kJunk = 200;
  int taken = 0;
  for (int i = 0; i < kJunk; ++i) taken += submit(d, "junk-" + std::to_string(i) + " please\n") ? 1 : 0;
  REQUIRE(taken == kJunk);
  launch_some(h, a);
  h.ag->finish();

  tools::ReadResult r = h.read();
  std::vector<const v1::ControlRequest*> reqs = tools::control_requests(r);
  constexpr size_t kWritten = agent::DeepCaptures::kMaxRefusalsWritten;
  REQUIRE(reqs.size() == kWritten + 1);  // the first ones, then one with the count
  std::sort(reqs.begin(), reqs.end(), [](auto* x, auto* y) { return x->id() < y->id(); });
  for (size_t i = 0; i < kWritten; ++i) {
    CHECK(reqs[i]->state() == v1::CONTROL_STATE_REJECTED);
    CHECK(reqs[i]->detail().find("unknown command \"junk-" + std::to_string(i) + "\"") != std::string::npos);
  }
  const v1::ControlRequest* count = reqs.back();
  CHECK(count->state() == v1::CONTROL_STATE_REJECTED);
  CHECK(count->source() == v1::CONTROL_SOURCE_FILE);
  CHECK(count->detail() == std::to_string(kJunk - kWritten) + " more refused requests ignored (only the first " +
                               std::to_string(kWritten) + " are written)");

  const std::string log = h.log_text();
  INFO(log);
  CHECK(count_lines_with(log, "unknown command") == kWritten);
  CHECK(count_lines_with(log, "the next ones are counted") == 1);
  CHECK(count_lines_with(log, std::to_string(kJunk - kWritten) + " more refused requests ignored") == 1);
  CHECK(count_lines_with(log, "cutriage: ") <= kWritten + 4);
}

TEST_CASE("control file: a valid request after the junk still opens a window", "[agent][control]") {
  ControlDir d;
  Captured a = testing::capture_of("strided_load");
  Harness h(polling(d), testing::counters_for({&a}));
  REQUIRE(h.ag->start());
  for (int i = 0; i < 10; ++i) REQUIRE(submit(d, "nonsense\n"));
  REQUIRE(submit(d, "deep 10 top:1\n"));
  launch_some(h, a);
  h.ag->finish();
  tools::ReadResult r = h.read();
  const std::vector<const v1::ControlRequest*> reqs = tools::control_requests(r);
  CHECK(std::count_if(reqs.begin(), reqs.end(), [](auto* q) {
          return q->state() != v1::CONTROL_STATE_REJECTED && q->target() == "top:1";
        }) == 1);
}

TEST_CASE("control file: a FIFO, a directory or a device at the name is neither read nor deleted",
          "[agent][control]") {
  ControlDir d;
  std::string error;
  SECTION("FIFO") {
    REQUIRE(::mkfifo(d.control().c_str(), 0600) == 0);
    CHECK_FALSE(agent::take_control_file(d.control().string(), &error).has_value());
    CHECK(error.find("is a named pipe (FIFO), not a regular file") != std::string::npos);
    struct stat st {};
    REQUIRE(::lstat(d.control().c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));  // before: deleted after a read of nothing
  }
  SECTION("directory") {
    std::filesystem::create_directories(d.control());
    CHECK_FALSE(agent::take_control_file(d.control().string(), &error).has_value());
    CHECK(error.find("is a directory, not a regular file") != std::string::npos);
    CHECK(std::filesystem::is_directory(d.control()));
  }
  SECTION("character device") {
    CHECK_FALSE(agent::take_control_file("/dev/zero", &error).has_value());
    CHECK(error.find("is a character device, not a regular file") != std::string::npos);
    CHECK(std::filesystem::exists("/dev/zero"));
  }
  SECTION("a regular file is read and deleted") {
    std::ofstream(d.control()) << "deep\n";
    auto text = agent::take_control_file(d.control().string(), &error);
    REQUIRE(text.has_value());
    CHECK(*text == "deep\n");
    CHECK(error.empty());
    CHECK_FALSE(std::filesystem::exists(d.control()));
  }
}

}  // namespace test_control_hardening
