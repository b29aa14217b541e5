// Shared by the GPU test programs: checked CUDA calls, exit 77 without a GPU (CTest: skipped).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define GT_CHECK(call)                                                                   \
  do {                                                                                   \
    cudaError_t gt_err_ = (call);                                                        \
    if (gt_err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s in %s\n", __FILE__, __LINE__,                      \
                   cudaGetErrorString(gt_err_), #call);                                  \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

#define GT_CHECK_DRV(call)                                                               \
  do {                                                                                   \
    CUresult gt_res_ = (call);                                                           \
    if (gt_res_ != CUDA_SUCCESS) {                                                       \
      std::fprintf(stderr, "%s:%d: CUresult %d in %s\n", __FILE__, __LINE__,             \
                   static_cast<int>(gt_res_), #call);                                    \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

inline void gt_require_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "skipped: no usable GPU\n");
    std::exit(77);
  }
}

[[noreturn]] inline void gt_fail(const char* what) {
  std::fprintf(stderr, "FAILED: %s\n", what);
  std::exit(1);
}
