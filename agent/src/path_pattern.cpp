// Output path patterns (config.h): %p, %h, %n, %q{VAR} and %%, checked when the configuration is
// parsed and expanded when the output is opened, both through split_pattern.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "config_text.h"

namespace cutriage::agent {
namespace {

using config_text::kMaxShownValue;
using config_text::shown;

// ---------------------------------------------------------------------------------------------
// Output path patterns

struct PatternPart {
  enum class Kind : uint8_t { kLiteral, kPid, kHost, kSequence, kEnv };
  Kind kind = Kind::kLiteral;
  std::string text;  // the literal, or the variable's name for kEnv
};

bool is_env_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_env_name_char(char c) { return is_env_name_start(c) || (c >= '0' && c <= '9'); }

// Splits a pattern into parts; on a syntax error returns nullopt with *error set. The one place
// that knows the syntax, so the check at parse time and the expansion cannot disagree.
std::optional<std::vector<PatternPart>> split_pattern(std::string_view pattern, std::string* error) {
  std::vector<PatternPart> parts;
  auto literal = [&parts]() -> std::string& {
    if (parts.empty() || parts.back().kind != PatternPart::Kind::kLiteral) parts.push_back({});
    return parts.back().text;
  };
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%') {
      literal() += c;
      continue;
    }
    if (i + 1 == pattern.size()) {
      *error = "a lone % at the end (write %% for a literal %)";
      return std::nullopt;
    }
    const char e = pattern[++i];
    switch (e) {
      case '%': literal() += '%'; break;
      case 'p': parts.push_back({PatternPart::Kind::kPid, {}}); break;
      case 'h': parts.push_back({PatternPart::Kind::kHost, {}}); break;
      case 'n': parts.push_back({PatternPart::Kind::kSequence, {}}); break;
      case 'q': {
        if (i + 1 >= pattern.size() || pattern[i + 1] != '{') {
          *error = "%q must be followed by {VAR}";
          return std::nullopt;
        }
        const std::size_t open = i + 1;
        const std::size_t close = pattern.find('}', open);
        if (close == std::string_view::npos) {
          *error = "unterminated %q{ (missing })";
          return std::nullopt;
        }
        const std::string_view name = pattern.substr(open + 1, close - open - 1);
        if (name.empty() || !is_env_name_start(name.front()) ||
            !std::all_of(name.begin(), name.end(), is_env_name_char)) {
          *error = "%q{" + std::string(name.substr(0, kMaxShownValue)) +
                   "}: not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
          return std::nullopt;
        }
        parts.push_back({PatternPart::Kind::kEnv, std::string(name)});
        i = close;
        break;
      }
      default: {
        const auto u = static_cast<unsigned char>(e);
        *error = (u < 0x20U || u >= 0x7FU) ? std::string("unknown escape after %")
                                            : "unknown escape %" + std::string(1, e);
        return std::nullopt;
      }
    }
  }
  return parts;
}

}  // namespace

std::string check_path_pattern(std::string_view pattern) {
  try {
    std::string error;
    if (!split_pattern(pattern, &error)) return error;
    return {};
  } catch (...) {
    return "cannot check the path pattern (out of memory)";
  }
}

std::optional<PreparedPath> prepare_path_pattern(std::string_view pattern, const PathContext& ctx,
                                                 std::string* error) {
  std::string local_error;
  std::string& err = error != nullptr ? *error : local_error;
  try {
    std::optional<std::vector<PatternPart>> parts = split_pattern(pattern, &err);
    if (!parts) return std::nullopt;
    bool has_sequence = false;
    for (PatternPart& part : *parts) {
      switch (part.kind) {
        case PatternPart::Kind::kLiteral: break;
        case PatternPart::Kind::kPid: part.text = std::to_string(ctx.pid); break;
        case PatternPart::Kind::kHost: part.text = ctx.host; break;
        case PatternPart::Kind::kSequence: has_sequence = true; continue;
        case PatternPart::Kind::kEnv: {
          std::optional<std::string> value;
          if (ctx.getenv) value = ctx.getenv(part.text);
          if (!value) {
            err = "%q{" + part.text + "}: environment variable " + part.text + " is not set";
            return std::nullopt;
          }
          part.text = std::move(*value);
          break;
        }
      }
      part.kind = PatternPart::Kind::kLiteral;
    }
    PreparedPath out;
    out.has_sequence = has_sequence;
    out.build = [parts = std::move(*parts)](uint64_t n) {
      std::string path;
      const std::string number = std::to_string(n);
      for (const PatternPart& part : parts) path += part.kind == PatternPart::Kind::kSequence ? number : part.text;
      return path;
    };
    return out;
  } catch (...) {
    try {
      err = "cannot expand the path pattern";
    } catch (...) {
    }
    return std::nullopt;
  }
}

std::optional<std::string> expand_path_pattern(std::string_view pattern, const PathContext& ctx,
                                               std::string* error) {
  std::string local_error;
  std::string& err = error != nullptr ? *error : local_error;
  std::optional<PreparedPath> prepared = prepare_path_pattern(pattern, ctx, &err);
  if (!prepared) return std::nullopt;
  try {
    std::string path;
    if (!prepared->has_sequence || !ctx.exists) {
      path = prepared->build(1);
    } else {
      uint64_t n = 1;
      for (; n <= kMaxPathSequence; ++n) {
        path = prepared->build(n);
        if (!ctx.exists(path)) break;
      }
      if (n > kMaxPathSequence) {
        err = "every %n from 1 to " + std::to_string(kMaxPathSequence) + " is taken (last tried " +
              shown(path) + ")";
        return std::nullopt;
      }
    }
    if (path.empty()) {
      err = "the pattern expands to an empty path";
      return std::nullopt;
    }
    return path;
  } catch (const std::exception& e) {
    try {
      err = std::string("cannot expand the path pattern: ") + e.what();
    } catch (...) {
    }
    return std::nullopt;
  } catch (...) {
    try {
      err = "cannot expand the path pattern";
    } catch (...) {
    }
    return std::nullopt;
  }
}

}  // namespace cutriage::agent
