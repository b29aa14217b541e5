// `cutriage merge` (tools/src/merge.h): several processes' always-on files into one, per family
// (mangled name, chip, block, grid) the union of their counters, their launches with their pids,
// today's verdict; the merged file reads back through wire::parse_prior_run (CUTRIAGE_RESUME).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "cli.h"
#include "commands.h"
#include "cutriage/triage/engine.h"
#include "cutriage/wire/prior_run.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "merge.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_merge {

using namespace cutriage;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One family's record of a synthetic always-on file.
struct Part {
  std::string mangled;
  std::string function;
  triage::LaunchConfig launch;
  uint64_t launch_index = 0;
  std::vector<wire::PriorFamily::Value> metrics;
  std::vector<std::string> rejected;
  std::vector<triage::AssembledLaunch> assembled;  // earlier_pid 0: the file's own process
};

// SYNTHETIC: a cutriage file as the always-on agent writes one (a session header naming an H200,
// one profiled record per family: no replay, assembled launches, measured metrics with the launch
// each came from, rejected counters). `trailer`: a notice after the records (to cut into).
std::string always_on_file(uint64_t pid, const std::vector<Part>& parts, const std::string& mode = "always-on",
                           bool trailer = false) {
  wire::RecordEncoder enc;
  wire::SessionInfo s;
  s.agent_version = "test";
  s.host = "replica";
  s.pid = pid;
  s.command_line = {"./svc", "--port", "8000"};
  s.start_time_unix_ns = 1700000000000000000ULL + pid;
  wire::GpuInfo g;
  g.name = "NVIDIA H200";
  g.limits = *triage::known_device_limits("GH100");
  s.gpus = {g};
  s.mode = mode;
  s.source = wire::SessionSource::kAgent;
  s.replay_mode = mode == "always-on" ? triage::ReplayMode::kNone : triage::ReplayMode::kKernel;
  std::string out = enc.session(s);
  for (const Part& p : parts) {
    wire::KernelRecord k;
    k.input.mangled_name = p.mangled;
    k.input.function_name = p.function;
    k.input.launch_index = p.launch_index;
    k.input.launch = p.launch;
    for (const wire::PriorFamily::Value& v : p.metrics) {
      k.input.metrics.set(v.name, v.value, v.unit);
      k.metric_launch[v.name] = v.launch_index;
    }
    k.input.assembled_launches = p.assembled;
    k.input.collection.collector = triage::Collector::kAgent;
    k.input.collection.replay_mode = triage::ReplayMode::kNone;
    k.input.collection.clock_control = triage::ClockControl::kNone;
    k.input.collection.cache_control = "none";
    k.rejected_metrics = p.rejected;
    k.status = wire::ProfileStatus::kProfiled;
    out += enc.kernel(k);
  }
  if (trailer) {
    wire::Notice n;
    n.severity = wire::Severity::kInfo;
    n.code = "test";
    n.message = "a notice written after the records";
    out += enc.notice(n);
  }
  return out;
}

// SYNTHETIC: a small family, one launch per counter (group i + 1 on launch first_launch + i).
Part small_part(const std::string& function, triage::Dim3 grid, const std::map<std::string, double>& metrics,
                const std::vector<std::string>& rejected = {}, uint64_t first_launch = 10) {
  Part p;
  p.mangled = "_Z" + std::to_string(function.size()) + function + "Pf";
  p.function = function;
  p.launch.grid = grid;
  p.launch.block = {256, 1, 1};
  p.launch.registers_per_thread = 32;
  uint32_t group = 1;
  for (const auto& [name, value] : metrics) {
    const uint64_t launch = first_launch + group - 1;
    p.metrics.push_back({name, value, "%", launch});
    triage::AssembledLaunch a;
    a.launch_index = launch;
    a.grid = grid;
    a.block = p.launch.block;
    a.duration_ns = 5000;
    a.metric_group = group++;
    a.metrics = 1;
    p.assembled.push_back(a);
    p.launch_index = launch;
  }
  p.rejected = rejected;
  return p;
}

wire::PriorRun read_back(const std::string& bytes) {
  std::string error;
  std::optional<wire::PriorRun> run = wire::parse_prior_run(bytes, &error);
  INFO(error);
  REQUIRE(run.has_value());
  return *run;
}

