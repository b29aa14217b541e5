#include "file_reader.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include <google/protobuf/io/coded_stream.h>

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

constexpr uint32_t kRecordTag = (1u << 3) | 2u;  // File.records, length-delimited

// Fills the indexes of ReadResult from its records.
void index_records(ReadResult& r) {
  // One launch's records: launch_index alone is unique per process, the mangled name keeps two
  // imported captures whose IDs coincide apart.
  using LaunchKey = std::pair<uint64_t, uint64_t>;  // (launch_index, mangled_name_iid)
  std::map<LaunchKey, uint32_t> highest;
  const auto& records = r.file.records();
  for (int i = 0; i < records.size(); ++i) {
    const v1::Record& rec = records.Get(i);
    switch (rec.payload_case()) {
      case v1::Record::kSession:
        if (i == 0) r.segment_index = rec.session().segment_index();
        break;
      case v1::Record::kControl:
        r.control_records[rec.control().id()] = i;
        break;
      case v1::Record::kFamily:
        r.family_records[rec.family().id()] = i;
        break;
      case v1::Record::kTrace:
        r.trace_records.push_back(i);
        break;
      case v1::Record::kTraceSummary:
        r.trace_summary_record = i;
        break;
      case v1::Record::kKernel: {
        const v1::KernelProfile& k = rec.kernel();
        auto [it, added] = highest.try_emplace({k.launch_index(), k.mangled_name_iid()}, k.revision());
        if (!added && k.revision() > it->second) it->second = k.revision();
        break;
      }
      default:
        break;
    }
  }
  for (int i = 0; i < records.size(); ++i) {
    const v1::Record& rec = records.Get(i);
    if (!rec.has_kernel()) continue;
    const v1::KernelProfile& k = rec.kernel();
    if (k.revision() == highest[{k.launch_index(), k.mangled_name_iid()}]) r.kernel_records.push_back(i);
  }
}

}  // namespace

ReadResult read_cutriage_bytes(std::string_view bytes) {
  ReadResult r;
  r.bytes_total = bytes.size();
  if (bytes.empty()) {
    r.status = ReadStatus::kNotCutriage;
    r.message = "the file is empty";
    return r;
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT32_MAX);
  uint64_t good_end = 0;
  while (good_end < bytes.size()) {
    uint32_t tag = in.ReadTag();
    uint32_t length = 0;
    bool framed = tag == kRecordTag && in.ReadVarint32(&length);
    auto pos = static_cast<uint64_t>(in.CurrentPosition());
    bool complete = framed && pos + length <= bytes.size();
    cutriage::v1::Record record;
    bool parsed = complete && record.ParseFromArray(bytes.data() + pos, static_cast<int>(length)) &&
                  record.payload_case() != cutriage::v1::Record::PAYLOAD_NOT_SET;
    if (!parsed) {
      if (r.file.records_size() == 0) {
        r.status = ReadStatus::kNotCutriage;
        r.message = "not a cutriage file (no cutriage.v1 record at the start)";
        return r;
      }
      break;
    }
    if (r.file.records_size() == 0 && !record.has_session()) {
      r.status = ReadStatus::kNotCutriage;
      r.message = "not a cutriage file (the first record is not a session header)";
      return r;
    }
    if (record.has_interned()) r.interned[record.interned().id()] = record.interned().value();
    *r.file.add_records() = std::move(record);
    in.Skip(static_cast<int>(length));
    good_end = pos + length;
  }
  index_records(r);
  r.bytes_skipped = bytes.size() - good_end;
  if (r.bytes_skipped > 0) {
    r.status = ReadStatus::kTruncated;
    r.message = "truncated: read " + std::to_string(r.file.records_size()) +
                " complete records, skipped the last " + std::to_string(r.bytes_skipped) +
                " bytes (a torn or corrupt record)";
  }
  return r;
}

ReadResult read_cutriage_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    ReadResult r;
    r.status = ReadStatus::kUnreadable;
    r.message = "cannot open '" + path + "'";
    return r;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) {
    ReadResult r;
    r.status = ReadStatus::kUnreadable;
    r.message = "error reading '" + path + "'";
    return r;
  }
  return read_cutriage_bytes(ss.str());
}

std::string_view lookup(const ReadResult& r, uint64_t iid) {
  auto it = r.interned.find(iid);
  return it == r.interned.end() ? std::string_view{} : std::string_view{it->second};
}

const v1::KernelFamily* find_family(const ReadResult& r, uint64_t id) {
  auto it = r.family_records.find(id);
  if (it == r.family_records.end()) return nullptr;
  return &r.file.records(it->second).family();
}

std::string family_name(const ReadResult& r, uint64_t id) {
  if (const v1::KernelFamily* f = find_family(r, id)) {
    if (auto display = lookup(r, f->display_name_iid()); !display.empty()) return std::string(display);
    if (auto mangled = lookup(r, f->mangled_name_iid()); !mangled.empty()) return std::string(mangled);
  }
  return "family " + std::to_string(id);
}

const v1::TraceSummary* trace_summary(const ReadResult& r) {
  if (r.trace_summary_record < 0) return nullptr;
  return &r.file.records(r.trace_summary_record).trace_summary();
}

std::vector<const v1::ControlRequest*> control_requests(const ReadResult& r) {
  std::vector<const v1::ControlRequest*> out;
  out.reserve(r.control_records.size());
  for (const auto& [id, i] : r.control_records) out.push_back(&r.file.records(i).control());
  return out;
}

std::vector<const v1::KernelProfile*> current_kernels(const ReadResult& r) {
  std::vector<const v1::KernelProfile*> out;
  out.reserve(r.kernel_records.size());
  for (int i : r.kernel_records) out.push_back(&r.file.records(i).kernel());
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> trace_pauses(const ReadResult& r) {
  std::vector<std::pair<uint64_t, uint64_t>> pauses;
  for (int i : r.trace_records) {
    for (const v1::Interval& p : r.file.records(i).trace().untraced()) pauses.emplace_back(p.start_ns(), p.end_ns());
  }
  std::sort(pauses.begin(), pauses.end());
  return pauses;
}

std::vector<uint64_t> trace_pause_starts(const ReadResult& r) {
  std::vector<uint64_t> starts;
  for (const auto& p : trace_pauses(r)) starts.push_back(p.first);
  return starts;  // sorted, as the pauses are
}

}  // namespace cutriage::tools
