// The command line parser of `cutriage` (tools/src/cli.h, the table of tools/src/commands.h): what
// each command line parses into, help for every command, --version, "did you mean", the flag named
// as typed in errors, ncu's short forms on `run`.
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "cli.h"
#include "commands.h"
#include "run.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_cli_parser {

namespace {

using cutriage::tools::RunOptions;
namespace cli = cutriage::tools::cli;
namespace commands = cutriage::tools::commands;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
  bool ran = false;
};

// The real table, with the command under test replaced by one that records its options.
Outcome parse_with(const cli::Command& command, const std::vector<std::string>& args) {
  cli::Program p = commands::program();
  for (cli::Command& c : p.commands) {
    if (c.name == command.name) c = command;
  }
  std::ostringstream out;
  std::ostringstream err;
  Outcome o;
  o.code = cli::run(p, args, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

Outcome run_real(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  cli::Parsed parsed = cli::parse(commands::program(), args, out, err);
  Outcome o;
  o.code = parsed.exit_code;
  o.ran = static_cast<bool>(parsed.run);
  o.out = out.str();
  o.err = err.str();
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Help text with its wrapping undone (a line break and the indent after it read as one space).
std::string unwrapped(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("cli: --flag=value and --flag value parse the same", "[cli]") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"report", "f.pb", "--top=3", "--format=csv", "--rows=families", "-v"},
        std::vector<std::string>{"report", "--top", "3", "--format", "csv", "f.pb", "--rows", "families", "--verbose"}}) {
    commands::ReportOptions seen;
    const Outcome o = parse_with(commands::report_command([&](const commands::ReportOptions& r) {
                                   seen = r;
                                   return 0;
                                 }),
                                 args);
    INFO(o.err);
    REQUIRE(o.code == 0);
    CHECK(seen.files == std::vector<std::string>{"f.pb"});
    CHECK(seen.top == 3);
    CHECK(seen.format == "csv");
    CHECK(seen.rows == "families");
    CHECK(seen.verbose);
  }
}

TEST_CASE("cli: triage takes several CSVs after one --ncu-csv, -o and its long form", "[cli]") {
  commands::TriageOptions seen;
  auto capture = commands::triage_command([&](const commands::TriageOptions& t) {
    seen = t;
    return 0;
  });
  Outcome o = parse_with(capture, {"triage", "--ncu-csv", "a.csv", "b.csv", "-o", "out.pb", "--clock-control=none"});
  REQUIRE(o.code == 0);
  CHECK(seen.csv_paths == std::vector<std::string>{"a.csv", "b.csv"});
  CHECK(seen.output == "out.pb");
  CHECK(seen.clock_control == "none");
  o = parse_with(capture, {"triage", "--ncu-csv=a.csv", "--ncu-csv", "c.csv", "--output=x.pb", "--report"});
  REQUIRE(o.code == 0);
  CHECK(seen.csv_paths == std::vector<std::string>{"a.csv", "c.csv"});
  CHECK(seen.output == "x.pb");
  CHECK(seen.report);
  // "-" is a value (stdout), not an option.
  commands::TraceOptions trace;
  o = parse_with(commands::trace_command([&](const commands::TraceOptions& t) {
                   trace = t;
                   return 0;
                 }),
                 {"trace", "f.pb", "-o", "-"});
  REQUIRE(o.code == 0);
  CHECK(trace.output == "-");
  // Several files (segments or processes, multi_file.h), -o anywhere.
  o = parse_with(commands::trace_command([&](const commands::TraceOptions& t) {
                   trace = t;
                   return 0;
                 }),
                 {"trace", "a.pb", "-o", "job.json", "b.pb"});
  REQUIRE(o.code == 0);
  CHECK(trace.files == std::vector<std::string>{"a.pb", "b.pb"});
  CHECK(trace.output == "job.json");
}

TEST_CASE("cli: misspelt flags and commands get a suggestion and exit code 1", "[cli]") {
  Outcome o = run_real({"report", "f.pb", "--topp", "3"});
  CHECK(o.code == 1);
  CHECK_FALSE(o.ran);
  CHECK(contains(o.err, "cutriage report: unknown option '--topp' (did you mean --top?)"));
  o = run_real({"report", "f.pb", "--verbos"});
  CHECK(contains(o.err, "(did you mean --verbose?)"));
  o = run_real({"report", "f.pb", "--form=csv"});  // an abbreviation, given with its value
  CHECK(contains(o.err, "unknown option '--form' (did you mean --format?)"));
  o = run_real({"reprot", "f.pb"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "unknown command 'reprot' (did you mean report?)"));
  o = run_real({"frobnicate"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "unknown command 'frobnicate'"));
  CHECK_FALSE(contains(o.err, "did you mean"));  // nothing is close
  o = run_real({"--verison"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "did you mean --version?"));
  o = run_real({"run", "--lunch-count", "3", "--", "app"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "unknown option '--lunch-count' (did you mean --launch-count?)"));
  o = run_real({"json", "a.pb", "b.pb"});  // json reads one file (trace and pprof take several)
  CHECK(o.code == 1);
  CHECK(contains(o.err, "unexpected argument 'b.pb'"));
}

