// The timeline accumulator and the session-level Decision 1 / 2A checks (timeline.h).
//
// SYNTHETIC INPUTS: every kernel and copy span in this file is made up to exercise one property
// (unions, gaps, windows, concurrency, stretches, rule outcomes); none comes from a GPU trace.
// Replays of real traces captured on the H200 live elsewhere.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "catch.h"
#include "cutriage/triage/rule.h"
#include "cutriage/triage/timeline.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_timeline {

using namespace cutriage::triage;

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

namespace {

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;

KernelSpan kernel(uint64_t family, uint64_t start, uint64_t end, uint32_t stream = 1,
                  uint32_t device = 0) {
  KernelSpan k;
  k.family = family;
  k.device = device;
  k.stream = stream;
  k.start_ns = start;
  k.end_ns = end;
  k.grid = Dim3{128, 1, 1};
  return k;
}

CopySpan copy(uint64_t start, uint64_t end, bool pageable = false, uint32_t device = 0) {
  CopySpan c;
  c.device = device;
  c.stream = 7;
  c.start_ns = start;
  c.end_ns = end;
  c.bytes = 1 << 20;
  c.kind = CopyKind::kHostToDevice;
  c.pageable = pageable;
  return c;
}

// By value: callers pass a temporary summary().
DeviceTimeStats dev0(const TimelineSummary& s) {
  REQUIRE(!s.devices.empty());
  return s.devices.front();
}

// By value: callers pass the temporary triage_timeline() returns.
CheckResult check(const std::vector<CheckResult>& all, std::string_view id) {
  auto it =
      std::find_if(all.begin(), all.end(), [&](const CheckResult& c) { return c.rule_id == id; });
  REQUIRE(it != all.end());
  return *it;
}

bool has_evidence(const CheckResult& c, std::string_view name) {
  return std::any_of(c.evidence.begin(), c.evidence.end(),
                     [&](const Evidence& e) { return e.metric == name; });
}

double evidence(const CheckResult& c, std::string_view name) {
  for (const Evidence& e : c.evidence) {
    if (e.metric == name) return e.value;
  }
  FAIL("no evidence " << name);
  return 0;
}

bool has_threshold(const CheckResult& c, std::string_view name) {
  return std::any_of(c.thresholds.begin(), c.thresholds.end(),
                     [&](const ThresholdUse& t) { return t.name == name; });
}

// The value a check read for threshold `name` (NaN when it read none).
double threshold_value(const CheckResult& c, std::string_view name) {
  for (const ThresholdUse& t : c.thresholds) {
    if (t.name == name) return t.value;
  }
  return std::nan("");
}

// Every device number two summaries of the same spans must agree on.
void require_same_devices(const TimelineSummary& a, const TimelineSummary& b) {
  REQUIRE(a.devices.size() == b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const DeviceTimeStats& x = a.devices[i];
    const DeviceTimeStats& y = b.devices[i];
    CHECK(x.first_start_ns == y.first_start_ns);
    CHECK(x.last_end_ns == y.last_end_ns);
    CHECK(x.busy_ns == y.busy_ns);
    CHECK(x.kernel_busy_ns == y.kernel_busy_ns);
    CHECK(x.copy_busy_ns == y.copy_busy_ns);
    CHECK(x.copy_only_ns == y.copy_only_ns);
    CHECK(x.gaps == y.gaps);
    CHECK(x.gap_ns == y.gap_ns);
    REQUIRE(x.largest_gaps.size() == y.largest_gaps.size());
    for (size_t g = 0; g < x.largest_gaps.size(); ++g) {
      CHECK(x.largest_gaps[g].start_ns == y.largest_gaps[g].start_ns);
      CHECK(x.largest_gaps[g].end_ns == y.largest_gaps[g].end_ns);
    }
    CHECK(x.launch_bound_stretches == y.launch_bound_stretches);
    REQUIRE(x.launch_bound.size() == y.launch_bound.size());
    for (size_t s = 0; s < x.launch_bound.size(); ++s) {
      CHECK(x.launch_bound[s].start_ns == y.launch_bound[s].start_ns);
      CHECK(x.launch_bound[s].kernels == y.launch_bound[s].kernels);
      CHECK(x.launch_bound[s].busy_ns == y.launch_bound[s].busy_ns);
    }
  }
}

// A launch-bound pattern: `n` kernels of `len` ns, one every `period` ns, from `t0`.
void add_train(TimelineAccumulator& acc, uint64_t family, uint64_t t0, int n, uint64_t len,
               uint64_t period, uint32_t stream = 1) {
  for (int i = 0; i < n; ++i) {
    const uint64_t s = t0 + static_cast<uint64_t>(i) * period;
    acc.add_kernel(kernel(family, s, s + len, stream));
  }
}

}  // namespace

TEST_CASE("timeline: busy time is the union of overlapping kernels, not their sum", "[timeline]") {
  TimelineAccumulator acc;
  // Two streams: 0-100 and 200-300 on one, 50-150 and 250-400 on the other.
  acc.add_kernel(kernel(1, 0, 100, 1));
  acc.add_kernel(kernel(2, 50, 150, 2));
  acc.add_kernel(kernel(1, 200, 300, 1));
  acc.add_kernel(kernel(2, 250, 400, 2));
  const TimelineSummary s = acc.summary();
  const DeviceTimeStats d = dev0(s);
  CHECK(s.total_kernel_ns == 450);  // the naive sum
  CHECK(d.kernel_busy_ns == 350);   // [0,150) + [200,400)
  CHECK(d.busy_ns == 350);
  CHECK(d.span_ns() == 400);
  CHECK(d.idle_ns() == 50);
  CHECK(d.kernels == 4);
  CHECK(s.kernel_executions == 4);
  CHECK(acc.total_kernel_ns() == 450);
}

