#include "nvtx_tracker.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace cutriage::agent {
namespace {

// Closed ranges waiting for the next trace chunk, and open start/end ranges: bounded so an
// application that opens ranges without closing them cannot grow the agent's memory.
constexpr size_t kMaxPending = 100000;
// Bounded too: a push without pops (an application bug) cannot grow a thread's stack without end.
constexpr size_t kMaxDepth = 256;

uint32_t os_thread_id() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

}  // namespace

struct NvtxTracker::ThreadState {
  uint64_t tracker = 0;  // instance id of the tracker this state belongs to
  struct Open {
    std::string name;
    std::string domain;
    uint64_t start_ns = 0;
    uint32_t path = 0;      // path id including this range
    std::string path_text;  // "outer/inner", this range last
  };
  std::vector<Open> stack;
  std::shared_ptr<LaunchBuffer> launches;
  [[nodiscard]] uint32_t path() const { return stack.empty() ? 0 : stack.back().path; }
};

NvtxTracker::NvtxTracker(uint64_t instance_id) : instance_id_(instance_id) {}

NvtxTracker::ThreadState& NvtxTracker::thread_state() {
  thread_local ThreadState state;
  if (state.tracker != instance_id_) {
    state = ThreadState{};
    state.tracker = instance_id_;
    state.launches = std::make_shared<LaunchBuffer>();
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_.push_back(state.launches);
  }
  return state;
}

void NvtxTracker::on_event(const collectors::NvtxEvent& event) {
  using Kind = collectors::NvtxEvent::Kind;
  ThreadState& t = thread_state();
  switch (event.kind) {
    case Kind::kPush: {
      ThreadState::Open open;
      open.name = std::string(event.message);
      open.domain = std::string(event.domain);
      open.start_ns = event.timestamp_ns;
      open.path_text = t.stack.empty() ? open.name : t.stack.back().path_text + "/" + open.name;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto [it, added] = path_ids_.emplace(open.path_text, static_cast<uint32_t>(paths_.size()));
        if (added) paths_.push_back(open.path_text);
        open.path = it->second;
      }
      if (t.stack.size() < kMaxDepth) t.stack.push_back(std::move(open));
      break;
    }
    case Kind::kPop: {
      if (t.stack.empty()) break;
      ThreadState::Open open = std::move(t.stack.back());
      t.stack.pop_back();
      wire::NvtxRange r;
      r.name = std::move(open.name);
      r.domain = std::move(open.domain);
      r.start_ns = open.start_ns;
      r.end_ns = event.timestamp_ns;
      r.thread_id = event.thread_id != 0 ? event.thread_id : os_thread_id();
      r.depth = static_cast<uint32_t>(t.stack.size());
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_.size() < kMaxPending) closed_.push_back(std::move(r));
      break;
    }
    case Kind::kStart: {
      std::lock_guard<std::mutex> lock(mutex_);
      if (open_ranges_.size() < kMaxPending) {
        open_ranges_[event.range_id] =
            OpenRange{std::string(event.message), std::string(event.domain), event.timestamp_ns, event.thread_id};
      }
      break;
    }
    case Kind::kEnd: {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = open_ranges_.find(event.range_id);
      if (it == open_ranges_.end()) break;
      wire::NvtxRange r;
      r.name = std::move(it->second.name);
      r.domain = std::move(it->second.domain);
      r.start_ns = it->second.start_ns;
      r.end_ns = event.timestamp_ns;
      r.thread_id = it->second.thread_id;
      open_ranges_.erase(it);
      if (closed_.size() < kMaxPending) closed_.push_back(std::move(r));
      break;
    }
    case Kind::kMark:
      break;
  }
}

void NvtxTracker::note_launch(uint64_t correlation_id) {
  ThreadState& t = thread_state();
  if (t.path() == 0 || !t.launches) return;
  std::lock_guard<std::mutex> lock(t.launches->mutex);
  t.launches->items.emplace_back(correlation_id, t.path());
}

uint32_t NvtxTracker::current_path() { return thread_state().path(); }

bool NvtxTracker::allows(const KernelFilter& include, const KernelFilter& exclude) {
  if (include.empty() && exclude.empty()) return true;
  const ThreadState& t = thread_state();
  auto any = [&](const KernelFilter& f) {
    return std::any_of(t.stack.begin(), t.stack.end(),
                       [&](const ThreadState::Open& o) { return f.matches(o.name, o.name, o.name); });
  };
  if (!include.empty() && !any(include)) return false;
  return exclude.empty() || !any(exclude);
}

void NvtxTracker::drain_launches(std::unordered_map<uint64_t, uint32_t>& into) {
  std::vector<std::shared_ptr<LaunchBuffer>> buffers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers = buffers_;
  }
  for (const std::shared_ptr<LaunchBuffer>& b : buffers) {
    std::vector<std::pair<uint64_t, uint32_t>> items;
    {
      std::lock_guard<std::mutex> lock(b->mutex);
      items.swap(b->items);
    }
    for (const auto& [correlation, path] : items) into[correlation] = path;
  }
}

std::string NvtxTracker::path_text(uint32_t path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return path < paths_.size() ? paths_[path] : std::string();
}

std::vector<std::string> NvtxTracker::paths() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paths_;
}

std::vector<wire::NvtxRange> NvtxTracker::take_closed(size_t max) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<wire::NvtxRange> out;
  const size_t n = std::min(max, closed_.size());
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(std::move(closed_[i]));
  closed_.clear();
  return out;
}

}  // namespace cutriage::agent
