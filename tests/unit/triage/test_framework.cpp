#include <string>

#include "catch.h"
#include "cutriage/triage/rule.h"

using namespace cutriage::triage;

TEST_CASE("threshold overrides reject unknown rules and bad numbers", "[framework]") {
  Thresholds t;
  auto err = t.parse("no.such_rule = 3\n");
  REQUIRE(err.has_value());
  CHECK(err->find("no rule 'no'") != std::string::npos);
  err = t.parse("garbage line\n");
  REQUIRE(err.has_value());
  CHECK(err->find("line 1") != std::string::npos);
  CHECK(t.overrides().empty());
}
