#include "run.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <system_error>

#include "config.h"
#include "file_reader.h"
#include "progress.h"
#include "report.h"
#include "report_model.h"

namespace cutriage::tools {

namespace {

constexpr int kExitUsage = 1;
constexpr int kNoLibrary = 8;
constexpr int kCannotStart = 9;

// "-o, --output" -> "-o,--output", as CLI11 names an option.
std::string cli11_names(std::string_view flags) {
  std::string names;
  for (const char c : flags) {
    if (c != ' ') names += c;
  }
  return names;
}

// The tool's own flags, apart from the agent's.
constexpr const char* kLibraryFlag = "--library";
constexpr const char* kNoReportFlag = "--no-report";
constexpr const char* kQuietFlag = "-q,--quiet";
constexpr const char* kRerunFlag = "--rerun";
constexpr const char* kMaxRunsFlag = "--max-runs";

bool is_identifier_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
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

void bind_run(CLI::App& app, RunOptions& o) {
  const std::vector<agent::OptionSpec>& specs = agent::config_options();
  o.agent_values.assign(specs.size(), std::string());
  for (size_t i = 0; i < specs.size(); ++i) {
    const agent::OptionSpec& spec = specs[i];
    const std::string help = std::string(spec.help) + " (" + std::string(spec.env) + "; default " +
                             std::string(spec.default_text) + ")";
    app.add_option(cli11_names(spec.flag), o.agent_values[i], help)
        ->type_name(std::string(spec.value_hint))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  app.add_option(kLibraryFlag, o.library, "libcutriage.so to inject (default: beside this tool, or $CUTRIAGE_LIBRARY)")
      ->type_name("PATH")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::not_empty());
  app.add_flag(kNoReportFlag, o.no_report, "do not print the report after the run");
  app.add_flag(kQuietFlag, o.quiet, "no line on stderr for each kernel profiled while the application runs");
  app.add_option(kRerunFlag, o.rerun_text,
                 "run APP a second time, with the first run's ranking, when its top families ran before the trace "
                 "had ranked them (auto), never, or always (deep mode, top: or share: selection)")
      ->type_name("auto|never|always")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(CLI::IsMember({"auto", "never", "always"}));
  app.add_option(kMaxRunsFlag, o.max_runs,
                 "with --replay application: run APP at most N times in all (each run adds one single-pass metric "
                 "group per profiled launch; the loop stops earlier when every selected family is complete, a run "
                 "adds nothing, or APP fails)")
      ->type_name("N")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(cli::whole_number(1, 1000));
}

void finish_run(const CLI::App& app, const cli::Spelling& spelling, RunOptions& o) {
  const std::vector<agent::OptionSpec>& specs = agent::config_options();
  o.settings.clear();
  for (size_t i = 0; i < specs.size() && i < o.agent_values.size(); ++i) {
    const std::string names = cli11_names(specs[i].flag);
    const CLI::Option* option = app.get_option(names.substr(names.rfind(',') + 1));
    if (option->count() == 0) continue;
    o.settings.push_back({std::string(specs[i].env), spelling.of(option), o.agent_values[i]});
  }
  o.report = !o.no_report;
  o.rerun = o.rerun_text == "never" ? Rerun::kNever : o.rerun_text == "always" ? Rerun::kAlways : Rerun::kAuto;
  o.rerun_given = app.get_option(kRerunFlag)->count() > 0;
  // What the parser left: "--" and APP ARGS..., or APP ARGS... (unknown flags are errors before this).
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  o.app = std::move(rest);
}

std::string name_flags(std::string message, const std::vector<RunOptions::Setting>& settings) {
  for (const RunOptions::Setting& s : settings) {
    // "CUTRIAGE_X=" becomes "FLAG ", a bare "CUTRIAGE_X" becomes "FLAG"; CUTRIAGE_X_Y is another.
    size_t at = 0;
    while ((at = message.find(s.env, at)) != std::string::npos) {
      const size_t end = at + s.env.size();
      if ((at > 0 && is_identifier_char(message[at - 1])) || (end < message.size() && is_identifier_char(message[end]))) {
        at = end;
        continue;
      }
      const bool assigned = end < message.size() && message[end] == '=';
      message.replace(at, s.env.size() + (assigned ? 1 : 0), assigned ? s.flag + " " : s.flag);
      at += s.flag.size();
    }
  }
  return message;
}

namespace {

// One run of the application under the agent.
struct Launched {
  int code = 0;                         // the application's exit status (128 + signal)
  bool started = true;                  // false: exec failed (the child said why)
  std::optional<std::string> out_path;  // where its agent writes, as the agent expands the pattern
};

// Runs `app` with `env_set` and the agent injected, following the agent's file for the progress
// lines meanwhile. `env` is the environment the agent's configuration sees (for the pattern).
Launched launch_app(std::vector<std::string> app, const std::map<std::string, std::string>& env_set,
                    const std::vector<std::pair<std::string, std::string>>& env, const std::string& lib,
                    const std::string& pattern, bool quiet) {
  Launched out;
  // Flush before fork so buffered output is not duplicated in the child.
  std::cout.flush();
  std::cerr.flush();
  pid_t child = ::fork();
  if (child < 0) {
    std::cerr << "cutriage run: fork failed: " << std::generic_category().message(errno) << "\n";
    out.started = false;
    return out;
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
  agent::PathContext pctx;
  pctx.pid = static_cast<uint64_t>(child);
  pctx.host = host_name();
  pctx.getenv = [&](std::string_view name) -> std::optional<std::string> {
    if (auto it = env_set.find(std::string(name)); it != env_set.end()) return it->second;
    for (const auto& [k, v] : env) {
      if (k == name) return v;
    }
    return std::nullopt;
  };
  pctx.exists = [](const std::string& p) { return is_file(p); };
  std::string perr;
  out.out_path = agent::expand_path_pattern(pattern, pctx, &perr);

  // Like system(): the terminal's ^C goes to the app; we wait for it and still print the report.
  struct sigaction ignore {}, old_int {}, old_quit {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  // Meanwhile the agent's file is followed, a line per kernel profiled (progress.h).
  std::optional<ProgressFollower> progress;
  if (!quiet && out.out_path) progress.emplace(*out.out_path, std::cerr, progress_style_for(STDERR_FILENO));
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(child, &status, progress ? WNOHANG : 0);
    if (done == child) break;
    if (done < 0 && errno != EINTR) break;
    if (done == 0) {
      progress->poll();
      struct timespec tick {0, 100L * 1000 * 1000};  // the ~100 ms between looks at the file
      ::nanosleep(&tick, nullptr);
    }
  }
  if (progress) progress->poll();  // what the agent wrote as the application exited
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  if (WIFEXITED(status)) out.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.code = 128 + WTERMSIG(status);
  if (out.code == 227) out.started = false;
  return out;
}

// The name the first run's file is kept under while the second run reads it: beside it, so the
// rename stays on one file system, and not a name the agent's pattern would choose.
std::string ranking_name(const std::string& out_path) { return out_path + ".ranking-run"; }

}  // namespace

RerunNeed rerun_need(const ReadResult& r) {
  RerunNeed need;
  const v1::TraceSummary* s = trace_summary(r);
  if (s == nullptr) return need;
  const v1::FamilyStats* top = nullptr;
  for (const v1::FamilyStats& f : s->families()) {
    if (top == nullptr || f.time_share() > top->time_share()) top = &f;
  }
  for (const v1::FamilyStats& f : s->families()) {
    // Files of agents before the state existed said "too few launches" for it.
    const bool older = f.selection() == v1::FamilyStats::SELECTION_TOO_FEW_LAUNCHES &&
                       f.selection_detail().find("not launched again after its rank was known") != std::string::npos &&
                       f.application_launches() == 0;
    // Counters of its graph only, its direct launches all before the ranking: the next run
    // profiles those for counters of its own.
    const bool graph_only_counters = f.direct_launches_before_rank() > 0;
    if (f.selection() != v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH && !older && !graph_only_counters) {
      continue;
    }
    if (graph_only_counters) ++need.graph_scoped;
    if (&f == top) need.includes_top = true;
    ++need.families;
    need.time_share += f.time_share();
    if (need.first.empty()) need.first = family_name(r, f.family_id());
  }
  return need;
}

ReplayState replay_state(const ReadResult& r, bool pc_sampling) {
  ReplayState state;
  // The latest application-replay record of each family (mangled name, device, block), in file
  // order: a family's later records (its resumed one, then each profiled launch's, the samples',
  // the end-of-run rewrite) supersede the earlier ones.
  std::map<std::string, const v1::KernelProfile*> latest;
  for (const v1::KernelProfile* k : current_kernels(r)) {
    if (k->status() != v1::PROFILE_STATUS_PROFILED || !k->has_application_replay()) continue;
    const v1::Dim3& b = k->launch().block();
    latest[std::string(lookup(r, k->mangled_name_iid())) + "/" + std::to_string(k->device()) + "/" +
           std::to_string(b.x()) + "x" + std::to_string(b.y()) + "x" + std::to_string(b.z())] = k;
  }
  for (const auto& [key, kp] : latest) {
    const v1::KernelProfile& k = *kp;
    ReplayState::Family& f = state.families[key];
    f.values = static_cast<uint64_t>(
        std::count_if(k.metrics().begin(), k.metrics().end(), [](const v1::Metric& m) { return !m.derived(); }));
    f.rejected = static_cast<uint64_t>(k.rejected_metrics_size());
    f.wanted = k.application_replay().counters_wanted();
    f.sampled = k.has_pc_sampling();
    if (!k.application_replay().counters_complete() || (pc_sampling && !f.sampled)) {
      if (state.incomplete++ == 0) state.first = model::kernel_name(r, k);
    }
  }
  // Chosen, but launched only before the trace had ranked them: the next run has the ranking.
  const RerunNeed missed = rerun_need(r);
  if (missed.families > 0 && state.incomplete == 0) state.first = missed.first;
  state.ranked_late = missed.families;
  state.incomplete += missed.families;
  return state;
}

ReplayStep replay_step(const ReplayState& before, const ReplayState& after) {
  bool gained = after.ranked_late < before.ranked_late;
  bool lost = false;
  for (const auto& [key, a] : after.families) {
    auto b = before.families.find(key);
    if (b == before.families.end()) {
      gained = true;
      continue;
    }
    gained = gained || a.values > b->second.values || a.rejected > b->second.rejected ||
             (a.sampled && !b->second.sampled) || a.wanted < b->second.wanted;
    lost = lost || a.values < b->second.values;
  }
  for (const auto& entry : before.families) lost = lost || after.families.count(entry.first) == 0;
  return gained ? ReplayStep::kProgress : lost ? ReplayStep::kLost : ReplayStep::kNothing;
}

namespace {

// "3 families incomplete (gemm and 2 more)", or that none is.
std::string incomplete_text(const ReplayState& s) {
  if (s.incomplete == 0) {
    const size_t n = s.families.size();
    return n == 0 ? "no family profiled"
                  : "every profiled family complete (" + std::to_string(n) + (n == 1 ? " family" : " families") + ")";
  }
  std::string text = std::to_string(s.incomplete) + (s.incomplete == 1 ? " family" : " families") + " incomplete (" +
                     terminal_safe(s.first, false);
  if (s.incomplete > 1) text += " and " + std::to_string(s.incomplete - 1) + " more";
  return text + ")";
}

// Application replay: APP runs once per metric group. Each run's file is moved aside (so a fixed
// output name is never written over while the next run reads it) and the next run continues it
// (CUTRIAGE_RESUME), with the first run's ranking (CUTRIAGE_RANKING) so that the top families are
// profiled from their first launch. The loop ends when every selected family is complete, when a
// run adds nothing, when APP fails, or after max_runs. The file that holds the most is renamed to
// where its run's agent wrote it; the others are deleted.
Launched application_replay(const RunOptions& o, const agent::AgentConfig& config,
                            const std::map<std::string, std::string>& env_set,
                            const std::vector<std::pair<std::string, std::string>>& env, const std::string& lib) {
  const bool ranks = (config.select == agent::SelectMode::kTop || config.select == agent::SelectMode::kShare) &&
                     config.ranking_path.empty();
  struct Kept {
    std::string aside;  // where it waits
    std::string home;   // where its run's agent wrote it
    ReplayState state;
    uint32_t run = 0;
  };
  std::optional<Kept> best;
  std::string ranking;  // the first run's file, aside; the ranking of every later run
  Launched last;
  std::string stop;     // why the loop ended early, for the last line
  uint32_t runs = 0;
  std::error_code ec;
  for (uint32_t i = 1; i <= o.max_runs; ++i) {
    std::map<std::string, std::string> run_env = env_set;
    if (best) {
      run_env["CUTRIAGE_RESUME"] = best->aside;
      if (ranks && !ranking.empty()) run_env["CUTRIAGE_RANKING"] = ranking;
    }
    Launched run = launch_app(o.app, run_env, env, lib, config.output_pattern, o.quiet);
    if (!run.started) {
      if (i == 1) return run;
      stop = "run " + std::to_string(i) + " could not start";
      break;
    }
    runs = i;
    last = run;
    if (!run.out_path || !is_file(*run.out_path)) {
      stop = "run " + std::to_string(i) + " wrote no profile";
      break;
    }
    const ReplayState state = replay_state(read_cutriage_file(*run.out_path), config.pc_sampling);
    const std::string aside = *run.out_path + ".replay-run" + std::to_string(i);
    std::filesystem::rename(*run.out_path, aside, ec);
    if (ec) {
      stop = "cannot move " + *run.out_path + " aside (" + ec.message() + ")";
      if (!best) return run;  // the first run's file stays where it is: it is all there is
      break;
    }
    const ReplayStep step = best ? replay_step(best->state, state) : ReplayStep::kProgress;
    const bool progress = step == ReplayStep::kProgress;
    std::cerr << "cutriage run: application replay, run " << i << " of at most " << o.max_runs << ": "
              << incomplete_text(state)
              << (step == ReplayStep::kNothing ? "; it added nothing"
                  : step == ReplayStep::kLost  ? "; it lost families or counters of the earlier runs"
                                               : "")
              << "\n";
    if (progress) {
      if (best && best->aside != ranking) std::filesystem::remove(best->aside, ec);
      best = Kept{aside, *run.out_path, state, i};
    } else {
      std::filesystem::remove(aside, ec);
    }
    if (i == 1) ranking = aside;
    if (run.code != 0) {
      stop = o.app[0] + " exited with status " + std::to_string(run.code) + " in run " + std::to_string(i);
      break;
    }
    if (step == ReplayStep::kNothing) {
      stop = "run " + std::to_string(i) + " added nothing to the counters or samples of run " +
             std::to_string(best->run);
      break;
    }
    if (step == ReplayStep::kLost) {
      stop = "run " + std::to_string(i) + " did not continue run " + std::to_string(best->run) +
             "'s families (the program launched other kernels or launch shapes than in the earlier runs)";
      break;
    }
    if (state.incomplete == 0) break;
    if (i == o.max_runs) stop = "--max-runs " + std::to_string(o.max_runs) + " reached";
  }
  if (!best) return last;
  std::filesystem::rename(best->aside, best->home, ec);
  if (ec) {
    std::cerr << "cutriage run: cannot move " << best->aside << " back to " << best->home << " (" << ec.message()
              << "); the profile is " << best->aside << "\n";
    best->home = best->aside;
  }
  if (!ranking.empty() && ranking != best->aside) std::filesystem::remove(ranking, ec);
  if (!stop.empty()) {
    std::cerr << "cutriage run: application replay stopped: " << stop << "; "
              << (best->state.incomplete > 0 ? incomplete_text(best->state) + " after " : "") << runs
              << (runs == 1 ? " run" : " runs");
    if (best->run != runs) std::cerr << "; the report is run " << best->run << "'s file, which holds the most";
    std::cerr << "\n";
  }
  last.out_path = best->home;
  return last;
}

}  // namespace

int cmd_run(const RunOptions& o) {
  std::map<std::string, std::string> env_set;  // CUTRIAGE_* from flags
  for (const RunOptions::Setting& s : o.settings) env_set[s.env] = s.value;
  const std::string& library = o.library;
  const bool report = o.report;
  const std::string& self_exe = o.self_exe;
  if (o.app.empty()) {
    std::cerr << "cutriage run: which application? (cutriage run [options] [--] APP [ARGS...])\n";
    return kExitUsage;
  }

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
    std::cerr << "cutriage run: " << name_flags(issue.message, o.settings) << "\n";
  }
  if (!cfg.ok()) return kExitUsage;

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

