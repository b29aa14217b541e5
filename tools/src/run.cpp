#include "run.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <system_error>

#include "config.h"
#include "file_reader.h"
#include "report.h"

namespace cutriage::tools {

namespace {

constexpr int kUsage = 1;
constexpr int kNoLibrary = 8;
constexpr int kCannotStart = 9;

std::string run_help() {
  std::string h =
      "usage: cutriage run [options] [--] APP [ARGS...]\n"
      "\n"
      "Runs APP with the cutriage agent injected, then prints the report. APP's output, results and\n"
      "exit status are its own. Each option is also an environment variable, which is how the agent\n"
      "receives it (and how to configure it under launchers that `run` cannot wrap).\n"
      "\n";
  for (const agent::OptionSpec& o : agent::config_options()) {
    std::string left = "  " + std::string(o.flag) + " " + std::string(o.value_hint);
    if (left.size() < 34) left.resize(34, ' ');
    h += left + std::string(o.help) + "\n" + std::string(36, ' ') + "(" + std::string(o.env) +
         ", default " + std::string(o.default_text) + ")\n";
  }
  h +=
      "  --library PATH                  libcutriage.so to inject (default: beside this tool)\n"
      "  --no-report                     do not print the report after the run\n"
      "\n"
      "exit status: APP's own (128 + signal when it was killed); 1 bad option, 8 agent library not\n"
      "found, 9 APP could not be started.\n";
  return h;
}

bool is_file(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

std::string find_agent_library(const std::string& explicit_path, const std::string& self_exe) {
  if (!explicit_path.empty()) return is_file(explicit_path) ? explicit_path : "";
  if (const char* env = std::getenv("CUTRIAGE_LIBRARY"); env != nullptr && *env != '\0') {
    return is_file(env) ? env : "";
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::canonical(self_exe, ec);
  if (ec) return "";
  for (const char* rel : {"../agent/libcutriage.so", "../lib/libcutriage.so", "libcutriage.so"}) {
    std::filesystem::path p = exe.parent_path() / rel;
    if (is_file(p.string())) return std::filesystem::weakly_canonical(p, ec).string();
  }
  return "";
}

int run_command(const std::vector<std::string>& args, const std::string& self_exe) {
  std::map<std::string, std::string> env_set;  // CUTRIAGE_* from flags
  std::string library;
  bool report = true;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::cout << run_help();
      return 0;
    }
    if (a.empty() || a[0] != '-') break;
    std::string flag = a;
    std::optional<std::string> value;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    auto take_value = [&]() -> std::optional<std::string> {
      if (value) return value;
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (flag == "--no-report") {
      report = false;
      continue;
    }
    if (flag == "--library") {
      auto v = take_value();
      if (!v) {
        std::cerr << "cutriage run: --library needs a path\n";
        return kUsage;
      }
      library = *v;
      continue;
    }
    const agent::OptionSpec* spec = nullptr;
    for (const agent::OptionSpec& o : agent::config_options()) {
      // A flag field may list aliases ("-o, --output").
      std::string_view flags = o.flag;
      size_t pos = 0;
      while (pos <= flags.size()) {
        size_t comma = flags.find(',', pos);
        std::string_view one = flags.substr(pos, comma == std::string_view::npos ? flags.npos : comma - pos);
        while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
        while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
        if (one == flag) spec = &o;
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
      }
      if (spec != nullptr) break;
    }
    if (spec == nullptr) {
      std::cerr << "cutriage run: unknown option '" << flag << "' (see cutriage run --help)\n";
      return kUsage;
    }
    auto v = take_value();
    if (!v) {
      std::cerr << "cutriage run: " << flag << " needs a value (" << spec->value_hint << ")\n";
      return kUsage;
    }
    env_set[std::string(spec->env)] = *v;
  }
  if (i >= args.size()) {
    std::cerr << "cutriage run: which application? (cutriage run [options] [--] APP [ARGS...])\n";
    return kUsage;
  }
  std::vector<std::string> app(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());

  // The summary on stderr repeats what the report prints; off unless asked for.
  if (!env_set.count("CUTRIAGE_SUMMARY") && std::getenv("CUTRIAGE_SUMMARY") == nullptr) {
    env_set["CUTRIAGE_SUMMARY"] = "0";
  }
  // Check the whole configuration here, where a mistake costs nothing, rather than in the app.
  std::vector<std::pair<std::string, std::string>> env = agent::process_environment();
  for (auto& [k, v] : env_set) {
    bool replaced = false;
    for (auto& [ek, ev] : env) {
      if (ek == k) {
        ev = v;
        replaced = true;
      }
    }
    if (!replaced) env.emplace_back(k, v);
  }
  agent::ConfigResult cfg = agent::parse_config(env);
  for (const agent::ConfigIssue& issue : cfg.issues) {
    std::cerr << "cutriage run: " << issue.message << "\n";
  }
  if (!cfg.ok()) return kUsage;

  std::string lib = find_agent_library(library, self_exe);
  if (lib.empty()) {
    std::cerr << "cutriage run: libcutriage.so not found"
              << (library.empty() ? " beside the tool or in $CUTRIAGE_LIBRARY" : " at " + library)
              << "; pass --library PATH\n";
    return kNoLibrary;
  }
  if (const char* prev = std::getenv("CUDA_INJECTION64_PATH"); prev != nullptr && lib != prev) {
    std::cerr << "cutriage run: replacing CUDA_INJECTION64_PATH=" << prev << " for this run\n";
  }

  // Flush before fork so buffered output is not duplicated in the child.
  std::cout.flush();
  std::cerr.flush();
  pid_t child = ::fork();
  if (child < 0) {
    std::cerr << "cutriage run: fork failed: " << std::generic_category().message(errno) << "\n";
    return kCannotStart;
  }
  if (child == 0) {
    // NOLINTBEGIN(concurrency-mt-unsafe): the forked child of a single-threaded tool, before exec.
    for (const auto& [k, v] : env_set) ::setenv(k.c_str(), v.c_str(), 1);
    ::setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
    // NOLINTEND(concurrency-mt-unsafe)
    std::vector<char*> argv;
    argv.reserve(app.size() + 1);
    for (std::string& a : app) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::string msg =
        "cutriage run: cannot start " + app[0] + ": " + std::generic_category().message(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127 + 100);  // 227: exec failed (told apart from the app's own 127)
  }

  // The output path, as the agent in the child expands it (its pid is the child's).
  std::string pattern = cfg.config.output_pattern;
  agent::PathContext pctx;
  pctx.pid = static_cast<uint64_t>(child);
  pctx.host = host_name();
  pctx.getenv = [&](std::string_view name) -> std::optional<std::string> {
    for (const auto& [k, v] : env) {
      if (k == name) return v;
    }
    return std::nullopt;
  };
  pctx.exists = [](const std::string& p) { return is_file(p); };
  std::string perr;
  std::optional<std::string> out_path = agent::expand_path_pattern(pattern, pctx, &perr);

  // Like system(): the terminal's ^C goes to the app; we wait for it and still print the report.
  struct sigaction ignore {}, old_int {}, old_quit {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  int code = 0;
  if (WIFEXITED(status)) code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) code = 128 + WTERMSIG(status);
  if (code == 227) return kCannotStart;

  if (report) {
    if (!out_path || !is_file(*out_path)) {
      std::cerr << "cutriage run: no profile was written"
                << (out_path ? " (" + *out_path + ")" : "")
                << ": the application made no CUDA call, or the agent stayed off (see its messages above)\n";
    } else {
      ReadResult r = read_cutriage_file(*out_path);
      if (r.status == ReadStatus::kOk || r.status == ReadStatus::kTruncated) {
        std::cout << "\n" << render_report(r, ReportOptions{});
        std::cout << "(saved: " << *out_path << ")\n";
      } else {
        std::cerr << "cutriage run: " << r.message << "\n";
      }
    }
  }
  return code;
}

}  // namespace cutriage::tools
