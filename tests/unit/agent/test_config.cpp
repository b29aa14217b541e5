#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catch.h"
#include "config.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_config {

using cutriage::agent::AgentConfig;
using cutriage::agent::check_path_pattern;
using cutriage::agent::config_options;
using cutriage::agent::ConfigIssue;
using cutriage::agent::ConfigResult;
using cutriage::agent::expand_path_pattern;
using cutriage::agent::KernelFilter;
using cutriage::agent::kMaxPathSequence;
using cutriage::agent::LogLevel;
using cutriage::agent::MetricMode;
using cutriage::agent::NameBase;
using cutriage::agent::parse_config;
using cutriage::agent::PathContext;

namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

std::vector<ConfigIssue> issues_of(const ConfigResult& r, ConfigIssue::Severity severity) {
  std::vector<ConfigIssue> out;
  for (const ConfigIssue& i : r.issues) {
    if (i.severity == severity) out.push_back(i);
  }
  return out;
}
std::vector<ConfigIssue> errors(const ConfigResult& r) { return issues_of(r, ConfigIssue::Severity::kError); }
std::vector<ConfigIssue> warnings(const ConfigResult& r) { return issues_of(r, ConfigIssue::Severity::kWarning); }

// A valid, non-default value for each variable, so a test that parses it can tell it was read.
std::string sample_value(std::string_view env) {
  if (env == "CUTRIAGE_ENABLE") return "0";
  if (env == "CUTRIAGE_OUTPUT") return "out-%p.pb";
  if (env == "CUTRIAGE_OUTPUT_MODE") return "0640";
  if (env == "CUTRIAGE_KERNEL_NAME") return "regex:gemm";
  if (env == "CUTRIAGE_KERNEL_NAME_BASE") return "demangled";
  if (env == "CUTRIAGE_LAUNCH_SKIP") return "2";
  if (env == "CUTRIAGE_LAUNCH_COUNT") return "5";
  if (env == "CUTRIAGE_MAX_PROFILES_PER_KERNEL") return "1";
  if (env == "CUTRIAGE_METRICS") return "full";
  if (env == "CUTRIAGE_LOG_LEVEL") return "debug";
  if (env == "CUTRIAGE_LOG_FILE") return "/tmp/agent.log";
  if (env == "CUTRIAGE_SUMMARY") return "0";
  if (env == "CUTRIAGE_THRESHOLDS") return "thresholds.txt";
  if (env == "CUTRIAGE_SELECT") return "top:3";
  if (env == "CUTRIAGE_TRACE") return "0";
  if (env == "CUTRIAGE_TRACE_MAX_EVENTS") return "10";
  if (env == "CUTRIAGE_TRACE_FLUSH_MS") return "20";
  if (env == "CUTRIAGE_TRACE_DUTY") return "25%";
  if (env == "CUTRIAGE_TRACE_PERIOD") return "120";
  if (env == "CUTRIAGE_NVTX_INCLUDE") return "train_step";
  if (env == "CUTRIAGE_NVTX_EXCLUDE") return "regex:^warmup";
  if (env == "CUTRIAGE_PC_SAMPLING") return "0";
  if (env == "CUTRIAGE_GRAPH_PM_SAMPLING") return "0";
  if (env == "CUTRIAGE_GRAPH_PC_SAMPLING") return "1";
  if (env == "CUTRIAGE_PM_WINDOW") return "0";
  if (env == "CUTRIAGE_STAGE_PASSES") return "1";
  if (env == "CUTRIAGE_STEP_STAGES") return "64";
  if (env == "CUTRIAGE_WARMUP") return "0";
  if (env == "CUTRIAGE_RANK_EARLY") return "0";
  if (env == "CUTRIAGE_LAUNCH_GATE") return "1";
  if (env == "CUTRIAGE_PC_SAMPLING_PERIOD") return "9";
  if (env == "CUTRIAGE_CUBIN_CACHE_MB") return "64";
  if (env == "CUTRIAGE_PROMETHEUS_FILE") return "/var/lib/node_exporter/cutriage.prom";
  if (env == "CUTRIAGE_PROMETHEUS_INTERVAL_MS") return "5000";
  if (env == "CUTRIAGE_PROMETHEUS_DCGM_LABELS") return "1";
  if (env == "CUTRIAGE_SEGMENT_MB") return "64";
  if (env == "CUTRIAGE_SEGMENT_SECONDS") return "3600";
  if (env == "CUTRIAGE_SEGMENT_KEEP") return "24";
  if (env == "CUTRIAGE_MODE") return "always-on";
  if (env == "CUTRIAGE_REPLAY") return "application";
  if (env == "CUTRIAGE_BUDGET") return "2%";
  if (env == "CUTRIAGE_BUDGET_RATE") return "0.5";
  if (env == "CUTRIAGE_PC_SAMPLING_INTERVAL") return "0";
  if (env == "CUTRIAGE_RELEASE_MS") return "0";
  if (env == "CUTRIAGE_RESUME") return "/var/log/svc/cutriage.pb";
  if (env == "CUTRIAGE_REPLICA") return "1/4";
  if (env == "CUTRIAGE_RANKING") return "/tmp/first-run.pb";
  if (env == "CUTRIAGE_CONTROL_FILE") return "/run/svc/cutriage.control";
  if (env == "CUTRIAGE_CONTROL_SIGNAL") return "usr2";
  if (env == "CUTRIAGE_DEEP_SECONDS") return "5";
  if (env == "CUTRIAGE_DEEP_TARGET") return "regex:gemm";
  return {};
}

// A fixed context: pid 4242 on host "node7"; HOME and JOB set, EMPTY set to "".
PathContext test_context() {
  PathContext ctx;
  ctx.pid = 4242;
  ctx.host = "node7";
  ctx.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "JOB") return std::string("job17");
    if (name == "HOME") return std::string("/home/u");
    if (name == "EMPTY") return std::string();
    return std::nullopt;
  };
  return ctx;
}

std::string expand(std::string_view pattern, const PathContext& ctx) {
  std::string error;
  const std::optional<std::string> path = expand_path_pattern(pattern, ctx, &error);
  INFO(pattern << ": " << error);
  REQUIRE(path.has_value());
  CHECK(error.empty());
  return *path;
}

std::string expand_error(std::string_view pattern, const PathContext& ctx) {
  std::string error;
  const std::optional<std::string> path = expand_path_pattern(pattern, ctx, &error);
  INFO(pattern);
  CHECK_FALSE(path.has_value());
  CHECK_FALSE(error.empty());
  return error;
}

}  // namespace

TEST_CASE("config: no CUTRIAGE_ variable gives the defaults", "[config]") {
  const ConfigResult r = parse_config({{"PATH", "/usr/bin"}, {"HOME", "/root"}});
  CHECK(r.ok());
  CHECK(r.issues.empty());
  const AgentConfig& c = r.config;
  CHECK(c.enabled);
  CHECK(c.output_pattern == "cutriage-%h-%p.pb");
  CHECK(c.kernel_filter.empty());
  CHECK(c.kernel_filter.base() == NameBase::kFunction);
  CHECK(c.launch_skip == 0);
  CHECK(c.launch_count == 0);
  CHECK(c.max_profiles_per_kernel == 3);
  CHECK(c.metric_mode == MetricMode::kFull);  // deep mode with kernel replay
  CHECK(c.metric_list.empty());
  CHECK(c.log_level == LogLevel::kWarn);
  CHECK(c.log_file.empty());
  CHECK(c.summary);
  CHECK(c.thresholds_file.empty());
}

