#include "cutriage/base/status.h"

namespace cutriage::base {

const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kPermissionDenied: return "permission denied";
    case StatusCode::kAlreadySubscribed: return "another CUPTI subscriber is active";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotSupported: return "not supported";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

}  // namespace cutriage::base
