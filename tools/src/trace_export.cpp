#include "trace_export.h"

#include <algorithm>
#include <functional>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cutriage/triage/timeline.h"
#include "cutriage/wire/utf8.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

// A profiled duration from the file (a double) in whole nanoseconds: 0 for a negative or NaN value,
// at most 2^53 (104 days) so that a corrupt value neither overflows the conversion nor a sum.
uint64_t duration_u64(double ns) {
  constexpr double kMax = 9007199254740992.0;  // 2^53
  if (!(ns > 0)) return 0;
  return static_cast<uint64_t>(ns < kMax ? ns : kMax);
}

}  // namespace

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

// kPlaced: a profiled launch the trace holds no execution of (agents before 2026-12-01 dropped
// the replayed launch's record, which CUPTI delivers without timestamps), drawn from its
// KernelProfile record in the gap its replay left on its stream (place_profiled_launches).
enum class EventKind : uint8_t { kKernel, kCopy, kNvtx, kPlaced };

// One event of the output: where its record is, and its times for sorting and lane assignment.
struct Event {
  uint64_t start = 0;
  uint64_t end = 0;
  int record = 0;  // index in file.records() (kPlaced: the KernelProfile record)
  int index = 0;   // index in the chunk's kernels / copies / nvtx_ranges (kPlaced: unused)
  EventKind kind = EventKind::kKernel;
  uint32_t lane = 0;
  bool cut = false;  // a kernel running across a pause, drawn up to it (files the agent did not cut)
};

// Events of one track, before lanes: a stream of one context on one device, or an OS thread.
struct GpuTrackKey {
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  friend bool operator<(const GpuTrackKey& a, const GpuTrackKey& b) {
    return std::tie(a.device, a.context, a.stream) < std::tie(b.device, b.context, b.stream);
  }
};

// Earlier start first; at the same start the longer event first, so a parent precedes its
// children (Perfetto nests slices with equal timestamps in the order it reads them).
bool by_start_then_longer(const Event& a, const Event& b) {
  if (a.start != b.start) return a.start < b.start;
  return a.end > b.end;
}

// Lanes whose events never overlap: each event takes the free lane that freed up first, or a new
// one. O(n log lanes), however many events run at once.
class DisjointLanes {
 public:
  explicit DisjointLanes(uint32_t first_lane) : next_(first_lane) {}
  uint32_t place(uint64_t start, uint64_t end) {
    uint32_t lane = 0;
    if (!free_at_.empty() && free_at_.top().first <= start) {
      lane = free_at_.top().second;
      free_at_.pop();
    } else {
      lane = next_++;
    }
    free_at_.emplace(end, lane);
    return lane;
  }
  [[nodiscard]] uint32_t end_lane() const { return next_; }

 private:
  using Slot = std::pair<uint64_t, uint32_t>;  // (end of its last event, lane)
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_at_;
  uint32_t next_;
};

// GPU tracks: events in one lane never overlap at all (a kernel drawn inside another kernel would
// read as its child). Returns the number of lanes.
uint32_t assign_disjoint_lanes(std::vector<Event>& events) {
  std::sort(events.begin(), events.end(), by_start_then_longer);
  DisjointLanes lanes(0);
  for (Event& e : events) e.lane = lanes.place(e.start, std::max(e.end, e.start));
  return std::max(lanes.end_lane(), 1u);
}

