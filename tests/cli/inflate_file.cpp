// Writes a large cutriage file that reports as a smaller one does (tests/cli/test_report_memory.sh):
// the records of SRC in order, each TraceChunk written COPIES times over, and each KernelProfile
// of revision R >= 1 (a launch the agent rewrote) written as COPIES + 1 revisions, R, R + 1, ...,
// each superseding the one before, the last being SRC's record. A file with a trace summary
// reports the same whatever its chunks hold, a superseded revision is never shown and no view
// prints the revision's number, so the report of OUT must equal the report of SRC while OUT holds
// as many bytes as asked for.
// COPIES is the least count that makes OUT at least MIB mebibytes. Records are written one at a
// time: this program holds SRC's records and one copy, never OUT.
// usage: inflate_file SRC.pb OUT.pb MIB
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

bool inflatable(const v1::Record& rec) {
  return rec.has_trace() || (rec.has_kernel() && rec.kernel().revision() >= 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: inflate_file SRC.pb OUT.pb MIB\n");
    return 1;
  }
  const cutriage::tools::ReadResult src = cutriage::tools::read_cutriage_file(argv[1]);
  if (src.status != cutriage::tools::ReadStatus::kOk) {
    std::fprintf(stderr, "inflate_file: %s: %s\n", argv[1], src.message.c_str());
    return 1;
  }
  uint64_t bulk = 0;  // bytes one more copy of every inflatable record adds
  for (const v1::Record& rec : src.file.records()) {
    if (inflatable(rec)) bulk += framed(rec).size();
  }
  if (bulk == 0) {
    std::fprintf(stderr, "inflate_file: %s has no trace chunk and no kernel record of revision >= 1\n", argv[1]);
    return 1;
  }
  const uint64_t target = std::strtoull(argv[3], nullptr, 10) << 20;
  const uint64_t copies = (target + bulk - 1) / bulk;
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  for (const v1::Record& rec : src.file.records()) {
    if (rec.has_kernel() && rec.kernel().revision() >= 1) {
      v1::Record revised = rec;
      for (uint64_t i = 0; i <= copies; ++i) {
        revised.mutable_kernel()->set_revision(rec.kernel().revision() + static_cast<uint32_t>(i));
        const std::string bytes = framed(revised);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      }
      continue;
    }
    const std::string bytes = framed(rec);
    const uint64_t times = rec.has_trace() ? copies + 1 : 1;
    for (uint64_t i = 0; i < times; ++i) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  out.close();
  if (!out) {
    std::fprintf(stderr, "inflate_file: cannot write '%s'\n", argv[2]);
    return 1;
  }
  return 0;
}