TEST_CASE("cli: errors name the flag as typed", "[cli]") {
  Outcome o = run_real({"report", "f.pb", "--top", "many"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "cutriage report: --top needs a whole number"));
  CHECK(contains(o.err, "not 'many'"));
  o = run_real({"trace", "f.pb", "-o"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "cutriage trace: -o needs a value (OUT.json)"));
  o = run_real({"trace", "f.pb", "--output"});
  CHECK(contains(o.err, "cutriage trace: --output needs a value (OUT.json)"));
  o = run_real({"report", "f.pb", "--format", "xml"});
  CHECK(contains(o.err, "--format accepts text, json or csv, not 'xml'"));
  o = run_real({"report"});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "FILE.pb is required"));
  o = run_real({"triage", "-o", "x.pb"});
  CHECK(contains(o.err, "--ncu-csv FILE... is required"));
  o = run_real({"pprof", "f.pb", "--kernel="});  // "=" with nothing after it: no value
  CHECK(o.code == 1);
  CHECK(contains(o.err, "--kernel needs a value"));
  o = run_real({"pprof", "f.pb", "--kernel", ""});
  CHECK(o.code == 1);
  CHECK(contains(o.err, "--kernel needs a value that is not empty"));
}

TEST_CASE("cli: run takes ncu's short forms and maps every flag to the agent's variable", "[cli][run]") {
  RunOptions seen;
  auto capture = cutriage::tools::run_command_entry([&](const RunOptions& r) {
    seen = r;
    return 0;
  });
  Outcome o = parse_with(capture, {"run", "-k", "regex:gemm", "-c", "2", "-s=3", "-o",
                                   "out-%p.pb", "--select=all", "--quiet", "./app", "-c", "9", "--help"});
  INFO(o.err);
  REQUIRE(o.code == 0);
  std::vector<std::string> got;
  for (const RunOptions::Setting& s : seen.settings) got.push_back(s.env + "=" + s.value + " (" + s.flag + ")");
  CHECK(got == std::vector<std::string>{"CUTRIAGE_OUTPUT=out-%p.pb (-o)", "CUTRIAGE_KERNEL_NAME=regex:gemm (-k)",
                                        "CUTRIAGE_LAUNCH_SKIP=3 (-s)", "CUTRIAGE_LAUNCH_COUNT=2 (-c)",
                                        "CUTRIAGE_SELECT=all (--select)"});
  // Everything from the application's name on is its own, flags included.
  CHECK(seen.app == std::vector<std::string>{"./app", "-c", "9", "--help"});
  CHECK(seen.quiet);
  CHECK(seen.report);

  o = parse_with(capture, {"run", "--launch-count", "4", "--no-report", "--", "-dash-app", "x"});
  REQUIRE(o.code == 0);
  REQUIRE(seen.settings.size() == 1);
  CHECK(seen.settings[0].flag == "--launch-count");
  CHECK(seen.app == std::vector<std::string>{"-dash-app", "x"});
  CHECK_FALSE(seen.report);
  CHECK_FALSE(seen.quiet);
}

TEST_CASE("cli: the agent's messages name the flag that set a variable", "[cli][run]") {
  const std::vector<RunOptions::Setting> settings = {{"CUTRIAGE_LAUNCH_COUNT", "-c", "ten"},
                                                     {"CUTRIAGE_TRACE", "--trace", "0"}};
  CHECK(cutriage::tools::name_flags("CUTRIAGE_LAUNCH_COUNT=\"ten\": expected a non-negative integer", settings) ==
        "-c \"ten\": expected a non-negative integer");
  // CUTRIAGE_TRACE_DUTY is another variable; one from the environment keeps its name.
  CHECK(cutriage::tools::name_flags("CUTRIAGE_TRACE_DUTY below 100% needs CUTRIAGE_TRACE=1; CUTRIAGE_SELECT=top:5",
                                    settings) == "CUTRIAGE_TRACE_DUTY below 100% needs --trace 1; CUTRIAGE_SELECT=top:5");
}

