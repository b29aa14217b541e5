// STUB: to be replaced by the rules of this decision.
#include "registry.h"

namespace cutriage::triage::detail {

std::vector<Rule> make_d6_rules() { return {}; }

}  // namespace cutriage::triage::detail
