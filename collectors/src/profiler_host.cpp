// ProfilerHost on the CUPTI Profiler Host API (cupti_profiler_host.h, CUDA 13.0). Runs offline:
// it needs the chip name only, no GPU, no driver, no counter-availability image (that image is
// only required for chips newer than the CUPTI release).
//
// CUPTI behaviour this is built around (seen offline on GH100 with CUDA 13.0; the tests in
// tests/unit/collectors/test_profiler_host.cpp pin each of them):
//  * a rejected cuptiProfilerHostConfigAddMetrics poisons its host object: every later call on it
//    fails (CUPTI_ERROR_UNKNOWN), valid names included. So configs are only ever built on fresh
//    host objects, and names are checked first on a separate catalog object that never gets
//    ConfigAddMetrics;
//  * cuptiProfilerHostGetMetricProperties accepts full names ("base.rollup.submetric") and bare
//    base names, and rejects bad suffixes: with a check for the missing suffix it explains almost
//    every rejection. It is not the final word: a few names it accepts are refused by
//    ConfigAddMetrics (ctc__*.sum.pct_of_peak_sustained_elapsed), and some names valid alone
//    cannot share a config (pcie__* with dram__*: CUPTI_ERROR_NOT_SUPPORTED). The config build
//    finds those by bisection, after keeping apart the counter units known to exclude each other
//    (kExclusiveUnits): every rule list holds both of GH100's, and finding them by bisection took
//    most of a full list's plan;
//  * all names go to ConfigAddMetrics in one call: adding the same 112 names one call at a time
//    scheduled 136 passes instead of 20;
//  * EvaluateToGpuValues and GetCounterDataInfo read a damaged counter-data image out of bounds
//    and crash; evaluate() checks the image's checksum before CUPTI sees it.
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "c_strings.h"
#include "checksum.h"
#include "cupti_check.h"
#include "cutriage/collectors/host_lifetime.h"
#include "cutriage/collectors/range_profiler.h"
#include "host_gate.h"

namespace cutriage::collectors {
namespace {

// Compiled configs kept for evaluate(); a plan evicted from this cache is compiled again.
constexpr size_t kMaxCachedConfigs = 8;

std::string supported_chips() {
  CUpti_Profiler_Host_GetSupportedChips_Params params{};
  params.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE;
  if (cuptiProfilerHostGetSupportedChips(&params) != CUPTI_SUCCESS || params.ppChipNames == nullptr) {
    return "(CUPTI did not list them)";
  }
  std::string out;
  for (size_t i = 0; i < params.numChips; ++i) {
    if (params.ppChipNames[i] == nullptr) continue;
    if (!out.empty()) out += ' ';
    out += params.ppChipNames[i];
  }
  return out;
}

// Owns one CUpti_Profiler_Host_Object (range-profiler type) for the object's lifetime.
class HostObject {
 public:
  static Result<std::unique_ptr<HostObject>> create(const std::string& chip) {
    CUpti_Profiler_Host_Initialize_Params params{};
    params.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip.c_str();
    params.pCounterAvailabilityImage = nullptr;
    const CUptiResult result = cuptiProfilerHostInitialize(&params);
    if (result == CUPTI_ERROR_INVALID_CHIP_NAME) {
      return Status(StatusCode::kInvalidArgument,
                    "cuptiProfilerHostInitialize: chip \"" + chip + "\" is not known to this CUPTI (" +
                        cupti_result_name(result) + "); supported chips: " + supported_chips());
    }
    if (result != CUPTI_SUCCESS || params.pHostObject == nullptr) {
      return cupti_status(result != CUPTI_SUCCESS ? result : CUPTI_ERROR_UNKNOWN,
                          "cuptiProfilerHostInitialize(chip \"" + chip + "\")");
    }
    return std::unique_ptr<HostObject>(new HostObject(params.pHostObject));
  }

