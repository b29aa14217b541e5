// Tests of the CUPTI Profiler Host API (offline, no GPU) that cannot run in sanitizer builds:
// libcupti loads libnvperf_host.so with dlopen(RTLD_DEEPBIND), and the ASan and TSan runtimes
// abort the process on that flag.
//
// A test that cannot run says so and is reported skipped, never passed: it prints a marker that
// CTest turns into "skipped" (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt). Not Catch2's
// SKIP: v2 has none, and v3's exits with 4, which CTest counts as a failure unless told otherwise.
#pragma once

#include <iostream>

#define CUTRIAGE_SKIP_TEST(reason)                          \
  do {                                                      \
    std::cout << "CUTRIAGE_SKIPPED: " << (reason) << '\n'; \
    return;                                                 \
  } while (false)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CUTRIAGE_HOST_API_BLOCKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CUTRIAGE_HOST_API_BLOCKED 1
#endif
#endif

#if defined(CUTRIAGE_HOST_API_BLOCKED)
#define SKIP_IF_HOST_API_BLOCKED() \
  CUTRIAGE_SKIP_TEST("libcupti loads libnvperf_host with RTLD_DEEPBIND, which ASan/TSan refuse")
#else
#define SKIP_IF_HOST_API_BLOCKED() static_cast<void>(0)
#endif
