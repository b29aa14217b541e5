// A strict JSON (RFC 8259) checker for the fuzz contracts: whether a text the tool wrote is one
// JSON value, without a JSON library. Says what is wrong and at which byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cutriage::testing {

class JsonChecker {
 public:
  explicit JsonChecker(std::string_view text) : t_(text) {}

  // "" when the text is exactly one JSON value (blanks around it allowed).
  std::string check() {
    blanks();
    if (!value(0)) return error_;
    blanks();
    if (i_ != t_.size()) return fail_at("text after the value");
    return "";
  }

 private:
  static constexpr int kMaxDepth = 256;

  bool fail(const char* what) {
    error_ = std::string(what) + " at byte " + std::to_string(i_);
    return false;
  }
  std::string fail_at(const char* what) {
    (void)fail(what);
    return error_;
  }
  [[nodiscard]] bool more() const { return i_ < t_.size(); }
  void blanks() {
    while (more() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool value(int depth) {
    if (depth > kMaxDepth) return fail("nesting too deep");
    if (!more()) return fail("a value expected");
    switch (t_[i_]) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return string();
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: return number();
    }
  }
  bool word(std::string_view w) {
    if (t_.substr(i_, w.size()) != w) return fail("a literal expected");
    i_ += w.size();
    return true;
  }
  bool object(int depth) {
    ++i_;  // '{'
    blanks();
    if (more() && t_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      blanks();
      if (!more() || t_[i_] != '"') return fail("a key expected");
      if (!string()) return false;
      blanks();
      if (!more() || t_[i_] != ':') return fail("':' expected");
      ++i_;
      blanks();
      if (!value(depth + 1)) return false;
      blanks();
      if (more() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      if (more() && t_[i_] == '}') {
        ++i_;
        return true;
      }
      return fail("',' or '}' expected");
    }
  }
  bool array(int depth) {
    ++i_;  // '['
    blanks();
    if (more() && t_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      blanks();
      if (!value(depth + 1)) return false;
      blanks();
      if (more() && t_[i_] == ',') {
        ++i_;
        continue;
      }
      if (more() && t_[i_] == ']') {
        ++i_;
        return true;
      }
      return fail("',' or ']' expected");
    }
  }
  bool string() {
    ++i_;  // '"'
    while (more()) {
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return fail("a raw control character in a string");
      if (c == '\\') {
        ++i_;
        if (!more()) break;
        const char e = t_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (i_ + static_cast<size_t>(k) >= t_.size() || !is_hex(t_[i_ + static_cast<size_t>(k)])) {
              return fail("a bad \\u escape");
            }
          }
          i_ += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return fail("a bad escape");
        }
      }
      ++i_;
    }
    return fail("an unterminated string");
  }
  static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  bool digits() {
    const size_t start = i_;
    while (more() && is_digit(t_[i_])) ++i_;
    return i_ > start;
  }
  bool number() {
    if (more() && t_[i_] == '-') ++i_;
    if (more() && t_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return fail("a value expected");
    }
    if (more() && t_[i_] == '.') {
      ++i_;
      if (!digits()) return fail("digits expected after '.'");
    }
    if (more() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (more() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits()) return fail("digits expected in the exponent");
    }
    return true;
  }

  std::string_view t_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace cutriage::testing
