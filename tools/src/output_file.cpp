#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace cutriage::tools {

namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

// The directory part of `path` ("." for a bare name), for the temporary file beside it: a rename
// within one file system is atomic.
std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (out_.is_open()) out_.close();
  if (!temp_.empty()) (void)::unlink(temp_.c_str());  // ours: created by mkstemp below
  temp_.clear();
}

bool OutputFile::open(const std::string& path, std::string* error) {
  discard();
  path_ = path;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    *error = "is a directory";
    return false;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO: written in place, never replaced or removed.
    out_.open(path, std::ios::binary | std::ios::out);
    if (!out_) {
      *error = "cannot be opened for writing";
      return false;
    }
    return true;
  }
  std::string templ = directory_of(path) + "/." + base_of(path) + ".cutriage-XXXXXX";
  const int fd = ::mkstemp(templ.data());
  if (fd < 0) {
    *error = "cannot create a file in " + directory_of(path) + " (" + errno_text(errno) + ")";
    return false;
  }
  // mkstemp gives 0600; the file gets what a plain create would (0666 less the umask), or the
  // mode of the file it replaces.
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    (void)::umask(mask);
    mode = 0666 & ~mask;
  }
  (void)::fchmod(fd, mode);
  ::close(fd);
  temp_ = templ;
  out_.open(temp_, std::ios::binary | std::ios::out | std::ios::trunc);
  if (!out_) {
    *error = "cannot be opened for writing";
    discard();
    return false;
  }
  return true;
}

bool OutputFile::commit(std::string* error) {
  if (!out_.is_open()) {
    *error = "not open";
    return false;
  }
  out_.flush();
  out_.close();
  if (!out_) {
    *error = "write failed";
    discard();
    return false;
  }
  if (!temp_.empty()) {
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      *error = "cannot rename the finished file into place (" + errno_text(errno) + ")";
      discard();
      return false;
    }
    temp_.clear();
  }
  return true;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace cutriage::tools
