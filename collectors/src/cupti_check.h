// Turning CUPTI results into Status, for every CUPTI call in collectors/src (range profiler,
// profiler host, callbacks, PC sampling). Nothing here throws, exits or logs: a failing call
// becomes a Status whose message carries the call's source text and CUPTI's name for the result,
// and the caller decides what to do with it. Callback code (void functions that must never let
// anything escape into the driver) uses CUTRIAGE_CUPTI_STATUS and stores or reports the Status.
//
//   Status f() { CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiX(&p)); ... }           // Status functions
//   Result<T> g() { CUTRIAGE_CUPTI_RETURN_IF_ERROR(cuptiY(&p)); ... }        // Result<T> too
//   CUTRIAGE_ASSIGN_OR_RETURN(auto v, h());                                  // unwrap Result<T>
//   Status s = CUTRIAGE_CUPTI_STATUS(cuptiZ(&p));                            // just the Status
//
// Include only from collectors/src: CUPTI types must not reach collectors/include.
#pragma once

#include <cupti_result.h>

#include <string_view>
#include <utility>

#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// The StatusCode a CUptiResult maps to (kOk for CUPTI_SUCCESS):
//   INSUFFICIENT_PRIVILEGES (also the virtualized-device one)   -> kPermissionDenied
//   MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, DISABLED                -> kAlreadySubscribed
//   NOT_INITIALIZED (no driver), HARDWARE_BUSY, and the devices
//   CUPTI cannot profile at all (vGPU, MIG, CMP, SLI, WSL,
//   confidential computing)                                      -> kUnavailable
//   INVALID_METRIC_NAME, INVALID_CHIP_NAME, INVALID_DEVICE       -> kInvalidArgument
//   NOT_SUPPORTED, LEGACY_PROFILER_NOT_SUPPORTED                 -> kNotSupported
//   everything else (INVALID_PARAMETER included: our code built
//   the parameters, so it is a bug or a state conflict)          -> kInternal
StatusCode cupti_status_code(CUptiResult result);

// CUPTI's name for a result ("CUPTI_ERROR_INVALID_METRIC_NAME"); never null, also for values
// CUPTI does not know.
const char* cupti_result_name(CUptiResult result);

// The Status for `result` returned by `call` (source text or a description). The message is
// "<call>: <CUPTI_ERROR_...>", plus the fix where there is one (privileges: run as root, grant
// CAP_SYS_ADMIN or CAP_PERFMON, or load the driver with NVreg_RestrictProfilingToAdminUsers=0;
// another subscriber: which tools hold CUPTI). Status::ok() for CUPTI_SUCCESS.
Status cupti_status(CUptiResult result, std::string_view call);

}  // namespace cutriage::collectors

// Evaluates `call` once (a CUptiResult expression) and yields its Status.
#define CUTRIAGE_CUPTI_STATUS(call) ::cutriage::collectors::cupti_status((call), #call)

// Returns the Status of a failing CUPTI call from the enclosing function, which may return Status
// or any Result<T> (Result is constructible from Status).
#define CUTRIAGE_CUPTI_RETURN_IF_ERROR(call)                                            \
  do {                                                                                  \
    const CUptiResult cutriage_cupti_result_ = (call);                                  \
    if (cutriage_cupti_result_ != CUPTI_SUCCESS) {                                      \
      return ::cutriage::collectors::cupti_status(cutriage_cupti_result_, #call);       \
    }                                                                                   \
  } while (false)

// Returns a failing Status expression from the enclosing Status- or Result-returning function.
#define CUTRIAGE_RETURN_IF_ERROR(expr)                                \
  do {                                                                \
    ::cutriage::collectors::Status cutriage_status_ = (expr);         \
    if (!cutriage_status_.is_ok()) return cutriage_status_;           \
  } while (false)

#define CUTRIAGE_CHECK_CONCAT_INNER_(a, b) a##b
#define CUTRIAGE_CHECK_CONCAT_(a, b) CUTRIAGE_CHECK_CONCAT_INNER_(a, b)

// `lhs` = the value of a Result-returning `expr`, or return its Status from the enclosing
// function. `lhs` may declare a variable: CUTRIAGE_ASSIGN_OR_RETURN(auto plan, host.plan(m)).
#define CUTRIAGE_ASSIGN_OR_RETURN(lhs, expr) \
  CUTRIAGE_ASSIGN_OR_RETURN_IMPL_(CUTRIAGE_CHECK_CONCAT_(cutriage_result_, __LINE__), lhs, expr)
// NOLINTBEGIN(bugprone-macro-parentheses): lhs may be a declaration and tmp is a name; neither
// can take parentheses. expr is parenthesized.
#define CUTRIAGE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.is_ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
