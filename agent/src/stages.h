// The counters of a kernel's first profiled launch under adaptive collection: what Decisions 0-2
// need to route (triage::routing_decisions), plus, for chips with a table, the counters of later
// decisions that fit into the same replay passes at no extra cost. Later launches then collect
// only what the route still lacks, in few passes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cutriage::agent {

// Counters of Decisions 3, 4, 5 and 7 that ride along with the routing counters on `chip` without
// another pass (measured offline, see tools/src/plan_stages.cpp). Empty for chips without a table.
std::vector<std::string> free_riders(std::string_view chip);

// Routing counters followed by `chip`'s free riders, without duplicates.
std::vector<std::string> first_stage_counters(std::string_view chip);

// Every counter the rules of Decisions 0-5 and 7 read (6 and 2A have none): what one launch
// collects with CUTRIAGE_METRICS=full or a deep capture.
std::vector<std::string> all_counters();

}  // namespace cutriage::agent
