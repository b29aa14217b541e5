// Always-on's PM routing window (docs/always-on.md, "The PM routing window"): once the trace has
// ranked the families and one with at least 5% of the GPU time has no routed verdict, the flush
// thread PM-samples one short window of the application's own launches on one device (CUPTI's
// periodic device-wide counters, the kernel trace on, nothing replayed), attributes the samples to
// the families by their traced executions (pm_nodes.h: a sample counts when it lies wholly inside
// one execution) and gives each family with enough samples a routed verdict from its own means.
// The range profiler's single-pass groups then go on as before, for the depth; a record with its
// complete range-profiler counters supersedes the window's (LaunchProfiler names the window's
// record among its combined launches).
//
// Why a window: a group switch of the range profiler costs ~170 ms on the H200, so at the 0.4%
// budget one is earned every ~42 s and routing one family takes ~9 of them; one window routes
// every family that ran in it at once.
//
// Threading: poll() and finish() from the flush thread (or, without one, from cutriage_flush;
// concurrent callers skip). Never from a launch callback. The window claims its context like a
// profiled launch (ContextTable::claim_for_window: no range profiler enabled on the device, no
// stage in progress) and holds it until it ends, so nothing else profiles the device meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "always_on.h"
#include "config.h"
#include "contexts.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/engine.h"
#include "devices.h"
#include "family.h"
#include "log.h"
#include "pm_nodes.h"
#include "record_output.h"
#include "trace_folder.h"

namespace cutriage::agent {

class PmWindow {
 public:
  using Notify = std::function<void(wire::Severity, const std::string& code, const std::string& message,
                                    uint64_t family_id)>;
  struct Parts {
    const AgentConfig& config;
    collectors::Platform& platform;
    Logger& log;
    FamilyTable& families;
    DeviceCatalog& devices;
    ContextTable& contexts;
    TraceFolder& trace;
    RecordOutput& output;
    const KernelBuilds& builds;
    AlwaysOnPolicy& always_on;
    const triage::TriageOptions& triage_options;
    std::shared_mutex& gate;  // held shared around CUPTI's PM calls, as a profiled launch holds it
    std::function<uint64_t()> monotonic_ns;
    std::function<uint64_t()> launch_index;  // the latest launch's index (the window record's)
    Notify notify;
    // Makes metric plans now, on the thread that attributes the window (the flush thread, or
    // cutriage_flush's without one), before stages stop waiting for it: the first stage of each
    // family it routed, which takes the verdict's route too (CUTRIAGE_STAGE_PASSES).
    std::function<void(const std::string& chip, const std::vector<std::vector<std::string>>& lists)> plan_ahead;
  };

  // Families wanted: at least this share of the traced GPU time, without a routed verdict.
  static constexpr double kMinShare = 0.05;
  // Samples per window: the collector's counter-data image cap (about 240 MB at 20 metrics).
  static constexpr uint32_t kMaxSamples = 2048;
  static constexpr uint64_t kMinIntervalNs = 5000;  // the H200 probe's interval
  static constexpr uint64_t kMaxWindowNs = 2'000'000'000;
  // A family's verdict rests on its samples from this many (d0.node_sampling warns below 3).
  static constexpr uint32_t kMinSamples = 3;
  // ASSUMED until measured on the H200: the application's throughput lost while PM sampling runs,
  // as a fraction of the window's span, charged to the budget with Start and Stop.
  static constexpr double kAssumedDrag = 0.10;
  // After Stop, how long the window waits for the trace to deliver executions past its end.
  static constexpr uint64_t kCatchUpNs = 5'000'000'000;
  // A transient failure (HARDWARE_BUSY) is tried again this much later, this many times in all.
  static constexpr uint64_t kRetryNs = 60'000'000'000;
  static constexpr uint32_t kMaxFailures = 3;
  // A family sampled in this many windows without enough samples is not waited for again.
  static constexpr uint32_t kMaxMisses = 2;

  explicit PmWindow(Parts parts) : p_(std::move(parts)) {}

  // Advances the window: starts one when wanted and admitted, stops it once its span has passed,
  // and attributes its samples once the trace has caught up. Returns how long until the window
  // wants the next poll (its span while one is open: the flush thread sleeps that long when
  // short), 0 otherwise.
  uint64_t poll();
  // The end of the session: an open window is stopped (call before the trace's last flush), then
  // finish() attributes what the trace delivered.
  void stop_open();
  void finish();

  // Whether a window is open or waits for its samples' attribution (lock-free).
  [[nodiscard]] bool busy() const { return busy_.load(std::memory_order_relaxed); }
  // Windows run so far, and why the window is off (empty while it may run).
  [[nodiscard]] uint32_t windows() const { return windows_.load(); }
  [[nodiscard]] std::string off_reason() const;

 private:
  enum class State : uint8_t { kIdle, kOpen, kStopped, kOff };
  struct Wanted {
    uint32_t device = 0;
    std::vector<std::pair<uint64_t, double>> families;  // (family id, share), largest first
    double mean_ns = 0;  // the shortest mean execution among the top three
  };

  std::optional<Wanted> wanted(uint64_t now);
  bool begin(const Wanted& w, uint64_t now);
  void stop(uint64_t now);
  void attribute();
  void fail(const collectors::Status& why, const std::string& phase, uint64_t now);

  Parts p_;
  std::mutex mutex_;  // one poller at a time (try_lock)
  State state_ = State::kIdle;
  std::atomic<bool> busy_{false};  // state_ is kOpen or kStopped
  std::shared_ptr<ContextState> ctx_;
  uint32_t device_ = 0;
  uint64_t interval_ns_ = 0;
  uint64_t span_ns_ = 0;
  uint64_t opened_mono_ns_ = 0;
  uint64_t stopped_mono_ns_ = 0;
  uint64_t begin_trace_ns_ = 0;
  uint64_t stop_trace_ns_ = 0;
  std::vector<uint64_t> sampled_for_;  // the wanted families when it began
  std::map<uint64_t, uint64_t> launches_seen_;  // family id -> its launches at the previous look
  std::optional<collectors::PmSampleBatch> batch_;
  uint32_t failures_ = 0;
  uint64_t retry_after_ns_ = 0;
  std::atomic<uint32_t> windows_{0};
  mutable std::mutex reason_mutex_;  // leaf
  std::string off_reason_;
};

}  // namespace cutriage::agent
