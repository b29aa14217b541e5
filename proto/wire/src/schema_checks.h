// The triage engine keeps its own copies of some cutriage.v1 enums (triage/ depends on nothing,
// not even generated code), and the writer puts their values on the wire as they are. These
// checks hold every value of the schema's enum (schema.h, generated from cutriage.proto) to the
// triage enumerator of the same name and number, so a value added to or renumbered in the .proto
// and not in triage/ fails the build here instead of writing a wrong number. A value only triage/
// has is not seen here: the schema has to gain it first, which these checks then hold to triage/.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cutriage/triage/diagnosis.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/triage/timeline.h"
#include "cutriage/wire/schema.h"

namespace cutriage::wire::schema_checks {

// The names the checks look values up in: the triage enum's own, plus any spelling the naming
// rule (schema.h) gives differently.
struct ReplayModeNames {
  using enum triage::ReplayMode;
};
struct ClockControlNames {
  using enum triage::ClockControl;
};
struct CopyKindNames {
  using enum triage::CopyKind;
};
struct DecisionNames {
  using enum triage::Decision;
  // DECISION_D2A_DISPATCH: the rule CamelCases each word, "D2A" -> "D2a"; triage says kD2ADispatch.
  static constexpr triage::Decision kD2aDispatch = triage::Decision::kD2ADispatch;
};
struct OutcomeNames {
  using enum triage::Outcome;
};
struct ClassificationNames {
  using enum triage::Classification;
};
struct LimiterNames {
  using enum triage::Limiter;
};
struct TrustNames {
  using enum triage::Trust;
};

template <typename E>
constexpr int64_t number(E value) {
  return static_cast<int64_t>(static_cast<std::underlying_type_t<E>>(value));
}

#define CUTRIAGE_SAME(names, name, value) \
  static_assert(number(names::name) == (value), "triage's " #names " " #name " differs from cutriage.proto");
#define CUTRIAGE_REPLAY_MODE(name, value) CUTRIAGE_SAME(ReplayModeNames, name, value)
#define CUTRIAGE_CLOCK_CONTROL(name, value) CUTRIAGE_SAME(ClockControlNames, name, value)
#define CUTRIAGE_COPY_KIND(name, value) CUTRIAGE_SAME(CopyKindNames, name, value)
#define CUTRIAGE_DECISION(name, value) CUTRIAGE_SAME(DecisionNames, name, value)
#define CUTRIAGE_OUTCOME(name, value) CUTRIAGE_SAME(OutcomeNames, name, value)
#define CUTRIAGE_CLASSIFICATION(name, value) CUTRIAGE_SAME(ClassificationNames, name, value)
#define CUTRIAGE_LIMITER(name, value) CUTRIAGE_SAME(LimiterNames, name, value)
#define CUTRIAGE_TRUST(name, value) CUTRIAGE_SAME(TrustNames, name, value)

CUTRIAGE_SCHEMA_ENUM_REPLAY_MODE(CUTRIAGE_REPLAY_MODE)
CUTRIAGE_SCHEMA_ENUM_CLOCK_CONTROL(CUTRIAGE_CLOCK_CONTROL)
CUTRIAGE_SCHEMA_ENUM_COPY_EXECUTION_KIND(CUTRIAGE_COPY_KIND)
CUTRIAGE_SCHEMA_ENUM_DECISION(CUTRIAGE_DECISION)
CUTRIAGE_SCHEMA_ENUM_OUTCOME(CUTRIAGE_OUTCOME)
CUTRIAGE_SCHEMA_ENUM_CLASSIFICATION(CUTRIAGE_CLASSIFICATION)
CUTRIAGE_SCHEMA_ENUM_LIMITER(CUTRIAGE_LIMITER)
CUTRIAGE_SCHEMA_ENUM_TRUST(CUTRIAGE_TRUST)

#undef CUTRIAGE_SAME
#undef CUTRIAGE_REPLAY_MODE
#undef CUTRIAGE_CLOCK_CONTROL
#undef CUTRIAGE_COPY_KIND
#undef CUTRIAGE_DECISION
#undef CUTRIAGE_OUTCOME
#undef CUTRIAGE_CLASSIFICATION
#undef CUTRIAGE_LIMITER
#undef CUTRIAGE_TRUST

}  // namespace cutriage::wire::schema_checks
