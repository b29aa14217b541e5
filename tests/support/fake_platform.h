// A fake of the collector Platform for driving the agent without a GPU. Counter values come from a
// real capture (an H200 ncu CSV under tests/data/ncu/zoo) so the agent's triage sees real numbers;
// failures are injected per call. Thread-safe: the concurrency tests launch from many threads.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/triage/plan.h"

namespace cutriage::testing {

using collectors::Result;
using collectors::Status;
using collectors::StatusCode;

// Metric values by kernel mangled name; the fake profiler reads the kernel of the launch in flight.
struct FakeCounters {
  std::map<std::string, triage::MetricSet> by_kernel;
};

struct FakeStats {
  std::atomic<int> begins{0};
  std::atomic<int> ends{0};
  std::atomic<int> overlaps{0};  // begin() on a context whose previous begin() has not ended
  std::atomic<int> plans{0};
  std::atomic<int> evaluates{0};
  std::atomic<int> disables{0};
  // Context whose fake profiler holds the device's counters (enabled), 0 = none. Like the
  // hardware, a begin() on another context while one is enabled fails with "hardware busy".
  std::array<std::atomic<uint64_t>, 8> enabled_context{};  // by device ordinal
  std::mutex mutex;
  std::vector<std::vector<std::string>> planned;  // metric lists, in plan() order
  std::set<std::thread::id> evaluate_threads;     // the threads that called evaluate()
  // PC sampling.
  std::atomic<int> pc_begins{0};
  std::atomic<int> pc_ends{0};
  std::atomic<int> sass_queries{0};
  // Context with PC sampling enabled, by device, 0 = none. Like CUPTI, the range profiler cannot
  // start on a context while it is set, and PC sampling cannot start beside an enabled profiler.
  std::array<std::atomic<uint64_t>, 8> pc_context{};
  std::vector<collectors::PcSamplingOptions> pc_options;  // every begin(), under `mutex`
  std::vector<std::string> pc_kernels;                    // kernel in flight at each begin()
  // Range profiler begin() calls: the plan's replay mode, passes and metrics (under `mutex`).
  std::vector<collectors::PlanReplay> begin_replays;
  std::vector<std::vector<std::string>> begin_metrics;
  // PM sampling: begin()/end() calls, the device's PM-sampling context (0 = none), range-profiler
  // begin() calls while PM sampling ran on the device (the H200 probe: a crash), every begin()'s options.
  std::atomic<int> pm_begins{0};
  std::atomic<int> pm_ends{0};
  std::atomic<int> pm_range_overlaps{0};
  std::array<std::atomic<uint64_t>, 8> pm_context{};
  std::vector<collectors::PmSamplingOptions> pm_options;  // under `mutex`
  // What the agent asked of the platform once per device or chip (DeviceCatalog caches both).
  std::atomic<int> device_info_calls{0};
  std::atomic<int> host_calls{0};
  // RangeProfiler::warm_up() calls that paid (FakeConfig::warm_up).
  std::atomic<int> warm_ups{0};
};

struct FakeConfig {
  Status subscribe_status;
  Status trace_status;               // returned by start_trace
  Status launch_callbacks_status;    // returned by set_launch_callbacks (nothing switched then)
  Status context_wait_status;        // returned by synchronize_context (nothing waited for then)
  // Durations the fake "GPU" gives each kernel's executions (ns), by mangled name; 10 us otherwise.
  std::map<std::string, uint64_t> durations_ns;
  uint64_t gap_ns = 2000;            // idle time between consecutive executions
  // Deliver each launch's execution record right after the launch (CUPTI with an instant flush);
  // otherwise records wait for flush_trace().
  bool deliver_each_launch = true;
  // false: an unforced flush_trace() delivers nothing. CUPTI hands a buffer back only once every
  // record in it is complete, so a script's launches queued back to back come back after them.
  bool deliver_on_flush = true;
  // true: a forced flush_trace() drops the records of kernels still running, as CUPTI's global
  // queue did on the H200 (cupti-facts.md). A kernel counts as running until a synchronize().
  bool forced_flush_loses_running = false;
  Status range_profiler_status;      // returned by make_range_profiler
  Status begin_status;               // returned by every begin()
  int fail_end_on_call = 0;          // 1-based end() call that fails; 0 = none
  int fail_evaluate_on_call = 0;     // 1-based ProfilerHost::evaluate() call that fails; 0 = none
  // Runs on the launching thread while a profiled launch is in flight (between its enter and exit
  // callbacks): what other threads do meanwhile. Empty: nothing.
  std::function<void()> while_profiled;
  // The next complete_launch_config() throws std::bad_alloc (once).
  std::atomic<bool> throw_in_launch_config{false};
  std::set<std::string> chip_rejects{"launch__grid_size"};  // names the chip "does not have"
  // Counter -> partner: refused (RejectedMetric::conflict) when the partner is in the same plan.
  std::map<std::string, std::string> conflicts;
  std::string chip = "GH100";
  uint32_t devices = 1;
  std::set<uint32_t> failing_devices;  // device_info fails for these ordinals
  Status host_status;                  // returned by make_profiler_host
  // PC sampling: what end() returns for a kernel (by mangled name; an empty batch otherwise), and
  // the line table sass_to_source answers from, by (function, pc offset).
  Status pc_sampler_status;          // returned by make_pc_sampler
  Status pc_begin_status;            // returned by every PcSampler::begin()
  Status pc_end_status;              // returned by every PcSampler::end() (after disabling)
  std::map<std::string, collectors::PcSampleBatch> pc_batches;
  std::map<std::pair<std::string, uint64_t>, collectors::SourceLine> source_lines;
  // PM sampling: a sample wholly inside a graph node's execution reads pm_values of its kernel (by
  // mangled name, then PM metric name; NaN for a metric not given); any other sample reads
  // pm_mixed_value for every metric (what straddles nodes or idle time must not be attributed).
  Status pm_sampler_status;  // returned by make_pm_sampler
  Status pm_begin_status;    // returned by every PmSampler::begin()
  Status pm_end_status;      // returned by every PmSampler::end()
  std::map<std::string, std::map<std::string, double>> pm_values;
  double pm_mixed_value = 999.0;
  // A PM window (PmSamplingOptions::synchronize false): what the collector reports it cost, without
  // moving any clock (the agent runs it on its flush thread). Start and Stop as docs/always-on.md
  // assumes them until measured.
  uint64_t pm_start_cost_ns = 50'000'000;
  uint64_t pm_start_host_config_ns = 0;   // of pm_start_cost_ns (PmSampleBatch); 0: not measured
  uint64_t pm_start_counter_data_ns = 0;
  uint64_t pm_stop_cost_ns = 10'000'000;
  uint64_t pm_decode_cost_ns = 0;
  // What a profiled launch costs the application thread, on the agent's monotonic clock
  // (FakePlatform::mono_ns): begin() with a plan other than the configured one (CUPTI's re-enable),
  // begin() with the same plan, PC sampling. The always-on budget measures these.
  uint64_t cost_switch_ns = 150'000'000;
  uint64_t cost_same_ns = 2'000'000;
  uint64_t cost_pc_ns = 200'000'000;
  // Added to the process's first begin() (cuptiProfilerInitialize); 0 by default.
  uint64_t cost_first_begin_ns = 0;
  // RangeProfiler::warm_up() pays the first-begin cost ahead, costing what a switch's begin()
  // does (a newly enabled object's first Start) besides; off by default: the fake then has no
  // start-up to pay ahead (kNotSupported), as the older tests assume.
  bool warm_up = false;
  // What a metric plan of at least cost_plan_min_names names costs, on the same clock, on
  // whichever thread makes it; 0 by default. (Single-pass groups hold names_per_pass names or fewer.)
  uint64_t cost_plan_ns = 0;
  size_t cost_plan_min_names = 0;
  // How many names the fake chip plans in one pass (10: small groups, so tests see packing).
  size_t names_per_pass = 10;
  // When set, a plan's passes instead of names_per_pass (the simulation's model of GH100).
  std::function<uint32_t(const std::vector<std::string>&)> passes_of;
  // A disabled profiler forgets its configuration, as a released CUPTI object does: the next
  // begin() costs a switch whatever its plan. Off by default (the older tests' costs).
  bool switch_after_disable = false;
  std::atomic<uint64_t>* mono_ns = nullptr;  // set by FakePlatform
  mutable std::atomic<bool> began_once{false};  // the first-begin cost was paid
};

class FakeHost final : public collectors::ProfilerHost {
 public:
  FakeHost(const FakeConfig& cfg, FakeStats& stats) : cfg_(cfg), stats_(stats) {}
  [[nodiscard]] const std::string& chip() const override { return cfg_.chip; }
  Result<collectors::MetricPlan> plan(const std::vector<std::string>& metrics) override {
    // `plans` counts a plan once it is whole and recorded in `planned`: tests wait on the count
    // and then read the list.
    struct Counted {
      std::atomic<int>& plans;
      ~Counted() { ++plans; }
    } counted{stats_.plans};
    if (cfg_.mono_ns != nullptr && metrics.size() >= cfg_.cost_plan_min_names) *cfg_.mono_ns += cfg_.cost_plan_ns;
    collectors::MetricPlan p;
    p.chip = cfg_.chip;
    for (const std::string& m : metrics) {
      auto partner = cfg_.conflicts.find(m);
      if (cfg_.chip_rejects.count(m)) {
        p.rejected.push_back({m, "not a " + cfg_.chip + " metric"});
      } else if (partner != cfg_.conflicts.end() &&
                 std::find(metrics.begin(), metrics.end(), partner->second) != metrics.end()) {
        p.rejected.push_back({m, "cannot be collected in one config with " + partner->second, true});
      } else {
        p.metrics.push_back(m);
      }
    }
    if (p.metrics.empty()) return Status(StatusCode::kInvalidArgument, "no collectable metric");
    const size_t per_pass = std::max<size_t>(cfg_.names_per_pass, 1);
    p.passes = cfg_.passes_of ? std::max<uint32_t>(cfg_.passes_of(p.metrics), 1)
                              : static_cast<uint32_t>((p.metrics.size() + per_pass - 1) / per_pass);
    // Stands for CUPTI's config image: equal for equal metric lists.
    for (const std::string& m : p.metrics) {
      p.config_image.insert(p.config_image.end(), m.begin(), m.end());
      p.config_image.push_back(0);
    }
    {
      std::lock_guard<std::mutex> lock(stats_.mutex);
      stats_.planned.push_back(p.metrics);
    }
    return p;
  }
  Result<std::vector<collectors::MetricReading>> evaluate(const collectors::MetricPlan& plan,
                                                          const collectors::CounterData& data,
                                                          uint32_t range) override {
    {
      std::lock_guard<std::mutex> lock(stats_.mutex);
      stats_.evaluate_threads.insert(std::this_thread::get_id());
    }
    if (++stats_.evaluates == cfg_.fail_evaluate_on_call) {
      return Status(StatusCode::kInternal, "cuptiProfilerHostEvaluateToGpuValues: CUPTI_ERROR_UNKNOWN (injected)");
    }
    // The fake profiler stores the kernel name of each range in the image, one a line.
    std::string kernel;
    {
      std::string all(data.image.begin(), data.image.end());
      size_t from = 0;
      for (uint32_t r = 0; r < range; ++r) {
        from = all.find('\n', from);
        if (from == std::string::npos) return Status(StatusCode::kInvalidArgument, "fake: no such range");
        ++from;
      }
      kernel = all.substr(from, all.find('\n', from) - from);
    }
    std::vector<collectors::MetricReading> out;
    auto it = counters_->by_kernel.find(kernel);
    if (it == counters_->by_kernel.end()) return out;
    // Every captured value whose counters the plan holds: a ratio ncu measured directly stands for
    // the numerator and denominator the agent asked for. launch__*/device__* values are never
    // returned; the agent computes those itself.
    std::set<std::string> planned(plan.metrics.begin(), plan.metrics.end());
    for (const auto& [name, v] : it->second.all()) {
      if (v.source != triage::MetricSource::kMeasured) continue;
      std::vector<std::string> inputs = triage::counter_inputs(name);
      if (inputs.empty()) continue;
      bool all = true;
      for (const std::string& c : inputs) all = all && planned.count(c) > 0;
      if (all) out.push_back({name, v.value});
    }
    return out;
  }
  std::shared_ptr<const FakeCounters> counters_;

