// What the configuration's parsers share (config.cpp, kernel_filter.cpp, path_pattern.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cutriage::agent::config_text {

// A value longer than this is cut in messages, which must stay one readable line.
inline constexpr std::size_t kMaxShownValue = 80;
inline constexpr std::string_view kRegexPrefix = "regex:";  // case-sensitive, as in ncu

// The value as messages show it: quoted, control bytes escaped (so the message stays one line),
// cut after kMaxShownValue bytes without splitting a UTF-8 sequence.
std::string shown(std::string_view value);

}  // namespace cutriage::agent::config_text