  ~HostObject() {
    if (host_calls_closed()) return;  // the library may be gone: the object goes with the process
    CUpti_Profiler_Host_Deinitialize_Params params{};
    params.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    params.pHostObject = object_;
    (void)cuptiProfilerHostDeinitialize(&params);  // nothing to do about a failure here
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;

  [[nodiscard]] CUpti_Profiler_Host_Object* get() const { return object_; }

 private:
  explicit HostObject(CUpti_Profiler_Host_Object* object) : object_(object) {}
  CUpti_Profiler_Host_Object* object_;
};

// Counter units whose metrics CUPTI never puts in one config on a chip, whichever metrics of the
// two units are asked for (CUPTI_ERROR_NOT_SUPPORTED from ConfigAddMetrics), and which of the two
// gives way. Seen offline with CUDA 13.0 for every pair of GH100's dram__ and pcie__ base metrics
// (pcie__ metrics refuse sm__ and smsp__ ones too: they go with very little).
// tests/unit/collectors/test_profiler_host.cpp checks each pair with bisection alone, so a CUPTI
// that lifts the restriction fails that test instead of losing the PCIe counters silently.
struct ExclusiveUnits {
  std::string_view chip;
  std::string_view yields;  // metric-name prefixes, "unit__"
  std::string_view keeps;
};
constexpr ExclusiveUnits kExclusiveUnits[] = {
    {"GH100", "pcie__", "dram__"},
};

// Drops every name of a yielding unit when the request holds a name of the unit it yields to,
// before any compile. Bisection alone finds the same pairs at the cost of several compiles of
// the whole list (most of a rule list's plan on GH100), and, request order deciding, would keep a
// pcie__ metric asked first and drop every later metric that refuses it.
void keep_exclusive_units_apart(const std::string& chip, std::vector<std::string>& names,
                                std::vector<RejectedMetric>& rejected) {
  for (const ExclusiveUnits& units : kExclusiveUnits) {
    if (units.chip != chip) continue;
    auto keeper = std::find_if(names.begin(), names.end(),
                               [&](const std::string& n) { return n.starts_with(units.keeps); });
    if (keeper == names.end()) continue;
    std::string reason = "cannot be collected in one config with ";
    reason += *keeper;
    reason += " (CUPTI refuses ";
    reason += units.yields;
    reason += " and ";
    reason += units.keeps;
    reason += " metrics together on ";
    reason += chip;
    reason += ")";
    std::erase_if(names, [&](const std::string& n) {
      if (!n.starts_with(units.yields)) return false;
      rejected.push_back({n, reason, true});
      return true;
    });
  }
}

// A config image built for one list of names, with the host object that built it: evaluation
// uses that same object, as NVIDIA's range_profiling sample does.
struct CompiledConfig {
  std::unique_ptr<HostObject> host;
  std::vector<uint8_t> image;
  uint32_t passes = 0;
};

struct CompileAttempt {
  std::optional<CompiledConfig> config;
  Status status;                // why config is empty
  bool rejected_names = false;  // the failure came from ConfigAddMetrics (a name or a combination)
};

CompileAttempt compile(const std::string& chip, const std::vector<std::string>& names) {
  CompileAttempt attempt;
  auto host = HostObject::create(chip);
  if (!host.is_ok()) {
    attempt.status = host.status();
    return attempt;
  }
  CompiledConfig config;
  config.host = std::move(host).value();
  CUpti_Profiler_Host_Object* object = config.host->get();

  std::vector<const char*> c_names = c_strings(names);
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = object;
  add.ppMetricNames = c_names.data();
  add.numMetrics = c_names.size();
  if (Status s = CUTRIAGE_CUPTI_STATUS(cuptiProfilerHostConfigAddMetrics(&add)); !s.is_ok()) {
    attempt.status = std::move(s);
    attempt.rejected_names = true;
    return attempt;
  }

  CUpti_Profiler_Host_GetConfigImageSize_Params size{};
  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = object;
  if (Status s = CUTRIAGE_CUPTI_STATUS(cuptiProfilerHostGetConfigImageSize(&size)); !s.is_ok()) {
    attempt.status = std::move(s);
    return attempt;
  }
  config.image.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{};
  image.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  image.pHostObject = object;
  image.configImageSize = config.image.size();
  image.pConfigImage = config.image.data();
  if (Status s = CUTRIAGE_CUPTI_STATUS(cuptiProfilerHostGetConfigImage(&image)); !s.is_ok()) {
    attempt.status = std::move(s);
    return attempt;
  }

  CUpti_Profiler_Host_GetNumOfPasses_Params passes{};
  passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  passes.configImageSize = config.image.size();
  passes.pConfigImage = config.image.data();
  if (Status s = CUTRIAGE_CUPTI_STATUS(cuptiProfilerHostGetNumOfPasses(&passes)); !s.is_ok()) {
    attempt.status = std::move(s);
    return attempt;
  }
  if (passes.numOfPasses == 0 || config.image.empty()) {
    attempt.status = Status(StatusCode::kInternal, "CUPTI built an empty config image (0 passes)");
    return attempt;
  }
  config.passes = static_cast<uint32_t>(passes.numOfPasses);
  attempt.config = std::move(config);
  return attempt;
}

const char* type_name(CUpti_MetricType type) {
  switch (type) {
    case CUPTI_METRIC_TYPE_COUNTER: return "counter";
    case CUPTI_METRIC_TYPE_RATIO: return "ratio";
    case CUPTI_METRIC_TYPE_THROUGHPUT: return "throughput";
    default: return "metric";
  }
}

const char* suffix_hint(CUpti_MetricType type) {
  switch (type) {
    case CUPTI_METRIC_TYPE_COUNTER: return "a rollup: .sum, .avg, .min or .max";
    case CUPTI_METRIC_TYPE_RATIO: return ".ratio, .pct or .max_rate";
    case CUPTI_METRIC_TYPE_THROUGHPUT:
      return "a rollup and a peak, e.g. .avg.pct_of_peak_sustained_elapsed";
    default: return "a suffix";
  }
}

// Where the suffix starts: the first '.' after the last "__" (base names may carry a dotted
// prefix, e.g. "CTC.TriageCompute.ctc__rx_bytes"). npos for a bare base name.
size_t suffix_start(const std::string& name) {
  const size_t sep = name.rfind("__");
  return name.find('.', sep == std::string::npos ? 0 : sep);
}

class CuptiProfilerHost final : public ProfilerHost {
 public:
  CuptiProfilerHost(std::string chip, std::unique_ptr<HostObject> catalog, ConflictSearch search)
      : chip_(std::move(chip)), search_(search), catalog_(std::move(catalog)) {}

