// The causal chain of `cutriage diff`: the BEFORE verdict's deciding rule and next action predict
// which way a counter moves when the change did what the verdict asked for (fewer sectors per
// request after coalescing, more waves after a larger grid). The table of predictions is data,
// one entry per rule, written beside the rules' meanings (triage/src/rules_d*.cpp); it is never
// derived from a rule's text, so a reworded finding cannot change what diff checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cutriage::tools {

enum class Direction : uint8_t {
  kFall,  // the number shrinks when the cause the rule names is removed
  kRise,  // it grows (occupancy, waves, bytes per sector)
};

struct CausalPrediction {
  std::string_view rule_id;
  // The counter to watch; empty = the rule's deciding metric as the BEFORE file recorded it.
  std::string_view metric;
  Direction direction;
  std::string_view why;  // one line: why the fix moves it this way
};

// The predictions of a rule, in the order to try them (the first one whose counter both sides
// hold decides). Empty when the rule's fix has no counter that must move one way: a saturated
// unit stays saturated while doing less work, so only the duration can tell (d7.limiter_near_peak,
// d4.limiting_pipe, the routing checks of Decision 2).
std::vector<CausalPrediction> predictions_for(std::string_view rule_id);

// The whole table (docs/diff.md lists it; tests check every rule id in it exists).
const std::vector<CausalPrediction>& causal_table();

const char* to_string(Direction d);

// The link labels of the chain.
enum class ChainLabel : uint8_t {
  kConfirmed,     // faster beyond noise, and the predicted counter moved the predicted way beyond noise
  kUnexplained,   // faster beyond noise, but the predicted counter did not move (or was not collected)
  kRegressed,     // slower beyond noise
  kNoChange,      // the duration moved less than the noise
  kNoPrediction,  // faster, but the BEFORE verdict predicts no counter (no profile, or a rule without one)
};
const char* to_string(ChainLabel label);

// How a counter moved: its relative change in percent, and whether that is the predicted
// direction by more than `noise_pct`.
struct CounterMove {
  std::string metric;
  Direction direction = Direction::kFall;
  double before = 0;
  double after = 0;
  double change_pct = 0;   // (after - before) / |before| * 100; +/-inf when before is 0
  bool as_predicted = false;
};

// true when `after` differs from `before` in direction `d` by more than `noise_pct` percent.
bool moved(double before, double after, Direction d, double noise_pct);

// The chain's label from the duration change (percent, negative = faster) and the counter move
// (nullopt: no prediction could be checked; `predicted` says whether one existed).
ChainLabel chain_label(double duration_change_pct, double noise_pct, const std::optional<CounterMove>& counter,
                       bool predicted);

}  // namespace cutriage::tools
