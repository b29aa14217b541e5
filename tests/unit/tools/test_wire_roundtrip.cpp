// The agent's protozero encoder against the schema: its bytes are parsed with the classes protoc
// generated from proto/cutriage/v1/cutriage.proto and compared field by field. A field number or
// type that drifts between writer.cpp and the schema fails here.
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "catch.h"
#include "cutriage/v1/cutriage.pb.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "pc_sampling_fixture.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_wire_roundtrip {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;  // Catch2 v3; v2 has it at global scope
#endif

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
  s.segment_index = 3;
  s.mode = "always-on";
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
  d.library = "cuBLAS";
  // Always-on: metrics assembled from two launches without replay; the second has no block or
  // duration (zeros must stay zeros, and the launch must stay in the list).
  k.input.assembled_launches.push_back({15, {264, 2, 1}, {256, 1, 1}, 8192, 2450.5, 1, 12, 4242, 1700000000000000001});
  k.input.assembled_launches.push_back({0, {0, 0, 0}, {0, 0, 0}, 0, 0.0, 2, 0});
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
  CHECK(s.segment_index() == 3);
  CHECK(s.mode() == "always-on");
  CHECK_FALSE(s.has_job());  // no launcher variable: no job place

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
  REQUIRE(kp->assembled_launches_size() == 2);
  const v1::AssembledLaunch& a0 = kp->assembled_launches(0);
  CHECK(a0.launch_index() == 15);
  CHECK(a0.grid().x() == 264);
  CHECK(a0.grid().y() == 2);
  CHECK(a0.grid().z() == 1);
  CHECK(a0.block().x() == 256);
  CHECK(a0.block().y() == 1);
  CHECK(a0.dynamic_shared_bytes() == 8192);
  CHECK(a0.duration_ns() == 2450.5);
  CHECK(a0.metric_group() == 1);
  CHECK(a0.metrics() == 12);
  CHECK(a0.earlier_pid() == 4242);  // resumed from an earlier process
  CHECK(a0.earlier_start_unix_ns() == 1700000000000000001);
  const v1::AssembledLaunch& a1 = kp->assembled_launches(1);
  CHECK(a1.launch_index() == 0);
  CHECK_FALSE(a1.has_grid());
  CHECK_FALSE(a1.has_block());
  CHECK(a1.dynamic_shared_bytes() == 0);
  CHECK(a1.duration_ns() == 0);
  CHECK(a1.metric_group() == 2);
  CHECK(a1.metrics() == 0);
  CHECK(a1.earlier_pid() == 0);

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
  CHECK(d.library() == "cuBLAS");
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

// ---- always-on records: SessionEnd.overhead, ControlRequest (SYNTHETIC values) ----

TEST_CASE("wire: the job place parses, rank 0 told apart from no rank", "[wire]") {
  wire::SessionInfo info = sample_session();
  info.job = wire::JobPlace{0, 2, 0, true, "RANK"};  // every number 0 but the world size
  wire::RecordEncoder enc;
  v1::File file;
  REQUIRE(file.ParseFromString(enc.session(info)));
  const v1::SessionHeader& s = file.records(0).session();
  REQUIRE(s.has_job());
  CHECK(s.job().rank() == 0);
  CHECK(s.job().world_size() == 2);
  CHECK(s.job().local_rank() == 0);
  CHECK(s.job().has_local_rank());
  CHECK(s.job().rank_variable() == "RANK");

  // PMI: a rank and world size, no local rank; still a present message with rank 0.
  info.job = wire::JobPlace{0, 0, 0, false, "PMI_RANK"};
  v1::File pmi;
  REQUIRE(pmi.ParseFromString(wire::RecordEncoder().session(info)));
  REQUIRE(pmi.records(0).session().has_job());
  CHECK_FALSE(pmi.records(0).session().job().has_local_rank());
  CHECK(pmi.records(0).session().job().rank_variable() == "PMI_RANK");
}