TEST_CASE("config: every option is parsed", "[config]") {
  const ConfigResult r = parse_config({
      {"CUTRIAGE_ENABLE", "off"},
      {"CUTRIAGE_OUTPUT", "/data/%q{JOB}-%n.pb"},
      {"CUTRIAGE_KERNEL_NAME", "zoo_vector_add"},
      {"CUTRIAGE_KERNEL_NAME_BASE", "mangled"},
      {"CUTRIAGE_LAUNCH_SKIP", "10"},
      {"CUTRIAGE_LAUNCH_COUNT", "5"},
      {"CUTRIAGE_MAX_PROFILES_PER_KERNEL", "7"},
      {"CUTRIAGE_METRICS", "list:sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum"},
      {"CUTRIAGE_LOG_LEVEL", "info"},
      {"CUTRIAGE_LOG_FILE", "/tmp/cutriage log.txt"},
      {"CUTRIAGE_SUMMARY", "no"},
      {"CUTRIAGE_THRESHOLDS", "my thresholds.txt"},
      {"CUTRIAGE_PROMETHEUS_DCGM_LABELS", "yes"},
  });
  INFO(r.issues.size());
  REQUIRE(r.ok());
  CHECK(r.issues.empty());
  const AgentConfig& c = r.config;
  CHECK_FALSE(c.enabled);
  CHECK(c.output_pattern == "/data/%q{JOB}-%n.pb");
  CHECK(c.kernel_filter.spec() == "zoo_vector_add");
  CHECK(c.kernel_filter.base() == NameBase::kMangled);
  CHECK(c.launch_skip == 10);
  CHECK(c.launch_count == 5);
  CHECK(c.max_profiles_per_kernel == 7);
  CHECK(c.metric_mode == MetricMode::kList);
  CHECK(c.metric_list ==
        std::vector<std::string>{"sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum"});
  CHECK(c.log_level == LogLevel::kInfo);
  CHECK(c.log_file == "/tmp/cutriage log.txt");
  CHECK_FALSE(c.summary);
  CHECK(c.thresholds_file == "my thresholds.txt");
  CHECK(c.prometheus_dcgm_labels);
  CHECK(c.replica_index == 0);  // alone unless told
  CHECK(c.replica_count == 1);
  const ConfigResult replica = parse_config({{"CUTRIAGE_REPLICA", " 3/8 "}});
  REQUIRE(replica.ok());
  CHECK(replica.config.replica_index == 3);
  CHECK(replica.config.replica_count == 8);
}

TEST_CASE("config: booleans accept every spelling, any case, surrounding whitespace", "[config]") {
  for (const char* yes : {"1", "on", "ON", "true", "True", "yes", "YES", " 1 ", "\ttrue\n"}) {
    INFO(yes);
    const ConfigResult r = parse_config({{"CUTRIAGE_ENABLE", yes}, {"CUTRIAGE_SUMMARY", yes}});
    CHECK(r.ok());
    CHECK(r.config.enabled);
    CHECK(r.config.summary);
  }
  for (const char* no : {"0", "off", "Off", "false", "FALSE", "no", "No", "  0  "}) {
    INFO(no);
    const ConfigResult r = parse_config({{"CUTRIAGE_ENABLE", no}, {"CUTRIAGE_SUMMARY", no}});
    CHECK(r.ok());
    CHECK_FALSE(r.config.enabled);
    CHECK_FALSE(r.config.summary);
  }
}

TEST_CASE("config: keywords are case-insensitive and may carry whitespace", "[config]") {
  const ConfigResult r = parse_config({{"CUTRIAGE_KERNEL_NAME_BASE", " Demangled "},
                                       {"CUTRIAGE_METRICS", "\tBASE\n"},
                                       {"CUTRIAGE_LOG_LEVEL", " ERROR"},
                                       {"CUTRIAGE_LAUNCH_SKIP", "  42\t"},
                                       {"CUTRIAGE_LAUNCH_COUNT", "\n7\n"},
                                       {"CUTRIAGE_MAX_PROFILES_PER_KERNEL", " 007 "}});
  REQUIRE(r.ok());
  CHECK(r.config.kernel_filter.base() == NameBase::kDemangled);
  CHECK(r.config.metric_mode == MetricMode::kBase);
  CHECK(r.config.log_level == LogLevel::kError);
  CHECK(r.config.launch_skip == 42);
  CHECK(r.config.launch_count == 7);
  CHECK(r.config.max_profiles_per_kernel == 7);

  for (const auto& [level, want] : std::vector<std::pair<std::string, LogLevel>>{
           {"off", LogLevel::kOff}, {"error", LogLevel::kError}, {"warn", LogLevel::kWarn},
           {"info", LogLevel::kInfo}, {"debug", LogLevel::kDebug}}) {
    const ConfigResult l = parse_config({{"CUTRIAGE_LOG_LEVEL", level}});
    CHECK(l.ok());
    CHECK(l.config.log_level == want);
  }
  for (const auto& [mode, want] : std::vector<std::pair<std::string, MetricMode>>{
           {"adaptive", MetricMode::kAdaptive}, {"full", MetricMode::kFull}, {"base", MetricMode::kBase}}) {
    const ConfigResult m = parse_config({{"CUTRIAGE_METRICS", mode}});
    CHECK(m.ok());
    CHECK(m.config.metric_mode == want);
  }
}

// Deep mode's kernel replay pays a new configuration's start for every stage of an adaptive
// collection, and the stages' passes add up to about the full list's (docs/agent.md): unset, it
// collects everything in one launch. Always-on and application replay keep adaptive; a value the
// user gives wins in every mode.
TEST_CASE("config: CUTRIAGE_METRICS unset is full in deep mode and adaptive in always-on and application replay",
          "[config]") {
  CHECK(parse_config({}).config.metric_mode == MetricMode::kFull);
  CHECK(parse_config({{"CUTRIAGE_MODE", "deep"}}).config.metric_mode == MetricMode::kFull);
  CHECK(parse_config({{"CUTRIAGE_METRICS", ""}}).config.metric_mode == MetricMode::kFull);
  CHECK(parse_config({{"CUTRIAGE_MODE", "always-on"}}).config.metric_mode == MetricMode::kAdaptive);
  CHECK(parse_config({{"CUTRIAGE_REPLAY", "application"}}).config.metric_mode == MetricMode::kAdaptive);
  CHECK(parse_config({{"CUTRIAGE_REPLAY", "kernel"}}).config.metric_mode == MetricMode::kFull);
  CHECK(parse_config({{"CUTRIAGE_METRICS", "adaptive"}}).config.metric_mode == MetricMode::kAdaptive);
  CHECK(parse_config({{"CUTRIAGE_METRICS", "base"}}).config.metric_mode == MetricMode::kBase);
  CHECK(parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_METRICS", "full"}}).config.metric_mode ==
        MetricMode::kFull);
  const ConfigResult list = parse_config({{"CUTRIAGE_METRICS", "list:sm__throughput.avg.pct_of_peak_sustained_elapsed"}});
  CHECK(list.config.metric_mode == MetricMode::kList);
  // A config built in code keeps adaptive: only parse_config resolves the unset default.
  CHECK(AgentConfig{}.metric_mode == MetricMode::kAdaptive);
}

TEST_CASE("config: an empty value is the same as unset", "[config]") {
  Env env;
  for (const auto& option : config_options()) env.emplace_back(std::string(option.env), "");
  const ConfigResult r = parse_config(env);
  CHECK(r.ok());
  CHECK(r.issues.empty());
  CHECK(r.config.enabled);
  CHECK(r.config.output_pattern == "cutriage-%h-%p.pb");
  CHECK(r.config.kernel_filter.empty());
  CHECK(r.config.max_profiles_per_kernel == 3);
  CHECK(r.config.metric_mode == MetricMode::kFull);
  CHECK(r.config.log_level == LogLevel::kWarn);
  CHECK(r.config.summary);
}

