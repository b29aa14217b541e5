// Writes a large cutriage file from a real capture (tests/cli/test_report_memory.sh): the records
// of SRC in order, except that
//  - each KernelProfile of revision R >= 1 (a launch the agent rewrote) is written as COPIES + 1
//    revisions, R, R + 1, ..., each superseding the one before, the last being SRC's record;
//  - before SRC's TraceSummary (at the end when it has none) its trace comes COPIES more times:
//    every TraceChunk again, in order, copy i with its times moved on by i periods (the trace's
//    span plus a millisecond) and its correlation ids by i times the largest one's, as if the run
//    had gone on repeating itself. The trace stays in time order, as the agent writes it.
// A file with a trace summary reports the same whatever its chunks hold, a superseded revision is
// never shown and no view prints the revision's number, so the report of OUT equals the report of
// SRC while OUT holds as many bytes as asked for; the trace export of OUT holds COPIES + 1 times
// SRC's executions.
// COPIES is the least count that makes OUT at least MIB mebibytes (0 with MIB 0: OUT holds SRC's
// records once); it is printed on stdout ("copies N"), so a test can scale what SRC counts. Records
// are written one at a time: this program holds SRC's records and one copy, never OUT.
// --killed leaves out the TraceSummary and SessionEnd records: OUT reads as a run killed before
// its end, whose application view a reader recomputes from every trace event OUT holds.
// usage: inflate_file SRC.pb OUT.pb MIB [--killed]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#include "file_reader.h"

namespace {

namespace v1 = cutriage::v1;

// One record framed as the agent writes it (a File.records field).
std::string framed(const v1::Record& rec) {
  v1::File one;
  *one.add_records() = rec;
  return one.SerializeAsString();
}

bool rewritten(const v1::Record& rec) { return rec.has_kernel() && rec.kernel().revision() >= 1; }

// The trace's extent: its earliest start, latest end and largest correlation id.
struct Extent {
  uint64_t first = std::numeric_limits<uint64_t>::max();
  uint64_t last = 0;
  uint64_t correlation = 0;
  void take(uint64_t start, uint64_t end) {
    if (start == 0 && end == 0) return;  // CUPTI's "no timestamps"
    first = std::min(first, start);
    last = std::max(last, end);
  }
};

// A time of copy `i`: moved on by i periods (a time of 0, "not collected", stays 0).
uint64_t moved(uint64_t t, uint64_t by) { return t == 0 ? 0 : t + by; }

// `chunk` as the copy `period_ns` and `correlation_by` later.
v1::Record shifted(const v1::TraceChunk& chunk, uint64_t period_ns, uint64_t correlation_by) {
  v1::Record rec;
  v1::TraceChunk& c = *rec.mutable_trace();
  c = chunk;
  for (v1::KernelExecution& k : *c.mutable_kernels()) {
    k.set_start_ns(moved(k.start_ns(), period_ns));
    k.set_end_ns(moved(k.end_ns(), period_ns));
    if (k.correlation_id() != 0) k.set_correlation_id(k.correlation_id() + correlation_by);
  }
  for (v1::CopyExecution& x : *c.mutable_copies()) {
    x.set_start_ns(moved(x.start_ns(), period_ns));
    x.set_end_ns(moved(x.end_ns(), period_ns));
    if (x.correlation_id() != 0) x.set_correlation_id(x.correlation_id() + correlation_by);
  }
  for (v1::NvtxRange& n : *c.mutable_nvtx_ranges()) {
    n.set_start_ns(moved(n.start_ns(), period_ns));
    n.set_end_ns(moved(n.end_ns(), period_ns));
  }
  for (v1::Interval& p : *c.mutable_untraced()) {
    p.set_start_ns(moved(p.start_ns(), period_ns));
    p.set_end_ns(moved(p.end_ns(), period_ns));
  }
  return rec;
}

}  // namespace

int main(int argc, char** argv) {
  const bool killed = argc == 5 && std::string(argv[4]) == "--killed";
  if (argc != 4 && !killed) {
    std::fprintf(stderr, "usage: inflate_file SRC.pb OUT.pb MIB [--killed]\n");
    return 1;
  }
  const cutriage::tools::ReadResult src = cutriage::tools::read_cutriage_file(argv[1]);
  if (src.status != cutriage::tools::ReadStatus::kOk) {
    std::fprintf(stderr, "inflate_file: %s: %s\n", argv[1], src.message.c_str());
    return 1;
  }
  uint64_t bulk = 0;  // bytes one more copy adds
  Extent extent;
  for (const v1::Record& rec : src.file.records()) {
    if (rec.has_trace() || rewritten(rec)) bulk += framed(rec).size();
    if (rec.has_kernel()) extent.correlation = std::max(extent.correlation, rec.kernel().correlation_id());
    if (!rec.has_trace()) continue;
    for (const v1::KernelExecution& k : rec.trace().kernels()) {
      extent.take(k.start_ns(), k.end_ns());
      extent.correlation = std::max(extent.correlation, k.correlation_id());
    }
    for (const v1::CopyExecution& x : rec.trace().copies()) {
      extent.take(x.start_ns(), x.end_ns());
      extent.correlation = std::max(extent.correlation, x.correlation_id());
    }
    for (const v1::NvtxRange& n : rec.trace().nvtx_ranges()) extent.take(n.start_ns(), n.end_ns());
    for (const v1::Interval& p : rec.trace().untraced()) extent.take(p.start_ns(), p.end_ns());
  }
  if (bulk == 0) {
    std::fprintf(stderr, "inflate_file: %s has no trace chunk and no kernel record of revision >= 1\n", argv[1]);
    return 1;
  }
  const uint64_t target = std::strtoull(argv[3], nullptr, 10) << 20;
  const uint64_t copies = (target + bulk - 1) / bulk;
  const uint64_t period = (extent.last > extent.first ? extent.last - extent.first : 0) + 1'000'000;
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  auto write = [&out](const v1::Record& rec) {
    const std::string bytes = framed(rec);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  bool repeated = false;  // the trace's copies written
  auto repeat_trace = [&] {
    repeated = true;
    for (uint64_t i = 1; i <= copies; ++i) {
      for (const v1::Record& rec : src.file.records()) {
        if (rec.has_trace()) write(shifted(rec.trace(), i * period, i * (extent.correlation + 1)));
      }
    }
  };
  for (const v1::Record& rec : src.file.records()) {
    if (!repeated && (rec.has_trace_summary() || rec.has_session_end())) repeat_trace();
    if (killed && (rec.has_trace_summary() || rec.has_session_end())) continue;
    if (rewritten(rec)) {
      v1::Record revised = rec;
      for (uint64_t i = 0; i <= copies; ++i) {
        revised.mutable_kernel()->set_revision(rec.kernel().revision() + static_cast<uint32_t>(i));
        write(revised);
      }
      continue;
    }
    write(rec);
  }
  if (!repeated) repeat_trace();
  out.close();
  if (!out) {
    std::fprintf(stderr, "inflate_file: cannot write '%s'\n", argv[2]);
    return 1;
  }
  std::printf("copies %llu\n", static_cast<unsigned long long>(copies));
  return 0;
}