const wire::PriorFamily::Value* metric(const wire::PriorFamily& f, const std::string& name) {
  for (const wire::PriorFamily::Value& v : f.metrics) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

std::map<uint64_t, size_t> launches_by_pid(const std::vector<triage::AssembledLaunch>& assembled) {
  std::map<uint64_t, size_t> out;
  for (const triage::AssembledLaunch& a : assembled) ++out[a.earlier_pid];
  return out;
}

std::vector<std::string> notices(const tools::ReadResult& r) {
  std::vector<std::string> out;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_notice() && rec.notice().code() == "merge") out.push_back(rec.notice().message());
  }
  return out;
}

// The engine's input for a family's counters, as `merge` builds it for an H200.
triage::KernelInput engine_input(const wire::PriorFamily& f, const std::vector<wire::PriorFamily::Value>& metrics,
                                 const std::vector<triage::AssembledLaunch>& assembled, const std::string& function) {
  triage::KernelInput in;
  in.mangled_name = f.mangled_name;
  in.function_name = function;
  in.launch_index = f.launch_index;
  in.launch = f.launch;
  in.device_limits = triage::known_device_limits("GH100");
  for (const wire::PriorFamily::Value& v : metrics) in.metrics.set(v.name, v.value, v.unit);
  in.assembled_launches = assembled;
  in.collection.collector = triage::Collector::kAgent;
  in.collection.replay_mode = triage::ReplayMode::kNone;
  in.collection.clock_control = triage::ClockControl::kNone;
  in.collection.cache_control = "none";
  return in;
}

}  // namespace