 private:
  const FakeConfig& cfg_;
  FakeStats& stats_;
};

// The launches each open pass of a profiler made with more than one range (always-on's steps)
// records: the fake platform's launch() adds every launch on the pass's context, from any thread,
// as CUPTI's auto range does.
struct FakeRangedPasses {
  std::mutex mutex;
  std::map<uint64_t, std::vector<std::string>*> open;  // context id -> the kernels of its open pass
  void launched(uint64_t context_id, const std::string& kernel) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = open.find(context_id);
    if (it != open.end()) it->second->push_back(kernel);
  }
};

class FakeRangeProfiler final : public collectors::RangeProfiler {
 public:
  FakeRangeProfiler(const FakeConfig& cfg, FakeStats& stats, std::atomic<bool>& in_flight,
                    std::function<std::string()> current_kernel, std::function<void()> began,
                    uint64_t context_id, uint32_t device, uint32_t max_ranges = 1, FakeRangedPasses* ranged = nullptr)
      : cfg_(cfg), stats_(stats), in_flight_(in_flight), current_kernel_(std::move(current_kernel)),
        began_(std::move(began)), context_id_(context_id), device_(device % 8), max_ranges_(max_ranges),
        ranged_(ranged) {}
  ~FakeRangeProfiler() override {
    close_pass();
    (void)disable();
  }
  Status disable() override {
    app_pass_ = 0;  // abandons a kApplication collection, as CUPTI's Disable does
    if (cfg_.switch_after_disable) configured_.clear();
    uint64_t mine = context_id_;
    if (stats_.enabled_context[device_].compare_exchange_strong(mine, 0)) ++stats_.disables;
    return Status::ok();
  }
  Status warm_up(const collectors::MetricPlan& plan) override {
    if (!cfg_.warm_up) return RangeProfiler::warm_up(plan);
    if (open_) return Status(StatusCode::kInternal, "fake: warm_up() while a range is open (no end())");
    if (plan.replay != collectors::PlanReplay::kNone || plan.passes != 1) {
      return Status(StatusCode::kInvalidArgument, "fake: warm_up() needs a single-pass plan without replay");
    }
    if (stats_.pm_context[device_].load() != 0) {
      ++stats_.pm_range_overlaps;
      return Status(StatusCode::kInternal, "fake: range profiler warmed up while PM sampling runs on the device");
    }
    steps_ = collectors::RangeProfilerSteps{};
    if (cfg_.mono_ns != nullptr) {
      uint64_t cost = cfg_.cost_switch_ns;
      if (!cfg_.began_once.exchange(true)) cost += cfg_.cost_first_begin_ns;
      *cfg_.mono_ns += cost;
      steps_.start_ns = cost;
    }
    ++stats_.warm_ups;
    configured_.clear();  // disabled after: the next begin() is a switch
    return Status::ok();
  }
  Status begin(const collectors::MetricPlan& plan) override {
    if (open_) return Status(StatusCode::kInternal, "fake: begin() while a range is open (no end())");
    // Like the collector, a failed begin() leaves no collection in progress (it disables).
    if (!cfg_.begin_status.is_ok()) {
      app_pass_ = 0;
      return cfg_.begin_status;
    }
    if (plan.replay == collectors::PlanReplay::kNone && plan.passes != 1) {
      return Status(StatusCode::kInvalidArgument, "fake: a plan without replay must be one pass");
    }
    if (collectors::passes_over_repeats(plan.replay) && plan.passes == 0) {
      return Status(StatusCode::kInvalidArgument, "fake: the plan has no passes");
    }
    {
      std::lock_guard<std::mutex> lock(stats_.mutex);
      stats_.begin_replays.push_back(plan.replay);
      stats_.begin_metrics.push_back(plan.metrics);
    }
    steps_ = collectors::RangeProfilerSteps{};
    if (cfg_.mono_ns != nullptr) {
      // The fake charges a begin() to Start, where CUPTI spends a new object's cost (its first
      // Start); the steps say so, on the agent's clock.
      uint64_t cost = plan.config_image == configured_ ? cfg_.cost_same_ns : cfg_.cost_switch_ns;
      if (!cfg_.began_once.exchange(true)) cost += cfg_.cost_first_begin_ns;
      *cfg_.mono_ns += cost;
      steps_.start_ns = cost;
    }
    // Like the collector: another plan (or a disable since) starts a kApplication collection over,
    // and so does another collection id while one is halfway.
    if (plan.config_image != configured_ || plan.replay != replay_) app_pass_ = 0;
    if (app_pass_ > 0 && plan.collection != 0 && plan.collection != collection_) {
      app_pass_ = 0;
      ++stats_.disables;
    }
    if (app_pass_ == 0) collection_ = plan.collection;
    configured_ = plan.config_image;
    replay_ = plan.replay;
    passes_ = plan.passes;
    if (stats_.pm_context[device_].load() != 0) {
      ++stats_.pm_range_overlaps;
      app_pass_ = 0;
      return Status(StatusCode::kInternal, "fake: range profiler begun while PM sampling runs on the device");
    }
    if (stats_.pc_context[device_].load() == context_id_) {
      app_pass_ = 0;
      return Status(StatusCode::kInvalidArgument, "cuptiRangeProfilerStart: CUPTI_ERROR_INVALID_PARAMETER "
                                                  "(fake: PC sampling enabled on the context)");
    }
    uint64_t none = 0;
    if (!stats_.enabled_context[device_].compare_exchange_strong(none, context_id_) &&
        none != context_id_) {
      app_pass_ = 0;
      return Status(StatusCode::kUnavailable, "cuptiRangeProfilerStart: CUPTI_ERROR_HARDWARE_BUSY (fake)");
    }
    if (in_flight_.exchange(true)) ++stats_.overlaps;
    ++stats_.begins;
    kernel_ = current_kernel_();
    // A collection over repeats whose passes ran on different kernels gives an image of neither:
    // evaluate() finds no counters for it (the real image would mix two kernels' counts).
    if (app_pass_ == 0) {
      collection_kernel_ = kernel_;
    } else if (kernel_ != collection_kernel_) {
      collection_kernel_ = "mixed collection";
    }
    begun_pass_ = app_pass_;
    open_ = true;
    if (ranges_launches()) {
      // A step's pass: the launches come after begin(), on any thread (FakeRangedPasses); nothing
      // is replayed, so the launching thread's launch is not one.
      std::lock_guard<std::mutex> lock(ranged_->mutex);
      pass_kernels_.clear();
      ranged_->open[context_id_] = &pass_kernels_;
      return Status::ok();
    }
    began_();
    return Status::ok();
  }
  [[nodiscard]] uint32_t pass_in_progress() const override { return begun_pass_; }
  [[nodiscard]] collectors::RangeProfilerSteps last_steps() const override { return steps_; }
  Result<collectors::CounterData> end() override {
    int n = ++stats_.ends;
    in_flight_.store(false);
    open_ = false;
    if (ranges_launches()) return end_ranged(n);
    if (cfg_.fail_end_on_call == n) {
      app_pass_ = 0;  // the collector disables after a failed end()
      return Status(StatusCode::kInternal, "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN (injected)");
    }
    collectors::CounterData d;
    if (collectors::passes_over_repeats(replay_)) {
      // One pass per begin()/end(): no image until the plan's last.
      if (++app_pass_ < passes_) {
        d.passes_pending = passes_ - app_pass_;
        return d;
      }
      app_pass_ = 0;
      d.image.assign(collection_kernel_.begin(), collection_kernel_.end());
      d.ranges = 1;
      return d;
    }
    d.image.assign(kernel_.begin(), kernel_.end());
    d.ranges = 1;
    return d;
  }

