// What a loaded module's cubin says about how its kernels were built, read from the ELF image the
// module-load callback copies. Pure C++ (no CUDA): tests feed it cubins that nvcc produced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

struct CubinInfo {
  uint32_t sm_arch = 0;          // e.g. 90, from the ELF header's flags; 0 when not recognised
  bool has_line_info = false;    // a line table (-lineinfo or -G): Decision 6 can name lines
  bool debug_build = false;      // device debug information (-G): timings and counters of a debug build
  std::vector<std::string> kernels;  // mangled names of the entry functions, sorted
};

// Reads a cubin (ELF) image. kInvalidArgument for anything that is not a well-formed 64-bit ELF
// (a fatbinary or PTX is reported, not guessed at). Never reads outside [data, data + size).
Result<CubinInfo> inspect_cubin(const uint8_t* data, size_t size);

}  // namespace cutriage::collectors