// NVTX tracks: events in one lane nest (each inside the range open around it, or after it).
// Ranges that cross (start/end ranges, or push/pop ranges of different domains) go to further
// lanes. Past kNestedLanes lanes (many ranges open at once, each crossing the others) events go to
// lanes that hold no overlap at all, so the cost stays O(n log n). Returns the number of lanes.
uint32_t assign_nested_lanes(std::vector<Event>& events) {
  constexpr uint32_t kNestedLanes = 64;
  std::sort(events.begin(), events.end(), by_start_then_longer);
  std::vector<std::vector<uint64_t>> open;  // per lane, end times of the ranges open
  DisjointLanes overflow(kNestedLanes);
  for (Event& e : events) {
    const uint64_t end = std::max(e.end, e.start);
    uint32_t lane = 0;
    for (; lane < open.size(); ++lane) {
      std::vector<uint64_t>& stack = open[lane];
      // Events come in start order: ranges that ended by now stay closed for every later event.
      while (!stack.empty() && stack.back() <= e.start) stack.pop_back();
      if (stack.empty() || stack.back() >= end) break;
    }
    if (lane == open.size() && open.size() == kNestedLanes) {
      e.lane = overflow.place(e.start, end);
      continue;
    }
    if (lane == open.size()) open.emplace_back();
    open[lane].push_back(end);
    e.lane = lane;
  }
  return overflow.end_lane() > kNestedLanes ? overflow.end_lane() : std::max(static_cast<uint32_t>(open.size()), 1u);
}

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

