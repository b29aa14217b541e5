// terminal_safe (report.h): what the report does to bytes from a file or a CSV before they reach a
// terminal (issue 25, item 15).
#include <string>

#include "catch.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_terminal_safe {

using cutriage::tools::terminal_safe;

TEST_CASE("terminal_safe escapes C0 controls and DEL", "[report][terminal]") {
  CHECK(terminal_safe("k\x1b[2Jx", false) == "k\\x1b[2Jx");
  CHECK(terminal_safe("a\x07" "b\x7f" "c", false) == "a\\x07b\\x7fc");
  CHECK(terminal_safe(std::string("nul\0here", 8), false) == "nul\\x00here");
  CHECK(terminal_safe("tab\there", false) == "tab\\x09here");
}

TEST_CASE("terminal_safe keeps newlines only in a whole text", "[report][terminal]") {
  CHECK(terminal_safe("one\ntwo\n", true) == "one\ntwo\n");
  CHECK(terminal_safe("one\ntwo", false) == "one\\x0atwo");  // a name stays on its line
  CHECK(terminal_safe("cr\r\n", true) == "cr\\x0d\n");
}

TEST_CASE("terminal_safe keeps UTF-8 text and escapes C1 controls and malformed bytes", "[report][terminal]") {
  CHECK(terminal_safe("µs, ≥ 5%, “GPU”, 🚀", false) == "µs, ≥ 5%, “GPU”, 🚀");
  CHECK(terminal_safe("\xc2\x9b" "31m", false) == "\\u009b31m");  // U+009B: a one-character CSI
  CHECK(terminal_safe("\xc2\x85", false) == "\\u0085");
  CHECK(terminal_safe("\xc2\xa0", false) == "\xc2\xa0");  // U+00A0 is printable
  CHECK(terminal_safe("\x9b" "31m", false) == "\\x9b31m");  // a lone continuation byte
  CHECK(terminal_safe("end\xe2\x82", false) == "end\\xe2\\x82");  // cut short
  CHECK(terminal_safe("\xff", false) == "\\xff");
}

TEST_CASE("terminal_safe leaves plain text alone", "[report][terminal]") {
  const std::string report = "[1] void zoo_tiled<float, 32>(float const*, float*, int)\n    launch    grid (8, 8, 1)\n";
  CHECK(terminal_safe(report, true) == report);
  CHECK(terminal_safe("", true).empty());
}

}  // namespace test_terminal_safe
