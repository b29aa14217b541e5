#include "cutriage/base/copy_kind.h"

namespace cutriage::base {

std::string_view to_string(CopyKind kind) {
  switch (kind) {
    case CopyKind::kUnspecified:
      return "unspecified";
    case CopyKind::kHostToDevice:
      return "HtoD";
    case CopyKind::kDeviceToHost:
      return "DtoH";
    case CopyKind::kDeviceToDevice:
      return "DtoD";
    case CopyKind::kHostToHost:
      return "HtoH";
    case CopyKind::kPeer:
      return "peer";
    case CopyKind::kMemset:
      return "memset";
    case CopyKind::kOther:
      return "other";
  }
  return "unknown";
}

}  // namespace cutriage::base