 private:
  // Passes over launches with room for several ranges: one range per launch in the pass.
  [[nodiscard]] bool ranges_launches() const {
    return max_ranges_ > 1 && ranged_ != nullptr && replay_ == collectors::PlanReplay::kLaunches;
  }
  void close_pass() {
    if (ranged_ == nullptr) return;
    std::lock_guard<std::mutex> lock(ranged_->mutex);
    auto it = ranged_->open.find(context_id_);
    if (it != ranged_->open.end() && it->second == &pass_kernels_) ranged_->open.erase(it);
  }
  // A step's pass ends: its launches are the collection's ranges when every pass had the first
  // pass's (CUPTI itself does not check: the image would mix launches; the fake gives ranges of
  // no kernel then, so no counters). More launches than ranges: CUPTI's decode fails.
  Result<collectors::CounterData> end_ranged(int call) {
    close_pass();
    // A graph launched inside a pass of a collection over several passes: on the H200 CUPTI's Stop
    // fails then, on one stream as on two (tests/data/always_on/steps-shapes-probe-h200.txt).
    const bool graph_inside = passes_ > 1 && std::any_of(pass_kernels_.begin(), pass_kernels_.end(), [](const std::string& k) {
                                return k.rfind("graph exec ", 0) == 0;
                              });
    if (graph_inside) {
      app_pass_ = 0;
      return Status(StatusCode::kInternal, "cuptiRangeProfilerStop(&stop): CUPTI_ERROR_UNKNOWN (999)");
    }
    if (cfg_.fail_end_on_call == call) {
      app_pass_ = 0;
      return Status(StatusCode::kInternal, "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN (injected)");
    }
    if (app_pass_ == 0) {
      collection_ranges_ = pass_kernels_;
    } else if (pass_kernels_ != collection_ranges_) {
      collection_ranges_.assign(collection_ranges_.size(), "mixed collection");
    }
    collectors::CounterData d;
    if (++app_pass_ < passes_) {
      d.passes_pending = passes_ - app_pass_;
      return d;
    }
    app_pass_ = 0;
    if (collection_ranges_.empty()) return Status(StatusCode::kInternal, "fake: no range recorded");
    if (collection_ranges_.size() > max_ranges_) {
      return Status(StatusCode::kInternal, "fake: more ranges than the counter-data image holds");
    }
    for (size_t i = 0; i < collection_ranges_.size(); ++i) {
      if (i > 0) d.image.push_back('\n');
      d.image.insert(d.image.end(), collection_ranges_[i].begin(), collection_ranges_[i].end());
    }
    d.ranges = static_cast<uint32_t>(collection_ranges_.size());
    return d;
  }

