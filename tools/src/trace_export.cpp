#include "trace_export.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "cutriage/triage/timeline.h"
#include "cutriage/wire/utf8.h"
#include "trace_graphs.h"
#include "trace_lanes.h"
#include "trace_placement.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

// Process ids of the output (Chrome trace pids are numbers; Perfetto reads them as uint32).
constexpr uint32_t kCpuPid = 1;
constexpr uint32_t kUnknownDevice = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kUnknownDevicePid = 999'999;
// The agent's own track: the pauses of a duty-cycled trace (TraceChunk.untraced).
constexpr uint32_t kAgentPid = 999'998;
uint32_t gpu_pid(uint32_t device) { return device == kUnknownDevice ? kUnknownDevicePid : device + 2; }
// Threads that are not a stream or an OS thread (overflow lanes, stream ids repeated across
// contexts) get ids from here on: above Linux's pid_max (2^22) and CUPTI's small stream ids,
// below INT32_MAX; ids already taken are skipped.
constexpr uint32_t kFirstSyntheticTid = 1'000'000'000;
// Events waiting to be put in time order before they are written (about 120 bytes each).
constexpr size_t kWindowEvents = size_t{1} << 16;

// Microseconds with three decimals, from integer nanoseconds: exact, never NaN or infinite.
void append_us(std::string& out, uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
  out += buf;
}

void append_u64(std::string& out, uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%" PRIu64, v);
  out += buf;
}

const char* copy_name(v1::CopyExecution::Kind kind) {
  switch (kind) {
    case v1::CopyExecution::KIND_HOST_TO_DEVICE: return "memcpy HtoD";
    case v1::CopyExecution::KIND_DEVICE_TO_HOST: return "memcpy DtoH";
    case v1::CopyExecution::KIND_DEVICE_TO_DEVICE: return "memcpy DtoD";
    case v1::CopyExecution::KIND_HOST_TO_HOST: return "memcpy HtoH";
    case v1::CopyExecution::KIND_PEER: return "memcpy PtoP";
    case v1::CopyExecution::KIND_MEMSET: return "memset";
    default: return "copy";
  }
}

const char* copy_kind_words(v1::CopyExecution::Kind kind) {
  switch (kind) {
    case v1::CopyExecution::KIND_HOST_TO_DEVICE: return "host to device";
    case v1::CopyExecution::KIND_DEVICE_TO_HOST: return "device to host";
    case v1::CopyExecution::KIND_DEVICE_TO_DEVICE: return "device to device";
    case v1::CopyExecution::KIND_HOST_TO_HOST: return "host to host";
    case v1::CopyExecution::KIND_PEER: return "peer to peer";
    case v1::CopyExecution::KIND_MEMSET: return "memset";
    default: return "other";
  }
}

// A named thread of the output.
struct Thread {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string name;
  uint64_t sort = 0;
};

// Hands out thread ids per process: the wanted id when it is free, else a synthetic one.
class TidAllocator {
 public:
  uint32_t take(uint32_t pid, std::optional<uint32_t> wanted) {
    std::set<uint32_t>& used = used_[pid];
    if (wanted && used.insert(*wanted).second) return *wanted;
    uint32_t& next = next_[pid];
    if (next == 0) next = kFirstSyntheticTid;
    while (!used.insert(next).second) ++next;
    return next++;
  }

 private:
  std::map<uint32_t, std::set<uint32_t>> used_;
  std::map<uint32_t, uint32_t> next_;
};

// Streams the JSON text out in blocks; remembers whether the stream failed.
class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) { buf_.reserve(kBlock + 4096); }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kBlock) flush();
  }
  void flush() {
    if (!buf_.empty() && out_) out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
  [[nodiscard]] bool good() const { return static_cast<bool>(out_); }

 private:
  static constexpr size_t kBlock = 1 << 20;
  std::ostream& out_;
  std::string buf_;
};

// kPlaced: a profiled launch the trace holds no execution of, drawn from its KernelProfile
// record (trace_placement.h).
enum class EventKind : uint8_t { kKernel, kCopy, kNvtx, kPlaced };

struct KernelFields {
  uint64_t family_id = 0;
  uint64_t correlation = 0;
  uint64_t nvtx_iid = 0;  // the file's id (a segment's, renumbered)
  uint64_t graph_node_id = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t stream = 0;
  uint32_t context = 0;
  uint32_t graph_id = 0;
  bool replayed = false;
  bool cut_by_pause = false;
};
struct CopyFields {
  uint64_t bytes = 0;
  uint64_t correlation = 0;
  uint32_t stream = 0;
  uint32_t graph_id = 0;
  v1::CopyExecution::Kind kind = v1::CopyExecution::KIND_UNSPECIFIED;
  bool pageable = false;
};
struct NvtxFields {
  uint64_t name_iid = 0;
  uint64_t domain_iid = 0;
  uint32_t depth = 0;
};
struct PlacedFields {
  int record = 0;  // its KernelProfile record
};

