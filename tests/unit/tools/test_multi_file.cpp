// Several cutriage files read together (tools/src/multi_file.h) on the agent's H200 files: the
// processes of one job kept apart and named, and the segments of one process merged. No rotated
// run is committed, so the segments are SYNTHETIC: a real file cut in two here, the second part
// given its own header (segment_index 2) and its own interned-string numbering, as the agent's
// rotation writes them (agent/src/record_output.cpp).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "capture_support.h"
#include "catch.h"
#include "diff.h"
#include "file_reader.h"
#include "multi_file.h"
#include "nvdisasm_stub.h"
#include "pprof/profile.pb.h"
#include "pprof_export.h"
#include "report_model.h"
#include "report.h"
#include "table_export.h"
#include "trace_export.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_multi_file {

using namespace cutriage;
using cutriage::testing::slurp;

namespace {

const std::string kData = CUTRIAGE_TEST_DATA_DIR;

// Adds `shift` to every nonzero interned id of `m` (this test's own walk of the schema: every
// uint64 field named *_iid or *_iids, and InternedString.id).
void shift_iids(google::protobuf::Message& m, uint64_t shift) {
  namespace pb = google::protobuf;
  const pb::Reflection* refl = m.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      for (int i = 0; i < (f->is_repeated() ? refl->FieldSize(m, f) : 1); ++i) {
        shift_iids(f->is_repeated() ? *refl->MutableRepeatedMessage(&m, f, i) : *refl->MutableMessage(&m, f), shift);
      }
      continue;
    }
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_UINT64) continue;
    const std::string& n = f->name();
    const bool iid = n.size() > 4 && (n.substr(n.size() - 4) == "_iid" || (n.size() > 5 && n.substr(n.size() - 5) == "_iids"));
    const bool interned_id = m.GetDescriptor()->name() == "InternedString" && n == "id";
    if (!iid && !interned_id) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < refl->FieldSize(m, f); ++i) {
        const uint64_t v = refl->GetRepeatedUInt64(m, f, i);
        if (v != 0) refl->SetRepeatedUInt64(&m, f, i, v + shift);
      }
    } else if (const uint64_t v = refl->GetUInt64(m, f); v != 0) {
      refl->SetUInt64(&m, f, v + shift);
    }
  }
}

// SYNTHETIC segments of `whole`: records [1, cut) after a header with segment_index 1; then a
// header with segment_index 2, every interned string again (ids shifted by 1000) and the rest.
std::pair<tools::ReadResult, tools::ReadResult> split(const tools::ReadResult& whole, int cut) {
  v1::File first, second;
  v1::SessionHeader header = whole.file.records(0).session();
  header.set_segment_index(1);
  *first.add_records()->mutable_session() = header;
  header.set_segment_index(2);
  *second.add_records()->mutable_session() = header;
  for (int i = 1; i < whole.file.records_size(); ++i) {
    const v1::Record& rec = whole.file.records(i);
    if (i < cut) *first.add_records() = rec;
    if (rec.has_interned()) *second.add_records() = rec;  // defined again in the later segment
  }
  for (int i = cut; i < whole.file.records_size(); ++i) {
    if (!whole.file.records(i).has_interned()) *second.add_records() = whole.file.records(i);
  }
  for (v1::Record& rec : *second.mutable_records()) shift_iids(rec, 1000);
  std::string a, b;
  first.SerializeToString(&a);
  second.SerializeToString(&b);
  return {tools::read_cutriage_bytes(a), tools::read_cutriage_bytes(b)};
}

}  // namespace