  const FakeConfig& cfg_;
  FakeStats& stats_;
  std::atomic<bool>& in_flight_;
  std::function<std::string()> current_kernel_;
  std::function<void()> began_;
  uint64_t context_id_;
  uint32_t device_;
  uint32_t max_ranges_ = 1;
  FakeRangedPasses* ranged_ = nullptr;
  std::vector<std::string> pass_kernels_;       // the open step pass's launches (ranged_->mutex)
  std::vector<std::string> collection_ranges_;  // the first pass's, for the collection
  std::string kernel_;
  std::vector<uint8_t> configured_;  // the plan's config image last begun
  collectors::PlanReplay replay_ = collectors::PlanReplay::kKernel;
  uint32_t passes_ = 0;
  uint32_t app_pass_ = 0;  // kApplication passes done of the collection in progress
  uint32_t begun_pass_ = 0;
  uint64_t collection_ = 0;           // MetricPlan::collection of the collection in progress
  std::string collection_kernel_;     // its first pass's kernel ("mixed collection" once another ran)
  bool open_ = false;                 // between a successful begin() and end()
  collectors::RangeProfilerSteps steps_;  // of the last begin()
};

// Hands out the configured batch of the kernel in flight at begin(), stamped with the period asked
// for. Enforces CUPTI's rule that PC sampling and the range profiler never share a context.
class FakePcSampler final : public collectors::PcSampler {
 public:
  FakePcSampler(const FakeConfig& cfg, FakeStats& stats, std::function<std::string()> current_kernel,
                uint64_t context_id, uint32_t device)
      : cfg_(cfg), stats_(stats), current_kernel_(std::move(current_kernel)), context_id_(context_id),
        device_(device % 8) {}
  Status begin(const collectors::PcSamplingOptions& options) override {
    if (!cfg_.pc_begin_status.is_ok()) return cfg_.pc_begin_status;
    if (stats_.enabled_context[device_].load() == context_id_) {
      return Status(StatusCode::kInternal, "cuptiPCSamplingEnable: CUPTI_ERROR_INVALID_OPERATION "
                                           "(fake: range profiler enabled on the context)");
    }
    stats_.pc_context[device_].store(context_id_);
    ++stats_.pc_begins;
    if (cfg_.mono_ns != nullptr) *cfg_.mono_ns += cfg_.cost_pc_ns;
    kernel_ = current_kernel_();
    options_ = options;
    std::lock_guard<std::mutex> lock(stats_.mutex);
    stats_.pc_options.push_back(options);
    stats_.pc_kernels.push_back(kernel_);
    return Status::ok();
  }
  Result<collectors::PcSampleBatch> end() override {
    ++stats_.pc_ends;
    stats_.pc_context[device_].store(0);
    if (!cfg_.pc_end_status.is_ok()) return cfg_.pc_end_status;
    collectors::PcSampleBatch b;
    if (auto it = cfg_.pc_batches.find(kernel_); it != cfg_.pc_batches.end()) b = it->second;
    b.period_log2 = options_.period_log2;
    return b;
  }