TEST_CASE("config: each bad value is one error naming the variable, the value and what it accepts",
          "[config]") {
  struct Case {
    const char* env;
    std::string value;
    const char* accepts;  // a fragment of the message's "expected ..."
  };
  const std::vector<Case> cases = {
      {"CUTRIAGE_ENABLE", "maybe", "1, 0, on, off, true, false, yes or no"},
      {"CUTRIAGE_ENABLE", "2", "1, 0, on, off"},
      {"CUTRIAGE_SUMMARY", "enabled", "1, 0, on, off, true, false, yes or no"},
      {"CUTRIAGE_OUTPUT", "out-%x.pb", "%p (pid), %h (host)"},
      {"CUTRIAGE_OUTPUT", "out-%q{JOB", "%q{VAR}"},
      {"CUTRIAGE_OUTPUT", "out%", "%% (a literal %)"},
      {"CUTRIAGE_OUTPUT", "   ", "a path pattern"},
      {"CUTRIAGE_KERNEL_NAME", "regex:(gemm", "regex:<ECMAScript regular expression>"},
      {"CUTRIAGE_KERNEL_NAME", "regex:", "an exact kernel name"},
      {"CUTRIAGE_KERNEL_NAME", "  ", "an exact kernel name"},
      {"CUTRIAGE_KERNEL_NAME_BASE", "symbol", "function, demangled or mangled"},
      {"CUTRIAGE_LAUNCH_SKIP", "-1", "a non-negative integer"},
      {"CUTRIAGE_LAUNCH_COUNT", "ten", "a non-negative integer (0 = no limit)"},
      {"CUTRIAGE_MAX_PROFILES_PER_KERNEL", "0", "an integer from 1 to 4294967295"},
      {"CUTRIAGE_METRICS", "everything", "adaptive, full, base or list:<metric>"},
      {"CUTRIAGE_METRICS", "list:", "adaptive, full, base or list:<metric>"},
      {"CUTRIAGE_METRICS", "list:sm__cycles_elapsed", "adaptive, full, base or list:<metric>"},
      {"CUTRIAGE_LOG_LEVEL", "verbose", "off, error, warn, info or debug"},
      {"CUTRIAGE_LOG_FILE", "  ", "a file path"},
      {"CUTRIAGE_THRESHOLDS", " ", "a file path"},
      {"CUTRIAGE_REPLICA", "4/4", "K/N with N from 1 to 1024 and K from 0 to N-1"},
      {"CUTRIAGE_REPLICA", "3", "K/N with N from 1 to 1024"},
      {"CUTRIAGE_REPLICA", "0/0", "K/N with N from 1 to 1024"},
      {"CUTRIAGE_REPLICA", "1/2000", "K/N with N from 1 to 1024"},
      {"CUTRIAGE_REPLICA", "-1/4", "K/N with N from 1 to 1024"},
      {"CUTRIAGE_REPLICA", "1.5/4", "K/N with N from 1 to 1024"},
  };
  for (const Case& c : cases) {
    INFO(c.env << "=" << c.value);
    const ConfigResult r = parse_config({{c.env, c.value}, {"CUTRIAGE_LAUNCH_SKIP", "1"}});
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.config.enabled);  // an error keeps the agent off
    const std::vector<ConfigIssue> errs = errors(r);
    REQUIRE(errs.size() == 1);
    CHECK(warnings(r).empty());
    CHECK(errs[0].variable == c.env);
    INFO(errs[0].message);
    CHECK(contains(errs[0].message, c.env));
    CHECK(contains(errs[0].message, "expected "));
    CHECK(contains(errs[0].message, c.accepts));
    CHECK(contains(errs[0].message, "\"" + c.value + "\""));
    CHECK(errs[0].message.find('\n') == std::string::npos);
  }
  // The exact wording the issue asks for.
  const ConfigResult r = parse_config({{"CUTRIAGE_LAUNCH_COUNT", "ten"}});
  REQUIRE(errors(r).size() == 1);
  CHECK(errors(r)[0].message == "CUTRIAGE_LAUNCH_COUNT=\"ten\": expected a non-negative integer (0 = no limit)");
}

TEST_CASE("config: every bad variable is reported, once each", "[config]") {
  const ConfigResult r = parse_config({{"CUTRIAGE_LAUNCH_COUNT", "x"},
                                       {"CUTRIAGE_LOG_LEVEL", "loud"},
                                       {"CUTRIAGE_METRICS", "list:a.b,,c.d"},
                                       {"CUTRIAGE_LAUNCH_COUNT", "y"},  // a duplicate: first counts
                                       {"CUTRIAGE_SUMMARY", "1"}});
  CHECK_FALSE(r.ok());
  const std::vector<ConfigIssue> errs = errors(r);
  REQUIRE(errs.size() == 3);
  std::set<std::string> vars;
  for (const ConfigIssue& e : errs) vars.insert(e.variable);
  CHECK(vars == std::set<std::string>{"CUTRIAGE_LAUNCH_COUNT", "CUTRIAGE_LOG_LEVEL", "CUTRIAGE_METRICS"});
  for (const ConfigIssue& e : errs) {
    if (e.variable == "CUTRIAGE_METRICS") CHECK(contains(e.message, "empty metric name"));
  }
}

TEST_CASE("config: the first occurrence of a name counts, as getenv sees it", "[config]") {
  const ConfigResult r = parse_config({{"CUTRIAGE_LAUNCH_COUNT", "4"}, {"CUTRIAGE_LAUNCH_COUNT", "bad"}});
  CHECK(r.ok());
  CHECK(r.config.launch_count == 4);
}

TEST_CASE("config: integers reject signs, junk, blanks and overflow", "[config]") {
  for (const char* bad : {"+5", "-0", "5 5", "5x", "0x10", "1e3", "5.0", " ", "\t\n", "١"}) {
    INFO("'" << bad << "'");
    for (const char* var : {"CUTRIAGE_LAUNCH_SKIP", "CUTRIAGE_LAUNCH_COUNT", "CUTRIAGE_MAX_PROFILES_PER_KERNEL"}) {
      const ConfigResult r = parse_config({{var, bad}});
      CHECK(errors(r).size() == 1);
    }
  }
  const ConfigResult max64 = parse_config({{"CUTRIAGE_LAUNCH_SKIP", "18446744073709551615"},
                                           {"CUTRIAGE_LAUNCH_COUNT", "0"},
                                           {"CUTRIAGE_MAX_PROFILES_PER_KERNEL", "4294967295"}});
  REQUIRE(max64.ok());
  CHECK(max64.config.launch_skip == UINT64_MAX);
  CHECK(max64.config.launch_count == 0);
  CHECK(max64.config.max_profiles_per_kernel == UINT32_MAX);

  for (const char* over : {"18446744073709551616", "18446744073709551620", "99999999999999999999999"}) {
    CHECK(errors(parse_config({{"CUTRIAGE_LAUNCH_SKIP", over}})).size() == 1);
    CHECK(errors(parse_config({{"CUTRIAGE_LAUNCH_COUNT", over}})).size() == 1);
  }
  CHECK(errors(parse_config({{"CUTRIAGE_MAX_PROFILES_PER_KERNEL", "4294967296"}})).size() == 1);
  CHECK(parse_config({{"CUTRIAGE_MAX_PROFILES_PER_KERNEL", "1"}}).config.max_profiles_per_kernel == 1);
}

TEST_CASE("config: an unknown CUTRIAGE_ variable warns, suggests the closest name, stays enabled",
          "[config]") {
  struct Case {
    const char* typo;
    const char* suggestion;
  };
  for (const Case& c : {Case{"CUTRIAGE_LAUNCH_CONT", "CUTRIAGE_LAUNCH_COUNT"},
                        Case{"CUTRIAGE_LAUNCHCOUNT", "CUTRIAGE_LAUNCH_COUNT"},
                        Case{"CUTRIAGE_launch_count", "CUTRIAGE_LAUNCH_COUNT"},
                        Case{"CUTRIAGE_ENABLED", "CUTRIAGE_ENABLE"},
                        Case{"CUTRIAGE_METRIC", "CUTRIAGE_METRICS"},
                        Case{"CUTRIAGE_LOGLEVEL", "CUTRIAGE_LOG_LEVEL"},
                        Case{"CUTRIAGE_KERNEL", "CUTRIAGE_KERNEL_NAME"},
                        Case{"CUTRIAGE_KERNEL_NAME_REGEX", "CUTRIAGE_KERNEL_NAME"},
                        Case{"CUTRIAGE_SKIP", "CUTRIAGE_LAUNCH_SKIP"},
                        Case{"CUTRIAGE_MAX_PROFILES", "CUTRIAGE_MAX_PROFILES_PER_KERNEL"},
                        Case{"CUTRIAGE_LIBRAY", "CUTRIAGE_LIBRARY"}}) {
    INFO(c.typo);
    const ConfigResult r = parse_config({{c.typo, "5"}});
    CHECK(r.ok());
    CHECK(r.config.enabled);
    CHECK(r.config.launch_count == 0);  // the typo sets nothing
    const std::vector<ConfigIssue> warns = warnings(r);
    REQUIRE(warns.size() == 1);
    CHECK(warns[0].variable == c.typo);
    INFO(warns[0].message);
    CHECK(contains(warns[0].message, c.typo));
    CHECK(contains(warns[0].message, std::string("did you mean ") + c.suggestion + "?"));
  }
  const ConfigResult far = parse_config({{"CUTRIAGE_ZZZ", "1"}});
  CHECK(far.ok());
  REQUIRE(warnings(far).size() == 1);
  CHECK(contains(warnings(far)[0].message, "CUTRIAGE_ZZZ"));
  CHECK_FALSE(contains(warnings(far)[0].message, "did you mean"));

  // An unknown name is warned once however often it occurs, even with an empty value.
  const ConfigResult twice = parse_config({{"CUTRIAGE_FOO", ""}, {"CUTRIAGE_FOO", "x"}});
  CHECK(warnings(twice).size() == 1);
  CHECK(twice.ok());
}

