#include "cli.h"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <utility>

namespace cutriage::tools::cli {

namespace {

constexpr size_t kHelpWidth = 100;   // help is wrapped here, whatever the terminal: it is also docs
constexpr size_t kMaxNameColumn = 30;  // option names longer than this put their text below

bool is_flag_token(const std::string& a) { return a.size() > 1 && a[0] == '-' && a != "--"; }

// "--top=3" -> "--top"; "-ofile" -> "-o"; "-o" -> "-o".
std::string flag_name(const std::string& token) {
  if (token.rfind("--", 0) == 0) return token.substr(0, token.find('='));
  return token.substr(0, 2);
}

// Whether the token carries its value ("--top=3", "-ofile").
bool has_inline_value(const std::string& token) {
  if (token.rfind("--", 0) == 0) return token.find('=') != std::string::npos;
  return token.size() > 2;
}

bool takes_value(const CLI::Option* option) { return option->get_items_expected_max() > 0; }

std::vector<std::string> flag_names(const CLI::Option* option) {
  std::vector<std::string> names;
  for (const std::string& s : option->get_snames()) names.push_back("-" + s);
  for (const std::string& l : option->get_lnames()) names.push_back("--" + l);
  return names;
}

std::vector<std::string> all_flag_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (std::string& n : flag_names(o)) names.push_back(std::move(n));
  }
  return names;
}

// The options the user typed, by their spelling, up to where the options end ("--", or for a
// prefix command the application's name).
void note_spellings(CLI::App& app, const std::vector<std::string>& args, bool prefix, Spelling& spelling) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return;
    if (!is_flag_token(a)) {
      if (prefix) return;
      continue;
    }
    const std::string name = flag_name(a);
    CLI::Option* option = app.get_option_no_throw(name);
    if (option == nullptr) continue;
    spelling.note(option, name);
    if (takes_value(option) && !has_inline_value(a)) ++i;  // its value, whatever it looks like
  }
}

// "-c=5" as "-c5": CLI11 would take "=5" for the value of a short flag, and `-o=out.pb` would
// write a file named "=out.pb". Only up to where the options end, as note_spellings.
std::vector<std::string> short_equals_split(CLI::App& app, std::vector<std::string> args, bool prefix) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (!is_flag_token(a)) {
      if (prefix) break;
      continue;
    }
    const CLI::Option* option = app.get_option_no_throw(flag_name(a));
    if (option == nullptr || !takes_value(option)) continue;
    if (a.rfind("--", 0) != 0 && a.size() > 3 && a[2] == '=') a.erase(2, 1);
    if (!has_inline_value(a)) ++i;  // its value, whatever it looks like
  }
  return args;
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

void usage_hint(std::ostream& err, const Program& program, const Command* command) {
  if (command != nullptr) {
    err << "(`" << program.name << " " << command->name << " --help` lists its options)\n";
  } else {
    err << "(`" << program.name << " help` lists the commands)\n";
  }
}

int usage_error(std::ostream& err, const Program& program, const Command* command, const std::string& message) {
  err << program.name;
  if (command != nullptr) err << " " << command->name;
  err << ": " << message << "\n";
  usage_hint(err, program, command);
  return kUsage;
}

// The option a CLI11 message names first ("--top: ..."), and the rest of the message.
const CLI::Option* named_option(CLI::App& app, const std::string& message, std::string& rest) {
  const size_t colon = message.find(": ");
  if (colon == std::string::npos) return nullptr;
  const CLI::Option* option = app.get_option_no_throw(message.substr(0, colon));
  if (option != nullptr) rest = message.substr(colon + 2);
  return option;
}

// CLI11's errors in the tool's words, naming each flag as it was typed.
std::string describe(CLI::App& app, const Spelling& spelling, const CLI::ParseError& e) {
  std::string what = e.what();
  std::string rest;
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    if (const CLI::Option* o = named_option(app, what, rest)) {
      return spelling.of(o) + " needs a value (" + o->get_type_name() + ")";
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    const std::string name = what.substr(0, what.find(" is required"));
    if (const CLI::Option* o = app.get_option_no_throw(name)) {
      if (o->nonpositional()) return spelling.of(o) + " " + o->get_type_name() + " is required";
      return o->get_name() + " is required";
    }
  }
  if (const CLI::Option* o = named_option(app, what, rest)) {
    // The validators below word their messages to follow the flag: "--top needs ...".
    const bool ours = dynamic_cast<const CLI::ValidationError*>(&e) != nullptr;
    return spelling.of(o) + (ours ? " " : ": ") + rest;
  }
  return what;
}

