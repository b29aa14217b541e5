// The agent's output files (issue 25 items 4 and 5): created owner-only by default
// (CUTRIAGE_OUTPUT_MODE), never written through a symbolic link, never a FIFO or device, and a %n
// number claimed atomically so two processes that expanded the pattern at once never share a
// file. On the real file system, in a fresh temporary directory.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "catch.h"
#include "config.h"
#include "log.h"
#include "output.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_output_files {

namespace fs = std::filesystem;
using namespace cutriage;

namespace {

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() / ("cutriage-out-" + std::to_string(::getpid()) + "-" + std::to_string(++serial));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static inline int serial = 0;
  fs::path path;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return static_cast<unsigned>(st.st_mode) & 0777U;
}

void log_to(agent::Logger& log, const fs::path& file) { (void)log.configure(agent::LogLevel::kInfo, file.string()); }

}  // namespace

TEST_CASE("output files: owner-only by default, CUTRIAGE_OUTPUT_MODE otherwise, an earlier one replaced",
          "[agent][output]") {
  TempDir d;
  const mode_t old_umask = ::umask(022);
  agent::Logger log;
  log_to(log, d.path / "log.txt");
  {
    auto sink = agent::make_file_sink((d.path / "a.pb").string(), log);
    REQUIRE(sink->append("abc"));
  }
  CHECK(mode_of(d.path / "a.pb") == 0600U);
  {
    agent::OutputFileOptions o;
    o.mode = 0640;
    auto sink = agent::make_file_sink((d.path / "b.pb").string(), log, o);
    REQUIRE(sink->append("abc"));
  }
  CHECK(mode_of(d.path / "b.pb") == 0640U);
  // An earlier run's world-readable file at the same name: replaced, and owner-only now.
  { std::ofstream(d.path / "c.pb") << "an earlier, longer output"; }
  fs::permissions(d.path / "c.pb", fs::perms(0644));
  {
    auto sink = agent::make_file_sink((d.path / "c.pb").string(), log);
    REQUIRE(sink->append("new"));
  }
  CHECK(slurp(d.path / "c.pb") == "new");
  CHECK(mode_of(d.path / "c.pb") == 0600U);
  ::umask(old_umask);
}

TEST_CASE("output files: never through a symbolic link, never a FIFO", "[agent][output]") {
  TempDir d;
  agent::Logger log;
  log_to(log, d.path / "log.txt");
  { std::ofstream(d.path / "victim.txt") << "keep me"; }
  fs::create_symlink(d.path / "victim.txt", d.path / "out.pb");
  auto sink = agent::make_file_sink((d.path / "out.pb").string(), log);
  CHECK_FALSE(sink->append("overwrite"));
  CHECK(sink->failed());
  CHECK(slurp(d.path / "victim.txt") == "keep me");  // before: the symlink's target was clobbered
  CHECK(fs::is_symlink(d.path / "out.pb"));
  CHECK(slurp(d.path / "log.txt").find("symbolic link") != std::string::npos);

  REQUIRE(::mkfifo((d.path / "fifo.pb").c_str(), 0600) == 0);
  auto fifo = agent::make_file_sink((d.path / "fifo.pb").string(), log);
  CHECK_FALSE(fifo->append("x"));  // returns at once: no reader is waited for
  CHECK(slurp(d.path / "log.txt").find("named pipe") != std::string::npos);
  fs::create_directories(d.path / "dir.pb");
  CHECK_FALSE(agent::make_file_sink((d.path / "dir.pb").string(), log)->append("x"));

  // Segments: the .partial file goes through the same checks.
  const std::string partial = agent::segment_path((d.path / "seg.pb").string(), 1, true);
  fs::create_symlink(d.path / "victim.txt", partial);
  agent::SegmentOptions so;
  so.max_bytes = 1 << 20;
  CHECK_FALSE(agent::make_segment_sink((d.path / "seg.pb").string(), so, log)->append("x"));
  CHECK(slurp(d.path / "victim.txt") == "keep me");
}

