// The timeline accumulator (timeline.h): family statistics, per-device interval unions in a
// trailing window, idle gaps, concurrency and launch-bound stretches.
//
// Cost model: add_kernel runs for every kernel execution of the application, so its common path
// (records arriving roughly in time order) is a family hash lookup, a log for the histogram and
// appends to / removals from the ends of a few deques (StartOrdered): no tree node per record.
// Sweeps over what is still in the window (busy totals, gaps and stretches not yet closed) are
// done in summary(), on copies, never on the hot path.
//
// Window invariants, per device. "The cutoff" is the newest end seen minus window_ns; every
// structure keeps the records that started after it, in start order, and sweeps the others out in
// start order:
//   * IntervalSet (kernels, copies, both): raw intervals; the sweep merges them into disjoint
//     intervals, adds up their measure and reports each closed one (the gaps between them are the
//     idle gaps). A record that starts before the last interval swept is late: the part of it
//     before the interval the sweep holds open is counted as busy (approximate: it may overlap
//     closed time) and never produces a gap.
//   * Stretch queue: unreplayed kernel executions; swept out into the stretch detector. A record
//     starting before the last one fed is late and left out of stretch detection.
//   * Execution store: recent unreplayed kernel executions, one start-ordered store per
//     power-of-two duration class, so that finding the executions overlapping [s, e) only looks at
//     starts in (s - 2^(k+1), e) in class k: a few false candidates per stream at most, however
//     long other kernels run. Executions leave once they ended before the cutoff.
#include "cutriage/triage/timeline.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

namespace cutriage::triage {

// ---------------------------------------------------------------------------------------------
// DurationSketch

namespace {

const double kLogRatio = std::log(1.01);

uint32_t bucket_of(double ns, size_t buckets) {
  if (!(ns >= 1.0)) return 0;
  const double i = std::log(ns) / kLogRatio;
  if (!(i < static_cast<double>(buckets - 1))) return static_cast<uint32_t>(buckets - 1);
  return static_cast<uint32_t>(i);
}

// Geometric middle of bucket i: within 0.5% of every value the bucket holds.
double bucket_value(uint32_t i) { return std::exp((static_cast<double>(i) + 0.5) * kLogRatio); }

}  // namespace

void DurationSketch::add(double ns) {
  if (!std::isfinite(ns)) return;
  if (ns < 0) ns = 0;
  if (count_ == 0) {
    min_ = max_ = ns;
  } else {
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
  }
  ++count_;
  const uint32_t b = bucket_of(ns, kBuckets);
  if (counts_.empty()) {
    first_ = b;
    counts_.assign(1, 0);
  } else if (b < first_) {
    counts_.insert(counts_.begin(), first_ - b, 0);
    first_ = b;
  } else if (b - first_ >= counts_.size()) {
    counts_.resize(b - first_ + 1, 0);
  }
  ++counts_[b - first_];
}

double DurationSketch::quantile(double q) const {
  if (count_ == 0) return 0;
  if (!(q > 0)) return min_;
  if (q >= 1) return max_;
  // Nearest rank: the smallest value with at least q * count values at or below it.
  const auto rank = std::clamp<uint64_t>(
      static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))), 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint32_t b = first_ + static_cast<uint32_t>(i);
      if (b == kBuckets - 1) return max_;  // the open-ended last bucket: its middle is meaningless
      return std::clamp(bucket_value(b), min_, max_);
    }
  }
  return max_;
}

// ---------------------------------------------------------------------------------------------
// FamilyTimeStats, TimelineSummary

double FamilyTimeStats::mean_ns() const {
  // Over the executions with a duration: unreplayed and timed (durations holds exactly those).
  const uint64_t timed = durations.count();
  return timed > 0 ? total_ns / static_cast<double>(timed) : 0.0;
}

std::vector<double> FamilyTimeStats::recent_durations(const std::optional<Dim3>& grid) const {
  std::vector<double> out;
  if (grid) {
    for (const auto& [g, ns] : recent) {
      if (g == *grid) out.push_back(ns);
    }
  }
  if (out.empty()) {
    for (const auto& r : recent) out.push_back(r.second);
  }
  return out;
}

double TimelineSummary::time_share(const FamilyTimeStats& family) const {
  if (!(total_kernel_ns > 0)) return 0.0;
  return std::clamp(family.total_ns / total_kernel_ns, 0.0, 1.0);
}

