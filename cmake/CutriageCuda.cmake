# Decides whether the CUDA-dependent parts (CUPTI collectors, the injected agent, the example zoo)
# are built. triage/, proto/ and tools/ never need the toolkit.
set(CUTRIAGE_HAVE_CUDA OFF)
if(NOT CUTRIAGE_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  include(CheckLanguage)
  check_language(CUDA)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cupti AND CMAKE_CUDA_COMPILER)
    set(CUTRIAGE_HAVE_CUDA ON)
  elseif(CUTRIAGE_CUDA STREQUAL "ON")
    message(FATAL_ERROR
      "CUTRIAGE_CUDA=ON but the CUDA toolkit with CUPTI and nvcc was not found "
      "(CUDAToolkit_FOUND=${CUDAToolkit_FOUND}, nvcc='${CMAKE_CUDA_COMPILER}'). "
      "Install the toolkit or point CMake at it with -DCUDAToolkit_ROOT=/usr/local/cuda "
      "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc, or configure with -DCUTRIAGE_CUDA=OFF.")
  elseif(NOT CUTRIAGE_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "CUTRIAGE_CUDA must be AUTO, ON or OFF (got '${CUTRIAGE_CUDA}')")
  endif()
endif()
message(STATUS "cutriage: CUDA targets ${CUTRIAGE_HAVE_CUDA} (CUTRIAGE_CUDA=${CUTRIAGE_CUDA})")
