// Deep captures on request: the C API, the control signal and the control file ask for a window
// in which the targeted families are profiled with replay and PC-sampled outside the budget; this
// opens the window (the Selector's state, under the family table's lock), closes it when it
// expired or got everything, and writes each request's record. Refusals are written and said once
// per reason, and at most kMaxRefusalsWritten of them in all (each junk control file has a reason
// of its own): an application calling in a loop, or a script writing junk into the control file,
// must not fill the file or the log. The refusals past the limit are counted, and the count is
// written and said once when the agent finishes.
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

  // Refusals written (and said) in a run; the rest are only counted.
  static constexpr uint64_t kMaxRefusalsWritten = 3;

  // Opens a window (see Agent::request_deep_capture); 0 with `error` set when refused.
  uint64_t request(wire::ControlSource source, const std::string& target, uint32_t seconds, std::string* error);
  // Closes the window when it expired or got everything (the family table's lock NOT held). Once
  // the agent finished, also writes and says how many refusals were ignored since the last count.
  void check();
  // The flush thread's control duties: the control file and the signal.
  void poll();

 private:
  Parts p_;
  // Under the family table's lock.
  uint64_t next_request_id_ = 1;
  std::set<std::string> control_errors_;  // refusal reasons written and said once each
  uint64_t refusals_written_ = 0;
  uint64_t refusals_ignored_ = 0;          // past kMaxRefusalsWritten: counted only
  wire::ControlSource ignored_source_ = wire::ControlSource::kFile;  // of the last one ignored
  uint64_t ignored_reported_ = 0;          // of refusals_ignored_, already written in a record

  // Whether a refusal (new reason or not) may be written and said; counts it otherwise. The first
  // one ignored says so, once. Under the family table's lock (the logger's lock is a leaf).
  bool admit_refusal_locked(wire::ControlSource source);
  void report_ignored();
};

}  // namespace cutriage::agent
