// `cutriage run`'s progress lines (tools/src/progress.h): a file that grows while it is followed,
// records torn by the end of what is written so far, kernel names with control characters, no
// colour or cutting where the output is not a terminal.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "catch.h"
#include "file_reader.h"
#include "progress.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_progress {

namespace {

namespace v1 = cutriage::v1;
using cutriage::tools::ProgressFollower;
using cutriage::tools::ProgressStyle;

// A fresh path in the temporary directory, removed at the end of the test.
struct TempPath {
  std::string path;
  TempPath() {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            ("cutriage_progress_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + ".pb"))
               .string();
    std::filesystem::remove(path);
  }
  ~TempPath() { std::filesystem::remove(path); }
  void append(std::string_view bytes) const {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

std::string framed(const v1::Record& record) {
  const std::string payload = record.SerializeAsString();
  std::string out(1, '\x0a');  // File.records, length-delimited
  for (uint64_t n = payload.size(); true; n >>= 7U) {
    if (n < 0x80U) {
      out += static_cast<char>(n);
      break;
    }
    out += static_cast<char>((n & 0x7FU) | 0x80U);
  }
  return out + payload;
}

std::string session() {
  v1::Record r;
  r.mutable_session()->set_agent_version("test");
  return framed(r);
}

std::string interned(uint64_t id, const std::string& value) {
  v1::Record r;
  r.mutable_interned()->set_id(id);
  r.mutable_interned()->set_value(value);
  return framed(r);
}

std::string kernel(uint64_t name_iid, uint64_t launch, uint32_t revision, v1::ProfileStatus status,
                   const std::string& headline) {
  v1::Record r;
  v1::KernelProfile* k = r.mutable_kernel();
  k->set_function_name_iid(name_iid);
  k->set_mangled_name_iid(name_iid);
  k->set_launch_index(launch);
  k->set_revision(revision);
  k->set_status(status);
  k->mutable_diagnosis()->set_classification(v1::CLASSIFICATION_MEMORY_BOUND);
  k->mutable_diagnosis()->set_headline(headline);
  if (status == v1::PROFILE_STATUS_FAILED) k->set_status_detail("cuptiRangeProfilerSetConfig: error 7");
  return framed(r);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("progress: a growing file gives one line per profiled launch, as it is written", "[progress]") {
  TempPath file;
  std::ostringstream out;
  ProgressFollower follower(file.path, out, ProgressStyle{});
  CHECK(follower.poll() == 0);  // not written yet: no error, nothing printed

  file.append(session() + interned(1, "stencil_5pt"));
  CHECK(follower.poll() == 0);

  // The first kernel record arrives in two writes: torn after the first, complete after the second.
  const std::string first = kernel(1, 12, 0, v1::PROFILE_STATUS_PROFILED, "memory_bound: DRAM at 91% of peak");
  file.append(first.substr(0, first.size() / 2));
  CHECK(follower.poll() == 0);
  CHECK(out.str().empty());
  file.append(first.substr(first.size() / 2));
  CHECK(follower.poll() == 1);
  CHECK(out.str() == "cutriage: profiled stencil_5pt (launch #12): MEMORY BOUND - DRAM at 91% of peak\n");

  // The record written again at exit (revision 1) prints nothing; a not-profiled launch neither;
  // a failed one says so; a new launch of the same kernel is a new line.
  file.append(kernel(1, 12, 1, v1::PROFILE_STATUS_PROFILED, "memory_bound: DRAM at 92% of peak") +
              kernel(1, 13, 0, v1::PROFILE_STATUS_NOT_PROFILED_GRAPH, "") +
              kernel(1, 14, 0, v1::PROFILE_STATUS_FAILED, "") +
              kernel(1, 20, 0, v1::PROFILE_STATUS_PROFILED, "memory_bound: L2"));
  CHECK(follower.poll() == 2);
  const std::vector<std::string> lines = lines_of(out.str());
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == "cutriage: profiling stencil_5pt (launch #14): failed: cuptiRangeProfilerSetConfig: error 7");
  CHECK(lines[2] == "cutriage: profiled stencil_5pt (launch #20): MEMORY BOUND - L2");
  CHECK(follower.poll() == 0);
  CHECK(follower.printed() == 3);
}

TEST_CASE("progress: an agent file written a few bytes at a time prints each launch once", "[progress]") {
  const std::string source = std::string(CUTRIAGE_TEST_DATA_DIR) + "/agent/prog_multithread.pb";
  std::ifstream in(source, std::ios::binary);
  REQUIRE(in);
  // Read through a stringstream: GCC 12 at -O2 warns on istreambuf_iterator (-Wnull-dereference).
  std::ostringstream whole_file;
  whole_file << in.rdbuf();
  const std::string bytes = whole_file.str();
  // What the report reads: the first record of each profiled launch.
  const cutriage::tools::ReadResult whole = cutriage::tools::read_cutriage_bytes(bytes);
  REQUIRE(whole.status == cutriage::tools::ReadStatus::kOk);
  std::set<uint64_t> launches;
  for (const v1::Record& r : whole.file.records()) {
    if (r.has_kernel() && r.kernel().status() == v1::PROFILE_STATUS_PROFILED) launches.insert(r.kernel().launch_index());
  }
  REQUIRE(launches.size() >= 2);

  TempPath file;
  std::ostringstream out;
  ProgressFollower follower(file.path, out, ProgressStyle{});
  size_t polls = 0;
  for (size_t at = 0; at < bytes.size(); at += 997) {  // a prime: cuts land anywhere in records
    file.append(std::string_view(bytes).substr(at, 997));
    follower.poll();
    ++polls;
  }
  CHECK(polls > 100);
  const std::vector<std::string> lines = lines_of(out.str());
  CHECK(lines.size() == launches.size());
  std::set<uint64_t> printed;
  for (const std::string& line : lines) {
    INFO(line);
    CHECK(line.rfind("cutriage: profiled gt_", 0) == 0);
    const size_t hash = line.find("(launch #");
    REQUIRE(hash != std::string::npos);
    printed.insert(std::stoull(line.substr(hash + 9)));
    CHECK(line.find("LATENCY BOUND") != std::string::npos);
  }
  CHECK(printed == launches);
}

TEST_CASE("progress: a file written afresh under the same name is read from its start", "[progress]") {
  TempPath file;
  std::ostringstream out;
  ProgressFollower follower(file.path, out, ProgressStyle{});
  file.append(session() + interned(1, "a") + kernel(1, 1, 0, v1::PROFILE_STATUS_PROFILED, "x: one"));
  CHECK(follower.poll() == 1);
  std::filesystem::remove(file.path);
  file.append(session() + interned(5, "b") + kernel(5, 2, 0, v1::PROFILE_STATUS_PROFILED, "x: two"));
  CHECK(follower.poll() == 1);
  CHECK(lines_of(out.str()).back() == "cutriage: profiled b (launch #2): MEMORY BOUND - two");
}

TEST_CASE("progress: control characters in names are escaped, colour and cutting only when asked",
          "[progress]") {
  v1::KernelProfile k;
  k.set_launch_index(3);
  k.set_status(v1::PROFILE_STATUS_PROFILED);
  k.mutable_diagnosis()->set_classification(v1::CLASSIFICATION_COMPUTE_BOUND);
  k.mutable_diagnosis()->set_headline("compute_bound: FMA pipe at 88% of peak, well above the 60% threshold");
  const std::string evil = "k\x1b[2J\x07\nname";
  const std::string plain = cutriage::tools::progress_line(evil, k, ProgressStyle{});
  CHECK(plain == "cutriage: profiled k\\x1b[2J\\x07\\x0aname (launch #3): COMPUTE BOUND - FMA pipe at 88% of "
                 "peak, well above the 60% threshold");
  CHECK(plain.find('\x1b') == std::string::npos);

  ProgressStyle tty;
  tty.color = true;
  tty.width = 60;
  const std::string painted = cutriage::tools::progress_line("stencil", k, tty);
  CHECK(painted.find("\x1b[1mstencil\x1b[0m") != std::string::npos);
  std::string visible;
  for (size_t i = 0; i < painted.size(); ++i) {
    if (painted[i] == '\x1b') {
      i = painted.find('m', i);
      continue;
    }
    visible += painted[i];
  }
  CHECK(visible.size() == 60);
  CHECK(visible.substr(visible.size() - 3) == "...");
  CHECK(visible.rfind("cutriage: profiled stencil (launch #3): COMPUTE BOUND", 0) == 0);

  // A pipe (what tests and CI see) is no terminal: plain, full-width lines.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const ProgressStyle piped = cutriage::tools::progress_style_for(fds[1]);
  ::close(fds[0]);
  ::close(fds[1]);
  CHECK_FALSE(piped.color);
  CHECK(piped.width == 0);
}

TEST_CASE("progress: a file that is no cutriage record stream prints nothing", "[progress]") {
  TempPath file;
  std::ostringstream out;
  ProgressFollower follower(file.path, out, ProgressStyle{});
  file.append("\"ID\",\"Process ID\",\"Kernel Name\"\n1,2,3\n");
  CHECK(follower.poll() == 0);
  file.append(session() + interned(1, "a") + kernel(1, 1, 0, v1::PROFILE_STATUS_PROFILED, "x: y"));
  CHECK(follower.poll() == 0);
  CHECK(out.str().empty());
}

}  // namespace test_progress
