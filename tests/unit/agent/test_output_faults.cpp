// The agent's output file when the process dies while writing it, or the disk fills (issue 25;
// docs/guarantees.md). The "application" is a forked child running the agent core on the fake
// platform with the real file sink, so the bytes on disk are what a killed or starved process
// leaves; the parent reads them with the tool's reader.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include "agent.h"
#include "agent_harness.h"
#include "capture_support.h"
#include "catch.h"
#include "fake_platform.h"
#include "file_reader.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_output_faults {

using namespace cutriage;
using agent::Agent;
using agent::AgentConfig;
using testing::capture_of;
using testing::Captured;
using testing::count_lines_containing;
using testing::counters_for;
using testing::make_launch;
using testing::slurp;

namespace {

// The records of a cutriage file as its framing says, without the reader under test: how many
// are complete and where the last complete one ends.
struct Framing {
  int complete = 0;
  uint64_t good_end = 0;
};
Framing walk(const std::string& bytes) {
  Framing f;
  size_t i = 0;
  while (i < bytes.size() && static_cast<unsigned char>(bytes[i]) == 0x0a) {
    size_t j = i + 1;
    uint64_t length = 0;
    unsigned shift = 0;
    bool done = false;
    while (j < bytes.size() && shift < 64) {
      const auto b = static_cast<unsigned char>(bytes[j++]);
      length |= static_cast<uint64_t>(b & 0x7fu) << shift;
      shift += 7;
      if ((b & 0x80u) == 0) {
        done = true;
        break;
      }
    }
    if (!done || length > bytes.size() - j) break;
    i = j + static_cast<size_t>(length);
    ++f.complete;
    f.good_end = i;
  }
  return f;
}

// The forked "application": the agent profiles every launch of `a` (one record each) until it is
// killed or has made `launches`, then exits with `status`. Never returns.
[[noreturn]] void run_application(const Captured& a, const std::string& out, const std::string& log_path,
                                  uint64_t launches, int status) {
  AgentConfig cfg = testing::select_all();
  cfg.max_profiles_per_kernel = 1000000;
  cfg.trace_flush_ms = 0;
  testing::FakePlatform platform(counters_for({&a}));
  agent::Logger log;
  (void)log.configure(agent::LogLevel::kWarn, log_path);
  {
    Agent ag(std::move(cfg), platform, agent::make_file_sink(out, log), log,
             agent::ProcessInfo{4242, "h", {"./app"}, {}, {}});
    if (!ag.start()) ::_exit(90);
    for (uint64_t i = 1; i <= launches; ++i) platform.launch(make_launch(a.mangled, i, a.launch.grid, a.launch.block));
    ag.finish();
    // The application ran every launch whatever happened to the output.
    if (platform.stats.begins.load() < 1) ::_exit(91);
  }
  ::_exit(status);
}

std::filesystem::path temp(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("cutriage-faults-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST_CASE("agent output: SIGKILL while writing leaves every complete record readable, the tail said torn",
          "[agent][faults]") {
  const Captured a = capture_of("strided_load");
  for (const uint64_t kill_at : {uint64_t{4} << 10, uint64_t{200} << 10, uint64_t{1} << 20}) {
    const auto out = temp("killed.pb");
    const auto log = temp("killed.log");
    std::filesystem::remove(out);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) run_application(a, out.string(), log.string(), UINT64_MAX, 0);
    // Kill it as soon as the file has grown past `kill_at`, mid-run. The sink writes each batch of
    // records with write(2), so the kill lands between writes (seen: never mid-record on
    // ext4 and tmpfs); the cut below stands for a kill inside a write.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::error_code ec;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto size = std::filesystem::file_size(out, ec);
      if (!ec && size >= kill_at) break;
      std::this_thread::yield();
    }
    REQUIRE(::kill(child, SIGKILL) == 0);
    int wstatus = 0;
    REQUIRE(::waitpid(child, &wstatus, 0) == child);
    REQUIRE(WIFSIGNALED(wstatus));
    CHECK(WTERMSIG(wstatus) == SIGKILL);

    const std::string bytes = slurp(out);
    INFO("killed at " << bytes.size() << " bytes");
    REQUIRE(bytes.size() >= kill_at);
    const Framing framing = walk(bytes);
    REQUIRE(framing.complete >= 2);
    const tools::ReadResult r = tools::read_cutriage_file(out.string());
    CHECK(r.file.records_size() == framing.complete);
    CHECK(r.bytes_total == bytes.size());
    CHECK(r.bytes_skipped == bytes.size() - framing.good_end);
    if (framing.good_end == bytes.size()) {
      CHECK(r.status == tools::ReadStatus::kOk);
    } else {
      CHECK(r.status == tools::ReadStatus::kTruncated);
      CHECK(r.message.find("a torn or corrupt record") != std::string::npos);
    }
    REQUIRE(r.file.records_size() > 0);
    CHECK(r.file.records(0).has_session());
    CHECK_FALSE(r.file.records(r.file.records_size() - 1).has_session_end());  // it never got there

    // A kill inside write(2) leaves the record it was writing cut: the same file cut inside its
    // last complete record reads as every record before it, and says the tail is torn.
    std::filesystem::resize_file(out, framing.good_end - 3);
    const tools::ReadResult cut = tools::read_cutriage_file(out.string());
    CHECK(cut.status == tools::ReadStatus::kTruncated);
    CHECK(cut.file.records_size() == framing.complete - 1);
    CHECK(cut.message.find("a torn or corrupt record") != std::string::npos);
    std::filesystem::remove(out);
    std::filesystem::remove(log);
  }
}

TEST_CASE("agent output: a full disk gives one error line, the application runs on with its exit status",
          "[agent][faults]") {
  // RLIMIT_FSIZE stands for the full file system: writes past 64 KiB fail (EFBIG, SIGXFSZ
  // ignored, as an application may), the first of them short, tearing the record it was writing.
  const Captured a = capture_of("strided_load");
  const auto out = temp("full.pb");
  const auto log = temp("full.log");
  std::filesystem::remove(out);
  std::filesystem::remove(log);
  constexpr rlim_t kRoom = rlim_t{64} << 10;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    (void)::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{kRoom, kRoom};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(92);
    run_application(a, out.string(), log.string(), 200, 42);
  }
  int wstatus = 0;
  REQUIRE(::waitpid(child, &wstatus, 0) == child);
  REQUIRE(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 42);  // the application's own status, after all 200 launches

  const std::string text = slurp(log);
  INFO(text);
  CHECK(count_lines_containing(text, "cannot write " + out.string()) == 1);
  CHECK(count_lines_containing(text, "the application continues, profiling results are not saved") == 1);
  CHECK(count_lines_containing(text, "File too large") == 1);

  const std::string bytes = slurp(out);
  CHECK(bytes.size() == kRoom);
  const Framing framing = walk(bytes);
  const tools::ReadResult r = tools::read_cutriage_file(out.string());
  CHECK(r.file.records_size() == framing.complete);
  CHECK(r.bytes_skipped == bytes.size() - framing.good_end);
  if (framing.good_end < bytes.size()) {
    CHECK(r.status == tools::ReadStatus::kTruncated);
    CHECK(r.message.find("a torn or corrupt record") != std::string::npos);
  }
  REQUIRE(r.file.records_size() > 0);
  CHECK(r.file.records(0).has_session());
  std::filesystem::remove(out);
  std::filesystem::remove(log);
}

}  // namespace test_output_faults