// A track of the output before its lanes: a stream (GPU) or an OS thread (CPU, its NVTX ranges).
struct GpuTrack {
  GpuTrackKey key;
  DisjointLanes lanes{0};
  std::vector<uint32_t> tids;  // per lane; lane 0 keeps the stream id when it is free
};
struct CpuTrack {
  uint32_t thread = 0;
  NestedLanes lanes;
  std::vector<uint32_t> tids;
};

// One event waiting in the window: what the output needs of it, not its record (dropped).
struct Pending {
  uint64_t start = 0;
  uint64_t end = 0;   // cut at a pause when the agent did not cut it
  uint64_t seq = 0;   // arrival order: the last tie-break, so the output does not depend on the sort
  GpuTrack* gpu = nullptr;
  CpuTrack* cpu = nullptr;
  EventKind kind = EventKind::kKernel;
  bool cut = false;
  std::variant<KernelFields, CopyFields, NvtxFields, PlacedFields> fields;
};

// Earlier start first; at the same start the longer event first, so a parent precedes its
// children (Perfetto nests slices with equal timestamps in the order it reads them).
bool before(const Pending& a, const Pending& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.end != b.end) return a.end > b.end;
  return a.seq < b.seq;
}

using IidMap = std::map<uint64_t, uint64_t>;

// One process's trace: its current records and where its chunks are. A file read whole
// (ReadScope::kEverything, or from a pipe) holds them; one read with kCurrent has them read again
// from its files, one record at a time.
struct ProcessTrace {
  const ReadResult& file;
  const std::vector<std::string>* paths = nullptr;       // its files, in segment order
  const std::vector<IidMap>* segment_iids = nullptr;     // per file: its ids -> file's; empty: the same
};

// Calls `each(chunk, remap)` for every TraceChunk of the process in file order; the problem when a
// file cannot be read again.
std::optional<std::string> for_each_chunk(const ProcessTrace& p,
                                          const std::function<void(const v1::TraceChunk&, const IidMap*)>& each) {
  if (!p.file.trace_events_dropped || p.paths == nullptr) {
    for (const int r : p.file.trace_records) each(p.file.file.records(r).trace(), nullptr);
    return std::nullopt;
  }
  for (size_t s = 0; s < p.paths->size(); ++s) {
    const IidMap* remap = p.segment_iids != nullptr && s < p.segment_iids->size() ? &(*p.segment_iids)[s] : nullptr;
    const std::string& path = (*p.paths)[s];
    const StreamedRead read = stream_cutriage_file(path, [&](v1::Record& record) {
      if (record.has_trace()) each(record.trace(), remap);
    });
    if (read.status == ReadStatus::kUnreadable || read.status == ReadStatus::kNotCutriage) {
      return "cannot read '" + path + "' again: " + read.message;
    }
  }
  return std::nullopt;
}

uint64_t remapped(uint64_t iid, const IidMap* remap) {
  if (remap == nullptr || iid == 0) return iid;
  auto it = remap->find(iid);
  return it == remap->end() ? 0 : it->second;  // an id never defined stays undefined
}

uint32_t device_of(const ReadResult& file, uint64_t family_id) {
  const v1::KernelFamily* fam = find_family(file, family_id);
  return fam != nullptr ? fam->device() : kUnknownDevice;
}

// What the first pass over the trace finds: the output's zero, the tracks, the launches to place,
// the graph launches (a few dozen bytes each, the only per-launch state the export holds).
struct Scan {
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  uint64_t dropped = 0;
  std::map<GpuTrackKey, GpuTrack> gpu;  // node-based: events point at their track
  std::map<uint32_t, CpuTrack> cpu;
  std::vector<PlacedLaunch> placed;
  uint64_t unplaced = 0;
  GraphLaunches graph_launches;
};

