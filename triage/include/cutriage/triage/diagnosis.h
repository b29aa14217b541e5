// What the engine concludes about one kernel. Plain C++ values; proto/ converts them to the
// cutriage.v1 schema (the enums here mirror the schema's, value for value, minus UNSPECIFIED = 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cutriage::triage {

enum class Decision : uint8_t {
  kUnspecified = 0,
  kD0Trust = 1,               // Are the collected metrics trustworthy?
  kD1WorkloadSize = 2,        // Is the workload too small to saturate the GPU?
  kD2Regime = 3,              // Latency-limited or throughput-limited?
  kD2ADispatch = 4,           // Orchestration/dispatch bottleneck?
  kD3IssueStalls = 5,         // What prevents instructions from issuing?
  kD4ComputePipe = 6,         // Which pipeline is the limiter?
  kD5MemoryMechanism = 7,     // Which memory mechanism dominates?
  kD6SourceLines = 8,         // Which code lines are the top contributors?
  kD7HardwareLimit = 9,       // Close to hardware limits for this algorithm?
};

enum class Outcome : uint8_t {
  kUnspecified = 0,
  kFired = 1,         // the check's condition holds: a finding
  kNotFired = 2,      // evaluated, condition does not hold
  kNotEvaluated = 3,  // required input missing or not applicable; `reason` says which
};

// The regime the kernel is in, as the routing concluded.
enum class Classification : uint8_t {
  kUnspecified = 0,
  kUntrusted = 1,           // Decision 0 failed: no verdict
  kUndersized = 2,          // Decision 1: workload too small to fill the GPU
  kDispatchBound = 3,       // Decision 2A
  kLatencyBound = 4,        // Decision 3
  kComputeBound = 5,        // Decision 4
  kMemoryBound = 6,         // Decision 5
  kSaturated = 7,           // Decision 2 "both high": compute and memory both near peak
  kInconclusive = 8,        // the metrics needed to route were missing
};

// The specific mechanism a finding blames.
enum class Limiter : uint8_t {
  kUnspecified = 0,
  // Decision 0
  kUntrustedMetrics = 1,
  // Decision 1
  kSmallGrid = 10,
  kPartialWarp = 11,
  kSmallBlock = 12,
  kLowAchievedOccupancy = 13,
  kIsolatedKernel = 14,
  kTailWave = 15,  // a few waves, the last one mostly empty (d1.tail_wave)
  // Decision 2 / 2A
  kIssueStarvation = 20,
  kSysmemPeerTraffic = 21,
  kDispatchGaps = 22,
  kSerializedCopyCompute = 23,
  // Decision 3
  kStallDominant = 30,       // one stall reason dominates; Finding::detail names it
  kWarpDivergence = 31,
  kPredication = 32,
  kOccupancyRegisters = 33,
  kOccupancySharedMemory = 34,
  kOccupancyBlockSlots = 35,
  kOccupancyWarpSlots = 36,
  kBytesInFlight = 37,
  kLowEligibleWarps = 38,
  // Decision 4
  kPipeFma = 40,
  kPipeAlu = 41,
  kPipeFp64 = 42,
  kPipeTensor = 43,
  kPipeLsu = 44,
  kPipeXu = 45,
  kPipeOther = 46,
  kIssueSlots = 47,
  kSlowPathArithmetic = 48,
  kInstructionReplay = 49,
  // Decision 5
  kL1texThroughput = 50,
  kUncoalescedGlobal = 51,
  kLowBytesPerSector = 52,
  kStoreAmplification = 53,
  kLocalMemorySpills = 54,
  kSharedBankConflicts = 55,
  kAtomicContention = 56,
  kMemoryFences = 57,
  kDramBandwidth = 58,
  kL2Bandwidth = 59,
  kRegisterFileSmemFill = 60,
  kExcessL2Transactions = 61,
  // Decision 6
  kHotSourceLine = 70,
  kFocusedStallOnLine = 71,
  // Decision 7
  kNearHardwareLimit = 80,
  kLoadImbalance = 81,
};

enum class Trust : uint8_t {
  kUnspecified = 0,
  kTrusted = 1,    // every Decision 0 check that could run passed
  kSuspect = 2,    // usable, with caveats listed in trust_notes (e.g. no unprofiled timing)
  kUntrusted = 3,  // a blocking Decision 0 check fired: no verdict is given
};

// One number a check read or computed.
struct Evidence {
  std::string metric;  // full metric name, or a derived quantity's name
  double value = 0;
  std::string unit;
  bool derived = false;
  bool deciding = false;  // the number the check's reading rests on; first in the check's evidence
};

struct ThresholdUse {
  std::string name;   // "<rule id>.<threshold>"
  double value = 0;
};

struct Finding {
  Limiter limiter = Limiter::kUnspecified;
  std::string summary;      // one sentence with the numbers: what is wrong
  std::string detail;       // e.g. the dominant stall reason's name
  std::string next_action;  // what to change, in the project's words
  // Kernel-local speedup bound if the problem were fixed (>= 1); nullopt when no arithmetic applies.
  std::optional<double> estimated_speedup;
  std::string estimate_basis;  // how the estimate was computed
  double severity = 0;  // how far past its threshold; ranks findings of equal rule priority
};

struct CheckResult {
  std::string rule_id;  // "d1.waves_below_one"
  Decision decision = Decision::kUnspecified;
  std::string title;
  Outcome outcome = Outcome::kUnspecified;
  std::string reason;  // for kNotEvaluated: what was missing; otherwise the rule's one-line reading
  std::vector<Evidence> evidence;
  std::vector<ThresholdUse> thresholds;
  std::optional<Finding> finding;  // set when fired
};

struct DecisionVisit {
  Decision decision = Decision::kUnspecified;
  std::string entered_because;  // why routing came here
  std::vector<CheckResult> checks;
};

struct Diagnosis {
  std::vector<DecisionVisit> path;  // in visiting order
  Classification classification = Classification::kUnspecified;
  Limiter primary_limiter = Limiter::kUnspecified;
  std::string primary_rule;  // id of the check whose finding is the verdict; empty when none
  std::string headline;     // verdict in one line
  std::string next_action;  // of the primary finding
  std::optional<double> estimated_speedup;  // of the primary finding (kernel-local)
  std::optional<double> amdahl_ceiling;     // 1 / (1 - time_share): what deleting the kernel buys
  Trust trust = Trust::kUnspecified;
  std::vector<std::string> trust_notes;  // data caveats: what made the verdict suspect, and notes on the counters
  // What limits source mapping (no line table, a device-debug build, build flags not recorded):
  // never a reason to doubt the counters, so never part of `trust`.
  std::vector<std::string> source_notes;
  bool at_hardware_limit = false;  // Decision 7 confirmed the limiter is within ~80% of peak
  // The library whose kernel this is, recognized by name (library.h: "cuBLAS", "NCCL", ...); empty
  // for the program's own kernels. When set, next_action is advice for the library's caller.
  std::string library;

  // Convenience for reports and tests.
  [[nodiscard]] const CheckResult* check(std::string_view rule_id) const;
  [[nodiscard]] bool fired(std::string_view rule_id) const;
  [[nodiscard]] bool visited(Decision d) const;
};

std::string_view to_string(Decision d);
std::string_view to_string(Outcome o);
std::string_view to_string(Classification c);
std::string_view to_string(Limiter l);
std::string_view to_string(Trust t);

}  // namespace cutriage::triage