// Checks what CLI11 left over: unknown options (with the closest known one) and, for commands
// that are no prefix command, arguments it has no place for. Empty when all is well.
std::string leftovers(CLI::App& app, const Command& command) {
  for (const std::string& a : app.remaining()) {
    if (a == "--") {
      if (command.prefix_command) return {};  // the application's command line follows
      continue;
    }
    if (is_flag_token(a)) {
      const std::string name = flag_name(a);
      std::string message = "unknown option " + in_quotes(name);
      const std::string near = closest(name, all_flag_names(app));
      if (!near.empty()) message += " (did you mean " + near + "?)";
      return message;
    }
    if (command.prefix_command) return {};  // the application's name
    return "unexpected argument " + in_quotes(a);
  }
  return {};
}

const Command* find_command(const Program& program, const std::string& name) {
  for (const Command& c : program.commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> command_names(const Program& program) {
  std::vector<std::string> names;
  names.reserve(program.commands.size());
  for (const Command& c : program.commands) names.push_back(c.name);
  names.emplace_back("help");
  return names;
}

int unknown_command(std::ostream& err, const Program& program, const std::string& name) {
  std::string message = "unknown command " + in_quotes(name);
  const std::string near = closest(name, command_names(program));
  if (!near.empty()) message += " (did you mean " + near + "?)";
  return usage_error(err, program, nullptr, message);
}

std::unique_ptr<CLI::App> make_app(const Program& program, const Command& command) {
  auto app = std::make_unique<CLI::App>(command.summary, program.name + " " + command.name);
  app->set_help_flag("-h,--help", "print this help and exit");
  app->allow_extras(true);  // leftovers() words the error, with "did you mean"
  if (command.prefix_command) app->prefix_command(true);
  return app;
}

// One row of a help table: the names in the left column, the text wrapped to the right of it.
void put_row(std::ostringstream& out, const std::string& left, const std::string& text, size_t column) {
  out << left;
  if (text.empty()) {
    out << "\n";
    return;
  }
  if (left.size() + 2 > column) {
    out << "\n" << std::string(column, ' ');
  } else {
    out << std::string(column - left.size(), ' ');
  }
  out << wrap(text, kHelpWidth - column, column) << "\n";
}

std::string left_column(const CLI::Option* o) {
  std::string left = "  ";
  if (!o->nonpositional()) return left + o->get_name();
  const std::vector<std::string> names = flag_names(o);
  for (size_t i = 0; i < names.size(); ++i) left += (i ? ", " : "") + names[i];
  if (takes_value(o)) left += " " + o->get_type_name();
  return left;
}

}  // namespace

void Spelling::note(const CLI::Option* option, std::string typed) { typed_[option] = std::move(typed); }

std::string Spelling::of(const CLI::Option* option) const {
  auto it = typed_.find(option);
  return it != typed_.end() ? it->second : option->get_name();
}

std::string wrap(const std::string& text, size_t width, size_t indent) {
  std::string out;
  size_t start = 0;
  bool first_paragraph = true;
  while (start <= text.size()) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    std::string paragraph = text.substr(start, end - start);
    std::replace(paragraph.begin(), paragraph.end(), '\n', ' ');
    if (!first_paragraph) out += "\n\n" + std::string(indent, ' ');
    first_paragraph = false;
    size_t used = 0;
    std::istringstream words(paragraph);
    std::string word;
    while (words >> word) {
      if (used > 0 && used + 1 + word.size() > width) {
        out += "\n" + std::string(indent, ' ');
        used = 0;
      } else if (used > 0) {
        out += ' ';
        ++used;
      }
      out += word;
      used += word.size();
    }
    start = end + 2;
  }
  return out;
}

