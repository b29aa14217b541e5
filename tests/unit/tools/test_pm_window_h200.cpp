// Always-on's PM routing window on the H200 (tests/data/always_on/pm-window/, README there): the
// PyTorch loop and the example service at the default budget, about two minutes each. Replayed
// through today's engine and reader: every family with 5% of the GPU time that the window could
// sample is routed from its own PM samples within seconds, with deep mode's classification.
#include <map>
#include <string>
#include <vector>

#include "always_on_captures.h"
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "file_reader.h"
#include "record_support.h"
#include "report.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_pm_window_h200 {

using namespace cutriage;

namespace {

// Each kernel's PM-window record, by mangled name.
std::map<std::string, const v1::KernelProfile*> pm_records(const tools::ReadResult& r) {
  std::map<std::string, const v1::KernelProfile*> out;
  for (int i : r.kernel_records) {
    const v1::KernelProfile& k = r.file.records(i).kernel();
    if (k.has_pm_window()) out[std::string(tools::lookup(r, k.mangled_name_iid()))] = &k;
  }
  return out;
}

// Kernels (mangled names) with at least `share` of the traced GPU time.
std::vector<std::string> families_over(const tools::ReadResult& r, double share) {
  std::vector<std::string> out;
  const v1::TraceSummary* s = tools::trace_summary(r);
  REQUIRE(s != nullptr);
  for (const v1::FamilyStats& f : s->families()) {
    if (f.time_share() < share) continue;
    auto def = r.family_records.find(f.family_id());
    REQUIRE(def != r.family_records.end());
    out.emplace_back(tools::lookup(r, r.file.records(def->second).family().mangled_name_iid()));
  }
  return out;
}

// Seconds in the routed notice of `function` ("... verdict routed 11.5 s after the agent started").
double routed_after(const tools::ReadResult& r, const std::string& function) {
  for (const v1::Record& rec : r.file.records()) {
    if (!rec.has_notice() || rec.notice().code() != "always_on_routed") continue;
    const std::string& m = rec.notice().message();
    if (m.rfind(function + ": verdict routed ", 0) != 0) continue;
    const size_t from = function.size() + std::string(": verdict routed ").size();
    return std::stod(m.substr(from, m.find(' ', from) - from));
  }
  return -1;
}

triage::Diagnosis retriage(const tools::ReadResult& r, const v1::KernelProfile& k) {
  return triage::triage_kernel(testing::input_from_record(r, k, *triage::known_device_limits("GH100")));
}

// The window's record of kernel `mangled`: routed within `seconds`, the same verdict through
// today's engine, and deep mode's classification and limiter for the same kernel.
void expect_routed_like_deep(const tools::ReadResult& on, const tools::ReadResult& deep, const std::string& mangled,
                             double seconds) {
  INFO(mangled);
  const auto pm = pm_records(on);
  REQUIRE(pm.count(mangled) == 1);
  const v1::KernelProfile& k = *pm.at(mangled);
  const std::string function(tools::lookup(on, k.function_name_iid()));
  CHECK(k.replay_mode() == v1::REPLAY_MODE_NONE);
  CHECK(k.pm_window().samples() >= 3);
  CHECK(k.pm_window().window_samples() >= k.pm_window().samples());
  const double after = routed_after(on, function);
  CHECK(after > 0);
  CHECK(after < seconds);
  const triage::Diagnosis again = retriage(on, k);
  CHECK(static_cast<int>(again.classification) == static_cast<int>(k.diagnosis().classification()));
  CHECK(again.headline == k.diagnosis().headline());
  const auto d = testing::latest_profiled(deep, /*by_mangled=*/true);
  REQUIRE(d.count(mangled) == 1);
  const triage::Diagnosis dd = retriage(deep, *d.at(mangled));
  INFO("PM window: " << again.headline << "\ndeep: " << dd.headline);
  CHECK(again.classification == dd.classification);
  CHECK(again.primary_limiter == dd.primary_limiter);
}

}  // namespace

TEST_CASE("H200 PM window: PyTorch's four GEMMs routed in seconds at the default budget", "[always_on][h200][pm]") {
  const tools::ReadResult on = testing::load_always_on("pm-window/torch-pm-122s.pb");
  const tools::ReadResult deep = testing::load_always_on("torch-deep.pb");
  const std::vector<std::string> top = families_over(on, 0.05);
  REQUIRE(top.size() == 4);  // two sm80 xmma GEMMs and two CUTLASS SIMT GEMMs
  for (const std::string& f : top) expect_routed_like_deep(on, deep, f, 120);
  // Routed from one window: none of them is complete, and the report says so.
  const std::string text = tools::render_report(on, {});
  CHECK(text.find("complete  not yet: routed from PM samples") != std::string::npos);
}

TEST_CASE("H200 PM window: the service's matmul routed in seconds, not normalize_rows, which runs beside it",
          "[always_on][h200][pm]") {
  const tools::ReadResult on = testing::load_always_on("pm-window/svc-pm-120s.pb");
  const tools::ReadResult deep = testing::load_always_on("svc-deep.pb");
  const std::vector<std::string> top = families_over(on, 0.05);
  REQUIRE(top.size() == 2);
  REQUIRE(top[0].find("matmul_tiled") != std::string::npos);
  REQUIRE(top[1].find("normalize_rows") != std::string::npos);
  expect_routed_like_deep(on, deep, top[0], 120);
  // normalize_rows runs on the side stream while matmul_tiled runs: every sample inside one of its
  // executions is inside a matmul execution too, so none is its own and nothing is routed from them.
  CHECK(pm_records(on).count(top[1]) == 0);
  CHECK(routed_after(on, "(anonymous namespace)::normalize_rows") < 0);
}

}  // namespace test_pm_window_h200
