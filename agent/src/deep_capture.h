// Deep captures on request: the C API, the control signal and the control file ask for a window
// in which the targeted families are profiled with replay and PC-sampled outside the budget; this
// opens the window (the Selector's state, under the family table's lock), closes it when it
// expired or got everything, and writes each request's record. Refusals are written and said once
// per reason: an application calling in a loop must not fill the file or the log.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "config.h"
#include "family.h"
#include "log.h"
#include "record_output.h"
#include "selection.h"

namespace cutriage::agent {

class DeepCaptures {
 public:
  struct Parts {
    const AgentConfig& config;
    FamilyTable& families;
    Selector& selector;
    RecordOutput& output;
    Logger& log;
    std::function<uint64_t()> now_unix_ns;
    std::function<uint64_t()> monotonic_ns;
    std::function<bool()> accepting;  // the agent is profiling (requests are refused otherwise)
    std::function<bool()> finished;   // the agent finished: an open window closes
  };
  explicit DeepCaptures(Parts parts) : p_(std::move(parts)) {}

  // Opens a window (see Agent::request_deep_capture); 0 with `error` set when refused.
  uint64_t request(wire::ControlSource source, const std::string& target, uint32_t seconds, std::string* error);
  // Closes the window when it expired or got everything (the family table's lock NOT held).
  void check();
  // The flush thread's control duties: the control file and the signal.
  void poll();

 private:
  Parts p_;
  // Under the family table's lock.
  uint64_t next_request_id_ = 1;
  std::set<std::string> control_errors_;  // refusal reasons written and said once each
};

}  // namespace cutriage::agent
