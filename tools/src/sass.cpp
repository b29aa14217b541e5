#include "sass.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <system_error>
#include <thread>

extern char** environ;  // POSIX: the process environment, passed on to nvdisasm

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// errno's text. Not strerror: its buffer is shared between threads.
std::string error_text(int error) { return std::generic_category().message(error); }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// `s` with runs of blanks as one space, trimmed.
std::string squeeze(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool blank = false;
  for (char c : s) {
    if (is_space(c)) {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// A temporary file that is removed when it goes out of scope, whatever happened in between.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/cutriage-sass-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    fd_ = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd_ >= 0) path_ = buf.data();
    else error_ = error_text(errno);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Writes all of `bytes` and closes the descriptor; false with error() set on failure.
  bool write_and_close(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = error_text(errno);
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      error_ = error_text(errno);
      return false;
    }
    return true;
  }
  [[nodiscard]] bool ok() const { return !path_.empty(); }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::string error_;
};

// The line of nvdisasm's output that says what went wrong: the first one naming a fatal error or
// an error, else the first non-empty one. Cut to a terminal line.
std::string failure_line(std::string_view output) {
  std::string first;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    std::string line = squeeze(output.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty()) continue;
    if (line.find("fatal") != std::string::npos || line.find("error") != std::string::npos) {
      first = line;
      break;
    }
    if (first.empty()) first = line;
  }
  if (first.size() > 200) first = first.substr(0, 197) + "...";
  return first.empty() ? "no message" : first;
}

constexpr size_t kMaxOutputBytes = size_t{256} << 20;  // a listing of ~3 million instructions


// A body's cache key: the rewritten revisions of a record, and the records of one kernel's
// launches, carry the same body, which is disassembled once.
std::string body_key(std::string_view sm_arch, std::string_view function, const std::string& text) {
  std::string key(sm_arch);
  key += '\0';
  key += function;
  key += '\0';
  key += std::to_string(text.size()) + ":" + std::to_string(std::hash<std::string>{}(text));
  return key;
}

}  // namespace

SassListing parse_nvdisasm(std::string_view text) {
  SassListing out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t i = 0;
    while (i < line.size() && is_space(line[i])) ++i;
    if (line.substr(i, 2) != "/*") continue;
    i += 2;
    const size_t digits = i;
    uint64_t offset = 0;
    // At most 16 digits (64 bits); "/* 0x000fe2... */" (the encodings of -hex) starts with a blank.
    for (int d = 0; i < line.size() && i - digits < 16 && (d = hex_digit(line[i])) >= 0; ++i) {
      offset = offset * 16 + static_cast<uint64_t>(d);
    }
    if (i == digits || line.substr(i, 2) != "*/") continue;
    std::string_view rest = line.substr(i + 2);
    // The instruction ends at ';'; the encoding comment of -hex may follow.
    if (size_t semi = rest.find(';'); semi != std::string_view::npos) rest = rest.substr(0, semi);
    if (size_t comment = rest.find("/*"); comment != std::string_view::npos) rest = rest.substr(0, comment);
    std::string instruction = squeeze(rest);
    // Pre-Volta listings brace instructions issued together ("{ IADD ...; }").
    if (!instruction.empty() && instruction.front() == '{') instruction = squeeze(instruction.substr(1));
    if (!instruction.empty() && instruction.back() == '}') {
      instruction = squeeze(instruction.substr(0, instruction.size() - 1));
    }
    if (instruction.empty()) continue;
    out[offset] = std::move(instruction);
  }
  return out;
}

std::optional<std::string> nvdisasm_arch(std::string_view sm_arch) {
  if (sm_arch.substr(0, 3) != "sm_") return std::nullopt;
  std::string_view rest = sm_arch.substr(3);
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || digits > 4) return std::nullopt;
  if (rest.size() > digits + 1) return std::nullopt;
  if (rest.size() == digits + 1 && (rest.back() < 'a' || rest.back() > 'z')) return std::nullopt;
  return "SM" + std::string(rest);
}