// Pass 1: the earliest event (the output's zero), every track, and where the profiled launches
// without an execution go. Holds the tracks and those launches, not the events.
std::optional<std::string> scan(const ProcessTrace& p, Scan& s) {
  const std::vector<uint64_t> pause_starts = trace_pause_starts(p.file);
  LaunchPlacer placer(p.file);
  std::optional<std::string> problem = for_each_chunk(p, [&](const v1::TraceChunk& chunk, const IidMap*) {
    s.dropped += chunk.dropped_records();
    for (const v1::KernelExecution& k : chunk.kernels()) {
      const GpuTrackKey key{device_of(p.file, k.family_id()), k.context_id(), k.stream_id()};
      s.gpu.try_emplace(key).first->second.key = key;
      s.origin = std::min(s.origin, k.start_ns());
      triage::KernelSpan span;  // as drawn: cut at a pause the agent did not cut it at
      span.start_ns = k.start_ns();
      span.end_ns = k.end_ns();
      if (!pause_starts.empty()) triage::cut_at_pause(span, pause_starts);
      placer.kernel(key, k.correlation_id(), span.start_ns, span.end_ns);
      if (k.graph_id() != 0) {
        s.graph_launches.add_kernel({key.device, k.graph_id(), k.correlation_id()}, span.start_ns, span.end_ns,
                                    k.replayed());
      }
    }
    for (const v1::CopyExecution& c : chunk.copies()) {
      const GpuTrackKey key{c.device(), c.context_id(), c.stream_id()};
      s.gpu.try_emplace(key).first->second.key = key;
      s.origin = std::min(s.origin, c.start_ns());
      placer.copy(key, c.correlation_id(), c.start_ns(), c.end_ns());
      if (c.graph_id() != 0) s.graph_launches.add_copy({c.device(), c.graph_id(), c.correlation_id()}, c.start_ns(), c.end_ns());
    }
    for (const v1::NvtxRange& n : chunk.nvtx_ranges()) {
      s.cpu.try_emplace(n.thread_id()).first->second.thread = n.thread_id();
      s.origin = std::min(s.origin, n.start_ns());
    }
  });
  if (problem) return problem;
  if (s.origin == std::numeric_limits<uint64_t>::max()) s.origin = 0;  // chunks without events
  s.placed = placer.place(p.file, s.unplaced);
  // The output's zero stays the earliest recorded event: a launch placed before it (the first on
  // its stream, drawn for its profiled duration up to its neighbour) starts there.
  for (PlacedLaunch& l : s.placed) {
    if (l.start >= s.origin) continue;
    l.end = std::max(l.end, s.origin);
    l.start = s.origin;
  }
  return std::nullopt;
}

}  // namespace