  [[nodiscard]] const std::string& chip() const override { return chip_; }

  Result<MetricPlan> plan(const std::vector<std::string>& metrics) override {
    const HostCall host;
    if (!host) return HostCall::refused();
    return plan_in_call(metrics);
  }

  // A first plan of each kind of metric name (a counter, a ratio, a throughput), inside the
  // HostCall of make_cupti_profiler_host: the host library builds state on a first use of these
  // calls (seen: a crash in GetMetricProperties of a ratio when exit came during the process's
  // first plan), and the exit handler registered after this runs before what it registered.
  void warm_up() {
    (void)plan_in_call({"gpu__time_duration.sum", "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
                        "sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  }

 private:
  // plan() inside a HostCall held by the caller.
  Result<MetricPlan> plan_in_call(const std::vector<std::string>& metrics) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (metrics.empty()) {
      return Status(StatusCode::kInvalidArgument, "plan(): no metric requested");
    }
    MetricPlan plan;
    plan.chip = chip_;
    std::unordered_map<std::string, size_t> order;  // request position, to report in order
    std::vector<std::string> candidates;
    for (const std::string& name : metrics) {
      if (!order.emplace(name, order.size()).second) continue;  // duplicate: planned once
      if (const std::string& reason = name_verdict(name); !reason.empty()) {
        plan.rejected.push_back({name, reason});
      } else {
        candidates.push_back(name);
      }
    }

    if (search_ == ConflictSearch::kKnownUnitsFirst) keep_exclusive_units_apart(chip_, candidates, plan.rejected);
    std::optional<CompiledConfig> config;
    while (!candidates.empty()) {
      CompileAttempt attempt = compile(chip_, candidates);
      if (attempt.config) {
        config = std::move(attempt.config);
        break;
      }
      if (!attempt.rejected_names) return attempt.status;
      // A name the config cannot take after all: find the first one, in request order, and drop it.
      RejectedMetric rejected = find_first_unplannable(candidates);
      std::erase(candidates, rejected.name);
      plan.rejected.push_back(std::move(rejected));
    }
    std::sort(plan.rejected.begin(), plan.rejected.end(),
              [&](const RejectedMetric& a, const RejectedMetric& b) { return order[a.name] < order[b.name]; });
    if (!config) {
      std::string message = "plan(): none of the " + std::to_string(order.size()) +
                            " requested metrics can be collected on " + chip_;
      for (size_t i = 0; i < plan.rejected.size() && i < 3; ++i) {
        message += (i == 0 ? ": " : "; ") + plan.rejected[i].name + " (" + plan.rejected[i].reason + ")";
      }
      if (plan.rejected.size() > 3) message += "; ...";
      return Status(StatusCode::kInvalidArgument, std::move(message));
    }

    plan.metrics = candidates;
    plan.passes = config->passes;
    plan.config_image = config->image;
    remember(std::move(candidates), std::move(*config));
    return plan;
  }

 public:
  Result<std::vector<MetricReading>> evaluate(const MetricPlan& plan, const CounterData& data,
                                              uint32_t range) override {
    const HostCall host;
    if (!host) return HostCall::refused();
    const std::lock_guard<std::mutex> lock(mutex_);
    if (plan.chip != chip_) {
      return Status(StatusCode::kInvalidArgument,
                    "evaluate(): the plan is for chip " + plan.chip + ", this host is for " + chip_);
    }
    if (plan.metrics.empty() || plan.config_image.empty()) {
      return Status(StatusCode::kInvalidArgument, "evaluate(): the plan has no metrics (not made by plan())");
    }
    if (data.image.empty()) {
      return Status(StatusCode::kInvalidArgument, "evaluate(): the counter data image is empty");
    }
    // CUPTI reads whatever the image header says, far out of bounds for a damaged image.
    if (fnv1a64(data.image) != data.image_checksum) {
      return Status(StatusCode::kInvalidArgument,
                    "evaluate(): the counter data image is damaged or was not produced by "
                    "RangeProfiler::end() (checksum mismatch); not passed to CUPTI");
    }
    if (fnv1a64(plan.config_image) != data.config_checksum) {
      return Status(StatusCode::kInvalidArgument,
                    "evaluate(): the counter data was collected with another plan's config image");
    }
    if (range >= data.ranges) {
      return Status(StatusCode::kInvalidArgument,
                    "evaluate(): range " + std::to_string(range) + " requested, the data holds " +
                        std::to_string(data.ranges));
    }

    CUpti_RangeProfiler_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = data.image.data();
    info.counterDataImageSize = data.image.size();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerGetCounterDataInfo(&info));
    if (range >= info.numTotalRanges) {
      return Status(StatusCode::kInvalidArgument,
                    "evaluate(): range " + std::to_string(range) + " requested, CUPTI finds " +
                        std::to_string(info.numTotalRanges) + " in the image");
    }

    CUTRIAGE_ASSIGN_OR_RETURN(CUpti_Profiler_Host_Object * object, host_for(plan.metrics));
    std::vector<const char*> names = c_strings(plan.metrics);
    std::vector<double> values(names.size(), 0.0);
    CUpti_Profiler_Host_EvaluateToGpuValues_Params params{};
    params.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    params.pHostObject = object;
    params.pCounterDataImage = data.image.data();
    params.counterDataImageSize = data.image.size();
    params.rangeIndex = range;
    params.ppMetricNames = names.data();
    params.numMetrics = names.size();
    params.pMetricValues = values.data();
    CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostEvaluateToGpuValues(&params));
    // The process's first evaluation may have built state of the library's own (host_loaded).
    static std::atomic<bool> evaluated{false};
    if (!evaluated.exchange(true)) host_loaded();

    std::vector<MetricReading> readings;
    readings.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) readings.push_back({plan.metrics[i], values[i]});
    return readings;
  }