 private:
  const FakeConfig& cfg_;
  FakeStats& stats_;
  std::function<std::string()> current_kernel_;
  uint64_t context_id_;
  uint32_t device_;
  std::string kernel_;
  collectors::PcSamplingOptions options_;
};

// One planned execution of the graph launch in flight on this thread (FakePlatform::launch_graph).
struct FakeNodeRun {
  std::string mangled;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// What a PM window sees of the fake GPU: its trace clock at begin() and at end(), and the
// executions queued in between.
struct FakeWindowSource {
  std::function<uint64_t()> open;                    // starts logging executions; the clock now
  std::function<std::vector<FakeNodeRun>()> close;   // stops; the executions logged since open
  std::function<uint64_t()> clock;
};

// Samples the graph launch in flight: from 20 us before its first node to 10 us after its last, at
// the configured interval, each sample reading the values of the node it lies wholly inside. In a
// time window (options.synchronize false) it samples from begin() to end() instead, over the
// executions queued in between, the oldest max_samples kept (CUPTI's keep-oldest buffer).
class FakePmSampler final : public collectors::PmSampler {
 public:
  FakePmSampler(const FakeConfig& cfg, FakeStats& stats, std::function<std::vector<FakeNodeRun>()> planned,
                uint64_t context_id, uint32_t device, FakeWindowSource window = {})
      : cfg_(cfg), stats_(stats), planned_(std::move(planned)), context_id_(context_id), device_(device % 8),
        window_(std::move(window)) {}
  Status begin(const collectors::PmSamplingOptions& options) override {
    if (!cfg_.pm_begin_status.is_ok()) return cfg_.pm_begin_status;
    if (stats_.enabled_context[device_].load() != 0) {
      return Status(StatusCode::kInternal, "fake: PM sampling begun beside an enabled range profiler");
    }
    stats_.pm_context[device_].store(context_id_);
    ++stats_.pm_begins;
    options_ = options;
    if (!options.synchronize && window_.open) window_from_ = window_.open();
    std::lock_guard<std::mutex> lock(stats_.mutex);
    stats_.pm_options.push_back(options);
    return Status::ok();
  }
  Result<collectors::PmSampleBatch> end() override {
    ++stats_.pm_ends;
    stats_.pm_context[device_].store(0);
    if (!cfg_.pm_end_status.is_ok()) return cfg_.pm_end_status;
    collectors::PmSampleBatch b;
    b.metrics = options_.metrics;
    b.interval_ns = options_.interval_ns;
    const bool window = !options_.synchronize && window_.close;
    const std::vector<FakeNodeRun> runs = window ? window_.close() : planned_();
    if (window) {
      b.start_cost_ns = cfg_.pm_start_cost_ns;
      b.start_host_config_ns = cfg_.pm_start_host_config_ns;
      b.start_counter_data_ns = cfg_.pm_start_counter_data_ns;
      b.stop_cost_ns = cfg_.pm_stop_cost_ns;
      b.decode_cost_ns = cfg_.pm_decode_cost_ns;
      // The decode runs inside end(), on the caller's thread: its time passes there.
      if (cfg_.mono_ns != nullptr) *cfg_.mono_ns += cfg_.pm_decode_cost_ns;
    }
    if ((runs.empty() && !window) || options_.interval_ns == 0) return b;
    const uint64_t from = window ? window_from_ : runs.front().start_ns - 20000;
    const uint64_t to = window ? window_.clock() : runs.back().end_ns + 10000;
    for (uint64_t t = from; t + options_.interval_ns <= to && b.samples.size() < options_.max_samples;
         t += options_.interval_ns) {
      collectors::PmSample sample;
      sample.start_ns = t;
      sample.end_ns = t + options_.interval_ns;
      const FakeNodeRun* in = nullptr;
      for (const FakeNodeRun& r : runs) {
        if (sample.start_ns >= r.start_ns && sample.end_ns <= r.end_ns) in = &r;
      }
      for (const std::string& m : options_.metrics) {
        double v = cfg_.pm_mixed_value;
        if (in != nullptr) {
          v = std::numeric_limits<double>::quiet_NaN();
          if (auto k = cfg_.pm_values.find(in->mangled); k != cfg_.pm_values.end()) {
            if (auto mv = k->second.find(m); mv != k->second.end()) v = mv->second;
          }
        }
        sample.values.push_back(v);
      }
      b.samples.push_back(std::move(sample));
    }
    return b;
  }