  const std::string& pattern = cfg.config.output_pattern;
  const bool app_replay = cfg.config.mode == agent::AgentMode::kDeep && cfg.config.replay == agent::Replay::kApplication;
  if (app_replay && (cfg.config.segment_mb != 0 || cfg.config.segment_seconds != 0)) {
    std::cerr << "cutriage run: --replay application keeps one file per run and continues each from the last; "
                 "expected no --segment-mb or --segment-seconds with it\n";
    return kExitUsage;
  }
  if (app_replay && o.rerun_given) {
    std::cerr << "cutriage run: --rerun does not apply with --replay application: every run after the first has "
                 "the first run's ranking already\n";
  }
  Launched run = app_replay ? application_replay(o, cfg.config, env_set, env, lib)
                            : launch_app(o.app, env_set, env, lib, pattern, o.quiet);
  if (!run.started) return kCannotStart;

  // A second run with the first one's ranking, when the first ranked its top families too late.
  const bool ranks = cfg.config.select == agent::SelectMode::kTop || cfg.config.select == agent::SelectMode::kShare;
  if (!app_replay && o.rerun != Rerun::kNever && run.out_path && is_file(*run.out_path)) {
    std::string why_not;
    if (!ranks) {
      why_not = "CUTRIAGE_SELECT=" + agent::select_spec(cfg.config) + " ranks nothing";
    } else if (cfg.config.mode != agent::AgentMode::kDeep) {
      why_not = "always-on mode waits for its budget, not for a ranking";
    } else if (!cfg.config.ranking_path.empty()) {
      why_not = "the ranking was given (CUTRIAGE_RANKING)";
    } else if (run.code != 0) {
      why_not = "the application exited with status " + std::to_string(run.code);
    }
    // The trace summary alone decides: the current records are enough (ReadScope::kCurrent).
    const RerunNeed need = rerun_need(read_cutriage_file(*run.out_path, ReadScope::kCurrent));
    const bool wanted = o.rerun == Rerun::kAlways || rerun_worth(need);
    if (!wanted && need.families > 0 && why_not.empty()) {
      char share[32];
      std::snprintf(share, sizeof(share), "%.1f%%", 100.0 * need.time_share);
      std::cerr << "cutriage run: not running " << o.app[0] << " again: " << terminal_safe(need.first, false)
                << (need.families > 1 ? " and " + std::to_string(need.families - 1) + " more" : std::string())
                << " ran before the trace had ranked " << (need.families > 1 ? "them" : "it") << ", with " << share
                << " of the GPU time (a second run profiles the top family, or families with "
                << static_cast<int>(kRerunMinShare * 100) << "% or more together; --rerun always runs it)\n";
    } else if (wanted && !why_not.empty()) {
      std::cerr << "cutriage run: not running " << o.app[0] << " again: " << why_not << "\n";
    } else if (wanted) {
      const std::string first = ranking_name(*run.out_path);
      std::error_code ec;
      std::filesystem::rename(*run.out_path, first, ec);
      if (ec) {
        std::cerr << "cutriage run: not running " << o.app[0] << " again: cannot move " << *run.out_path << " aside ("
                  << ec.message() << ")\n";
      } else {
        if (need.families > 0) {
          char share[32];
          std::snprintf(share, sizeof(share), "%.1f%%", 100.0 * need.time_share);
          std::cerr << "cutriage run: " << terminal_safe(need.first, false)
                    << (need.families > 1 ? " and " + std::to_string(need.families - 1) + " more" : std::string())
                    << " (" << share << " of the GPU time) ran before the trace had ranked "
                    << (need.families > 1 ? "them" : "it")
                    << (need.graph_scoped > 0 ? " (" + std::to_string(need.graph_scoped) +
                                                    " with only its graph's counters otherwise)"
                                              : std::string())
                    << "; running " << o.app[0]
                    << " again with this run's ranking (--rerun never: run once)\n";
        } else {
          std::cerr << "cutriage run: running " << o.app[0] << " again with this run's ranking (--rerun always)\n";
        }
        std::map<std::string, std::string> second_env = env_set;
        second_env["CUTRIAGE_RANKING"] = first;
        Launched second = launch_app(o.app, second_env, env, lib, pattern, o.quiet);
        if (second.started && second.out_path && is_file(*second.out_path)) {
          std::filesystem::remove(first, ec);
          run = std::move(second);
        } else {
          // Keep the first run's file where it was: it is all there is.
          std::filesystem::rename(first, *run.out_path, ec);
          std::cerr << "cutriage run: the second run wrote no profile; the report is the first run's\n";
          if (second.started) run.code = second.code;
        }
      }
    }
  }

