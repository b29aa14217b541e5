#include "host_gate.h"

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "cutriage/collectors/host_lifetime.h"

namespace cutriage::collectors {
namespace {

struct Gate {
  std::shared_timed_mutex calls;  // shared: a host call in flight; exclusive: the exit handler
  std::atomic<bool> closed{false};
  std::atomic<BeforeHostUnload> hook{nullptr};
  std::atomic<int> registrations{0};
};

// Registrations of the handler at most (host_loaded): one a host kind and a first use of each
// call, with room to spare; atexit's own table is not unbounded everywhere.
constexpr int kMaxRegistrations = 8;

// Never destroyed: it is used from exit handlers, in an order no static destructor respects.
Gate& gate() {
  static Gate* g = new Gate;
  return *g;
}

// Runs once per registration: only the first does anything but take and give back the lock.
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
  if (g.closed.load() || g.registrations.fetch_add(1) >= kMaxRegistrations) return;
  (void)std::atexit(&close_before_unload);
}

}  // namespace cutriage::collectors