TEST_CASE("cli: every command has help, through --help, -h and `help COMMAND`", "[cli][help]") {
  const cli::Program p = commands::program();
  std::set<std::string> names;
  for (const cli::Command& c : p.commands) {
    INFO(c.name);
    names.insert(c.name);
    const Outcome a = run_real({c.name, "--help"});
    const Outcome b = run_real({c.name, "-h"});
    const Outcome h = run_real({"help", c.name});
    CHECK(a.code == 0);
    CHECK_FALSE(a.ran);  // help never runs the command (`rules --help` printed the rules)
    CHECK(a.err.empty());
    CHECK(a.out.rfind("usage: cutriage " + c.name, 0) == 0);
    CHECK(b.out == a.out);
    CHECK(h.out == a.out);
    CHECK(contains(a.out, "  -h, --help"));
    // Aligned: every option row's text starts in one column, never against the names.
    size_t column = 0;
    std::istringstream lines(a.out);
    std::string line;
    bool in_options = false;
    while (std::getline(lines, line)) {
      if (line == "options:" || line == "arguments:") {
        in_options = true;
        continue;
      }
      if (line.empty()) in_options = false;
      if (!in_options || line.rfind("  -", 0) != 0) continue;
      const size_t gap = line.find("  ", 2);
      if (gap == std::string::npos) continue;  // names alone: the text is on the next line
      const size_t text = line.find_first_not_of(' ', gap);
      if (column == 0) column = text;
      CHECK(text == column);
    }
    CHECK(column > 0);
  }
  CHECK(names == std::set<std::string>{"run", "triage", "report", "diff", "json", "trace", "pprof", "merge", "rules", "metrics"});
  const Outcome m = run_real({"help"});
  CHECK(m.code == 0);
  for (const std::string& n : names) CHECK(contains(m.out, "\n  " + n + " "));
  CHECK(run_real({"--help"}).out == m.out);
  const Outcome none = run_real({});
  CHECK(none.code == 1);
  CHECK(none.err == m.out);
  CHECK(run_real({"help", "nope"}).code == 1);
  // Options that take a value show it; run's show the variable they set.
  CHECK(contains(run_real({"run", "--help"}).out, "  -c, --launch-count N"));
  CHECK(contains(unwrapped(run_real({"run", "--help"}).out), "(CUTRIAGE_LAUNCH_COUNT; default 0 (no limit))"));
  CHECK(contains(run_real({"metrics", "--help"}).out, "  --ncu "));
}

TEST_CASE("cli: --version prints the project's version", "[cli]") {
  const Outcome o = run_real({"--version"});
  CHECK(o.code == 0);
  CHECK(o.out == std::string("cutriage ") + CUTRIAGE_VERSION + "\n");
  CHECK(std::string(CUTRIAGE_VERSION).find('.') != std::string::npos);
}

TEST_CASE("cli: closest and wrap", "[cli]") {
  CHECK(cli::closest("--topp", {"--top", "--format"}) == "--top");
  CHECK(cli::closest("reprot", {"report", "rules"}) == "report");
  CHECK(cli::closest("--xyz", {"--top", "--format"}).empty());
  CHECK(cli::closest("-x", {"-o", "-v"}).empty());  // a single letter is no misspelling of another
  CHECK(cli::wrap("aaa bbb ccc", 7, 2) == "aaa bbb\n  ccc");
  CHECK(cli::wrap("one\n\ntwo", 80) == "one\n\ntwo");
}

TEST_CASE("cli: diff takes two files, or --before/--after lists, and --flag=value", "[cli]") {
  commands::DiffOptions seen;
  auto parse_diff = [&](const std::vector<std::string>& args) {
    seen = {};
    return parse_with(commands::diff_command([&](const commands::DiffOptions& d) {
                        seen = d;
                        return 0;
                      }),
                      args);
  };
  Outcome o = parse_diff({"diff", "a.pb", "b.pb", "--fail-if-slower=3", "--match=old=new", "--match", "x=y",
                          "--format=json", "--ledger", "l.jsonl", "--label=tile 128"});
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(seen.files == std::vector<std::string>{"a.pb", "b.pb"});
  CHECK(seen.fail_if_slower_pct == 3);
  CHECK(seen.matches == std::vector<std::string>{"old=new", "x=y"});
  CHECK(seen.format == "json");
  CHECK(seen.ledger == "l.jsonl");
  CHECK(seen.label == "tile 128");
  o = parse_diff({"diff", "--before", "a.pb", "b.pb", "--after", "c.pb", "d.pb", "--noise", "2.5"});
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(seen.files.empty());
  CHECK(seen.before == std::vector<std::string>{"a.pb", "b.pb"});
  CHECK(seen.after == std::vector<std::string>{"c.pb", "d.pb"});
  CHECK(seen.noise_pct == 2.5);
  CHECK(seen.fail_if_slower_pct < 0);
  // A negative percentage and an unknown format are usage errors naming the flag.
  o = parse_diff({"diff", "a.pb", "b.pb", "--noise=-1"});
  CHECK(o.code == 1);
  CHECK(o.err.find("--noise") != std::string::npos);
  o = parse_diff({"diff", "a.pb", "b.pb", "--format", "xml"});
  CHECK(o.code == 1);
  CHECK(o.err.find("--format") != std::string::npos);
}

}  // namespace test_cli_parser
