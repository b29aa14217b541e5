// Brackets the Profiler Host API calls (profiler_host.cpp, pm_sampling.cpp) so that none runs once
// the host library is going away at exit (cutriage/collectors/host_lifetime.h says why).
#pragma once

#include <shared_mutex>

#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// Held around one or more host calls; false when the process is exiting (make no call then).
class HostCall {
 public:
  HostCall();
  HostCall(const HostCall&) = delete;
  HostCall& operator=(const HostCall&) = delete;
  explicit operator bool() const { return lock_.owns_lock(); }
  // What a refused call returns.
  static Status refused();

 private:
  std::shared_lock<std::shared_timed_mutex> lock_;
};

// After the host library may have registered destructors of its own: a successful
// cuptiProfilerHostInitialize (the library is loaded by then) and the first use of a call that
// builds state lazily (its function-local statics register their destructors at that first use).
// Registers the exit handler that closes the gate again, so that it runs before every destructor
// registered so far (exit handlers run in reverse order); a bounded number of times per process.
void host_loaded();

}  // namespace cutriage::collectors
