// The command line of the `cutriage` tool: one parser (CLI11) for every command, from a table of
// commands. Each command is an options struct, a function that declares its flags on a CLI::App
// bound to that struct, and a cmd_xxx(const XxxOptions&) that runs it (tools/src/commands.h).
// This layer adds what CLI11 leaves to its user: `cutriage help [COMMAND]`, `--version`, help
// text in aligned columns, "did you mean" for misspelt commands and flags, error messages that
// name the flag as it was typed, and the exit code of a usage error (1).
//
// CLI11 is the tool's alone: .ci/deps.py fails a <CLI/...> include anywhere but tools/.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

// CLI11 2.1 is header-only; the project's warnings (-Wshadow, -Wconversion, ... with -Werror in
// CI) are its own code's business, so they are silenced for these headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wnull-dereference"
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#pragma GCC diagnostic ignored "-Wcast-align"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wpedantic"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop

namespace cutriage::tools::cli {

inline constexpr int kUsage = 1;  // a usage error, as main.cpp documents

// The spelling of each flag as the user typed it ("-c" rather than "--launch-count"), so that an
// error names what is on their command line.
class Spelling {
 public:
  void note(const CLI::Option* option, std::string typed);
  // The typed spelling, else the option's own name ("--output", or a positional's "FILE.pb").
  [[nodiscard]] std::string of(const CLI::Option* option) const;

 private:
  std::map<const CLI::Option*, std::string> typed_;
};

using Runner = std::function<int()>;

struct Command {
  std::string name;         // "report"
  std::string summary;      // one line in the command list of `cutriage help`
  std::string usage;        // after "usage: cutriage NAME ": "FILE.pb [options]"
  std::string description;  // paragraphs ("\n\n" between them), wrapped when printed
  std::string epilog;       // after the options: exit codes (wrapped like the description)
  // `run`: the first argument that is no option of the command, and every argument after it, is
  // the application's command line (they come back as the CLI::App's remaining()).
  bool prefix_command = false;
  // The exit status is not the tool's own (`run` returns the application's): main.cpp leaves it
  // as it is, even when stdout failed.
  bool foreign_status = false;
  // Declares the command's options and positionals on `app`, bound to an options object it
  // owns, and returns what runs the command once `app` has parsed (make_command builds it).
  std::function<Runner(CLI::App& app, const Spelling& spelling)> bind;
};

// A Command from an options struct: `bind` declares the flags on the app, bound to the struct's
// fields; `finish`, when given, completes the struct after parsing from what only the parser
// knows (the remaining arguments, the spellings); `run` is cmd_xxx.
template <typename Options>
Command make_command(Command text, void (*bind)(CLI::App&, Options&),
                     std::function<int(const Options&)> run,
                     void (*finish)(const CLI::App&, const Spelling&, Options&) = nullptr) {
  text.bind = [bind, run = std::move(run), finish](CLI::App& app, const Spelling& spelling) -> Runner {
    auto options = std::make_shared<Options>();
    bind(app, *options);
    return [options, run, finish, &app, &spelling]() {
      if (finish != nullptr) finish(app, spelling, *options);
      return run(*options);
    };
  };
  return text;
}

struct Program {
  std::string name = "cutriage";
  std::string version;
  std::string summary;     // first paragraph of the main help
  std::string epilog;      // after the command list: exit codes
  std::vector<Command> commands;
};

// What the command line asks for.
struct Parsed {
  int exit_code = 0;     // when `run` is empty: help or version printed (0), a usage error (1)
  Runner run;            // the command, ready to run; empty when there is nothing to run
  const Command* command = nullptr;
  // Kept alive for `run`, which reads what they parsed.
  std::shared_ptr<CLI::App> app;
  std::shared_ptr<Spelling> spelling;
};

// `args` without the program name. Help and version go to `out`, errors (one line, then a hint
// where to look) to `err`.
Parsed parse(const Program& program, const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// parse(), then the command: its exit code.
int run(const Program& program, const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `cutriage --help`, `cutriage help`: the commands with their usage and summary, the epilog.
std::string main_help(const Program& program);
// `cutriage NAME --help`, `cutriage help NAME`.
std::string command_help(const Program& program, const Command& command);

// The candidate closest to `typed` (edit distance, a swap of two neighbours counting one), when
// it is close enough to be a misspelling of it; "" otherwise.
std::string closest(const std::string& typed, const std::vector<std::string>& candidates);

// `text` wrapped to `width` columns, every line after the first indented by `indent` spaces.
// Paragraphs are separated by "\n\n"; a single "\n" inside one is a space.
std::string wrap(const std::string& text, size_t width, size_t indent = 0);

// Validators for option values, with messages that read after the flag ("--top needs ...").
// A whole number from `min` to `max`, digits only.
CLI::Validator whole_number(unsigned long long min, unsigned long long max);
// A percentage: a decimal number from 0 (digits and one '.', no sign or exponent).
CLI::Validator percentage();
// One of `accepted` (shown in the message), or one of `aliases` (accepted silently).
CLI::Validator one_of(std::vector<std::string> accepted, std::vector<std::string> aliases = {});
// Any value but the empty string.
CLI::Validator not_empty();

}  // namespace cutriage::tools::cli
