// What the control-file fuzzer does with one input, shared by the libFuzzer target
// (tests/fuzz/fuzz_control.cpp) and the Catch2 regression tests (tests/unit/agent/): the text of a
// control file as the agent reads it (agent/src/control.h). Returns the first contract violation
// as one line ("" when none).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "control.h"

namespace cutriage::fuzz {

// parse_control_command: a refusal always says why, in one line; an accepted request keeps
// SECONDS in 0 (the default) to 3600 and a one-line target; parsing is deterministic.
inline std::string exercise_control(std::string_view text) {
  std::string error;
  const std::optional<agent::DeepRequest> request = agent::parse_control_command(text, &error);
  std::string error_again;
  const std::optional<agent::DeepRequest> again = agent::parse_control_command(text, &error_again);
  if (request.has_value() != again.has_value() || error != error_again) return "not deterministic";
  if (!request) {
    if (error.empty()) return "refused without an error";
    if (error.find('\n') != std::string::npos) return "the error is not one line: " + error;
    return "";
  }
  if (request->seconds > 3600) return "SECONDS " + std::to_string(request->seconds) + " accepted (at most 3600)";
  if (request->target.find('\n') != std::string::npos) return "a target of several lines";
  if (again->seconds != request->seconds || again->target != request->target) return "not deterministic";
  return "";
}

}  // namespace cutriage::fuzz