NvdisasmLookup find_nvdisasm(const NvdisasmSearch& search) {
  auto env = [&](const char* name) -> std::string {
    const char* v = search.getenv ? search.getenv(name) : std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  if (std::string path = env("CUTRIAGE_NVDISASM"); !path.empty()) {
    if (executable_file(path)) return {path, ""};
    return {"", "CUTRIAGE_NVDISASM=" + path + " is not an executable file: PCs are shown as offsets, without SASS"};
  }
  std::vector<std::string> dirs;
  std::string path_var = env("PATH");
  for (size_t pos = 0; pos <= path_var.size();) {
    size_t colon = path_var.find(':', pos);
    if (colon == std::string::npos) colon = path_var.size();
    if (colon > pos) dirs.push_back(path_var.substr(pos, colon - pos));
    pos = colon + 1;
  }
  if (std::string cuda = env("CUDA_HOME"); !cuda.empty()) dirs.push_back(cuda + "/bin");
  dirs.insert(dirs.end(), search.fallback_dirs.begin(), search.fallback_dirs.end());
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/nvdisasm";
    if (executable_file(candidate)) return {candidate, ""};
  }
  std::string where = "$CUTRIAGE_NVDISASM, $PATH, $CUDA_HOME/bin";
  for (const std::string& dir : search.fallback_dirs) where += ", " + dir;
  return {"", "nvdisasm not found (looked in " + where +
                  "): PCs are shown as offsets, without SASS; install the CUDA toolkit or set "
                  "CUTRIAGE_NVDISASM"};
}

