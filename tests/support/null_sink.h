// A record sink that keeps nothing: for programs driving the agent through the fake platform that
// do not read its output (tests/agent_lib/prometheus_example.cpp, bench/launch_enter.cpp).
#pragma once

#include <string>
#include <string_view>

#include "output.h"

namespace cutriage::testing {

class NullSink final : public agent::RecordSink {
 public:
  bool append(std::string_view) override { return true; }
  [[nodiscard]] std::string describe() const override { return "null"; }
  [[nodiscard]] bool failed() const override { return false; }
};

}  // namespace cutriage::testing
