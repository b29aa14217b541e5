#include "trace_folder.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace cutriage::agent {
namespace {

// Bounds on what the trace side remembers between records (rebuilt or dropped beyond them).
constexpr size_t kMaxActivityKeys = 100000;
// Launches that never execute (captured into a graph) are never matched.
constexpr size_t kMaxCorrelations = 1000000;
constexpr size_t kPausesKept = 4;


// A traced execution's launch shape, as the triage inputs take it.
triage::LaunchConfig shape_of(const collectors::KernelActivity& a) {
  triage::LaunchConfig lc;
  lc.grid = a.grid;
  lc.block = a.block;
  lc.cluster = a.cluster;
  lc.registers_per_thread = a.registers_per_thread;
  lc.static_shared_bytes = a.static_shared_bytes;
  lc.dynamic_shared_bytes = a.dynamic_shared_bytes;
  lc.local_bytes_per_thread = a.local_bytes_per_thread;
  return lc;
}

}  // namespace

size_t TraceFolder::ActivityKeyHash::operator()(const ActivityKey& k) const noexcept {
  size_t h = std::hash<const void*>()(k.name);
  h ^= (size_t{k.device} << 48) ^ (size_t{k.block.x} << 20) ^ (size_t{k.block.y} << 10) ^ k.block.z;
  return h;
}

TraceFolder::TraceFolder(const AgentConfig& config, collectors::Platform& platform, Logger& log,
                         FamilyTable& families, NvtxTracker& nvtx, GraphTable& graph_table,
                         RecordOutput& output, std::shared_mutex& gate, OnRanked on_ranked, Notify notify)
    : config_(config),
      platform_(platform),
      log_(log),
      families_(families),
      nvtx_(nvtx),
      graph_table_(graph_table),
      output_(output),
      gate_(gate),
      on_ranked_(std::move(on_ranked)),
      notify_(std::move(notify)) {}

void TraceFolder::started(uint64_t trace_clock_ns, uint64_t mono_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  clock_at_start_ns_ = trace_clock_ns;
  cycle_start_mono_ns_ = mono_ns;
}

void TraceFolder::on_activity(const collectors::ActivityBatch& batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  nvtx_.drain_launches(correlation_nvtx_);
  if (correlation_nvtx_.size() > kMaxCorrelations) correlation_nvtx_.clear();
  Chunk chunk;
  for (const collectors::KernelActivity& a : batch.kernels) {
    if (a.end_ns < a.start_ns) continue;  // a record CUPTI could not complete
    const auto r = replayed_.find(a.correlation_id);
    const bool replayed = r != replayed_.end();
    if (replayed && a.graph_id == 0 && r->second.launched_hash != 0 && a.stream_id != r->second.stream_id &&
        std::hash<std::string_view>{}(a.mangled_name) != r->second.launched_hash) {
      // The profiler's own kernel beside the launch it profiled: not the application's.
      if (profiler_kernels_++ == 0) {
        log_.debug("the range profiler's own kernel " + std::string(a.mangled_name) +
                   " runs beside profiled launches: left out of the kernel families");
      }
      continue;
    }
    if (replayed && a.graph_id == 0 && a.end_ns > a.start_ns) {
      r->second.traced_ns = static_cast<double>(a.end_ns - a.start_ns);
    }
    Family& family = *family_of_locked(a);
    // A replayed launch's path is kept for its replay window (add_replay_window). A graph
    // kernel's record carries the graph launch's correlation id; its NVTX path is the one open
    // when its node was captured.
    const uint32_t nvtx_path = a.graph_id != 0 ? graph_nvtx_path_locked(a.graph_node_id, family.family_id)
                                               : nvtx_path_locked(a.correlation_id, replayed, family.family_id);
    add_execution_locked(family, a, replayed, nvtx_path, chunk);
  }
  for (const collectors::CopyActivity& c : batch.copies) add_copy_locked(c, chunk);
  // batch.untimed_records are the replayed launches' records (no timestamps, seen on the H200):
  // expected, not a loss; add_replay_window puts the replay window in their place.
  dropped_records_ += batch.dropped_records;
  chunk.chunk.dropped_records = batch.dropped_records;
  if (batch.dropped_records > 0) {
    log_.log_once(LogLevel::kWarn, "trace-dropped",
                  "CUPTI dropped kernel trace records (buffers full); the statistics undercount "
                  "and the report says by how much");
  }
  write_locked(chunk);
  if (on_ranked_) on_ranked_(timeline_);
}