TEST_CASE("timeline: idle gaps longer than min_gap_ns are counted, the longest kept",
          "[timeline]") {
  TimelineOptions o;
  o.keep_gaps = 3;
  TimelineAccumulator acc(o);
  // Gaps of 10, 0 (touching), 0.001 (too short), 30, 20 and 40 us.
  const std::vector<std::pair<uint64_t, uint64_t>> spans = {
      {0, 10 * kUs},        {20 * kUs, 30 * kUs},   {30 * kUs, 40 * kUs},  {40 * kUs + 1, 50 * kUs},
      {80 * kUs, 90 * kUs}, {110 * kUs, 120 * kUs}, {160 * kUs, 170 * kUs}};
  for (const auto& [b, e] : spans) acc.add_kernel(kernel(1, b, e));
  const DeviceTimeStats d = dev0(acc.summary());
  CHECK(d.gaps == 4);
  CHECK(d.gap_ns == (10 + 30 + 20 + 40) * kUs);
  CHECK(d.idle_ns() == d.gap_ns + 1);  // the 1 ns interval is idle, not a gap
  REQUIRE(d.largest_gaps.size() == 3);
  CHECK(d.largest_gaps[0].start_ns == 120 * kUs);
  CHECK(d.largest_gaps[0].end_ns == 160 * kUs);
  CHECK(d.largest_gaps[1].start_ns == 50 * kUs);
  CHECK(d.largest_gaps[2].start_ns == 90 * kUs);
}

TEST_CASE("timeline: time across a pause of the trace is untraced, neither idle nor a gap", "[timeline]") {
  // Synthetic: kernels of 10 us every 20 us, the trace paused from 100 us to 1100 us (a
  // duty-cycled trace), then the same again; the folding window is short so the gap across the
  // pause is closed while the accumulator runs, and again in summary().
  TimelineOptions o;
  o.window_ns = 50 * kUs;
  TimelineAccumulator acc(o);
  for (uint64_t t = 0; t < 100 * kUs; t += 20 * kUs) acc.add_kernel(kernel(1, t, t + 10 * kUs));
  acc.add_untraced(95 * kUs, 1100 * kUs);
  for (uint64_t t = 1100 * kUs; t < 1300 * kUs; t += 20 * kUs) acc.add_kernel(kernel(1, t, t + 10 * kUs));
  const DeviceTimeStats d = dev0(acc.summary());
  // [90, 1100) holds the pause: untraced. The other gaps are the 10 us ones between kernels.
  CHECK(d.untraced_ns == 1010 * kUs);
  CHECK(d.gaps == 4 + 9);
  CHECK(d.gap_ns == kUs * 10 * (4 + 9));
  REQUIRE_FALSE(d.largest_gaps.empty());
  CHECK(d.largest_gaps[0].end_ns - d.largest_gaps[0].start_ns == 10 * kUs);
  CHECK(d.span_ns() == 1290 * kUs);
  CHECK(d.traced_span_ns() == 280 * kUs);
  CHECK(d.busy_ns == 150 * kUs);
  CHECK(d.idle_ns() == 130 * kUs);
  // A gap that touches no pause stays idle; pauses out of order are ignored.
  acc.add_untraced(0, 10 * kUs);
  CHECK(dev0(acc.summary()).untraced_ns == 1010 * kUs);
}

TEST_CASE("timeline: a kernel cut by a pause is busy until it, but has no duration of its own", "[timeline]") {
  // Synthetic: family 1 runs 10 us kernels; family 2 has one of 5 us and one that was running when
  // the trace paused at 500 us (its end clipped there by the agent, 400 us after its start).
  TimelineAccumulator acc;
  for (uint64_t t = 0; t < 100 * kUs; t += 20 * kUs) acc.add_kernel(kernel(1, t, t + 10 * kUs));
  acc.add_kernel(kernel(2, 100 * kUs, 105 * kUs));
  KernelSpan cut = kernel(2, 100 * kUs, 500 * kUs, /*stream=*/2);
  cut.cut_by_pause = true;
  acc.add_kernel(cut);
  const TimelineSummary s = acc.summary();
  const FamilyTimeStats* f2 = s.family(2);
  REQUIRE(f2 != nullptr);
  CHECK(f2->launches == 2);                  // counted
  CHECK(f2->total_ns == Approx(5.0 * kUs));  // but only the whole kernel's time
  CHECK(f2->mean_ns() == Approx(5.0 * kUs));
  CHECK(s.total_kernel_ns == Approx(55.0 * kUs));
  const DeviceTimeStats d = dev0(s);
  CHECK(d.busy_ns == 50 * kUs + 400 * kUs);  // busy until the pause
  CHECK(d.span_ns() == 500 * kUs);
  // It marks no concurrency: family 2's other kernel overlaps it but ran alone.
  CHECK(f2->concurrent_launches == 0);
}

TEST_CASE("timeline: copies under a kernel overlap, copies alone are serialized", "[timeline]") {
  TimelineAccumulator acc;
  acc.add_kernel(kernel(1, 0, 100));
  acc.add_copy(copy(50, 150));                      // 50 under the kernel, 50 alone
  acc.add_copy(copy(200, 260, /*pageable=*/true));  // alone
  const TimelineSummary s = acc.summary();
  const DeviceTimeStats d = dev0(s);
  CHECK(d.copy_busy_ns == 160);
  CHECK(d.copy_only_ns == 110);
  CHECK(d.copy_overlapped_ns == 50);
  CHECK(d.pageable_copy_ns == 60);
  CHECK(d.busy_ns == 210);
  CHECK(d.kernel_busy_ns == 100);
  CHECK(d.copies == 2);
  CHECK(s.copy_executions == 2);
  CHECK(to_string(CopyKind::kDeviceToHost) == "DtoH");
}

