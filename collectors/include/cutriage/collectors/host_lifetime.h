// The Profiler Host library's lifetime at process exit, as the agent must see it.
//
// CUPTI loads libnvperf_host (the Profiler Host API) with dlopen at the first host initialization,
// which comes after the agent registered its exit handler. Exit handlers run in reverse order of
// registration, so that library's static destructors run before the agent's handler; from then on
// any host call (a metric plan, an evaluation) crashes the process, on whichever thread makes it.
// The CUPTI collectors therefore register a handler of their own at the first successful host
// initialization, which runs before those destructors: it calls the hook below (the agent ends
// what still needs the host: its flush thread, an open PM window), then refuses every later host
// call (Status kUnavailable, "the process is exiting") once the calls in flight have returned.
//
// The library also builds state at the first use of a call (function-local statics), registering
// their teardown then: a handler registered before that runs after it. So the host made by
// make_cupti_profiler_host makes a small plan of each kind of metric name first, and the handler
// is registered (again) after that and after the process's first evaluation. An exit during the
// making of the host itself is not covered: callers that can, make it on a thread that cannot be
// exiting meanwhile (the agent: the thread creating the CUDA context).
#pragma once

namespace cutriage::collectors {

// Called at most once, on the exiting thread, while the host still works. Must not throw.
// Set before the first host initialization; nullptr clears it.
using BeforeHostUnload = void (*)();
void set_before_host_unload(BeforeHostUnload hook);

// Whether host calls are refused: the process is exiting (for tests and messages).
[[nodiscard]] bool host_calls_closed();

}  // namespace cutriage::collectors
