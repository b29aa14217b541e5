#include "output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <deque>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "config.h"
#include "log.h"

namespace cutriage::agent {

namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

}  // namespace

std::string with_pid(const std::string& path, long pid) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  const bool has_extension = dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
  const std::string tag = "." + std::to_string(pid);
  return has_extension ? path.substr(0, dot) + tag + path.substr(dot) : path + tag;
}

int open_output_file(const std::string& path, bool exclusive, unsigned mode, std::string* error) {
  // O_NONBLOCK: opening a FIFO for writing blocks until a reader comes; refused below instead.
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | (exclusive ? O_EXCL : 0);
  const int fd = ::open(path.c_str(), flags, static_cast<mode_t>(mode));
  if (fd < 0) {
    const int err = errno;
    if (error != nullptr) {
      *error = err == ELOOP ? std::string("is a symbolic link (outputs are never written through one)")
               : err == ENXIO ? std::string("is a named pipe (FIFO) with no reader, not a regular file")
                              : errno_text(err);
    }
    errno = err;
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (error != nullptr) {
      *error = S_ISFIFO(st.st_mode) ? "is a named pipe (FIFO), not a regular file"
               : S_ISCHR(st.st_mode) ? "is a character device, not a regular file"
               : S_ISDIR(st.st_mode) ? "is a directory"
                                     : "is not a regular file";
    }
    errno = EINVAL;
    return -1;
  }
  // Blocking writes from here: a regular file never blocks on O_NONBLOCK anyway, but say so.
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // Every output is held under an exclusive advisory lock for as long as it is open (the lock goes
  // with the descriptor): a file another live agent is writing is never truncated under it. Seen
  // on the H200: torch.compile's compile workers inherit CUDA_INJECTION64_PATH and the output
  // name, and the first worker's agent truncated the application's file while it was written.
  // A file system without flock (some network mounts: ENOLCK, EOPNOTSUPP) gets no lock, as before.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(fd);
    if (error != nullptr) *error = "is being written by another process";
    errno = EBUSY;
    return -1;
  }
  if (!exclusive) {
    // An earlier output at the same name, no longer written: ours to replace, with the
    // permissions asked for.
    if (::ftruncate(fd, 0) != 0 || ::fchmod(fd, static_cast<mode_t>(mode)) != 0) {
      const int err = errno;
      ::close(fd);
      if (error != nullptr) *error = errno_text(err);
      errno = err;
      return -1;
    }
  }
  return fd;
}

namespace {

class FileSink final : public RecordSink {
 public:
  FileSink(std::string path, Logger& log, OutputFileOptions options)
      : path_(std::move(path)), log_(log), options_(std::move(options)) {}
  ~FileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  bool append(std::string_view bytes) override {
    if (failed_) return false;
    if (fd_ < 0 && !open_file()) return false;
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
  bool open_file() {
    std::string why;
    if (!options_.sequence) {
      fd_ = open_output_file(path_, /*exclusive=*/false, options_.mode, &why);
      if (fd_ < 0 && errno == EBUSY) {
        // Another process (a child that inherited the configuration) writes that name: this one
        // writes beside it, the pid before the extension, rather than destroy its file.
        const std::string taken = path_;
        path_ = with_pid(taken, static_cast<long>(::getpid()));
        fd_ = open_output_file(path_, /*exclusive=*/false, options_.mode, &why);
        if (fd_ >= 0) {
          log_.warn(taken + " is being written by another process (CUTRIAGE_OUTPUT without %p, inherited by a "
                    "child process?); this process (pid " + std::to_string(::getpid()) + ") writes " + path_);
        }
      }
      return fd_ >= 0 || fail("cannot create", why);
    }
    // %n: the first free number, claimed atomically (the path given at construction is only the
    // number seen free at start; another process may have taken it since).
    for (uint64_t n = 1; n <= kMaxPathSequence; ++n) {
      const std::string candidate = options_.sequence(n);
      fd_ = open_output_file(candidate, /*exclusive=*/true, options_.mode, &why);
      if (fd_ >= 0) {
        path_ = candidate;
        return true;
      }
      if (errno != EEXIST) {
        path_ = candidate;
        return fail("cannot create", why);
      }
    }
    return fail("cannot create", "every %n up to " + std::to_string(kMaxPathSequence) + " is taken");
  }
  bool fail(const char* what, const std::string& why = {}) {
    int err = errno;
    failed_ = true;
    // Not strerror: its buffer is shared by every thread of the application we run in.
    log_.error(std::string(what) + " " + path_ + " (" +
               (!why.empty() ? why : err ? errno_text(err) : std::string("short write")) +
               "); the application continues, profiling results are not saved");
    return false;
  }

  std::string path_;
  Logger& log_;
  OutputFileOptions options_;
  int fd_ = -1;
  bool failed_ = false;
};

class SegmentSink final : public RecordSink {
 public:
  SegmentSink(std::string path, SegmentOptions options, Logger& log, unsigned mode)
      : path_(std::move(path)), options_(std::move(options)), log_(log), mode_(mode) {
    if (!options_.now_seconds) {
      options_.now_seconds = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
      };
    }
  }
  ~SegmentSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  SegmentSink(const SegmentSink&) = delete;
  SegmentSink& operator=(const SegmentSink&) = delete;

