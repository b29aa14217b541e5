// Reading a file that someone else named (an environment variable read inside the application, a
// command-line option of the tool) without trusting what the name points at. The agent runs
// inside another program's cuInit, so a read must never block (a named pipe with no writer would
// hold the application forever), never take unbounded memory (/dev/zero), and never read a
// directory as an empty file. The checks are made on the opened descriptor (fstat), so the file
// cannot be swapped between the check and the read.
#pragma once

#include <cstddef>
#include <string>

#include "cutriage/base/status.h"

namespace cutriage::base {

// Reads the whole of `path`, which must be a regular file of at most `max_bytes` bytes (symbolic
// links are followed: reading through one cannot change anything). The file is opened with
// O_NONBLOCK, so a FIFO or a device is refused without waiting on it. On failure the Status
// message says what the path is instead, e.g. "is a named pipe (FIFO), not a regular file",
// "is larger than 1 MiB (the most read)", "cannot be opened (No such file or directory)"; callers
// prefix the variable or option that named it. The code is kUnavailable when the file cannot be
// opened or read (missing, no permission), kInvalidArgument when it is not a regular file or too
// large. Never throws for a bad file (std::bad_alloc aside).
Result<std::string> read_regular_file(const std::string& path, size_t max_bytes);

// What a file of type `st_mode` (struct stat's) is, for a message: "is a directory, not a regular
// file", "is a named pipe (FIFO), not a regular file"...
std::string describe_not_regular(unsigned int st_mode);

// "1 MiB", "64 KiB", "512 bytes": a limit as the messages above state it.
std::string describe_size(size_t bytes);

}  // namespace cutriage::base
