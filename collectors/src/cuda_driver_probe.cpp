#include "cuda_driver_probe.h"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace cutriage::collectors {
namespace {

using DeviceGetCountFn = decltype(&cuDeviceGetCount);

struct DriverHandle {
  DeviceGetCountFn device_get_count = nullptr;
  std::string error;  // why the driver could not be opened; empty when it was
};

const DriverHandle& driver_handle() {
  static const DriverHandle handle = [] {
    DriverHandle h;
    const CudaDriverLibrary& lib = cuda_driver_library();
    if (lib.handle == nullptr) {
      h.error = lib.error;
      return h;
    }
    // dlsym returns void*; POSIX guarantees the conversion to a function pointer works.
    h.device_get_count = reinterpret_cast<DeviceGetCountFn>(dlsym(lib.handle, "cuDeviceGetCount"));
    if (h.device_get_count == nullptr) h.error = "libcuda.so.1 has no cuDeviceGetCount";
    return h;
  }();
  return handle;
}

}  // namespace

const CudaDriverLibrary& cuda_driver_library() {
  static const CudaDriverLibrary library = [] {
    CudaDriverLibrary l;
    l.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (l.handle == nullptr) l.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) {
      const char* why = dlerror();
      l.error = why != nullptr ? why : "dlopen(libcuda.so.1) failed";
    }
    return l;
  }();
  return library;
}

Result<int> cuda_device_count() {
  const DriverHandle& driver = driver_handle();
  if (driver.device_get_count == nullptr) {
    return Status(StatusCode::kUnavailable, "no CUDA driver: " + driver.error);
  }
  int count = 0;
  const CUresult result = driver.device_get_count(&count);
  if (result == CUDA_ERROR_NOT_INITIALIZED) {
    return Status(StatusCode::kUnavailable,
                  "the CUDA driver is not initialized yet (cuInit has not run in this process)");
  }
  if (result == CUDA_ERROR_STUB_LIBRARY) {
    return Status(StatusCode::kUnavailable,
                  "libcuda.so.1 is CUDA's stub library (lib64/stubs, found first on the library path), "
                  "not a driver");
  }
  if (result != CUDA_SUCCESS) {
    return Status(StatusCode::kUnavailable,
                  "cuDeviceGetCount failed with CUresult " + std::to_string(static_cast<int>(result)) +
                      " (no usable GPU or driver too old)");
  }
  if (count <= 0) return Status(StatusCode::kUnavailable, "the CUDA driver reports no device");
  return count;
}

Status driver_unusable_reason() {
  const DriverHandle& driver = driver_handle();
  if (driver.device_get_count == nullptr) return Status(StatusCode::kUnavailable, "no CUDA driver: " + driver.error);
  int count = 0;
  // Not initialized yet says nothing about the driver: the caller's failure stands on its own.
  if (driver.device_get_count(&count) == CUDA_ERROR_NOT_INITIALIZED) return Status::ok();
  Result<int> devices = cuda_device_count();
  return devices.is_ok() ? Status::ok() : devices.status();
}

}  // namespace cutriage::collectors