TEST_CASE("timeline: concurrency marks both sides once, whatever the arrival order", "[timeline]") {
  TimelineAccumulator acc;
  acc.add_kernel(kernel(1, 0, 100, 1));
  acc.add_kernel(kernel(2, 50, 60, 2));    // overlaps family 1
  acc.add_kernel(kernel(3, 70, 80, 3));    // overlaps family 1 again: counted once for 1
  acc.add_kernel(kernel(4, 200, 300, 1));  // alone
  acc.add_kernel(kernel(5, 100, 200, 2));  // touches 1 and 4 without overlapping
  // A late partner: family 6 arrives first, family 7 (earlier start) afterwards.
  acc.add_kernel(kernel(6, 1000, 2000, 1));
  acc.add_kernel(kernel(7, 500, 1500, 2));
  REQUIRE(acc.family(1) != nullptr);
  CHECK(acc.family(1)->concurrent_launches == 1);
  CHECK(acc.family(2)->concurrent_launches == 1);
  CHECK(acc.family(3)->concurrent_launches == 1);
  CHECK(acc.family(4)->concurrent_launches == 0);
  CHECK(acc.family(5)->concurrent_launches == 0);
  CHECK(acc.family(6)->concurrent_launches == 1);
  CHECK(acc.family(7)->concurrent_launches == 1);
  CHECK(acc.family(99) == nullptr);

  // Another device never counts.
  acc.add_kernel(kernel(8, 1200, 1300, 1, /*device=*/1));
  CHECK(acc.family(8)->concurrent_launches == 0);

  KernelInput in;
  fill_timeline_inputs(acc.summary(), 4, in);
  REQUIRE(in.ran_concurrently.has_value());
  CHECK_FALSE(*in.ran_concurrently);
  fill_timeline_inputs(acc.summary(), 7, in);
  CHECK(*in.ran_concurrently);
}

TEST_CASE("timeline: short kernels beside a long one are all found concurrent", "[timeline]") {
  TimelineAccumulator acc;
  acc.add_kernel(kernel(1, 0, 500 * kMs, 1));  // a long, persistent-style kernel
  add_train(acc, 2, 10 * kMs, 1000, 5 * kUs, 100 * kUs, 2);
  acc.add_kernel(kernel(3, 600 * kMs, 601 * kMs, 2));  // after it: alone
  CHECK(acc.family(1)->concurrent_launches == 1);
  CHECK(acc.family(2)->concurrent_launches == 1000);
  CHECK(acc.family(3)->concurrent_launches == 0);
}

TEST_CASE("timeline: out-of-order arrival within the window gives the in-order numbers",
          "[timeline]") {
  std::vector<KernelSpan> spans;
  std::vector<CopySpan> copies;
  std::mt19937_64 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible
  uint64_t t = 0;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t len = 1 * kUs + rng() % (30 * kUs);
    const uint64_t gap = rng() % 4 == 0 ? rng() % (200 * kUs) : rng() % (3 * kUs);
    spans.push_back(kernel(static_cast<uint64_t>(i % 5), t, t + len, static_cast<uint32_t>(i % 3)));
    if (i % 50 == 0) copies.push_back(copy(t + len / 2, t + len + 20 * kUs));
    t += len / (1 + i % 3) + gap;
  }
  TimelineAccumulator in_order;
  for (const KernelSpan& k : spans) in_order.add_kernel(k);
  for (const CopySpan& c : copies) in_order.add_copy(c);

  // Shuffle in blocks of 64 records, as per-context buffers would reorder them; the window (2 s)
  // is far larger than the ~0.2 s the whole trace spans.
  std::vector<KernelSpan> shuffled = spans;
  for (size_t b = 0; b < shuffled.size(); b += 64) {
    std::shuffle(shuffled.begin() + static_cast<long>(b),
                 shuffled.begin() + static_cast<long>(std::min(b + 64, shuffled.size())), rng);
  }
  TimelineAccumulator out_of_order;
  for (const CopySpan& c : copies) out_of_order.add_copy(c);
  for (const KernelSpan& k : shuffled) out_of_order.add_kernel(k);

  // And in no order at all.
  std::vector<KernelSpan> random = spans;
  std::shuffle(random.begin(), random.end(), rng);
  TimelineAccumulator any_order;
  for (const KernelSpan& k : random) any_order.add_kernel(k);
  for (const CopySpan& c : copies) any_order.add_copy(c);

  const TimelineSummary a = in_order.summary();
  for (const TimelineAccumulator* other : {&out_of_order, &any_order}) {
    const TimelineSummary b = other->summary();
    require_same_devices(a, b);
    CHECK(b.late_records == 0);
    for (uint64_t f = 0; f < 5; ++f) {
      CHECK(in_order.family(f)->concurrent_launches == other->family(f)->concurrent_launches);
      CHECK(in_order.family(f)->total_ns == other->family(f)->total_ns);
    }
  }
  CHECK(dev0(a).gaps > 10);
  CHECK(dev0(a).copy_only_ns > 0);
}

TEST_CASE("timeline: a whole buffer arriving behind newer ones gives the in-order numbers",
          "[timeline]") {
  // Two "contexts" on one device, each delivering its records in order, one buffer after the other:
  // every record of the second lands far behind the newest one seen.
  std::vector<KernelSpan> first;
  std::vector<KernelSpan> second;
  uint64_t t = 0;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t len = (i % 7 == 0 ? 30 : 4) * kUs;
    (i % 2 == 0 ? first : second)
        .push_back(kernel(static_cast<uint64_t>(i % 2), t, t + len, 1 + (i % 2)));
    t += i % 3 == 0 ? len / 2 : len + (i % 11 == 0 ? 50 * kUs : 2 * kUs);
  }
  TimelineAccumulator in_order;
  std::vector<KernelSpan> all = first;
  all.insert(all.end(), second.begin(), second.end());
  std::sort(all.begin(), all.end(),
            [](const KernelSpan& a, const KernelSpan& b) { return a.start_ns < b.start_ns; });
  for (const KernelSpan& k : all) in_order.add_kernel(k);
  TimelineAccumulator buffered;
  for (const KernelSpan& k : first) buffered.add_kernel(k);
  for (const KernelSpan& k : second) buffered.add_kernel(k);
  require_same_devices(in_order.summary(), buffered.summary());
  CHECK(buffered.summary().late_records == 0);
  CHECK(in_order.family(0)->concurrent_launches == buffered.family(0)->concurrent_launches);
  CHECK(in_order.family(1)->concurrent_launches == buffered.family(1)->concurrent_launches);
  CHECK(buffered.family(0)->concurrent_launches > 0);
}