Family* TraceFolder::family_of_locked(const collectors::KernelActivity& a) {
  const ActivityKey key{a.mangled_name.data(), a.device, a.block};
  if (auto it = activity_families_.find(key); it != activity_families_.end() && it->second->mangled == a.mangled_name) {
    return it->second;
  }
  // Kernels launched from graphs (or by other kernels) were never seen by a launch callback:
  // their family starts here.
  Family* family = nullptr;
  {
    std::lock_guard<std::mutex> flock(families_.mutex());
    family = families_.find_or_create_locked(a.mangled_name, a.device, a.block);
  }
  if (activity_families_.size() > kMaxActivityKeys) activity_families_.clear();  // rebuilt on demand
  activity_families_[key] = family;
  return family;
}

uint32_t TraceFolder::nvtx_path_locked(uint64_t correlation_id, bool keep, uint64_t family_id) {
  auto it = correlation_nvtx_.find(correlation_id);
  if (it == correlation_nvtx_.end()) return 0;
  const uint32_t path = it->second;
  if (!keep) correlation_nvtx_.erase(it);
  ++nvtx_launches_[family_id][path];
  return path;
}

uint32_t TraceFolder::graph_nvtx_path_locked(uint64_t node_id, uint64_t family_id) {
  const GraphTable::Origin origin = graph_table_.origin(node_id);
  if (origin.nvtx_path == 0) return 0;
  ++nvtx_launches_[family_id][origin.nvtx_path];
  return origin.nvtx_path;
}

void TraceFolder::mark_replayed(uint64_t correlation_id, std::string_view launched, uint32_t stream_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  replayed_[correlation_id] = Replayed{launched.empty() ? 0 : std::hash<std::string_view>{}(launched), stream_id};
  // Bounded for a process that runs for days: the lowest ids are the oldest launches, whose records
  // came back long ago.
  while (replayed_.size() > kMaxReplayed) replayed_.erase(replayed_.begin());
}

double TraceFolder::replayed_duration_ns(uint64_t correlation_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto r = replayed_.find(correlation_id);
  return r == replayed_.end() ? 0 : r->second.traced_ns;
}

void TraceFolder::add_replay_window(Family& family, const collectors::LaunchEvent& event, uint64_t begin_ns,
                                    uint64_t end_ns) {
  if (end_ns <= begin_ns) return;
  collectors::KernelActivity a;
  a.start_ns = begin_ns;
  a.end_ns = end_ns;
  a.device = event.device;
  a.context_id = static_cast<uint32_t>(event.context_id);
  a.stream_id = static_cast<uint32_t>(event.stream_id);
  a.correlation_id = static_cast<uint32_t>(event.correlation_id);
  if (event.launch) a.grid = event.launch->grid;
  std::lock_guard<std::mutex> lock(mutex_);
  nvtx_.drain_launches(correlation_nvtx_);
  if (correlation_nvtx_.size() > kMaxCorrelations) correlation_nvtx_.clear();
  const uint32_t nvtx_path = nvtx_path_locked(a.correlation_id, /*keep=*/true, family.family_id);
  Chunk chunk;
  add_execution_locked(family, a, /*replayed=*/true, nvtx_path, chunk);
  write_locked(chunk);
}

