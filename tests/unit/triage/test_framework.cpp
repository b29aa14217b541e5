#include <cmath>
#include <string>

#include "catch.h"
#include "cutriage/triage/rule.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_framework {

using namespace cutriage::triage;

TEST_CASE("threshold overrides reject unknown rules and bad numbers", "[framework]") {
  Thresholds t;
  auto err = t.parse("no.such_rule = 3\n");
  REQUIRE(err.has_value());
  CHECK(err->find("no rule or session check 'no'") != std::string::npos);
  err = t.parse("garbage line\n");
  REQUIRE(err.has_value());
  CHECK(err->find("line 1") != std::string::npos);
  CHECK(t.overrides().empty());
}

TEST_CASE("threshold overrides reject negative values", "[framework]") {
  // Before: accepted, and a negative floor made its check fire on every kernel.
  Thresholds t;
  const Rule* some = nullptr;
  for (const Rule& r : all_rules()) {
    if (some == nullptr && !r.thresholds.empty()) some = &r;
  }
  REQUIRE(some != nullptr);
  const std::string key = std::string(some->id) + "." + std::string(some->thresholds.front().name);
  auto err = t.parse("# ok\n" + key + " = -1\n");
  REQUIRE(err.has_value());
  CHECK(*err == "line 2: " + key + " = -1: thresholds are not negative");
  CHECK(t.overrides().empty());
  CHECK_FALSE(t.parse(key + " = 0\n").has_value());  // zero is a value like any other
  CHECK(t.override_for(key) == 0.0);
}

TEST_CASE("threshold overrides reject a key given twice", "[framework]") {
  Thresholds t;
  auto err = t.parse("session.d2a.idle_gaps.max_idle_pct = 20\n\nsession.d2a.idle_gaps.max_idle_pct = 30\n");
  REQUIRE(err.has_value());
  CHECK(*err == "line 3: session.d2a.idle_gaps.max_idle_pct is set again (first on line 1); give each threshold once");
  CHECK(t.overrides().empty());
  // A later text may still change what an earlier one set.
  REQUIRE_FALSE(t.parse("session.d2a.idle_gaps.max_idle_pct = 20\n").has_value());
  REQUIRE_FALSE(t.parse("session.d2a.idle_gaps.max_idle_pct = 30\n").has_value());
  CHECK(t.override_for("session.d2a.idle_gaps.max_idle_pct") == 30.0);
}

TEST_CASE("threshold override messages do not echo a long value in full", "[framework]") {
  Thresholds t;
  const std::string value(100000, '9');
  auto err = t.parse("session.d2a.idle_gaps.max_idle_pct = " + value + "x\n");
  REQUIRE(err.has_value());
  CHECK(err->size() < 200);
  CHECK(err->find("... (100001 characters)") != std::string::npos);
  err = t.parse(std::string(5000, 'k') + ".t = 1\n");
  REQUIRE(err.has_value());
  CHECK(err->size() < 200);
}

TEST_CASE("the session checks' thresholds are overridden like the rules'", "[framework]") {
  // docs/engine.md's example; before, "no rule 'session.d2a.idle_gaps'" turned the agent off.
  Thresholds t;
  REQUIRE_FALSE(t.parse("session.d2a.idle_gaps.max_idle_pct = 20\n").has_value());
  CHECK(t.override_for("session.d2a.idle_gaps.max_idle_pct") == 20.0);
  // Every threshold of every session check, and nothing else of theirs.
  REQUIRE(session_checks().size() == 5);
  for (const SessionCheckDef& c : session_checks()) {
    INFO(c.id);
    CHECK(find_rule(c.id) == nullptr);  // one namespace: no session id is also a rule's
    CHECK(find_session_check(c.id) == &c);
    REQUIRE_FALSE(c.thresholds.empty());
    for (const ThresholdDef& d : c.thresholds) {
      Thresholds one;
      CHECK_FALSE(one.parse(std::string(c.id) + "." + std::string(d.name) + " = 1.5\n").has_value());
    }
    auto err = t.parse(std::string(c.id) + ".no_such_threshold = 1\n");
    REQUIRE(err.has_value());
    CHECK(err->find("has no threshold 'no_such_threshold'") != std::string::npos);
  }
}

TEST_CASE("every default threshold is finite and not negative", "[framework]") {
  // The parser refuses negative overrides on the ground that no threshold is negative.
  for (const Rule& r : all_rules()) {
    for (const ThresholdDef& d : r.thresholds) {
      INFO(r.id << "." << d.name);
      CHECK(std::isfinite(d.value));
      CHECK(d.value >= 0);
    }
  }
  for (const SessionCheckDef& c : session_checks()) {
    for (const ThresholdDef& d : c.thresholds) {
      INFO(c.id << "." << d.name);
      CHECK(std::isfinite(d.value));
      CHECK(d.value >= 0);
    }
  }
}

}  // namespace test_framework