TEST_CASE("timeline: folding beyond the window keeps exact totals for ordered data", "[timeline]") {
  TimelineOptions small;
  small.window_ns = 50 * kUs;  // a few kernels at a time
  small.stretch_min_kernels = 20;
  TimelineAccumulator folded(small);
  TimelineOptions big = small;
  big.window_ns = 1'000'000 * kMs;
  TimelineAccumulator whole(big);

  std::mt19937_64 rng(11);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible
  uint64_t t = 0;
  uint64_t sum = 0;
  for (int i = 0; i < 5000; ++i) {
    const uint64_t len = 2 * kUs + rng() % (8 * kUs);
    const uint64_t gap = rng() % 3 == 0 ? 6 * kUs + rng() % (100 * kUs) : rng() % (4 * kUs);
    const KernelSpan k = kernel(static_cast<uint64_t>(i % 4), t, t + len);
    folded.add_kernel(k);
    whole.add_kernel(k);
    if (i % 100 == 0) {
      const CopySpan c = copy(t + len + 1, t + len + 2 + rng() % kUs);
      folded.add_copy(c);
      whole.add_copy(c);
    }
    sum += len;
    t += len + gap;
  }
  const TimelineSummary a = folded.summary();
  const TimelineSummary b = whole.summary();
  require_same_devices(a, b);
  CHECK(a.total_kernel_ns == static_cast<double>(sum));
  CHECK(dev0(a).kernel_busy_ns == static_cast<double>(sum));
  CHECK(dev0(a).gaps > 100);
  CHECK(dev0(a).launch_bound_stretches > 0);
  CHECK(a.late_records == 0);

  // A record older than the window: counted in its family and as busy, flagged late.
  folded.add_kernel(kernel(9, 10 * kUs, 12 * kUs));
  const TimelineSummary c = folded.summary();
  CHECK(c.late_records == 1);
  CHECK(dev0(c).late_records == 1);
  CHECK(dev0(c).busy_ns == dev0(a).busy_ns + 2 * kUs);  // approximated as busy
  CHECK(dev0(c).gaps == dev0(a).gaps);                  // never as a gap
  CHECK(folded.family(9)->launches == 1);
}

TEST_CASE("timeline: replayed launches are counted but left out of durations", "[timeline]") {
  TimelineAccumulator acc;
  KernelSpan k = kernel(1, 0, 100);
  acc.add_kernel(k);
  k.start_ns = 1000 * kUs;
  k.end_ns = 1001 * kUs;  // the profiled launch: long gaps on both sides, and slow
  k.replayed = true;
  acc.add_kernel(k);
  k = kernel(1, 2000 * kUs, 2000 * kUs + 300);
  k.from_graph = true;
  k.grid = Dim3{64, 1, 1};
  acc.add_kernel(k);
  acc.add_kernel(kernel(2, 2001 * kUs, 2001 * kUs + 50));  // no gap over 5 us after the last one

  const FamilyTimeStats* f = acc.family(1);
  REQUIRE(f != nullptr);
  CHECK(f->launches == 3);
  CHECK(f->replayed_launches == 1);
  CHECK(f->graph_launches == 1);
  CHECK(f->total_ns == 400);
  CHECK(f->durations.count() == 2);
  CHECK(f->mean_ns() == 200);
  CHECK(f->recent.size() == 2);
  CHECK(f->recent_durations(Dim3{64, 1, 1}) == std::vector<double>{300});
  CHECK(f->recent_durations(Dim3{7, 1, 1}).size() == 2);  // none match: all of them
  CHECK(f->recent_durations(std::nullopt).size() == 2);
  CHECK(acc.total_kernel_ns() == 450);

  // The profiler's idle time next to the replayed launch is not an application gap.
  const DeviceTimeStats d = dev0(acc.summary());
  CHECK(d.gaps == 0);
  CHECK(d.profiler_idle_ns > 1900 * kUs);
  CHECK(d.busy_ns == 100 + 1000 + 300 + 50);  // the replayed launch is busy time

  // Only profiled launches: concurrency unknown.
  TimelineAccumulator only;
  k = kernel(5, 0, 10);
  k.replayed = true;
  only.add_kernel(k);
  KernelInput in;
  fill_timeline_inputs(only.summary(), 5, in);
  CHECK_FALSE(in.ran_concurrently.has_value());
}

TEST_CASE("timeline: records without timestamps count as launches only", "[timeline]") {
  TimelineAccumulator acc;
  acc.add_kernel(kernel(1, 5 * kMs, 6 * kMs));
  acc.add_kernel(kernel(1, 0, 0));              // CUPTI: timestamps not collected
  acc.add_kernel(kernel(2, 9 * kMs, 8 * kMs));  // end before start
  acc.add_copy(copy(0, 0));
  acc.add_copy(copy(7 * kMs, 6 * kMs));
  const TimelineSummary s = acc.summary();
  CHECK(s.kernel_executions == 3);
  CHECK(s.copy_executions == 2);
  CHECK(acc.family(1)->launches == 2);
  CHECK(acc.family(1)->durations.count() == 1);
  CHECK(acc.family(2)->launches == 1);
  CHECK(acc.family(2)->total_ns == 0);
  const DeviceTimeStats d = dev0(s);
  CHECK(d.first_start_ns == 5 * kMs);
  CHECK(d.last_end_ns == 6 * kMs);
  CHECK(d.busy_ns == 1 * kMs);
  CHECK(d.kernels == 3);
  CHECK(d.copies == 2);
  CHECK(d.copy_busy_ns == 0);
}