double TimelineSummary::amdahl_ceiling(const FamilyTimeStats& family) const {
  const double share = time_share(family);
  if (share >= 1.0) return 0.0;  // deleting the only family: no finite bound
  return 1.0 / (1.0 - share);
}

const FamilyTimeStats* TimelineSummary::family(uint64_t id) const {
  for (const FamilyTimeStats& f : families) {
    if (f.family == id) return &f;
  }
  return nullptr;
}

const DeviceTimeStats* TimelineSummary::device(uint32_t id) const {
  for (const DeviceTimeStats& d : devices) {
    if (d.device == id) return &d;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Accumulator internals

namespace {

struct Interval {
  uint64_t end = 0;
  bool profiled =
      false;  // holds a replayed (profiled) kernel: the gaps next to it are the profiler's
};

// Items ordered by start, for data that arrives mostly in start order and leaves from the
// oldest end. Sorted runs in deques (contiguous chunks: appends, lookups near the newest end and
// removals at the oldest end touch warm memory, unlike a tree node per item) plus a tree for the
// rare item that fits no run (inserting it deep inside a run would shift everything after it).
// Two runs, because two in-order sequences interleaved in large blocks is the common disorder:
// CUPTI hands over each context's buffer separately.
// Invariants: each run is sorted by start; every item lives in exactly one run or in far_.
template <typename T>
class StartOrdered {
 public:
  struct Item {
    uint64_t start;
    T value;
  };

  void insert(uint64_t start, T value) {
    if (std::deque<Item>* run = run_for(start)) {
      run->push_back(Item{start, value});
      return;
    }
    for (std::deque<Item>& run : runs_) {  // a little behind a run's newest item: shift a few
      size_t i = run.size();
      for (size_t steps = 0; i > 0 && run[i - 1].start > start && steps < kNear; ++steps) --i;
      if (i == 0 || run[i - 1].start <= start) {
        run.insert(run.begin() + static_cast<std::ptrdiff_t>(i), Item{start, value});
        return;
      }
    }
    far_.emplace(start, value);
  }

  // The value of the newest item of the run an in-order item starting at `start` would be
  // appended to, for merging into it; null when there is none.
  [[nodiscard]] T* back_at_or_before(uint64_t start) {
    std::deque<Item>* run = run_for(start);
    return run != nullptr && !run->empty() ? &run->back().value : nullptr;
  }

  // Calls f(start, value&) for each item with from <= start < to.
  template <typename F>
  void for_range(uint64_t from, uint64_t to, F&& f) {
    for (std::deque<Item>& run : runs_) {
      // Usually a short walk back from the newest item; binary search otherwise.
      size_t i = run.size();
      for (size_t steps = 0; i > 0 && run[i - 1].start >= from; ++steps, --i) {
        if (steps == kNear) {
          i = static_cast<size_t>(
              std::lower_bound(run.begin(), run.end(), from,
                               [](const Item& x, uint64_t v) { return x.start < v; }) -
              run.begin());
          break;
        }
      }
      for (; i < run.size() && run[i].start < to; ++i) f(run[i].start, run[i].value);
    }
    if (far_.empty() || std::prev(far_.end())->first < from) return;  // the last key is O(1)
    for (auto it = far_.lower_bound(from); it != far_.end() && it->first < to; ++it)
      f(it->first, it->second);
  }

  [[nodiscard]] bool empty() const {
    return far_.empty() &&
           std::all_of(runs_.begin(), runs_.end(), [](const auto& r) { return r.empty(); });
  }
  // The item with the smallest start. Not empty().
  [[nodiscard]] Item front() const {
    const size_t r = oldest();
    if (r < runs_.size()) return runs_[r].front();
    return Item{far_.begin()->first, far_.begin()->second};
  }
  void pop_front() {
    const size_t r = oldest();
    if (r < runs_.size()) {
      runs_[r].pop_front();
    } else {
      far_.erase(far_.begin());
    }
  }
  // Every item in start order, for the summary.
  [[nodiscard]] std::vector<Item> sorted() const {
    std::vector<Item> out;
    for (const std::deque<Item>& run : runs_) out.insert(out.end(), run.begin(), run.end());
    for (const auto& [start, value] : far_) out.push_back(Item{start, value});
    std::stable_sort(out.begin(), out.end(),
                     [](const Item& a, const Item& b) { return a.start < b.start; });
    return out;
  }

 private:
  static constexpr size_t kNear = 64;

  // The run an item starting at `start` can be appended to: the one whose newest item is the
  // latest at or before it (an empty run when none fits).
  std::deque<Item>* run_for(uint64_t start) {
    std::deque<Item>* best = nullptr;
    std::deque<Item>* empty = nullptr;
    for (std::deque<Item>& run : runs_) {
      if (run.empty()) {
        if (empty == nullptr) empty = &run;
      } else if (run.back().start <= start &&
                 (best == nullptr || run.back().start > best->back().start)) {
        best = &run;
      }
    }
    return best != nullptr ? best : empty;
  }
  // Index of the run holding the smallest start; runs_.size() when far_ holds it. Ties go to the
  // first run, so front() and pop_front() agree.
  [[nodiscard]] size_t oldest() const {
    size_t best = runs_.size();
    for (size_t r = 0; r < runs_.size(); ++r) {
      if (!runs_[r].empty() &&
          (best == runs_.size() || runs_[r].front().start < runs_[best].front().start))
        best = r;
    }
    if (best < runs_.size() && !far_.empty() && far_.begin()->first < runs_[best].front().start)
      return runs_.size();
    return best;
  }

  std::array<std::deque<Item>, 2> runs_;
  std::multimap<uint64_t, T> far_;
};

// The union of intervals (busy time): raw intervals wait in the window in start order (one
// merged into the newest when it overlaps it, so back-to-back overlapping work costs nothing) and
// leave through a sweep in start order, which merges them into disjoint intervals, adds up their
// measure and reports each closed interval (for the gaps between them).
class IntervalSet {
 public:
  // Adds [s, e). Returns true when the record began behind the fold watermark (late): the part
  // before the interval the sweep holds open is added to the total as busy (it may overlap closed
  // intervals: busy is approximate for late records, and they never create or fill a gap).
  bool insert(uint64_t s, uint64_t e, bool profiled) {
    if (e <= s) return false;
    if (swept_ && s < watermark_) {
      if (s < sweep_.start) {
        sweep_.closed_ns += std::min(e, sweep_.start) - s;
        s = sweep_.start;
      }
      if (e > s) sweep_.extend(e, profiled);  // s is inside the open interval: exact
      return true;
    }
    if (Interval* newest = queue_.back_at_or_before(s); newest != nullptr && s <= newest->end) {
      newest->end = std::max(newest->end, e);
      newest->profiled = newest->profiled || profiled;
      return false;
    }
    queue_.insert(s, Interval{e, profiled});
    return false;
  }

  // Sweeps the intervals that started before `cutoff`; on_close(start, end, profiled) for each
  // merged interval closed on the way.
  template <typename OnClose>
  void fold(uint64_t cutoff, OnClose&& on_close) {
    while (!queue_.empty()) {
      const auto first = queue_.front();
      if (first.start >= cutoff) break;
      sweep_.next(first.start, first.value.end, first.value.profiled, on_close);
      watermark_ = first.start;
      swept_ = true;
      queue_.pop_front();
    }
  }

  // The total measure, sweeping what is still in the window on a copy; on_close as for fold(),
  // for the intervals that only this final sweep closes.
  template <typename OnClose>
  uint64_t total_ns(OnClose&& on_close) const {
    Sweep sweep = sweep_;
    for (const auto& item : queue_.sorted())
      sweep.next(item.start, item.value.end, item.value.profiled, on_close);
    sweep.close(on_close);
    return sweep.closed_ns;
  }
  [[nodiscard]] uint64_t total_ns() const {
    return total_ns([](uint64_t, uint64_t, bool) {});
  }

 private:
  struct Sweep {
    bool open = false;
    uint64_t start = 0;
    uint64_t end = 0;
    bool profiled = false;
    uint64_t closed_ns = 0;  // measure of the closed intervals (and late approximations)

    void extend(uint64_t e, bool p) {
      end = std::max(end, e);
      profiled = profiled || p;
    }
    template <typename OnClose>
    void next(uint64_t s, uint64_t e, bool p, OnClose& on_close) {
      if (open && s <= end) {  // touching intervals merge too
        extend(e, p);
        return;
      }
      close(on_close);
      open = true;
      start = s;
      end = e;
      profiled = p;
    }
    template <typename OnClose>
    void close(OnClose& on_close) {
      if (!open) return;
      open = false;
      closed_ns += end - start;
      on_close(start, end, profiled);
    }
  };

  StartOrdered<Interval> queue_;
  Sweep sweep_;
  uint64_t watermark_ = 0;  // start of the last interval swept
  bool swept_ = false;
};

// The trace's pauses, in time order (TimelineAccumulator::add_untraced).
using Pauses = std::deque<IdleGap>;

bool overlaps_pause(const Pauses& pauses, uint64_t start, uint64_t end) {
  // The first pause ending after `start`; pauses are in time order and do not overlap.
  auto it = std::upper_bound(pauses.begin(), pauses.end(), start,
                             [](uint64_t t, const IdleGap& p) { return t < p.end_ns; });
  return it != pauses.end() && it->start_ns < end;
}

// Idle gaps between consecutive busy intervals, fed in start order. A gap that overlaps a pause
// of the trace is untraced instead: neither a gap nor idle.
struct GapTracker {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t profiler_ns = 0;
  uint64_t untraced_ns = 0;
  std::vector<IdleGap> largest;  // longest first
  bool have_prev = false;
  uint64_t prev_end = 0;
  bool prev_profiled = false;

  void next(uint64_t start, uint64_t end, bool profiled, const TimelineOptions& o, const Pauses& pauses) {
    if (have_prev && start > prev_end) {
      const uint64_t gap = start - prev_end;
      if (overlaps_pause(pauses, prev_end, start)) {
        untraced_ns += gap;  // what ran meanwhile is unknown
      } else if (profiled || prev_profiled) {
        profiler_ns += gap;
      } else if (gap > o.min_gap_ns) {
        ++count;
        total_ns += gap;
        keep(IdleGap{prev_end, start}, o.keep_gaps);
      }
    }
    have_prev = true;
    prev_end = std::max(prev_end, end);
    prev_profiled = profiled;
  }

  void keep(IdleGap gap, size_t limit) {
    if (limit == 0) return;
    const uint64_t len = gap.end_ns - gap.start_ns;
    if (largest.size() >= limit && len <= largest.back().end_ns - largest.back().start_ns) return;
    auto pos =
        std::upper_bound(largest.begin(), largest.end(), len,
                         [](uint64_t l, const IdleGap& g) { return l > g.end_ns - g.start_ns; });
    largest.insert(pos, gap);
    if (largest.size() > limit) largest.pop_back();
  }
};

// Runs of short kernels in start order (see TimelineOptions).
struct StretchTracker {
  bool active = false;
  uint64_t start = 0;
  uint64_t union_end = 0;
  uint64_t kernels = 0;
  uint64_t busy_ns = 0;  // union of the run's kernels: they arrive in start order, so a sweep
  uint64_t sum_ns = 0;
  uint64_t found = 0;
  double span_total_ns = 0;
  double busy_total_ns = 0;
  std::vector<LaunchBoundStretch> longest;  // longest span first

  void feed(uint64_t s, uint64_t e, const TimelineOptions& o) {
    const uint64_t dur = e - s;
    if (dur > o.stretch_max_kernel_ns) {
      close(o);
      return;
    }
    if (active && s > union_end && s - union_end > o.stretch_max_gap_ns) close(o);
    if (!active) {
      active = true;
      start = s;
      union_end = e;
      kernels = 1;
      busy_ns = dur;
      sum_ns = dur;
      return;
    }
    const uint64_t from = std::max(s, union_end);
    if (e > from) busy_ns += e - from;
    union_end = std::max(union_end, e);
    ++kernels;
    sum_ns += dur;
  }

  void close(const TimelineOptions& o) {
    if (!active) return;
    active = false;
    if (kernels < o.stretch_min_kernels || union_end <= start) return;
    const double span = static_cast<double>(union_end - start);
    const auto busy = static_cast<double>(busy_ns);
    if (!(busy < o.stretch_max_busy * span)) return;
    ++found;
    span_total_ns += span;
    busy_total_ns += busy;
    if (o.keep_stretches == 0) return;
    LaunchBoundStretch st{start, union_end, kernels, busy,
                          static_cast<double>(sum_ns) / static_cast<double>(kernels)};
    if (longest.size() >= o.keep_stretches &&
        span <= static_cast<double>(longest.back().end_ns - longest.back().start_ns)) {
      return;
    }
    auto pos = std::upper_bound(longest.begin(), longest.end(), span,
                                [](double l, const LaunchBoundStretch& x) {
                                  return l > static_cast<double>(x.end_ns - x.start_ns);
                                });
    longest.insert(pos, st);
    if (longest.size() > o.keep_stretches) longest.pop_back();
  }
};

struct Execution {
  uint64_t end = 0;
  FamilyTimeStats* family = nullptr;  // owned by Impl::families (node-based: stable address)
  bool concurrent = false;            // already counted in its family's concurrent_launches
};

// Recent unreplayed kernel executions, one start-ordered store per duration class (see the top).
class ExecutionStore {
 public:
  // Marks every stored execution overlapping [s, e) (and counts it in its family once), then
  // stores this one. Returns whether it overlapped any.
  bool add(uint64_t s, uint64_t e, FamilyTimeStats* family) {
    bool overlapped = false;
    for (uint64_t mask = nonempty_; mask != 0; mask &= mask - 1) {
      const int k = std::countr_zero(mask);
      const uint64_t reach =
          k >= 63 ? std::numeric_limits<uint64_t>::max() : (uint64_t{2} << k) - 1;
      const uint64_t from = s > reach ? s - reach : 0;
      classes_[static_cast<size_t>(k)].for_range(from, e, [&](uint64_t, Execution& x) {
        if (x.end <= s) return;
        overlapped = true;
        if (!x.concurrent) {
          x.concurrent = true;
          ++x.family->concurrent_launches;
        }
      });
    }
    if (overlapped) ++family->concurrent_launches;
    const auto k =
        static_cast<int>(std::bit_width(e - s)) - 1;  // e > s: durations in [2^k, 2^(k+1))
    classes_[static_cast<size_t>(k)].insert(s, Execution{e, family, overlapped});
    nonempty_ |= uint64_t{1} << k;
    return overlapped;
  }

  // Drops executions that ended before `cutoff`. Within a class, stops at the first one still
  // needed: those behind it ended at most one class width later, so the excess is bounded.
  void evict(uint64_t cutoff) {
    for (uint64_t mask = nonempty_; mask != 0; mask &= mask - 1) {
      const int k = std::countr_zero(mask);
      auto& c = classes_[static_cast<size_t>(k)];
      while (!c.empty() && c.front().value.end < cutoff) c.pop_front();
      if (c.empty()) nonempty_ &= ~(uint64_t{1} << k);
    }
  }

 private:
  std::array<StartOrdered<Execution>, 64> classes_;
  uint64_t nonempty_ = 0;
};

struct DeviceState {
  uint32_t id = 0;
  uint64_t first_start = std::numeric_limits<uint64_t>::max();
  uint64_t last_end = 0;  // also the newest end seen: the window trails it
  uint64_t kernels = 0;
  uint64_t copies = 0;
  uint64_t pageable_ns = 0;
  uint64_t late = 0;
  IntervalSet kernel_iv;
  IntervalSet copy_iv;
  IntervalSet busy_iv;  // kernels and copies
  GapTracker gaps;      // over the intervals busy_iv's sweep closed
  StretchTracker stretches;
  StartOrdered<uint64_t> stretch_queue;  // start -> end, unreplayed kernels in the window
  uint64_t stretch_watermark = 0;        // start of the last execution fed
  bool stretch_fed = false;
  ExecutionStore executions;

  void note_times(uint64_t s, uint64_t e) {
    first_start = std::min(first_start, s);
    last_end = std::max(last_end, e);
  }

  void fold(const TimelineOptions& o, const Pauses& pauses) {
    if (last_end <= o.window_ns) return;
    const uint64_t cutoff = last_end - o.window_ns;
    busy_iv.fold(cutoff, [&](uint64_t s, uint64_t e, bool p) { gaps.next(s, e, p, o, pauses); });
    kernel_iv.fold(cutoff, [](uint64_t, uint64_t, bool) {});
    copy_iv.fold(cutoff, [](uint64_t, uint64_t, bool) {});
    while (!stretch_queue.empty()) {
      const auto first = stretch_queue.front();
      if (first.start >= cutoff) break;
      stretches.feed(first.start, first.value, o);
      stretch_watermark = first.start;
      stretch_fed = true;
      stretch_queue.pop_front();
    }
    executions.evict(cutoff);
  }
};

}  // namespace

struct TimelineAccumulator::Impl {
  TimelineOptions options;
  // Node-based: FamilyTimeStats addresses stay valid as the map grows (family() hands them out and
  // the execution store points at them).
  std::unordered_map<uint64_t, FamilyTimeStats> families;
  std::map<uint32_t, DeviceState> devices;
  DeviceState* last_device = nullptr;  // most records in a row come from one device
  uint64_t total_kernel_ns = 0;
  uint64_t kernel_executions = 0;
  uint64_t copy_executions = 0;
  uint64_t late_records = 0;
  Pauses pauses;  // of the trace, on every device

  DeviceState& device(uint32_t id) {
    if (last_device != nullptr && last_device->id == id) return *last_device;
    auto [it, inserted] = devices.try_emplace(id);
    if (inserted) it->second.id = id;
    last_device = &it->second;
    return it->second;
  }
};

TimelineAccumulator::TimelineAccumulator(TimelineOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
}
TimelineAccumulator::~TimelineAccumulator() = default;
TimelineAccumulator::TimelineAccumulator(TimelineAccumulator&&) noexcept = default;
TimelineAccumulator& TimelineAccumulator::operator=(TimelineAccumulator&&) noexcept = default;

void TimelineAccumulator::add_kernel(const KernelSpan& span) {
  Impl& im = *impl_;
  const TimelineOptions& o = im.options;
  const uint64_t s = span.start_ns;
  const uint64_t e = span.end_ns;
  // Zero start and end is CUPTI's "no timestamps collected"; an end before the start is no time
  // either. Counting them as time would stretch the span back to the clock's origin.
  const bool timed = (s != 0 || e != 0) && e >= s;
  const uint64_t dur = timed ? e - s : 0;

  auto [fit, inserted] = im.families.try_emplace(span.family);
  FamilyTimeStats& f = fit->second;
  if (inserted) {
    f.family = span.family;
    f.device = span.device;  // the first device it ran on
    f.recent.reserve(FamilyTimeStats::kRecent);
  }
  ++f.launches;
  ++im.kernel_executions;
  if (span.from_graph) ++f.graph_launches;
  if (span.replayed) ++f.replayed_launches;
  DeviceState& d = im.device(span.device);
  ++d.kernels;
  if (!timed) return;
  // A replayed launch's time is the profiler's and a cut one's is not the kernel's: neither is a
  // duration of the family.
  const bool own_duration = !span.replayed && !span.cut_by_pause;
  if (own_duration) {
    const auto ns = static_cast<double>(dur);
    f.total_ns += ns;
    im.total_kernel_ns += dur;
    f.durations.add(ns);
    if (f.recent.size() < FamilyTimeStats::kRecent) {
      f.recent.emplace_back(span.grid, ns);
    } else {  // newest last, in arrival order
      std::move(f.recent.begin() + 1, f.recent.end(), f.recent.begin());
      f.recent.back() = {span.grid, ns};
    }
  }

  d.note_times(s, e);
  bool late = false;
  if (dur > 0) {
    late = d.kernel_iv.insert(s, e, false);
    late = d.busy_iv.insert(s, e, span.replayed) || late;
    // A profiled launch runs alone under the profiler with distorted timing, and a cut one has no
    // known end: neither marks concurrency nor takes part in stretches.
    if (own_duration) {
      d.executions.add(s, e, &f);
      if (d.stretch_fed && s < d.stretch_watermark) {
        late = true;
      } else {
        d.stretch_queue.insert(s, e);
      }
    }
  }
  if (late) {
    ++d.late;
    ++im.late_records;
  }
  d.fold(o, im.pauses);
}

bool cut_at_pause(KernelSpan& span, std::span<const uint64_t> pause_starts) {
  if (span.replayed) return false;
  // The first pause after the start: the only one that can cut the span first.
  const auto it = std::upper_bound(pause_starts.begin(), pause_starts.end(), span.start_ns);
  if (it == pause_starts.end() || *it >= span.end_ns) return false;
  span.end_ns = *it;
  span.cut_by_pause = true;
  return true;
}

void TimelineAccumulator::add_copy(const CopySpan& span) {
  Impl& im = *impl_;
  const uint64_t s = span.start_ns;
  const uint64_t e = span.end_ns;
  ++im.copy_executions;
  DeviceState& d = im.device(span.device);
  ++d.copies;
  if ((s == 0 && e == 0) || e < s) return;  // no usable time (see add_kernel)
  d.note_times(s, e);
  // Pageable copies are staged and synchronous: summed, since they do not overlap each other.
  if (span.pageable) d.pageable_ns += e - s;
  bool late = false;
  if (e > s) {
    late = d.copy_iv.insert(s, e, false);
    late = d.busy_iv.insert(s, e, false) || late;
  }
  if (late) {
    ++d.late;
    ++im.late_records;
  }
  d.fold(im.options, im.pauses);
}

TimelineSummary TimelineAccumulator::summary() const {
  const Impl& im = *impl_;
  const TimelineOptions& o = im.options;
  TimelineSummary out;
  out.options = o;
  out.total_kernel_ns = static_cast<double>(im.total_kernel_ns);
  out.kernel_executions = im.kernel_executions;
  out.copy_executions = im.copy_executions;
  out.late_records = im.late_records;
  out.families.reserve(im.families.size());
  for (const auto& [id, f] : im.families) out.families.push_back(f);
  std::sort(out.families.begin(), out.families.end(),
            [](const FamilyTimeStats& a, const FamilyTimeStats& b) {
              return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.family < b.family;
            });

  for (const auto& [id, d] : im.devices) {
    DeviceTimeStats ds;
    ds.device = id;
    if (d.first_start <= d.last_end) {
      ds.first_start_ns = d.first_start;
      ds.last_end_ns = d.last_end;
    }
    GapTracker gaps = d.gaps;  // continue the folded state over the window, on a copy
    const uint64_t busy =
        d.busy_iv.total_ns([&](uint64_t s, uint64_t e, bool p) { gaps.next(s, e, p, o, im.pauses); });
    const uint64_t kernel_busy = d.kernel_iv.total_ns();
    const uint64_t copy_busy = d.copy_iv.total_ns();
    ds.busy_ns = static_cast<double>(busy);
    ds.kernel_busy_ns = static_cast<double>(kernel_busy);
    ds.copy_busy_ns = static_cast<double>(copy_busy);
    // busy = kernels u copies, so |copies \ kernels| = |busy| - |kernels| (exact without late
    // records; clamped because late records are approximated).
    const uint64_t copy_only = busy > kernel_busy ? busy - kernel_busy : 0;
    ds.copy_only_ns = static_cast<double>(std::min(copy_only, copy_busy));
    ds.copy_overlapped_ns = static_cast<double>(copy_busy - std::min(copy_only, copy_busy));
    ds.pageable_copy_ns = static_cast<double>(d.pageable_ns);
    ds.kernels = d.kernels;
    ds.copies = d.copies;
    ds.late_records = d.late;

    ds.gaps = gaps.count;
    ds.gap_ns = static_cast<double>(gaps.total_ns);
    ds.largest_gaps = std::move(gaps.largest);
    ds.profiler_idle_ns = static_cast<double>(gaps.profiler_ns);
    ds.untraced_ns = static_cast<double>(gaps.untraced_ns);

    StretchTracker stretches = d.stretches;
    for (const auto& item : d.stretch_queue.sorted()) stretches.feed(item.start, item.value, o);
    stretches.close(o);
    ds.launch_bound = std::move(stretches.longest);
    ds.launch_bound_stretches = stretches.found;
    ds.launch_bound_span_ns = stretches.span_total_ns;
    ds.launch_bound_busy_ns = stretches.busy_total_ns;
    out.devices.push_back(std::move(ds));
  }
  return out;
}

void TimelineAccumulator::add_untraced(uint64_t start_ns, uint64_t end_ns) {
  if (end_ns <= start_ns) return;
  Pauses& p = impl_->pauses;
  if (!p.empty() && start_ns < p.back().end_ns) return;  // out of order or overlapping: ignored
  p.push_back(IdleGap{start_ns, end_ns});
  if (p.size() > 4096) p.pop_front();
}

const FamilyTimeStats* TimelineAccumulator::family(uint64_t id) const {
  auto it = impl_->families.find(id);
  return it == impl_->families.end() ? nullptr : &it->second;
}

std::vector<uint64_t> TimelineAccumulator::ranking() const {
  std::vector<std::pair<double, uint64_t>> order;
  order.reserve(impl_->families.size());
  for (const auto& [id, f] : impl_->families) order.emplace_back(f.total_ns, id);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint64_t> ids;
  ids.reserve(order.size());
  for (const auto& entry : order) ids.push_back(entry.second);
  return ids;
}

double TimelineAccumulator::total_kernel_ns() const {
  return static_cast<double>(impl_->total_kernel_ns);
}

}  // namespace cutriage::triage