std::optional<SassError> run_nvdisasm(const std::string& nvdisasm, std::string_view sm_arch,
                                      std::string_view code, SassListing& listing) {
  listing.clear();
  std::optional<std::string> arch = nvdisasm_arch(sm_arch);
  if (!arch) return SassError{"no nvdisasm architecture for '" + std::string(sm_arch) + "'"};
  if (code.empty()) return SassError{"no code to disassemble"};
  TempFile input;
  if (!input.ok() || !input.write_and_close(code)) {
    return SassError{"cannot write a temporary file for nvdisasm: " + input.error()};
  }

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return SassError{std::string("cannot create a pipe: ") + error_text(errno)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the copies; the originals close at exec.
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> args = {nvdisasm, "--binary", *arch, input.path()};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int spawn_error = ::posix_spawn(&pid, nvdisasm.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawn_error != 0) {
    ::close(fds[0]);
    return SassError{"cannot run " + nvdisasm + ": " + error_text(spawn_error)};
  }

  std::string output;
  bool too_long = false;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
    if (output.size() > kMaxOutputBytes) {
      too_long = true;
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (too_long) return SassError{"nvdisasm printed more than 256 MiB; stopped"};
  if (WIFSIGNALED(status)) {
    return SassError{"nvdisasm was killed by signal " + std::to_string(WTERMSIG(status)) + ": " +
                     failure_line(output)};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return SassError{"nvdisasm exited with status " + std::to_string(WEXITSTATUS(status)) + ": " +
                     failure_line(output)};
  }
  listing = parse_nvdisasm(output);
  if (listing.empty()) return SassError{"nvdisasm printed no instructions: " + failure_line(output)};
  return std::nullopt;
}

SassResolver::SassResolver(NvdisasmSearch search) : search_(std::move(search)) {}

void SassResolver::note(std::string text) {
  if (said_.insert(text).second) pending_.push_back(std::move(text));
}

std::vector<std::string> SassResolver::take_notes() {
  std::vector<std::string> out;
  out.swap(pending_);
  return out;
}

void SassResolver::look_up() {
  if (looked_up_) return;
  looked_up_ = true;
  NvdisasmLookup found = find_nvdisasm(search_);
  nvdisasm_ = found.path;
  missing_note_ = found.note;
}

bool SassResolver::have_nvdisasm() {
  look_up();
  if (nvdisasm_.empty()) note(missing_note_);
  return !nvdisasm_.empty();
}

void SassResolver::prefetch(const ReadResult& file, const std::vector<const v1::KernelProfile*>& kernels,
                            unsigned parallel) {
  struct Job {
    std::string key;
    std::string function;
    std::string_view arch;
    std::string_view text;
    SassListing listing;
    std::optional<SassError> error;
  };
  std::vector<Job> jobs;
  std::set<std::string, std::less<>> queued;
  for (const v1::KernelProfile* k : kernels) {
    if (k == nullptr || !k->has_pc_sampling()) continue;
    const v1::PcSampling& pcs = k->pc_sampling();
    if (!nvdisasm_arch(pcs.sm_arch())) continue;  // instruction() says why, once
    std::set<uint64_t> wanted;  // functions with a PC shown without SASS
    for (const v1::SampledPc& pc : pcs.pcs()) {
      if (pc.sass().empty()) wanted.insert(pc.function_iid());
    }
    for (const v1::FunctionCode& code : pcs.code()) {
      if (code.text().empty() || wanted.count(code.function_iid()) == 0) continue;
      std::string function(lookup(file, code.function_iid()));
      std::string key = body_key(pcs.sm_arch(), function, code.text());
      if (listings_.count(key) != 0 || !queued.insert(key).second) continue;
      jobs.push_back(Job{std::move(key), std::move(function), pcs.sm_arch(), code.text(), {}, {}});
    }
  }
  look_up();  // quietly: instruction() says it is missing where a PC goes without SASS
  if (jobs.empty() || nvdisasm_.empty()) return;
  if (parallel == 0) parallel = std::clamp(std::thread::hardware_concurrency(), 1U, 8U);
  const size_t workers = std::min<size_t>(parallel, jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      jobs[i].error = run_nvdisasm(nvdisasm_, jobs[i].arch, jobs[i].text, jobs[i].listing);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  try {
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads: the ones started and this one share the rest.
  }
  work();
  for (std::thread& t : threads) t.join();
  for (Job& job : jobs) {
    if (job.error) failures_[job.key] = "nvdisasm failed on " + job.function + ": " + job.error->message;
    listings_.emplace(std::move(job.key), std::move(job.listing));
  }
}

std::string SassResolver::instruction(const ReadResult& file, const v1::PcSampling& pcs,
                                      std::string_view function, uint64_t pc_offset) {
  const v1::FunctionCode* code = nullptr;
  for (const v1::FunctionCode& c : pcs.code()) {
    if (lookup(file, c.function_iid()) == function) {
      code = &c;
      break;
    }
  }
  if (code == nullptr || code->text().empty()) return {};
  if (auto known = by_code_.find(code); known != by_code_.end()) {
    auto instruction = known->second->find(pc_offset);
    return instruction == known->second->end() ? std::string() : instruction->second;
  }
  std::string key = body_key(pcs.sm_arch(), function, code->text());
  auto it = listings_.find(key);
  if (it == listings_.end()) {
    SassListing listing;  // stays empty when it cannot be had: tried once per body
    if (have_nvdisasm()) {
      if (!nvdisasm_arch(pcs.sm_arch())) {
        note("cannot disassemble code for architecture '" + pcs.sm_arch() +
             "' (expected sm_NN): PCs are shown as offsets, without SASS");
      } else if (std::optional<SassError> error = run_nvdisasm(nvdisasm_, pcs.sm_arch(), code->text(), listing)) {
        note("nvdisasm failed on " + std::string(function) + ": " + error->message);
      }
    }
    it = listings_.emplace(std::move(key), std::move(listing)).first;
  } else if (auto failed = failures_.find(key); failed != failures_.end()) {
    note(failed->second);  // a prefetched body's failure, said where its PCs are first shown
    failures_.erase(failed);
  }
  by_code_[code] = &it->second;  // std::map: the listing's address is stable
  auto instruction = it->second.find(pc_offset);
  return instruction == it->second.end() ? std::string() : instruction->second;
}

}  // namespace cutriage::tools