TEST_CASE("wire: session end overhead and control requests parse with the generated classes",
          "[wire][always-on]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(sample_session());
  wire::ControlRequest started;
  started.id = 1;
  started.source = wire::ControlSource::kSignal;
  started.target = "top:3";
  started.window_seconds = 2.5;
  started.requested_unix_ns = 1'700'000'000'100'000'000ULL;
  started.state = wire::ControlState::kStarted;
  bytes += enc.control(started);
  wire::ControlRequest done = started;
  done.ended_unix_ns = 1'700'000'002'600'000'000ULL;
  done.state = wire::ControlState::kExpired;
  done.family_ids = {7, 0, 3};
  done.profiled_launches = 5;
  done.detail = "family 9 was not launched in the window";
  bytes += enc.control(done);
  bytes += enc.control({});  // nothing set: still a record
  wire::SessionEnd end;
  end.kernel_launches = 100;
  wire::OverheadStats o;
  o.budget_fraction = 0.005;
  o.max_profiles_per_second = 20;
  o.wall_ns = 10'000'000'000ULL;
  o.spent_ns = 12'345'678;
  o.max_window_spent_ns = 4'000'000;
  o.window_ns = 1'000'000'000;
  o.admitted = 120;
  o.deferred = 30;
  o.group_switches = 45;
  end.overhead = o;
  bytes += enc.session_end(end);
  wire::SessionEnd spent_nothing;  // always-on, all zero: the overhead message stays
  spent_nothing.overhead = wire::OverheadStats{};
  bytes += enc.session_end(spent_nothing);
  bytes += enc.session_end(wire::SessionEnd{});  // not always-on: no overhead

  v1::File file;
  REQUIRE(file.ParseFromString(bytes));
  std::vector<const v1::ControlRequest*> controls;
  std::vector<const v1::SessionEnd*> ends;
  for (const v1::Record& rec : file.records()) {
    if (rec.has_control()) controls.push_back(&rec.control());
    if (rec.has_session_end()) ends.push_back(&rec.session_end());
  }
  REQUIRE(controls.size() == 3);
  const v1::ControlRequest& c0 = *controls[0];
  CHECK(c0.id() == 1);
  CHECK(c0.source() == v1::CONTROL_SOURCE_SIGNAL);
  CHECK(c0.target() == "top:3");
  CHECK(c0.window_seconds() == 2.5);
  CHECK(c0.requested_unix_ns() == 1'700'000'000'100'000'000ULL);
  CHECK(c0.ended_unix_ns() == 0);
  CHECK(c0.state() == v1::CONTROL_STATE_STARTED);
  CHECK(c0.family_ids_size() == 0);
  CHECK(c0.profiled_launches() == 0);
  CHECK(c0.detail().empty());
  const v1::ControlRequest& c1 = *controls[1];
  CHECK(c1.id() == 1);
  CHECK(c1.ended_unix_ns() == 1'700'000'002'600'000'000ULL);
  CHECK(c1.state() == v1::CONTROL_STATE_EXPIRED);
  REQUIRE(c1.family_ids_size() == 3);
  CHECK(c1.family_ids(0) == 7);
  CHECK(c1.family_ids(1) == 0);
  CHECK(c1.family_ids(2) == 3);
  CHECK(c1.profiled_launches() == 5);
  CHECK(c1.detail() == "family 9 was not launched in the window");
  CHECK(controls[2]->id() == 0);
  CHECK(controls[2]->state() == v1::CONTROL_STATE_UNSPECIFIED);

  REQUIRE(ends.size() == 3);
  CHECK(ends[0]->kernel_launches() == 100);
  REQUIRE(ends[0]->has_overhead());
  const v1::OverheadStats& ov = ends[0]->overhead();
  CHECK(ov.budget_fraction() == 0.005);
  CHECK(ov.max_profiles_per_second() == 20);
  CHECK(ov.wall_ns() == 10'000'000'000ULL);
  CHECK(ov.spent_ns() == 12'345'678);
  CHECK(ov.max_window_spent_ns() == 4'000'000);
  CHECK(ov.window_ns() == 1'000'000'000);
  CHECK(ov.admitted() == 120);
  CHECK(ov.deferred() == 30);
  CHECK(ov.group_switches() == 45);
  CHECK(ends[1]->has_overhead());
  CHECK(ends[1]->overhead().spent_ns() == 0);
  CHECK_FALSE(ends[2]->has_overhead());

  // The reader keeps each request's latest state, by id.
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(r.segment_index == 3);
  const auto requests = tools::control_requests(r);
  REQUIRE(requests.size() == 2);
  CHECK(requests[0]->id() == 0);
  CHECK(requests[1]->id() == 1);
  CHECK(requests[1]->state() == v1::CONTROL_STATE_EXPIRED);
  CHECK(requests[1]->profiled_launches() == 5);
}

TEST_CASE("wire: the always-on enums of the records and the schema agree", "[wire][always-on]") {
  CHECK(static_cast<int>(wire::ControlSource::kApi) == v1::CONTROL_SOURCE_API);
  CHECK(static_cast<int>(wire::ControlSource::kSignal) == v1::CONTROL_SOURCE_SIGNAL);
  CHECK(static_cast<int>(wire::ControlSource::kFile) == v1::CONTROL_SOURCE_FILE);
  CHECK(v1::ControlSource_MAX == static_cast<int>(wire::ControlSource::kFile));
  CHECK(static_cast<int>(wire::ControlState::kStarted) == v1::CONTROL_STATE_STARTED);
  CHECK(static_cast<int>(wire::ControlState::kCompleted) == v1::CONTROL_STATE_COMPLETED);
  CHECK(static_cast<int>(wire::ControlState::kExpired) == v1::CONTROL_STATE_EXPIRED);
  CHECK(static_cast<int>(wire::ControlState::kRejected) == v1::CONTROL_STATE_REJECTED);
  CHECK(v1::ControlState_MAX == static_cast<int>(wire::ControlState::kRejected));
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
  wire::ControlRequest control;
  control.id = 1;
  control.target = "regex:caf\xe9";
  control.detail = "no kernel matched \xc3";
  bytes += enc.control(control);

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
  const auto requests = tools::control_requests(r);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0]->target() == "regex:caf\xEF\xBF\xBD");
  CHECK(requests[0]->detail() == "no kernel matched \xEF\xBF\xBD");
}

