#include "cupti_check.h"

#include <string>

namespace cutriage::collectors {

StatusCode cupti_status_code(CUptiResult result) {
  switch (result) {
    case CUPTI_SUCCESS:
      return StatusCode::kOk;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return StatusCode::kPermissionDenied;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_DISABLED:
      return StatusCode::kAlreadySubscribed;
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return StatusCode::kUnavailable;
    case CUPTI_ERROR_INVALID_METRIC_NAME:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
    case CUPTI_ERROR_INVALID_DEVICE:
      return StatusCode::kInvalidArgument;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
      return StatusCode::kNotSupported;
    default:
      return StatusCode::kInternal;
  }
}

const char* cupti_result_name(CUptiResult result) {
  const char* name = nullptr;
  if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || name == nullptr) {
    return "unknown CUptiResult";
  }
  return name;
}

Status cupti_status(CUptiResult result, std::string_view call) {
  if (result == CUPTI_SUCCESS) return Status::ok();
  std::string message(call);
  message += ": ";
  message += cupti_result_name(result);
  message += " (";
  message += std::to_string(static_cast<int>(result));
  message += ")";
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      message +=
          "; GPU performance counters are restricted to admin users: run as root, grant the "
          "process CAP_SYS_ADMIN (or CAP_PERFMON on recent drivers), or load the NVIDIA driver "
          "with NVreg_RestrictProfilingToAdminUsers=0 "
          "(https://developer.nvidia.com/CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)";
      break;
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      message += "; the hypervisor does not allow profiling this virtual GPU";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_DISABLED:
      message +=
          "; another CUPTI client holds CUPTI in this process (Nsight Systems, Nsight Compute, "
          "torch.profiler/Kineto, compute-sanitizer, cuda-gdb): run without it";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      message += "; CUPTI could not connect to the CUDA driver (no driver or no GPU)";
      break;
    case CUPTI_ERROR_HARDWARE_BUSY:
      message +=
          "; the performance counters are in use by another client (another profiler, DCGM "
          "profiling metrics)";
      break;
    default:
      break;
  }
  return {cupti_status_code(result), std::move(message)};
}

}  // namespace cutriage::collectors
