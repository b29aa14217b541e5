// Whether this test binary runs under AddressSanitizer or ThreadSanitizer, and how a test that
// cannot (or need not) run there says so.
//
// A test that does not run says so and is reported skipped, never passed: it prints a marker that
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
#define CUTRIAGE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CUTRIAGE_UNDER_SANITIZER 1
#endif
#endif

#if defined(CUTRIAGE_UNDER_SANITIZER)
#define SKIP_UNDER_SANITIZERS(reason) CUTRIAGE_SKIP_TEST(reason)
#else
#define SKIP_UNDER_SANITIZERS(reason) static_cast<void>(0)
#endif
