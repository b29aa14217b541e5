// Internal: the vocabulary Decision 2's classifier rules and the router share, so the rules record
// their conclusion (in Finding::detail) and the engine reads it back without recomputing it.
#pragma once

#include <cstdint>
#include <string_view>

namespace cutriage::triage::detail {

// Metric names the router and several rules read.
inline constexpr std::string_view kSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kMemThroughput =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kAchievedOccupancy =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kIssueActivePct =
    "smsp__issue_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kTheoreticalOccupancy = "sm__maximum_warps_per_active_cycle_pct";

// The engine writes the regime it routed to under this name (kDerived) before Decision 7 runs, so
// Decision 7's rules know which resource Decisions 4/5 picked. Values: RoutedRegime below.
inline constexpr std::string_view kRoutedRegimeMetric = "cutriage__routed_regime";
enum class RoutedRegime : uint8_t { kUnknown = 0, kLatency = 1, kCompute = 2, kMemory = 3, kSaturated = 4 };

// Decision 2's top-level comparison of SM and memory throughput (percent of peak, elapsed):
//   both_high         both >= high (80)                                  -> D4 + D7, saturated
//   both_low          both <  low (60)                                   -> D3
//   compute_dominant  SM exceeds memory by more than `gap` points (20)   -> D4
//   memory_dominant   memory exceeds SM by more than `gap` points        -> D5
//   ambiguous         anything else (e.g. both 60-80, or within 20 points) -> the 2x2 quadrant
enum class Regime : uint8_t { kUnknown, kBothLow, kComputeDominant, kMemoryDominant, kBothHigh, kAmbiguous };

inline Regime classify_regime(double sm, double mem, double low, double high, double gap) {
  if (sm >= high && mem >= high) return Regime::kBothHigh;
  if (sm < low && mem < low) return Regime::kBothLow;
  if (sm - mem > gap) return Regime::kComputeDominant;
  if (mem - sm > gap) return Regime::kMemoryDominant;
  return Regime::kAmbiguous;
}

inline std::string_view regime_name(Regime r) {
  switch (r) {
    case Regime::kBothLow: return "both_low";
    case Regime::kComputeDominant: return "compute_dominant";
    case Regime::kMemoryDominant: return "memory_dominant";
    case Regime::kBothHigh: return "both_high";
    case Regime::kAmbiguous: return "ambiguous";
    case Regime::kUnknown: break;
  }
  return "unknown";
}

inline Regime parse_regime(std::string_view s) {
  for (Regime r : {Regime::kBothLow, Regime::kComputeDominant, Regime::kMemoryDominant,
                   Regime::kBothHigh, Regime::kAmbiguous}) {
    if (regime_name(r) == s) return r;
  }
  return Regime::kUnknown;
}

// The occupancy x utilization 2x2 (guide 3.2.3 / 3.8.1). Utilization is the SM pipeline
// utilization, read as sm__throughput.avg.pct_of_peak_sustained_elapsed. With high utilization the
// router sends the kernel to D4, or to D5 when memory throughput is the higher of the two (3.8.1:
// "optimize the hot pipeline or memory tier first").
// Without the achieved occupancy, utilization alone still places the kernel in a half of the 2x2
// whose two quadrants route the same way (both low-utilization quadrants go to D3, both high ones
// to D4 or D5): the route is known, only the quadrant's occupancy reading (D1 classifying a
// low/low kernel, its occupancy limiter) is not. PM samples of a graph node carry no occupancy
// (docs/graphs.md), so this is how they route an ambiguous SM/memory balance.
enum class Quadrant : uint8_t {
  kUnknown,
  kLowOccLowUtil,      // -> D1 + D3 (underfill or launch-limiting resource)
  kLowOccHighUtil,     // -> D4 (or D5 when memory is the busier side): optimize the hot unit
  kHighOccLowUtil,     // -> D3: warps resident but not issuing
  kHighOccHighUtil,    // -> D4 + D7: saturated SM
  kUnknownOccLowUtil,  // -> D3, as either low-utilization quadrant
  kUnknownOccHighUtil, // -> D4 or D5, as either high-utilization quadrant
};

inline Quadrant classify_quadrant(double occupancy, double utilization, double occ_threshold,
                                  double util_threshold) {
  const bool occ_high = occupancy >= occ_threshold;
  const bool util_high = utilization >= util_threshold;
  if (occ_high) return util_high ? Quadrant::kHighOccHighUtil : Quadrant::kHighOccLowUtil;
  return util_high ? Quadrant::kLowOccHighUtil : Quadrant::kLowOccLowUtil;
}

inline std::string_view quadrant_name(Quadrant q) {
  switch (q) {
    case Quadrant::kLowOccLowUtil: return "low_occupancy_low_utilization";
    case Quadrant::kLowOccHighUtil: return "low_occupancy_high_utilization";
    case Quadrant::kHighOccLowUtil: return "high_occupancy_low_utilization";
    case Quadrant::kHighOccHighUtil: return "high_occupancy_high_utilization";
    case Quadrant::kUnknownOccLowUtil: return "unknown_occupancy_low_utilization";
    case Quadrant::kUnknownOccHighUtil: return "unknown_occupancy_high_utilization";
    case Quadrant::kUnknown: break;
  }
  return "unknown";
}

inline Quadrant parse_quadrant(std::string_view s) {
  for (Quadrant q : {Quadrant::kLowOccLowUtil, Quadrant::kLowOccHighUtil, Quadrant::kHighOccLowUtil,
                     Quadrant::kHighOccHighUtil, Quadrant::kUnknownOccLowUtil, Quadrant::kUnknownOccHighUtil}) {
    if (quadrant_name(q) == s) return q;
  }
  return Quadrant::kUnknown;
}

}  // namespace cutriage::triage::detail
