// Whether a CUDA driver with devices is usable, asked without linking libcuda.
//
// Some CUPTI target calls crash the process instead of failing when no driver is present (seen
// offline with CUDA 13.0: cuptiDeviceGetChipName segfaults; cuptiProfilerInitialize returns
// CUPTI_ERROR_UNKNOWN). Code that would make such a call asks here first. The probe opens
// libcuda.so.1 with dlopen (in an injected process the driver is already loaded and this only
// takes a reference), so binaries that use the collectors still start on machines without a
// driver, such as CI.
#pragma once

#include <string>

#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// The process's libcuda.so.1, opened once (RTLD_NOLOAD first: in an injected process it is
// loaded already) and never closed: unloading the driver under the application or CUPTI is never
// wanted. `handle` is null when it cannot be loaded, and `error` then says why. Every part of the
// collectors that calls the driver binds its entry points from this handle with dlsym.
struct CudaDriverLibrary {
  void* handle = nullptr;
  std::string error;
};
const CudaDriverLibrary& cuda_driver_library();

// The number of CUDA devices, or kUnavailable with the reason: libcuda.so.1 cannot be loaded,
// the driver is not initialized yet (cuInit has not run), it reports no device or is too old.
// Never calls cuInit itself: the agent must not initialize CUDA on the application's behalf.
// Thread-safe.
Result<int> cuda_device_count();

// Why no CUDA driver is usable in this process, for when a CUPTI call failed without saying
// (CUPTI_ERROR_UNKNOWN): kUnavailable when libcuda.so.1 cannot be loaded, is CUDA's stub library
// (found first on the library path), or reports no device or an insufficient driver; ok
// otherwise, also while the driver is merely not initialized yet (nothing known then).
Status driver_unusable_reason();

}  // namespace cutriage::collectors