 private:
  const FakeConfig& cfg_;
  FakeStats& stats_;
  std::function<std::vector<FakeNodeRun>()> planned_;
  uint64_t context_id_;
  uint32_t device_;
  FakeWindowSource window_;
  uint64_t window_from_ = 0;
  collectors::PmSamplingOptions options_;
};

class FakePlatform final : public collectors::Platform {
 public:
  explicit FakePlatform(FakeCounters counters = {})
      : counters_(std::make_shared<FakeCounters>(std::move(counters))) {
    config.mono_ns = &mono_ns;
  }
  // The agent's monotonic clock in the harness (ProcessInfo::monotonic_ns); tests advance it.
  std::atomic<uint64_t> mono_ns{1'000'000'000};

  Status subscribe(collectors::LaunchObserver* observer) override {
    if (!config.subscribe_status.is_ok()) return config.subscribe_status;
    observer_ = observer;
    return Status::ok();
  }
  void unsubscribe() override { observer_ = nullptr; }
  Result<uint32_t> device_count() override { return config.devices; }
  Result<collectors::DeviceInfo> device_info(uint32_t device) override {
    ++stats.device_info_calls;
    if (config.failing_devices.count(device)) {
      return Status(StatusCode::kUnavailable, "cuDeviceGetAttribute: CUDA_ERROR_INVALID_DEVICE (fake)");
    }
    collectors::DeviceInfo d;
    d.device = device;
    d.name = "NVIDIA H200";
    d.uuid = "GPU-fake-" + std::to_string(device);
    d.limits = *triage::known_device_limits(config.chip);
    return d;
  }
  collectors::VersionInfo versions() override { return {"13.0", "13.0"}; }
  Status complete_launch_config(const collectors::LaunchEvent&, triage::LaunchConfig* c) override {
    // An allocation failing inside the agent's profiled-launch set-up (after its context's claim).
    if (config.throw_in_launch_config.exchange(false)) throw std::bad_alloc();
    c->registers_per_thread = 32;
    return Status::ok();
  }
  // The tests set stream_id / stream_capturing on the event itself.
  void fill_launch_details(collectors::LaunchEvent& ev) override {
    ev.details_filled = true;
    ++details_calls;
  }
  Status start_trace(collectors::ActivityObserver* observer, const collectors::TraceOptions&) override {
    if (!config.trace_status.is_ok()) return config.trace_status;
    std::lock_guard<std::mutex> lock(trace_mutex_);
    activity_ = observer;
    return Status::ok();
  }
  void flush_trace(bool forced) override {
    ++(forced ? forced_flushes : flushes);
    if (forced && config.forced_flush_loses_running) {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      const auto running = std::stable_partition(pending_.begin(), pending_.end(),
                                                 [](const Pending& p) { return p.finished; });
      lost_records += static_cast<int>(pending_.end() - running);
      pending_.erase(running, pending_.end());
    }
    if (forced || config.deliver_on_flush) deliver();
  }
  // Like CUPTI with the kinds disabled: launches made while paused leave no record.
  Status pause_trace(bool paused) override {
    ++(paused ? trace_pauses : trace_resumes);
    trace_paused.store(paused);
    if (paused) {
      // Kernels running at the pause: their records come after it (queue_in_flight).
      std::lock_guard<std::mutex> lock(trace_mutex_);
      for (Pending& p : running_at_pause_) pending_.push_back(std::move(p));
      running_at_pause_.clear();
    }
    return Status::ok();
  }
  std::atomic<bool> trace_paused{false};
  // The launch gate (set_launch_callbacks): while off, launches, graph launches and waits reach
  // the observer no more, as CUPTI's disabled callbacks do; their records still come.
  Status set_launch_callbacks(bool on) override {
    if (!config.launch_callbacks_status.is_ok()) return config.launch_callbacks_status;
    ++(on ? callbacks_on : callbacks_off);
    launch_callbacks.store(on);
    return Status::ok();
  }
  std::atomic<bool> launch_callbacks{true};
  // The agent's own wait for a context (CUTRIAGE_RANK_EARLY): every kernel queued so far
  // finishes, as the application's synchronize() does, without the wait callbacks.
  Status synchronize_context(const collectors::LaunchEvent& /*event*/) override {
    ++context_waits;
    if (!config.context_wait_status.is_ok()) return config.context_wait_status;
    std::lock_guard<std::mutex> lock(trace_mutex_);
    for (Pending& p : pending_) p.finished = true;
    return Status::ok();
  }
  std::atomic<int> context_waits{0};
  std::atomic<int> callbacks_on{0};
  std::atomic<int> callbacks_off{0};
  std::atomic<int> trace_pauses{0};
  std::atomic<int> trace_resumes{0};
  void stop_trace() override {
    deliver();
    std::lock_guard<std::mutex> lock(trace_mutex_);
    activity_ = nullptr;
  }
  uint64_t timestamp_ns() override { return clock_ns_.load(); }

  // Queues one execution record as the Activity API would report it (graph kernels, copies).
  void queue_kernel(const std::string& mangled, uint64_t duration_ns, triage::Dim3 grid,
                    triage::Dim3 block, uint32_t graph_id = 0, uint32_t stream = 7,
                    uint64_t correlation = 0, uint64_t graph_node_id = 0) {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    Pending p;
    p.name = mangled;
    p.a.start_ns = clock_ns_.load() + config.gap_ns;
    p.a.end_ns = p.a.start_ns + duration_ns;
    clock_ns_ = p.a.end_ns;
    p.a.grid = grid;
    p.a.block = block;
    p.a.stream_id = stream;
    p.a.context_id = 1;
    p.a.correlation_id = static_cast<uint32_t>(correlation);
    p.a.graph_id = graph_id;
    p.a.graph_node_id = graph_node_id;
    if (pm_window_open_) window_runs_.push_back(FakeNodeRun{mangled, p.a.start_ns, p.a.end_ns});
    pending_.push_back(std::move(p));
  }
  // A kernel still running at the next pause_trace(true): it starts now, the clock moves 1 us into
  // it (not to its end, `duration_ns` on), and its record is delivered only after that pause (like
  // CUPTI's, which come once the kernel is done).
  void queue_in_flight(const std::string& mangled, uint64_t duration_ns, uint32_t graph_id) {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    Pending p;
    p.name = mangled;
    p.a.start_ns = clock_ns_.load() + config.gap_ns;
    p.a.end_ns = p.a.start_ns + duration_ns;
    clock_ns_ = p.a.start_ns + 1000;
    p.a.stream_id = 7;
    p.a.context_id = 1;
    p.a.graph_id = graph_id;
    running_at_pause_.push_back(std::move(p));
  }
  void queue_copy(const collectors::CopyActivity& c) {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    pending_copies_.push_back(c);
  }
  void advance_clock(uint64_t ns) { clock_ns_ += ns; }
  // Hands every queued record to the trace observer, as one batch.
  void deliver() {
    collectors::ActivityObserver* observer = nullptr;
    std::vector<Pending> pending;
    collectors::ActivityBatch batch;
    {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      observer = activity_;
      pending.swap(pending_);
      batch.copies.swap(pending_copies_);
    }
    if (observer == nullptr || (pending.empty() && batch.copies.empty())) return;
    for (Pending& p : pending) {
      p.a.mangled_name = p.name;  // stays valid: `pending` outlives the call below
      batch.kernels.push_back(p.a);
    }
    observer->on_activity(batch);
  }
  std::atomic<int> details_calls{0};
  std::atomic<int> flushes{0};         // default flushes (completed records only)
  std::atomic<int> forced_flushes{0};  // forced flushes (every record)
  std::atomic<int> lost_records{0};    // records a forced flush dropped (forced_flush_loses_running)
  Result<std::unique_ptr<collectors::ProfilerHost>> make_profiler_host(const std::string&) override {
    ++stats.host_calls;
    if (!config.host_status.is_ok()) return config.host_status;
    auto h = std::make_unique<FakeHost>(config, stats);
    h->counters_ = counters_;
    return std::unique_ptr<collectors::ProfilerHost>(std::move(h));
  }
  [[nodiscard]] bool range_profiler_has_startup() const override { return config.warm_up; }
  Result<std::unique_ptr<collectors::RangeProfiler>> make_range_profiler(const collectors::ContextEvent& ctx,
                                                                       uint32_t max_ranges) override {
    if (!config.range_profiler_status.is_ok()) return config.range_profiler_status;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& flag = in_flight_[ctx.context_id];
    if (!flag) flag = std::make_unique<std::atomic<bool>>(false);
    made_max_ranges.store(max_ranges);
    return std::unique_ptr<collectors::RangeProfiler>(std::make_unique<FakeRangeProfiler>(
        config, stats, *flag, [] { return current_kernel(); }, [] { began_on_this_thread() = true; },
        ctx.context_id, ctx.device, max_ranges, &ranged_passes_));
  }
  std::atomic<uint32_t> made_max_ranges{0};  // of the last range profiler made

  Result<std::unique_ptr<collectors::PcSampler>> make_pc_sampler(const collectors::ContextEvent& ctx) override {
    if (!config.pc_sampler_status.is_ok()) return config.pc_sampler_status;
    return std::unique_ptr<collectors::PcSampler>(std::make_unique<FakePcSampler>(
        config, stats, [] { return current_kernel(); }, ctx.context_id, ctx.device));
  }
  Result<std::unique_ptr<collectors::PmSampler>> make_pm_sampler(const collectors::ContextEvent& ctx,
                                                                 const std::string& /*chip*/) override {
    if (!config.pm_sampler_status.is_ok()) return config.pm_sampler_status;
    FakeWindowSource window;
    window.open = [this] {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      window_runs_.clear();
      pm_window_open_ = true;
      return clock_ns_.load();
    };
    window.close = [this] {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      pm_window_open_ = false;
      return std::exchange(window_runs_, {});
    };
    window.clock = [this] { return clock_ns_.load(); };
    return std::unique_ptr<collectors::PmSampler>(std::make_unique<FakePmSampler>(
        config, stats, [this] { return planned_nodes(); }, ctx.context_id, ctx.device, std::move(window)));
  }
  // The executions the graph launch in flight on this thread will have, from the clock now (as
  // queue_kernel will place them).
  std::vector<FakeNodeRun> planned_nodes() {
    std::vector<FakeNodeRun> runs;
    uint64_t t = clock_ns_.load();
    for (const GraphNode& n : graph_in_flight()) {
      FakeNodeRun r;
      r.mangled = n.mangled;
      r.start_ns = t + config.gap_ns;
      r.end_ns = r.start_ns + n.duration_ns;
      t = r.end_ns;
      runs.push_back(std::move(r));
    }
    return runs;
  }
  // FNV-1a over the bytes: any stable function of the cubin does for the fake.
  Result<uint64_t> cubin_crc(const std::vector<uint8_t>& cubin) override { return fake_crc(cubin); }
  static uint64_t fake_crc(const std::vector<uint8_t>& cubin) {
    uint64_t h = 1469598103934665603ULL;
    for (uint8_t b : cubin) h = (h ^ b) * 1099511628211ULL;
    return h;
  }
  Result<collectors::SourceLine> sass_to_source(const std::vector<uint8_t>&, const std::string& function,
                                                uint64_t pc_offset) override {
    ++stats.sass_queries;
    auto it = config.source_lines.find({function, pc_offset});
    if (it == config.source_lines.end()) return Status(StatusCode::kNotSupported, "no line (fake)");
    return it->second;
  }

  // Simulates the application waiting for the GPU (cuCtxSynchronize when `whole_context`,
  // cuStreamSynchronize otherwise): the wait's entry and exit callbacks. Records still wait for a
  // flush, as CUPTI's do.
  void synchronize(bool whole_context = false) {
    if (observer_ == nullptr) return;
    if (!launch_callbacks.load()) {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      for (Pending& p : pending_) p.finished = true;
      return;
    }
    observer_->on_synchronize(true, whole_context);
    {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      for (Pending& p : pending_) p.finished = true;
    }
    observer_->on_synchronize(false, whole_context);
  }

  // Simulates one launch on the calling thread: enter callback, (the kernel), exit callback, and
  // the kernel's execution record for the trace (none for a captured launch: nothing runs).
  void launch(const collectors::LaunchEvent& ev) {
    current_kernel() = std::string(ev.mangled_name);
    if (observer_ == nullptr) return;
    bool replayed = false;
    if (launch_callbacks.load() && observer_->on_launch_enter(ev)) {
      ++exits_wanted;
      replayed = std::exchange(began_on_this_thread(), false);
      if (replayed && config.while_profiled) config.while_profiled();
      if (replayed) {
        advance_clock(500000);  // the replay passes hold the GPU a while
        // A profiled launch ends with the context idle (the range ends with a synchronization),
        // so every kernel queued before it has finished.
        std::lock_guard<std::mutex> lock(trace_mutex_);
        for (Pending& p : pending_) p.finished = true;
      }
      observer_->on_launch_exit(ev);
    }
    if (ev.stream_capturing || ev.api == collectors::LaunchApi::kGraphLaunch) return;
    ranged_passes_.launched(ev.context_id, std::string(ev.mangled_name));  // a step's pass records it
    // Like CUPTI on the H200: a replayed launch's record comes back without timestamps.
    if (replayed) return;
    bool tracing = false;
    {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      tracing = activity_ != nullptr;
    }
    if (!tracing || trace_paused.load()) return;
    auto it = config.durations_ns.find(std::string(ev.mangled_name));
    const uint64_t duration = it != config.durations_ns.end() ? it->second : captured_duration(ev.mangled_name);
    const triage::LaunchConfig lc = ev.launch.value_or(triage::LaunchConfig{});
    queue_kernel(std::string(ev.mangled_name), duration, lc.grid, lc.block, 0,
                 static_cast<uint32_t>(ev.stream_id), ev.correlation_id);
    if (config.deliver_each_launch) deliver();
  }
  std::atomic<int> exits_wanted{0};

  // One kernel node of a fake graph: its kernel, duration and node id.
  struct GraphNode {
    std::string mangled;
    uint64_t duration_ns = 10000;
    uint64_t node_id = 0;
    triage::Dim3 grid{64, 1, 1};
    triage::Dim3 block{128, 1, 1};
  };
  // One cuGraphLaunch of exec `exec_id` (correlation `correlation`), whose kernels' records carry
  // graph id `graph_id`: the launch callbacks, then one record per node. The counters (and PC
  // samples) a range profiled around it reads are those FakeCounters (and pc_batches) hold under
  // `counters_key`.
  void launch_graph(uint32_t exec_id, uint32_t graph_id, uint64_t correlation, const std::vector<GraphNode>& nodes,
                    const std::string& counters_key) {
    collectors::LaunchEvent ev;
    ev.context_id = 1;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): an opaque fake handle, never dereferenced.
    ev.context = reinterpret_cast<void*>(static_cast<uintptr_t>(0x1001));
    ev.stream_id = 7;
    ev.correlation_id = correlation;
    // As the CUPTI platform marks it: the thread's previous graph launch had the same id.
    ev.correlation_repeated = correlation != 0 && correlation == last_graph_correlation();
    last_graph_correlation() = correlation;
    ev.api = collectors::LaunchApi::kGraphLaunch;
    ev.graph_exec_id = exec_id;
    current_kernel() = counters_key;
    if (observer_ == nullptr) return;
    graph_in_flight() = nodes;
    if (launch_callbacks.load() && observer_->on_launch_enter(ev)) {
      ++exits_wanted;
      if (std::exchange(began_on_this_thread(), false)) advance_clock(50000);
      observer_->on_launch_exit(ev);
    }
    // As CUPTI's auto range under user replay: one range for the whole graph launch.
    ranged_passes_.launched(ev.context_id, "graph exec " + std::to_string(exec_id));
    bool tracing = false;
    {
      std::lock_guard<std::mutex> lock(trace_mutex_);
      tracing = activity_ != nullptr;
    }
    if (!tracing || trace_paused.load()) return;
    for (const GraphNode& n : nodes) {
      queue_kernel(n.mangled, n.duration_ns, n.grid, n.block, graph_id, 7, correlation, n.node_id);
    }
    if (config.deliver_each_launch) deliver();
  }

