// libcutriage.so's entry points: InitializeInjection (the CUDA driver calls it during cuInit when
// CUDA_INJECTION64_PATH names this library) and the C API. They read the configuration, build
// the agent over the CUPTI platform and register the exit hook.
//
// Lifetime: the agent and its platform are created once and never destroyed. The driver, CUPTI
// and other atexit handlers may still call into them while the process exits, and static
// destructors run in an order we do not control; leaking them is the only safe choice.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <chrono>

#include "agent.h"
#include "config.h"
#include "job_place.h"
#include "cutriage/base/read_file.h"
#include "cutriage/collectors/host_lifetime.h"
#include "cutriage/cutriage.h"
#include "log.h"
#include "output.h"

namespace cutriage::agent {
namespace {

// A thresholds file is a few dozen lines; 1 MiB is far beyond any real one and still nothing to
// the application's memory (docs/configuration.md, CUTRIAGE_THRESHOLDS).
constexpr size_t kMaxThresholdsFileBytes = size_t{1} << 20;

struct Global {
  std::once_flag once;
  bool active = false;
  Logger* log = nullptr;
  Agent* agent = nullptr;
  // cutriage_init(): entries that override the environment, or why the string was refused (the
  // agent then stays off). Fixed once start_once() has run.
  std::mutex init_mutex;
  bool started = false;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string init_error;
};

Global& global() {
  static Global* g = new Global();  // leaked on purpose, see above
  return *g;
}

std::vector<std::string> read_command_line() {
  std::vector<std::string> args;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(f, arg, '\0')) args.push_back(arg);
  return args;
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

uint64_t now_unix_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void at_exit() {
  Global& g = global();
  if (g.agent != nullptr) g.agent->finish();
}

// Registered by the collectors after CUPTI loads the Profiler Host library, so it runs before
// that library's destructors and before at_exit (collectors/host_lifetime.h).
void before_host_unload() {
  Global& g = global();
  if (g.agent != nullptr) g.agent->before_host_unload();
}

// Returns whether the agent is profiling. Every message it prints is one line, once.
bool start_agent() {
  Global& g = global();
  g.log = new Logger();
  Logger& log = *g.log;

  std::vector<std::pair<std::string, std::string>> overrides;
  {
    std::lock_guard<std::mutex> lock(g.init_mutex);
    g.started = true;
    if (!g.init_error.empty()) {
      log.error("cutriage_init: " + g.init_error + "; the agent is off for this run");
      return false;
    }
    overrides = g.overrides;
  }
  ConfigResult parsed = parse_config(with_overrides(process_environment(), overrides));
  for (const ConfigIssue& issue : parsed.issues) {
    if (issue.severity == ConfigIssue::Severity::kWarning) log.warn(issue.message);
  }
  if (!parsed.ok()) {
    for (const ConfigIssue& issue : parsed.issues) {
      if (issue.severity == ConfigIssue::Severity::kError) log.error(issue.message);
    }
    log.error("the agent is off for this run; the application runs unprofiled");
    return false;
  }
  AgentConfig config = std::move(parsed.config);
  if (!config.enabled) return false;
  // A log file that cannot be used is bad configuration like any other: the agent stays off
  // rather than run with its messages somewhere the user did not ask for.
  if (std::string err = log.configure(config.log_level, config.log_file); !err.empty()) {
    log.error(err + "; the agent is off for this run");
    return false;
  }

  triage::Thresholds thresholds;
  if (!config.thresholds_file.empty()) {
    // Bounded, non-blocking, regular files only (base/read_file.h): a FIFO here blocked the
    // application inside cuInit, /dev/zero took a gigabyte.
    base::Result<std::string> text = base::read_regular_file(config.thresholds_file, kMaxThresholdsFileBytes);
    if (!text.is_ok()) {
      log.error("CUTRIAGE_THRESHOLDS=\"" + config.thresholds_file + "\": " + text.status().message() +
                "; the agent is off for this run");
      return false;
    }
    if (auto err = thresholds.parse(text.value())) {
      log.error("CUTRIAGE_THRESHOLDS=\"" + config.thresholds_file + "\": " + *err +
                "; the agent is off for this run");
      return false;
    }
  }

  PathContext ctx;
  ctx.pid = static_cast<uint64_t>(::getpid());
  ctx.host = host_name();
  ctx.getenv = [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  ctx.exists = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  };
  std::string error;
  std::optional<std::string> path = expand_path_pattern(config.output_pattern, ctx, &error);
  if (!path) {
    log.error("CUTRIAGE_OUTPUT=\"" + config.output_pattern + "\": " + error +
              "; the agent is off for this run");
    return false;
  }

  static std::unique_ptr<collectors::Platform> platform = collectors::make_cupti_platform();
  ProcessInfo process{ctx.pid, ctx.host, read_command_line(), &now_unix_ns, {}, job_place_from(ctx.getenv)};
  std::unique_ptr<RecordSink> sink;
  if (config.segment_mb != 0 || config.segment_seconds != 0) {
    SegmentOptions segments;
    segments.max_bytes = config.segment_mb << 20;
    segments.max_seconds = config.segment_seconds;
    segments.keep = config.segment_keep;
    sink = make_segment_sink(*path, std::move(segments), log, config.output_mode);
  } else {
    OutputFileOptions file;
    file.mode = config.output_mode;
    // %n: the number seen free above is claimed, atomically, when the file is created.
    std::optional<PreparedPath> prepared = prepare_path_pattern(config.output_pattern, ctx, &error);
    if (prepared && prepared->has_sequence) file.sequence = std::move(prepared->build);
    sink = make_file_sink(*path, log, std::move(file));
  }
  g.agent = new Agent(std::move(config), *platform, std::move(sink), log, std::move(process), std::move(thresholds));
  collectors::set_before_host_unload(&before_host_unload);  // before start(): it may load the host
  if (!g.agent->start()) return false;
  if (std::atexit(&at_exit) != 0) log.warn("cannot register the exit handler: no summary at exit");
  return true;
}

bool start_once() {
  Global& g = global();
  std::call_once(g.once, [&g] {
    try {
      g.active = start_agent();
    } catch (...) {
      g.active = false;
      if (g.log != nullptr) g.log->error("internal error while starting; the agent is off");
    }
  });
  return g.active;
}

}  // namespace
}  // namespace cutriage::agent

