#include "cutriage/base/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace cutriage::base {
namespace {

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// True when `s` ends with the keyword `operator` as a whole word ("Foo::operator").
bool ends_with_operator_keyword(std::string_view s) {
  constexpr std::string_view kOp = "operator";
  if (s.size() < kOp.size() || s.substr(s.size() - kOp.size()) != kOp) return false;
  return s.size() == kOp.size() || !is_ident_char(s[s.size() - kOp.size() - 1]);
}

// Removes what may follow a member function's parameter list: cv/ref qualifiers, noexcept and
// GCC's " [clone .constprop.0]" suffixes. Qualifiers are only removed when a ')' is left at the end.
std::string_view strip_trailing_qualifiers(std::string_view s) {
  s = trim(s);
  while (!s.empty() && s.back() == ']') {
    const auto clone = s.rfind(" [clone ");
    if (clone == std::string_view::npos) break;
    s = trim(s.substr(0, clone));
  }
  std::string_view t = s;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view q : {"const", "volatile", "noexcept", "&&", "&"}) {
      if (t.size() <= q.size() || t.substr(t.size() - q.size()) != q) continue;
      const std::string_view rest = t.substr(0, t.size() - q.size());
      if (is_ident_char(q.front()) && is_ident_char(rest.back())) continue;  // "fooconst" is a name
      t = trim(rest);
      changed = true;
      break;
    }
  }
  return (!t.empty() && t.back() == ')') ? t : s;
}

// Strips the parameter list "(...)" at the end, when there is one.
std::string_view strip_parameters(std::string_view s) {
  if (s.empty() || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == ')') {
      ++depth;
    } else if (c == '(') {
      if (--depth == 0) {
        std::string_view prefix = trim(s.substr(0, i));
        // "Foo::operator()" without a parameter list: the parentheses are the name.
        if (prefix.empty() || ends_with_operator_keyword(prefix)) return s;
        return prefix;
      }
    }
  }
  return s;  // unbalanced: leave as is
}

// Skips the return type: the name starts after the last space that is outside any brackets and
// not part of an operator name ("operator new", "operator unsigned int").
std::string_view strip_return_type(std::string_view s) {
  int parens = 0;  // ( [ {
  int angles = 0;  // < > outside parentheses
  size_t name_start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == 'o' && (i == 0 || !is_ident_char(s[i - 1])) && s.substr(i, 8) == "operator" &&
        (i + 8 == s.size() || !is_ident_char(s[i + 8]))) {
      i += 8;
      if (i < s.size() && s[i] == ' ') {
        // Conversion operator or new/delete: the following type belongs to the name.
        ++i;
        while (i < s.size() && (is_ident_char(s[i]) || s[i] == ' ' || s[i] == '*' || s[i] == '&') &&
               s[i] != '(') {
          ++i;
        }
        if (i + 1 < s.size() && s[i] == '[' && s[i + 1] == ']') i += 2;  // new[] / delete[]
        continue;
      }
      if (s.substr(i, 2) == "()" || s.substr(i, 2) == "[]") {
        i += 2;
        continue;
      }
      constexpr std::string_view kOpChars = "<>=!+-*/%^&|~,";
      while (i < s.size() && kOpChars.find(s[i]) != std::string_view::npos) ++i;
      continue;
    }
    switch (c) {
      case '(':
      case '[':
      case '{':
        ++parens;
        break;
      case ')':
      case ']':
      case '}':
        if (parens > 0) --parens;
        break;
      case '<':
        if (parens == 0) ++angles;
        break;
      case '>':
        if (parens == 0 && angles > 0) --angles;
        break;
      case ' ':
        if (parens == 0 && angles == 0) name_start = i + 1;
        break;
      default:
        break;
    }
    ++i;
  }
  return s.substr(name_start);
}

}  // namespace

std::string demangle(std::string_view mangled) {
  try {
    std::string_view m = trim(mangled);
    if (m.size() < 3 || m.substr(0, 2) != "_Z") return std::string(mangled);
    const std::string input(m);
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status),
                                               std::free);
    if (status != 0 || out == nullptr) return std::string(mangled);
    return std::string(out.get());
  } catch (...) {
    return {};
  }
}

std::string function_base_name(std::string_view demangled) {
  try {
    std::string_view s = strip_trailing_qualifiers(trim(demangled));
    s = strip_parameters(s);
    s = trim(strip_return_type(s));
    if (s.empty()) return std::string(trim(demangled));
    return std::string(s);
  } catch (...) {
    return {};
  }
}

}  // namespace cutriage::base
