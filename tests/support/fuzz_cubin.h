// What the cubin inspector's fuzzer does with one input (inspect_cubin and function_code), shared
// by the libFuzzer target (tests/fuzz/fuzz_cubin.cpp) and the Catch2 test that replays
// tests/data/fuzz-regressions/cubin/ (tests/unit/collectors/test_cubin.cpp). Written against the contract in
// collectors/include/cutriage/collectors/cubin.h. Returns the first contract violation as one line
// ("" when none); a read outside the buffer is the sanitizers' to catch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "cutriage/collectors/cubin.h"

namespace cutriage::fuzz {

// function_code's contract for one name: an error is kInvalidArgument with a one-line message;
// code is non-empty, no longer than the image, and the same on a second call.
inline std::string exercise_function_code(const uint8_t* data, size_t size, std::string_view name) {
  const auto first = collectors::function_code(data, size, name);
  const auto second = collectors::function_code(data, size, name);
  if (first.is_ok() != second.is_ok()) return "function_code is not deterministic";
  if (!first.is_ok()) {
    if (first.status().code() != collectors::StatusCode::kInvalidArgument) {
      return "function_code: an error other than kInvalidArgument: " + first.status().message();
    }
    if (first.status().message().empty() ||
        first.status().message().find('\n') != std::string::npos) {
      return "function_code: the error message is empty or not one line";
    }
    return "";
  }
  if (name.empty()) return "function_code accepted an empty name";
  if (first.value().empty() || first.value().size() > size) {
    return "function_code returned no code or more than the image";
  }
  if (second.value() != first.value()) return "function_code is not deterministic";
  return "";
}

inline std::string exercise_cubin(std::string_view bytes) {
  // An exact-size heap copy, so that AddressSanitizer sees any read past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + 1]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  // function_code reads section contents, which inspect_cubin never does: every image gets a
  // name no image has, the synthetic images' kernel name, and (below) each kernel it lists.
  for (std::string_view name : {std::string_view("plain_kernel"), std::string_view("kern")}) {
    if (std::string v = exercise_function_code(copy.get(), bytes.size(), name); !v.empty()) return v;
  }
  const auto first = collectors::inspect_cubin(copy.get(), bytes.size());
  const auto second = collectors::inspect_cubin(copy.get(), bytes.size());
  if (first.is_ok() != second.is_ok()) return "inspect_cubin is not deterministic";
  if (!first.is_ok()) {
    if (first.status().code() != collectors::StatusCode::kInvalidArgument) {
      return "an error other than kInvalidArgument: " + first.status().message();
    }
    if (first.status().message().empty() ||
        first.status().message().find('\n') != std::string::npos) {
      return "the error message is empty or not one line";
    }
    return "";
  }
  const collectors::CubinInfo& info = first.value();
  if (info.sm_arch > 255) return "sm_arch out of range";
  if (!std::is_sorted(info.kernels.begin(), info.kernels.end()) ||
      std::adjacent_find(info.kernels.begin(), info.kernels.end()) != info.kernels.end()) {
    return "kernel names not sorted and unique";
  }
  for (const std::string& k : info.kernels) {
    if (k.empty() || k.find('\0') != std::string::npos)
      return "an empty or NUL-bearing kernel name";
    if (k.size() > bytes.size()) return "a kernel name longer than the image";
  }
  if (second.value().kernels != info.kernels || second.value().sm_arch != info.sm_arch ||
      second.value().has_line_info != info.has_line_info ||
      second.value().debug_build != info.debug_build) {
    return "inspect_cubin is not deterministic";
  }
  if (bytes.size() < 64) return "accepted an image shorter than an ELF header";
  for (const std::string& k : info.kernels) {
    if (std::string v = exercise_function_code(copy.get(), bytes.size(), k); !v.empty()) return v;
  }
  return "";
}

}  // namespace cutriage::fuzz
