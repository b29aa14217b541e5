// Control while running: how a deep-capture request reaches the agent besides the C API. A control
// file the flush thread polls, and an optional signal. Both only hand a request over; the agent
// opens the window (Agent::request_deep_capture).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config.h"

namespace cutriage::agent {

struct DeepRequest {
  uint32_t seconds = 0;  // 0: CUTRIAGE_DEEP_SECONDS
  std::string target;    // empty: CUTRIAGE_DEEP_TARGET
};

// One command, as the control file holds it: "deep [SECONDS] [TARGET]", blanks around words, a
// trailing newline and '#' comment lines ignored. SECONDS 1-3600; TARGET "top:N", a kernel name or
// "regex:<expression>" (the rest of the line, verbatim). nullopt with `error` set otherwise.
std::optional<DeepRequest> parse_control_command(std::string_view text, std::string* error);

// Reads and deletes the control file when it exists (at most 4 KiB are read). nullopt when there
// is none; a file that cannot be read or deleted gives `error` (the caller says it once).
std::optional<std::string> take_control_file(const std::string& path, std::string* error);

// Installs the handler for `signal` unless the application already handles or ignores it (then
// `why` says so and nothing changes). The handler only sets a flag (async-signal-safe).
bool install_control_signal(ControlSignal signal, std::string* why);
// Whether the signal arrived since the last call (clears the flag).
bool take_control_signal();
// Restores the default action if this agent installed the handler (at finish).
void remove_control_signal();

}  // namespace cutriage::agent