// ---- trace records (KernelFamily, TraceChunk, TraceSummary) and the fields added with them ----
// Inputs are SYNTHETIC (tests/support/trace_fixture.h and below): made up to cover every field.

TEST_CASE("wire: trace records parse with the generated classes, field by field", "[wire][trace]") {
  wire::RecordEncoder enc;
  wire::SessionInfo session = cutriage::testing::synthetic_trace_session();
  std::string bytes = enc.session(session);
  bytes += enc.family({7, "_Z4gemmILi128EEvPKfS1_Pf", "gemm<128>", 1, {256, 2, 1}});

  wire::TraceChunk chunk;
  chunk.kernels.push_back({7, 1'000, 3'500, 13, 2, 99, {264, 2, 1}, 5, 77, true, "train/step"});
  chunk.kernels.push_back({7, 4'000, 4'100, 13, 2, 100, {1, 1, 1}, 0, 0, false, ""});
  chunk.copies.push_back({triage::CopyKind::kDeviceToHost, 5'000, 6'000, 1 << 20, 1, 14, 2, 101, true, 5});
  chunk.nvtx_ranges.push_back({"step", 500, 9'000, 4242, 1, "loader"});
  chunk.nvtx_ranges.push_back({"train", 400, 9'500, 4242, 0, ""});
  chunk.dropped_records = 3;
  bytes += enc.trace_chunk(chunk);

  wire::TraceSummary summary = cutriage::testing::synthetic_trace_summary();
  summary.dropped_records = 3;
  summary.timeline.late_records = 2;
  summary.timeline.devices[0].launch_bound.push_back({100, 900, 60, 300, 5});
  summary.selection = {wire::SelectionMode::kShare, 0, 0.05, "train", "warmup"};
  bytes += enc.trace_summary(summary);

  wire::KernelRecord k = sample_kernel();
  k.family_id = 7;
  k.revision = 2;
  bytes += enc.kernel(k);

  v1::File file;
  REQUIRE(file.ParseFromString(bytes));
  tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  REQUIRE(r.file.records_size() == file.records_size());

  CHECK(file.records(0).session().trace_clock_at_start_ns() == session.trace_clock_at_start_ns);

  const v1::KernelFamily* fam = tools::find_family(r, 7);
  REQUIRE(fam != nullptr);
  CHECK(fam->id() == 7);
  CHECK(tools::lookup(r, fam->mangled_name_iid()) == "_Z4gemmILi128EEvPKfS1_Pf");
  CHECK(tools::lookup(r, fam->display_name_iid()) == "gemm<128>");
  CHECK(fam->device() == 1);
  CHECK(fam->block().x() == 256);
  CHECK(fam->block().y() == 2);
  CHECK(fam->block().z() == 1);

  REQUIRE(r.trace_records.size() == 1);
  const v1::TraceChunk& tc = r.file.records(r.trace_records[0]).trace();
  REQUIRE(tc.kernels_size() == 2);
  const v1::KernelExecution& ke = tc.kernels(0);
  CHECK(ke.family_id() == 7);
  CHECK(ke.start_ns() == 1'000);
  CHECK(ke.end_ns() == 3'500);
  CHECK(ke.stream_id() == 13);
  CHECK(ke.context_id() == 2);
  CHECK(ke.correlation_id() == 99);
  CHECK(ke.grid().x() == 264);
  CHECK(ke.grid().y() == 2);
  CHECK(ke.grid().z() == 1);
  CHECK(ke.graph_id() == 5);
  CHECK(ke.graph_node_id() == 77);
  CHECK(ke.replayed());
  CHECK(tools::lookup(r, ke.nvtx_path_iid()) == "train/step");
  CHECK_FALSE(tc.kernels(1).replayed());
  CHECK(tc.kernels(1).nvtx_path_iid() == 0);
  CHECK(tc.kernels(1).graph_id() == 0);
  REQUIRE(tc.copies_size() == 1);
  const v1::CopyExecution& ce = tc.copies(0);
  CHECK(ce.kind() == v1::CopyExecution::KIND_DEVICE_TO_HOST);
  CHECK(ce.start_ns() == 5'000);
  CHECK(ce.end_ns() == 6'000);
  CHECK(ce.bytes() == 1 << 20);
  CHECK(ce.device() == 1);
  CHECK(ce.stream_id() == 14);
  CHECK(ce.context_id() == 2);
  CHECK(ce.correlation_id() == 101);
  CHECK(ce.pageable());
  CHECK(ce.graph_id() == 5);
  REQUIRE(tc.nvtx_ranges_size() == 2);
  const v1::NvtxRange& nr = tc.nvtx_ranges(0);
  CHECK(tools::lookup(r, nr.name_iid()) == "step");
  CHECK(nr.start_ns() == 500);
  CHECK(nr.end_ns() == 9'000);
  CHECK(nr.thread_id() == 4242);
  CHECK(nr.depth() == 1);
  CHECK(tools::lookup(r, nr.domain_iid()) == "loader");
  CHECK(tc.nvtx_ranges(1).domain_iid() == 0);  // default domain
  CHECK(tc.dropped_records() == 3);

  const v1::TraceSummary* ts = tools::trace_summary(r);
  REQUIRE(ts != nullptr);
  const triage::TimelineSummary& t = summary.timeline;
  REQUIRE(ts->families_size() == static_cast<int>(t.families.size()));
  for (int i = 0; i < ts->families_size(); ++i) {
    const v1::FamilyStats& fs = ts->families(i);
    const triage::FamilyTimeStats& in = t.families[static_cast<size_t>(i)];
    INFO("family " << in.family);
    CHECK(fs.family_id() == in.family);  // the ranking order is kept
    CHECK(fs.launches() == in.launches);
    CHECK(fs.replayed_launches() == in.replayed_launches);
    CHECK(fs.graph_launches() == in.graph_launches);
    CHECK(fs.concurrent_launches() == in.concurrent_launches);
    CHECK(fs.total_ns() == in.total_ns);
    CHECK(fs.mean_ns() == in.mean_ns());
    CHECK(fs.p50_ns() == in.durations.quantile(0.5));
    CHECK(fs.p95_ns() == in.durations.quantile(0.95));
    CHECK(fs.min_ns() == in.durations.min());
    CHECK(fs.max_ns() == in.durations.max());
    CHECK(fs.time_share() == t.time_share(in));
    CHECK(fs.amdahl_ceiling() == t.amdahl_ceiling(in));
    const wire::FamilyOutcome& o = summary.outcomes.at(in.family);
    CHECK(static_cast<int>(fs.selection()) == static_cast<int>(o.selection));
    CHECK(fs.selection_detail() == o.selection_detail);
    CHECK(fs.profiled_launch_index() == o.profiled_launch_index);
    REQUIRE(fs.nvtx_path_iids_size() == static_cast<int>(o.nvtx_paths.size()));
    for (int p = 0; p < fs.nvtx_path_iids_size(); ++p) {
      CHECK(tools::lookup(r, fs.nvtx_path_iids(p)) == o.nvtx_paths[static_cast<size_t>(p)]);
    }
  }
  // Spot values, so the comparison above is not only encoder against itself.
  CHECK(ts->families(0).time_share() == Approx(250.0 / 573.0));
  CHECK(ts->families(1).mean_ns() == 52'000);  // 208 us over 4 unreplayed launches
  CHECK(ts->families(1).p50_ns() == Approx(51'500).epsilon(0.02));
  CHECK(ts->families(1).selection() == v1::FamilyStats::SELECTION_PROFILED);
  CHECK(ts->families(1).profiled_launch_index() == cutriage::testing::SyntheticTrace::kProfiledLaunch);

  REQUIRE(ts->devices_size() == 2);
  const v1::DeviceTimeline& d = ts->devices(0);
  const triage::DeviceTimeStats& din = t.devices[0];
  CHECK(d.device() == din.device);
  CHECK(d.first_start_ns() == din.first_start_ns);
  CHECK(d.last_end_ns() == din.last_end_ns);
  CHECK(d.busy_ns() == din.busy_ns);
  CHECK(d.kernel_busy_ns() == din.kernel_busy_ns);
  CHECK(d.copy_busy_ns() == din.copy_busy_ns);
  CHECK(d.copy_only_ns() == din.copy_only_ns);
  CHECK(d.copy_overlapped_ns() == din.copy_overlapped_ns);
  CHECK(d.pageable_copy_ns() == din.pageable_copy_ns);
  CHECK(d.kernels() == din.kernels);
  CHECK(d.copies() == din.copies);
  CHECK(d.gaps() == din.gaps);
  CHECK(d.gap_ns() == din.gap_ns);
  REQUIRE(d.largest_gaps_size() == 1);
  CHECK(d.largest_gaps(0).start_ns() == din.largest_gaps[0].start_ns);
  CHECK(d.largest_gaps(0).end_ns() == din.largest_gaps[0].end_ns);
  REQUIRE(d.launch_bound_size() == 1);
  CHECK(d.launch_bound(0).start_ns() == 100);
  CHECK(d.launch_bound(0).end_ns() == 900);
  CHECK(d.launch_bound(0).kernels() == 60);
  CHECK(d.launch_bound(0).busy_ns() == 300);
  CHECK(d.launch_bound(0).mean_kernel_ns() == 5);
  CHECK(ts->devices(1).device() == 1);

  // Findings are Checks, encoded like the diagnoses' checks.
  REQUIRE(ts->findings_size() == 3);
  const v1::Check& fired = ts->findings(0);
  CHECK(fired.rule_id() == "d2a.idle_gaps");
  CHECK(fired.decision() == v1::DECISION_D2A_DISPATCH);
  CHECK(fired.title() == "GPU idle between kernels");
  CHECK(fired.outcome() == v1::OUTCOME_FIRED);
  CHECK(fired.reason() == "GPU 0 idle 62.5% of its span");
  REQUIRE(fired.evidence_size() == 2);
  CHECK(fired.evidence(0).metric() == "cutriage__gpu_idle_pct");
  CHECK(fired.evidence(0).value() == 62.5);
  CHECK(fired.evidence(0).unit() == "%");
  CHECK(fired.evidence(0).derived());
  REQUIRE(fired.thresholds_size() == 1);
  CHECK(fired.thresholds(0).name() == "d2a.idle_gaps.max_idle_pct");
  CHECK(fired.thresholds(0).value() == 20);
  CHECK(fired.finding().limiter() == v1::LIMITER_DISPATCH_GAPS);
  CHECK(fired.finding().summary() == "GPU 0 idle 62.5% of the span in 6 gaps");
  CHECK(fired.finding().next_action() == "Keep the GPU fed: batch small launches, use CUDA graphs");
  CHECK(fired.finding().estimated_speedup() == 2.67);
  CHECK(fired.finding().estimate_basis() == "1 / (1 - 0.625)");
  CHECK(ts->findings(1).outcome() == v1::OUTCOME_NOT_FIRED);
  CHECK(ts->findings(2).outcome() == v1::OUTCOME_NOT_EVALUATED);
  CHECK(ts->findings(2).reason() == "no copy ran next to a kernel");
  CHECK_FALSE(ts->findings(2).has_finding());

  CHECK(ts->total_kernel_ns() == 573'000);
  CHECK(ts->kernel_executions() == 10);
  CHECK(ts->copy_executions() == 2);
  CHECK(ts->dropped_records() == 3);
  CHECK(ts->late_records() == 2);
  CHECK(ts->timeline_kernel_events() == 10);
  CHECK(ts->selection().mode() == v1::SelectionPolicy::MODE_SHARE);
  CHECK(ts->selection().min_share() == 0.05);
  CHECK(ts->selection().nvtx_include() == "train");
  CHECK(ts->selection().nvtx_exclude() == "warmup");

  const auto kernels = tools::current_kernels(r);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]->family_id() == 7);
  CHECK(kernels[0]->revision() == 2);

  // Interned strings: each defined once, before its first use.
  std::set<uint64_t> defined;
  for (const v1::Record& rec : file.records()) {
    if (!rec.has_interned()) continue;
    CHECK(defined.insert(rec.interned().id()).second);
  }
}

TEST_CASE("wire: trace strings are interned before use and repaired to UTF-8", "[wire][trace]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(cutriage::testing::synthetic_trace_session());
  bytes += enc.family({1, "_Z1k\xff", "k<\xe9>", 0, {32, 1, 1}});
  wire::TraceChunk chunk;
  chunk.kernels.push_back({1, 10, 20, 7, 1, 1, {1, 1, 1}, 0, 0, false, "outer/\xc3"});
  chunk.nvtx_ranges.push_back({"na\xe9me", 5, 25, 1, 0, "dom\x80"});
  bytes += enc.trace_chunk(chunk);
  // The same strings again: no new InternedString records.
  const std::string again = enc.trace_chunk(chunk);

  tools::ReadResult r = tools::read_cutriage_bytes(bytes + again);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const v1::KernelFamily* fam = tools::find_family(r, 1);
  REQUIRE(fam != nullptr);
  CHECK(tools::lookup(r, fam->mangled_name_iid()) == "_Z1k\xEF\xBF\xBD");
  CHECK(tools::lookup(r, fam->display_name_iid()) == "k<\xEF\xBF\xBD>");
  REQUIRE(r.trace_records.size() == 2);
  const v1::TraceChunk& tc = r.file.records(r.trace_records[0]).trace();
  CHECK(tools::lookup(r, tc.kernels(0).nvtx_path_iid()) == "outer/\xEF\xBF\xBD");
  CHECK(tools::lookup(r, tc.nvtx_ranges(0).name_iid()) == "na\xEF\xBF\xBDme");
  CHECK(tools::lookup(r, tc.nvtx_ranges(0).domain_iid()) == "dom\xEF\xBF\xBD");
  // Every id a trace record uses was defined by an earlier record.
  std::set<uint64_t> defined;
  for (const v1::Record& rec : r.file.records()) {
    if (rec.has_interned()) defined.insert(rec.interned().id());
    if (!rec.has_trace()) continue;
    for (const auto& k : rec.trace().kernels()) CHECK(defined.count(k.nvtx_path_iid()) == 1);
    for (const auto& n : rec.trace().nvtx_ranges()) {
      CHECK(defined.count(n.name_iid()) == 1);
      CHECK(defined.count(n.domain_iid()) == 1);
    }
  }
  v1::File tail;
  REQUIRE(tail.ParseFromString(again));
  CHECK(tail.records_size() == 1);
  CHECK(tail.records(0).has_trace());
}

TEST_CASE("wire: statistics of no sample are absent, never NaN or infinite", "[wire][trace]") {
  wire::RecordEncoder enc;
  wire::TraceSummary s;
  triage::FamilyTimeStats only;  // the only family, every launch profiled: no duration, no ceiling
  only.family = 1;
  only.launches = 2;
  only.replayed_launches = 2;
  s.timeline.families.push_back(only);
  triage::DeviceTimeStats d;
  d.busy_ns = std::numeric_limits<double>::quiet_NaN();
  d.gap_ns = std::numeric_limits<double>::infinity();
  s.timeline.devices.push_back(d);
  v1::File file;
  REQUIRE(file.ParseFromString(enc.trace_summary(s)));
  REQUIRE(file.records_size() == 1);
  const v1::TraceSummary& ts = file.records(0).trace_summary();
  REQUIRE(ts.families_size() == 1);
  CHECK(ts.families(0).launches() == 2);
  CHECK(ts.families(0).mean_ns() == 0);
  CHECK(ts.families(0).p50_ns() == 0);
  CHECK(ts.families(0).amdahl_ceiling() == 1);  // no kernel time at all: share 0
  REQUIRE(ts.devices_size() == 1);  // device 0 with nothing measured is still listed
  CHECK(ts.devices(0).device() == 0);
  CHECK(ts.devices(0).busy_ns() == 0);
  CHECK(ts.devices(0).gap_ns() == 0);

  // The only family of the run: deleting it has no finite bound, written as 0.
  wire::TraceSummary one;
  one.timeline.families.push_back(cutriage::testing::synthetic_family_stats(1, 0, 1, 0, {500}));
  one.timeline.total_kernel_ns = 500;
  v1::File only_file;
  REQUIRE(only_file.ParseFromString(wire::RecordEncoder().trace_summary(one)));
  CHECK(only_file.records(0).trace_summary().families(0).time_share() == 1);
  CHECK(only_file.records(0).trace_summary().families(0).amdahl_ceiling() == 0);
}

TEST_CASE("wire: a record with nothing set stays a record, and the records after it stay readable",
          "[wire][trace]") {
  // protozero drops empty nested messages; a Record without its payload would read as corrupt and
  // end the salvage (an empty trace batch, an empty summary of a run that launched no kernel).
  wire::RecordEncoder enc;
  std::string bytes = enc.session(cutriage::testing::synthetic_trace_session());
  bytes += enc.trace_chunk({});
  bytes += enc.trace_summary({});
  bytes += enc.notice({});
  bytes += enc.family({});
  wire::KernelRecord k;
  k.input.function_name = "after";
  bytes += enc.kernel(k);
  tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  CHECK(r.trace_records.size() == 1);
  CHECK(tools::trace_summary(r) != nullptr);
  CHECK(r.family_records.count(0) == 1);
  REQUIRE(tools::current_kernels(r).size() == 1);
  CHECK(tools::lookup(r, tools::current_kernels(r)[0]->function_name_iid()) == "after");
}

TEST_CASE("wire: the trace enums of the engine, the records and the schema agree", "[wire][trace]") {
  CHECK(static_cast<int>(triage::CopyKind::kHostToDevice) == v1::CopyExecution::KIND_HOST_TO_DEVICE);
  CHECK(static_cast<int>(triage::CopyKind::kPeer) == v1::CopyExecution::KIND_PEER);
  CHECK(static_cast<int>(triage::CopyKind::kMemset) == v1::CopyExecution::KIND_MEMSET);
  CHECK(static_cast<int>(triage::CopyKind::kOther) == v1::CopyExecution::KIND_OTHER);
  CHECK(static_cast<int>(wire::SelectionMode::kNone) == v1::SelectionPolicy::MODE_NONE);
  CHECK(static_cast<int>(wire::SelectionMode::kShare) == v1::SelectionPolicy::MODE_SHARE);
  CHECK(static_cast<int>(wire::FamilySelection::kGraphOnly) == v1::FamilyStats::SELECTION_GRAPH_ONLY);
  CHECK(static_cast<int>(wire::FamilySelection::kTraceOnly) == v1::FamilyStats::SELECTION_TRACE_ONLY);
  CHECK(static_cast<int>(wire::FamilySelection::kMostlyInGraphs) == v1::FamilyStats::SELECTION_MOSTLY_IN_GRAPHS);
  CHECK(static_cast<int>(wire::FamilySelection::kRankedAfterLastLaunch) ==
        v1::FamilyStats::SELECTION_RANKED_AFTER_LAST_LAUNCH);
  CHECK(v1::FamilyStats::Selection_MAX == static_cast<int>(wire::FamilySelection::kRankedAfterLastLaunch));
  CHECK(v1::CopyExecution::Kind_MAX == static_cast<int>(triage::CopyKind::kOther));
}

TEST_CASE("wire: PC sampling parses with the generated classes, field by field (synthetic samples)",
          "[wire][pc]") {
  using P = cutriage::testing::SyntheticPc;
  const wire::KernelRecord k = cutriage::testing::synthetic_pc_kernel();
  wire::RecordEncoder enc;
  std::string bytes = enc.session(cutriage::testing::synthetic_pc_session());
  bytes += enc.kernel(k);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  // Interned definitions precede the record that uses them.
  int kernel_record = -1;
  for (int i = 0; i < r.file.records_size(); ++i) {
    if (r.file.records(i).has_kernel()) kernel_record = i;
  }
  REQUIRE(kernel_record == r.file.records_size() - 1);
  const v1::KernelProfile& kp = r.file.records(kernel_record).kernel();
  REQUIRE(kp.has_pc_sampling());
  const v1::PcSampling& pcs = kp.pc_sampling();
  CHECK(pcs.from_launch_index() == P::kSampledLaunch);
  CHECK(pcs.sampling_period_log2() == 12);
  CHECK(pcs.total_samples() == P::kSamples);
  CHECK(pcs.dropped_samples() == 7);
  CHECK_FALSE(pcs.hardware_buffer_full());
  CHECK(pcs.has_line_info());
  CHECK(pcs.error().empty());
  CHECK(pcs.sm_arch() == "sm_90");

  // Hottest first, each sample counted once: the _not_issued subset of long_scoreboard and the
  // smsp__pcsamp_sample_count total do not weigh in the order.
  const std::vector<uint64_t> expected_order = {0x0110, 0x0130, 0x00d0, 0x01a0, 0x0010, 0x0020, 0x0040, 0x0180};
  REQUIRE(pcs.pcs_size() == static_cast<int>(expected_order.size()));
  for (int i = 0; i < pcs.pcs_size(); ++i) {
    INFO("SampledPc " << i);
    CHECK(pcs.pcs(i).pc_offset() == expected_order[static_cast<size_t>(i)]);
  }
  // Every field of every SampledPc against the input line it came from.
  const triage::PcSampleSummary& in = *k.input.pc_samples;
  for (const v1::SampledPc& pc : pcs.pcs()) {
    const triage::PcSampleLine* src = nullptr;
    for (const triage::PcSampleLine& l : in.lines) {
      if (l.pc_offset == pc.pc_offset() && l.function == tools::lookup(r, pc.function_iid())) src = &l;
    }
    INFO("pc " << pc.pc_offset());
    REQUIRE(src != nullptr);
    CHECK(tools::lookup(r, pc.file_iid()) == src->file);
    CHECK(pc.line() == src->line);
    CHECK(pc.sass() == src->sass);
    REQUIRE(pc.stalls_size() == static_cast<int>(src->samples_by_reason.size()));
    uint64_t previous = UINT64_MAX;
    for (const v1::StallCount& sc : pc.stalls()) {
      const std::string reason(tools::lookup(r, sc.reason_iid()));
      REQUIRE(src->samples_by_reason.count(reason) == 1);
      CHECK(sc.samples() == src->samples_by_reason.at(reason));
      CHECK(sc.samples() <= previous);  // most samples first
      previous = sc.samples();
    }
  }
  const v1::SampledPc& store = pcs.pcs(3);
  CHECK(store.sass() == "STG.E desc[UR4][R2.64], R9");
  CHECK(tools::lookup(r, store.function_iid()) == P::kKernel);
  CHECK(tools::lookup(r, pcs.pcs(4).function_iid()) == P::kHelper);
  CHECK(tools::lookup(r, pcs.pcs(4).file_iid()) == P::kHeader);
  CHECK(pcs.pcs(4).line() == 12);
  CHECK(tools::lookup(r, pcs.pcs(0).stalls(0).reason_iid()) ==
        "smsp__pcsamp_warps_issue_stalled_long_scoreboard");

  REQUIRE(pcs.code_size() == 2);
  CHECK(tools::lookup(r, pcs.code(0).function_iid()) == P::kKernel);
  CHECK(pcs.code(0).text() == std::string(k.pc_code[0].text.begin(), k.pc_code[0].text.end()));
  CHECK(pcs.code(0).text().size() == P::kKernelCodeBytes);
  CHECK(tools::lookup(r, pcs.code(1).function_iid()) == P::kHelper);
  CHECK(pcs.code(1).text() == std::string(k.pc_code[1].text.begin(), k.pc_code[1].text.end()));

  // The same kernel again: its names, files and warp states are interned already.
  const std::string again = enc.kernel(k);
  v1::File second;
  REQUIRE(second.ParseFromString(again));
  REQUIRE(second.records_size() == 1);
  CHECK(second.records(0).has_kernel());
}

TEST_CASE("wire: PC sampling that failed, or that holds nothing, is still written (synthetic)", "[wire][pc]") {
  wire::RecordEncoder enc;
  std::string bytes = enc.session(cutriage::testing::synthetic_pc_session());
  bytes += enc.kernel(cutriage::testing::synthetic_pc_kernel_failed());
  wire::KernelRecord empty;  // sampled, no sample, no error: present, every field at its default
  empty.input.mangled_name = "_Z5emptyv";
  empty.input.pc_samples = triage::PcSampleSummary{};
  bytes += enc.kernel(empty);
  wire::KernelRecord code_only;  // code without samples has nowhere to go: not written
  code_only.input.mangled_name = "_Z4codev";
  code_only.pc_code = {{"_Z4codev", {1, 2, 3}}};
  code_only.pc_sm_arch = "sm_90";
  bytes += enc.kernel(code_only);
  wire::KernelRecord first_pc;  // a SampledPc at offset 0 with nothing else set survives
  first_pc.input.mangled_name = "_Z5firstv";
  first_pc.input.pc_samples = triage::PcSampleSummary{};
  first_pc.input.pc_samples->lines.emplace_back();
  bytes += enc.kernel(first_pc);

  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const auto kernels = tools::current_kernels(r);
  REQUIRE(kernels.size() == 4);
  REQUIRE(kernels[0]->has_pc_sampling());
  CHECK(kernels[0]->pc_sampling().error() == "cuptiPCSamplingEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  CHECK(kernels[0]->pc_sampling().from_launch_index() == 41);
  CHECK(kernels[0]->pc_sampling().pcs_size() == 0);
  CHECK(kernels[1]->has_pc_sampling());
  CHECK(kernels[1]->pc_sampling().pcs_size() == 0);
  CHECK_FALSE(kernels[2]->has_pc_sampling());
  REQUIRE(kernels[3]->has_pc_sampling());
  REQUIRE(kernels[3]->pc_sampling().pcs_size() == 1);
  CHECK(kernels[3]->pc_sampling().pcs(0).pc_offset() == 0);
}

}  // namespace test_wire_roundtrip
