// ReadScope::kCurrent (issue 25): the reader drops what no view of the current state shows as the
// records stream past (trace events, superseded revisions, earlier records of an id), and what it
// keeps reads as a whole read does. tests/cli/test_report_memory.sh checks the views' output and
// memory on a large file; these check the reader's rules one by one.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capture_support.h"
#include "catch.h"
#include "cutriage/v1/cutriage.pb.h"
#include "file_reader.h"
#include "report.h"
#include "table_export.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_file_reader_scope {

using namespace cutriage;
namespace v1 = cutriage::v1;

namespace {

// One record framed as the agent writes it (a File.records field).
std::string framed(const v1::Record& rec) {
  v1::File one;
  *one.add_records() = rec;
  return one.SerializeAsString();
}

std::string session() {
  v1::Record r;
  r.mutable_session()->set_host("h");
  return framed(r);
}

std::string interned(uint64_t id, const std::string& value) {
  v1::Record r;
  r.mutable_interned()->set_id(id);
  r.mutable_interned()->set_value(value);
  return framed(r);
}

std::string kernel(uint64_t launch, uint32_t revision, double duration_ns) {
  v1::Record r;
  v1::KernelProfile* k = r.mutable_kernel();
  k->set_launch_index(launch);
  k->set_mangled_name_iid(1);
  k->set_revision(revision);
  k->set_duration_ns(duration_ns);
  return framed(r);
}

std::string family(uint64_t id, uint64_t display_iid) {
  v1::Record r;
  r.mutable_family()->set_id(id);
  r.mutable_family()->set_display_name_iid(display_iid);
  return framed(r);
}

std::string control(uint64_t id, v1::ControlState state) {
  v1::Record r;
  r.mutable_control()->set_id(id);
  r.mutable_control()->set_state(state);
  return framed(r);
}

std::string chunk(uint64_t pause_start) {
  v1::Record r;
  v1::TraceChunk* c = r.mutable_trace();
  for (int i = 0; i < 100; ++i) c->add_kernels()->set_start_ns(pause_start + i);
  v1::Interval* pause = c->add_untraced();
  pause->set_start_ns(pause_start);
  pause->set_end_ns(pause_start + 10);
  return framed(r);
}

std::string summary(uint64_t executions) {
  v1::Record r;
  r.mutable_trace_summary()->set_kernel_executions(executions);
  return framed(r);
}

// Memory that says it can be read again, as a regular file does.
class RereadableSource final : public tools::ByteSource {
 public:
  explicit RereadableSource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* dst, size_t n) override {
    const size_t take = std::min(n, bytes_.size());
    bytes_.copy(dst, take);
    bytes_.remove_prefix(take);
    return take;
  }
  [[nodiscard]] bool rereadable() const override { return true; }

 private:
  std::string_view bytes_;
};

tools::ReadResult read_current(const std::string& bytes) {
  RereadableSource source(bytes);
  return tools::read_cutriage_stream(source, tools::ReadScope::kCurrent);
}

std::vector<double> durations(const tools::ReadResult& r) {
  std::vector<double> out;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) out.push_back(k->duration_ns());
  return out;
}

std::vector<int> control_states(const tools::ReadResult& r) {
  std::vector<int> out;
  for (const v1::ControlRequest* c : tools::control_requests(r)) out.push_back(c->state());
  return out;
}

}  // namespace

TEST_CASE("read scope: kCurrent keeps what a whole read's accessors return", "[reader]") {
  std::string bytes = session() + interned(1, "k") + interned(2, "old name") + interned(3, "new name");
  bytes += family(7, 2) + control(1, v1::CONTROL_STATE_STARTED) + kernel(10, 0, 1.0) + chunk(100);
  bytes += kernel(11, 0, 2.0) + kernel(10, 1, 3.0) + chunk(50) + kernel(11, 0, 4.0);  // 11: equal revisions
  bytes += kernel(10, 0, 5.0);  // a lower revision after a higher one: never current
  bytes += family(7, 3) + control(1, v1::CONTROL_STATE_COMPLETED) + summary(1) + summary(2);
  const tools::ReadResult whole = tools::read_cutriage_bytes(bytes);
  const tools::ReadResult current = read_current(bytes);
  REQUIRE(whole.status == tools::ReadStatus::kOk);
  REQUIRE(current.status == tools::ReadStatus::kOk);

  CHECK(durations(current) == durations(whole));
  CHECK(durations(current) == std::vector<double>{2.0, 3.0, 4.0});
  CHECK(control_states(current) == control_states(whole));
  CHECK(control_states(current) == std::vector<int>{v1::CONTROL_STATE_COMPLETED});
  CHECK(tools::family_name(current, 7) == "new name");
  CHECK(tools::family_name(whole, 7) == "new name");
  REQUIRE(tools::trace_summary(current) != nullptr);
  CHECK(tools::trace_summary(current)->kernel_executions() == 2);
  CHECK(tools::trace_pauses(current) == tools::trace_pauses(whole));
  CHECK(tools::trace_pauses(current).front().first == 50);
  CHECK(current.interned == whole.interned);
  CHECK(current.records_read == whole.records_read);
  CHECK(current.trace_chunks == 2);
  CHECK(whole.trace_chunks == 2);
  // What was dropped: the chunks, the strings' records, every superseded record.
  CHECK(current.trace_events_dropped);
  CHECK_FALSE(whole.trace_events_dropped);
  CHECK(current.trace_records.empty());
  CHECK(whole.trace_records.size() == 2);
  // session, family, control, kernels 11 (twice) and 10 (revision 1), the last summary
  CHECK(current.file.records_size() == 7);
  for (const v1::Record& rec : current.file.records()) CHECK(rec.payload_case() != v1::Record::PAYLOAD_NOT_SET);
  CHECK_FALSE(tools::needs_trace_events(current));
}