std::string dim3(const v1::Dim3& d) {
  return std::to_string(d.x()) + "x" + std::to_string(d.y()) + "x" + std::to_string(d.z());
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

// Profiled launches without an execution in the trace, placed where they ran. A stream runs its
// work in launch order and correlation ids grow in launch order, so a launch ran after the stream's
// last event of a smaller correlation id ended and before its first event of a larger one started:
// that gap is the profiler's replay (plus the launch's own host-side cost), and drawing the launch
// across it keeps the gap from reading as idle. Several profiled launches in one gap share it
// equally, in launch order. A launch with a neighbour on one side only is drawn for its profiled
// duration from (or up to) that neighbour; one with no neighbour on its stream is left out (counted
// in `unplaced`). Graph-scope records (a graph launch's counters, its kernels traced as nodes) and
// records without a correlation id are never placed.
struct PlacedLaunch {
  GpuTrackKey track;
  uint64_t correlation = 0;
  int record = 0;
};

void place_profiled_launches(const ReadResult& file, std::map<GpuTrackKey, std::vector<Event>>& gpu_tracks,
                             uint64_t& placed, uint64_t& unplaced) {
  // Correlation ids of the executions traced: those launches need no placing. CUPTI's correlation
  // ids are unique in the process, whatever the context.
  std::set<uint64_t> traced;
  for (int r : file.trace_records) {
    for (const v1::KernelExecution& k : file.file.records(r).trace().kernels()) traced.insert(k.correlation_id());
  }
  // One per launch: the records of a launch (its revisions) share its correlation id.
  std::map<uint64_t, PlacedLaunch> launches;
  for (int r = 0; r < file.file.records_size(); ++r) {
    if (!file.file.records(r).has_kernel()) continue;
    const v1::KernelProfile& k = file.file.records(r).kernel();
    if (k.correlation_id() == 0 || k.has_graph_scope() || k.replay_mode() == v1::REPLAY_MODE_NONE) continue;
    if (k.status() != v1::PROFILE_STATUS_PROFILED) continue;
    const auto context = static_cast<uint32_t>(k.context_id());
    if (traced.count(k.correlation_id()) != 0) continue;
    const GpuTrackKey track{k.device(), context, static_cast<uint32_t>(k.stream_id())};
    launches.insert_or_assign(k.correlation_id(), PlacedLaunch{track, k.correlation_id(), r});
  }
  if (launches.empty()) return;
  // Per track, its events' correlation ids (the kernels' and copies'), to find the neighbours.
  struct Neighbour {
    uint64_t correlation = 0;
    uint64_t start = 0;
    uint64_t end = 0;
  };
  std::map<GpuTrackKey, std::vector<Neighbour>> by_track;
  for (const auto& [key, events] : gpu_tracks) {
    std::vector<Neighbour>& n = by_track[key];
    for (const Event& e : events) {
      const v1::TraceChunk& chunk = file.file.records(e.record).trace();
      const uint64_t correlation = e.kind == EventKind::kKernel ? chunk.kernels(e.index).correlation_id()
                                                                : chunk.copies(e.index).correlation_id();
      // Graph nodes carry their graph launch's correlation id: stream order holds for the launch.
      n.push_back({correlation, e.start, e.end});
    }
    std::sort(n.begin(), n.end(), [](const Neighbour& a, const Neighbour& b) { return a.correlation < b.correlation; });
  }
  // Launches grouped by the gap they fall in: (track, index of the next neighbour).
  std::map<std::pair<GpuTrackKey, size_t>, std::vector<const PlacedLaunch*>> gaps;
  for (const auto& [id, launch] : launches) {
    auto t = by_track.find(launch.track);
    if (t == by_track.end() || t->second.empty()) {
      ++unplaced;
      continue;
    }
    const std::vector<Neighbour>& n = t->second;
    const size_t next = static_cast<size_t>(
        std::upper_bound(n.begin(), n.end(), launch.correlation,
                         [](uint64_t c, const Neighbour& x) { return c < x.correlation; }) -
        n.begin());
    gaps[{launch.track, next}].push_back(&launch);  // launches come in correlation order
  }
  for (const auto& [where, group] : gaps) {
    const std::vector<Neighbour>& n = by_track[where.first];
    const size_t next = where.second;
    // Ends and starts over every neighbour before / after (records may come out of time order).
    uint64_t from = 0;
    for (size_t i = 0; i < next; ++i) from = std::max(from, n[i].end);
    uint64_t to = std::numeric_limits<uint64_t>::max();
    for (size_t i = next; i < n.size(); ++i) to = std::min(to, n[i].start);
    const bool has_before = next > 0;
    const bool has_after = next < n.size();
    std::vector<Event>& events = gpu_tracks[where.first];
    if (has_before && has_after && to > from) {
      const uint64_t span = to - from;
      const uint64_t count = group.size();
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t start = from + span * i / count;
        const uint64_t end = from + span * (i + 1) / count;
        events.push_back({start, end, group[i]->record, 0, EventKind::kPlaced, 0});
        ++placed;
      }
      continue;
    }
    if (!has_before && !has_after) {
      unplaced += group.size();
      continue;
    }
    // One side known (or neighbours out of order): each launch drawn for its profiled duration,
    // one after another from the earlier neighbour, or one before another up to the later one.
    uint64_t total = 0;
    for (const PlacedLaunch* p : group) {
      total += duration_u64(file.file.records(p->record).kernel().duration_ns());
    }
    uint64_t at = has_before ? from : (to >= total ? to - total : 0);
    for (const PlacedLaunch* p : group) {
      const uint64_t d = duration_u64(file.file.records(p->record).kernel().duration_ns());
      events.push_back({at, at + d, p->record, 0, EventKind::kPlaced, 0});
      at += d;
      ++placed;
    }
  }
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

// The process's metadata and events, appended to `w` after the events before them (`first`).
// `origin` is set to the trace-clock time of its zero, `dropped` to its dropped records.
void write_process(const ReadResult& file, const Placement& place, Writer& w, bool& first,
                   TraceExportStats& counts, uint64_t& origin, uint64_t& dropped) {
  const v1::SessionHeader* session = session_of(file);

  // Pass 1: every event into its track, and the earliest time (the output's zero).
  std::map<GpuTrackKey, std::vector<Event>> gpu_tracks;
  std::map<uint32_t, std::vector<Event>> cpu_tracks;  // by OS thread id
  origin = std::numeric_limits<uint64_t>::max();
  dropped = 0;
  // Pauses of a duty-cycled trace, drawn on a track of their own.
  const std::vector<std::pair<uint64_t, uint64_t>> pauses = trace_pauses(file);
  for (int r : file.trace_records) {
    const v1::TraceChunk& chunk = file.file.records(r).trace();
    dropped += chunk.dropped_records();
    for (int i = 0; i < chunk.kernels_size(); ++i) {
      const v1::KernelExecution& k = chunk.kernels(i);
      const v1::KernelFamily* fam = find_family(file, k.family_id());
      GpuTrackKey key{fam != nullptr ? fam->device() : kUnknownDevice, k.context_id(), k.stream_id()};
      gpu_tracks[key].push_back({k.start_ns(), k.end_ns(), r, i, EventKind::kKernel, 0});
      origin = std::min(origin, k.start_ns());
      ++counts.kernels;
    }
    for (int i = 0; i < chunk.copies_size(); ++i) {
      const v1::CopyExecution& c = chunk.copies(i);
      GpuTrackKey key{c.device(), c.context_id(), c.stream_id()};
      gpu_tracks[key].push_back({c.start_ns(), c.end_ns(), r, i, EventKind::kCopy, 0});
      origin = std::min(origin, c.start_ns());
      ++counts.copies;
    }
    for (int i = 0; i < chunk.nvtx_ranges_size(); ++i) {
      const v1::NvtxRange& n = chunk.nvtx_ranges(i);
      cpu_tracks[n.thread_id()].push_back({n.start_ns(), n.end_ns(), r, i, EventKind::kNvtx, 0});
      origin = std::min(origin, n.start_ns());
      ++counts.nvtx_ranges;
    }
  }
  if (origin == std::numeric_limits<uint64_t>::max()) origin = 0;  // chunks without events
  // Kernels running across a pause have no trustworthy end (see triage::cut_at_pause): agents since
  // 2026-11-30 cut them when they write them; older files are cut here the same way.
  if (!pauses.empty()) {
    const std::vector<uint64_t> starts = trace_pause_starts(file);
    for (auto& [key, events] : gpu_tracks) {
      for (Event& e : events) {
        if (e.kind != EventKind::kKernel) continue;
        triage::KernelSpan span;
        span.start_ns = e.start;
        span.end_ns = e.end;
        if (triage::cut_at_pause(span, starts)) {
          e.end = span.end_ns;
          e.cut = true;
        }
      }
    }
  }

  place_profiled_launches(file, gpu_tracks, counts.placed_profiled, counts.unplaced_profiled);
  // The output's zero stays the earliest recorded event: a launch placed before it (the first on
  // its stream, drawn for its profiled duration up to its neighbour) starts there.
  for (auto& [key, events] : gpu_tracks) {
    for (Event& e : events) {
      if (e.kind != EventKind::kPlaced || e.start >= origin) continue;
      e.end = std::max(e.end, origin);
      e.start = origin;
    }
  }

  // Pass 2: lanes and thread ids. Lane 0 of a stream keeps the stream id as its tid (of an OS
  // thread, the thread id), so scripts can map them back.
  TidAllocator tids;
  std::vector<Thread> threads;
  std::map<std::pair<const std::vector<Event>*, uint32_t>, uint32_t> lane_tid;
  std::map<uint32_t, std::set<uint32_t>> contexts_per_device;
  for (const auto& [key, events] : gpu_tracks) contexts_per_device[key.device].insert(key.context);
  for (auto& [key, events] : gpu_tracks) {
    uint32_t lanes = assign_disjoint_lanes(events);
    uint32_t pid = gpu_pid(key.device);
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      std::string name = "stream " + std::to_string(key.stream);
      if (contexts_per_device[key.device].size() > 1) name += " (context " + std::to_string(key.context) + ")";
      if (lane > 0) name += " (concurrent " + std::to_string(lane + 1) + ")";
      uint32_t tid = tids.take(pid, lane == 0 ? std::optional<uint32_t>(key.stream) : std::nullopt);
      // Tracks come in (device, context, stream) order and lanes in order: the position is the
      // display order.
      threads.push_back({pid, tid, std::move(name), threads.size()});
      lane_tid[{&events, lane}] = tid;
    }
    counts.extra_tracks += lanes - 1;
  }
  for (auto& [thread_id, events] : cpu_tracks) {
    uint32_t lanes = assign_nested_lanes(events);
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      std::string name = "thread " + std::to_string(thread_id);
      if (lane > 0) name += " (overlapping " + std::to_string(lane + 1) + ")";
      uint32_t tid = tids.take(kCpuPid, lane == 0 ? std::optional<uint32_t>(thread_id) : std::nullopt);
      threads.push_back({kCpuPid, tid, std::move(name), threads.size()});
      lane_tid[{&events, lane}] = tid;
    }
    counts.extra_tracks += lanes - 1;
  }

  // Pass 3: the JSON. "traceEvents" comes first and every event starts with "ph" and "ts":
  // Perfetto's tokenizer reads those keys from the raw text, stops at an array value before
  // them, and ignores top-level keys it does not know only after the events. There is no
  // "displayTimeUnit": Perfetto would take "ns" as the unit of ts.
  std::string& b = w.buf();
  auto begin_event = [&]() -> std::string& {
    if (!first) b += ",\n";
    first = false;
    return b;
  };

  // Metadata: process and thread names, and an order (CPU first, then GPUs by device).
  std::set<uint32_t> devices;
  for (const auto& [key, events] : gpu_tracks) devices.insert(key.device);
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
  if (!cpu_tracks.empty()) process(kCpuPid, "CPU", 0);
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
  if (!pauses.empty()) {
    // Blank GPU tracks there are not idle GPUs: the trace was off (CUTRIAGE_TRACE_DUTY).
    process(kAgentPid, "cutriage", uint64_t{kAgentPid});
    threads.push_back({kAgentPid, 1, "kernel trace paused (CUTRIAGE_TRACE_DUTY)", threads.size()});
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
  }

  // Names are the same for many events: escaped once.
  std::unordered_map<uint64_t, std::string> family_json;  // family id -> escaped display name
  std::unordered_map<uint64_t, std::string> interned_json;
  auto interned = [&](uint64_t iid) -> const std::string& {
    auto it = interned_json.find(iid);
    if (it == interned_json.end()) it = interned_json.emplace(iid, json_string(lookup(file, iid))).first;
    return it->second;
  };
  auto begin_x = [&](const Event& e, uint32_t pid, uint32_t tid) {
    begin_event() += "{\"ph\":\"X\",\"ts\":";
    append_us(b, e.start - origin + place.offset);
    b += ",\"dur\":";
    append_us(b, e.end > e.start ? e.end - e.start : 0);
    b += ",\"pid\":";
    append_u64(b, place.pid_base + pid);
    b += ",\"tid\":";
    append_u64(b, tid);
  };

  for (const auto& [key, events] : gpu_tracks) {
    const uint32_t pid = gpu_pid(key.device);
    for (const Event& e : events) {
      const uint32_t tid = lane_tid[{&events, e.lane}];
      begin_x(e, pid, tid);
      if (e.kind == EventKind::kPlaced) {
        const v1::KernelProfile& k = file.file.records(e.record).kernel();
        std::string name = k.family_id() != 0 ? family_name(file, k.family_id()) : std::string();
        if (name.empty() || (k.family_id() != 0 && find_family(file, k.family_id()) == nullptr)) {
          name = std::string(lookup(file, k.demangled_name_iid()));
          if (name.empty()) name = std::string(lookup(file, k.mangled_name_iid()));
        }
        b += ",\"name\":" + json_string(name) + ",\"cat\":\"profiled\",\"args\":{\"family_id\":";
        append_u64(b, k.family_id());
        if (k.has_launch()) {
          b += ",\"grid\":\"" + dim3(k.launch().grid()) + "\",\"block\":\"" + dim3(k.launch().block()) + "\"";
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
        w.maybe_flush();
        if (!w.good()) break;
        continue;
      }
      const v1::TraceChunk& chunk = file.file.records(e.record).trace();
      if (e.kind == EventKind::kKernel) {
        const v1::KernelExecution& k = chunk.kernels(e.index);
        auto name = family_json.find(k.family_id());
        if (name == family_json.end()) {
          name = family_json.emplace(k.family_id(), json_string(family_name(file, k.family_id()))).first;
        }
        b += ",\"name\":" + name->second;
        b += k.replayed() ? ",\"cat\":\"profiled\"" : ",\"cat\":\"kernel\"";
        b += ",\"args\":{\"family_id\":";
        append_u64(b, k.family_id());
        b += ",\"grid\":\"" + dim3(k.grid()) + "\"";
        if (const v1::KernelFamily* fam = find_family(file, k.family_id()); fam != nullptr && fam->has_block()) {
          b += ",\"block\":\"" + dim3(fam->block()) + "\"";
        }
        b += ",\"correlation_id\":";
        append_u64(b, k.correlation_id());
        b += ",\"duration_ns\":";
        append_u64(b, e.end > e.start ? e.end - e.start : 0);
        b += ",\"stream\":";
        append_u64(b, k.stream_id());
        b += ",\"context\":";
        append_u64(b, k.context_id());
        if (k.nvtx_path_iid() != 0) b += ",\"nvtx\":" + interned(k.nvtx_path_iid());
        if (k.graph_id() != 0) {
          b += ",\"graph_id\":";
          append_u64(b, k.graph_id());
          b += ",\"graph_node_id\":";
          append_u64(b, k.graph_node_id());
        }
        if (k.replayed()) {
          b += ",\"replayed\":true,\"note\":\"profiled launch: its duration includes the profiler's replay and "
               "is left out of the statistics\"}}";
        } else if (k.cut_by_pause() || e.cut) {
          b += ",\"replayed\":false,\"cut_by_pause\":true,\"note\":\"running when the trace paused "
               "(CUTRIAGE_TRACE_DUTY): drawn up to the pause, its end is unknown, left out of the "
               "statistics\"}}";
        } else {
          b += ",\"replayed\":false}}";
        }
      } else {
        const v1::CopyExecution& c = chunk.copies(e.index);
        b += ",\"name\":\"";
        b += copy_name(c.kind());
        b += c.kind() == v1::CopyExecution::KIND_MEMSET ? "\",\"cat\":\"memset\"" : "\",\"cat\":\"copy\"";
        b += ",\"args\":{\"kind\":\"";
        b += copy_kind_words(c.kind());
        b += "\",\"bytes\":";
        append_u64(b, c.bytes());
        b += c.pageable() ? ",\"pageable\":true" : ",\"pageable\":false";
        b += ",\"correlation_id\":";
        append_u64(b, c.correlation_id());
        b += ",\"stream\":";
        append_u64(b, c.stream_id());
        if (c.graph_id() != 0) {
          b += ",\"graph_id\":";
          append_u64(b, c.graph_id());
        }
        if (e.end > e.start) {
          // bytes per nanosecond = GB/s; finite since the duration is at least 1 ns.
          char buf[48];
          std::snprintf(buf, sizeof buf, ",\"GB_per_s\":%.3f",
                        static_cast<double>(c.bytes()) / static_cast<double>(e.end - e.start));
          b += buf;
        }
        b += "}}";
      }
      w.maybe_flush();
      if (!w.good()) break;
    }
  }
  for (const auto& [thread_id, events] : cpu_tracks) {
    for (const Event& e : events) {
      const v1::NvtxRange& n = file.file.records(e.record).trace().nvtx_ranges(e.index);
      begin_x(e, kCpuPid, lane_tid[{&events, e.lane}]);
      b += ",\"name\":" + interned(n.name_iid()) + ",\"cat\":\"nvtx\",\"args\":{\"depth\":";
      append_u64(b, n.depth());
      b += ",\"thread\":";
      append_u64(b, thread_id);
      if (n.domain_iid() != 0) b += ",\"domain\":" + interned(n.domain_iid());
      b += "}}";
      w.maybe_flush();
      if (!w.good()) break;
    }
  }

  for (const auto& [start, end] : pauses) {
    const uint64_t from = std::max(start, origin);
    if (end <= from) continue;
    begin_x(Event{from, end, 0, 0, EventKind::kKernel, 0}, kAgentPid, 1);
    b += ",\"name\":\"trace paused\",\"cat\":\"untraced\",\"args\":{\"note\":\"the kernel trace was off "
         "(CUTRIAGE_TRACE_DUTY): what ran meanwhile is unknown, not idle\"}}";
  }
  counts.trace_pauses = pauses.size();
}

}  // namespace

