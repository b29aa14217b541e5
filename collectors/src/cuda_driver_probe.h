// Whether a CUDA driver with devices is usable, asked without linking libcuda.
//
// Some CUPTI target calls crash the process instead of failing when no driver is present (seen
// offline with CUDA 13.0: cuptiDeviceGetChipName segfaults; cuptiProfilerInitialize returns
// CUPTI_ERROR_UNKNOWN). Code that would make such a call asks here first. The probe opens
// libcuda.so.1 with dlopen (in an injected process the driver is already loaded and this only
// takes a reference), so binaries that use the collectors still start on machines without a
// driver, such as CI.
#pragma once

#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// The number of CUDA devices, or kUnavailable with the reason: libcuda.so.1 cannot be loaded,
// the driver is not initialized yet (cuInit has not run), it reports no device or is too old.
// Never calls cuInit itself: the agent must not initialize CUDA on the application's behalf.
// Thread-safe.
Result<int> cuda_device_count();

}  // namespace cutriage::collectors