  // Without a configured duration, a kernel runs as long as its capture says (the replayed
  // duration then agrees with the traced ones); 10 us for a kernel without a capture.
  uint64_t captured_duration(std::string_view mangled) const {
    auto it = counters_->by_kernel.find(std::string(mangled));
    if (it == counters_->by_kernel.end()) return 10000;
    const triage::MetricValue* v = it->second.find("gpu__time_duration.sum");
    if (v == nullptr) return 10000;
    double scale = 1;
    if (v->unit == "usecond" || v->unit == "us") scale = 1e3;
    if (v->unit == "msecond" || v->unit == "ms") scale = 1e6;
    if (v->unit == "second" || v->unit == "s") scale = 1e9;
    return static_cast<uint64_t>(v->value * scale);
  }
  collectors::LaunchObserver* observer() { return observer_; }

  // Set by the fake range profiler's begin() on the launching thread.
  static bool& began_on_this_thread() {
    thread_local bool began = false;
    return began;
  }
  static uint64_t& last_graph_correlation() {
    thread_local uint64_t id = 0;
    return id;
  }
  static std::vector<GraphNode>& graph_in_flight() {
    thread_local std::vector<GraphNode> nodes;
    return nodes;
  }
  static std::string& current_kernel() {
    thread_local std::string k;
    return k;
  }

