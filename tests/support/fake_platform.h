// A fake of the collector Platform for driving the agent without a GPU. Counter values come from a
// real capture (an H200 ncu CSV under tests/data/ncu/zoo) so the agent's triage sees real numbers;
// failures are injected per call. Thread-safe: the concurrency tests launch from many threads.
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
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
  std::atomic<int> disables{0};
  // Context whose fake profiler holds the device's counters (enabled), 0 = none. Like the
  // hardware, a begin() on another context while one is enabled fails with "hardware busy".
  std::array<std::atomic<uint64_t>, 8> enabled_context{};  // by device ordinal
  std::mutex mutex;
  std::vector<std::vector<std::string>> planned;  // metric lists, in plan() order
};

struct FakeConfig {
  Status subscribe_status;
  Status range_profiler_status;      // returned by make_range_profiler
  Status begin_status;               // returned by every begin()
  int fail_end_on_call = 0;          // 1-based end() call that fails; 0 = none
  std::set<std::string> chip_rejects{"launch__grid_size"};  // names the chip "does not have"
  std::string chip = "GH100";
  uint32_t devices = 1;
};

class FakeHost final : public collectors::ProfilerHost {
 public:
  FakeHost(const FakeConfig& cfg, FakeStats& stats) : cfg_(cfg), stats_(stats) {}
  [[nodiscard]] const std::string& chip() const override { return cfg_.chip; }
  Result<collectors::MetricPlan> plan(const std::vector<std::string>& metrics) override {
    ++stats_.plans;
    collectors::MetricPlan p;
    p.chip = cfg_.chip;
    for (const std::string& m : metrics) {
      if (cfg_.chip_rejects.count(m)) {
        p.rejected.push_back({m, "not a " + cfg_.chip + " metric"});
      } else {
        p.metrics.push_back(m);
      }
    }
    if (p.metrics.empty()) return Status(StatusCode::kInvalidArgument, "no collectable metric");
    p.passes = static_cast<uint32_t>((p.metrics.size() + 9) / 10);
    {
      std::lock_guard<std::mutex> lock(stats_.mutex);
      stats_.planned.push_back(p.metrics);
    }
    return p;
  }
  Result<std::vector<collectors::MetricReading>> evaluate(const collectors::MetricPlan& plan,
                                                          const collectors::CounterData& data,
                                                          uint32_t) override {
    // The fake profiler stores the kernel name in the image.
    std::string kernel(data.image.begin(), data.image.end());
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

class FakeRangeProfiler final : public collectors::RangeProfiler {
 public:
  FakeRangeProfiler(const FakeConfig& cfg, FakeStats& stats, std::atomic<bool>& in_flight,
                    std::function<std::string()> current_kernel, uint64_t context_id, uint32_t device)
      : cfg_(cfg), stats_(stats), in_flight_(in_flight), current_kernel_(std::move(current_kernel)),
        context_id_(context_id), device_(device % 8) {}
  ~FakeRangeProfiler() override { (void)disable(); }
  Status disable() override {
    uint64_t mine = context_id_;
    if (stats_.enabled_context[device_].compare_exchange_strong(mine, 0)) ++stats_.disables;
    return Status::ok();
  }
  Status begin(const collectors::MetricPlan&) override {
    if (!cfg_.begin_status.is_ok()) return cfg_.begin_status;
    uint64_t none = 0;
    if (!stats_.enabled_context[device_].compare_exchange_strong(none, context_id_) &&
        none != context_id_) {
      return Status(StatusCode::kUnavailable, "cuptiRangeProfilerStart: CUPTI_ERROR_HARDWARE_BUSY (fake)");
    }
    if (in_flight_.exchange(true)) ++stats_.overlaps;
    ++stats_.begins;
    kernel_ = current_kernel_();
    return Status::ok();
  }
  Result<collectors::CounterData> end() override {
    int n = ++stats_.ends;
    in_flight_.store(false);
    if (cfg_.fail_end_on_call == n) {
      return Status(StatusCode::kInternal, "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN (injected)");
    }
    collectors::CounterData d;
    d.image.assign(kernel_.begin(), kernel_.end());
    d.ranges = 1;
    return d;
  }

 private:
  const FakeConfig& cfg_;
  FakeStats& stats_;
  std::atomic<bool>& in_flight_;
  std::function<std::string()> current_kernel_;
  uint64_t context_id_;
  uint32_t device_;
  std::string kernel_;
};

class FakePlatform final : public collectors::Platform {
 public:
  explicit FakePlatform(FakeCounters counters = {})
      : counters_(std::make_shared<FakeCounters>(std::move(counters))) {}

  Status subscribe(collectors::LaunchObserver* observer) override {
    if (!config.subscribe_status.is_ok()) return config.subscribe_status;
    observer_ = observer;
    return Status::ok();
  }
  void unsubscribe() override { observer_ = nullptr; }
  Result<uint32_t> device_count() override { return config.devices; }
  Result<collectors::DeviceInfo> device_info(uint32_t device) override {
    collectors::DeviceInfo d;
    d.device = device;
    d.name = "NVIDIA H200";
    d.uuid = "GPU-fake-" + std::to_string(device);
    d.limits = *triage::known_device_limits(config.chip);
    return d;
  }
  collectors::VersionInfo versions() override { return {"13.0", "13.0"}; }
  Status complete_launch_config(const collectors::LaunchEvent&, triage::LaunchConfig* c) override {
    c->registers_per_thread = 32;
    return Status::ok();
  }
  Result<std::unique_ptr<collectors::ProfilerHost>> make_profiler_host(const std::string&) override {
    auto h = std::make_unique<FakeHost>(config, stats);
    h->counters_ = counters_;
    return std::unique_ptr<collectors::ProfilerHost>(std::move(h));
  }
  Result<std::unique_ptr<collectors::RangeProfiler>> make_range_profiler(
      const collectors::ContextEvent& ctx) override {
    if (!config.range_profiler_status.is_ok()) return config.range_profiler_status;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& flag = in_flight_[ctx.context_id];
    if (!flag) flag = std::make_unique<std::atomic<bool>>(false);
    return std::unique_ptr<collectors::RangeProfiler>(std::make_unique<FakeRangeProfiler>(
        config, stats, *flag, [] { return current_kernel(); }, ctx.context_id, ctx.device));
  }

  // Simulates one launch on the calling thread: enter callback, (the kernel), exit callback.
  void launch(const collectors::LaunchEvent& ev) {
    current_kernel() = ev.mangled_name;
    if (observer_ == nullptr) return;
    observer_->on_launch_enter(ev);
    observer_->on_launch_exit(ev);
  }
  collectors::LaunchObserver* observer() { return observer_; }

  static std::string& current_kernel() {
    thread_local std::string k;
    return k;
  }

  FakeConfig config;
  FakeStats stats;

 private:
  std::shared_ptr<const FakeCounters> counters_;
  collectors::LaunchObserver* observer_ = nullptr;
  std::mutex mutex_;
  std::map<uint64_t, std::unique_ptr<std::atomic<bool>>> in_flight_;
};

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
  ev.mangled_name = mangled;
  triage::LaunchConfig lc;
  lc.grid = grid;
  lc.block = block;
  ev.launch = lc;
  return ev;
}

}  // namespace cutriage::testing