TEST_CASE("multi-file: the segments of one run merge back into the run", "[multi-file]") {
  const std::string path = kData + "/agent-split/zoo_transpose.pb";
  const tools::ReadResult whole = tools::read_cutriage_file(path);
  REQUIRE(whole.status == tools::ReadStatus::kOk);
  REQUIRE(whole.trace_summary_record > 0);
  auto [seg1, seg2] = split(whole, whole.file.records_size() / 2);
  REQUIRE(seg1.status == tools::ReadStatus::kOk);
  REQUIRE(seg2.status == tools::ReadStatus::kOk);
  REQUIRE(seg2.segment_index == 2);
  // Given out of order: merged in segment order.
  tools::MultiRead read = tools::group_runs({"seg2.pb", "seg1.pb"}, {seg2, seg1});
  REQUIRE(read.conflict.empty());
  REQUIRE(read.processes.size() == 1);
  CHECK(read.processes[0].paths == std::vector<std::string>{"seg1.pb", "seg2.pb"});
  const tools::ReadResult& merged = read.processes[0].file;
  // The same report, tables and diff view as the whole file: every name resolved again.
  tools::ReportOptions options;
  CHECK(tools::render_report(merged, options) == tools::render_report(whole, options));
  std::string e1, e2;
  CHECK(tools::render_table(merged, tools::TableFormat::kCsv, tools::TableRows::kFamilies, e1) ==
        tools::render_table(whole, tools::TableFormat::kCsv, tools::TableRows::kFamilies, e2));
  CHECK(tools::render_runs_report(read.processes, options) == tools::render_report(whole, options));
  // One process: the table has no process column.
  std::string e3;
  CHECK(tools::render_runs_table(read.processes, tools::TableFormat::kCsv, tools::TableRows::kKernels, e3)
            .rfind("launch_index,", 0) == 0);
}

TEST_CASE("multi-file: the same segment twice is refused", "[multi-file]") {
  const tools::ReadResult whole = tools::read_cutriage_file(kData + "/agent-split/zoo_transpose.pb");
  tools::MultiRead read = tools::group_runs({"a.pb", "b.pb"}, {whole, whole});
  CHECK(read.processes.empty());
  CHECK(read.conflict.find("'b.pb' is a whole run") != std::string::npos);
}

TEST_CASE("multi-file: processes of one job are kept apart and named", "[multi-file]") {
  const std::vector<std::string> paths = {kData + "/agent-split/zoo_transpose.pb",
                                          kData + "/agent-split/zoo_vector_add.pb"};
  tools::MultiRead read = tools::read_runs(paths);
  REQUIRE(read.status == tools::ReadStatus::kOk);
  REQUIRE(read.processes.size() == 2);
  const tools::ReadResult t = tools::read_cutriage_file(paths[0]);
  const tools::ReadResult v = tools::read_cutriage_file(paths[1]);
  const std::string name_t = t.file.records(0).session().host() + ":" + std::to_string(t.file.records(0).session().pid());
  const std::string name_v = v.file.records(0).session().host() + ":" + std::to_string(v.file.records(0).session().pid());
  CHECK(read.processes[0].name == name_t);
  CHECK(read.processes[1].name == name_v);

  tools::ReportOptions options;
  const std::string text = tools::render_runs_report(read.processes, options);
  CHECK(text.rfind("2 processes\n", 0) == 0);
  const size_t h1 = text.find("=== process " + name_t);
  const size_t h2 = text.find("=== process " + name_v);
  REQUIRE(h1 != std::string::npos);
  REQUIRE(h2 != std::string::npos);
  CHECK(h1 < h2);
  CHECK(text.find("zoo_transpose_naive", h1) < h2);
  CHECK(text.find("zoo_vector_add", h2) != std::string::npos);

  // CSV: a first column `process`, each process's rows after the other's.
  std::string error;
  const std::string csv = tools::render_runs_table(read.processes, tools::TableFormat::kCsv, tools::TableRows::kFamilies, error);
  REQUIRE(error.empty());
  CHECK(csv.rfind("process,family_id,name,", 0) == 0);
  std::string e1, e2;
  const std::string csv_t = tools::render_table(t, tools::TableFormat::kCsv, tools::TableRows::kFamilies, e1);
  const std::string csv_v = tools::render_table(v, tools::TableFormat::kCsv, tools::TableRows::kFamilies, e2);
  auto rows = [](const std::string& s) { size_t n = 0; for (size_t p = 0; (p = s.find("\r\n", p)) != std::string::npos; p += 2) ++n; return n; };
  CHECK(rows(csv) == rows(csv_t) + rows(csv_v) - 1);  // one header
  CHECK(csv.find("\r\n" + name_v + ",") != std::string::npos);
  // JSON Lines: "process" first in every object.
  const std::string json = tools::render_runs_table(read.processes, tools::TableFormat::kJsonLines, tools::TableRows::kKernels, error);
  size_t objects = 0;
  for (size_t p = 0; p < json.size(); p = json.find('\n', p) + 1) {
    CHECK(json.compare(p, 12, "{\"process\":\"") == 0);
    ++objects;
  }
  // One row per kernel as the report counts them (adaptively merged launches once).
  auto kernel_rows = [](const tools::ReadResult& r) { return tools::model::report_kernels(r).current.size(); };
  CHECK(objects == kernel_rows(t) + kernel_rows(v));

  // As a diff side, the processes' families are summed into one view.
  const tools::RunView view = tools::run_view(read.processes);
  CHECK(view.processes.size() == 2);
  bool has_t = false, has_v = false;
  for (const tools::FamilySide& f : view.families) {
    has_t = has_t || f.name == "zoo_transpose_naive";
    has_v = has_v || f.name == "zoo_vector_add";
  }
  CHECK(has_t);
  CHECK(has_v);
}

