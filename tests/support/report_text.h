// Reading `cutriage report` output in tests: its lines, and their width in columns (UTF-8 code
// points: the report wraps at a column limit and uses a few non-ASCII characters).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cutriage::testing {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

inline size_t columns(const std::string& line) {
  size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace cutriage::testing