std::string closest(const std::string& typed, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
  // neighbours ("reprot") cost one each.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.size()][b.size()];
  };
  constexpr size_t kMaxCompared = 64;  // no misspelling is this long; bounds the cost
  if (typed.size() > kMaxCompared) return {};
  if (typed.size() <= 2) return {};  // "-x": one letter is no misspelling of another
  // A unique abbreviation ("--verb" for --verbose) of at least three letters.
  const size_t letters_at = std::min(typed.find_first_not_of('-'), typed.size());
  if (typed.size() - letters_at >= 3) {
    std::vector<std::string> extended;
    for (const std::string& c : candidates) {
      if (c.size() > typed.size() && c.compare(0, typed.size(), typed) == 0) extended.push_back(c);
    }
    if (extended.size() == 1) return extended.front();
  }
  std::string best;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const size_t d = distance(typed, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // Close: two edits, more for long names (a third of the letters); never a one-letter flag
  // for anything but a one-letter typo.
  const size_t allowed = std::max<size_t>(2, (typed.size() - letters_at) / 3);
  if (best.empty() || best_distance == 0 || best_distance > allowed) return {};
  if (best.size() <= 2) return {};
  return best;
}

CLI::Validator whole_number(unsigned long long min, unsigned long long max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        const std::string range = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
        if (value.empty() || value.size() > 20 || value.find_first_not_of("0123456789") != std::string::npos) {
          return "needs " + range + ", not " + in_quotes(value);
        }
        unsigned long long n = 0;
        try {
          n = std::stoull(value);
        } catch (...) {
          return "needs " + range + ", not " + in_quotes(value);
        }
        if (n < min || n > max) return "needs " + range + ", not " + value;
        return {};
      },
      "", "whole_number");
}

CLI::Validator percentage() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        std::string want = "needs a percentage (a number from 0), not " + in_quotes(value);
        if (value.empty() || value.size() > 32 || value.find_first_not_of("0123456789.") != std::string::npos) {
          return want;
        }
        try {
          size_t used = 0;
          const double v = std::stod(value, &used);
          if (used != value.size() || !(v >= 0) || v > 1e9) return want;
        } catch (...) {
          return want;
        }
        return {};
      },
      "", "percentage");
}

CLI::Validator one_of(std::vector<std::string> accepted, std::vector<std::string> aliases) {
  return CLI::Validator(
      [accepted = std::move(accepted), aliases = std::move(aliases)](std::string& value) -> std::string {
        if (std::find(accepted.begin(), accepted.end(), value) != accepted.end()) return {};
        if (std::find(aliases.begin(), aliases.end(), value) != aliases.end()) return {};
        std::string list;
        for (size_t i = 0; i < accepted.size(); ++i) {
          if (i > 0) list += i + 1 == accepted.size() ? " or " : ", ";
          list += accepted[i];
        }
        return "accepts " + list + ", not " + in_quotes(value);
      },
      "", "one_of");
}

CLI::Validator not_empty() {
  return CLI::Validator([](std::string& value) -> std::string { return value.empty() ? "needs a value that is not empty" : ""; },
                        "", "not_empty");
}

std::string main_help(const Program& program) {
  std::ostringstream out;
  out << "usage: " << program.name << " <command> [options]\n";
  if (!program.summary.empty()) out << "\n" << wrap(program.summary, kHelpWidth) << "\n";
  out << "\ncommands:\n";
  size_t column = 0;
  std::vector<std::pair<std::string, std::string>> rows;
  for (const Command& c : program.commands) {
    rows.emplace_back("  " + c.name + " " + c.usage, c.summary);
  }
  rows.emplace_back("  help [COMMAND]", "this help, or a command's (also `" + program.name + " COMMAND --help`)");
  for (const auto& [left, text] : rows) column = std::max(column, left.size() + 2);
  column = std::min(column, kMaxNameColumn + 14);  // usage lines are longer than flag names
  for (const auto& [left, text] : rows) put_row(out, left, text, column);
  out << "\noptions:\n";
  put_row(out, "  -h, --help", "print this help and exit", column);
  put_row(out, "  --version", "print the version (" + program.name + " " + program.version + ") and exit", column);
  if (!program.epilog.empty()) out << "\n" << wrap(program.epilog, kHelpWidth) << "\n";
  return out.str();
}

