#include "file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <utility>

#include "trace_fold.h"

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

// ReadScope::kCurrent as the records stream in: a record that can no longer be shown is dropped
// as soon as the one that supersedes it arrives, so memory holds the current records and one
// being read. The rules are index_records' (the highest revision of a launch, the last record of
// an id), applied early; index_records then finds the same current records among those kept.
class Retainer {
 public:
  explicit Retainer(v1::File& file) : file_(file) {}

  // Takes `record` into the file, or drops it; clears the records it supersedes.
  void take(v1::Record&& record) {
    switch (record.payload_case()) {
      case v1::Record::kInterned:  // its string is in ReadResult::interned
      case v1::Record::kTrace:     // counted, its pauses taken and (read once) its events folded by the caller
        return;
      case v1::Record::kKernel:
        if (!take_kernel(record)) return;
        break;
      case v1::Record::kControl:
        supersede(controls_[record.control().id()]);
        break;
      case v1::Record::kFamily:
        supersede(families_[record.family().id()]);
        break;
      case v1::Record::kTraceSummary:
        supersede(summary_);
        break;
      default:
        break;
    }
    v1::Record* kept = file_.add_records();
    *kept = std::move(record);
    if (last_slot_ != nullptr) last_slot_->push_back(kept);
    last_slot_ = nullptr;
    if (cleared_ >= kCompactAfter && 2 * cleared_ >= static_cast<size_t>(file_.records_size())) compact();
  }

  // Removes the cleared records; the kept ones stay in file order.
  void compact() {
    auto* records = file_.mutable_records();
    int kept = 0;
    for (int i = 0; i < records->size(); ++i) {
      if (records->Get(i).payload_case() == v1::Record::PAYLOAD_NOT_SET) continue;
      // Swaps the pointers: the records themselves, and the slots' pointers to them, stay put.
      if (i != kept) records->SwapElements(i, kept);
      ++kept;
    }
    records->DeleteSubrange(kept, records->size() - kept);
    cleared_ = 0;
  }

 private:
  // Compacting rewrites the array of pointers: done once half of it is cleared records.
  static constexpr size_t kCompactAfter = 1024;
  using LaunchKey = std::pair<uint64_t, uint64_t>;  // as index_records keys a launch
  struct Launch {
    uint32_t revision = 0;
    std::vector<v1::Record*> records;  // the launch's records of that revision, all kept
  };

  // False: a lower revision than the launch's current one, dropped.
  bool take_kernel(const v1::Record& record) {
    const v1::KernelProfile& k = record.kernel();
    auto [it, added] = launches_.try_emplace({k.launch_index(), k.mangled_name_iid()});
    Launch& launch = it->second;
    if (!added && k.revision() < launch.revision) return false;
    if (!added && k.revision() > launch.revision) supersede(launch.records);
    launch.revision = k.revision();
    last_slot_ = &launch.records;
    return true;
  }

  void supersede(std::vector<v1::Record*>& records) {
    for (v1::Record* r : records) r->Clear();  // frees the payload; compact() removes the shell
    cleared_ += records.size();
    records.clear();
    last_slot_ = &records;
  }

  v1::File& file_;
  std::map<LaunchKey, Launch> launches_;
  std::map<uint64_t, std::vector<v1::Record*>> controls_;  // by id: the one record kept
  std::map<uint64_t, std::vector<v1::Record*>> families_;  // by id: the one definition kept
  std::vector<v1::Record*> summary_;
  std::vector<v1::Record*>* last_slot_ = nullptr;  // where take() files the record it keeps
  size_t cleared_ = 0;
};

}  // namespace

uint64_t ByteSource::skip_rest() {
  std::vector<char> scratch(size_t{1} << 16);
  uint64_t n = 0;
  while (const size_t got = read(scratch.data(), scratch.size())) n += got;
  return n;
}

namespace {

// The source's bytes through a fixed buffer, front to back, with 64-bit positions: the reader
// never holds more than this buffer and the record it is parsing (before: the whole file was
// copied twice, and a CodedInputStream over it counted in int, so a file over 2 GiB lost every
// record after the first and one of 2 GiB took five times its size in memory).
class RecordScanner {
 public:
  explicit RecordScanner(ByteSource& source) : source_(source), buffer_(kBufferBytes) {}

  // The bytes consumed so far (from the start of the source).
  [[nodiscard]] uint64_t position() const { return consumed_; }

  // A base-128 varint of at most 10 bytes. False at the end of the source or on an overlong one;
  // `started` says whether any of its bytes was read.
  bool read_varint(uint64_t& value, bool& started) {
    value = 0;
    started = false;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      uint8_t byte = 0;
      if (!read_byte(byte)) return false;
      started = true;
      if (shift < 64) value |= static_cast<uint64_t>(byte & 0x7fu) << shift;
      if ((byte & 0x80u) == 0) return true;
    }
    return false;
  }

