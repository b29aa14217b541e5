// Hardware counters for one kernel launch through the CUPTI Range Profiler and the Profiler Host
// API. CUPTI types stay inside collectors/src; these interfaces carry plain values, so the agent's
// tests can fake them.
//
// Ownership: the agent holds one ProfilerHost per chip (shared by every context on that chip) and
// one RangeProfiler per CUDA context. A RangeProfiler is used from the thread that launches the
// kernel it profiles; the agent serializes profiled launches per context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

struct RejectedMetric {
  std::string name;
  std::string reason;  // "not a GH100 metric", "needs a rollup (.sum/.avg/.min/.max)", ...
  // Collectable alone, refused only beside another metric of the same request (pcie__* with
  // dram__* on GH100): a later request without that partner can collect it.
  bool conflict = false;
};

// How a profiled launch is collected.
enum class PlanReplay : uint8_t {
  kKernel,  // CUPTI replays the kernel inside the launch, once per pass, restoring device memory
  kNone,    // the launch runs once, as the application issued it; the plan must fit one pass
  // The application's own repeats of one workload are the passes (a graph exec's launches): one
  // begin()/end() around each, pass i on the i-th, as one user range under user replay; nothing
  // is saved or restored, every pass is real work of the application. The only way to count a
  // graph launch (docs/graphs.md): one range for the whole launch, not one per node.
  kApplication,
  // A kernel's own launches are the passes (always-on's stages, CUTRIAGE_STAGE_PASSES): pass i on
  // the i-th begin()/end() around one launch of the same kernel, auto range + user replay (the
  // sequence of NVIDIA's user-replay samples, which launch the kernel again for each pass),
  // nothing saved or restored. Not yet run on the H200.
  kLaunches,
};

// Whether a plan's passes are the application's own repeats, one begin()/end() each.
inline bool passes_over_repeats(PlanReplay r) { return r == PlanReplay::kApplication || r == PlanReplay::kLaunches; }

// What to collect, checked and compiled by the host for one chip. Immutable once made; shareable
// between contexts of the same chip.
struct MetricPlan {
  std::string chip;
  std::vector<std::string> metrics;        // accepted names, in request order
  std::vector<RejectedMetric> rejected;    // asked for but not collectable on this chip
  uint32_t passes = 0;                     // replay passes the config needs
  std::vector<uint8_t> config_image;       // opaque, for RangeProfiler::start
  PlanReplay replay = PlanReplay::kKernel; // set by the caller after plan()
  // Passes over repeats: the collection this pass belongs to, set by the caller. A begin() whose
  // collection differs from the one in progress (another kernel's stage with the same counters)
  // abandons that one and starts over; 0 continues whichever is in progress with the same plan.
  uint64_t collection = 0;
};

struct MetricReading {
  std::string name;
  double value = 0;
};

// Raw counter data of one profiled range, opaque outside the collector.
struct CounterData {
  std::vector<uint8_t> image;
  uint32_t ranges = 0;  // ranges found in the image; 1 for one auto-ranged kernel
  // Set by RangeProfiler::end(): checksums (64-bit FNV-1a) of `image` and of the plan's
  // config_image it was collected with. ProfilerHost::evaluate() refuses data whose checksums do
  // not match: CUPTI reads a counter-data image without bounds checks and crashes the process on
  // a damaged or foreign one (seen offline, CUDA 13.0), so only images that left end() unchanged,
  // evaluated with the plan that collected them, ever reach it.
  uint64_t image_checksum = 0;
  uint64_t config_checksum = 0;
  // PlanReplay::kApplication or kLaunches: passes still to run before the data is complete. While it is
  // above 0, end() returns no image (nothing to evaluate yet) and the next begin() with the same
  // plan runs the next pass.
  uint32_t passes_pending = 0;
};

class ProfilerHost {
 public:
  virtual ~ProfilerHost() = default;
  [[nodiscard]] virtual const std::string& chip() const = 0;
  // Validates every name on its own first (one rejected name poisons a CUPTI host object, see
  // shared notes), then builds the config image of the accepted ones. An empty accepted list is
  // an error. Names CUPTI accepts alone but not together with earlier names of the same request
  // (e.g. pcie__* beside dram__* on GH100) are rejected too, with the earlier name they conflict
  // with: request order is priority. Duplicate names are planned once.
  virtual Result<MetricPlan> plan(const std::vector<std::string>& metrics) = 0;
  // Evaluates the plan's metrics on counter data of range `range`, in plan.metrics order.
  virtual Result<std::vector<MetricReading>> evaluate(const MetricPlan& plan,
                                                      const CounterData& data,
                                                      uint32_t range = 0) = 0;
};

// How a CUPTI-backed host finds names that cannot share a config.
enum class ConflictSearch : uint8_t {
  // Counter units known never to share a config on the chip are kept apart before compiling
  // (on GH100, pcie__* metrics give way to dram__* ones); the rest is found by bisection. The
  // default.
  kKnownUnitsFirst,
  // Bisection only, request order deciding who stays: every conflict costs several compiles of
  // the list (the tests compare the two).
  kBisectOnly,
};

// Creates the CUPTI-backed host for `chip` ("GH100", from cuptiDeviceGetChipName). Needs no GPU
// and no driver. Thread-safe: plan() and evaluate() may be called from several threads.
Result<std::unique_ptr<ProfilerHost>> make_cupti_profiler_host(
    const std::string& chip, ConflictSearch search = ConflictSearch::kKnownUnitsFirst);