 private:
  // Empty when `name` passes the per-name checks, else why not. Cached: a name's verdict does not
  // change for a chip.
  const std::string& name_verdict(const std::string& name) {
    auto it = verdicts_.find(name);
    if (it == verdicts_.end()) it = verdicts_.emplace(name, check_name(name)).first;
    return it->second;
  }

  std::string check_name(const std::string& name) const {
    if (name.empty()) return "empty metric name";
    CUpti_MetricType type = CUPTI_METRIC_TYPE_COUNTER;
    const CUptiResult full = properties(name, &type);
    const size_t dot = suffix_start(name);
    if (full == CUPTI_SUCCESS) {
      if (dot == std::string::npos) {
        return std::string("a bare ") + type_name(type) + " name: needs " + suffix_hint(type);
      }
      return {};
    }
    if (full != CUPTI_ERROR_INVALID_METRIC_NAME) {
      return std::string("cuptiProfilerHostGetMetricProperties: ") + cupti_result_name(full);
    }
    if (dot != std::string::npos) {
      const std::string base = name.substr(0, dot);
      if (properties(base, &type) == CUPTI_SUCCESS) {
        return "\"" + name.substr(dot) + "\" is not a valid suffix of the " + type_name(type) + " " +
               base + "; valid: " + submetric_examples(base, type);
      }
    }
    std::string reason = "not a " + chip_ + " metric";
    if (name.rfind("launch__", 0) == 0) {
      reason += " (launch__* are Nsight Compute's own; compute them from the launch configuration)";
    } else {
      reason += " (not in CUPTI's metric list for this chip; Nsight Compute derives some names itself)";
    }
    return reason;
  }

  CUptiResult properties(const std::string& name, CUpti_MetricType* type) const {
    CUpti_Profiler_Host_GetMetricProperties_Params params{};
    params.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    params.pHostObject = catalog_->get();
    params.pMetricName = name.c_str();
    const CUptiResult result = cuptiProfilerHostGetMetricProperties(&params);
    if (result == CUPTI_SUCCESS) *type = params.metricType;
    return result;
  }

