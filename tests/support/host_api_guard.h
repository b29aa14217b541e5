// Tests of the CUPTI Profiler Host API (offline, no GPU) that cannot run in sanitizer builds:
// libcupti loads libnvperf_host.so with dlopen(RTLD_DEEPBIND), and the ASan and TSan runtimes
// abort the process on that flag. Such a test is reported skipped there (sanitizer_guard.h).
#pragma once

#include "sanitizer_guard.h"

#if defined(CUTRIAGE_UNDER_SANITIZER)
#define CUTRIAGE_HOST_API_BLOCKED 1
#define SKIP_IF_HOST_API_BLOCKED() \
  CUTRIAGE_SKIP_TEST("libcupti loads libnvperf_host with RTLD_DEEPBIND, which ASan/TSan refuse")
#else
#define SKIP_IF_HOST_API_BLOCKED() static_cast<void>(0)
#endif