void TraceFolder::add_execution_locked(Family& family, const collectors::KernelActivity& a, bool replayed,
                                       uint32_t nvtx_path, Chunk& chunk) {
  triage::KernelSpan span;
  span.family = family.family_id;
  span.device = a.device;
  span.stream = a.stream_id;
  span.start_ns = a.start_ns;
  span.end_ns = a.end_ns;
  span.grid = a.grid;
  span.replayed = replayed;
  span.from_graph = a.graph_id != 0;
  // A kernel running when the trace paused has no trustworthy end (graph kernels came back ~100 ms
  // late on the H200, which added most of a second to a small family in a 16 s run): busy until
  // the pause, no duration of its own.
  triage::cut_at_pause(span, pause_starts_);
  timeline_.add_kernel(span);
  if (span.from_graph) {
    graph_table_.note_execution(a.graph_id, a.correlation_id);
    graph_launch_[family.family_id] = shape_of(a);
    const NodeExecution execution{family.family_id, a.start_ns, a.end_ns};
    if (!node_watch_.empty()) {
      if (auto w = node_watch_.find(a.correlation_id); w != node_watch_.end()) {
        note_watched(w->second, a.graph_node_id, execution, span.cut_by_pause, /*keep_execution=*/true);
      }
    }
    if (!watched_.empty()) {
      if (auto w = watched_.find(a.correlation_id); w != watched_.end()) {
        note_watched(w->second, a.graph_node_id, execution, span.cut_by_pause, /*keep_execution=*/false);
      }
    }
  }
  if (window_watch_ && a.device == window_device_ && !replayed && !span.cut_by_pause) {
    window_.latest_start_ns = std::max(window_.latest_start_ns, a.start_ns);
    if (a.end_ns > window_from_ns_) {
      if (window_.executions.size() < kMaxWindowExecutions) {
        window_.executions.push_back(NodeExecution{family.family_id, a.start_ns, a.end_ns});
        if (window_.shapes.find(family.family_id) == window_.shapes.end()) {
          window_.shapes.emplace(family.family_id, shape_of(a));
        }
      } else {
        window_.truncated = true;
      }
    }
  }
  if (span.from_graph && !replayed && !span.cut_by_pause) {
    graphs_.add(triage::GraphKernel{a.graph_id, a.correlation_id, a.graph_node_id, family.family_id, a.start_ns,
                                    span.end_ns});
  }
  if (!replayed) family.traced.store(true, std::memory_order_relaxed);
  if (events_ >= config_.trace_max_events) return;
  ++events_;
  ++kernel_events_;
  wire::KernelExecution e;
  e.family_id = family.family_id;
  e.start_ns = a.start_ns;
  e.end_ns = span.end_ns;
  e.cut_by_pause = span.cut_by_pause;
  e.stream_id = a.stream_id;
  e.context_id = a.context_id;
  e.correlation_id = a.correlation_id;
  e.grid = a.grid;
  e.graph_id = a.graph_id;
  e.graph_node_id = a.graph_node_id;
  e.replayed = replayed;
  if (nvtx_path != 0) e.nvtx_path = nvtx_.path_text(nvtx_path);
  chunk.chunk.kernels.push_back(std::move(e));
  if (defined_.size() <= family.family_id) defined_.resize(family.family_id + 1, false);
  if (!defined_[family.family_id]) {
    defined_[family.family_id] = true;
    chunk.families.push_back(family.definition());
  }
}

void TraceFolder::add_copy_locked(const collectors::CopyActivity& c, Chunk& chunk) {
  if (c.end_ns < c.start_ns) return;
  triage::CopySpan span;
  span.device = c.device;
  span.stream = c.stream_id;
  span.start_ns = c.start_ns;
  span.end_ns = c.end_ns;
  span.bytes = c.bytes;
  span.kind = c.kind;
  span.pageable = c.pageable;
  timeline_.add_copy(span);
  if (events_ >= config_.trace_max_events) return;
  ++events_;
  wire::CopyExecution e;
  e.kind = c.kind;
  e.start_ns = c.start_ns;
  e.end_ns = c.end_ns;
  e.bytes = c.bytes;
  e.device = c.device;
  e.stream_id = c.stream_id;
  e.context_id = c.context_id;
  e.correlation_id = c.correlation_id;
  e.pageable = c.pageable;
  e.graph_id = c.graph_id;
  chunk.chunk.copies.push_back(e);
}

void TraceFolder::write_locked(Chunk& c) {
  wire::TraceChunk& chunk = c.chunk;
  const uint64_t room = events_ < config_.trace_max_events ? config_.trace_max_events - events_ : 0;
  chunk.nvtx_ranges = nvtx_.take_closed(static_cast<size_t>(room));
  events_ += chunk.nvtx_ranges.size();
  if (chunk.kernels.empty() && chunk.copies.empty() && chunk.nvtx_ranges.empty() && chunk.dropped_records == 0 &&
      chunk.untraced.empty()) {
    return;
  }
  output_.write_chunk(chunk, c.families);
}

void TraceFolder::fill_inputs_locked(uint64_t family_id, triage::KernelInput& input) const {
  const triage::FamilyTimeStats* family = timeline_.family(family_id);
  if (family == nullptr) return;
  std::optional<triage::Dim3> grid;
  if (input.launch) grid = input.launch->grid;
  if (input.graph_scope) {
    // The counters are the graph launch's: Decision 0 compares them with its replays, and the
    // kernel's part of the graph is what the trace says by now.
    triage::GraphScope& g = *input.graph_scope;
    input.unprofiled_durations_ns = graphs_.recent_spans(g.graph_id);
    if (std::optional<triage::GraphAccumulator::Share> share = graphs_.family_share(g.graph_id, family_id)) {
      g.share_of_graph = share->share;
      g.other_families = share->other_families;
      g.mean_replay_ns = share->mean_replay_ns;
    }
  } else {
    input.unprofiled_durations_ns = family->recent_durations(grid);
  }
  const double total = timeline_.total_kernel_ns();
  if (total > 0) input.time_share = family->total_ns / total;
  input.ran_concurrently = family->concurrent_launches > 0;
}

