// Status and Result<T> live in the base library (cutriage/base/status.h), shared with the rest of
// the project; the collectors and the agent keep calling them by their collectors:: names.
#pragma once

#include "cutriage/base/status.h"

namespace cutriage::collectors {
using base::Result;
using base::Status;
using base::StatusCode;
using base::to_string;
}  // namespace cutriage::collectors
