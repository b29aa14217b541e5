#include "host_gate.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include "cutriage/collectors/host_lifetime.h"

namespace cutriage::collectors {
namespace {

struct Gate {
  std::shared_timed_mutex calls;  // shared: a host call in flight; exclusive: the exit handler
  std::atomic<bool> closed{false};
  std::atomic<BeforeHostUnload> hook{nullptr};
  std::once_flag registered;
};

// Never destroyed: it is used from exit handlers, in an order no static destructor respects.
Gate& gate() {
  static Gate* g = new Gate;
  return *g;
}

void close_before_unload() {
  Gate& g = gate();
  if (BeforeHostUnload hook = g.hook.exchange(nullptr)) hook();
  g.closed.store(true);
  // Wait for the calls in flight, within a bound: in a forked child the lock may be held by a
  // thread that was not copied, and exit must not hang on it.
  if (g.calls.try_lock_for(std::chrono::seconds(5))) g.calls.unlock();
}

}  // namespace

void set_before_host_unload(BeforeHostUnload hook) { gate().hook.store(hook); }

bool host_calls_closed() { return gate().closed.load(); }

HostCall::HostCall() {
  Gate& g = gate();
  if (g.closed.load()) return;
  lock_ = std::shared_lock<std::shared_timed_mutex>(g.calls);
  // Closed while this thread waited for the lock: the handler has run or is running.
  if (g.closed.load()) lock_.unlock();
}

Status HostCall::refused() {
  return Status(StatusCode::kUnavailable, "the process is exiting: the Profiler Host API is no longer usable");
}

void host_loaded() {
  Gate& g = gate();
  std::call_once(g.registered, [] { (void)std::atexit(&close_before_unload); });
}

}  // namespace cutriage::collectors