TEST_CASE("config: tool-only and foreign variables are accepted silently", "[config]") {
  const ConfigResult r = parse_config({{"CUTRIAGE_LIBRARY", "/opt/cutriage/lib/libcutriage.so"},
                                       {"CUTRIAGE_CMAKE_ARGS", "-DCUTRIAGE_WERROR=ON"},  // tests/run.sh
                                       {"CUTRIAGE_BUILD_DIR", "build"},
                                       {"cutriage_launch_count", "x"},
                                       {"CUTRIAGE", "x"},
                                       {"NOT_CUTRIAGE_ENABLE", "0"},
                                       {"CUDA_INJECTION64_PATH", "/x.so"}});
  CHECK(r.ok());
  CHECK(r.issues.empty());
  CHECK(r.config.enabled);
}

TEST_CASE("config: PC sampling options", "[config]") {
  const ConfigResult defaults = parse_config({});
  CHECK(defaults.config.pc_sampling);
  CHECK(defaults.config.pc_sampling_period_log2 == 0);  // auto
  CHECK(defaults.config.cubin_cache_mb == 256);
  const ConfigResult set = parse_config({{"CUTRIAGE_PC_SAMPLING", "0"},
                                         {"CUTRIAGE_PC_SAMPLING_PERIOD", " 31 "},
                                         {"CUTRIAGE_CUBIN_CACHE_MB", "0"}});
  REQUIRE(set.ok());
  CHECK_FALSE(set.config.pc_sampling);
  CHECK(set.config.pc_sampling_period_log2 == 31);
  CHECK(set.config.cubin_cache_mb == 0);
  CHECK(parse_config({{"CUTRIAGE_PC_SAMPLING_PERIOD", "AUTO"}}).config.pc_sampling_period_log2 == 0);
  // CUPTI's range is 2^5..2^31 cycles: anything else is one error naming the accepted values.
  for (const char* bad : {"4", "32", "0", "-1", "fast"}) {
    INFO(bad);
    const ConfigResult r = parse_config({{"CUTRIAGE_PC_SAMPLING_PERIOD", bad}});
    REQUIRE(errors(r).size() == 1);
    CHECK(errors(r)[0].message.find("auto or an integer from 5 to 31") != std::string::npos);
    CHECK_FALSE(r.config.enabled);
  }
}

TEST_CASE("config: messages show long and odd values cut and escaped, on one line", "[config]") {
  const std::string long_value(10000, '7');
  const ConfigResult r = parse_config({{"CUTRIAGE_LAUNCH_COUNT", long_value + "x"}});
  REQUIRE(errors(r).size() == 1);
  const std::string m = errors(r)[0].message;
  CHECK(m.size() < 400);
  CHECK(contains(m, "10001 bytes"));
  CHECK(contains(m, "CUTRIAGE_LAUNCH_COUNT"));

  const ConfigResult odd = parse_config({{"CUTRIAGE_LOG_LEVEL", "de\nbug\"\x01"}});
  REQUIRE(errors(odd).size() == 1);
  const std::string o = errors(odd)[0].message;
  CHECK(o.find('\n') == std::string::npos);
  CHECK(contains(o, "\"de\\x0abug\\\"\\x01\""));
}

TEST_CASE("config: config_options lists every variable, and each is accepted with a sample value",
          "[config]") {
  const auto& options = config_options();
  REQUIRE(options.size() == 51);
  std::set<std::string> names;
  std::set<std::string> flags;
  for (const auto& option : options) {
    const std::string env(option.env);
    INFO(env);
    CHECK(env.rfind("CUTRIAGE_", 0) == 0);
    CHECK(names.insert(env).second);
    // Aliases separated by ", ", the long form last: `cutriage run` splits them.
    const std::string flag(option.flag);
    const std::size_t last = flag.rfind(", ");
    const std::string long_form = last == std::string::npos ? flag : flag.substr(last + 2);
    CHECK(long_form.rfind("--", 0) == 0);
    CHECK(long_form.find(' ') == std::string::npos);
    CHECK(flags.insert(long_form).second);
    CHECK_FALSE(option.value_hint.empty());
    CHECK_FALSE(option.default_text.empty());
    CHECK_FALSE(option.help.empty());

    const std::string value = sample_value(env);
    REQUIRE_FALSE(value.empty());  // a new option needs a sample here
    // The trace can only be turned off together with a selection that needs no ranking.
    std::vector<std::pair<std::string, std::string>> vars = {{env, value}};
    if (env == "CUTRIAGE_TRACE") vars.emplace_back("CUTRIAGE_SELECT", "all");
    const ConfigResult r = parse_config(vars);
    CHECK(r.ok());
    CHECK(r.issues.empty());  // known: no unknown-variable warning
    // And it was really read: the configuration differs from the default one.
    const AgentConfig d;
    const AgentConfig& c = r.config;
    const bool changed = c.enabled != d.enabled || c.output_pattern != d.output_pattern ||
                         c.kernel_filter.spec() != d.kernel_filter.spec() ||
                         c.kernel_filter.base() != d.kernel_filter.base() || c.launch_skip != d.launch_skip ||
                         c.launch_count != d.launch_count ||
                         c.max_profiles_per_kernel != d.max_profiles_per_kernel ||
                         c.metric_mode != d.metric_mode || c.log_level != d.log_level ||
                         c.log_file != d.log_file || c.summary != d.summary ||
                         c.thresholds_file != d.thresholds_file || c.select != d.select ||
                         c.select_top != d.select_top || c.trace != d.trace ||
                         c.trace_max_events != d.trace_max_events ||
                         c.trace_flush_ms != d.trace_flush_ms || c.trace_duty != d.trace_duty ||
                         c.trace_period_s != d.trace_period_s ||
                         c.nvtx_include.spec() != d.nvtx_include.spec() ||
                         c.nvtx_exclude.spec() != d.nvtx_exclude.spec() || c.pc_sampling != d.pc_sampling ||
                         c.graph_pm_sampling != d.graph_pm_sampling || c.pm_window != d.pm_window ||
                         c.graph_pc_sampling != d.graph_pc_sampling || c.stage_passes != d.stage_passes ||
                         c.step_launches != d.step_launches || c.warmup != d.warmup ||
                         c.pc_sampling_period_log2 != d.pc_sampling_period_log2 ||
                         c.cubin_cache_mb != d.cubin_cache_mb || c.prometheus_file != d.prometheus_file ||
                         c.prometheus_interval_ms != d.prometheus_interval_ms || c.segment_mb != d.segment_mb ||
                         c.segment_seconds != d.segment_seconds || c.segment_keep != d.segment_keep ||
                         c.mode != d.mode || c.replay != d.replay || c.budget_fraction != d.budget_fraction ||
                         c.budget_rate != d.budget_rate || c.pc_sampling_interval_s != d.pc_sampling_interval_s ||
                         c.control_file != d.control_file || c.control_signal != d.control_signal ||
                         c.deep_seconds != d.deep_seconds || c.deep_target != d.deep_target ||
                         c.release_ms != d.release_ms || c.resume_path != d.resume_path ||
                         c.replica_index != d.replica_index || c.replica_count != d.replica_count ||
                         c.ranking_path != d.ranking_path || c.rank_early != d.rank_early ||
                         c.output_mode != d.output_mode || c.prometheus_dcgm_labels != d.prometheus_dcgm_labels;
    CHECK(changed);
  }
  CHECK(names == std::set<std::string>{"CUTRIAGE_ENABLE", "CUTRIAGE_OUTPUT", "CUTRIAGE_OUTPUT_MODE", "CUTRIAGE_KERNEL_NAME",
                                       "CUTRIAGE_KERNEL_NAME_BASE", "CUTRIAGE_LAUNCH_SKIP",
                                       "CUTRIAGE_LAUNCH_COUNT", "CUTRIAGE_MAX_PROFILES_PER_KERNEL",
                                       "CUTRIAGE_METRICS", "CUTRIAGE_LOG_LEVEL", "CUTRIAGE_LOG_FILE",
                                       "CUTRIAGE_SUMMARY", "CUTRIAGE_THRESHOLDS", "CUTRIAGE_SELECT", "CUTRIAGE_RANKING",
                                       "CUTRIAGE_RANK_EARLY", "CUTRIAGE_TRACE", "CUTRIAGE_TRACE_MAX_EVENTS",
                                       "CUTRIAGE_TRACE_FLUSH_MS", "CUTRIAGE_TRACE_DUTY",
                                       "CUTRIAGE_TRACE_PERIOD", "CUTRIAGE_NVTX_INCLUDE",
                                       "CUTRIAGE_NVTX_EXCLUDE", "CUTRIAGE_PC_SAMPLING", "CUTRIAGE_GRAPH_PM_SAMPLING",
                                       "CUTRIAGE_GRAPH_PC_SAMPLING",
                                       "CUTRIAGE_PM_WINDOW", "CUTRIAGE_STAGE_PASSES", "CUTRIAGE_STEP_STAGES",
                                       "CUTRIAGE_WARMUP", "CUTRIAGE_LAUNCH_GATE", "CUTRIAGE_PC_SAMPLING_PERIOD",
                                       "CUTRIAGE_CUBIN_CACHE_MB",
                                       "CUTRIAGE_PROMETHEUS_FILE", "CUTRIAGE_PROMETHEUS_INTERVAL_MS",
                                       "CUTRIAGE_SEGMENT_MB", "CUTRIAGE_SEGMENT_SECONDS", "CUTRIAGE_SEGMENT_KEEP",
                                       "CUTRIAGE_MODE", "CUTRIAGE_REPLAY", "CUTRIAGE_BUDGET", "CUTRIAGE_BUDGET_RATE",
                                       "CUTRIAGE_PC_SAMPLING_INTERVAL", "CUTRIAGE_CONTROL_FILE",
                                       "CUTRIAGE_CONTROL_SIGNAL", "CUTRIAGE_DEEP_SECONDS", "CUTRIAGE_DEEP_TARGET",
                                       "CUTRIAGE_RELEASE_MS", "CUTRIAGE_RESUME", "CUTRIAGE_REPLICA",
                                       "CUTRIAGE_PROMETHEUS_DCGM_LABELS"});
  for (const auto& option : options) {
    if (option.env == "CUTRIAGE_OUTPUT") CHECK(option.flag == "-o, --output");
  }
}