TEST_CASE("timeline: the recent ring keeps the newest kRecent durations, newest last",
          "[timeline]") {
  TimelineAccumulator acc;
  for (uint64_t i = 0; i < 100; ++i) acc.add_kernel(kernel(1, i * 1000, i * 1000 + 10 + i));
  const FamilyTimeStats* f = acc.family(1);
  REQUIRE(f->recent.size() == FamilyTimeStats::kRecent);
  CHECK(f->recent.back().second == 10 + 99);
  CHECK(f->recent.front().second == 10 + 100 - FamilyTimeStats::kRecent);
}

TEST_CASE("timeline: ranking by total time, ties by id", "[timeline]") {
  TimelineAccumulator acc;
  acc.add_kernel(kernel(30, 0, 100));
  acc.add_kernel(kernel(10, 200, 300));
  acc.add_kernel(kernel(20, 400, 500));
  acc.add_kernel(kernel(40, 600, 1000));
  acc.add_kernel(kernel(0, 1100, 1150));
  CHECK(acc.ranking() == std::vector<uint64_t>{40, 10, 20, 30, 0});
  const TimelineSummary s = acc.summary();
  REQUIRE(s.families.size() == 5);
  CHECK(s.families[0].family == 40);
  CHECK(s.families[1].family == 10);
  CHECK(s.families[3].family == 30);
  CHECK(s.time_share(s.families[0]) == Approx(400.0 / 750.0));
  CHECK(s.amdahl_ceiling(s.families[0]) == Approx(1.0 / (1.0 - 400.0 / 750.0)));
  CHECK(s.family(20) != nullptr);
  CHECK(s.family(21) == nullptr);
  CHECK(s.device(0) != nullptr);
  CHECK(s.device(1) == nullptr);

  TimelineAccumulator one;
  one.add_kernel(kernel(1, 0, 100));
  const TimelineSummary o = one.summary();
  CHECK(o.amdahl_ceiling(o.families[0]) == 0);  // the only family: no finite ceiling
}

TEST_CASE("timeline: duration sketch quantiles within 1% of the exact ones", "[timeline]") {
  DurationSketch empty;
  CHECK(empty.count() == 0);
  CHECK(empty.quantile(0.5) == 0);

  std::mt19937_64 rng(42);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible
  std::lognormal_distribution<double> dist(std::log(20'000.0), 1.5);  // ~20 us, wide spread
  std::vector<double> values;
  DurationSketch sketch;
  for (int i = 0; i < 100'000; ++i) {
    const double v = std::round(dist(rng));
    values.push_back(v);
    sketch.add(v);
  }
  std::sort(values.begin(), values.end());
  CHECK(sketch.count() == values.size());
  CHECK(sketch.min() == values.front());
  CHECK(sketch.max() == values.back());
  CHECK(sketch.quantile(0) == values.front());
  CHECK(sketch.quantile(1) == values.back());
  for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999}) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
    const double exact = values[std::max<size_t>(rank, 1) - 1];
    INFO("q = " << q);
    CHECK(std::fabs(sketch.quantile(q) - exact) <= 0.01 * exact);
  }
  // Values outside the buckets' range: exact ends, no crash.
  DurationSketch odd;
  odd.add(0);
  odd.add(0.25);
  odd.add(1e16);
  odd.add(-5);
  odd.add(std::nan(""));
  CHECK(odd.count() == 4);
  CHECK(odd.min() == 0);
  CHECK(odd.max() == 1e16);
  CHECK(odd.quantile(0.99) == 1e16);
}

TEST_CASE("timeline: launch-bound stretches found and not found", "[timeline]") {
  SECTION("short kernels with the GPU busy a third of the time") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 100, 5 * kUs, 15 * kUs);
    const DeviceTimeStats d = dev0(acc.summary());
    REQUIRE(d.launch_bound.size() == 1);
    CHECK(d.launch_bound_stretches == 1);
    const LaunchBoundStretch& s = d.launch_bound[0];
    CHECK(s.kernels == 100);
    CHECK(s.start_ns == 0);
    CHECK(s.end_ns == 99 * (15 * kUs) + 5 * kUs);
    CHECK(s.busy_ns == 100 * (5 * kUs));
    CHECK(s.mean_kernel_ns == 5 * kUs);
    CHECK(d.launch_bound_busy_ns == 100 * (5 * kUs));
  }
  SECTION("two trains separated by a long wait are two stretches, longest first") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 60, 5 * kUs, 15 * kUs);
    add_train(acc, 1, 100 * kMs, 80, 5 * kUs, 15 * kUs);
    const DeviceTimeStats d = dev0(acc.summary());
    REQUIRE(d.launch_bound.size() == 2);
    CHECK(d.launch_bound[0].kernels == 80);
    CHECK(d.launch_bound[1].kernels == 60);
  }
  SECTION("back-to-back short kernels keep the GPU busy: none") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 200, 5 * kUs, 6 * kUs);
    CHECK(dev0(acc.summary()).launch_bound.empty());
  }
  SECTION("long kernels with gaps: none") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 100, 50 * kUs, 150 * kUs);
    CHECK(dev0(acc.summary()).launch_bound.empty());
  }
  SECTION("too few kernels: none") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 40, 5 * kUs, 15 * kUs);
    CHECK(dev0(acc.summary()).launch_bound_stretches == 0);
  }
  SECTION("a long kernel in the middle splits the run") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 40, 5 * kUs, 15 * kUs);
    acc.add_kernel(kernel(2, 600 * kUs, 700 * kUs));
    add_train(acc, 1, 710 * kUs, 40, 5 * kUs, 15 * kUs);
    CHECK(dev0(acc.summary()).launch_bound_stretches == 0);
  }
}

