/* cutriage's C API: what libcutriage.so exports besides InitializeInjection (the entry point the
 * CUDA driver calls when the library is named by CUDA_INJECTION64_PATH).
 *
 * A process that links libcutriage.so instead of having it injected calls cutriage_start() once
 * before its first CUDA call; the configuration comes from the same CUTRIAGE_* variables (and
 * cutriage_init()). A long-running service sets CUTRIAGE_MODE=always-on: no replay, a budget.
 * Every function is safe to call from any thread at any time and never throws or aborts. */
#ifndef CUTRIAGE_CUTRIAGE_H_
#define CUTRIAGE_CUTRIAGE_H_

#ifdef __cplusplus
extern "C" {
#endif

#define CUTRIAGE_API __attribute__((visibility("default")))

/* Called by the CUDA driver during cuInit when injected. Returns 1 (the driver ignores failures;
 * the agent reports its own). */
CUTRIAGE_API int InitializeInjection(void);

/* Starts the agent in a process that linked the library. Returns 1 when the agent is profiling,
 * 0 when it stays off (the reason was printed once). Calling it again returns the same answer. */
CUTRIAGE_API int cutriage_start(void);

/* Sets the configuration before cutriage_start(): CUTRIAGE_NAME=VALUE entries separated by ';'
 * or newlines ("CUTRIAGE_SELECT=top:3; CUTRIAGE_PROMETHEUS_FILE=/var/lib/node/cutriage.prom"),
 * taking precedence over the environment. Returns 1 when the resulting configuration is valid, 0
 * when it is not (cutriage_start() then says why, once, and stays off) or when the agent has
 * already started (the configuration is fixed then). A later call replaces an earlier one. */
CUTRIAGE_API int cutriage_init(const char* config);

/* Collects the kernel trace now and rewrites the Prometheus file, instead of waiting for the next
 * period. A no-op when the agent is not running. Call it from the application's threads, never
 * from a CUDA callback. */
CUTRIAGE_API void cutriage_flush(void);

/* Pauses profiling and sampling (the kernel trace and the Prometheus file go on); cutriage_start()
 * resumes. A no-op when the agent is not running. */
CUTRIAGE_API void cutriage_stop(void);

/* Requests a deep capture: for `seconds` (0: CUTRIAGE_DEEP_SECONDS, default 30), launches of the
 * kernel families `target` names are profiled with replay (every counter in one launch, then PC
 * sampling), outside the always-on budget. `target`: NULL or "" for CUTRIAGE_DEEP_TARGET (default
 * "top:3", the three families with the most GPU time), "top:N", a kernel name, or
 * "regex:<expression>". Returns the request's id (> 0), which the output's ControlRequest
 * records carry with what was captured; 0 when the request was refused (agent not running, a
 * window already open, a bad target: the output and the log say why). Never call it from a CUDA
 * callback. */
CUTRIAGE_API unsigned long long cutriage_request_deep_capture(const char* target, unsigned int seconds);

/* 1 while the agent is profiling. */
CUTRIAGE_API int cutriage_active(void);

/* Writes the session end record and the summary now instead of at exit. Later launches are not
 * profiled. */
CUTRIAGE_API void cutriage_finish(void);

/* "0.1.0" */
CUTRIAGE_API const char* cutriage_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CUTRIAGE_CUTRIAGE_H_ */
