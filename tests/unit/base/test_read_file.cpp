// read_regular_file: the one way the agent and the tool read a file named from outside.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "catch.h"
#include "cutriage/base/read_file.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_read_file {

using cutriage::base::describe_size;
using cutriage::base::read_regular_file;

namespace {

// A fresh directory under the system's temporary one, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cutriage-read-file-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  [[nodiscard]] std::string file(const std::string& name, const std::string& text) const {
    std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

}  // namespace

TEST_CASE("read_regular_file reads a regular file whole", "[read_file]") {
  TempDir dir;
  const std::string text = "d1.waves_below_one.min_waves = 2\n";
  auto r = read_regular_file(dir.file("t.txt", text), 1024);
  REQUIRE(r.is_ok());
  CHECK(r.value() == text);
  auto empty = read_regular_file(dir.file("empty.txt", ""), 1024);
  REQUIRE(empty.is_ok());
  CHECK(empty.value().empty());
}

TEST_CASE("read_regular_file refuses a file over the limit", "[read_file]") {
  TempDir dir;
  const std::string path = dir.file("big.txt", std::string(1025, 'x'));
  auto r = read_regular_file(path, 1024);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == "is larger than 1 KiB (the most read)");
  CHECK(read_regular_file(path, 1025).is_ok());  // exactly at the limit is fine
}

TEST_CASE("read_regular_file refuses /dev/zero without reading it", "[read_file]") {
  // Before: an unbounded read grew to about 1 GB in a second, then std::bad_alloc.
  auto r = read_regular_file("/dev/zero", size_t{1} << 20);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == "is a character device, not a regular file");
}

TEST_CASE("read_regular_file refuses a directory instead of reading it as empty", "[read_file]") {
  TempDir dir;
  auto r = read_regular_file(dir.path.string(), 1024);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == "is a directory, not a regular file");
}

TEST_CASE("read_regular_file never waits on a named pipe without a writer", "[read_file]") {
  // Before: open(2) without O_NONBLOCK blocked until a writer came, inside the application's cuInit.
  TempDir dir;
  const std::string fifo = (dir.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto pending = std::async(std::launch::async, [&fifo] { return read_regular_file(fifo, 1024); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader so that the test ends, then fail.
    std::FILE* w = std::fopen(fifo.c_str(), "w");
    if (w != nullptr) (void)std::fclose(w);
    FAIL("read_regular_file blocked on a FIFO");
  }
  auto r = pending.get();
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == "is a named pipe (FIFO), not a regular file");
}

TEST_CASE("read_regular_file follows a symbolic link to a regular file, and checks its target", "[read_file]") {
  TempDir dir;
  const std::string target = dir.file("t.txt", "x = 1\n");
  const std::string link = (dir.path / "link").string();
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  auto r = read_regular_file(link, 1024);
  REQUIRE(r.is_ok());
  CHECK(r.value() == "x = 1\n");
  const std::string to_zero = (dir.path / "zero").string();
  REQUIRE(::symlink("/dev/zero", to_zero.c_str()) == 0);
  CHECK_FALSE(read_regular_file(to_zero, 1024).is_ok());
}

TEST_CASE("read_regular_file says why a missing file cannot be opened", "[read_file]") {
  TempDir dir;
  auto r = read_regular_file((dir.path / "missing").string(), 1024);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == cutriage::base::StatusCode::kUnavailable);
  CHECK(r.status().message() == "cannot be opened (No such file or directory)");
}

TEST_CASE("describe_size names a limit in the largest whole unit", "[read_file]") {
  CHECK(describe_size(size_t{1} << 20) == "1 MiB");
  CHECK(describe_size(size_t{64} << 10) == "64 KiB");
  CHECK(describe_size(4096) == "4 KiB");
  CHECK(describe_size(1000) == "1000 bytes");
  CHECK(describe_size(1) == "1 byte");
}

}  // namespace test_read_file