// ---------------------------------------------------------------------------------------------
// The exports over several files: `cutriage trace` and `cutriage pprof` read them the same way.

namespace {

// The output of a trace export, one event a line (the writer puts each on its own line).
struct TraceLines {
  std::map<uint64_t, std::string> process_names;  // pid -> name
  std::vector<std::pair<uint64_t, double>> events;  // "X" events: (pid, ts in microseconds)
  std::string other_data;
};

uint64_t number_after(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  REQUIRE(at != std::string::npos);
  return std::strtoull(line.c_str() + at + key.size(), nullptr, 10);
}

TraceLines parse_trace(const std::string& json) {
  TraceLines t;
  std::istringstream in(json);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"otherData\"") != std::string::npos) t.other_data = line;
    if (line.find("\"name\":\"process_name\"") != std::string::npos) {
      const std::string key = "\"args\":{\"name\":\"";
      const size_t at = line.find(key);
      REQUIRE(at != std::string::npos);
      const size_t from = at + key.size();
      t.process_names[number_after(line, "\"pid\":")] = line.substr(from, line.find('"', from) - from);
    }
    if (line.find("{\"ph\":\"X\",\"ts\":") != std::string::npos) {
      const size_t at = line.find("\"ts\":") + 5;
      t.events.emplace_back(number_after(line, "\"pid\":"), std::strtod(line.c_str() + at, nullptr));
    }
  }
  return t;
}

std::string export_trace(const tools::ReadResult& file) {
  std::ostringstream out;
  REQUIRE_FALSE(tools::export_chrome_trace(file, out).has_value());
  return out.str();
}

}  // namespace

TEST_CASE("multi-file: trace of the segments of one run is the trace of the run", "[multi-file][trace_export]") {
  for (const char* name : {"trace/trace_timeline.pb", "trace/zoo_vector_add.pb"}) {
    CAPTURE(name);
    const tools::ReadResult whole = tools::read_cutriage_file(kData + "/" + name);
    REQUIRE(whole.status == tools::ReadStatus::kOk);
    REQUIRE_FALSE(whole.trace_records.empty());
    auto [seg1, seg2] = split(whole, whole.file.records_size() / 2);  // SYNTHETIC segments
    tools::MultiRead read = tools::group_runs({"seg1.pb", "seg2.pb"}, {seg1, seg2});
    REQUIRE(read.processes.size() == 1);
    std::ostringstream merged;
    tools::TraceExportStats stats;
    REQUIRE_FALSE(tools::export_chrome_trace_runs(read.processes, merged, &stats).has_value());
    CHECK(merged.str() == export_trace(whole));
    CHECK(stats.kernels > 0);
  }
}