TEST_CASE("timeline: summary() leaves the accumulator as it was", "[timeline]") {
  TimelineOptions o;
  o.window_ns = 200 * kUs;
  TimelineAccumulator probed(o);
  TimelineAccumulator plain(o);
  for (int i = 0; i < 300; ++i) {
    const uint64_t s = static_cast<uint64_t>(i) * 15 * kUs;
    probed.add_kernel(kernel(1, s, s + 5 * kUs));
    plain.add_kernel(kernel(1, s, s + 5 * kUs));
    if (i % 37 == 0) {
      const TimelineSummary a = probed.summary();
      const TimelineSummary b = probed.summary();
      require_same_devices(a, b);
    }
  }
  require_same_devices(probed.summary(), plain.summary());

  // Movable: the moved-to accumulator carries on.
  TimelineAccumulator moved = std::move(probed);
  CHECK(moved.family(1)->launches == 300);
}

// ---- session checks ---------------------------------------------------------------------------

TEST_CASE("session.d2a.idle_gaps fired, not fired, not evaluated", "[timeline]") {
  SECTION("fired: half of the trace idle, one gap dominates") {
    TimelineAccumulator acc;
    acc.add_kernel(kernel(1, 0, 10 * kMs));
    acc.add_kernel(kernel(1, 20 * kMs, 30 * kMs));
    const auto all = triage_timeline(acc.summary());
    const CheckResult c = check(all, "session.d2a.idle_gaps");
    CHECK(c.decision == Decision::kD2ADispatch);
    REQUIRE(c.outcome == Outcome::kFired);
    REQUIRE(c.finding.has_value());
    CHECK(c.finding->limiter == Limiter::kDispatchGaps);
    CHECK(evidence(c, "cutriage__device_idle_pct") == Approx(100.0 / 3));
    CHECK(evidence(c, "cutriage__device_idle_ns") == 10 * kMs);
    CHECK(evidence(c, "cutriage__idle_gaps") == 1);
    CHECK(evidence(c, "cutriage__largest_idle_gap_ns") == 10 * kMs);
    CHECK(has_threshold(c, "session.d2a.idle_gaps.max_idle_pct"));
    REQUIRE(c.finding->estimated_speedup.has_value());
    CHECK(*c.finding->estimated_speedup == Approx(1.5));  // span 30 / busy 20
    CHECK(c.finding->next_action.find("longest gap") != std::string::npos);
    CHECK(c.finding->summary.find("33.3%") != std::string::npos);

    Thresholds lenient;
    lenient.set("session.d2a.idle_gaps.max_idle_pct", 50);
    CHECK(check(triage_timeline(acc.summary(), lenient), "session.d2a.idle_gaps").outcome ==
          Outcome::kNotFired);
    // Through a thresholds file's text, as CUTRIAGE_THRESHOLDS and --thresholds give it.
    Thresholds from_text;
    REQUIRE_FALSE(from_text.parse("session.d2a.idle_gaps.max_idle_pct = 40\n").has_value());
    const CheckResult overridden = check(triage_timeline(acc.summary(), from_text), "session.d2a.idle_gaps");
    CHECK(overridden.outcome == Outcome::kNotFired);
    CHECK(threshold_value(overridden, "session.d2a.idle_gaps.max_idle_pct") == 40.0);
  }
  SECTION("not fired: busy back to back") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 100, 10 * kUs, 10 * kUs + 100);
    const CheckResult c = check(triage_timeline(acc.summary()), "session.d2a.idle_gaps");
    CHECK(c.outcome == Outcome::kNotFired);
    CHECK(evidence(c, "cutriage__device_idle_pct") < 2);
  }
  SECTION("idle next to profiled launches is the profiler's") {
    TimelineAccumulator acc;
    acc.add_kernel(kernel(1, 0, 10 * kMs));
    KernelSpan k = kernel(1, 20 * kMs, 21 * kMs);
    k.replayed = true;
    acc.add_kernel(k);
    acc.add_kernel(kernel(1, 30 * kMs, 40 * kMs));
    const CheckResult c = check(triage_timeline(acc.summary()), "session.d2a.idle_gaps");
    CHECK(c.outcome == Outcome::kNotFired);
    CHECK(evidence(c, "cutriage__profiler_idle_ns") == 19 * kMs);
  }
  SECTION("not evaluated: nothing traced") {
    const auto all = triage_timeline(TimelineSummary{});
    REQUIRE(all.size() == 5);
    for (const CheckResult& c : all) {
      INFO(c.rule_id);
      CHECK(c.outcome == Outcome::kNotEvaluated);
      CHECK_FALSE(c.reason.empty());
      // Each check's title, decision and thresholds come from session_checks(), where the
      // thresholds parser finds them: a threshold read but missing there would be NaN.
      const SessionCheckDef* def = find_session_check(c.rule_id);
      REQUIRE(def != nullptr);
      CHECK(c.title == def->title);
      CHECK(c.decision == def->decision);
      for (const ThresholdUse& t : c.thresholds) {
        INFO(t.name);
        CHECK(std::isfinite(t.value));
      }
    }
  }
}

