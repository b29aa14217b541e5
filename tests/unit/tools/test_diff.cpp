// `cutriage diff` (tools/src/diff.h, causal.h) on real captures: the H200 Nsight Compute capture
// of the zoo's transpose (a bank-conflicted kernel and its padded fix, one CSV), the agent's own
// files of the zoo, and synthetic copies of them (durations scaled, built here; labelled as such)
// for the slower / faster-without-cause cases.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "capture_support.h"
#include "catch.h"
#include "causal.h"
#include "cutriage/triage/rule.h"
#include "diff.h"
#include "file_reader.h"
#include "import.h"
#include "ncu_csv.h"
#include "zoo_captures.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_diff {

using namespace cutriage;
#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif
using cutriage::testing::slurp;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(CUTRIAGE_TEST_DATA_DIR);

// A fresh directory for one test's files.
fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("cutriage_diff_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// `cutriage triage --ncu-csv transpose.csv --timings timings.csv --clock-control none`, as bytes.
std::string transpose_import() {
  const fs::path dir = kData / "ncu";
  tools::NcuCsvResult r = tools::parse_ncu_csv(slurp(dir / "zoo" / "transpose.csv"));
  REQUIRE(r.import);
  std::vector<tools::NcuImport> imports;
  imports.push_back(std::move(*r.import));
  tools::ImportOptions options;
  options.clock_control = triage::ClockControl::kNone;
  std::vector<std::string> warnings;
  options.timings = tools::parse_timings(slurp(dir / "timings.csv"), warnings);
  return tools::encode_run(tools::triage_imports(std::move(imports), options));
}

// SYNTHETIC: the file with every kernel's durations (records and family statistics) times
// `factor`, counters untouched.
std::string scaled_copy(const std::string& bytes, double factor) {
  tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  for (v1::Record& rec : *r.file.mutable_records()) {
    if (rec.has_kernel()) {
      rec.mutable_kernel()->set_duration_ns(rec.kernel().duration_ns() * factor);
      rec.mutable_kernel()->set_unprofiled_duration_ns(rec.kernel().unprofiled_duration_ns() * factor);
    }
    if (rec.has_trace_summary()) {
      v1::TraceSummary* s = rec.mutable_trace_summary();
      s->set_total_kernel_ns(s->total_kernel_ns() * factor);
      for (v1::FamilyStats& f : *s->mutable_families()) {
        f.set_total_ns(f.total_ns() * factor);
        f.set_mean_ns(f.mean_ns() * factor);
        f.set_p50_ns(f.p50_ns() * factor);
      }
    }
  }
  std::string out;
  r.file.SerializeToString(&out);
  return out;
}

tools::RunView view_of_bytes(const std::string& bytes, const std::string& name) {
  tools::MultiRead read = tools::group_runs({name}, {tools::read_cutriage_bytes(bytes)});
  REQUIRE(read.processes.size() == 1);
  return tools::run_view(read.processes);
}

const tools::FamilyDiff* find_pair(const tools::DiffResult& d, const std::string& before_name) {
  for (const tools::FamilyDiff& f : d.matched) {
    if (d.before.families[f.before].name == before_name) return &f;
  }
  return nullptr;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream f(p);
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("diff: the padded transpose against the naive one (--match) confirms the bank-conflict chain", "[diff]") {
  const std::string bytes = transpose_import();
  tools::DiffOptions options;
  options.matches = {{"zoo_transpose_naive", "zoo_transpose_padded"}};
  const tools::DiffResult d = tools::compute_diff(view_of_bytes(bytes, "a"), view_of_bytes(bytes, "a"), options);
  CHECK(d.warnings.empty());
  const tools::FamilyDiff* f = find_pair(d, "zoo_transpose_naive");
  REQUIRE(f != nullptr);
  CHECK(f->renamed);
  CHECK(d.after.families[f->after].name == "zoo_transpose_padded");
  // The unprofiled medians of timings.csv: 654592 ns -> 293696 ns.
  CHECK(f->basis == "median");
  CHECK(f->before_ns == Approx(654592));
  CHECK(f->after_ns == Approx(293696));
  CHECK(f->change_pct == Approx(-55.13).margin(0.01));
  CHECK(f->call == "keep");
  // BEFORE: d5.shared_bank_conflicts decided by the conflict share, which must fall.
  CHECK(d.before.families[f->before].rule_id == "d5.shared_bank_conflicts");
  REQUIRE(f->counter);
  CHECK(f->counter->metric == d.before.families[f->before].deciding_metric);
  CHECK(f->counter->direction == tools::Direction::kFall);
  CHECK(f->counter->after < f->counter->before * 0.1);
  CHECK(f->chain == tools::ChainLabel::kConfirmed);
  // The renamed pair took both kernels: each one's other copy has no partner.
  CHECK(d.only_before.size() == 1);
  CHECK(d.only_after.size() == 1);
  const std::string text = tools::render_diff_text(d, options);
  CHECK(text.find("zoo_transpose_naive -> zoo_transpose_padded") != std::string::npos);
  CHECK(text.find("KEEP") != std::string::npos);
  CHECK(text.find("confirmed: ") != std::string::npos);
}

TEST_CASE("diff: a capture against itself is neutral everywhere and passes --fail-if-slower 0", "[diff]") {
  const std::string bytes = slurp(kData / "agent-split" / "zoo_strided_load.pb");
  tools::DiffOptions options;
  options.fail_if_slower_pct = 0;
  const tools::DiffResult d = tools::compute_diff(view_of_bytes(bytes, "a"), view_of_bytes(bytes, "a"), options);
  REQUIRE(d.matched.size() == 2);  // zoo_strided_load and its input fill
  // An agent file that ended: the application's wall time, the trace's span.
  CHECK(d.before.wall_ns > 1e9);
  CHECK(d.before.span_ns > 0);
  CHECK(d.only_before.empty());
  CHECK(d.only_after.empty());
  for (const tools::FamilyDiff& f : d.matched) {
    CHECK(f.basis == "median");  // the agent's trace summary gives medians
    CHECK(f.change_pct == 0);
    CHECK(f.call == "neutral");
    CHECK(f.chain == tools::ChainLabel::kNoChange);
  }
  CHECK_FALSE(d.fail);
  const std::string json = tools::render_diff_json(d, options);
  CHECK(json.find("\"kind\":\"total\"") != std::string::npos);
  CHECK(json.find("\"fail\":false") != std::string::npos);
}

TEST_CASE("diff: an agent file against the Nsight Compute capture of the same kernel pairs by function name", "[diff]") {
  // The agent's file has mangled names, the import demangled signatures only.
  const std::string agent = slurp(kData / "agent-split" / "zoo_strided_load.pb");
  const fs::path dir = kData / "ncu";
  tools::NcuCsvResult r = tools::parse_ncu_csv(slurp(dir / "zoo" / "strided_load.csv"));
  REQUIRE(r.import);
  std::vector<tools::NcuImport> imports;
  imports.push_back(std::move(*r.import));
  tools::ImportOptions io;
  std::vector<std::string> warnings;
  io.timings = tools::parse_timings(slurp(dir / "timings.csv"), warnings);
  const std::string ncu = tools::encode_run(tools::triage_imports(std::move(imports), io));
  const tools::DiffResult d = tools::compute_diff(view_of_bytes(agent, "a"), view_of_bytes(ncu, "b"), {});
  const tools::FamilyDiff* f = find_pair(d, "zoo_strided_load");
  REQUIRE(f != nullptr);
  CHECK(d.before.families[f->before].classification == "memory_bound");
  CHECK(d.after.families[f->after].classification == "memory_bound");
  CHECK(std::abs(f->change_pct) < 5);  // the same kernel on the same GPU: 1.174 ms vs 1.179 ms
}

TEST_CASE("diff: a slower copy is a revert, regressed, and trips --fail-if-slower (exit 11)", "[diff]") {
  const fs::path dir = scratch("slower");
  const std::string bytes = transpose_import();
  write_file(dir / "before.pb", bytes);
  write_file(dir / "after.pb", scaled_copy(bytes, 1.2));  // SYNTHETIC: 20% slower, same counters
  tools::DiffOptions options;
  options.before = {(dir / "before.pb").string()};
  options.after = {(dir / "after.pb").string()};
  const tools::DiffResult d =
      tools::compute_diff(view_of_bytes(bytes, "b"), view_of_bytes(scaled_copy(bytes, 1.2), "a"), options);
  REQUIRE(d.matched.size() == 2);
  for (const tools::FamilyDiff& f : d.matched) {
    CHECK(f.change_pct == Approx(20).margin(0.01));
    CHECK(f.call == "revert");
    CHECK(f.chain == tools::ChainLabel::kRegressed);
  }
  std::ostringstream out, err;
  options.fail_if_slower_pct = 10;
  CHECK(tools::cmd_diff(options, out, err) == tools::kExitSlower);
  CHECK(out.str().find("FAIL") != std::string::npos);
  options.fail_if_slower_pct = 30;
  std::ostringstream out2, err2;
  CHECK(tools::cmd_diff(options, out2, err2) == 0);
  // Faster is never a failure.
  options.before.swap(options.after);
  options.fail_if_slower_pct = 0;
  std::ostringstream out3, err3;
  CHECK(tools::cmd_diff(options, out3, err3) == 0);
  fs::remove_all(dir);
}

TEST_CASE("diff: faster with the deciding counter unchanged is unexplained", "[diff]") {
  const std::string bytes = transpose_import();
  const std::string faster = scaled_copy(bytes, 0.5);  // SYNTHETIC: half the time, same counters
  const tools::DiffResult d = tools::compute_diff(view_of_bytes(bytes, "b"), view_of_bytes(faster, "a"), {});
  const tools::FamilyDiff* f = find_pair(d, "zoo_transpose_naive");
  REQUIRE(f != nullptr);
  CHECK(f->call == "keep");
  REQUIRE(f->counter);
  CHECK_FALSE(f->counter->as_predicted);
  CHECK(f->chain == tools::ChainLabel::kUnexplained);
}

TEST_CASE("diff: the ledger is appended to, never overwritten, mode 0600, no symlink followed", "[diff]") {
  const fs::path dir = scratch("ledger");
  const std::string bytes = transpose_import();
  write_file(dir / "naive.pb", bytes);
  tools::DiffOptions options;
  options.before = {(dir / "naive.pb").string()};
  options.after = {(dir / "naive.pb").string()};
  options.matches = {{"zoo_transpose_naive", "zoo_transpose_padded"}};
  options.ledger_path = (dir / "ledger.jsonl").string();
  options.label = "pad the shared tile by one word";
  options.now_unix_ns = 1700000000000000000ull;
  std::ostringstream out, err;
  REQUIRE(tools::cmd_diff(options, out, err) == 0);
  const std::vector<std::string> first = lines_of(dir / "ledger.jsonl");
  REQUIRE(first.size() == 1);  // one matched family: the renamed pair
  CHECK(first[0].find("\"label\":\"pad the shared tile by one word\"") != std::string::npos);
  CHECK(first[0].find("\"rule\":\"d5.shared_bank_conflicts\"") != std::string::npos);
  CHECK(first[0].find("\"chain\":\"confirmed\"") != std::string::npos);
  CHECK(first[0].find("\"call\":\"keep\"") != std::string::npos);
  CHECK(first[0].find("\"baseline\":[") != std::string::npos);
  CHECK(first[0].find("\"before_wall_ns\":null") != std::string::npos);  // an import has no wall time
  struct stat st {};
  REQUIRE(::stat(options.ledger_path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  options.label = "second experiment";
  std::ostringstream out2, err2;
  REQUIRE(tools::cmd_diff(options, out2, err2) == 0);
  const std::vector<std::string> both = lines_of(dir / "ledger.jsonl");
  REQUIRE(both.size() == 2);
  CHECK(both[0] == first[0]);
  CHECK(both[1].find("\"label\":\"second experiment\"") != std::string::npos);
  // A symlink at the ledger's name is refused (exit 6), its target untouched.
  write_file(dir / "target", "keep me\n");
  fs::create_symlink(dir / "target", dir / "link.jsonl");
  options.ledger_path = (dir / "link.jsonl").string();
  std::ostringstream out3, err3;
  CHECK(tools::cmd_diff(options, out3, err3) == 6);
  CHECK(slurp(dir / "target") == "keep me\n");
  // The ledger naming an input would append to a capture: a usage error.
  options.ledger_path = (dir / "naive.pb").string();
  std::ostringstream out4, err4;
  CHECK(tools::cmd_diff(options, out4, err4) == 1);
  CHECK(slurp(dir / "naive.pb") == bytes);
  fs::remove_all(dir);
}

TEST_CASE("diff: --match names that match nothing are reported", "[diff]") {
  const std::string bytes = transpose_import();
  tools::DiffOptions options;
  options.matches = {{"no_such_kernel", "zoo_transpose_padded"}};
  const tools::DiffResult d = tools::compute_diff(view_of_bytes(bytes, "a"), view_of_bytes(bytes, "a"), options);
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].find("no kernel 'no_such_kernel' in BEFORE") != std::string::npos);
  CHECK(d.matched.size() == 2);  // the by-name pairs still hold
}

TEST_CASE("diff: the causal table names real rules, and its labels follow the duration first", "[diff]") {
  std::vector<std::string> ids;
  for (const triage::Rule& r : triage::all_rules()) ids.emplace_back(r.id);
  for (const tools::CausalPrediction& p : tools::causal_table()) {
    INFO(p.rule_id);
    CHECK(std::find(ids.begin(), ids.end(), std::string(p.rule_id)) != ids.end());
  }
  CHECK(tools::predictions_for("d7.limiter_near_peak").empty());  // saturated: only the duration tells
  tools::CounterMove fell;
  fell.as_predicted = true;
  CHECK(tools::chain_label(-20, 5, fell, true) == tools::ChainLabel::kConfirmed);
  CHECK(tools::chain_label(-20, 5, std::nullopt, true) == tools::ChainLabel::kUnexplained);
  CHECK(tools::chain_label(-20, 5, std::nullopt, false) == tools::ChainLabel::kNoPrediction);
  CHECK(tools::chain_label(20, 5, fell, true) == tools::ChainLabel::kRegressed);
  CHECK(tools::chain_label(-3, 5, fell, true) == tools::ChainLabel::kNoChange);
  CHECK(tools::moved(32, 4, tools::Direction::kFall, 5));
  CHECK_FALSE(tools::moved(32, 31, tools::Direction::kFall, 5));
  CHECK(tools::moved(0.3, 0.9, tools::Direction::kRise, 5));
}

TEST_CASE("diff: every zoo verdict whose rule predicts a counter finds it in both runs", "[diff]") {
  // The whole zoo import against itself: a table entry naming a counter the rule does not note
  // (a typo, a renamed note) leaves the chain without its counter.
  tools::TriageRun run;
  run.kernels = testing::zoo_ncu_records();
  run.session.source = wire::SessionSource::kNcuCsv;
  const std::string bytes = tools::encode_run(run);
  const tools::DiffResult d = tools::compute_diff(view_of_bytes(bytes, "a"), view_of_bytes(bytes, "a"), {});
  size_t predicted = 0;
  for (const tools::FamilyDiff& f : d.matched) {
    if (!f.predicted) continue;
    ++predicted;
    INFO(d.before.families[f.before].name << " " << d.before.families[f.before].rule_id);
    CHECK(f.counter.has_value());
  }
  CHECK(predicted >= 9);  // of the zoo's 13 kernels, all but the saturated GEMM, FMA chain and tiny kernel
}

}  // namespace test_diff