TEST_CASE("merge: two processes' halves of a real family give one record with the union and today's verdict",
          "[merge]") {
  // The service's matmul at the default budget for 1400 s on the H200 (tests/data/always_on): its
  // launches split between two SYNTHETIC replicas, pid 1001 the even ones and pid 1002 the odd
  // ones, each with the counters measured on its launches.
  const std::string real = slurp(std::string(CUTRIAGE_TEST_DATA_DIR) + "/always_on/svc-ao-default-1400s.pb");
  const wire::PriorRun whole = read_back(real);
  const auto it = std::find_if(whole.families.begin(), whole.families.end(),
                               [](const wire::PriorFamily& f) { return contains(f.mangled_name, "matmul"); });
  REQUIRE(it != whole.families.end());
  const wire::PriorFamily& full = *it;
  REQUIRE(full.assembled.size() >= 4);
  Part halves[2];
  for (Part& h : halves) {
    h.mangled = full.mangled_name;
    h.function = "matmul_tiled";
    h.launch = full.launch;
  }
  std::map<uint64_t, int> owner;  // launch index -> half
  for (size_t i = 0; i < full.assembled.size(); ++i) {
    triage::AssembledLaunch a = full.assembled[i];
    a.earlier_pid = 0;  // each replica's own launches
    a.earlier_start_unix_ns = 0;
    owner[a.launch_index] = static_cast<int>(i % 2);
    halves[i % 2].assembled.push_back(a);
    halves[i % 2].launch_index = a.launch_index;
  }
  for (const wire::PriorFamily::Value& v : full.metrics) {
    const auto o = owner.find(v.launch_index);
    halves[o == owner.end() ? 0 : o->second].metrics.push_back(v);
  }
  REQUIRE(!halves[0].metrics.empty());
  REQUIRE(!halves[1].metrics.empty());
  const tools::MergeResult merged = tools::merge_always_on(
      {{"replica-0.pb", always_on_file(1001, {halves[0]})}, {"replica-1.pb", always_on_file(1002, {halves[1]})}});
  REQUIRE(merged.status == tools::MergeStatus::kOk);
  CHECK(merged.warnings.empty());
  CHECK(merged.families == 1);
  CHECK(merged.files == 2);
  CHECK(merged.across_processes == 1);

  // What a resuming replica reads: the union, each value as measured, every launch with its pid.
  const wire::PriorRun back = read_back(merged.bytes);
  CHECK(back.mode == "always-on");
  CHECK(back.pid == 0);
  REQUIRE(back.families.size() == 1);
  const wire::PriorFamily& f = back.families.front();
  CHECK(f.mangled_name == full.mangled_name);
  CHECK(f.chip == "GH100");
  CHECK(f.launch.grid.x == full.launch.grid.x);
  CHECK(f.launch.block.x == full.launch.block.x);
  REQUIRE(f.metrics.size() == full.metrics.size());
  for (const wire::PriorFamily::Value& v : full.metrics) {
    INFO(v.name);
    const wire::PriorFamily::Value* got = metric(f, v.name);
    REQUIRE(got != nullptr);
    CHECK(got->value == v.value);
    CHECK(got->unit == v.unit);
    CHECK(got->launch_index == v.launch_index);
  }
  const std::map<uint64_t, size_t> pids = launches_by_pid(f.assembled);
  CHECK(pids == std::map<uint64_t, size_t>{{1001, halves[0].assembled.size()}, {1002, halves[1].assembled.size()}});
  for (const triage::AssembledLaunch& a : f.assembled) CHECK(a.earlier_start_unix_ns == 1700000000000000000ULL + a.earlier_pid);

  // Today's verdict from the merged counters: the engine's on the whole family, not on either half's.
  const tools::ReadResult r = tools::read_cutriage_bytes(merged.bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const std::vector<const v1::KernelProfile*> kernels = tools::current_kernels(r);
  REQUIRE(kernels.size() == 1);
  const v1::KernelProfile& k = *kernels.front();
  CHECK(k.status() == v1::PROFILE_STATUS_PROFILED);
  CHECK(k.replay_mode() == v1::REPLAY_MODE_NONE);
  const triage::Diagnosis expected = triage::triage_kernel(engine_input(f, full.metrics, f.assembled, "matmul_tiled"));
  const triage::Diagnosis half =
      triage::triage_kernel(engine_input(f, halves[0].metrics, f.assembled, "matmul_tiled"));
  REQUIRE(expected.headline != half.headline);  // else this test could not tell them apart
  CHECK(k.diagnosis().headline() == expected.headline);
  CHECK(k.diagnosis().primary_rule_id() == expected.primary_rule);

  // The notice and the report say which process gave what.
  const std::vector<std::string> said = notices(r);
  REQUIRE(said.size() == 1);
  const size_t big = std::max(halves[0].metrics.size(), halves[1].metrics.size());
  const uint64_t big_pid = halves[0].metrics.size() >= halves[1].metrics.size() ? 1001 : 1002;
  CHECK(contains(said[0], "matmul_tiled: " + std::to_string(big) + " counters from pid " + std::to_string(big_pid)));
  CHECK(contains(said[0], "from pid 1001 (" + std::to_string(halves[0].assembled.size()) + " launches)"));
  CHECK(contains(said[0], "from pid 1002 (" + std::to_string(halves[1].assembled.size()) + " launches)"));
  std::string report;  // its lines wrapped back: one space for every run of whitespace
  for (const char ch : tools::render_report(r, {})) {
    const bool space = ch == ' ' || ch == '\n';
    if (!space || (!report.empty() && report.back() != ' ')) report += space ? ' ' : ch;
  }
  INFO(report);
  CHECK(contains(report, "mode: always-on"));
  CHECK(contains(report, "without replay, by 2 processes (merged; pid 1001 1002)"));
  CHECK(contains(report, said[0]));
}

TEST_CASE("merge: a counter both measured keeps the value of the process with more, rejected is what none measured",
          "[merge]") {
  // SYNTHETIC families: pid 20 measured m1 m2 m3, pid 10 m1 m4; pid 30 measured m5.
  const std::string a = always_on_file(20, {small_part("k", {64, 1, 1}, {{"m1", 1}, {"m2", 2}, {"m3", 3}}, {"r1", "r2", "m5"})});
  const std::string b = always_on_file(10, {small_part("k", {64, 1, 1}, {{"m1", 100}, {"m4", 4}}, {"r1", "m5"})});
  const std::string c = always_on_file(30, {small_part("k", {64, 1, 1}, {{"m5", 5}}, {"r1", "r2"})});
  const tools::MergeResult merged = tools::merge_always_on({{"a.pb", a}, {"b.pb", b}, {"c.pb", c}});
  REQUIRE(merged.status == tools::MergeStatus::kOk);
  const wire::PriorRun back = read_back(merged.bytes);
  REQUIRE(back.families.size() == 1);
  const wire::PriorFamily& f = back.families.front();
  std::map<std::string, double> values;
  for (const wire::PriorFamily::Value& v : f.metrics) values[v.name] = v.value;
  CHECK(values == std::map<std::string, double>{{"m1", 1}, {"m2", 2}, {"m3", 3}, {"m4", 4}, {"m5", 5}});
  // r1 and r2: rejected and measured by none (pid 10 never asked for r2); m5 measured by pid 30.
  CHECK(f.rejected == std::vector<std::string>{"r1", "r2"});
  // Only the launches whose counters stand: pid 10's launch of m1 (pid 20's value kept) is left
  // out, so that replicas measuring one group do not fill a resuming agent's launches.
  CHECK(launches_by_pid(f.assembled) == std::map<uint64_t, size_t>{{10, 1}, {20, 3}, {30, 1}});
  for (const triage::AssembledLaunch& l : f.assembled) {
    if (l.earlier_pid == 10) CHECK(l.metric_group == 2);  // m4's
  }
  const std::vector<std::string> said = notices(tools::read_cutriage_bytes(merged.bytes));
  REQUIRE(said.size() == 1);
  CHECK(said[0] == "k: 3 counters from pid 20 (3 launches), 1 from pid 10 (1 launch), 1 from pid 30 (1 launch)");

  // A tie in counters: the lowest pid's value.
  const std::string d = always_on_file(7, {small_part("k", {64, 1, 1}, {{"m1", 700}, {"m9", 9}})});
  const tools::MergeResult tie = tools::merge_always_on({{"b.pb", b}, {"d.pb", d}});
  REQUIRE(tie.status == tools::MergeStatus::kOk);
  const wire::PriorRun tied = read_back(tie.bytes);
  REQUIRE(tied.families.size() == 1);
  REQUIRE(metric(tied.families.front(), "m1") != nullptr);
  CHECK(metric(tied.families.front(), "m1")->value == 700);
}

TEST_CASE("merge: families of different grids or blocks are never combined", "[merge]") {
  // SYNTHETIC: one kernel launched with grid 64 by pid 1 and grid 128 by pid 2, and the same grid
  // with another block by pid 2.
  Part other_block = small_part("k", {64, 1, 1}, {{"m3", 3}});
  other_block.launch.block = {128, 1, 1};
  for (triage::AssembledLaunch& a : other_block.assembled) a.block = other_block.launch.block;
  const std::string a = always_on_file(1, {small_part("k", {64, 1, 1}, {{"m1", 1}, {"m2", 2}})});
  const std::string b = always_on_file(2, {small_part("k", {128, 1, 1}, {{"m1", 10}}), other_block});
  const tools::MergeResult merged = tools::merge_always_on({{"a.pb", a}, {"b.pb", b}});
  REQUIRE(merged.status == tools::MergeStatus::kOk);
  CHECK(merged.families == 3);
  CHECK(merged.across_processes == 0);
  // Every one reads back (one kernel and block with two grids: each on a device of its own).
  const wire::PriorRun back = read_back(merged.bytes);
  REQUIRE(back.families.size() == 3);
  std::set<std::tuple<uint32_t, uint32_t, uint64_t, size_t>> shapes;  // grid, block, pid, counters
  for (const wire::PriorFamily& f : back.families) {
    CHECK(f.chip == "GH100");
    const std::map<uint64_t, size_t> pids = launches_by_pid(f.assembled);
    REQUIRE(pids.size() == 1);
    shapes.emplace(f.launch.grid.x, f.launch.block.x, pids.begin()->first, f.metrics.size());
  }
  CHECK(shapes == std::set<std::tuple<uint32_t, uint32_t, uint64_t, size_t>>{
                      {64, 256, 1, 2}, {128, 256, 2, 1}, {64, 128, 2, 1}});
}

TEST_CASE("merge: inputs that are not always-on files, cut short or not cutriage files", "[merge]") {
  const std::string a = always_on_file(1, {small_part("k", {64, 1, 1}, {{"m1", 1}})});
  const std::string deep = always_on_file(2, {small_part("k", {64, 1, 1}, {{"m2", 2}})}, "deep");
  SECTION("a deep file is skipped with a warning naming it") {
    const tools::MergeResult merged = tools::merge_always_on({{"a.pb", a}, {"deep.pb", deep}});
    REQUIRE(merged.status == tools::MergeStatus::kOk);
    REQUIRE(merged.warnings.size() == 1);
    CHECK(contains(merged.warnings[0], "deep.pb: not an always-on file"));
    CHECK(merged.files == 1);
    const wire::PriorRun back = read_back(merged.bytes);
    REQUIRE(back.families.size() == 1);
    CHECK(metric(back.families.front(), "m2") == nullptr);
    CHECK(launches_by_pid(back.families.front().assembled) == std::map<uint64_t, size_t>{{1, 1}});
  }
  SECTION("no always-on file at all") {
    const tools::MergeResult merged = tools::merge_always_on({{"deep.pb", deep}, {"deep2.pb", deep}});
    CHECK(merged.status == tools::MergeStatus::kNoAlwaysOn);
    CHECK(merged.warnings.size() == 2);
    CHECK(merged.bytes.empty());
  }
  SECTION("a file cut short is used up to the cut") {
    const std::string b = always_on_file(2, {small_part("k", {64, 1, 1}, {{"m2", 2}})}, "always-on", true);
    const tools::MergeResult merged = tools::merge_always_on({{"a.pb", a}, {"b.pb", b.substr(0, b.size() - 5)}});
    REQUIRE(merged.status == tools::MergeStatus::kOk);
    REQUIRE(merged.warnings.size() == 1);
    CHECK(contains(merged.warnings[0], "b.pb: cut short"));
    const wire::PriorRun back = read_back(merged.bytes);
    REQUIRE(back.families.size() == 1);
    CHECK(metric(back.families.front(), "m2") != nullptr);
    CHECK(launches_by_pid(back.families.front().assembled) == std::map<uint64_t, size_t>{{1, 1}, {2, 1}});
  }
  SECTION("a file that is not a cutriage file is an error naming it") {
    const tools::MergeResult merged = tools::merge_always_on({{"a.pb", a}, {"notes.txt", "hello, world\n"}});
    CHECK(merged.status == tools::MergeStatus::kNotCutriage);
    CHECK(contains(merged.error, "notes.txt: not a"));
    CHECK(merged.bytes.empty());
  }
}

TEST_CASE("merge: a merged file merged again with a replica that resumed from it", "[merge]") {
  // SYNTHETIC: pid 1 and pid 2 merged; pid 3 resumed from the merged file (its record holds the
  // fleet's launches, marked with their pids) and measured one more counter.
  const std::string a = always_on_file(1, {small_part("k", {64, 1, 1}, {{"m1", 1}, {"m2", 2}})});
  const std::string b = always_on_file(2, {small_part("k", {64, 1, 1}, {{"m3", 3}})});
  const tools::MergeResult fleet = tools::merge_always_on({{"a.pb", a}, {"b.pb", b}});
  REQUIRE(fleet.status == tools::MergeStatus::kOk);
  const wire::PriorFamily before = read_back(fleet.bytes).families.front();
  Part resumed = small_part("k", {64, 1, 1}, {{"m4", 4}}, {}, 500);
  resumed.metrics.insert(resumed.metrics.end(), before.metrics.begin(), before.metrics.end());
  resumed.assembled.insert(resumed.assembled.end(), before.assembled.begin(), before.assembled.end());
  const std::string c = always_on_file(3, {resumed});
  const tools::MergeResult again = tools::merge_always_on({{"fleet.pb", fleet.bytes}, {"c.pb", c}});
  REQUIRE(again.status == tools::MergeStatus::kOk);
  const wire::PriorRun back = read_back(again.bytes);
  REQUIRE(back.families.size() == 1);
  CHECK(back.families.front().metrics.size() == 4);
  // Each launch once, with the process that measured it.
  CHECK(launches_by_pid(back.families.front().assembled) == std::map<uint64_t, size_t>{{1, 2}, {2, 1}, {3, 1}});
}

TEST_CASE("merge: the command refuses fewer than two files, a missing -o and an output that is an input",
          "[merge]") {
  namespace cli = tools::cli;
  namespace commands = tools::commands;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutriage_test_merge";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string a = (dir / "a.pb").string();
  const std::string b = (dir / "b.pb").string();
  const std::string a_bytes = always_on_file(1, {small_part("k", {64, 1, 1}, {{"m1", 1}})});
  std::ofstream(a, std::ios::binary) << a_bytes;
  std::ofstream(b, std::ios::binary) << always_on_file(2, {small_part("k", {64, 1, 1}, {{"m2", 2}})});
  std::ofstream((dir / "text.txt").string()) << "not a cutriage file\n";
  const auto run = [](const std::vector<std::string>& args) {
    std::ostringstream out;
    std::ostringstream err;
    return cli::run(commands::program(), args, out, err);
  };
  const std::string out = (dir / "out.pb").string();
  CHECK(run({"merge", "-o", out, a}) == commands::kUsage);
  CHECK(run({"merge", a, b}) == commands::kUsage);
  CHECK(run({"merge", "-o", a, a, b}) == commands::kUsage);
  CHECK(slurp(a) == a_bytes);  // left as it was
  CHECK(run({"merge", "-o", out, a, (dir / "none.pb").string()}) == commands::kUnreadable);
  CHECK(run({"merge", "-o", out, a, (dir / "text.txt").string()}) == commands::kNotCutriage);
  CHECK_FALSE(std::filesystem::exists(out));
  REQUIRE(run({"merge", "-o", out, a, b}) == commands::kOk);
  const wire::PriorRun back = read_back(slurp(out));
  REQUIRE(back.families.size() == 1);
  CHECK(back.families.front().metrics.size() == 2);
  std::filesystem::remove_all(dir);
}

}  // namespace test_merge