TEST_CASE("read scope: a trace without a summary is folded, from a second read or as a pipe passes", "[reader]") {
  const std::string bytes = session() + chunk(100) + chunk(200);
  const std::optional<v1::TraceSummary> whole = tools::recompute_summary(tools::read_cutriage_bytes(bytes));
  REQUIRE(whole.has_value());
  CHECK(whole->kernel_executions() == 200);
  // A source that can be read again: the events are dropped, and the file marked for a second
  // read that folds them (fold_trace_events).
  const tools::ReadResult current = read_current(bytes);
  CHECK(current.trace_records.empty());
  CHECK_FALSE(current.recomputed_summary.has_value());
  CHECK(tools::needs_trace_events(current));
  // A source read once (a pipe): nothing could read the events again, so they are folded into the
  // statistics as they pass (before: held, every one of them).
  const tools::ReadResult once = tools::read_cutriage_bytes(bytes, tools::ReadScope::kCurrent);
  CHECK(once.trace_events_dropped);
  CHECK(once.trace_records.empty());
  CHECK(once.file.records_size() == 1);
  CHECK_FALSE(tools::needs_trace_events(once));
  REQUIRE(once.recomputed_summary.has_value());
  CHECK(once.recomputed_summary->SerializeAsString() == whole->SerializeAsString());
  CHECK(tools::recompute_summary(once)->SerializeAsString() == whole->SerializeAsString());
  // With a summary, nothing is recomputed.
  const tools::ReadResult summed = tools::read_cutriage_bytes(bytes + summary(7), tools::ReadScope::kCurrent);
  CHECK_FALSE(summed.recomputed_summary.has_value());
  REQUIRE(tools::trace_summary(summed) != nullptr);
  CHECK(tools::trace_summary(summed)->kernel_executions() == 7);
}

TEST_CASE("read scope: memory holds the current records, not the revisions read", "[reader]") {
  // Each launch rewritten many times over: the superseded records are cleared as the next arrives
  // and their shells removed, so the kept records stay as many as the launches.
  std::string bytes = session();
  constexpr int kLaunches = 3;
  constexpr uint32_t kRevisions = 5000;
  for (uint32_t rev = 0; rev < kRevisions; ++rev) {
    for (int launch = 0; launch < kLaunches; ++launch) bytes += kernel(launch, rev, rev);
  }
  RereadableSource source(bytes);
  const tools::ReadResult r = tools::read_cutriage_stream(source, tools::ReadScope::kCurrent);
  CHECK(r.records_read == 1 + kLaunches * kRevisions);
  CHECK(r.file.records_size() == 1 + kLaunches);
  CHECK(durations(r) == std::vector<double>(kLaunches, kRevisions - 1));
}

TEST_CASE("read scope: a torn tail counts every complete record read, kept or not", "[reader]") {
  const std::string bytes = session() + kernel(1, 0, 1.0) + kernel(1, 1, 2.0) + chunk(5);
  const tools::ReadResult r = read_current(bytes.substr(0, bytes.size() - 3));
  CHECK(r.status == tools::ReadStatus::kTruncated);
  CHECK(r.message.find("read 3 complete records") != std::string::npos);
  CHECK(r.file.records_size() == 2);
}

TEST_CASE("read scope: every committed capture reads the same to the report, whole or current", "[reader]") {
  int files = 0;
  int dropped = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CUTRIAGE_TEST_DATA_DIR)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".pb") continue;
    const std::string path = entry.path().string();
    const tools::ReadResult whole = tools::read_cutriage_file(path);
    if (whole.status != tools::ReadStatus::kOk && whole.status != tools::ReadStatus::kTruncated) continue;
    const tools::ReadResult current = tools::read_cutriage_file_current(path);
    INFO(path);
    ++files;
    dropped += current.trace_events_dropped ? 1 : 0;
    CHECK(current.status == whole.status);
    CHECK(current.message == whole.message);
    CHECK(tools::render_report(current, {}) == tools::render_report(whole, {}));
    // Read once, as from a pipe: what a killed run recomputes is folded as the records pass.
    const std::string bytes = testing::slurp(path);
    const tools::ReadResult piped = tools::read_cutriage_bytes(bytes, tools::ReadScope::kCurrent);
    CHECK(tools::render_report(piped, {}) == tools::render_report(whole, {}));
    tools::ReportOptions verbose;
    verbose.verbose = true;
    CHECK(tools::render_report(current, verbose) == tools::render_report(whole, verbose));
    for (tools::TableRows rows : {tools::TableRows::kKernels, tools::TableRows::kFamilies}) {
      std::string current_error;
      std::string whole_error;
      CHECK(tools::render_table(current, tools::TableFormat::kCsv, rows, current_error) ==
            tools::render_table(whole, tools::TableFormat::kCsv, rows, whole_error));
      CHECK(current_error == whole_error);
    }
  }
  CHECK(files > 50);
  CHECK(dropped > 10);  // the captures with a trace summary read without their events
}

}  // namespace test_file_reader_scope