TEST_CASE("multi-file: trace of segment files read again one record at a time is the trace of the run",
          "[multi-file][trace_export]") {
  // What `cutriage trace seg1.pb seg2.pb` does: the current records only, each segment's chunks
  // read again from its file, its own string ids renumbered into the merged file's.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "cutriage_multi_file_trace";
  std::filesystem::create_directories(dir);
  for (const char* name : {"trace/trace_timeline.pb", "trace/zoo_vector_add.pb"}) {
    CAPTURE(name);
    const tools::ReadResult whole = tools::read_cutriage_file(kData + "/" + name);
    REQUIRE(whole.status == tools::ReadStatus::kOk);
    auto [seg1, seg2] = split(whole, whole.file.records_size() / 2);  // SYNTHETIC segments
    const std::vector<std::string> paths = {(dir / "seg1.pb").string(), (dir / "seg2.pb").string()};
    for (size_t i = 0; i < 2; ++i) {
      std::ofstream(paths[i], std::ios::binary) << (i == 0 ? seg1 : seg2).file.SerializeAsString();
    }
    tools::MultiRead read = tools::read_runs(paths, tools::ReadScope::kCurrent, false);
    REQUIRE(read.processes.size() == 1);
    REQUIRE(read.processes[0].file.trace_records.empty());
    REQUIRE(read.processes[0].segment_iids.size() == 2);
    std::ostringstream merged;
    REQUIRE_FALSE(tools::export_chrome_trace_runs(read.processes, merged).has_value());
    CHECK(merged.str() == export_trace(whole));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("multi-file: trace of two processes draws each apart on one clock", "[multi-file][trace_export]") {
  const std::vector<std::string> paths = {kData + "/trace/zoo_vector_add.pb", kData + "/trace/zoo_fma_chain.pb"};
  tools::MultiRead read = tools::read_runs(paths);
  REQUIRE(read.processes.size() == 2);
  std::ostringstream out;
  tools::TraceExportStats stats;
  std::vector<std::string> notes;
  REQUIRE_FALSE(tools::export_chrome_trace_runs(read.processes, out, &stats, &notes).has_value());
  CHECK(notes.empty());
  const TraceLines both = parse_trace(out.str());

  // Each process alone, for its events and its first event's Unix time.
  std::vector<TraceLines> alone;
  std::vector<uint64_t> unix_origin;
  uint64_t kernels = 0;
  for (const tools::ProcessRun& run : read.processes) {
    std::ostringstream one;
    tools::TraceExportStats s;
    REQUIRE_FALSE(tools::export_chrome_trace(run.file, one, &s).has_value());
    kernels += s.kernels;
    alone.push_back(parse_trace(one.str()));
    unix_origin.push_back(number_after(alone.back().other_data, "\"time_origin_unix_ns\":"));
  }
  CHECK(stats.kernels == kernels);
  const uint64_t zero = std::min(unix_origin[0], unix_origin[1]);
  CHECK(number_after(both.other_data, "\"time_origin_unix_ns\":") == zero);

  for (size_t p = 0; p < 2; ++p) {
    CAPTURE(p);
    const uint64_t base = p * 1'000'000;
    // The process's own trace processes, named after it: "vm:2244 GPU 0 — NVIDIA H200".
    size_t named = 0;
    for (const auto& [pid, pname] : alone[p].process_names) {
      REQUIRE(both.process_names.count(base + pid) == 1);
      CHECK(both.process_names.at(base + pid) == read.processes[p].name + " " + pname);
      ++named;
    }
    CHECK(named > 0);
    // The same events, moved by where the process's first event falls on the common clock.
    std::vector<std::pair<uint64_t, double>> mine;
    for (const auto& e : both.events) {
      if (e.first / 1'000'000 == p) mine.emplace_back(e.first - base, e.second);
    }
    REQUIRE(mine.size() == alone[p].events.size());
    const double offset_us = static_cast<double>(unix_origin[p] - zero) / 1000.0;
    for (size_t i = 0; i < mine.size(); ++i) {
      CHECK(mine[i].first == alone[p].events[i].first);
      CHECK(mine[i].second == Approx(alone[p].events[i].second + offset_us).margin(0.002));
    }
  }
  CHECK(read.processes[0].name != read.processes[1].name);
  // The processes ran one after the other: the second starts where its Unix time says.
  CHECK(unix_origin[1] > unix_origin[0]);
}

TEST_CASE("multi-file: trace of processes without a trace is an error", "[multi-file][trace_export]") {
  tools::MultiRead read = tools::read_runs({kData + "/agent/zoo_transpose.pb", kData + "/agent/zoo_vector_add.pb"});
  REQUIRE(read.processes.size() == 2);
  std::ostringstream out;
  const auto error = tools::export_chrome_trace_runs(read.processes, out);
  REQUIRE(error.has_value());
  CHECK(error->kind == tools::TraceExportError::Kind::kNoTrace);
  CHECK(out.str().empty());
}

TEST_CASE("multi-file: pprof of two processes holds the samples of both and labels them", "[multi-file][pprof]") {
  const std::vector<std::string> paths = {kData + "/pcsampling/zoo_transpose.pb",
                                          kData + "/pcsampling/zoo_strided_load.pb"};
  tools::MultiRead read = tools::read_runs(paths);
  REQUIRE(read.processes.size() == 2);
  tools::SassResolver sass(testing::no_nvdisasm());
  tools::PprofStats sum;
  std::vector<tools::PprofSource> sources;
  for (const tools::ProcessRun& run : read.processes) {
    perftools::profiles::Profile one;
    tools::PprofStats st;
    REQUIRE_FALSE(tools::build_pprof(run.file, {}, sass, one, &st).has_value());
    sum.samples += st.samples;
    sum.cycles += st.cycles;
    sum.stall_samples += st.stall_samples;
    sum.stacks += st.stacks;
    sum.kernels += st.kernels;
    sources.push_back({&run.file, run.name});
  }
  perftools::profiles::Profile both;
  tools::PprofStats st;
  REQUIRE_FALSE(tools::build_pprof(sources, {}, sass, both, &st).has_value());
  CHECK(st.samples == sum.samples);
  CHECK(st.cycles == sum.cycles);
  CHECK(st.stall_samples == sum.stall_samples);
  CHECK(st.stacks == sum.stacks);
  CHECK(st.kernels == sum.kernels);
  // Every sample says whose it is; both processes are there, and the values add up per process.
  std::map<std::string, int64_t> per_process;
  int64_t total = 0;
  for (const perftools::profiles::Sample& s : both.sample()) {
    std::string process;
    for (const perftools::profiles::Label& l : s.label()) {
      if (both.string_table(static_cast<int>(l.key())) == "process") process = both.string_table(static_cast<int>(l.str()));
    }
    CHECK_FALSE(process.empty());
    per_process[process] += s.value(0);
    total += s.value(0);
  }
  CHECK(per_process.size() == 2);
  CHECK(per_process.count(read.processes[0].name) == 1);
  CHECK(per_process.count(read.processes[1].name) == 1);
  CHECK(static_cast<uint64_t>(total) == sum.samples);
}

TEST_CASE("multi-file: pprof of the segments of one run is the profile of the run", "[multi-file][pprof]") {
  const tools::ReadResult whole = tools::read_cutriage_file(kData + "/pcsampling/zoo_transpose.pb");
  REQUIRE(whole.status == tools::ReadStatus::kOk);
  auto [seg1, seg2] = split(whole, whole.file.records_size() / 2);  // SYNTHETIC segments
  tools::MultiRead read = tools::group_runs({"seg1.pb", "seg2.pb"}, {seg1, seg2});
  REQUIRE(read.processes.size() == 1);
  tools::SassResolver sass(testing::no_nvdisasm());
  perftools::profiles::Profile a, b;
  tools::PprofStats sa, sb;
  REQUIRE_FALSE(tools::build_pprof(whole, {}, sass, a, &sa).has_value());
  // One process: no process label, the samples of the run.
  REQUIRE_FALSE(tools::build_pprof({{&read.processes[0].file, {}}}, {}, sass, b, &sb).has_value());
  CHECK(sb.samples == sa.samples);
  CHECK(sb.cycles == sa.cycles);
  CHECK(sb.stacks == sa.stacks);
  CHECK(b.sample_size() == a.sample_size());
}

}  // namespace test_multi_file
