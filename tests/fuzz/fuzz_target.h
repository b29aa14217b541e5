// The libFuzzer entry point shared by every target: feeds the input to one exercise_* function
// (tests/support/fuzz_*.h) and turns a contract violation into a crash the fuzzer records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define CUTRIAGE_FUZZ_TARGET(exercise)                                                       \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {                  \
    /* libFuzzer hands bytes; the parsers take text. */                                      \
    const std::string_view input(reinterpret_cast<const char*>(data), size);                 \
    const std::string violation = exercise(input);                                           \
    if (!violation.empty()) {                                                                \
      std::fprintf(stderr, "cutriage fuzz: contract violation: %s\n", violation.c_str());   \
      std::abort();                                                                          \
    }                                                                                        \
    return 0;                                                                                \
  }
