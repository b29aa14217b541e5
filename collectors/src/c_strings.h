// Internal: CUPTI's profiler calls take metric names as an array of C strings.
#pragma once

#include <string>
#include <vector>

namespace cutriage::collectors {

// Pointers into `names`, valid while it lives unchanged.
inline std::vector<const char*> c_strings(const std::vector<std::string>& names) {
  std::vector<const char*> out;
  out.reserve(names.size());
  for (const std::string& name : names) out.push_back(name.c_str());
  return out;
}

}  // namespace cutriage::collectors
