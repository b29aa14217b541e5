// The always-on H200 captures (tests/data/always_on/) for the tool tests that replay them: a file
// read whole, and each kernel's latest profiled record.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "catch.h"
#include "file_reader.h"

namespace cutriage::testing {

// tests/data/always_on/NAME, read; fails the test when it cannot be.
inline tools::ReadResult load_always_on(const std::string& name) {
  const auto path = std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "always_on" / name;
  tools::ReadResult r = tools::read_cutriage_file(path.string());
  INFO(path.string() << ": " << r.message);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  return r;
}

// The latest profiled record of each kernel, keyed by its function name or, with `by_mangled`,
// its mangled name.
inline std::map<std::string, const v1::KernelProfile*> latest_profiled(const tools::ReadResult& r,
                                                                        bool by_mangled = false) {
  std::map<std::string, const v1::KernelProfile*> out;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (k->status() != v1::PROFILE_STATUS_PROFILED) continue;
    const std::string key(tools::lookup(r, by_mangled ? k->mangled_name_iid() : k->function_name_iid()));
    const v1::KernelProfile*& slot = out[key];
    if (slot == nullptr || k->launch_index() > slot->launch_index()) slot = k;
  }
  return out;
}

}  // namespace cutriage::testing
