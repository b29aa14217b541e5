// The agent's protozero encoder against the schema: its bytes are parsed with the classes protoc
// generated from proto/cutriage/v1/cutriage.proto and compared field by field. A field number or
// type that drifts between writer.cpp and the schema fails here.
#include <string>

#include "catch.h"
#include "cutriage/v1/cutriage.pb.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"

using namespace cutriage;

namespace {

wire::SessionInfo sample_session() {
  wire::SessionInfo s;
  s.agent_version = "0.1.0";
  s.host = "gpu-host";
  s.pid = 4242;
  s.command_line = {"./app", "--size", "1024"};
  s.start_time_unix_ns = 1'700'000'000'000'000'000ULL;
  wire::GpuInfo g;
  g.device = 0;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-1234";
  g.limits.chip = "GH100";
  g.limits.cc_major = 9;
  g.limits.cc_minor = 0;
  g.limits.sm_count = 132;
  g.limits.sm_clock_hz = 1.98e9;
  g.limits.memory_clock_hz = 2.6e9;
  g.limits.memory_bytes = 150'000'000'000ULL;
  g.limits.dram_peak_bytes_per_second = 4.8e12;
  g.limits.max_threads_per_sm = 2048;
  g.limits.registers_per_sm = 65536;
  g.limits.shared_bytes_per_sm = 233472;
  s.gpus.push_back(g);
  s.driver_version = "580.159.04";
  s.cuda_version = "13.0";
  s.cupti_version = "13.0";
  s.replay_mode = triage::ReplayMode::kKernel;
  s.clock_control = triage::ClockControl::kNone;
  s.cache_control = "all";
  s.metric_set = "triage";
  s.kernel_filter = "regex:gemm";
  s.source = wire::SessionSource::kAgent;
  return s;
}

wire::KernelRecord sample_kernel() {
  wire::KernelRecord k;
  k.input.mangled_name = "_Z6kernelPf";
  k.input.demangled_name = "kernel(float*)";
  k.input.function_name = "kernel";
  k.input.device = 0;
  k.input.launch_index = 17;
  triage::LaunchConfig lc;
  lc.grid = {264, 2, 1};
  lc.block = {256, 1, 1};
  lc.cluster = {2, 1, 1};
  lc.registers_per_thread = 40;
  lc.static_shared_bytes = 4096;
  lc.dynamic_shared_bytes = 8192;
  lc.local_bytes_per_thread = 16;
  lc.shared_config_bytes_per_sm = 102400;
  k.input.launch = lc;
  k.input.metrics.set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.5, "%");
  k.input.metrics.set("smsp__issue_active.sum", 0.0, "cycle");
  k.input.metrics.set("launch__waves_per_multiprocessor", 4.0, "", triage::MetricSource::kDerived);
  k.input.collection.passes = 19;
  k.input.collection.replay_mode = triage::ReplayMode::kKernel;
  k.input.collection.clock_control = triage::ClockControl::kNone;
  k.input.unprofiled_durations_ns = {1000, 3000, 2000};
  k.input.time_share = 0.25;
  k.context_id = 3;
  k.stream_id = 7;
  k.correlation_id = 99;
  k.nvtx_path = {"train", "step"};
  k.duration_ns = 2500;