  // Exactly `n` bytes into `out` (its capacity is reused across records). The string grows only
  // as bytes arrive, so a corrupt length cannot allocate more than the source holds.
  bool read_exact(std::string& out, size_t n) {
    out.clear();
    while (out.size() < n) {
      if (pos_ == end_ && !fill()) return false;
      const size_t take = std::min(n - out.size(), end_ - pos_);
      out.append(buffer_.data() + pos_, take);
      pos_ += take;
      consumed_ += take;
    }
    return true;
  }

  // Skips the rest of the source and returns how many bytes it held.
  uint64_t drain() {
    const uint64_t n = (end_ - pos_) + source_.skip_rest();
    consumed_ += n;
    pos_ = end_;
    return n;
  }

 private:
  static constexpr size_t kBufferBytes = size_t{1} << 16;

  bool read_byte(uint8_t& byte) {
    if (pos_ == end_ && !fill()) return false;
    byte = static_cast<uint8_t>(buffer_[pos_++]);
    ++consumed_;
    return true;
  }

  bool fill() {
    pos_ = 0;
    end_ = source_.read(buffer_.data(), buffer_.size());
    return end_ > 0;
  }

  ByteSource& source_;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t consumed_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* dst, size_t n) override {
    const size_t take = std::min(n, bytes_.size());
    std::memcpy(dst, bytes_.data(), take);
    bytes_.remove_prefix(take);
    return take;
  }

 private:
  std::string_view bytes_;
};

// A descriptor read with read(2): no size or offset of it is ever held in an int.
class FdSource final : public ByteSource {
 public:
  // `by_name`: opened from a path that names the same bytes again (not "-", standard input,
  // whose offset a second read would find at its end).
  FdSource(int fd, bool by_name) : fd_(fd), by_name_(by_name) {}
  size_t read(char* dst, size_t n) override {
    while (!failed_) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) failed_ = true;
    }
    return 0;
  }
  [[nodiscard]] bool failed() const override { return failed_; }
  // A regular file is read again by its name (a FIFO, a terminal or a socket is read once).
  [[nodiscard]] bool rereadable() const override {
    struct stat st {};
    return by_name_ && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  }
  uint64_t skip_rest() override {
    // A regular file's tail is measured, not read: a torn tail may be gigabytes (or a hole).
    struct stat st {};
    const off_t here = ::lseek(fd_, 0, SEEK_CUR);
    if (here >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= here &&
        ::lseek(fd_, 0, SEEK_END) >= 0) {
      return static_cast<uint64_t>(st.st_size - here);
    }
    return ByteSource::skip_rest();
  }

 private:
  int fd_;
  bool by_name_;
  bool failed_ = false;
};

}  // namespace

StreamedRead stream_cutriage_records(ByteSource& source, const RecordSink& each) {
  StreamedRead out;
  RecordScanner in(source);
  uint64_t good_end = 0;
  std::string payload;  // one record's bytes at a time
  bool clean_end = false;
  while (true) {
    uint64_t tag = 0;
    uint64_t length = 0;
    bool started = false;
    if (!in.read_varint(tag, started)) {
      clean_end = !started;  // the source ended between records
      break;
    }
    // A record ParseFromArray can take: protobuf messages are below 2 GiB.
    const bool framed = tag == kRecordTag && in.read_varint(length, started) &&
                        length <= static_cast<uint64_t>(INT32_MAX);
    v1::Record record;
    const bool parsed = framed && in.read_exact(payload, static_cast<size_t>(length)) &&
                        record.ParseFromArray(payload.data(), static_cast<int>(length)) &&
                        record.payload_case() != v1::Record::PAYLOAD_NOT_SET;
    if (!parsed) break;
    if (out.records_read == 0 && !record.has_session()) {
      // Checked before the sink sees anything: nothing is shown of a file that is not ours.
      out.status = ReadStatus::kNotCutriage;
      out.message = "not a cutriage file (the first record is not a session header)";
      out.bytes_total = in.position() + in.drain();
      return out;
    }
    ++out.records_read;
    good_end = in.position();
    each(record);
  }
  out.bytes_total = clean_end ? in.position() : in.position() + in.drain();
  if (source.failed()) {
    out.status = ReadStatus::kUnreadable;
    out.message = "read error";
    return out;
  }
  if (out.bytes_total == 0) {
    out.status = ReadStatus::kNotCutriage;
    out.message = "the file is empty";
    return out;
  }
  if (out.records_read == 0) {
    out.status = ReadStatus::kNotCutriage;
    out.message = "not a cutriage file (no cutriage.v1 record at the start)";
    return out;
  }
  out.bytes_skipped = out.bytes_total - good_end;
  if (out.bytes_skipped > 0) {
    out.status = ReadStatus::kTruncated;
    out.message = "truncated: read " + std::to_string(out.records_read) + " complete records, skipped the last " +
                  std::to_string(out.bytes_skipped) + " bytes (a torn or corrupt record)";
  }
  return out;
}