extern "C" {

int InitializeInjection(void) {
  (void)cutriage::agent::start_once();
  return 1;
}

int cutriage_start(void) {
  try {
    if (!cutriage::agent::start_once()) return 0;
    cutriage::agent::Global& g = cutriage::agent::global();
    if (g.agent != nullptr) g.agent->set_paused(false);  // resumes after cutriage_stop()
    return 1;
  } catch (...) {
    return 0;
  }
}

void cutriage_stop(void) {
  try {
    cutriage::agent::Global& g = cutriage::agent::global();
    if (g.agent != nullptr && g.active) g.agent->set_paused(true);
  } catch (...) {
  }
}

unsigned long long cutriage_request_deep_capture(const char* target, unsigned int seconds) {
  try {
    cutriage::agent::Global& g = cutriage::agent::global();
    if (g.agent == nullptr || !g.active) return 0;
    std::string error;
    return g.agent->request_deep_capture(cutriage::wire::ControlSource::kApi, target == nullptr ? "" : target,
                                         seconds, &error);
  } catch (...) {
    return 0;
  }
}

int cutriage_init(const char* config) {
  try {
    cutriage::agent::Global& g = cutriage::agent::global();
    std::string error;
    auto entries = cutriage::agent::parse_config_string(config == nullptr ? "" : config, &error);
    std::lock_guard<std::mutex> lock(g.init_mutex);
    if (g.started) return 0;  // the configuration is fixed once the agent has started
    if (!entries) {
      g.init_error = error;
      return 0;
    }
    // Valid values only: the same checks start will make, without printing (start prints).
    const cutriage::agent::ConfigResult check =
        cutriage::agent::parse_config(cutriage::agent::with_overrides(cutriage::agent::process_environment(), *entries));
    g.overrides = std::move(*entries);
    g.init_error.clear();
    return check.ok() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void cutriage_flush(void) {
  try {
    cutriage::agent::Global& g = cutriage::agent::global();
    if (g.agent != nullptr && g.active) g.agent->flush();
  } catch (...) {
  }
}

int cutriage_active(void) {
  cutriage::agent::Global& g = cutriage::agent::global();
  return g.agent != nullptr && g.active &&
                 g.agent->state() == cutriage::wire::AgentState::kActive
             ? 1
             : 0;
}

void cutriage_finish(void) {
  try {
    cutriage::agent::at_exit();
  } catch (...) {
  }
}

const char* cutriage_version(void) { return cutriage::agent::kAgentVersion; }

}  // extern "C"
