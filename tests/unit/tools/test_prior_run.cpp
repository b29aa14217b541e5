// The agent's reader of its own output (cutriage/wire/prior_run.h), which CUTRIAGE_RESUME uses:
// on a real H200 capture it must find what the libprotobuf reader finds, and it must reject what
// is not a cutriage file without throwing.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "catch.h"
#include "cutriage/wire/prior_run.h"
#include "file_reader.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_prior_run {

using namespace cutriage;

namespace {

std::string slurp_data(const char* relative) {
  const auto path = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / relative;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  REQUIRE(!s.str().empty());
  return s.str();
}

}  // namespace

TEST_CASE("prior run: the always-on families of a real H200 capture, as libprotobuf reads them", "[wire][resume]") {
  // The service at the default budget for 1400 s (tests/data/always_on/README.md).
  const char* file = "always_on/svc-ao-default-1400s.pb";
  std::string error;
  const std::optional<wire::PriorRun> run = wire::parse_prior_run(slurp_data(file), &error);
  INFO(error);
  REQUIRE(run.has_value());
  CHECK(run->mode == "always-on");
  CHECK(run->pid != 0);
  CHECK(run->start_unix_ns != 0);

  const tools::ReadResult r =
      tools::read_cutriage_file((std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / file).string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  // The latest always-on record per function, from the libprotobuf reader.
  std::map<std::string, const v1::KernelProfile*> expected;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (k->status() != v1::PROFILE_STATUS_PROFILED || k->assembled_launches_size() == 0) continue;
    const v1::KernelProfile*& slot = expected[std::string(tools::lookup(r, k->mangled_name_iid()))];
    if (slot == nullptr || k->launch_index() > slot->launch_index()) slot = k;
  }
  REQUIRE(expected.size() == 4);
  REQUIRE(run->families.size() == expected.size());
  for (const wire::PriorFamily& f : run->families) {
    INFO(f.mangled_name);
    REQUIRE(expected.count(f.mangled_name) == 1);
    const v1::KernelProfile& k = *expected[f.mangled_name];
    CHECK(f.chip == "GH100");
    CHECK(f.launch_index == k.launch_index());
    CHECK(f.launch.grid.x == k.launch().grid().x());
    CHECK(f.launch.block.x == k.launch().block().x());
    CHECK(f.launch.registers_per_thread == k.launch().registers_per_thread());
    REQUIRE(static_cast<int>(f.assembled.size()) == k.assembled_launches_size());
    for (size_t i = 0; i < f.assembled.size(); ++i) {
      const v1::AssembledLaunch& a = k.assembled_launches(static_cast<int>(i));
      CHECK(f.assembled[i].launch_index == a.launch_index());
      CHECK(f.assembled[i].metric_group == a.metric_group());
      CHECK(f.assembled[i].duration_ns == a.duration_ns());
      // Measured by that process: marked with its pid and start, for the next record to say so.
      CHECK(f.assembled[i].earlier_pid == run->pid);
      CHECK(f.assembled[i].earlier_start_unix_ns == run->start_unix_ns);
    }
    int measured = 0;
    for (const v1::Metric& m : k.metrics()) measured += m.derived() ? 0 : 1;
    CHECK(static_cast<int>(f.metrics.size()) == measured);
    for (const wire::PriorFamily::Value& v : f.metrics) {
      if (v.name != "gpu__time_duration.sum") continue;
      CHECK(v.value > 0);
      CHECK(v.unit == "nsecond");
    }
  }
}

TEST_CASE("prior run: not a cutriage file is an error, a truncated one is read up to the cut", "[wire][resume]") {
  std::string error;
  CHECK_FALSE(wire::parse_prior_run("", &error).has_value());
  CHECK(error.find("no session header") != std::string::npos);
  error.clear();
  CHECK_FALSE(wire::parse_prior_run("this is a text file\n", &error).has_value());
  CHECK(!error.empty());
  // A capture cut in the middle (a killed process): what came before the cut is kept.
  const std::string whole = slurp_data("always_on/svc-ao-default-1400s.pb");
  const std::optional<wire::PriorRun> all = wire::parse_prior_run(whole, &error);
  REQUIRE(all.has_value());
  CHECK_FALSE(all->truncated);
  std::optional<wire::PriorRun> cut;
  REQUIRE_NOTHROW(cut = wire::parse_prior_run(std::string_view(whole).substr(0, whole.size() - 7), &error));
  REQUIRE(cut.has_value());
  CHECK(cut->truncated);
  CHECK(cut->pid == all->pid);
  CHECK(cut->families.size() == all->families.size());  // the last record is a session end
  std::optional<wire::PriorRun> half;
  REQUIRE_NOTHROW(half = wire::parse_prior_run(std::string_view(whole).substr(0, whole.size() / 2), &error));
  REQUIRE(half.has_value());
  CHECK(half->families.size() <= all->families.size());
}

TEST_CASE("prior run: a field of another wire type than the schema's is skipped, not misread", "[wire][resume]") {
  // Hand-made bytes (synthetic): a session header whose pid (field 4, a varint in the schema)
  // comes as a string, followed by its mode (field 16). protozero would assert (or, without
  // asserts, misread the string's length as the pid and lose its place) if it were read as is.
  std::string session;
  session += '\x22';  // field 4, wire type 2 (length-delimited)
  session += '\x01';
  session += 'x';
  session += "\x82\x01";  // field 16, wire type 2
  session += '\x09';
  session += "always-on";
  std::string record;
  record += '\x0a';  // Record.session: field 1, length-delimited
  record += static_cast<char>(session.size());
  record += session;
  std::string file;
  file += '\x0a';  // File.records: field 1, length-delimited
  file += static_cast<char>(record.size());
  file += record;
  std::string error;
  const std::optional<wire::PriorRun> run = wire::parse_prior_run(file, &error);
  INFO(error);
  REQUIRE(run.has_value());
  CHECK(run->pid == 0);
  CHECK(run->mode == "always-on");
  CHECK_FALSE(run->truncated);
}

TEST_CASE("prior run: a graph's counters are never resumed as a kernel's own", "[wire][resume]") {
  // Always-on over torch.compile's CUDA graph on the H200 (tests/data/graphs): its families'
  // records carry the graph's counters (application replay over the graph's launches, with a
  // graph scope). Stages over a kernel's own launches (CUTRIAGE_STAGE_PASSES) are application
  // replay too, and those are resumed; the graph's must not be: they are the graph's mix.
  const char* file = "graphs/compile_reduce_overhead-always-on.pb";
  const tools::ReadResult r =
      tools::read_cutriage_file((std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / file).string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  std::set<std::string> graph_scoped;
  std::set<std::string> own;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (k->status() != v1::PROFILE_STATUS_PROFILED || k->assembled_launches_size() == 0) continue;
    const std::string name(tools::lookup(r, k->mangled_name_iid()));
    if (k->has_graph_scope() && k->replay_mode() == v1::REPLAY_MODE_APPLICATION) {
      graph_scoped.insert(name);
    } else if (k->replay_mode() == v1::REPLAY_MODE_NONE) {
      own.insert(name);
    }
  }
  REQUIRE(!graph_scoped.empty());
  std::string error;
  const std::optional<wire::PriorRun> run = wire::parse_prior_run(slurp_data(file), &error);
  INFO(error);
  REQUIRE(run.has_value());
  for (const wire::PriorFamily& f : run->families) {
    INFO(f.mangled_name);
    CHECK((graph_scoped.count(f.mangled_name) == 0 || own.count(f.mangled_name) > 0));
  }
}

}  // namespace test_prior_run
