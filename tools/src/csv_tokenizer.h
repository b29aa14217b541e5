// The CSV layer of the ncu import (ncu_csv.cpp): input lines repaired to valid UTF-8, and records
// split from them one at a time, leniently (ncu's log lines, blank lines, quoted line breaks).
// Internal to the tool.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cutriage/wire/utf8.h"
#include "ncu_csv.h"

namespace cutriage::tools::csv {

using wire::is_valid_utf8;
using wire::valid_utf8;

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

struct CsvRecord {
  std::vector<std::string> fields;
  size_t line = 0;  // 1-based line of the text where the record starts
};

// "==PROF== Connected to process 1234", "==WARNING== ...", "==ERROR== ...".
inline bool is_log_line(std::string_view line) {
  if (!starts_with(line, "==")) return false;
  size_t i = 2;
  while (i < line.size() && ((line[i] >= 'A' && line[i] <= 'Z') || line[i] == '_')) ++i;
  return i > 2 && line.substr(i, 2) == "==";
}

// The physical lines of the input, repaired once to valid UTF-8 (ncu writes UTF-8; a Latin-1 host
// name or a torn multi-byte character is replaced here, so every cell, name and header below is
// valid UTF-8), the byte-order mark dropped. A line is at most one line of the input in memory.
class RepairedLines {
 public:
  explicit RepairedLines(CsvLineSource& source) : source_(source) {}
  bool next(std::string& line) {
    if (!source_.next_line(line)) return false;
    if (first_) {
      first_ = false;
      if (starts_with(line, "\xEF\xBB\xBF")) line.erase(0, 3);
    }
    if (!is_valid_utf8(line)) {
      size_t replaced = 0;
      line = valid_utf8(line, &replaced);
      invalid_utf8_bytes_ += replaced;
    }
    return true;
  }
  [[nodiscard]] size_t invalid_utf8_bytes() const { return invalid_utf8_bytes_; }

 private:
  CsvLineSource& source_;
  bool first_ = true;
  size_t invalid_utf8_bytes_ = 0;
};

// Splits the input into records, one at a time, from the line that starts at `first_line`. RFC
// 4180 with leniency: quoted fields may hold commas, doubled quotes and line breaks; unquoted
// fields are trimmed; "\r\n", "\n" and a lone "\r" end a record; blank lines and ncu log lines
// between records are skipped. Every line read ends in '\n' but the input's last, so a one-byte
// look-ahead never leaves the current line.
class CsvTokenizer {
 public:
  CsvTokenizer(RepairedLines& lines, std::string first, size_t first_line)
      : lines_(lines), buf_(std::move(first)), line_(first_line) {}

  size_t log_lines_skipped = 0;
  std::optional<size_t> unterminated_quote_line;

  bool next(CsvRecord& rec) {
    rec.fields.clear();
    while (true) {
      if (!fill()) return false;
      // Between records.
      const char c = buf_[i_];
      if (c == '\n') {
        ++line_;
        ++i_;
        continue;
      }
      if (c == '\r') {
        if (i_ + 1 >= buf_.size() || buf_[i_ + 1] != '\n') ++line_;
        ++i_;
        continue;
      }
      const size_t eol = buf_.find('\n', i_);
      const std::string_view raw_line =
          std::string_view(buf_).substr(i_, eol == std::string::npos ? buf_.size() - i_ : eol - i_);
      if (trim(raw_line).empty() || is_log_line(raw_line)) {
        if (!trim(raw_line).empty()) ++log_lines_skipped;
        i_ = eol == std::string::npos ? buf_.size() : eol;  // the '\n' is consumed above
        continue;
      }
      break;
    }
    rec.line = line_;
    std::string field;
    bool quoted = false;     // the current field started with a quote
    bool in_quotes = false;  // inside a quoted section
    const size_t quote_line = line_;
    auto finish_field = [&]() {
      rec.fields.push_back(quoted ? field : std::string(trim(field)));
      field.clear();
      quoted = false;
    };
    bool end_of_record = false;
    while (!end_of_record && fill()) {
      const size_t n = buf_.size();
      const char c = buf_[i_];
      if (in_quotes) {
        if (c == '"') {
          if (i_ + 1 < n && buf_[i_ + 1] == '"') {
            field.push_back('"');
            i_ += 2;
          } else {
            in_quotes = false;
            ++i_;
          }
        } else {
          if (c == '\n') ++line_;
          field.push_back(c);
          ++i_;
        }
        continue;
      }
      switch (c) {
        case '"':
          if (!quoted && trim(field).empty()) {
            field.clear();
            quoted = true;
            in_quotes = true;
          } else {
            field.push_back(c);  // a stray quote inside an unquoted field: keep it literally
          }
          ++i_;
          break;
        case ',':
          finish_field();
          ++i_;
          break;
        case '\r':
          ++i_;
          if (i_ < n && buf_[i_] == '\n') ++i_;
          ++line_;
          end_of_record = true;
          break;
        case '\n':
          ++i_;
          ++line_;
          end_of_record = true;
          break;
        default:
          // Whitespace after a closing quote is dropped; anything else is kept.
          if (!(quoted && is_space(c))) field.push_back(c);
          ++i_;
          break;
      }
    }
    if (in_quotes) unterminated_quote_line = quote_line;
    finish_field();
    return true;
  }

 private:
  // Makes buf_[i_] the next unread byte, reading the next line when this one is used up.
  bool fill() {
    while (i_ >= buf_.size()) {
      i_ = 0;
      if (!lines_.next(buf_)) {
        buf_.clear();
        return false;
      }
    }
    return true;
  }

  RepairedLines& lines_;
  std::string buf_;
  size_t i_ = 0;
  size_t line_;
};

}  // namespace cutriage::tools::csv
