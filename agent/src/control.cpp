#include "control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "cutriage/base/read_file.h"

namespace cutriage::agent {

namespace {

std::atomic<bool> g_signal_pending{false};
std::atomic<int> g_installed_signal{0};

extern "C" void cutriage_control_signal_handler(int /*signal*/) { g_signal_pending.store(true); }

int signal_number(ControlSignal s) { return s == ControlSignal::kUsr1 ? SIGUSR1 : SIGUSR2; }

}  // namespace

std::optional<DeepRequest> parse_control_command(std::string_view text, std::string* error) {
  // The first line that is neither blank nor a comment.
  std::string_view line;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view l = trim_whitespace(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!l.empty() && l.front() != '#') {
      line = l;
      break;
    }
  }
  if (line.empty()) {
    *error = "the control file is empty; write \"deep [SECONDS] [TARGET]\"";
    return std::nullopt;
  }
  const size_t sp = line.find_first_of(" \t");
  if (line.substr(0, sp) != "deep") {
    *error = "unknown command \"" + std::string(line.substr(0, sp)) + "\"; the one command is \"deep [SECONDS] [TARGET]\"";
    return std::nullopt;
  }
  DeepRequest req;
  std::string_view rest = sp == std::string_view::npos ? std::string_view{} : trim_whitespace(line.substr(sp));
  if (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
    const size_t end = rest.find_first_of(" \t");
    const std::string_view num = rest.substr(0, end);
    uint64_t n = 0;
    for (char c : num) {
      if (c < '0' || c > '9' || n > 3600) {
        *error = "SECONDS must be an integer from 1 to 3600, not \"" + std::string(num) + "\"";
        return std::nullopt;
      }
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n < 1 || n > 3600) {
      *error = "SECONDS must be an integer from 1 to 3600, not \"" + std::string(num) + "\"";
      return std::nullopt;
    }
    req.seconds = static_cast<uint32_t>(n);
    rest = end == std::string_view::npos ? std::string_view{} : trim_whitespace(rest.substr(end));
  }
  if (!rest.empty()) {
    std::string bad = check_deep_target(rest);
    if (!bad.empty()) {
      *error = "bad TARGET \"" + std::string(rest) + "\": " + bad;
      return std::nullopt;
    }
    req.target = std::string(rest);
  }
  return req;
}

std::optional<std::string> take_control_file(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ENOENT) *error = "cannot open the control file " + path + " (errno " + std::to_string(errno) + ")";
    return std::nullopt;
  }
  // Regular files only, checked on what was opened: a FIFO, a device or a directory at the name
  // is neither read nor deleted (deleting it is not ours to do), and the error is said once.
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = "the control file " + path + " " + base::describe_not_regular(st.st_mode) +
             "; requests through it are ignored until it is replaced by one";
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf) - text.size());
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() >= sizeof(buf)) break;
  }
  ::close(fd);
  // Deleted after reading: a writer that renames its file into place is read whole; the next
  // request is a new file.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot delete the control file " + path + " after reading it (errno " + std::to_string(errno) +
             "); requests through it are ignored from now on";
    return std::nullopt;
  }
  return text;
}

bool install_control_signal(ControlSignal signal, std::string* why) {
  if (signal == ControlSignal::kOff) return false;
  const int number = signal_number(signal);
  struct sigaction current {};
  if (::sigaction(number, nullptr, &current) != 0) {
    *why = "cannot read the signal's current action";
    return false;
  }
  const bool is_default = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
  if (!is_default) {
    *why = std::string("the application already handles or ignores ") + (number == SIGUSR1 ? "SIGUSR1" : "SIGUSR2") +
           "; cutriage leaves it alone (use CUTRIAGE_CONTROL_FILE or cutriage_request_deep_capture)";
    return false;
  }
  struct sigaction action {};
  action.sa_handler = cutriage_control_signal_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(number, &action, nullptr) != 0) {
    *why = "sigaction failed";
    return false;
  }
  g_installed_signal.store(number);
  return true;
}

bool take_control_signal() { return g_signal_pending.exchange(false); }

void remove_control_signal() {
  const int number = g_installed_signal.exchange(0);
  if (number == 0) return;
  struct sigaction current {};
  if (::sigaction(number, nullptr, &current) != 0) return;
  // Only our own handler is removed: the application may have installed its own since.
  if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == cutriage_control_signal_handler) {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    (void)::sigaction(number, &action, nullptr);
  }
}

}  // namespace cutriage::agent