TEST_CASE("config: metric lists are trimmed, deduplicated in order, and checked for shape", "[config]") {
  const ConfigResult r =
      parse_config({{"CUTRIAGE_METRICS", " list: b.sum , a.avg.pct ,b.sum,c__x.max.per_second "}});
  REQUIRE(r.ok());
  CHECK(r.config.metric_mode == MetricMode::kList);
  CHECK(r.config.metric_list == std::vector<std::string>{"b.sum", "a.avg.pct", "c__x.max.per_second"});

  CHECK(parse_config({{"CUTRIAGE_METRICS", "LIST:a.b"}}).config.metric_list == std::vector<std::string>{"a.b"});
  for (const char* bad : {"list:", "list: ", "list:a.b,", "list:,a.b", "list:a.b,,c.d", "list:nodot",
                          "list:a b.c", "list:.a", "list:a.", "list:a..b", "list a.b", "lists:a.b"}) {
    INFO(bad);
    const ConfigResult b = parse_config({{"CUTRIAGE_METRICS", bad}});
    CHECK(errors(b).size() == 1);
  }
  // A later keyword clears a list (only one metrics variable is read, but the config stays coherent).
  const ConfigResult full = parse_config({{"CUTRIAGE_METRICS", "full"}});
  CHECK(full.config.metric_list.empty());
}

TEST_CASE("kernel filter: exact names match the chosen base only, whole name", "[config][filter]") {
  const std::string mangled = "_Z9zoo_tiledIfLi32EEvPKT_PS0_i";
  const std::string demangled = "void zoo_tiled<float, 32>(float const*, float*, int)";
  const std::string function = "zoo_tiled<float, 32>";

  KernelFilter f;
  CHECK(f.empty());
  CHECK(f.matches(mangled, demangled, function));  // empty matches everything

  REQUIRE(f.set(function, NameBase::kFunction).empty());
  CHECK_FALSE(f.empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches(mangled, demangled, "zoo_tiled<float, 64>"));
  CHECK_FALSE(f.matches(function, function + "x", "zoo_tiled"));  // exact, not a substring

  REQUIRE(f.set(demangled, NameBase::kDemangled).empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches(demangled, "other", demangled));  // reads the demangled name only

  REQUIRE(f.set(mangled, NameBase::kMangled).empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches("_Z1fv", mangled, mangled));  // reads the mangled name only
}

TEST_CASE("kernel filter: regex finds a match anywhere in the chosen name", "[config][filter]") {
  const std::string mangled = "_Z14zoo_vector_addPKfS0_Pfm";
  const std::string demangled = "zoo_vector_add(float const*, float const*, float*, unsigned long)";
  const std::string function = "zoo_vector_add";

  KernelFilter f;
  REQUIRE(f.set("regex:vector", NameBase::kFunction).empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches(mangled, demangled, "zoo_gemm"));

  REQUIRE(f.set("regex:^zoo_vector_add$", NameBase::kFunction).empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches(mangled, demangled, "my_zoo_vector_add"));

  REQUIRE(f.set("regex:unsigned long\\)$", NameBase::kDemangled).empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches(mangled, function, function));

  REQUIRE(f.set("regex:^_Z14", NameBase::kMangled).empty());
  CHECK(f.matches(mangled, demangled, function));
  CHECK_FALSE(f.matches(demangled, mangled, mangled));

  REQUIRE(f.set("regex:gemm|vector", NameBase::kFunction).empty());  // alternation at top level
  CHECK(f.matches("", "", "zoo_gemm"));
  CHECK(f.matches("", "", "vector_x"));
  CHECK_FALSE(f.matches("", "", "zoo_add"));

  REQUIRE(f.set("regex:\\bgemm", NameBase::kFunction).empty());
  CHECK(f.matches("", "", "x gemm"));
  CHECK_FALSE(f.matches("", "", "sgemm"));
}

TEST_CASE("kernel filter: names left empty are derived from the mangled one", "[config][filter]") {
  const std::string mangled = "_Z9zoo_tiledIfLi32EEvPKT_PS0_i";
  KernelFilter f;
  REQUIRE(f.set("zoo_tiled<float, 32>", NameBase::kFunction).empty());
  CHECK(f.matches(mangled, "", ""));
  CHECK(f.matches("", "void zoo_tiled<float, 32>(float const*, float*, int)", ""));
  REQUIRE(f.set("regex:^void zoo_tiled<float, 32>\\(", NameBase::kDemangled).empty());
  CHECK(f.matches(mangled, "", ""));
}

TEST_CASE("kernel filter: bad specs are errors and leave the filter unchanged", "[config][filter]") {
  KernelFilter f;
  REQUIRE(f.set("regex:gemm", NameBase::kDemangled).empty());
  for (const std::string& bad : {std::string("regex:(gemm"), std::string("regex:[a-"), std::string("regex:a{2,1}"),
                                 std::string("regex:*x"), std::string("regex:"),
                                 "regex:" + std::string(KernelFilter::kMaxRegexLength + 1, 'a')}) {
    INFO(bad.substr(0, 40));
    CHECK_FALSE(f.set(bad, NameBase::kMangled).empty());
    CHECK(f.spec() == "regex:gemm");
    CHECK(f.base() == NameBase::kDemangled);
    CHECK(f.matches("", "sgemm", ""));
  }
  // At the length limit it is still accepted.
  CHECK(f.set("regex:" + std::string(KernelFilter::kMaxRegexLength, 'a'), NameBase::kFunction).empty());
  // The wrapping that makes matching linear must not accept what the pattern alone rejects.
  CHECK_FALSE(f.set("regex:a)|(b", NameBase::kFunction).empty());
#if defined(__GLIBCXX__)
  CHECK_FALSE(f.set("regex:(a)\\1", NameBase::kFunction).empty());  // back-references need backtracking
#endif

  // Through the environment: one error naming the variable and the regex problem.
  const ConfigResult r = parse_config({{"CUTRIAGE_KERNEL_NAME", "regex:(gemm"}});
  REQUIRE(errors(r).size() == 1);
  CHECK(contains(errors(r)[0].message, "CUTRIAGE_KERNEL_NAME=\"regex:(gemm\": bad regular expression"));
  const ConfigResult longer =
      parse_config({{"CUTRIAGE_KERNEL_NAME", "regex:" + std::string(KernelFilter::kMaxRegexLength + 1, 'a')}});
  REQUIRE(errors(longer).size() == 1);
  CHECK(contains(errors(longer)[0].message, "longer than 4096"));
}