std::string command_help(const Program& program, const Command& command) {
  std::unique_ptr<CLI::App> app = make_app(program, command);
  const Spelling spelling;
  (void)command.bind(*app, spelling);  // declares the options; nothing runs
  std::ostringstream out;
  out << "usage: " << program.name << " " << command.name << (command.usage.empty() ? "" : " ") << command.usage
      << "\n";
  if (!command.description.empty()) out << "\n" << wrap(command.description, kHelpWidth) << "\n";
  std::vector<const CLI::Option*> positionals;
  std::vector<const CLI::Option*> options;
  const CLI::Option* help = app->get_help_ptr();
  for (const CLI::Option* o : app->get_options()) {
    if (o == help) continue;
    (o->nonpositional() ? options : positionals).push_back(o);
  }
  options.push_back(help);  // last: the command's own options first
  size_t column = 0;
  for (const CLI::Option* o : positionals) column = std::max(column, left_column(o).size() + 2);
  for (const CLI::Option* o : options) column = std::max(column, left_column(o).size() + 2);
  column = std::min(column, kMaxNameColumn + 2);
  if (!positionals.empty()) {
    out << "\narguments:\n";
    for (const CLI::Option* o : positionals) put_row(out, left_column(o), o->get_description(), column);
  }
  out << "\noptions:\n";
  for (const CLI::Option* o : options) put_row(out, left_column(o), o->get_description(), column);
  if (!command.epilog.empty()) out << "\n" << wrap(command.epilog, kHelpWidth) << "\n";
  return out.str();
}

Parsed parse(const Program& program, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Parsed parsed;
  if (args.empty()) {
    err << main_help(program);
    parsed.exit_code = kUsage;
    return parsed;
  }
  const std::string& first = args.front();
  if (first == "-h" || first == "--help") {
    out << main_help(program);
    return parsed;
  }
  if (first == "--version") {
    out << program.name << " " << program.version << "\n";
    return parsed;
  }
  if (first == "help") {
    if (args.size() == 1) {
      out << main_help(program);
      return parsed;
    }
    const Command* c = find_command(program, args[1]);
    if (c == nullptr) {
      parsed.exit_code = unknown_command(err, program, args[1]);
    } else if (args.size() > 2) {
      parsed.exit_code = usage_error(err, program, nullptr, "help takes one command, not " + in_quotes(args[2]));
    } else {
      out << command_help(program, *c);
    }
    return parsed;
  }
  if (is_flag_token(first)) {
    std::string message = "unknown option " + in_quotes(flag_name(first));
    const std::string near = closest(flag_name(first), {"--help", "--version"});
    if (!near.empty()) message += " (did you mean " + near + "?)";
    parsed.exit_code = usage_error(err, program, nullptr, message + "; options follow the command");
    return parsed;
  }
  const Command* command = find_command(program, first);
  if (command == nullptr) {
    parsed.exit_code = unknown_command(err, program, first);
    return parsed;
  }
  parsed.command = command;
  parsed.app = make_app(program, *command);
  parsed.spelling = std::make_shared<Spelling>();
  CLI::App& app = *parsed.app;
  Runner runner = command->bind(app, *parsed.spelling);
  // CLI11 takes the arguments last first.
  const std::vector<std::string> rest =
      short_equals_split(app, std::vector<std::string>(args.begin() + 1, args.end()), command->prefix_command);
  note_spellings(app, rest, command->prefix_command, *parsed.spelling);
  std::vector<std::string> reversed(rest.rbegin(), rest.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << command_help(program, *command);
    return parsed;
  } catch (const CLI::CallForAllHelp&) {
    out << command_help(program, *command);
    return parsed;
  } catch (const CLI::ParseError& e) {
    // An unknown flag is the likelier mistake to report than what it made CLI11 miss.
    std::string message = leftovers(app, *command);
    if (message.empty()) message = describe(app, *parsed.spelling, e);
    parsed.exit_code = usage_error(err, program, command, message);
    return parsed;
  }
  if (std::string message = leftovers(app, *command); !message.empty()) {
    parsed.exit_code = usage_error(err, program, command, message);
    return parsed;
  }
  parsed.run = std::move(runner);
  return parsed;
}

int run(const Program& program, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Parsed parsed = parse(program, args, out, err);
  return parsed.run ? parsed.run() : parsed.exit_code;
}

}  // namespace cutriage::tools::cli