TEST_CASE("session.d2a.launch_bound fired, not fired, not evaluated", "[timeline]") {
  SECTION("fired") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 200, 5 * kUs, 20 * kUs);
    const CheckResult c = check(triage_timeline(acc.summary()), "session.d2a.launch_bound");
    REQUIRE(c.outcome == Outcome::kFired);
    CHECK(c.finding->limiter == Limiter::kDispatchGaps);
    CHECK(evidence(c, "cutriage__launch_bound_stretches") == 1);
    CHECK(evidence(c, "cutriage__longest_stretch_kernels") == 200);
    CHECK(evidence(c, "cutriage__launch_bound_idle_pct") > 70);
    CHECK(has_threshold(c, "session.d2a.launch_bound.min_stretch_idle_pct"));
    CHECK(has_threshold(c, "session.d2a.launch_bound.stretch_min_kernels"));
    REQUIRE(c.finding->estimated_speedup.has_value());
    CHECK(*c.finding->estimated_speedup > 3.5);  // ~3995 us of span, 1000 us of kernels
    CHECK(c.finding->next_action.find("CUDA graph") != std::string::npos);
  }
  SECTION("not fired: enough kernels, GPU kept busy") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 200, 5 * kUs, 6 * kUs);
    CHECK(check(triage_timeline(acc.summary()), "session.d2a.launch_bound").outcome ==
          Outcome::kNotFired);
  }
  SECTION("not fired: a stretch whose idle time is a sliver of a long run") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 60, 5 * kUs, 15 * kUs);              // ~600 us idle
    acc.add_kernel(kernel(2, 2 * kMs, 2 * kMs + 500 * kMs));  // then half a second of compute
    const CheckResult c = check(triage_timeline(acc.summary()), "session.d2a.launch_bound");
    CHECK(c.outcome == Outcome::kNotFired);
    CHECK(evidence(c, "cutriage__launch_bound_stretches") == 1);
  }
  SECTION("not evaluated: too few kernels") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 10, 5 * kUs, 20 * kUs);
    const CheckResult c = check(triage_timeline(acc.summary()), "session.d2a.launch_bound");
    CHECK(c.outcome == Outcome::kNotEvaluated);
    CHECK(c.reason.find("fewer than") != std::string::npos);
  }
}

TEST_CASE("session.d2a.serialized_copies and pageable_copies", "[timeline]") {
  SECTION("fired: copies between kernels, pageable") {
    TimelineAccumulator acc;
    for (uint64_t i = 0; i < 10; ++i) {
      acc.add_copy(copy(i * 10 * kMs, i * 10 * kMs + 4 * kMs, /*pageable=*/true));
      acc.add_kernel(kernel(1, i * 10 * kMs + 4 * kMs, i * 10 * kMs + 10 * kMs));
    }
    const auto all = triage_timeline(acc.summary());
    const CheckResult s = check(all, "session.d2a.serialized_copies");
    REQUIRE(s.outcome == Outcome::kFired);
    CHECK(s.finding->limiter == Limiter::kSerializedCopyCompute);
    CHECK(evidence(s, "cutriage__copy_compute_overlap_pct") == 0);
    CHECK(evidence(s, "cutriage__copy_time_pct") == Approx(40));
    CHECK(evidence(s, "cutriage__copy_only_ns") == 40 * kMs);
    REQUIRE(s.finding->estimated_speedup.has_value());
    CHECK(*s.finding->estimated_speedup == Approx(100.0 / 60.0));  // span / kernel busy
    CHECK(has_threshold(s, "session.d2a.serialized_copies.min_overlap_pct"));
    const CheckResult p = check(all, "session.d2a.pageable_copies");
    REQUIRE(p.outcome == Outcome::kFired);
    CHECK(evidence(p, "cutriage__pageable_copy_time_pct") == Approx(40));
    CHECK(p.finding->next_action.find("Pin") != std::string::npos);
  }
  SECTION("not fired: copies under kernels, pinned") {
    TimelineAccumulator acc;
    for (uint64_t i = 0; i < 10; ++i) {
      acc.add_kernel(kernel(1, i * 10 * kMs, i * 10 * kMs + 10 * kMs));
      acc.add_copy(copy(i * 10 * kMs + 1 * kMs, i * 10 * kMs + 5 * kMs));
    }
    const auto all = triage_timeline(acc.summary());
    CHECK(check(all, "session.d2a.serialized_copies").outcome == Outcome::kNotFired);
    CHECK(check(all, "session.d2a.pageable_copies").outcome == Outcome::kNotFired);
  }
  SECTION("not fired: serialized but negligible copying") {
    TimelineAccumulator acc;
    acc.add_copy(copy(0, 1 * kMs));
    acc.add_kernel(kernel(1, 1 * kMs, 100 * kMs));
    const CheckResult c = check(triage_timeline(acc.summary()), "session.d2a.serialized_copies");
    CHECK(c.outcome == Outcome::kNotFired);
    CHECK(c.reason.find("too little") != std::string::npos);
  }
  SECTION("not evaluated: no copies; copies without kernels") {
    TimelineAccumulator acc;
    acc.add_kernel(kernel(1, 0, 100));
    auto all = triage_timeline(acc.summary());
    CHECK(check(all, "session.d2a.serialized_copies").outcome == Outcome::kNotEvaluated);
    CHECK(check(all, "session.d2a.serialized_copies").reason == "no copies traced");
    CHECK(check(all, "session.d2a.pageable_copies").outcome == Outcome::kNotEvaluated);
    TimelineAccumulator only_copies;
    only_copies.add_copy(copy(0, 100));
    all = triage_timeline(only_copies.summary());
    CHECK(check(all, "session.d2a.serialized_copies").outcome == Outcome::kNotEvaluated);
    CHECK(check(all, "session.d2a.pageable_copies").outcome == Outcome::kNotFired);
  }
}

