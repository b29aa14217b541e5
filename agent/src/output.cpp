#include "output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "log.h"

namespace cutriage::agent {

namespace {

class FileSink final : public RecordSink {
 public:
  FileSink(std::string path, Logger& log) : path_(std::move(path)), log_(log) {}
  ~FileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  bool append(std::string_view bytes) override {
    if (failed_) return false;
    if (fd_ < 0) {
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd_ < 0) return fail("cannot create");
    }
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("cannot write");
      done += static_cast<size_t>(n);
    }
    return true;
  }
  [[nodiscard]] std::string describe() const override { return path_; }
  [[nodiscard]] bool failed() const override { return failed_; }

 private:
  bool fail(const char* what) {
    int err = errno;
    failed_ = true;
    // Not strerror: its buffer is shared by every thread of the application we run in.
    log_.error(std::string(what) + " " + path_ + " (" +
               (err ? std::generic_category().message(err) : std::string("short write")) +
               "); the application continues, profiling results are not saved");
    return false;
  }

  std::string path_;
  Logger& log_;
  int fd_ = -1;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<RecordSink> make_file_sink(std::string path, Logger& log) {
  return std::make_unique<FileSink>(std::move(path), log);
}

}  // namespace cutriage::agent