std::optional<TraceExportError> export_chrome_trace(const ReadResult& file, std::ostream& out,
                                                    TraceExportStats* stats) {
  if (file.trace_records.empty()) {
    return TraceExportError{TraceExportError::Kind::kNoTrace,
                            "the file has no trace: the run was made without tracing (no GPU "
                            "timeline was recorded), so there is nothing to export"};
  }
  const v1::SessionHeader* session = session_of(file);
  Writer w(out);
  std::string& b = w.buf();
  b += "{\"traceEvents\":[\n";
  bool first = true;
  TraceExportStats counts;
  uint64_t origin = 0;
  uint64_t dropped = 0;
  write_process(file, Placement{}, w, first, counts, origin, dropped);

  // What the times mean, for people and scripts (Perfetto ignores it).
  b += "\n],\"otherData\":{\"producer\":\"cutriage trace\",\"time_origin_trace_clock_ns\":";
  append_u64(b, origin);
  if (session != nullptr && session->trace_clock_at_start_ns() != 0 && session->start_time_unix_ns() != 0 &&
      origin >= session->trace_clock_at_start_ns()) {
    b += ",\"time_origin_unix_ns\":";
    append_u64(b, session->start_time_unix_ns() + (origin - session->trace_clock_at_start_ns()));
  }
  if (session != nullptr) {
    std::string command;
    for (const std::string& arg : session->command_line()) command += (command.empty() ? "" : " ") + arg;
    b += ",\"command_line\":" + json_string(command) + ",\"host\":" + json_string(session->host()) +
         ",\"pid\":";
    append_u64(b, session->pid());
  }
  b += ",\"dropped_records\":";
  append_u64(b, dropped);
  b += "}}\n";
  w.flush();
  out.flush();
  if (!w.good() || !out) {
    return TraceExportError{TraceExportError::Kind::kWriteFailed, "writing the trace failed (disk full?)"};
  }
  if (stats != nullptr) *stats = counts;
  return std::nullopt;
}

