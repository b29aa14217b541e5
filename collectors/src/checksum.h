// The checksum CounterData carries (see range_profiler.h): 64-bit FNV-1a. Not a defence against
// an adversary, only against images that were damaged, truncated, made up or collected with
// another plan, which CUPTI would read out of bounds. Cost: about 1 ms per MB, against hundreds of
// milliseconds of kernel replay per profiled launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cutriage::collectors {

inline uint64_t fnv1a64(const std::vector<uint8_t>& bytes) {
  uint64_t hash = 14695981039346656037ULL;
  for (const uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  }
  // Mix in the length so that an all-zero image and a shorter all-zero image differ.
  hash ^= static_cast<uint64_t>(bytes.size());
  hash *= 1099511628211ULL;
  return hash;
}

}  // namespace cutriage::collectors
