// proto3 `string` fields must hold UTF-8: libprotobuf refuses to parse a record that holds
// anything else, and the reader then stops at that record. Strings from outside (command lines,
// host names, kernel and NVTX names, CSV cells) are checked and repaired before they are encoded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cutriage::wire {

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// `s` with every byte that does not start a well-formed sequence replaced by U+FFFD; `*replaced`
// (optional) counts them.
std::string valid_utf8(std::string_view s, size_t* replaced = nullptr);

}  // namespace cutriage::wire