std::string json_string(std::string_view s) {
  std::string repaired;
  if (!wire::is_valid_utf8(s)) {
    repaired = wire::valid_utf8(s);
    s = repaired;
  }
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        // Other control characters would need \u escapes, which Perfetto's JSON tokenizer
        // refuses (the whole trace fails to load): they become U+FFFD, like bytes that are not
        // UTF-8.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += "\xEF\xBF\xBD";
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

namespace {

// Where one process's events go in the output. One file: pids as the header comment says, names
// as they are, times from its own first event. Several processes (export_chrome_trace_runs): each
// process's pids moved up by its own base, its process names led by its name, its times moved by
// where its first event falls on the common (Unix) clock.
struct Placement {
  uint32_t pid_base = 0;
  std::string prefix;   // "host:pid " or empty
  uint64_t offset = 0;  // ns added to every ts
};

const v1::SessionHeader* session_of(const ReadResult& file) {
  return file.file.records_size() > 0 && file.file.records(0).has_session() ? &file.file.records(0).session()
                                                                           : nullptr;
}

std::string dim3(const uint32_t (&d)[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

// Pass 2: the process's metadata and events, appended to `w` after the events before them
// (`first`). Events are read again chunk by chunk and wait in a window of kWindowEvents, sorted
// by start, the earlier half written when it is full: every track's events reach the lanes in
// start order (exactly, when the trace has fewer events than the window; an event more than a
// window out of place goes to another lane rather than overlap or cross one). The output holds
// the events in time order, all tracks together; the threads are named after them, once every
// lane is known.
std::optional<std::string> write_process(const ProcessTrace& p, Scan& s, const Placement& place, Writer& w,
                                         bool& first, TraceExportStats& counts) {
  const ReadResult& file = p.file;
  const v1::SessionHeader* session = session_of(file);
  const std::vector<std::pair<uint64_t, uint64_t>> pauses = trace_pauses(file);
  const std::vector<uint64_t> pause_starts = trace_pause_starts(file);
  const uint64_t origin = s.origin;
  std::string& b = w.buf();
  auto begin_event = [&]() -> std::string& {
    if (!first) b += ",\n";
    first = false;
    return b;
  };

  // Lane 0 of a track keeps its stream id as its tid (of an OS thread, the thread id), so scripts
  // can map them back; taken in track order before any other lane's.
  TidAllocator tids;
  for (auto& [key, t] : s.gpu) t.tids.push_back(tids.take(gpu_pid(key.device), key.stream));
  for (auto& [thread, t] : s.cpu) t.tids.push_back(tids.take(kCpuPid, thread));
  auto lane_tid = [&tids](std::vector<uint32_t>& lane_tids, uint32_t pid, uint32_t lane) {
    while (lane_tids.size() <= lane) lane_tids.push_back(tids.take(pid, std::nullopt));
    return lane_tids[lane];
  };

  // "traceEvents" comes first and every event starts with "ph" and "ts": Perfetto's tokenizer
  // reads those keys from the raw text, stops at an array value before them, and ignores
  // top-level keys it does not know only after the events. There is no "displayTimeUnit":
  // Perfetto would take "ns" as the unit of ts.
  // Process metadata: names, and an order (CPU first, then GPUs by device).
  std::set<uint32_t> devices;
  for (const auto& [key, t] : s.gpu) devices.insert(key.device);
  devices.merge(s.graph_launches.devices());
  auto process = [&](uint32_t pid, const std::string& name, uint64_t sort) {
    begin_event() += "{\"ph\":\"M\",\"pid\":";
    append_u64(b, place.pid_base + pid);
    b += ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":" + json_string(place.prefix + name) + "}}";
    begin_event() += "{\"ph\":\"M\",\"pid\":";
    append_u64(b, place.pid_base + pid);
    b += ",\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":";
    append_u64(b, place.pid_base + sort);
    b += "}}";
  };
  if (!s.cpu.empty()) process(kCpuPid, "CPU", 0);
  for (uint32_t device : devices) {
    std::string name = device == kUnknownDevice ? "GPU ? (kernels of an undefined family)"
                                                : "GPU " + std::to_string(device);
    if (session != nullptr && device != kUnknownDevice) {
      for (const v1::Gpu& g : session->gpus()) {
        if (g.device() != device) continue;
        const std::string& gpu = g.name().empty() ? g.chip() : g.name();
        if (!gpu.empty()) name += " \xE2\x80\x94 " + gpu;  // em dash
      }
    }
    process(gpu_pid(device), name, uint64_t{device} + 1);
  }
  // Blank GPU tracks there are not idle GPUs: the trace was off (CUTRIAGE_TRACE_DUTY).
  if (!pauses.empty()) process(kAgentPid, "cutriage", uint64_t{kAgentPid});

  // Names are the same for many events: escaped once.
  std::unordered_map<uint64_t, std::string> family_json;  // family id -> escaped display name
  std::unordered_map<uint64_t, std::string> interned_json;
  auto interned = [&](uint64_t iid) -> const std::string& {
    auto it = interned_json.find(iid);
    if (it == interned_json.end()) it = interned_json.emplace(iid, json_string(lookup(file, iid))).first;
    return it->second;
  };
  auto begin_x = [&](uint64_t start, uint64_t end, uint32_t pid, uint32_t tid) {
    begin_event() += "{\"ph\":\"X\",\"ts\":";
    // A file that grew since the first pass may hold an event before its zero: drawn at zero.
    append_us(b, (start > origin ? start - origin : 0) + place.offset);
    b += ",\"dur\":";
    append_us(b, end > start ? end - start : 0);
    b += ",\"pid\":";
    append_u64(b, place.pid_base + pid);
    b += ",\"tid\":";
    append_u64(b, tid);
  };

  auto write_placed = [&](const Pending& e, const PlacedFields& f) {
    const v1::KernelProfile& k = file.file.records(f.record).kernel();
    std::string name = k.family_id() != 0 ? family_name(file, k.family_id()) : std::string();
    if (name.empty() || (k.family_id() != 0 && find_family(file, k.family_id()) == nullptr)) {
      name = std::string(lookup(file, k.demangled_name_iid()));
      if (name.empty()) name = std::string(lookup(file, k.mangled_name_iid()));
    }
    b += ",\"name\":" + json_string(name) + ",\"cat\":\"profiled\",\"args\":{\"family_id\":";
    append_u64(b, k.family_id());
    if (k.has_launch()) {
      const v1::Dim3& g = k.launch().grid();
      const v1::Dim3& bl = k.launch().block();
      const uint32_t grid[3] = {g.x(), g.y(), g.z()};
      const uint32_t block[3] = {bl.x(), bl.y(), bl.z()};
      b += ",\"grid\":\"" + dim3(grid) + "\",\"block\":\"" + dim3(block) + "\"";
    }
    b += ",\"correlation_id\":";
    append_u64(b, k.correlation_id());
    b += ",\"launch_index\":";
    append_u64(b, k.launch_index());
    b += ",\"duration_ns\":";
    append_u64(b, e.end > e.start ? e.end - e.start : 0);
    if (k.duration_ns() > 0) {
      b += ",\"profiled_duration_ns\":";
      append_u64(b, duration_u64(k.duration_ns()));
    }
    b += ",\"stream\":";
    append_u64(b, k.stream_id());
    b += ",\"context\":";
    append_u64(b, k.context_id());
    b += ",\"replayed\":true,\"placed\":true,\"note\":\"profiled launch: the trace holds no record of it "
         "(the agent dropped replayed launches' records before 2026-12-01); drawn across the gap its replay "
         "left on the stream, between the launches before and after it, so that gap does not read as idle; "
         "left out of the statistics\"}}";
  };
  auto write_kernel = [&](const Pending& e, const KernelFields& k) {
    auto name = family_json.find(k.family_id);
    if (name == family_json.end()) {
      name = family_json.emplace(k.family_id, json_string(family_name(file, k.family_id))).first;
    }
    b += ",\"name\":" + name->second;
    b += k.replayed ? ",\"cat\":\"profiled\"" : ",\"cat\":\"kernel\"";
    b += ",\"args\":{\"family_id\":";
    append_u64(b, k.family_id);
    b += ",\"grid\":\"" + dim3(k.grid) + "\"";
    if (const v1::KernelFamily* fam = find_family(file, k.family_id); fam != nullptr && fam->has_block()) {
      const uint32_t block[3] = {fam->block().x(), fam->block().y(), fam->block().z()};
      b += ",\"block\":\"" + dim3(block) + "\"";
    }
    b += ",\"correlation_id\":";
    append_u64(b, k.correlation);
    b += ",\"duration_ns\":";
    append_u64(b, e.end > e.start ? e.end - e.start : 0);
    b += ",\"stream\":";
    append_u64(b, k.stream);
    b += ",\"context\":";
    append_u64(b, k.context);
    if (k.nvtx_iid != 0) b += ",\"nvtx\":" + interned(k.nvtx_iid);
    if (k.graph_id != 0) {
      b += ",\"graph_id\":";
      append_u64(b, k.graph_id);
      b += ",\"graph_node_id\":";
      append_u64(b, k.graph_node_id);
    }
    if (k.replayed) {
      b += ",\"replayed\":true,\"note\":\"profiled launch: its duration includes the profiler's replay and "
           "is left out of the statistics\"}}";
    } else if (k.cut_by_pause || e.cut) {
      b += ",\"replayed\":false,\"cut_by_pause\":true,\"note\":\"running when the trace paused "
           "(CUTRIAGE_TRACE_DUTY): drawn up to the pause, its end is unknown, left out of the "
           "statistics\"}}";
    } else {
      b += ",\"replayed\":false}}";
    }
  };
  auto write_copy = [&](const Pending& e, const CopyFields& c) {
    b += ",\"name\":\"";
    b += copy_name(c.kind);
    b += c.kind == v1::CopyExecution::KIND_MEMSET ? "\",\"cat\":\"memset\"" : "\",\"cat\":\"copy\"";
    b += ",\"args\":{\"kind\":\"";
    b += copy_kind_words(c.kind);
    b += "\",\"bytes\":";
    append_u64(b, c.bytes);
    b += c.pageable ? ",\"pageable\":true" : ",\"pageable\":false";
    b += ",\"correlation_id\":";
    append_u64(b, c.correlation);
    b += ",\"stream\":";
    append_u64(b, c.stream);
    if (c.graph_id != 0) {
      b += ",\"graph_id\":";
      append_u64(b, c.graph_id);
    }
    if (e.end > e.start) {
      // bytes per nanosecond = GB/s; finite since the duration is at least 1 ns.
      char buf[48];
      std::snprintf(buf, sizeof buf, ",\"GB_per_s\":%.3f",
                    static_cast<double>(c.bytes) / static_cast<double>(e.end - e.start));
      b += buf;
    }
    b += "}}";
  };
  auto write_nvtx = [&](const NvtxFields& n, uint32_t thread) {
    b += ",\"name\":" + interned(n.name_iid) + ",\"cat\":\"nvtx\",\"args\":{\"depth\":";
    append_u64(b, n.depth);
    b += ",\"thread\":";
    append_u64(b, thread);
    if (n.domain_iid != 0) b += ",\"domain\":" + interned(n.domain_iid);
    b += "}}";
  };
  // An event leaving the window: its lane, then its text.
  auto write_event = [&](const Pending& e) {
    if (!w.good()) return;
    if (e.cpu != nullptr) {
      const uint32_t lane = e.cpu->lanes.place(e.start, std::max(e.end, e.start));
      begin_x(e.start, e.end, kCpuPid, lane_tid(e.cpu->tids, kCpuPid, lane));
      write_nvtx(std::get<NvtxFields>(e.fields), e.cpu->thread);
    } else {
      const uint32_t pid = gpu_pid(e.gpu->key.device);
      const uint32_t lane = e.gpu->lanes.place(e.start, std::max(e.end, e.start));
      begin_x(e.start, e.end, pid, lane_tid(e.gpu->tids, pid, lane));
      if (e.kind == EventKind::kPlaced) {
        write_placed(e, std::get<PlacedFields>(e.fields));
      } else if (e.kind == EventKind::kKernel) {
        write_kernel(e, std::get<KernelFields>(e.fields));
      } else {
        write_copy(e, std::get<CopyFields>(e.fields));
      }
    }
    w.maybe_flush();
  };

  std::vector<Pending> window;
  window.reserve(kWindowEvents);
  uint64_t seq = 0;
  auto release = [&](bool all) {
    std::sort(window.begin(), window.end(), before);
    const size_t n = all ? window.size() : window.size() / 2;
    for (size_t i = 0; i < n; ++i) write_event(window[i]);
    window.erase(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(n));
  };
  // Pending is trivially copyable (its variant's alternatives are plain fields): taken by value.
  auto add = [&](Pending e) {
    e.seq = seq++;
    window.push_back(e);
    if (window.size() >= kWindowEvents) release(false);
  };
  // Tracks a file grown since the first pass adds are drawn too (their processes unnamed).
  auto gpu_track = [&s](const GpuTrackKey& key) -> GpuTrack* {
    auto [it, added] = s.gpu.try_emplace(key);
    if (added) it->second.key = key;
    return &it->second;
  };

  for (const PlacedLaunch& l : s.placed) {
    Pending e;
    e.start = l.start;
    e.end = l.end;
    e.gpu = gpu_track(l.track);
    e.kind = EventKind::kPlaced;
    e.fields = PlacedFields{l.record};
    add(e);
  }
  counts.placed_profiled = s.placed.size();
  counts.unplaced_profiled = s.unplaced;
  std::optional<std::string> problem = for_each_chunk(p, [&](const v1::TraceChunk& chunk, const IidMap* remap) {
    for (const v1::KernelExecution& k : chunk.kernels()) {
      Pending e;
      e.start = k.start_ns();
      e.end = k.end_ns();
      e.gpu = gpu_track({device_of(file, k.family_id()), k.context_id(), k.stream_id()});
      e.kind = EventKind::kKernel;
      // Kernels running across a pause have no trustworthy end (see triage::cut_at_pause): agents
      // since 2026-11-30 cut them when they write them; older files are cut here the same way.
      if (!pause_starts.empty()) {
        triage::KernelSpan span;
        span.start_ns = e.start;
        span.end_ns = e.end;
        if (triage::cut_at_pause(span, pause_starts)) {
          e.end = span.end_ns;
          e.cut = true;
        }
      }
      KernelFields f;
      f.family_id = k.family_id();
      f.correlation = k.correlation_id();
      f.nvtx_iid = remapped(k.nvtx_path_iid(), remap);
      f.graph_node_id = k.graph_node_id();
      f.grid[0] = k.grid().x();
      f.grid[1] = k.grid().y();
      f.grid[2] = k.grid().z();
      f.stream = k.stream_id();
      f.context = k.context_id();
      f.graph_id = k.graph_id();
      f.replayed = k.replayed();
      f.cut_by_pause = k.cut_by_pause();
      e.fields = f;
      ++counts.kernels;
      add(e);
    }
    for (const v1::CopyExecution& c : chunk.copies()) {
      Pending e;
      e.start = c.start_ns();
      e.end = c.end_ns();
      e.gpu = gpu_track({c.device(), c.context_id(), c.stream_id()});
      e.kind = EventKind::kCopy;
      e.fields = CopyFields{c.bytes(), c.correlation_id(), c.stream_id(), c.graph_id(), c.kind(), c.pageable()};
      ++counts.copies;
      add(e);
    }
    for (const v1::NvtxRange& n : chunk.nvtx_ranges()) {
      Pending e;
      e.start = n.start_ns();
      e.end = n.end_ns();
      auto [it, added] = s.cpu.try_emplace(n.thread_id());
      it->second.thread = n.thread_id();
      e.cpu = &it->second;
      e.kind = EventKind::kNvtx;
      e.fields = NvtxFields{remapped(n.name_iid(), remap), remapped(n.domain_iid(), remap), n.depth()};
      ++counts.nvtx_ranges;
      add(e);
    }
  });
  release(true);

  // Threads: every lane of every track, named and ordered as the tracks are: GPU tracks by
  // (device, context, stream), each followed by its extra lanes, then OS threads, then the pauses.
  std::vector<Thread> threads;
  std::map<uint32_t, std::set<uint32_t>> contexts_per_device;
  for (const auto& [key, t] : s.gpu) contexts_per_device[key.device].insert(key.context);
  for (auto& [key, t] : s.gpu) {
    const uint32_t pid = gpu_pid(key.device);
    const uint32_t lanes = std::max(t.lanes.end_lane(), 1u);
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      std::string name = "stream " + std::to_string(key.stream);
      if (contexts_per_device[key.device].size() > 1) name += " (context " + std::to_string(key.context) + ")";
      if (lane > 0) name += " (concurrent " + std::to_string(lane + 1) + ")";
      threads.push_back({pid, lane_tid(t.tids, pid, lane), std::move(name), threads.size()});
    }
    counts.extra_tracks += lanes - 1;
  }
  for (auto& [thread_id, t] : s.cpu) {
    const uint32_t lanes = std::max(t.lanes.end_lane(), 1u);
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      std::string name = "thread " + std::to_string(thread_id);
      if (lane > 0) name += " (overlapping " + std::to_string(lane + 1) + ")";
      threads.push_back({kCpuPid, lane_tid(t.tids, kCpuPid, lane), std::move(name), threads.size()});
    }
    counts.extra_tracks += lanes - 1;
  }
  if (!pauses.empty()) threads.push_back({kAgentPid, 1, "kernel trace paused (CUTRIAGE_TRACE_DUTY)", threads.size()});
  // Each graph's launches as workloads, one track per (device, graph) under the GPU's streams.
  const GraphLaunches::Placement graphs = s.graph_launches.place();
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> graph_tids;  // per track, per lane
  for (const auto& [track, lanes] : graphs.lanes) {
    const uint32_t pid = gpu_pid(track.first);
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      threads.push_back({pid, lane_tid(graph_tids[track], pid, lane), GraphLaunches::track_name(track.second, lane),
                         threads.size()});
    }
    counts.extra_tracks += lanes - 1;
  }
  for (const Thread& t : threads) {
    begin_event() += "{\"ph\":\"M\",\"pid\":";
    append_u64(b, place.pid_base + t.pid);
    b += ",\"tid\":";
    append_u64(b, t.tid);
    b += ",\"name\":\"thread_name\",\"args\":{\"name\":" + json_string(t.name) + "}}";
    begin_event() += "{\"ph\":\"M\",\"pid\":";
    append_u64(b, place.pid_base + t.pid);
    b += ",\"tid\":";
    append_u64(b, t.tid);
    b += ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":";
    append_u64(b, t.sort);
    b += "}}";
    w.maybe_flush();
  }

  for (const auto& [start, end] : pauses) {
    const uint64_t from = std::max(start, origin);
    if (end <= from) continue;
    begin_x(from, end, kAgentPid, 1);
    b += ",\"name\":\"trace paused\",\"cat\":\"untraced\",\"args\":{\"note\":\"the kernel trace was off "
         "(CUTRIAGE_TRACE_DUTY): what ran meanwhile is unknown, not idle\"}}";
    w.maybe_flush();
  }
  counts.trace_pauses = pauses.size();
  for (const GraphLaunches::Placed& g : graphs.launches) {
    const uint32_t pid = gpu_pid(g.key->device);
    begin_x(g.launch->start, g.launch->end, pid, graph_tids[{g.key->device, g.key->graph_id}][g.lane]);
    b += GraphLaunches::slice_fields(*g.key, *g.launch);
    w.maybe_flush();
  }
  counts.graph_launches = graphs.launches.size();
  return problem;
}

TraceExportError read_failed(const std::string& why) {
  return TraceExportError{TraceExportError::Kind::kReadFailed, why};
}

TraceExportError write_failed() {
  return TraceExportError{TraceExportError::Kind::kWriteFailed, "writing the trace failed (disk full?)"};
}

TraceExportError no_trace() {
  return TraceExportError{TraceExportError::Kind::kNoTrace,
                          "the file has no trace: the run was made without tracing (no GPU "
                          "timeline was recorded), so there is nothing to export"};
}

// One process: the one-file output.
std::optional<TraceExportError> export_one(const ProcessTrace& p, std::ostream& out, TraceExportStats* stats) {
  if (p.file.trace_chunks == 0) return no_trace();
  Scan s;
  if (std::optional<std::string> problem = scan(p, s)) return read_failed(*problem);
  const v1::SessionHeader* session = session_of(p.file);
  Writer w(out);
  std::string& b = w.buf();
  b += "{\"traceEvents\":[\n";
  bool first = true;
  TraceExportStats counts;
  if (std::optional<std::string> problem = write_process(p, s, Placement{}, w, first, counts)) {
    return read_failed(*problem);
  }
  // What the times mean, for people and scripts (Perfetto ignores it).
  b += "\n],\"otherData\":{\"producer\":\"cutriage trace\",\"time_origin_trace_clock_ns\":";
  append_u64(b, s.origin);
  if (session != nullptr && session->trace_clock_at_start_ns() != 0 && session->start_time_unix_ns() != 0 &&
      s.origin >= session->trace_clock_at_start_ns()) {
    b += ",\"time_origin_unix_ns\":";
    append_u64(b, session->start_time_unix_ns() + (s.origin - session->trace_clock_at_start_ns()));
  }
  if (session != nullptr) {
    std::string command;
    for (const std::string& arg : session->command_line()) command += (command.empty() ? "" : " ") + arg;
    b += ",\"command_line\":" + json_string(command) + ",\"host\":" + json_string(session->host()) + ",\"pid\":";
    append_u64(b, session->pid());
  }
  b += ",\"dropped_records\":";
  append_u64(b, s.dropped);
  b += "}}\n";
  w.flush();
  out.flush();
  if (!w.good() || !out) return write_failed();
  if (stats != nullptr) *stats = counts;
  return std::nullopt;
}

// `t` of the file's trace clock on the Unix clock, when its header ties the two (the agent reads
// both clocks at start: SessionHeader.start_time_unix_ns, trace_clock_at_start_ns).
std::optional<uint64_t> unix_time(const ReadResult& file, uint64_t t) {
  const v1::SessionHeader* s = session_of(file);
  if (s == nullptr || s->trace_clock_at_start_ns() == 0 || s->start_time_unix_ns() == 0 ||
      t < s->trace_clock_at_start_ns()) {
    return std::nullopt;
  }
  return s->start_time_unix_ns() + (t - s->trace_clock_at_start_ns());
}

}  // namespace