  if (report) {
    if (!run.out_path || !is_file(*run.out_path)) {
      std::cerr << "cutriage run: no profile was written"
                << (run.out_path ? " (" + *run.out_path + ")" : "")
                << ": the application made no CUDA call, or the agent stayed off (see its messages above)\n";
    } else {
      // As `cutriage report` reads it: memory holds what the report shows, not the file.
      ReadResult r = read_cutriage_file_current(*run.out_path);
      if (r.status == ReadStatus::kOk || r.status == ReadStatus::kTruncated) {
        std::cout << "\n" << render_report(r, ReportOptions{});
        std::cout << "(saved: " << *run.out_path << ")\n";
      } else {
        std::cerr << "cutriage run: " << r.message << "\n";
      }
    }
  }
  return run.code;
}

}  // namespace cutriage::tools

namespace cutriage::tools {

cli::Command run_command_entry(std::function<int(const RunOptions&)> run) {
  cli::Command text{
      "run", "run APP with the agent injected, then print the report", "[options] [--] APP [ARGS...]",
      "Runs APP with the cutriage agent injected, prints a line on stderr for each kernel profiled as the "
      "application runs (--quiet: none), then prints the report. APP's output, results and exit status are "
      "its own. Each agent option is also an environment variable, which is how the agent receives it (and "
      "how to configure it under launchers that `run` cannot wrap). -o, -k, -c and -s are ncu's.",
      "exit status: APP's own (128 + signal when it was killed); 1 bad option, 8 agent library not found, "
      "9 APP could not be started.",
      true, true, {}};
  return cli::make_command<RunOptions>(std::move(text), bind_run, std::move(run), finish_run);
}

}  // namespace cutriage::tools