TEST_CASE("kernel filter: copies are independent, moves leave an empty filter", "[config][filter]") {
  KernelFilter a;
  REQUIRE(a.set("regex:gemm", NameBase::kFunction).empty());
  KernelFilter b = a;
  REQUIRE(a.set("exact", NameBase::kMangled).empty());
  CHECK(b.spec() == "regex:gemm");
  CHECK(b.base() == NameBase::kFunction);
  CHECK(b.matches("", "", "sgemm_nt"));
  CHECK(a.matches("exact", "", ""));

  KernelFilter c;
  c = b;
  CHECK(c.matches("", "", "gemm"));
  KernelFilter d = std::move(c);
  CHECK(d.matches("", "", "gemm"));
  CHECK_FALSE(d.matches("", "", "axpy"));

  // set() may be given the filter's own spec (the environment parser does this).
  REQUIRE(d.set(d.spec(), NameBase::kDemangled).empty());
  CHECK(d.spec() == "regex:gemm");
  CHECK(d.base() == NameBase::kDemangled);
  CHECK(d.matches("", "void sgemm()", ""));

  REQUIRE(d.set("", NameBase::kMangled).empty());
  CHECK(d.empty());
  CHECK(d.base() == NameBase::kMangled);
  CHECK(d.matches("a", "b", "c"));
}

TEST_CASE("kernel filter: matching is linear in the name and does not exhaust the stack", "[config][filter]") {
#if defined(__GLIBCXX__)
  // With libstdc++'s defaults, ".*gemm" on a name this long recursed once per character (a crash)
  // or, breadth-first, restarted at every position (minutes).
  const std::string name(200000, 'a');
  KernelFilter f;
  REQUIRE(f.set("regex:.*gemm", NameBase::kFunction).empty());
  CHECK_FALSE(f.matches("", "", name));
  CHECK(f.matches("", "", name + "gemm"));
  REQUIRE(f.set("regex:(a|b)*c", NameBase::kFunction).empty());
  CHECK_FALSE(f.matches("", "", name));
#else
  SUCCEED("only libstdc++ gets the breadth-first executor");
#endif
}

TEST_CASE("config: kernel name and its base combine in either order", "[config][filter]") {
  const std::string demangled = "void ns::gemm_kernel<float>(float*)";
  for (const bool base_first : {true, false}) {
    Env env = {{"CUTRIAGE_KERNEL_NAME", "regex:^void ns::"}};
    const std::pair<std::string, std::string> base = {"CUTRIAGE_KERNEL_NAME_BASE", "demangled"};
    env.insert(base_first ? env.begin() : env.end(), base);
    const ConfigResult r = parse_config(env);
    REQUIRE(r.ok());
    CHECK(r.config.kernel_filter.base() == NameBase::kDemangled);
    CHECK(r.config.kernel_filter.matches("", demangled, "ns::gemm_kernel<float>"));
  }
  // A plain name is trimmed; a regex keeps its trailing space.
  const ConfigResult plain = parse_config({{"CUTRIAGE_KERNEL_NAME", "  zoo_gemm \t"}});
  CHECK(plain.config.kernel_filter.spec() == "zoo_gemm");
  CHECK(plain.config.kernel_filter.matches("", "", "zoo_gemm"));
  const ConfigResult spaced = parse_config({{"CUTRIAGE_KERNEL_NAME", " regex:gemm "}});
  CHECK(spaced.config.kernel_filter.spec() == "regex:gemm ");
  CHECK_FALSE(spaced.config.kernel_filter.matches("", "", "zoo_gemm"));
  CHECK(spaced.config.kernel_filter.matches("", "", "gemm x"));
}

TEST_CASE("path pattern: every escape expands", "[config][path]") {
  const PathContext ctx = test_context();
  CHECK(expand("cutriage-%h-%p.pb", ctx) == "cutriage-node7-4242.pb");
  CHECK(expand("%q{HOME}/runs/%q{JOB}_%p.pb", ctx) == "/home/u/runs/job17_4242.pb");
  CHECK(expand("100%%-%n.pb", ctx) == "100%-1.pb");  // no exists: %n is 1
  CHECK(expand("plain.pb", ctx) == "plain.pb");
  CHECK(expand("a%q{EMPTY}b", ctx) == "ab");  // set but empty is fine
  CHECK(expand("%%p", ctx) == "%p");
  CHECK(expand("é-%p", ctx) == "é-4242");
}

TEST_CASE("path pattern: %n is the smallest unused number, shared by every %n", "[config][path]") {
  PathContext ctx = test_context();
  std::set<std::string> taken = {"out-1.pb", "out-2.pb", "out-4.pb", "d1/f1", "d2/f2"};
  std::vector<std::string> probed;
  ctx.exists = [&](const std::string& path) {
    probed.push_back(path);
    return taken.count(path) > 0;
  };
  CHECK(expand("out-%n.pb", ctx) == "out-3.pb");
  CHECK(probed == std::vector<std::string>{"out-1.pb", "out-2.pb", "out-3.pb"});
  CHECK(expand("d%n/f%n", ctx) == "d3/f3");  // d1/f1 and d2/f2 exist; both %n move together
  CHECK(expand("fresh-%n", ctx) == "fresh-1");
  probed.clear();
  CHECK(expand("no-sequence-%p", ctx) == "no-sequence-4242");
  CHECK(probed.empty());  // without %n nothing is probed

  ctx.exists = [](const std::string&) { return true; };
  const std::string error = expand_error("full-%n", ctx);
  CHECK(contains(error, std::to_string(kMaxPathSequence)));

  ctx.exists = [](const std::string&) -> bool { throw std::runtime_error("disk on fire"); };
  CHECK(contains(expand_error("boom-%n", ctx), "disk on fire"));  // a throwing callback is contained
}

TEST_CASE("path pattern: errors name the problem", "[config][path]") {
  PathContext ctx = test_context();
  CHECK(contains(expand_error("%q{UNSET_VAR}/x", ctx), "UNSET_VAR"));
  CHECK(contains(expand_error("out-%x", ctx), "%x"));
  CHECK(contains(expand_error("out%", ctx), "lone %"));
  CHECK(contains(expand_error("%q{JOB", ctx), "unterminated"));
  CHECK(contains(expand_error("%qJOB", ctx), "{VAR}"));
  CHECK(contains(expand_error("%q{}", ctx), "not an environment variable name"));
  CHECK(contains(expand_error("%q{1X}", ctx), "not an environment variable name"));
  CHECK(contains(expand_error("%q{A-B}", ctx), "not an environment variable name"));
  CHECK(contains(expand_error("", ctx), "empty path"));
  CHECK(contains(expand_error("%q{EMPTY}", ctx), "empty path"));
  ctx.getenv = nullptr;
  CHECK(contains(expand_error("%q{JOB}", ctx), "JOB"));

  // A null error pointer is allowed.
  CHECK_FALSE(expand_path_pattern("bad%", ctx, nullptr).has_value());

  // The parse-time check agrees with the expansion on syntax.
  CHECK(check_path_pattern("cutriage-%h-%p-%n-%q{JOB}-%%.pb").empty());
  CHECK_FALSE(check_path_pattern("a%").empty());
  CHECK_FALSE(check_path_pattern("a%y").empty());
  CHECK_FALSE(check_path_pattern("%q{X").empty());
  CHECK(check_path_pattern("%q{UNSET}").empty());  // whether VAR is set is known only at expansion
}

TEST_CASE("config: process_environment reads the real environment", "[config]") {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): no other thread runs during this test.
  REQUIRE(setenv("CUTRIAGE_TEST_CONFIG_PROBE", "a=b", 1) == 0);
  const auto env = cutriage::agent::process_environment();
  bool found = false;
  for (const auto& [name, value] : env) {
    if (name == "CUTRIAGE_TEST_CONFIG_PROBE") {
      found = true;
      CHECK(value == "a=b");  // split at the first '=' only
    }
  }
  CHECK(found);
  unsetenv("CUTRIAGE_TEST_CONFIG_PROBE");  // NOLINT(concurrency-mt-unsafe): as above
}