std::optional<TraceExportError> export_chrome_trace(const ReadResult& file, std::ostream& out,
                                                    TraceExportStats* stats, const std::vector<std::string>* paths) {
  return export_one(ProcessTrace{file, paths, nullptr}, out, stats);
}

std::optional<TraceExportError> export_chrome_trace_runs(const std::vector<ProcessRun>& runs, std::ostream& out,
                                                         TraceExportStats* stats, std::vector<std::string>* notes) {
  std::vector<const ProcessRun*> traced;
  for (const ProcessRun& run : runs) {
    if (run.file.trace_chunks != 0) {
      traced.push_back(&run);
    } else if (notes != nullptr) {
      notes->push_back("process " + run.name + " has no trace (the run was made without tracing): left out");
    }
  }
  if (traced.empty()) {
    return TraceExportError{TraceExportError::Kind::kNoTrace,
                            "no file has a trace: the runs were made without tracing (no GPU timeline "
                            "was recorded), so there is nothing to export"};
  }
  auto trace_of = [](const ProcessRun& run) { return ProcessTrace{run.file, &run.paths, &run.segment_iids}; };
  // One process (its segments merged): the one-file output. Several keep their names even when
  // only one of them has a trace, so the output says whose it is.
  if (runs.size() == 1) return export_one(trace_of(*traced.front()), out, stats);

  // The first pass of each: its first event, on the common clock. Each process's first event on
  // the Unix clock, the earliest of them the output's zero, so the ranks of one job line up.
  // Without both clocks in every header the processes cannot be placed against each other: each
  // then starts at zero (and a note says so).
  std::vector<Scan> scans(traced.size());
  std::vector<uint64_t> unix_origins;
  bool aligned = true;
  for (size_t i = 0; i < traced.size(); ++i) {
    if (std::optional<std::string> problem = scan(trace_of(*traced[i]), scans[i])) return read_failed(*problem);
    const std::optional<uint64_t> u = unix_time(traced[i]->file, scans[i].origin);
    aligned = aligned && u.has_value();
    unix_origins.push_back(u.value_or(0));
  }
  const uint64_t zero = aligned ? *std::min_element(unix_origins.begin(), unix_origins.end()) : 0;
  if (!aligned && notes != nullptr) {
    notes->push_back("a file's header does not tie its trace clock to Unix time: each process's times "
                     "start at zero, not aligned");
  }

  Writer w(out);
  std::string& b = w.buf();
  b += "{\"traceEvents\":[\n";
  bool first = true;
  TraceExportStats total;
  std::string processes;  // otherData's list
  for (size_t i = 0; i < traced.size(); ++i) {
    const ProcessRun& run = *traced[i];
    Placement place;
    // A process's own pids are below 1,000,000 (kUnknownDevicePid is the largest): each process
    // gets its own million, so no two processes share a Perfetto process.
    place.pid_base = static_cast<uint32_t>(i) * 1'000'000;
    place.prefix = run.name + " ";
    place.offset = aligned ? unix_origins[i] - zero : 0;
    TraceExportStats counts;
    if (std::optional<std::string> problem = write_process(trace_of(run), scans[i], place, w, first, counts)) {
      return read_failed(*problem);
    }
    total.kernels += counts.kernels;
    total.copies += counts.copies;
    total.nvtx_ranges += counts.nvtx_ranges;
    total.extra_tracks += counts.extra_tracks;
    total.trace_pauses += counts.trace_pauses;
    total.placed_profiled += counts.placed_profiled;
    total.unplaced_profiled += counts.unplaced_profiled;

    processes += i == 0 ? "{" : ",{";
    processes += "\"name\":" + json_string(run.name) + ",\"pid_base\":";
    append_u64(processes, place.pid_base);
    processes += ",\"files\":[";
    for (size_t f = 0; f < run.paths.size(); ++f) processes += (f != 0 ? "," : "") + json_string(run.paths[f]);
    processes += "],\"time_origin_trace_clock_ns\":";
    append_u64(processes, scans[i].origin);
    processes += ",\"offset_ns\":";
    append_u64(processes, place.offset);
    if (const v1::SessionHeader* session = session_of(run.file); session != nullptr) {
      std::string command;
      for (const std::string& arg : session->command_line()) command += (command.empty() ? "" : " ") + arg;
      processes += ",\"command_line\":" + json_string(command) + ",\"host\":" + json_string(session->host()) +
                   ",\"pid\":";
      append_u64(processes, session->pid());
    }
    processes += ",\"dropped_records\":";
    append_u64(processes, scans[i].dropped);
    processes += "}";
  }
  b += "\n],\"otherData\":{\"producer\":\"cutriage trace\"";
  if (aligned) {
    b += ",\"time_origin_unix_ns\":";
    append_u64(b, zero);
  }
  b += ",\"processes\":[" + processes + "]}}\n";
  w.flush();
  out.flush();
  if (!w.good() || !out) return write_failed();
  if (stats != nullptr) *stats = total;
  return std::nullopt;
}

}  // namespace cutriage::tools
