#include "cutriage/base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cutriage::base {

namespace {

// Not strerror: its buffer is shared by every thread of the application the agent runs in.
std::string errno_text(int err) { return std::generic_category().message(err); }

// Closes the descriptor on every path out of read_regular_file.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) (void)::close(fd);
  }
};

}  // namespace

std::string describe_not_regular(unsigned int st_mode) {
  const auto mode = static_cast<mode_t>(st_mode);
  const char* kind = S_ISDIR(mode)    ? "is a directory"
                     : S_ISFIFO(mode) ? "is a named pipe (FIFO)"
                     : S_ISCHR(mode)  ? "is a character device"
                     : S_ISBLK(mode)  ? "is a block device"
                     : S_ISSOCK(mode) ? "is a socket"
                                      : "is a special file";
  return std::string(kind) + ", not a regular file";
}

std::string describe_size(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

Result<std::string> read_regular_file(const std::string& path, size_t max_bytes) {
  Fd f;
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f.fd < 0) {
    return Status(StatusCode::kUnavailable, "cannot be opened (" + errno_text(errno) + ")");
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    return Status(StatusCode::kUnavailable, "cannot be examined (" + errno_text(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kInvalidArgument, describe_not_regular(st.st_mode));
  }
  const std::string too_large = "is larger than " + describe_size(max_bytes) + " (the most read)";
  if (st.st_size < 0 || static_cast<unsigned long long>(st.st_size) > max_bytes) {
    return Status(StatusCode::kInvalidArgument, too_large);
  }
  // The size is a hint (the file may grow while it is read): the read stops one byte past the
  // limit, whatever fstat said.
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  char more[4096];
  for (;;) {
    char* dst = done < text.size() ? text.data() + done : more;
    const size_t room = done < text.size() ? text.size() - done : sizeof(more);
    const ssize_t n = ::read(f.fd, dst, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(StatusCode::kUnavailable, "cannot be read (" + errno_text(errno) + ")");
    if (n == 0) break;
    if (dst == more) {
      if (done + static_cast<size_t>(n) > max_bytes) return Status(StatusCode::kInvalidArgument, too_large);
      text.append(more, static_cast<size_t>(n));
    }
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace cutriage::base