TEST_CASE("config: selection policies parse, and bad ones name the variable and the choices", "[config]") {
  using cutriage::agent::SelectMode;
  using cutriage::agent::select_spec;
  {
    const ConfigResult r = parse_config({});
    CHECK(r.config.select == SelectMode::kTop);
    CHECK(r.config.select_top == 5);
    CHECK(r.config.trace);
    CHECK(select_spec(r.config) == "top:5");
  }
  const std::vector<std::pair<std::string, std::string>> good = {
      {"top:1", "top:1"}, {" TOP:12 ", "top:12"}, {"all", "all"}, {"None", "none"},
      {"share:5", "share:5%"}, {"share:2.5%", "share:2.5%"}, {"share:100", "share:100%"}};
  for (const auto& [value, spec] : good) {
    INFO(value);
    const ConfigResult r = parse_config({{"CUTRIAGE_SELECT", value}});
    REQUIRE(r.ok());
    CHECK(select_spec(r.config) == spec);
  }
  for (const std::string bad : {"top", "top:0", "top:-1", "top:x", "share:0", "share:101", "share:",
                                "share:1.25", "best", "top:5,share:2"}) {
    INFO(bad);
    const ConfigResult r = parse_config({{"CUTRIAGE_SELECT", bad}});
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.config.enabled);
    REQUIRE(errors(r).size() == 1);
    CHECK(errors(r)[0].variable == "CUTRIAGE_SELECT");
    CHECK(errors(r)[0].message.find("top:<K>, share:<percent>, all or none") != std::string::npos);
  }
}

TEST_CASE("config: ranking needs the trace", "[config]") {
  const ConfigResult off = parse_config({{"CUTRIAGE_TRACE", "0"}});
  REQUIRE(errors(off).size() == 1);
  CHECK(errors(off)[0].variable == "CUTRIAGE_SELECT");
  CHECK(errors(off)[0].message.find("CUTRIAGE_TRACE=0") != std::string::npos);
  CHECK(parse_config({{"CUTRIAGE_TRACE", "0"}, {"CUTRIAGE_SELECT", "all"}}).ok());
  CHECK(parse_config({{"CUTRIAGE_TRACE", "0"}, {"CUTRIAGE_SELECT", "none"}}).ok());
  CHECK_FALSE(parse_config({{"CUTRIAGE_TRACE", "0"}, {"CUTRIAGE_SELECT", "share:3"}}).ok());
}

TEST_CASE("config: NVTX filters take a name or a regex, the flush period is bounded", "[config]") {
  const ConfigResult r = parse_config({{"CUTRIAGE_NVTX_INCLUDE", " step "}, {"CUTRIAGE_NVTX_EXCLUDE", "regex:^warm"}});
  REQUIRE(r.ok());
  CHECK(r.config.nvtx_include.matches("step", "step", "step"));
  CHECK_FALSE(r.config.nvtx_include.matches("steps", "steps", "steps"));
  CHECK(r.config.nvtx_exclude.matches("warmup", "warmup", "warmup"));
  CHECK_FALSE(parse_config({{"CUTRIAGE_NVTX_INCLUDE", "regex:("}}).ok());
  CHECK_FALSE(parse_config({{"CUTRIAGE_TRACE_FLUSH_MS", "60001"}}).ok());
  CHECK(parse_config({{"CUTRIAGE_TRACE_FLUSH_MS", "0"}}).ok());
}