namespace {

// The trace-clock time of the file's first event (its output's zero), as write_process finds it.
uint64_t earliest_event(const ReadResult& file) {
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (int r : file.trace_records) {
    const v1::TraceChunk& chunk = file.file.records(r).trace();
    for (const v1::KernelExecution& k : chunk.kernels()) origin = std::min(origin, k.start_ns());
    for (const v1::CopyExecution& c : chunk.copies()) origin = std::min(origin, c.start_ns());
    for (const v1::NvtxRange& n : chunk.nvtx_ranges()) origin = std::min(origin, n.start_ns());
  }
  return origin == std::numeric_limits<uint64_t>::max() ? 0 : origin;
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

std::optional<TraceExportError> export_chrome_trace_runs(const std::vector<ProcessRun>& runs, std::ostream& out,
                                                         TraceExportStats* stats, std::vector<std::string>* notes) {
  std::vector<const ProcessRun*> traced;
  for (const ProcessRun& run : runs) {
    if (!run.file.trace_records.empty()) {
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
  // One process (its segments merged): the one-file output. Several keep their names even when
  // only one of them has a trace, so the output says whose it is.
  if (runs.size() == 1) return export_chrome_trace(traced.front()->file, out, stats);

  // The common clock: each process's first event on the Unix clock, the earliest of them the
  // output's zero, so the ranks of one job line up. Without both clocks in every header the
  // processes cannot be placed against each other: each then starts at zero (and a note says so).
  std::vector<uint64_t> origins, unix_origins;
  bool aligned = true;
  for (const ProcessRun* run : traced) {
    origins.push_back(earliest_event(run->file));
    const std::optional<uint64_t> u = unix_time(run->file, origins.back());
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
    uint64_t origin = 0;
    uint64_t dropped = 0;
    write_process(run.file, place, w, first, counts, origin, dropped);
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
    append_u64(processes, origin);
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
    append_u64(processes, dropped);
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
  if (!w.good() || !out) {
    return TraceExportError{TraceExportError::Kind::kWriteFailed, "writing the trace failed (disk full?)"};
  }
  if (stats != nullptr) *stats = total;
  return std::nullopt;
}

}  // namespace cutriage::tools