ReadResult read_cutriage_stream(ByteSource& source, ReadScope scope, const RecordObserver& observe) {
  ReadResult r;
  const bool current = scope == ReadScope::kCurrent;
  // kCurrent drops the trace events: a source that can be read again gives them to a later read
  // when they are needed (needs_trace_events); one read once (a pipe, memory) has them folded
  // into the statistics as they pass, in case no trace summary comes (TraceFold).
  r.trace_events_dropped = current;
  std::optional<Retainer> retainer;
  std::optional<TraceFold> fold;
  if (current) {
    retainer.emplace(r.file);
    if (!source.rereadable()) fold.emplace();
  }
  const StreamedRead read = stream_cutriage_records(source, [&](v1::Record& record) {
    if (observe) observe(record);
    if (record.has_interned()) r.interned[record.interned().id()] = record.interned().value();
    if (record.has_trace()) {
      ++r.trace_chunks;
      for (const v1::Interval& p : record.trace().untraced()) r.pauses.emplace_back(p.start_ns(), p.end_ns());
      if (fold) fold->add_chunk(record.trace());
    }
    if (fold && record.has_family()) fold->add_family(record.family());
    if (retainer) {
      retainer->take(std::move(record));
    } else {
      *r.file.add_records() = std::move(record);
    }
  });
  r.status = read.status;
  r.message = read.message;
  r.records_read = read.records_read;
  r.bytes_total = read.bytes_total;
  r.bytes_skipped = read.bytes_skipped;
  if (read.status == ReadStatus::kUnreadable || read.status == ReadStatus::kNotCutriage) {
    // Nothing of it is usable: no record, no string, nothing to read again.
    ReadResult none;
    none.status = read.status;
    none.message = read.message;
    none.bytes_total = read.bytes_total;
    return none;
  }
  if (retainer) retainer->compact();  // no cleared record is left for the views to skip
  std::sort(r.pauses.begin(), r.pauses.end());
  index_records(r);
  // A source read once with no summary in it: the view is the fold's (its memory is the
  // statistics, never the events).
  if (fold && r.trace_chunks != 0 && r.trace_summary_record < 0) r.recomputed_summary = fold->finish(r);
  return r;
}

ReadResult read_cutriage_bytes(std::string_view bytes, ReadScope scope) {
  MemorySource source(bytes);
  return read_cutriage_stream(source, scope);
}

namespace {

// The descriptor of `path` ("-": standard input, left open), or -1.
int open_input(const std::string& path) {
  if (path == "-") return STDIN_FILENO;
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

void close_input(const std::string& path, int fd) {
  if (path != "-") ::close(fd);
}

}  // namespace

ReadResult read_cutriage_file(const std::string& path, ReadScope scope, const RecordObserver& observe) {
  const int fd = open_input(path);
  if (fd < 0) {
    ReadResult r;
    r.status = ReadStatus::kUnreadable;
    r.message = "cannot open '" + path + "'";
    return r;
  }
  FdSource source(fd, path != "-");
  ReadResult r = read_cutriage_stream(source, scope, observe);
  close_input(path, fd);
  if (r.status == ReadStatus::kUnreadable) r.message = "error reading '" + path + "'";
  return r;
}

StreamedRead stream_cutriage_file(const std::string& path, const RecordSink& each) {
  const int fd = open_input(path);
  if (fd < 0) {
    StreamedRead r;
    r.status = ReadStatus::kUnreadable;
    r.message = "cannot open '" + path + "'";
    return r;
  }
  FdSource source(fd, path != "-");
  StreamedRead r = stream_cutriage_records(source, each);
  close_input(path, fd);
  if (r.status == ReadStatus::kUnreadable) r.message = "error reading '" + path + "'";
  return r;
}

StreamedRead stream_cutriage_bytes(std::string_view bytes, const RecordSink& each) {
  MemorySource source(bytes);
  return stream_cutriage_records(source, each);
}

bool rereadable_path(const std::string& path) {
  struct stat st {};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
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

std::vector<std::pair<uint64_t, uint64_t>> trace_pauses(const ReadResult& r) { return r.pauses; }

bool needs_trace_events(const ReadResult& r) {
  return r.trace_events_dropped && r.trace_chunks != 0 && r.trace_summary_record < 0 && !r.recomputed_summary;
}

ReadResult read_cutriage_file_current(const std::string& path, const RecordObserver& observe) {
  ReadResult r = read_cutriage_file(path, ReadScope::kCurrent, observe);
  if (needs_trace_events(r)) fold_trace_events(r, {path});
  return r;
}

std::vector<uint64_t> trace_pause_starts(const ReadResult& r) {
  std::vector<uint64_t> starts;
  for (const auto& p : trace_pauses(r)) starts.push_back(p.first);
  return starts;  // sorted, as the pauses are
}

}  // namespace cutriage::tools
