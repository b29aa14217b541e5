// Instance ids for components built directly in tests (FamilyTable, NvtxTracker): their
// thread-local state is told apart by the id, so every instance in the test process needs its
// own, apart from those the Agents of other tests take (which count up from 1).
#pragma once

#include <atomic>
#include <cstdint>

namespace cutriage::testing {

inline uint64_t fresh_instance_id() {
  static std::atomic<uint64_t> next{uint64_t{1} << 40};
  return next.fetch_add(1) + 1;
}

}  // namespace cutriage::testing
