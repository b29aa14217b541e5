// What a loaded module's cubin says about how its kernels were built, and the code of its
// functions, read from the ELF image the module-load callback copies. Pure C++ (no CUDA): tests
// feed it cubins that nvcc produced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
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

// The machine code of one function: the bytes of the cubin's `.text.<mangled_name>` section, in
// which offset 0 is PC offset 0 of CUPTI's PC-sampling records (for nvdisasm, to show the SASS of a
// sampled PC). Any function with code of its own works: kernels, and device functions that were
// not inlined. kInvalidArgument for an empty name, an image inspect_cubin would reject for its
// headers or section table, and a cubin without that section (or where it is not code). Never
// reads outside [data, data + size).
Result<std::vector<uint8_t>> function_code(const uint8_t* data, size_t size, std::string_view mangled_name);

// "sm_90" for CubinInfo::sm_arch 90; "" for 0 (not recognised). The architecture-specific suffix
// (sm_90a) is not in CubinInfo, so never printed.
std::string sm_arch_name(uint32_t sm_arch);

}  // namespace cutriage::collectors