  std::string submetric_examples(const std::string& base, CUpti_MetricType type) const {
    CUpti_Profiler_Host_GetSubMetrics_Params params{};
    params.structSize = CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE;
    params.pHostObject = catalog_->get();
    params.metricType = type;
    params.pMetricName = base.c_str();
    if (cuptiProfilerHostGetSubMetrics(&params) != CUPTI_SUCCESS || params.ppSubMetrics == nullptr) {
      return suffix_hint(type);
    }
    std::string out;
    constexpr size_t kShown = 6;
    for (size_t i = 0; i < params.numOfSubmetrics && i < kShown; ++i) {
      if (!out.empty()) out += ' ';
      out += params.ppSubMetrics[i];
    }
    if (params.numOfSubmetrics > kShown) {
      out += " ... (" + std::to_string(params.numOfSubmetrics) + " in all)";
    }
    return out;
  }

  // `names` do not compile together. Finds the first name that makes a prefix of `names` fail
  // (each probe on a fresh host object: a failure poisons the one it ran on), and says whether it
  // fails alone or which earlier name it cannot share a config with.
  RejectedMetric find_first_unplannable(const std::vector<std::string>& names) {
    const auto prefix_fails = [&](const std::vector<std::string>& probe) {
      return !compile(chip_, probe).config.has_value();
    };
    // Invariant: prefix of length lo compiles (0: trivially), prefix of length hi does not.
    size_t lo = 0;
    size_t hi = names.size();
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      if (prefix_fails(std::vector<std::string>(names.begin(),
                                                names.begin() + static_cast<std::ptrdiff_t>(mid)))) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    const std::string culprit = names[hi - 1];
    CompileAttempt alone = compile(chip_, {culprit});
    if (!alone.config) {
      std::string reason = "rejected by CUPTI: " + alone.status.message();
      verdicts_[culprit] = reason;  // fails on its own: true of every request
      return {culprit, std::move(reason)};
    }
    // The earliest partner: smallest j such that names[0, j) + culprit fails.
    size_t good = 0;
    size_t bad = hi - 1;
    const auto with_culprit = [&](size_t j) {
      std::vector<std::string> probe(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(j));
      probe.push_back(culprit);
      return probe;
    };
    if (bad == 0 || !prefix_fails(with_culprit(bad))) {
      return {culprit, "cannot be collected in one config with the metrics requested before it", true};
    }
    while (bad - good > 1) {
      const size_t mid = good + (bad - good) / 2;
      if (prefix_fails(with_culprit(mid))) {
        bad = mid;
      } else {
        good = mid;
      }
    }
    return {culprit,
            "cannot be collected in one config with " + names[bad - 1] + ", requested before it (CUPTI refuses the combination)",
            true};
  }

  void remember(std::vector<std::string> names, CompiledConfig config) {
    if (configs_.size() >= kMaxCachedConfigs && configs_.find(names) == configs_.end()) {
      configs_.erase(configs_.begin());
    }
    configs_.insert_or_assign(std::move(names), std::move(config));
  }

  // The host object that compiled `names`, compiling them again if the cache lost it.
  Result<CUpti_Profiler_Host_Object*> host_for(const std::vector<std::string>& names) {
    auto it = configs_.find(names);
    if (it == configs_.end()) {
      CompileAttempt attempt = compile(chip_, names);
      if (!attempt.config) return attempt.status;
      remember(names, std::move(*attempt.config));
      it = configs_.find(names);
    }
    return it->second.host->get();
  }

  const std::string chip_;
  const ConflictSearch search_;
  std::mutex mutex_;  // guards everything below, and every CUPTI call made through them
  std::unique_ptr<HostObject> catalog_;  // metric properties only: never given ConfigAddMetrics
  std::unordered_map<std::string, std::string> verdicts_;
  std::map<std::vector<std::string>, CompiledConfig> configs_;
};

}  // namespace

Result<std::unique_ptr<ProfilerHost>> make_cupti_profiler_host(const std::string& chip, ConflictSearch search) {
  if (chip.empty()) {
    return Status(StatusCode::kInvalidArgument, "make_cupti_profiler_host: empty chip name");
  }
  const HostCall host;
  if (!host) return HostCall::refused();
  CUTRIAGE_ASSIGN_OR_RETURN(std::unique_ptr<HostObject> catalog, HostObject::create(chip));
  auto made = std::make_unique<CuptiProfilerHost>(chip, std::move(catalog), search);
  made->warm_up();
  host_loaded();
  return std::unique_ptr<ProfilerHost>(std::move(made));
}

}  // namespace cutriage::collectors