std::vector<triage::GraphStats> TraceFolder::graphs_locked() const {
  std::vector<triage::GraphStats> out = graphs_.summary();
  for (triage::GraphStats& g : out) g.exec_id = graph_table_.exec_of(g.graph_id);
  return out;
}

std::optional<triage::LaunchConfig> TraceFolder::graph_launch_locked(uint64_t family_id) const {
  auto it = graph_launch_.find(family_id);
  if (it == graph_launch_.end()) return std::nullopt;
  return it->second;
}

void TraceFolder::watch_graph_launch(uint64_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (watched_.size() >= kMaxWatchedLaunches) watched_.erase(watched_.begin());  // the oldest launch
  watched_.emplace(correlation_id, WatchedLaunch{});
}

void TraceFolder::note_watched(WatchedLaunch& w, uint64_t node_id, const NodeExecution& e, bool cut_by_pause,
                               bool keep_execution) {
  if (!w.unusable.empty()) return;
  if (node_id != 0 && !w.nodes.insert(node_id).second) {
    w.unusable = "its records show node " + std::to_string(node_id) +
                 " twice: CUPTI gave more than one launch its correlation id";
    w.executions.clear();
    return;
  }
  if (cut_by_pause) {
    w.unusable = "a kernel of it was running when the trace paused: its end is unknown";
    w.executions.clear();
    return;
  }
  w.first_start_ns = w.first_start_ns == 0 ? e.start_ns : std::min(w.first_start_ns, e.start_ns);
  w.last_end_ns = std::max(w.last_end_ns, e.end_ns);
  if (keep_execution && w.executions.size() < kMaxNodeExecutions) w.executions.push_back(e);
}

void TraceFolder::watch_graph_nodes(uint64_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (node_watch_.size() >= kMaxNodeWatches) node_watch_.erase(node_watch_.begin());  // the oldest launch
  node_watch_.emplace(correlation_id, WatchedLaunch{});
}

std::vector<NodeExecution> TraceFolder::graph_launch_executions(uint64_t correlation_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = node_watch_.find(correlation_id);
  return it == node_watch_.end() ? std::vector<NodeExecution>{} : it->second.executions;
}

std::string TraceFolder::graph_launch_unusable(uint64_t correlation_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto* watches : {&node_watch_, &watched_}) {
    if (auto it = watches->find(correlation_id); it != watches->end() && !it->second.unusable.empty()) {
      return it->second.unusable;
    }
  }
  return {};
}

void TraceFolder::watch_window(uint32_t device, uint64_t from_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  window_watch_ = true;
  window_device_ = device;
  window_from_ns_ = from_ns;
  window_ = WindowExecutions{};
}

TraceFolder::WindowExecutions TraceFolder::window_executions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return window_;
}

void TraceFolder::unwatch_window() {
  std::lock_guard<std::mutex> lock(mutex_);
  window_watch_ = false;
  window_ = WindowExecutions{};
}

uint64_t TraceFolder::on_left_ns(uint64_t now) const {
  if (!(config_.trace_duty < 1.0)) return UINT64_MAX;
  if (paused_) return 0;
  const uint64_t period = uint64_t{config_.trace_period_s} * 1'000'000'000ULL;
  if (period == 0) return UINT64_MAX;
  const auto on_ns = static_cast<uint64_t>(config_.trace_duty * static_cast<double>(period));
  const uint64_t phase = now > cycle_start_mono_ns_ ? (now - cycle_start_mono_ns_) % period : 0;
  return phase < on_ns ? on_ns - phase : 0;
}

std::optional<double> TraceFolder::graph_launch_span(uint64_t correlation_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = watched_.find(correlation_id);
  if (it == watched_.end() || !it->second.unusable.empty() || it->second.first_start_ns == 0 ||
      it->second.last_end_ns < it->second.first_start_ns) {
    return std::nullopt;
  }
  return static_cast<double>(it->second.last_end_ns - it->second.first_start_ns);
}

void TraceFolder::fill_inputs(uint64_t family_id, triage::KernelInput& input) const {
  std::lock_guard<std::mutex> lock(mutex_);
  fill_inputs_locked(family_id, input);
}

const std::map<uint32_t, uint64_t>* TraceFolder::nvtx_launches_locked(uint64_t family_id) const {
  auto it = nvtx_launches_.find(family_id);
  return it == nvtx_launches_.end() ? nullptr : &it->second;
}