TEST_CASE("output files: two processes expanding run-%n.pb at once get run-1 and run-2", "[agent][output]") {
  TempDir d;
  agent::Logger log;
  log_to(log, d.path / "log.txt");
  agent::PathContext ctx;
  ctx.exists = [](const std::string& p) { return fs::exists(p); };
  const std::string pattern = (d.path / "run-%n.pb").string();
  // Both expand before either writes: both see run-1 free (before: both wrote run-1, one run lost).
  const std::optional<std::string> first = agent::expand_path_pattern(pattern, ctx, nullptr);
  const std::optional<std::string> second = agent::expand_path_pattern(pattern, ctx, nullptr);
  REQUIRE(first == (d.path / "run-1.pb").string());
  REQUIRE(second == first);
  auto sink_for = [&](const std::string& path) {
    agent::OutputFileOptions o;
    o.sequence = agent::prepare_path_pattern(pattern, ctx, nullptr)->build;
    return agent::make_file_sink(path, log, o);
  };
  auto a = sink_for(*first);
  auto b = sink_for(*second);
  REQUIRE(a->append("process A"));
  REQUIRE(b->append("process B"));
  CHECK(a->describe() == (d.path / "run-1.pb").string());
  CHECK(b->describe() == (d.path / "run-2.pb").string());
  CHECK(slurp(d.path / "run-1.pb") == "process A");
  CHECK(slurp(d.path / "run-2.pb") == "process B");
}

TEST_CASE("config: CUTRIAGE_OUTPUT_MODE takes an octal mode the owner can read and write", "[agent][config]") {
  using agent::parse_config;
  CHECK(parse_config({}).config.output_mode == 0600U);
  CHECK(parse_config({{"CUTRIAGE_OUTPUT_MODE", "0640"}}).config.output_mode == 0640U);
  CHECK(parse_config({{"CUTRIAGE_OUTPUT_MODE", "644"}}).config.output_mode == 0644U);
  for (const char* bad : {"0700", "0400", "0777", "rw", "06400", "0x180", "1600"}) {
    INFO(bad);
    const agent::ConfigResult r = parse_config({{"CUTRIAGE_OUTPUT_MODE", bad}});
    CHECK_FALSE(r.ok());
    REQUIRE_FALSE(r.issues.empty());
    CHECK(r.issues[0].variable == "CUTRIAGE_OUTPUT_MODE");
    CHECK(r.issues[0].message.find("octal") != std::string::npos);
  }
}

TEST_CASE("output files: a file another agent is writing is never truncated, this one writes NAME.PID.pb",
          "[agent][output]") {
  // Seen on the H200: torch.compile's compile workers inherit CUTRIAGE_OUTPUT=run.pb, and a worker's
  // agent truncated the application's run.pb while it was being written; the application's later
  // records then followed 965,023 zero bytes and the file read as torn after its 6th record.
  // Two sinks of one process hold two descriptors, which flock(2) treats like two processes.
  TempDir d;
  agent::Logger log;
  log_to(log, d.path / "log.txt");
  const std::string path = (d.path / "run.pb").string();
  auto application = agent::make_file_sink(path, log);
  REQUIRE(application->append("application: header;"));
  auto worker = agent::make_file_sink(path, log);
  REQUIRE(worker->append("worker: header;"));
  REQUIRE(application->append("application: more records"));
  const std::string beside = agent::with_pid(path, static_cast<long>(::getpid()));
  CHECK(worker->describe() == beside);
  CHECK(slurp(path) == "application: header;application: more records");
  CHECK(slurp(beside) == "worker: header;");
  const std::string logged = slurp(d.path / "log.txt");
  CHECK(logged.find("is being written by another process") != std::string::npos);
  CHECK(logged.find(beside) != std::string::npos);
  // Once the application's file is closed, a later run replaces it as before.
  application.reset();
  auto later = agent::make_file_sink(path, log);
  REQUIRE(later->append("later"));
  CHECK(later->describe() == path);
  CHECK(slurp(path) == "later");
}

TEST_CASE("output files: with_pid puts the pid before the extension", "[agent][output]") {
  CHECK(agent::with_pid("run.pb", 42) == "run.42.pb");
  CHECK(agent::with_pid("/tmp/a.b/run.pb", 42) == "/tmp/a.b/run.42.pb");
  CHECK(agent::with_pid("/tmp/a.b/run", 42) == "/tmp/a.b/run.42");
  CHECK(agent::with_pid(".hidden", 42) == ".hidden.42");
  CHECK(agent::with_pid("dir/.hidden", 42) == "dir/.hidden.42");
}

}  // namespace test_output_files