// Wraps one launch in auto range + kernel replay. begin() on launch entry, end() on launch exit.
// Not thread-safe: one thread at a time per object (the agent serializes profiled launches per
// context). Destroy it before its context is destroyed (CONTEXT_DESTROY_STARTING).
// Wall time (steady clock, ns) of each CUPTI step of the last begin() and the end() after it; 0
// for a step that did not run. What bench/profile_cost.sh and the stage log split a profiled
// launch's start and stop phases into (issue 21's breakdown).
struct RangeProfilerSteps {
  uint64_t enable_ns = 0;        // cuptiRangeProfilerEnable: a new object (first use, another plan)
  uint64_t counter_data_ns = 0;  // the counter-data image sized and initialized
  uint64_t set_config_ns = 0;    // cuptiRangeProfilerSetConfig
  uint64_t start_ns = 0;         // cuptiRangeProfilerStart (and PushRange under kApplication)
  uint64_t stop_ns = 0;          // cuptiRangeProfilerStop (and PopRange)
  uint64_t decode_ns = 0;        // DecodeData and GetCounterDataInfo, after the last pass
  uint64_t disable_ns = 0;       // Disable: the object of another plan (begin), or after the launch (end)
};

class RangeProfiler {
 public:
  virtual ~RangeProfiler() = default;
  // Configures the plan (its config image is copied; the plan may go away) and starts.
  // PlanReplay::kNone runs the launch once under user replay (no memory save and restore); a
  // plan of more than one pass is refused then (kInvalidArgument).
  virtual Status begin(const MetricPlan& plan) = 0;
  // Stops, decodes and returns the counter data. Called once after every successful begin().
  // Fails (and leaves the profiler ready for the next begin()) when no range was recorded, e.g.
  // no kernel ran between begin() and end(). Under PlanReplay::kApplication or kLaunches, returns
  // passes_pending > 0 and no image until the last pass.
  virtual Result<CounterData> end() = 0;
  // Releases the context's range profiler (cuptiRangeProfilerDisable) so that another collector
  // that cannot share the context with it (PC sampling) can run; the next begin() enables it
  // again. Not allowed between begin() and end(). No-op when not enabled. Abandons a
  // PlanReplay::kApplication or kLaunches collection whose passes are not all done.
  virtual Status disable() { return Status::ok(); }
  // Pays CUPTI's one-off start-up ahead of the first profiled launch: configures the single-pass
  // plan (PlanReplay::kNone), starts and stops a range with no kernel in it, decodes nothing (an
  // empty range's DecodeData failed on the H200 and the process died soon after), and disables.
  // The process's first Start on a newly enabled object costs several times a later one's
  // (docs/always-on.md, "Start-up"): paid here, at a moment the caller picks, instead of by the
  // first launch a budget admitted. Not allowed between begin() and end(); the profiler is left
  // disabled, ready for the next begin(). kNotSupported where there is no such cost to pay.
  virtual Status warm_up(const MetricPlan& /*plan*/) {
    return Status(StatusCode::kNotSupported, "this range profiler has no start-up to pay ahead");
  }
  // After a successful begin() of a plan whose passes are the application's repeats: the index of
  // the pass it began (0: the first of a new collection), so the caller can tell a continued
  // collection from one CUPTI started over. 0 for other plans.
  [[nodiscard]] virtual uint32_t pass_in_progress() const { return 0; }
  // The steps of the last begin() and of the end() after it (begin() clears them). Read after
  // end(), by the thread that called it.
  [[nodiscard]] virtual RangeProfilerSteps last_steps() const { return {}; }
};

struct RangeProfilerOptions {
  // true: enable range profiling on the context once and keep it enabled across launches of the
  // same plan (SetConfig on every begin()); a begin() with another plan disables and enables
  // again, since one enabled CUPTI object serves one config (a second config crashed the process
  // on the H200). false: enable in begin() and disable in end(), once per launch: the sequence
  // the shared notes saw working on the H200. Cost seen there: begin() 0.0-0.2 ms on an object
  // kept enabled for the plan (kernel replay; 7-46 ms under user replay), 135-210 ms when it must
  // enable and configure (the new object's first Start); end() 1 ms (7 ms under user replay),
  // 12 ms with the Disable. An enabled object also slows the launches it does not profile by a
  // few percent (bench/switch_cost.sh idle).
  bool keep_enabled = true;
  // Ranges the counter-data image holds and the profiler records per pass (maxRangesPerPass):
  // one auto range per kernel launch, so 1 for one launch between begin() and end().
  uint32_t max_ranges = 1;
};

// `cu_context` is a CUcontext. Calls cuptiProfilerInitialize once per process (CUPTI crashes in
// Start without it). Enables range profiling on the context right away, so that it fails here
// with kPermissionDenied when counters are restricted to admin users, and with kUnavailable when
// no CUDA driver is usable.
Result<std::unique_ptr<RangeProfiler>> make_cupti_range_profiler(void* cu_context,
                                                                 RangeProfilerOptions options = {});

// The chip name of a device ordinal ("GH100"), from CUPTI. kUnavailable when no CUDA driver is
// usable or cuInit has not run yet (CUPTI crashes in this call without a driver; it is not
// called then), kInvalidArgument for an ordinal the driver does not have.
Result<std::string> cupti_chip_name(int device);

}  // namespace cutriage::collectors
