// Internal: each decision's rule table, defined in rules_dN.cpp. all_rules() concatenates them
// in guide order.
#pragma once

#include <vector>

#include "cutriage/triage/rule.h"

namespace cutriage::triage::detail {

std::vector<Rule> make_d0_rules();
std::vector<Rule> make_d1_rules();
std::vector<Rule> make_d2_rules();
std::vector<Rule> make_d2a_rules();
std::vector<Rule> make_d3_rules();
std::vector<Rule> make_d4_rules();
std::vector<Rule> make_d5_rules();
std::vector<Rule> make_d6_rules();
std::vector<Rule> make_d7_rules();

}  // namespace cutriage::triage::detail
