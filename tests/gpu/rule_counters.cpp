// Prints every counter cutriage's rules read, one "DECISION NAME" per line (the counters of
// counters_for_decisions(), per decision), then the parts of each throughput breakdown
// ("B:THROUGHPUT PART", "U:THROUGHPUT PART" for parts that need replay), for
// tests/gpu/pm_metrics_list.cpp. Offline; links the
// triage and base libraries of a build:
//
//   g++ -std=c++20 -Itriage/include -Ibase/include tests/gpu/rule_counters.cpp \
//       BUILD/triage/libcutriage_triage.a BUILD/base/libcutriage_base.a -o /tmp/rule_counters
#include <cstdio>
#include <string>

#include "cutriage/triage/plan.h"

int main() {
  using cutriage::triage::Decision;
  const struct {
    const char* name;
    Decision decision;
  } decisions[] = {{"D0", Decision::kD0Trust},          {"D1", Decision::kD1WorkloadSize},
                   {"D2", Decision::kD2Regime},         {"D2A", Decision::kD2ADispatch},
                   {"D3", Decision::kD3IssueStalls},    {"D4", Decision::kD4ComputePipe},
                   {"D5", Decision::kD5MemoryMechanism}, {"D7", Decision::kD7HardwareLimit}};
  for (const auto& d : decisions) {
    for (const auto& c : cutriage::triage::counters_for_decisions({d.decision})) {
      std::printf("%s %s\n", d.name, c.c_str());
    }
  }
  for (const auto& b : cutriage::triage::throughput_breakdowns()) {
    const std::string base = b.metric.substr(0, b.metric.find('.'));
    for (const auto& p : b.parts) std::printf("B:%s %s\n", base.c_str(), p.c_str());
    for (const auto& p : b.unreachable) std::printf("U:%s %s\n", base.c_str(), p.c_str());
  }
  return 0;
}