  FakeConfig config;
  FakeStats stats;

 private:
  struct Pending {
    std::string name;
    collectors::KernelActivity a;
    bool finished = false;  // a synchronize() came after it (forced_flush_loses_running)
  };
  std::shared_ptr<const FakeCounters> counters_;
  collectors::LaunchObserver* observer_ = nullptr;
  std::mutex trace_mutex_;
  collectors::ActivityObserver* activity_ = nullptr;
  std::vector<Pending> pending_;
  std::vector<Pending> running_at_pause_;  // until the next pause
  bool pm_window_open_ = false;         // a PM window logs the executions queued (trace_mutex_)
  std::vector<FakeNodeRun> window_runs_;
  std::vector<collectors::CopyActivity> pending_copies_;
  std::atomic<uint64_t> clock_ns_{1'000'000'000};
  std::mutex mutex_;
  FakeRangedPasses ranged_passes_;
  std::map<uint64_t, std::unique_ptr<std::atomic<bool>>> in_flight_;
};

// A stable copy of `name` for LaunchEvent::mangled_name (a view, like CUPTI's symbolName).
inline std::string_view fake_symbol(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  return *names.insert(name).first;
}

// A launch of `mangled` with the given shape.
inline collectors::LaunchEvent make_launch(const std::string& mangled, uint64_t correlation,
                                           triage::Dim3 grid = {1024, 1, 1},
                                           triage::Dim3 block = {256, 1, 1},
                                           uint64_t context_id = 1) {
  collectors::LaunchEvent ev;
  ev.context_id = context_id;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an opaque fake handle, never dereferenced.
  ev.context = reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + context_id));
  ev.device = 0;
  ev.stream_id = 7;
  ev.correlation_id = correlation;
  ev.api = collectors::LaunchApi::kLaunchKernel;
  ev.mangled_name = fake_symbol(mangled);
  triage::LaunchConfig lc;
  lc.grid = grid;
  lc.block = block;
  ev.launch = lc;
  return ev;
}

}  // namespace cutriage::testing