  bool append(std::string_view bytes) override {
    if (failed_) return false;
    if (fd_ < 0 && !open_next()) return false;
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("cannot write", segment_path(path_, number_, true));
      done += static_cast<size_t>(n);
    }
    bytes_ += bytes.size();
    return true;
  }
  [[nodiscard]] std::string describe() const override { return segment_path(path_, number_ == 0 ? 1 : number_, false); }
  [[nodiscard]] bool failed() const override { return failed_; }
  [[nodiscard]] bool rotation_due() const override {
    if (fd_ < 0 || bytes_ == 0 || failed_) return false;
    if (options_.max_bytes != 0 && bytes_ >= options_.max_bytes) return true;
    return options_.max_seconds != 0 &&
           options_.now_seconds() - opened_at_ >= static_cast<double>(options_.max_seconds);
  }
  void rotate() override { publish(); }
  void close() override { publish(); }

 private:
  bool open_next() {
    ++number_;
    const std::string partial = segment_path(path_, number_, true);
    std::string why;
    fd_ = open_output_file(partial, /*exclusive=*/false, mode_, &why);
    if (fd_ < 0) return fail("cannot create", partial, why);
    bytes_ = 0;
    opened_at_ = options_.now_seconds();
    return true;
  }
  // Closes the segment in progress and renames it to its published name; then retention.
  void publish() {
    if (fd_ < 0) return;
    ::close(fd_);
    fd_ = -1;
    const std::string partial = segment_path(path_, number_, true);
    const std::string done = segment_path(path_, number_, false);
    if (::rename(partial.c_str(), done.c_str()) != 0) {
      (void)fail("cannot publish", done);
      return;
    }
    published_.push_back(number_);
    while (options_.keep != 0 && published_.size() > options_.keep) {
      (void)::unlink(segment_path(path_, published_.front(), false).c_str());
      published_.pop_front();
    }
  }
  bool fail(const char* what, const std::string& path, const std::string& why = {}) {
    int err = errno;
    failed_ = true;
    log_.error(std::string(what) + " " + path + " (" +
               (!why.empty() ? why : err ? errno_text(err) : std::string("short write")) +
               "); the application continues, profiling results are not saved");
    return false;
  }

  std::string path_;
  SegmentOptions options_;
  Logger& log_;
  const unsigned mode_;
  int fd_ = -1;
  uint64_t number_ = 0;   // segment in progress (or last published), 1-based
  uint64_t bytes_ = 0;    // in the segment in progress
  double opened_at_ = 0;
  bool failed_ = false;
  std::deque<uint64_t> published_;  // segment numbers on disk, oldest first
};

}  // namespace

std::unique_ptr<RecordSink> make_file_sink(std::string path, Logger& log, OutputFileOptions options) {
  return std::make_unique<FileSink>(std::move(path), log, std::move(options));
}

std::unique_ptr<RecordSink> make_segment_sink(std::string path, SegmentOptions options, Logger& log, unsigned mode) {
  return std::make_unique<SegmentSink>(std::move(path), std::move(options), log, mode);
}

std::string segment_path(const std::string& path, uint64_t n, bool partial) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string ext;
  if (const size_t dot = base.find_last_of('.'); dot != std::string::npos && dot != 0) {
    ext = base.substr(dot);
    base.resize(dot);
  }
  char number[32];
  std::snprintf(number, sizeof number, ".%06llu", static_cast<unsigned long long>(n));
  return partial ? dir + "." + base + number + ext + ".partial" : dir + base + number + ext;
}

std::vector<std::string> published_segments(const std::string& path) {
  namespace fs = std::filesystem;
  // segment_path's name for number n, with the digits taken out: what stands before and after.
  const std::string zero = segment_path(path, 0, false);
  const size_t digits_at = zero.rfind(".000000") + 1;
  const std::string prefix = fs::path(zero.substr(0, digits_at)).filename().string();
  const std::string suffix = zero.substr(digits_at + 6);
  const fs::path p(zero);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() < 6 || digits.size() > 12 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    found.emplace_back(std::stoull(digits), it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace cutriage::agent