TEST_CASE("session.d1.isolated_small_kernels fired, not fired, not evaluated", "[timeline]") {
  SECTION("fired: families take turns while the GPU idles") {
    TimelineAccumulator acc;
    for (uint64_t i = 0; i < 20; ++i) {
      acc.add_kernel(kernel(1, i * 1 * kMs, i * 1 * kMs + 300 * kUs, 1));
      acc.add_kernel(kernel(2, i * 1 * kMs + 400 * kUs, i * 1 * kMs + 500 * kUs, 2));
    }
    const auto all = triage_timeline(acc.summary(), Thresholds{},
                                     [](uint64_t id) { return "kernel_" + std::to_string(id); });
    const CheckResult c = check(all, "session.d1.isolated_small_kernels");
    CHECK(c.decision == Decision::kD1WorkloadSize);
    REQUIRE(c.outcome == Outcome::kFired);
    CHECK(c.finding->limiter == Limiter::kIsolatedKernel);
    CHECK(c.finding->detail == "kernel_1");
    CHECK(evidence(c, "cutriage__family") == 1);
    CHECK(evidence(c, "cutriage__family_time_pct") == Approx(75));
    CHECK(evidence(c, "cutriage__isolated_families") == 2);
    CHECK(has_evidence(c, "cutriage__family_grid_blocks"));
    CHECK(c.finding->summary.find("kernel_1") != std::string::npos);
    REQUIRE(c.finding->estimated_speedup.has_value());
    CHECK(*c.finding->estimated_speedup > 1.0);
  }
  SECTION("not fired: the families overlap") {
    TimelineAccumulator acc;
    for (uint64_t i = 0; i < 20; ++i) {
      acc.add_kernel(kernel(1, i * 1 * kMs, i * 1 * kMs + 300 * kUs, 1));
      acc.add_kernel(kernel(2, i * 1 * kMs + 200 * kUs, i * 1 * kMs + 500 * kUs, 2));
    }
    CHECK(check(triage_timeline(acc.summary()), "session.d1.isolated_small_kernels").outcome ==
          Outcome::kNotFired);
  }
  SECTION("not fired: never concurrent, but the GPU is busy") {
    TimelineAccumulator acc;
    add_train(acc, 1, 0, 100, 10 * kUs, 10 * kUs);
    add_train(acc, 2, 1000 * kUs, 100, 10 * kUs, 10 * kUs);
    const CheckResult c =
        check(triage_timeline(acc.summary()), "session.d1.isolated_small_kernels");
    CHECK(c.outcome == Outcome::kNotFired);
    CHECK(c.reason.find("little room") != std::string::npos);
  }
  SECTION("not evaluated: one execution") {
    TimelineAccumulator acc;
    acc.add_kernel(kernel(1, 0, 100));
    CHECK(check(triage_timeline(acc.summary()), "session.d1.isolated_small_kernels").outcome ==
          Outcome::kNotEvaluated);
  }
}

TEST_CASE("fill_timeline_inputs gives the engine the time share and concurrency, never session idle",
          "[timeline]") {
  // Synthetic spans.
  TimelineAccumulator acc;
  acc.add_kernel(kernel(1, 0, 30 * kMs));
  acc.add_copy(copy(20 * kMs, 40 * kMs));  // 10 ms under the kernel, 10 ms alone
  acc.add_kernel(kernel(2, 60 * kMs, 100 * kMs));
  const TimelineSummary s = acc.summary();

  KernelInput in;
  fill_timeline_inputs(s, 2, in);
  REQUIRE(in.time_share.has_value());
  CHECK(*in.time_share == Approx(40.0 / 70.0));
  REQUIRE(in.ran_concurrently.has_value());
  CHECK_FALSE(*in.ran_concurrently);
  // The session is 20% idle, but that is not the kernel's own range: Decision 2A's per-kernel
  // quantities stay unset (the session checks report the idle time instead).
  CHECK(in.metrics.size() == 0);
  const Rule* idle = find_rule("d2a.gpu_idle");
  REQUIRE(idle != nullptr);
  CHECK(run_rule(*idle, in, in.metrics, std::nullopt, Thresholds{}).outcome == Outcome::kNotEvaluated);
  CHECK(check(triage_timeline(s), "session.d2a.idle_gaps").outcome == Outcome::kFired);

  KernelInput unknown;
  fill_timeline_inputs(s, 77, unknown);
  CHECK_FALSE(unknown.time_share.has_value());
  CHECK(unknown.metrics.size() == 0);
}

// Not run by default (machine-dependent): `cutriage_triage_tests "[.perf]"` prints the cost.
TEST_CASE("timeline: add_kernel cost", "[.perf][timeline]") {
  auto measure = [](const char* what, const std::vector<KernelSpan>& spans) {
    TimelineAccumulator acc;
    const auto begin = std::chrono::steady_clock::now();
    for (const KernelSpan& k : spans) acc.add_kernel(k);
    const auto end = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(end - begin).count() /
                      static_cast<double>(spans.size());
    const auto s0 = std::chrono::steady_clock::now();
    const TimelineSummary s = acc.summary();
    const auto s1 = std::chrono::steady_clock::now();
    std::printf(
        "%s: add_kernel %.0f ns per execution over %zu (%.2f s of trace); summary %.1f ms\n", what,
        ns, spans.size(), static_cast<double>(spans.back().end_ns) / 1e9,
        std::chrono::duration<double, std::milli>(s1 - s0).count());
    CHECK(ns < 5000);
    CHECK(s.kernel_executions == spans.size());
  };
  std::mt19937_64 rng(3);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible
  std::vector<KernelSpan> spans;
  uint64_t t = 0;
  for (int i = 0; i < 2'000'000; ++i) {  // four streams, about three kernels at a time
    const uint64_t len = 2 * kUs + rng() % (20 * kUs);
    spans.push_back(kernel(rng() % 200, t, t + len, static_cast<uint32_t>(i % 4)));
    t += len / 3 + rng() % (3 * kUs);
  }
  measure("4 streams", spans);
  spans.clear();
  t = 0;
  for (int i = 0; i < 2'000'000; ++i) {  // one stream, an idle interval after every kernel
    const uint64_t len = 2 * kUs + rng() % (20 * kUs);
    spans.push_back(kernel(rng() % 200, t, t + len));
    t += len + 1 + rng() % (10 * kUs);
  }
  measure("1 stream with gaps", spans);
  // Blocks of 4096 records delivered newest block first within each pair (two contexts' buffers).
  for (size_t b = 0; b + 8192 <= spans.size(); b += 8192) {
    std::rotate(spans.begin() + static_cast<long>(b), spans.begin() + static_cast<long>(b + 4096),
                spans.begin() + static_cast<long>(b + 8192));
  }
  measure("1 stream, blocks swapped", spans);
}

}  // namespace test_timeline
