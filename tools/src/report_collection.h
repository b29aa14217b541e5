// How a kernel's counters were collected when one launch did not give them all, as the report
// says it under the kernel's launch line: assembled over launches without replay (always-on, and
// application replay over runs of the program), whether that assembly is complete, or measured on
// a whole CUDA graph launch.
#pragma once

#include <sstream>

#include "file_reader.h"

namespace cutriage::tools {

// The `counters` line of a graph-scoped record, or the `assembled` and `complete` lines of an
// assembled one; nothing for a record whose counters came from its own launch.
void render_collection(std::ostringstream& out, const ReadResult& file, const cutriage::v1::KernelProfile& k);

}  // namespace cutriage::tools
