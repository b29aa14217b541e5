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
};

// What to collect, checked and compiled by the host for one chip. Immutable once made; shareable
// between contexts of the same chip.
struct MetricPlan {
  std::string chip;
  std::vector<std::string> metrics;        // accepted names, in request order
  std::vector<RejectedMetric> rejected;    // asked for but not collectable on this chip
  uint32_t passes = 0;                     // replay passes the config needs
  std::vector<uint8_t> config_image;       // opaque, for RangeProfiler::start
};

struct MetricReading {
  std::string name;
  double value = 0;
};

// Raw counter data of one profiled range, opaque outside the collector.
struct CounterData {
  std::vector<uint8_t> image;
  uint32_t ranges = 0;  // ranges found in the image; 1 for one auto-ranged kernel
};

class ProfilerHost {
 public:
  virtual ~ProfilerHost() = default;
  [[nodiscard]] virtual const std::string& chip() const = 0;
  // Validates every name on its own first (one rejected name poisons a CUPTI host object, see
  // shared notes), then builds the config image of the accepted ones. An empty accepted list is
  // an error.
  virtual Result<MetricPlan> plan(const std::vector<std::string>& metrics) = 0;
  // Evaluates the plan's metrics on counter data of range `range`.
  virtual Result<std::vector<MetricReading>> evaluate(const MetricPlan& plan,
                                                      const CounterData& data,
                                                      uint32_t range = 0) = 0;
};

// Creates the CUPTI-backed host for `chip` ("GH100", from cuptiDeviceGetChipName). Needs no GPU.
Result<std::unique_ptr<ProfilerHost>> make_cupti_profiler_host(const std::string& chip);

// Wraps one launch in auto range + kernel replay. begin() on launch entry, end() on launch exit.
class RangeProfiler {
 public:
  virtual ~RangeProfiler() = default;
  virtual Status begin(const MetricPlan& plan) = 0;
  // Stops, decodes and returns the counter data. Called once after every successful begin().
  virtual Result<CounterData> end() = 0;
};

// `cu_context` is a CUcontext. Calls cuptiProfilerInitialize once per process (CUPTI crashes in
// Start without it). Fails with kPermissionDenied when counters are restricted to admin users.
Result<std::unique_ptr<RangeProfiler>> make_cupti_range_profiler(void* cu_context);

// The chip name of a device ordinal ("GH100"), from CUPTI.
Result<std::string> cupti_chip_name(int device);

}  // namespace cutriage::collectors