TEST_CASE("config: the launch gate is off unless asked for and then needs the flush thread", "[config]") {
  const ConfigResult ao = parse_config({{"CUTRIAGE_MODE", "always-on"}});
  REQUIRE(ao.ok());
  CHECK_FALSE(ao.config.launch_gate);
  const ConfigResult on = parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_LAUNCH_GATE", "1"}});
  REQUIRE(on.ok());
  CHECK(on.config.launch_gate);
  // Left at its default, a run without the flush thread just has no gate; asked for, it is an error.
  CHECK(parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_FLUSH_MS", "0"}}).ok());
  const ConfigResult asked = parse_config(
      {{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_FLUSH_MS", "0"}, {"CUTRIAGE_LAUNCH_GATE", "1"}});
  CHECK_FALSE(asked.ok());
  CHECK_FALSE(asked.config.enabled);
  REQUIRE(errors(asked).size() == 1);
  CHECK(errors(asked)[0].variable == "CUTRIAGE_LAUNCH_GATE");
  CHECK(errors(asked)[0].message.find("CUTRIAGE_TRACE_FLUSH_MS=0") != std::string::npos);
  const ConfigResult bad = parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_LAUNCH_GATE", "sometimes"}});
  CHECK_FALSE(bad.ok());
  REQUIRE(errors(bad).size() == 1);
  CHECK(errors(bad)[0].variable == "CUTRIAGE_LAUNCH_GATE");
}

TEST_CASE("config: the trace duty is a percentage, and below 100% needs the trace and its flush thread", "[config]") {
  const ConfigResult r = parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_DUTY", "25%"},
                                       {"CUTRIAGE_TRACE_PERIOD", "30"}});
  REQUIRE(r.ok());
  CHECK(r.config.trace_duty == 0.25);
  CHECK(r.config.trace_period_s == 30);
  // Defaults: deep mode traces throughout; always-on a quarter of the time, unless the trace or its
  // flush thread is off (then 100%, with no error: the user did not ask for a duty).
  CHECK(parse_config({}).config.trace_duty == 1.0);
  const ConfigResult ao = parse_config({{"CUTRIAGE_MODE", "always-on"}});
  REQUIRE(ao.ok());
  CHECK(ao.config.trace_duty == cutriage::agent::kAlwaysOnTraceDuty);
  CHECK(cutriage::agent::kAlwaysOnTraceDuty == 0.25);
  for (const auto& off : std::vector<std::pair<std::string, std::string>>{{"CUTRIAGE_TRACE_FLUSH_MS", "0"},
                                                                        {"CUTRIAGE_TRACE", "0"}}) {
    INFO(off.first);
    std::vector<std::pair<std::string, std::string>> env = {{"CUTRIAGE_MODE", "always-on"}, off};
    if (off.first == "CUTRIAGE_TRACE") env.emplace_back("CUTRIAGE_SELECT", "none");
    const ConfigResult r_off = parse_config(env);
    CHECK(r_off.ok());
    CHECK(r_off.config.trace_duty == 1.0);
  }
  const ConfigResult full = parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_DUTY", "100%"}});
  REQUIRE(full.ok());
  CHECK(full.config.trace_duty == 1.0);
  for (const char* bad : {"0%", "101%", "-5%", "half"}) {
    INFO(bad);
    const ConfigResult b = parse_config({{"CUTRIAGE_TRACE_DUTY", bad}});
    CHECK_FALSE(b.ok());
    CHECK_FALSE(b.config.enabled);
    REQUIRE(errors(b).size() == 1);
    CHECK(errors(b)[0].variable == "CUTRIAGE_TRACE_DUTY");
    CHECK(errors(b)[0].message.find("a percentage above 0 and at most 100") != std::string::npos);
  }
  CHECK_FALSE(parse_config({{"CUTRIAGE_TRACE_PERIOD", "0"}}).ok());
  // Below 100% in always-on: the flush thread switches the trace, so both must be on.
  const ConfigResult no_flush = parse_config(
      {{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_DUTY", "50%"}, {"CUTRIAGE_TRACE_FLUSH_MS", "0"}});
  CHECK_FALSE(no_flush.ok());
  REQUIRE(errors(no_flush).size() == 1);
  CHECK(errors(no_flush)[0].variable == "CUTRIAGE_TRACE_DUTY");
  CHECK(errors(no_flush)[0].message.find("CUTRIAGE_TRACE_FLUSH_MS=0") != std::string::npos);
  const ConfigResult no_trace = parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_DUTY", "50%"},
                                              {"CUTRIAGE_TRACE", "0"}, {"CUTRIAGE_SELECT", "none"}});
  CHECK_FALSE(no_trace.ok());
  REQUIRE(errors(no_trace).size() == 1);
  CHECK(errors(no_trace)[0].message.find("CUTRIAGE_TRACE=0") != std::string::npos);
  // 100% with either is fine.
  CHECK(parse_config({{"CUTRIAGE_MODE", "always-on"}, {"CUTRIAGE_TRACE_DUTY", "100%"},
                      {"CUTRIAGE_TRACE_FLUSH_MS", "0"}}).ok());
}

TEST_CASE("config: CUTRIAGE_REPLAY is kernel or application, and application is deep mode's", "[config]") {
  using cutriage::agent::Replay;
  CHECK(parse_config({}).config.replay == Replay::kKernel);
  const ConfigResult app = parse_config({{"CUTRIAGE_REPLAY", " Application "}});
  REQUIRE(app.ok());
  CHECK(app.config.replay == Replay::kApplication);
  CHECK(app.config.mode == cutriage::agent::AgentMode::kDeep);
  CHECK(parse_config({{"CUTRIAGE_REPLAY", "kernel"}, {"CUTRIAGE_MODE", "always-on"}}).ok());
  for (const char* bad : {"app", "range", "none", "kernel,application"}) {
    INFO(bad);
    const ConfigResult b = parse_config({{"CUTRIAGE_REPLAY", bad}});
    CHECK_FALSE(b.config.enabled);
    REQUIRE(errors(b).size() == 1);
    CHECK(errors(b)[0].variable == "CUTRIAGE_REPLAY");
    CHECK(errors(b)[0].message == "CUTRIAGE_REPLAY=\"" + std::string(bad) + "\": expected kernel or application");
  }
  // Always-on never replays already: one error naming both variables, and the agent stays off.
  const ConfigResult both = parse_config({{"CUTRIAGE_REPLAY", "application"}, {"CUTRIAGE_MODE", "always-on"}});
  CHECK_FALSE(both.ok());
  CHECK_FALSE(both.config.enabled);
  REQUIRE(errors(both).size() == 1);
  CHECK(errors(both)[0].variable == "CUTRIAGE_REPLAY");
  CHECK(errors(both)[0].message.find("CUTRIAGE_MODE=always-on never replays") != std::string::npos);
  CHECK(errors(both)[0].message.find("expected CUTRIAGE_REPLAY=kernel") != std::string::npos);
}

TEST_CASE("config: cutriage_init's configuration string", "[config]") {
  std::string error;
  auto e = cutriage::agent::parse_config_string(" CUTRIAGE_SELECT=top:3 ;\nCUTRIAGE_SUMMARY=0;;  ", &error);
  REQUIRE(e);
  REQUIRE(e->size() == 2);
  CHECK((*e)[0] == std::make_pair(std::string("CUTRIAGE_SELECT"), std::string("top:3")));
  CHECK((*e)[1] == std::make_pair(std::string("CUTRIAGE_SUMMARY"), std::string("0")));
  CHECK(cutriage::agent::parse_config_string("", &error)->empty());
  CHECK_FALSE(cutriage::agent::parse_config_string("CUTRIAGE_SELECT", &error));
  CHECK(error.find("no '='") != std::string::npos);
  CHECK_FALSE(cutriage::agent::parse_config_string("SELECT=top:3", &error));
  CHECK(error.find("CUTRIAGE_*") != std::string::npos);
  CHECK_FALSE(cutriage::agent::parse_config_string("CUTRIAGE_=1", &error));
  // The string wins over the environment; the rest of the environment stays.
  const auto merged = cutriage::agent::with_overrides({{"CUTRIAGE_SELECT", "all"}, {"CUTRIAGE_TRACE", "1"}, {"HOME", "/root"}},
                                     *cutriage::agent::parse_config_string("CUTRIAGE_SELECT=top:2", &error));
  const cutriage::agent::ConfigResult r = cutriage::agent::parse_config(merged);
  REQUIRE(r.ok());
  CHECK(r.config.select == cutriage::agent::SelectMode::kTop);
  CHECK(r.config.select_top == 2);
  CHECK(merged.size() == 3);
}

TEST_CASE("config: always-on options reject bad values, naming the variable and what it accepts", "[config]") {
  struct Bad {
    const char* env;
    const char* value;
    const char* accepts;
  };
  for (const Bad& b : {Bad{"CUTRIAGE_MODE", "production", "deep or always-on"},
                       Bad{"CUTRIAGE_BUDGET", "0%", "a percentage above 0 and at most 50"},
                       Bad{"CUTRIAGE_BUDGET", "60%", "a percentage above 0 and at most 50"},
                       Bad{"CUTRIAGE_BUDGET", "-1", "a percentage above 0 and at most 50"},
                       Bad{"CUTRIAGE_BUDGET", "1e-3", "a percentage above 0 and at most 50"},
                       Bad{"CUTRIAGE_BUDGET_RATE", "0", "a number above 0 and at most 1000"},
                       Bad{"CUTRIAGE_CONTROL_SIGNAL", "term", "off, usr1 or usr2"},
                       Bad{"CUTRIAGE_DEEP_SECONDS", "0", "an integer from 1 to 3600"},
                       Bad{"CUTRIAGE_DEEP_TARGET", "top:0", "top:<N>"},
                       Bad{"CUTRIAGE_DEEP_TARGET", "regex:(", "top:<N>"}}) {
    INFO(b.env << "=" << b.value);
    const ConfigResult r = parse_config({{b.env, b.value}});
    REQUIRE(errors(r).size() == 1);
    CHECK_FALSE(r.config.enabled);
    CHECK(contains(errors(r)[0].message, b.env));
    CHECK(contains(errors(r)[0].message, b.accepts));
  }
  const ConfigResult ok = parse_config({{"CUTRIAGE_BUDGET", " 0.25% "}, {"CUTRIAGE_MODE", "Always-On"}});
  REQUIRE(ok.ok());
  CHECK(std::abs(ok.config.budget_fraction - 0.0025) < 1e-12);
  CHECK(ok.config.mode == cutriage::agent::AgentMode::kAlwaysOn);
}

TEST_CASE("config: a deep-capture target is parsed the same wherever it comes from", "[config]") {
  std::string error;
  std::optional<cutriage::agent::DeepTarget> t =
      cutriage::agent::parse_deep_target(" Top:3 ", cutriage::agent::NameBase::kFunction, &error);
  REQUIRE(t.has_value());
  CHECK(t->top == 3);  // any case, as the configuration check accepts it
  t = cutriage::agent::parse_deep_target("regex:gemm", cutriage::agent::NameBase::kFunction, &error);
  REQUIRE(t.has_value());
  CHECK(t->top == 0);
  CHECK(t->filter.matches("", "", "my_gemm_kernel"));
  CHECK_FALSE(t->filter.matches("", "", "reduce"));
  CHECK_FALSE(cutriage::agent::parse_deep_target("top:1001", cutriage::agent::NameBase::kFunction, &error));
  CHECK(error.find("1 to 1000") != std::string::npos);
  CHECK(cutriage::agent::check_deep_target("top:1001") == error);
}

TEST_CASE("config: CUTRIAGE_STEP_STAGES takes 0 or a step's most launches, and names its accepted values",
          "[config]") {
  CHECK(parse_config({}).config.step_launches == 0);  // off by default
  CHECK(parse_config({{"CUTRIAGE_STEP_STAGES", "0"}}).config.step_launches == 0);
  CHECK(parse_config({{"CUTRIAGE_STEP_STAGES", "2"}}).config.step_launches == 2);
  CHECK(parse_config({{"CUTRIAGE_STEP_STAGES", "512"}}).config.step_launches == 512);
  for (const char* bad : {"1", "513", "yes", "-4"}) {
    INFO(bad);
    const ConfigResult r = parse_config({{"CUTRIAGE_STEP_STAGES", bad}});
    CHECK_FALSE(r.ok());
    REQUIRE(errors(r).size() == 1);
    CHECK(contains(errors(r)[0].message, "CUTRIAGE_STEP_STAGES"));
    CHECK(contains(errors(r)[0].message, "0 (off) or an integer from 2 to 512"));
  }
}

TEST_CASE("config: CUTRIAGE_WARMUP is on by default and takes the boolean spellings", "[config]") {
  CHECK(parse_config({}).config.warmup);
  CHECK_FALSE(parse_config({{"CUTRIAGE_WARMUP", "0"}}).config.warmup);
  CHECK(parse_config({{"CUTRIAGE_WARMUP", "1"}}).config.warmup);
  const ConfigResult r = parse_config({{"CUTRIAGE_WARMUP", "later"}});
  CHECK_FALSE(r.ok());
  REQUIRE(errors(r).size() == 1);
  CHECK(contains(errors(r)[0].message, "CUTRIAGE_WARMUP"));
  CHECK(contains(errors(r)[0].message, "1, 0, on, off, true, false, yes or no"));
}

}  // namespace test_config
