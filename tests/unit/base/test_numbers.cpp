// Counts as the report writes them (base/numbers.h).
#include "catch.h"
#include "cutriage/base/numbers.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_numbers {

using cutriage::base::grouped_integer;

TEST_CASE("grouped_integer: thousands separators, rounded, signed", "[base]") {
  CHECK(grouped_integer(0) == "0");
  CHECK(grouped_integer(999) == "999");
  CHECK(grouped_integer(1000) == "1,000");
  CHECK(grouped_integer(37584) == "37,584");
  CHECK(grouped_integer(67108864) == "67,108,864");
  CHECK(grouped_integer(131472828.4) == "131,472,828");
  CHECK(grouped_integer(-12345) == "-12,345");
  CHECK(grouped_integer(1e18) == "1e+18");
}

}  // namespace test_numbers