  triage::Diagnosis& d = k.diagnosis;
  triage::DecisionVisit v;
  v.decision = triage::Decision::kD5MemoryMechanism;
  v.entered_because = "memory 91.5% >> compute 20%";
  triage::CheckResult c;
  c.rule_id = "d5.dram_near_peak";
  c.decision = triage::Decision::kD5MemoryMechanism;
  c.title = "DRAM near peak";
  c.outcome = triage::Outcome::kFired;
  c.reason = "DRAM at 91.5% of peak";
  c.evidence.push_back({"dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.5, "%", false});
  c.evidence.push_back({"zero_valued", 0.0, "", true});
  c.thresholds.push_back({"d5.dram_near_peak.high", 80});
  triage::Finding f;
  f.limiter = triage::Limiter::kDramBandwidth;
  f.summary = "DRAM bandwidth bound";
  f.detail = "dram";
  f.next_action = "move fewer bytes";
  f.estimated_speedup = 1.09;
  f.estimate_basis = "100/91.5";
  f.severity = 0.4;
  c.finding = f;
  v.checks.push_back(c);
  triage::CheckResult ne;
  ne.rule_id = "d6.hot_line";
  ne.decision = triage::Decision::kD6SourceLines;
  ne.outcome = triage::Outcome::kNotEvaluated;
  ne.reason = "no PC samples";
  v.checks.push_back(ne);
  d.path.push_back(v);
  d.classification = triage::Classification::kMemoryBound;
  d.primary_limiter = triage::Limiter::kDramBandwidth;
  d.primary_rule = "d5.dram_near_peak";
  d.headline = "memory bound: DRAM";
  d.next_action = "move fewer bytes";
  d.estimated_speedup = 1.09;
  d.amdahl_ceiling = 1.333;
  d.trust = triage::Trust::kSuspect;
  d.trust_notes = {"no unprofiled timing"};
  d.at_hardware_limit = true;
  return k;
}

}  // namespace

TEST_CASE("wire encoder output parses with the generated classes, field by field", "[wire]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(sample_session());
  wire::KernelRecord k = sample_kernel();
  bytes += enc.kernel(k);
  // A second record of the same kernel reuses the interned strings: no new InternedString records.
  std::string second = enc.kernel(k);

  v1::File file;
  REQUIRE(file.ParseFromString(bytes + second));
  REQUIRE(file.records_size() >= 3);

  const v1::SessionHeader& s = file.records(0).session();
  REQUIRE(file.records(0).has_session());
  CHECK(s.schema_version() == 1);
  CHECK(s.agent_version() == "0.1.0");
  CHECK(s.host() == "gpu-host");
  CHECK(s.pid() == 4242);
  REQUIRE(s.command_line_size() == 3);
  CHECK(s.command_line(2) == "1024");
  CHECK(s.start_time_unix_ns() == 1'700'000'000'000'000'000ULL);
  REQUIRE(s.gpus_size() == 1);
  CHECK(s.gpus(0).name() == "NVIDIA H200");
  CHECK(s.gpus(0).chip() == "GH100");
  CHECK(s.gpus(0).uuid() == "GPU-1234");
  CHECK(s.gpus(0).cc_major() == 9);
  CHECK(s.gpus(0).sm_count() == 132);
  CHECK(s.gpus(0).memory_bytes() == 150'000'000'000ULL);
  CHECK(s.gpus(0).dram_peak_bytes_per_second() == 4.8e12);
  CHECK(s.gpus(0).limits().max_threads_per_sm() == 2048);
  CHECK(s.gpus(0).limits().registers_per_sm() == 65536);
  CHECK(s.gpus(0).limits().shared_bytes_per_sm() == 233472);
  CHECK(s.driver_version() == "580.159.04");
  CHECK(s.cupti_version() == "13.0");
  CHECK(s.settings().replay_mode() == v1::REPLAY_MODE_KERNEL);
  CHECK(s.settings().clock_control() == v1::CLOCK_CONTROL_NONE);
  CHECK(s.settings().metric_set() == "triage");
  CHECK(s.settings().kernel_filter() == "regex:gemm");
  CHECK(s.source() == v1::SessionHeader::SOURCE_AGENT);

  // Resolve interned strings the way a reader must: definitions precede their use.
  tools::ReadResult r = tools::read_cutriage_bytes(bytes + second);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const v1::KernelProfile* kp = nullptr;
  int kernels = 0;
  int interned_after_first_kernel = 0;
  for (const auto& rec : r.file.records()) {
    if (rec.has_kernel()) {
      ++kernels;
      if (kp == nullptr) kp = &rec.kernel();
    } else if (rec.has_interned() && kernels > 0) {
      ++interned_after_first_kernel;
    }
  }
  CHECK(kernels == 2);
  CHECK(interned_after_first_kernel == 0);
  REQUIRE(kp != nullptr);
  CHECK(tools::lookup(r, kp->mangled_name_iid()) == "_Z6kernelPf");
  CHECK(tools::lookup(r, kp->demangled_name_iid()) == "kernel(float*)");
  CHECK(tools::lookup(r, kp->function_name_iid()) == "kernel");
  CHECK(kp->launch_index() == 17);
  CHECK(kp->context_id() == 3);
  CHECK(kp->stream_id() == 7);
  CHECK(kp->correlation_id() == 99);
  REQUIRE(kp->nvtx_path_size() == 2);
  CHECK(kp->nvtx_path(1) == "step");
  CHECK(kp->launch().grid().x() == 264);
  CHECK(kp->launch().grid().y() == 2);
  CHECK(kp->launch().block().x() == 256);
  CHECK(kp->launch().cluster().x() == 2);
  CHECK(kp->launch().registers_per_thread() == 40);
  CHECK(kp->launch().static_shared_bytes() == 4096);
  CHECK(kp->launch().dynamic_shared_bytes() == 8192);
  CHECK(kp->launch().local_bytes_per_thread() == 16);
  CHECK(kp->launch().shared_config_bytes_per_sm() == 102400);
  REQUIRE(kp->metrics_size() == 3);
  bool saw_zero = false, saw_derived = false;
  for (const auto& m : kp->metrics()) {
    std::string_view name = tools::lookup(r, m.name_iid());
    if (name == "smsp__issue_active.sum") {
      saw_zero = true;
      CHECK(m.value() == 0.0);
      CHECK(tools::lookup(r, m.unit_iid()) == "cycle");
    }
    if (name == "launch__waves_per_multiprocessor") {
      saw_derived = true;
      CHECK(m.derived());
      CHECK(m.value() == 4.0);
    }
    if (name == "dram__throughput.avg.pct_of_peak_sustained_elapsed") CHECK(m.value() == 91.5);
  }
  CHECK(saw_zero);
  CHECK(saw_derived);
  CHECK(kp->passes() == 19);
  CHECK(kp->replay_mode() == v1::REPLAY_MODE_KERNEL);
  CHECK(kp->clock_control() == v1::CLOCK_CONTROL_NONE);
  CHECK(kp->duration_ns() == 2500);
  CHECK(kp->unprofiled_duration_ns() == 2000);  // the median of 1000, 3000, 2000
  CHECK(kp->unprofiled_samples() == 3);
  CHECK(kp->time_share() == 0.25);

  const v1::Diagnosis& d = kp->diagnosis();
  CHECK(d.classification() == v1::CLASSIFICATION_MEMORY_BOUND);
  CHECK(d.primary_limiter() == v1::LIMITER_DRAM_BANDWIDTH);
  CHECK(d.primary_rule_id() == "d5.dram_near_peak");
  CHECK(d.headline() == "memory bound: DRAM");
  CHECK(d.next_action() == "move fewer bytes");
  CHECK(d.estimated_speedup() == 1.09);
  CHECK(d.amdahl_ceiling() == 1.333);
  CHECK(d.trust() == v1::TRUST_SUSPECT);
  REQUIRE(d.trust_notes_size() == 1);
  CHECK(d.at_hardware_limit());
  REQUIRE(d.path_size() == 1);
  const v1::DecisionVisit& visit = d.path(0);
  CHECK(visit.decision() == v1::DECISION_D5_MEMORY_MECHANISM);
  CHECK(visit.entered_because() == "memory 91.5% >> compute 20%");
  REQUIRE(visit.checks_size() == 2);
  const v1::Check& c = visit.checks(0);
  CHECK(c.rule_id() == "d5.dram_near_peak");
  CHECK(c.outcome() == v1::OUTCOME_FIRED);
  CHECK(c.reason() == "DRAM at 91.5% of peak");
  REQUIRE(c.evidence_size() == 2);
  CHECK(c.evidence(0).value() == 91.5);
  CHECK(c.evidence(0).unit() == "%");
  CHECK(c.evidence(1).metric() == "zero_valued");
  CHECK(c.evidence(1).derived());
  REQUIRE(c.thresholds_size() == 1);
  CHECK(c.thresholds(0).name() == "d5.dram_near_peak.high");
  CHECK(c.thresholds(0).value() == 80);
  CHECK(c.finding().limiter() == v1::LIMITER_DRAM_BANDWIDTH);
  CHECK(c.finding().summary() == "DRAM bandwidth bound");
  CHECK(c.finding().detail() == "dram");
  CHECK(c.finding().estimated_speedup() == 1.09);
  CHECK(c.finding().estimate_basis() == "100/91.5");
  CHECK(c.finding().severity() == 0.4);
  CHECK(visit.checks(1).outcome() == v1::OUTCOME_NOT_EVALUATED);
  CHECK(visit.checks(1).reason() == "no PC samples");
  CHECK_FALSE(visit.checks(1).has_finding());
}

TEST_CASE("enum values of the engine and the schema agree", "[wire]") {
  // The encoder casts engine enums to their integer values: both sides must number alike.
  CHECK(static_cast<int>(triage::Classification::kSaturated) == v1::CLASSIFICATION_SATURATED);
  CHECK(static_cast<int>(triage::Classification::kInconclusive) == v1::CLASSIFICATION_INCONCLUSIVE);
  CHECK(static_cast<int>(triage::Decision::kD7HardwareLimit) == v1::DECISION_D7_HARDWARE_LIMIT);
  CHECK(static_cast<int>(triage::Outcome::kNotEvaluated) == v1::OUTCOME_NOT_EVALUATED);
  CHECK(static_cast<int>(triage::Trust::kUntrusted) == v1::TRUST_UNTRUSTED);
  CHECK(static_cast<int>(triage::ReplayMode::kNone) == v1::REPLAY_MODE_NONE);
  CHECK(static_cast<int>(triage::ClockControl::kNone) == v1::CLOCK_CONTROL_NONE);
  // Every Limiter value the engine can emit must exist in the schema with the same number.
  const auto* desc = v1::Limiter_descriptor();
  for (int v = 0; v < 256; ++v) {
    auto name = triage::to_string(static_cast<triage::Limiter>(v));
    bool engine_has = name != "unknown" && name != "?";
    if (engine_has) {
      INFO("limiter value " << v << " (" << name << ")");
      CHECK(desc->FindValueByNumber(v) != nullptr);
    }
  }
}

TEST_CASE("wire: strings that are not UTF-8 are repaired, not written (the file stays readable)",
          "[wire]") {
  // A command line and a kernel name as the agent may meet them: Latin-1 bytes, a lone
  // continuation byte, a truncated sequence. Written raw they would make libprotobuf reject the
  // record and every record after it.
  wire::RecordEncoder enc;
  wire::SessionInfo s;
  s.host = "h\xe9te";
  s.command_line = {"./app", "--name=caf\xe9", "\x80tail"};
  std::string bytes = enc.session(s);
  wire::Notice n{wire::Severity::kWarning, "code", "broken \xe2\x82", 1};
  bytes += enc.notice(n);
  wire::KernelRecord k;
  k.input.mangled_name = "_Z6kernel\xff";
  k.input.function_name = "kernel\xff";
  k.status = wire::ProfileStatus::kFailed;
  k.status_detail = "detail \xc3";
  bytes += enc.kernel(k);
  wire::SessionEnd end;
  end.kernels.push_back({"_Z6kernel\xff", 1, 0, 0, 0, 1, 0});
  bytes += enc.session_end(end);

  tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  REQUIRE(r.file.records_size() >= 4);
  const v1::SessionHeader& hdr = r.file.records(0).session();
  CHECK(hdr.host() == "h\xEF\xBF\xBDte");
  REQUIRE(hdr.command_line_size() == 3);
  CHECK(hdr.command_line(1) == "--name=caf\xEF\xBF\xBD");
  CHECK(hdr.command_line(2) == "\xEF\xBF\xBDtail");
  bool saw_kernel = false, saw_end = false;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_kernel()) {
      saw_kernel = true;
      CHECK(tools::lookup(r, rec.kernel().function_name_iid()) == "kernel\xEF\xBF\xBD");
      CHECK(rec.kernel().status_detail() == "detail \xEF\xBF\xBD");
    }
    if (rec.has_session_end()) saw_end = true;
  }
  CHECK(saw_kernel);
  CHECK(saw_end);
}