// ---- the duty cycle ------------------------------------------------------------------------

bool TraceFolder::wants_on(uint64_t now) const {
  if (!(config_.trace_duty < 1.0)) return true;
  const uint64_t period = uint64_t{config_.trace_period_s} * 1'000'000'000ULL;
  const auto on_ns = static_cast<uint64_t>(config_.trace_duty * static_cast<double>(period));
  const uint64_t phase = now > cycle_start_mono_ns_ ? (now - cycle_start_mono_ns_) % period : 0;
  return phase < on_ns;
}

void TraceFolder::cycle(uint64_t now) {
  if (!(config_.trace_duty < 1.0)) return;
  const uint64_t period = uint64_t{config_.trace_period_s} * 1'000'000'000ULL;
  const auto on_ns = static_cast<uint64_t>(config_.trace_duty * static_cast<double>(period));
  const bool want_on = wants_on(now);
  if (want_on != paused_) return;  // already as wanted
  std::unique_lock<std::shared_mutex> gate(gate_);
  if (want_on) {
    resume(now, on_ns);
  } else {
    pause(now, on_ns);
  }
}

void TraceFolder::pause(uint64_t now, uint64_t on_ns) {
  // Records of work before the pause still come with later flushes.
  (void)platform_.pause_trace(true);
  paused_ = true;
  paused_at_ns_ = platform_.timestamp_ns();
  {
    // Records of kernels running now arrive later, with ends that cannot be trusted.
    std::lock_guard<std::mutex> lock(mutex_);
    pause_starts_.push_back(paused_at_ns_);
    if (pause_starts_.size() > kPausesKept) pause_starts_.erase(pause_starts_.begin());
  }
  // With the monotonic clock's reading, so that a benchmark can line the application's own
  // throughput up with the traced and paused windows (bench/trace_split.py).
  if (log_.enabled(LogLevel::kDebug)) log_.debug("kernel trace paused at monotonic " + std::to_string(now));
  if (std::exchange(duty_noticed_, true)) return;
  char on_text[32];
  std::snprintf(on_text, sizeof on_text, "%.3g", static_cast<double>(on_ns) / 1e9);
  const std::string what = std::string("the kernel trace runs ") + on_text + " s of every " +
                           std::to_string(config_.trace_period_s) +
                           " s (CUTRIAGE_TRACE_DUTY): family times, shares and the ranking come from the "
                           "traced windows, and the time between them is neither busy nor idle";
  log_.info(what);
  if (notify_) notify_(wire::Severity::kInfo, "trace_duty", what);
}

void TraceFolder::resume(uint64_t now, uint64_t on_ns) {
  // The pause is closed before the trace resumes, so before any record after it arrives.
  const uint64_t resumed_at = platform_.timestamp_ns();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Chunk chunk;
    close_pause_locked(resumed_at, chunk.chunk);
    write_locked(chunk);
  }
  collectors::Status s = platform_.pause_trace(false);
  if (!s.is_ok()) {
    // Tried again at the next window; the ranking keeps what was traced so far.
    log_.log_once(LogLevel::kWarn, "trace-resume",
                  "the kernel trace could not be resumed (" + s.message() + "); trying again each window");
    cycle_start_mono_ns_ = now - on_ns;  // this window counts as paused: wait for the next one
    paused_at_ns_ = resumed_at;
    return;
  }
  paused_ = false;
  if (log_.enabled(LogLevel::kDebug)) log_.debug("kernel trace resumed at monotonic " + std::to_string(now));
}

void TraceFolder::close_pause_locked(uint64_t end_ns, wire::TraceChunk& chunk) {
  if (end_ns <= paused_at_ns_) return;
  // The timeline, before records after the pause can arrive, so that the time across it is not
  // taken for idle time; the file, for a reader rebuilding the timeline of a killed run; the
  // Prometheus counter.
  timeline_.add_untraced(paused_at_ns_, end_ns);
  chunk.untraced.emplace_back(paused_at_ns_, end_ns);
  paused_ns_.fetch_add(end_ns - paused_at_ns_, std::memory_order_relaxed);
}

void TraceFolder::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  Chunk rest;  // NVTX ranges closed after the last delivered batch
  // Ending inside a pause: the file gets this pause too, so that a reader cuts the kernels that
  // were running at it.
  if (paused_) close_pause_locked(platform_.timestamp_ns(), rest.chunk);
  write_locked(rest);
}

}  // namespace cutriage::agent
