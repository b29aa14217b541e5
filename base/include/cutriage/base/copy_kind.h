// The direction of a traced memory copy (or a memset), as the collectors translate CUPTI's memcpy
// kinds and as the timeline and the trace export name them.
#pragma once

#include <cstdint>
#include <string_view>

namespace cutriage::base {

enum class CopyKind : uint8_t {
  kUnspecified = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
  kHostToHost = 4,
  kPeer = 5,
  kMemset = 6,
  kOther = 7,
};
std::string_view to_string(CopyKind kind);

}  // namespace cutriage::base
