#include "progress.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ostream>

#include "report.h"

namespace cutriage::tools {

namespace {

constexpr uint64_t kRecordsFieldTag = (1U << 3) | 2U;  // File.records, length-delimited
constexpr uint64_t kInternedField = 2;          // Record.interned
constexpr uint64_t kKernelField = 3;            // Record.kernel
constexpr size_t kReadChunk = size_t{1} << 16;

// A varint at `pos` of `bytes`: false when the bytes end inside it (or it is overlong).
bool read_varint(std::string_view bytes, size_t& pos, uint64_t& value) {
  value = 0;
  for (unsigned shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes[pos++]);
    value |= static_cast<uint64_t>(byte & 0x7FU) << shift;
    if ((byte & 0x80U) == 0) return true;
  }
  return false;
}

// Columns a UTF-8 string takes (one per code point: names and verdicts hold no wide characters
// that matter here).
size_t columns(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0U) != 0x80U ? 1 : 0;
  return n;
}

// `s` cut to `width` columns, "..." marking the cut; never inside a UTF-8 sequence.
std::string clip(std::string_view s, size_t width) {
  if (columns(s) <= width) return std::string(s);
  if (width <= 3) return std::string(width, '.');
  size_t keep = width - 3;
  size_t i = 0;
  for (size_t seen = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0U) != 0x80U && seen++ == keep) break;
  }
  return std::string(s.substr(0, i)) + "...";
}

std::string painted(const std::string& text, const char* sgr, bool color) {
  if (!color || text.empty()) return text;
  return std::string("\x1b[") + sgr + "m" + text + "\x1b[0m";
}

}  // namespace

ProgressStyle progress_style_for(int fd) {
  ProgressStyle style;
  if (::isatty(fd) == 0) return style;
  const char* no_color = std::getenv("NO_COLOR");  // NOLINT(concurrency-mt-unsafe): read once, single-threaded
  style.color = no_color == nullptr || *no_color == '\0';
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    style.width = ws.ws_col;
  } else {
    style.width = 80;
  }
  return style;
}

std::string progress_line(std::string_view kernel_name, const v1::KernelProfile& kernel, const ProgressStyle& style) {
  const bool failed = kernel.status() == v1::PROFILE_STATUS_FAILED;
  std::string name = terminal_safe(kernel_name.empty() ? "(unnamed kernel)" : kernel_name, false);
  std::string what;
  if (failed) {
    what = "failed: " + terminal_safe(kernel.status_detail().empty() ? "(no detail)" : kernel.status_detail(), false);
  } else {
    what = terminal_safe(verdict_headline(kernel.diagnosis()), false);
  }
  const std::string head = failed ? "cutriage: profiling " : "cutriage: profiled ";
  std::string launch = kernel.launch_index() != 0 ? " (launch #" + std::to_string(kernel.launch_index()) + ")" : "";
  launch += ": ";
  if (style.width > 0) {
    // The verdict gives way first, down to a few words; then the name.
    const size_t fixed = columns(head) + columns(launch);
    const size_t room = style.width > fixed ? style.width - fixed : 0;
    if (columns(name) + columns(what) > room) {
      constexpr size_t kMinWhat = 16;  // "MEMORY BOUND - D..." still says what it is
      const size_t what_room = room >= columns(name) + kMinWhat ? room - columns(name) : std::min(room, kMinWhat);
      what = clip(what, std::min(columns(what), what_room));
      name = clip(name, room > columns(what) ? room - columns(what) : 0);
    }
  }
  return head + painted(name, "1", style.color) + launch + painted(what, failed ? "31" : "36", style.color);
}

ProgressFollower::ProgressFollower(std::string path, std::ostream& out, ProgressStyle style)
    : path_(std::move(path)), out_(out), style_(style) {}

ProgressFollower::~ProgressFollower() {
  if (fd_ >= 0) ::close(fd_);
}

void ProgressFollower::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  inode_ = 0;
  offset_ = 0;
  pending_.clear();
  broken_ = false;
  names_.clear();
  // seen_ stays: a file written afresh under the same name repeats nothing already printed.
}

size_t ProgressFollower::poll() {
  struct stat by_name {};
  if (::stat(path_.c_str(), &by_name) != 0) return 0;  // not written yet (or gone)
  if (!S_ISREG(by_name.st_mode)) return 0;  // the agent writes regular files only; never open a FIFO
  if (fd_ >= 0 && static_cast<uint64_t>(by_name.st_ino) != inode_) reset();  // replaced
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) return 0;
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {  // never a FIFO or device to wait on
      ::close(fd_);
      fd_ = -1;
      return 0;
    }
    inode_ = static_cast<uint64_t>(st.st_ino);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return 0;
  if (static_cast<uint64_t>(st.st_size) < offset_) {  // truncated: written afresh
    const uint64_t inode = inode_;
    const int fd = fd_;
    fd_ = -1;
    reset();
    fd_ = fd;
    inode_ = inode;
  }
  if (broken_) return 0;
  char buffer[kReadChunk];
  while (true) {
    const ssize_t got = ::pread(fd_, buffer, sizeof(buffer), static_cast<off_t>(offset_));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    pending_.append(buffer, static_cast<size_t>(got));
    offset_ += static_cast<uint64_t>(got);
  }
  size_t lines = 0;
  size_t pos = 0;
  while (pos < pending_.size()) {
    size_t at = pos;
    uint64_t tag = 0;
    uint64_t length = 0;
    if (!read_varint(pending_, at, tag)) break;
    if (tag != kRecordsFieldTag) {
      broken_ = true;
      break;
    }
    if (!read_varint(pending_, at, length)) break;
    if (length > static_cast<uint64_t>(INT_MAX)) {
      broken_ = true;
      break;
    }
    if (pending_.size() - at < length) break;  // torn: the rest is still being written
    const std::string_view payload(pending_.data() + at, static_cast<size_t>(length));
    pos = at + static_cast<size_t>(length);
    // Only interned strings and kernel records are parsed: trace chunks are most of a file.
    size_t field_at = 0;
    uint64_t field_tag = 0;
    if (!read_varint(payload, field_at, field_tag)) continue;
    const uint64_t field = field_tag >> 3U;
    if (field != kInternedField && field != kKernelField) continue;
    v1::Record record;
    if (!record.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) continue;
    lines += consume(record);
  }
  pending_.erase(0, pos);
  printed_ += lines;
  return lines;
}

size_t ProgressFollower::consume(const v1::Record& record) {
  if (record.has_interned()) {
    names_[record.interned().id()] = record.interned().value();
    return 0;
  }
  if (!record.has_kernel()) return 0;
  const v1::KernelProfile& k = record.kernel();
  const bool profiled = k.status() == v1::PROFILE_STATUS_PROFILED || k.status() == v1::PROFILE_STATUS_UNSPECIFIED;
  if (!profiled && k.status() != v1::PROFILE_STATUS_FAILED) return 0;  // never profiled: no news
  if (!seen_.insert({k.launch_index(), k.mangled_name_iid()}).second) return 0;  // a later revision
  std::string name;
  for (const uint64_t iid : {k.function_name_iid(), k.demangled_name_iid(), k.mangled_name_iid()}) {
    if (auto it = names_.find(iid); iid != 0 && it != names_.end() && !it->second.empty()) {
      name = it->second;
      break;
    }
  }
  out_ << progress_line(name, k, style_) << "\n";
  out_.flush();
  return 1;
}

}  // namespace cutriage::tools
