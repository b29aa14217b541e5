#include "cutriage/wire/writer.h"
#include "cutriage/wire/schema.h"
#include "cutriage/wire/utf8.h"
#include "schema_checks.h"

#include <protozero/pbf_writer.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace cutriage::wire {

namespace {

// Field numbers come from schema.h, which the build generates from cutriage.proto: schema::<Message>
// is the message being written. Which fields are written, and how, is this file's choice;
// tests/unit/tools/test_wire_roundtrip.cpp parses the output with libprotobuf, field by field.

// Every string goes through here: a field that is not UTF-8 would make the whole record
// unreadable (see utf8.h), so such bytes are replaced, never written.
void put_text(protozero::pbf_writer& w, protozero::pbf_tag_type tag, std::string_view s) {
  if (is_valid_utf8(s)) {
    w.add_string(tag, s.data(), s.size());
  } else {
    std::string repaired = valid_utf8(s);
    w.add_string(tag, repaired.data(), repaired.size());
  }
}
void put_string(protozero::pbf_writer& w, protozero::pbf_tag_type tag, std::string_view s) {
  if (!s.empty()) put_text(w, tag, s);
}
void put_u64(protozero::pbf_writer& w, protozero::pbf_tag_type tag, uint64_t v) {
  if (v != 0) w.add_uint64(tag, v);
}
void put_u32(protozero::pbf_writer& w, protozero::pbf_tag_type tag, uint32_t v) {
  if (v != 0) w.add_uint32(tag, v);
}
void put_double(protozero::pbf_writer& w, protozero::pbf_tag_type tag, double v) {
  if (v != 0) w.add_double(tag, v);
}
void put_bool(protozero::pbf_writer& w, protozero::pbf_tag_type tag, bool v) {
  if (v) w.add_bool(tag, v);
}
// Statistics computed from the trace (means, quantiles, shares): a value of no sample, or a ratio
// with nothing to divide by, is left out (reads as 0, "unknown") rather than written as NaN or
// infinity, which every reader would have to guard against before printing or exporting it.
void put_stat(protozero::pbf_writer& w, protozero::pbf_tag_type tag, double v) {
  if (std::isfinite(v)) put_double(w, tag, v);
}
template <typename E>
void put_enum(protozero::pbf_writer& w, protozero::pbf_tag_type tag, E v) {
  auto n = static_cast<int32_t>(v);
  if (n != 0) w.add_enum(tag, n);
}

void put_dim3(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::Dim3& d) {
  if (d.x == 0 && d.y == 0 && d.z == 0) return;
  using D = schema::Dim3;
  protozero::pbf_writer m(w, tag);
  m.add_uint32(D::kX, d.x);
  m.add_uint32(D::kY, d.y);
  m.add_uint32(D::kZ, d.z);
}

void put_limits(protozero::pbf_writer& w, protozero::pbf_tag_type tag,
                const triage::DeviceLimits& l) {
  using L = schema::DeviceLimits;
  protozero::pbf_writer m(w, tag);
  put_u32(m, L::kWarpSize, l.warp_size);
  put_u32(m, L::kMaxThreadsPerSm, l.max_threads_per_sm);
  put_u32(m, L::kMaxWarpsPerSm, l.max_warps_per_sm);
  put_u32(m, L::kMaxBlocksPerSm, l.max_blocks_per_sm);
  put_u32(m, L::kMaxThreadsPerBlock, l.max_threads_per_block);
  put_u32(m, L::kRegistersPerSm, l.registers_per_sm);
  put_u32(m, L::kMaxRegistersPerThread, l.max_registers_per_thread);
  put_u32(m, L::kRegisterAllocUnit, l.register_alloc_unit);
  put_u32(m, L::kSharedBytesPerSm, l.shared_bytes_per_sm);
  put_u32(m, L::kSharedBytesPerBlockOptin, l.shared_bytes_per_block_optin);
  put_u32(m, L::kReservedSharedBytesPerBlock, l.reserved_shared_bytes_per_block);
  put_u32(m, L::kSharedAllocUnit, l.shared_alloc_unit);
}

void put_finding(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::Finding& fd) {
  using F = schema::Finding;
  protozero::pbf_writer m(w, tag);
  put_enum(m, F::kLimiter, fd.limiter);
  put_string(m, F::kSummary, fd.summary);
  put_string(m, F::kDetail, fd.detail);
  put_string(m, F::kNextAction, fd.next_action);
  put_double(m, F::kEstimatedSpeedup, fd.estimated_speedup.value_or(0));
  put_string(m, F::kEstimateBasis, fd.estimate_basis);
  put_double(m, F::kSeverity, fd.severity);
}

void put_check(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::CheckResult& c) {
  using C = schema::Check;
  using E = schema::Evidence;
  using T = schema::ThresholdUse;
  protozero::pbf_writer m(w, tag);
  put_string(m, C::kRuleId, c.rule_id);
  put_enum(m, C::kDecision, c.decision);
  put_string(m, C::kTitle, c.title);
  put_enum(m, C::kOutcome, c.outcome);
  put_string(m, C::kReason, c.reason);
  for (const triage::Evidence& e : c.evidence) {
    protozero::pbf_writer ev(m, C::kEvidence);
    put_string(ev, E::kMetric, e.metric);
    // Written even when zero: a measured 0 is evidence, unlike an unset optional field.
    ev.add_double(E::kValue, e.value);
    put_string(ev, E::kUnit, e.unit);
    put_bool(ev, E::kDerived, e.derived);
    put_bool(ev, E::kDeciding, e.deciding);
  }
  for (const triage::ThresholdUse& t : c.thresholds) {
    protozero::pbf_writer tu(m, C::kThresholds);
    put_string(tu, T::kName, t.name);
    tu.add_double(T::kValue, t.value);
  }
  if (c.finding) put_finding(m, C::kFinding, *c.finding);
}

void put_diagnosis(protozero::pbf_writer& w, protozero::pbf_tag_type tag,
                   const triage::Diagnosis& d) {
  using D = schema::Diagnosis;
  using V = schema::DecisionVisit;
  protozero::pbf_writer m(w, tag);
  for (const triage::DecisionVisit& v : d.path) {
    protozero::pbf_writer visit(m, D::kPath);
    put_enum(visit, V::kDecision, v.decision);
    put_string(visit, V::kEnteredBecause, v.entered_because);
    for (const triage::CheckResult& c : v.checks) put_check(visit, V::kChecks, c);
  }
  put_enum(m, D::kClassification, d.classification);
  put_enum(m, D::kPrimaryLimiter, d.primary_limiter);
  put_string(m, D::kHeadline, d.headline);
  put_string(m, D::kNextAction, d.next_action);
  put_double(m, D::kEstimatedSpeedup, d.estimated_speedup.value_or(0));
  put_double(m, D::kAmdahlCeiling, d.amdahl_ceiling.value_or(0));
  put_enum(m, D::kTrust, d.trust);
  for (const std::string& note : d.trust_notes) put_text(m, D::kTrustNotes, note);
  for (const std::string& note : d.source_notes) put_text(m, D::kSourceNotes, note);
  put_bool(m, D::kAtHardwareLimit, d.at_hardware_limit);
  put_string(m, D::kPrimaryRuleId, d.primary_rule);
  put_string(m, D::kLibrary, d.library);
}

// ---- PC sampling (KernelProfile.pc_sampling) ----------------------------------------------------

// The interned ids of one PcSampling, resolved before the kernel record is opened (intern() appends
// InternedString records to the output, which must precede the record that uses them).
struct PcSamplingIds {
  std::vector<size_t> order;  // indexes into PcSampleSummary::lines, hottest first
  std::vector<uint64_t> function;  // by line index
  std::vector<uint64_t> file;      // by line index
  std::vector<uint64_t> inlined_file;  // by line index; 0 = not inlined
  // By line index: (reason id, samples), most samples first, then by name.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> stalls;
  std::vector<uint64_t> code_function;  // by KernelRecord::pc_code index
};

// A PC's samples for ordering, each sample once: a "<state>_not_issued" count is the subset of
// "<state>"'s in which nothing issued, so it counts only when "<state>" is absent; other
// smsp__pcsamp_* names (smsp__pcsamp_sample_count) are totals, not warp states.
uint64_t total_samples(const triage::PcSampleLine& line) {
  constexpr std::string_view kNotIssued = "_not_issued";
  constexpr std::string_view kPcSamp = "smsp__pcsamp_";
  constexpr std::string_view kPcSampState = "smsp__pcsamp_warps_issue_stalled_";
  uint64_t n = 0;
  for (const auto& [reason, samples] : line.samples_by_reason) {
    std::string_view r = reason;
    if (r.substr(0, kPcSamp.size()) == kPcSamp && r.substr(0, kPcSampState.size()) != kPcSampState) continue;
    if (r.size() > kNotIssued.size() && r.substr(r.size() - kNotIssued.size()) == kNotIssued &&
        line.samples_by_reason.count(std::string(r.substr(0, r.size() - kNotIssued.size()))) != 0) {
      continue;
    }
    n += samples;
  }
  return n;
}

// SampledPc order on the wire is hottest first (every warp state counted once), ties by function
// and offset so that the same samples always encode to the same bytes.
template <typename Intern>
PcSamplingIds intern_pc_sampling(const triage::PcSampleSummary& pcs, const std::vector<FunctionCode>& code,
                                 Intern&& intern) {
  PcSamplingIds ids;
  const size_t n = pcs.lines.size();
  std::vector<uint64_t> totals(n);
  for (size_t i = 0; i < n; ++i) totals[i] = total_samples(pcs.lines[i]);
  ids.order.resize(n);
  for (size_t i = 0; i < n; ++i) ids.order[i] = i;
  std::sort(ids.order.begin(), ids.order.end(), [&](size_t a, size_t b) {
    if (totals[a] != totals[b]) return totals[a] > totals[b];
    const triage::PcSampleLine& la = pcs.lines[a];
    const triage::PcSampleLine& lb = pcs.lines[b];
    if (la.function != lb.function) return la.function < lb.function;
    if (la.pc_offset != lb.pc_offset) return la.pc_offset < lb.pc_offset;
    return a < b;
  });
  ids.function.resize(n);
  ids.file.resize(n);
  ids.inlined_file.resize(n);
  ids.stalls.resize(n);
  for (size_t i : ids.order) {
    const triage::PcSampleLine& line = pcs.lines[i];
    ids.function[i] = intern(line.function);
    ids.file[i] = intern(line.file);
    ids.inlined_file[i] = intern(line.inlined_file);
    std::vector<std::pair<const std::string*, uint64_t>> reasons;
    reasons.reserve(line.samples_by_reason.size());
    for (const auto& [reason, samples] : line.samples_by_reason) reasons.emplace_back(&reason, samples);
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [reason, samples] : reasons) ids.stalls[i].emplace_back(intern(*reason), samples);
  }
  ids.code_function.reserve(code.size());
  for (const FunctionCode& fc : code) ids.code_function.push_back(intern(fc.function));
  return ids;
}

void put_cost(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const ProfileCost& cost) {
  using C = schema::ProfileCost;
  protozero::pbf_writer c(w, tag);
  put_u64(c, C::kSetupNs, cost.setup_ns);
  put_u64(c, C::kStartNs, cost.start_ns);
  put_u64(c, C::kLaunchNs, cost.launch_ns);
  put_u64(c, C::kStopNs, cost.stop_ns);
  put_u64(c, C::kTriageNs, cost.triage_ns);
  put_u32(c, C::kPasses, cost.passes);
  put_u64(c, C::kPlanNs, cost.plan_ns);
  if (cost.range_steps) {
    using R = schema::RangeProfilerSteps;
    const RangeProfilerSteps& r = *cost.range_steps;
    protozero::pbf_writer steps(c, C::kRangeSteps);
    put_u64(steps, R::kEnableNs, r.enable_ns);
    put_u64(steps, R::kCounterDataNs, r.counter_data_ns);
    put_u64(steps, R::kSetConfigNs, r.set_config_ns);
    put_u64(steps, R::kStartNs, r.start_ns);
    put_u64(steps, R::kStopNs, r.stop_ns);
    put_u64(steps, R::kDecodeNs, r.decode_ns);
    put_u64(steps, R::kDisableNs, r.disable_ns);
  }
  put_u64(c, C::kEvaluateNs, cost.evaluate_ns);
}

void put_pc_sampling(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::PcSampleSummary& pcs,
                     const PcSamplingIds& ids, const KernelRecord& k) {
  using P = schema::PcSampling;
  using S = schema::SampledPc;
  using SC = schema::StallCount;
  using FC = schema::FunctionCode;
  protozero::pbf_writer m(w, tag);
  // Written even when 0: a PcSampling with every field unset (an empty sampling, no error) would
  // be dropped by protozero, and the reader could not tell it from a launch never sampled.
  m.add_uint64(P::kFromLaunchIndex, pcs.from_launch_index);
  put_u32(m, P::kSamplingPeriodLog2, pcs.sampling_period_log2);
  put_u64(m, P::kTotalSamples, pcs.total_samples);
  put_u64(m, P::kDroppedSamples, pcs.dropped_samples);
  put_bool(m, P::kHardwareBufferFull, pcs.hardware_buffer_full);
  put_bool(m, P::kHasLineInfo, pcs.has_line_info);
  put_string(m, P::kError, pcs.error);
  for (size_t i : ids.order) {
    const triage::PcSampleLine& line = pcs.lines[i];
    protozero::pbf_writer sp(m, P::kPcs);
    put_u64(sp, S::kFunctionIid, ids.function[i]);
    sp.add_uint64(S::kPcOffset, line.pc_offset);  // even 0 (the first instruction): keeps the SampledPc
    put_u64(sp, S::kFileIid, ids.file[i]);
    put_u32(sp, S::kLine, line.line);
    put_string(sp, S::kSass, line.sass);
    for (const auto& [reason, samples] : ids.stalls[i]) {
      protozero::pbf_writer sc(sp, S::kStalls);
      put_u64(sc, SC::kReasonIid, reason);
      sc.add_uint64(SC::kSamples, samples);  // even 0: keeps the StallCount
    }
    put_u64(sp, S::kInlinedFileIid, ids.inlined_file[i]);
    put_u32(sp, S::kInlinedLine, line.inlined_line);
  }
  for (size_t i = 0; i < k.pc_code.size(); ++i) {
    const FunctionCode& fc = k.pc_code[i];
    protozero::pbf_writer code(m, P::kCode);
    put_u64(code, FC::kFunctionIid, ids.code_function[i]);
    // Raw bytes, not text: never through put_text's UTF-8 repair. Written even when empty.
    code.add_bytes(FC::kText, reinterpret_cast<const char*>(fc.text.data()), fc.text.size());
  }
  put_string(m, P::kSmArch, k.pc_sm_arch);
  if (k.pc_cost) put_cost(m, P::kCost, *k.pc_cost);
}

// One Record holding `payload` as its oneof field `tag`, as a File.records field. The payload is
// written even when it is empty: protozero drops empty nested messages, and a Record without its
// payload reads as corrupt, which would end the reader's salvage there (an empty TraceChunk, a
// Notice with every field unset).
std::string as_record(protozero::pbf_tag_type tag, const std::string& payload) {
  std::string record;
  {
    protozero::pbf_writer r(record);
    r.add_message(tag, payload);
  }
  std::string out;
  protozero::pbf_writer file(out);
  file.add_message(schema::File::kRecords, record);
  return out;
}

}  // namespace

uint64_t RecordEncoder::intern(std::string_view value, std::string& out) {
  if (value.empty()) return 0;
  auto it = interned_.find(std::string(value));
  if (it != interned_.end()) return it->second;
  uint64_t id = next_id_++;
  interned_.emplace(std::string(value), id);
  std::string payload;
  {
    protozero::pbf_writer s(payload);
    s.add_uint64(schema::InternedString::kId, id);
    put_text(s, schema::InternedString::kValue, value);
  }
  out += as_record(schema::Record::kInterned, payload);
  return id;
}

std::string RecordEncoder::session(const SessionInfo& s) {
  std::string payload;
  {
    using H = schema::SessionHeader;
    using G = schema::Gpu;
    using CS = schema::CollectionSettings;
    protozero::pbf_writer m(payload);
    m.add_uint32(H::kSchemaVersion, kSchemaVersion);
    put_string(m, H::kAgentVersion, s.agent_version);
    put_string(m, H::kHost, s.host);
    put_u64(m, H::kPid, s.pid);
    for (const std::string& arg : s.command_line) put_text(m, H::kCommandLine, arg);
    put_u64(m, H::kStartTimeUnixNs, s.start_time_unix_ns);
    for (const GpuInfo& g : s.gpus) {
      protozero::pbf_writer gpu(m, H::kGpus);
      put_u32(gpu, G::kDevice, g.device);
      put_string(gpu, G::kName, g.name);
      put_string(gpu, G::kChip, g.limits.chip);
      put_string(gpu, G::kUuid, g.uuid);
      put_u32(gpu, G::kCcMajor, static_cast<uint32_t>(g.limits.cc_major));
      put_u32(gpu, G::kCcMinor, static_cast<uint32_t>(g.limits.cc_minor));
      put_u32(gpu, G::kSmCount, g.limits.sm_count);
      put_double(gpu, G::kSmClockHz, g.limits.sm_clock_hz);
      put_double(gpu, G::kMemoryClockHz, g.limits.memory_clock_hz);
      put_u64(gpu, G::kMemoryBytes, g.limits.memory_bytes);
      put_double(gpu, G::kDramPeakBytesPerSecond, g.limits.dram_peak_bytes_per_second);
      put_limits(gpu, G::kLimits, g.limits);
    }
    put_string(m, H::kDriverVersion, s.driver_version);
    put_string(m, H::kCudaVersion, s.cuda_version);
    put_string(m, H::kCuptiVersion, s.cupti_version);
    {
      protozero::pbf_writer cs(m, H::kSettings);
      put_enum(cs, CS::kReplayMode, s.replay_mode);
      put_enum(cs, CS::kClockControl, s.clock_control);
      put_string(cs, CS::kCacheControl, s.cache_control);
      put_string(cs, CS::kMetricSet, s.metric_set);
      put_string(cs, CS::kKernelFilter, s.kernel_filter);
    }
    put_enum(m, H::kSource, s.source);
    put_string(m, H::kSourcePath, s.source_path);
    put_u64(m, H::kTraceClockAtStartNs, s.trace_clock_at_start_ns);
    put_u32(m, H::kSegmentIndex, s.segment_index);
    put_string(m, H::kMode, s.mode);
    if (s.job) {
      // rank_variable is never empty, so the message is never empty and never dropped: a reader
      // tells rank 0 from no rank by the message's presence.
      using J = schema::JobPlace;
      protozero::pbf_writer job(m, H::kJob);
      put_u32(job, J::kRank, s.job->rank);
      put_u32(job, J::kWorldSize, s.job->world_size);
      put_u32(job, J::kLocalRank, s.job->local_rank);
      put_bool(job, J::kHasLocalRank, s.job->has_local_rank);
      put_text(job, J::kRankVariable, s.job->rank_variable);
    }
  }
  return as_record(schema::Record::kSession, payload);
}

std::string RecordEncoder::kernel(const KernelRecord& k) {
  std::string out;  // interned definitions first, then the kernel record
  const triage::KernelInput& in = k.input;
  uint64_t mangled = intern(in.mangled_name, out);
  uint64_t demangled = intern(in.demangled_name, out);
  uint64_t function = intern(in.function_name, out);
  struct MetricIds {
    uint64_t name;
    uint64_t unit;
  };
  std::vector<MetricIds> ids;
  ids.reserve(in.metrics.size());
  for (const auto& [name, value] : in.metrics.all()) {
    uint64_t n = intern(name, out);
    uint64_t u = intern(value.unit, out);
    ids.push_back({n, u});
  }
  // PC sampling's functions, files and warp-state names; pc_code and pc_sm_arch are written only
  // inside a PcSampling (the schema has no other place for them), so without samples they are not.
  PcSamplingIds pc_ids;
  if (in.pc_samples) {
    pc_ids = intern_pc_sampling(*in.pc_samples, k.pc_code,
                                [&](std::string_view v) { return intern(v, out); });
  }

  std::string payload;
  {
    using K = schema::KernelProfile;
    using LC = schema::LaunchConfig;
    using M = schema::Metric;
    using A = schema::AssembledLaunch;
    protozero::pbf_writer m(payload);
    put_u64(m, K::kMangledNameIid, mangled);
    put_u64(m, K::kDemangledNameIid, demangled);
    put_u64(m, K::kFunctionNameIid, function);
    put_u32(m, K::kDevice, in.device);
    put_u64(m, K::kContextId, k.context_id);
    put_u64(m, K::kStreamId, k.stream_id);
    put_u64(m, K::kLaunchIndex, in.launch_index);
    for (const std::string& range : k.nvtx_path) put_text(m, K::kNvtxPath, range);
    if (in.launch) {
      const triage::LaunchConfig& lc = *in.launch;
      protozero::pbf_writer l(m, K::kLaunch);
      put_dim3(l, LC::kGrid, lc.grid);
      put_dim3(l, LC::kBlock, lc.block);
      put_dim3(l, LC::kCluster, lc.cluster);
      put_u32(l, LC::kRegistersPerThread, lc.registers_per_thread);
      put_u32(l, LC::kStaticSharedBytes, lc.static_shared_bytes);
      put_u32(l, LC::kDynamicSharedBytes, lc.dynamic_shared_bytes);
      put_u32(l, LC::kLocalBytesPerThread, lc.local_bytes_per_thread);
      put_u32(l, LC::kSharedConfigBytesPerSm, lc.shared_config_bytes_per_sm);
    }
    size_t i = 0;
    for (const auto& [name, value] : in.metrics.all()) {
      protozero::pbf_writer mv(m, K::kMetrics);
      mv.add_uint64(M::kNameIid, ids[i].name);
      mv.add_double(M::kValue, value.value);
      put_u64(mv, M::kUnitIid, ids[i].unit);
      put_bool(mv, M::kDerived, value.source == triage::MetricSource::kDerived);
      if (auto from = k.metric_launch.find(name); from != k.metric_launch.end()) {
        put_u64(mv, M::kFromLaunchIndex, from->second);
      }
      ++i;
    }
    put_u32(m, K::kPasses, in.collection.passes);
    put_enum(m, K::kReplayMode, in.collection.replay_mode);
    put_enum(m, K::kClockControl, in.collection.clock_control);
    put_double(m, K::kDurationNs, k.duration_ns);
    if (!in.unprofiled_durations_ns.empty()) {
      std::vector<double> sorted = in.unprofiled_durations_ns;
      std::sort(sorted.begin(), sorted.end());
      // The median Decision 0 compares with (the mean of the middle two for an even count).
      const size_t n = sorted.size();
      put_double(m, K::kUnprofiledDurationNs,
                 n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
      put_u32(m, K::kUnprofiledSamples, static_cast<uint32_t>(sorted.size()));
    }
    put_diagnosis(m, K::kDiagnosis, k.diagnosis);
    put_u64(m, K::kCorrelationId, k.correlation_id);
    put_double(m, K::kTimeShare, in.time_share.value_or(0));
    put_enum(m, K::kStatus, k.status);
    put_string(m, K::kStatusDetail, k.status_detail);
    put_enum(m, K::kLaunchApi, k.launch_api);
    put_u32(m, K::kProfileNumber, k.profile_number);
    for (uint64_t li : k.combined_launch_indices) m.add_uint64(K::kCombinedLaunchIndices, li);
    for (const std::string& name : k.rejected_metrics) put_text(m, K::kRejectedMetrics, name);
    put_u64(m, K::kFamilyId, k.family_id);
    put_u32(m, K::kRevision, k.revision);
    if (in.pc_samples) put_pc_sampling(m, K::kPcSampling, *in.pc_samples, pc_ids, k);
    for (const triage::AssembledLaunch& a : in.assembled_launches) {
      protozero::pbf_writer al(m, K::kAssembledLaunches);
      al.add_uint64(A::kLaunchIndex, a.launch_index);  // even 0: keeps the AssembledLaunch (see as_record)
      put_dim3(al, A::kGrid, a.grid);
      put_dim3(al, A::kBlock, a.block);
      put_u32(al, A::kDynamicSharedBytes, a.dynamic_shared_bytes);
      put_double(al, A::kDurationNs, a.duration_ns);
      put_u32(al, A::kMetricGroup, a.metric_group);
      put_u32(al, A::kMetrics, a.metrics);
      put_u64(al, A::kEarlierPid, a.earlier_pid);
      put_u64(al, A::kEarlierStartUnixNs, a.earlier_start_unix_ns);
    }
    if (in.graph_scope) {
      using G = schema::GraphScope;
      const triage::GraphScope& g = *in.graph_scope;
      protozero::pbf_writer gs(m, K::kGraphScope);
      put_u32(gs, G::kGraphId, g.graph_id);
      put_u32(gs, G::kExecId, g.exec_id);
      put_double(gs, G::kShareOfGraph, g.share_of_graph);
      put_u32(gs, G::kOtherFamilies, g.other_families);
      put_u64(gs, G::kReplaysProfiled, g.replays_profiled);
      put_double(gs, G::kMeanReplayNs, g.mean_replay_ns);
      if (g.node_sampling) {
        using N = schema::NodeSampling;
        const triage::NodeSampling& n = *g.node_sampling;
        protozero::pbf_writer ns(gs, G::kNodeSampling);
        ns.add_uint32(N::kSamples, n.samples);  // even 0: keeps the message
        put_u64(ns, N::kIntervalNs, n.interval_ns);
        put_u64(ns, N::kLaunchCorrelationId, n.launch_correlation_id);
        put_u32(ns, N::kLaunchSamples, n.launch_samples);
        put_u32(ns, N::kExecutions, n.executions);
      }
    }
    if (in.pm_window) {
      using W = schema::PmWindowScope;
      const triage::PmWindowScope& w = *in.pm_window;
      protozero::pbf_writer pw(m, K::kPmWindow);
      pw.add_uint32(W::kSamples, w.samples);  // even 0: keeps the message
      put_u64(pw, W::kIntervalNs, w.interval_ns);
      put_u64(pw, W::kWindowStartNs, w.window_start_ns);
      put_u64(pw, W::kWindowEndNs, w.window_end_ns);
      put_u32(pw, W::kWindowSamples, w.window_samples);
      put_u32(pw, W::kExecutions, w.executions);
    }
    if (k.cost) put_cost(m, K::kCost, *k.cost);
    if (k.first_pass_cost) put_cost(m, K::kFirstPassCost, *k.first_pass_cost);
    if (k.application_replay) {
      using AR = schema::ApplicationReplay;
      protozero::pbf_writer ar(m, K::kApplicationReplay);
      ar.add_uint32(AR::kRuns, k.application_replay->runs);  // even 0: keeps the message (see as_record)
      put_bool(ar, AR::kCountersComplete, k.application_replay->counters_complete);
      put_u32(ar, AR::kCountersWanted, k.application_replay->counters_wanted);
    }
  }
  out += as_record(schema::Record::kKernel, payload);
  return out;
}

std::string RecordEncoder::notice(const Notice& n) {
  std::string payload;
  {
    using N = schema::Notice;
    protozero::pbf_writer m(payload);
    put_enum(m, N::kSeverity, n.severity);
    put_string(m, N::kCode, n.code);
    put_string(m, N::kMessage, n.message);
    put_u64(m, N::kTimeUnixNs, n.time_unix_ns);
    put_u64(m, N::kFamilyId, n.family_id);
  }
  return as_record(schema::Record::kNotice, payload);
}

std::string RecordEncoder::session_end(const SessionEnd& e) {
  std::string out;
  std::vector<uint64_t> names;
  names.reserve(e.kernels.size());
  for (const KernelLaunchStats& k : e.kernels) names.push_back(intern(k.mangled_name, out));
  std::string payload;
  {
    using SE = schema::SessionEnd;
    using KS = schema::KernelLaunchStats;
    using O = schema::OverheadStats;
    protozero::pbf_writer m(payload);
    put_u64(m, SE::kEndTimeUnixNs, e.end_time_unix_ns);
    put_enum(m, SE::kState, e.state);
    put_string(m, SE::kStateDetail, e.state_detail);
    put_u64(m, SE::kKernelLaunches, e.kernel_launches);
    put_u64(m, SE::kGraphLaunches, e.graph_launches);
    put_u64(m, SE::kCapturedLaunches, e.captured_launches);
    put_u64(m, SE::kProfiledLaunches, e.profiled_launches);
    put_u64(m, SE::kFailedProfiles, e.failed_profiles);
    put_u64(m, SE::kNotReplayableLaunches, e.not_replayable_launches);
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const KernelLaunchStats& k = e.kernels[i];
      protozero::pbf_writer ks(m, SE::kKernels);
      put_u64(ks, KS::kMangledNameIid, names[i]);
      put_u64(ks, KS::kLaunches, k.launches);
      put_u64(ks, KS::kProfiled, k.profiled);
      put_u64(ks, KS::kCaptured, k.captured);
      put_u64(ks, KS::kNotReplayable, k.not_replayable);
      put_u64(ks, KS::kFailed, k.failed);
      put_u64(ks, KS::kFiltered, k.filtered);
    }
    if (e.overhead) {
      const OverheadStats& o = *e.overhead;
      protozero::pbf_writer ov(m, SE::kOverhead);
      // Written even when 0: an OverheadStats with every field unset would be dropped, and the
      // reader could not tell an always-on run that spent nothing from a run of another mode.
      ov.add_double(O::kBudgetFraction, o.budget_fraction);
      put_double(ov, O::kMaxProfilesPerSecond, o.max_profiles_per_second);
      put_u64(ov, O::kWallNs, o.wall_ns);
      put_u64(ov, O::kSpentNs, o.spent_ns);
      put_u64(ov, O::kMaxWindowSpentNs, o.max_window_spent_ns);
      put_u64(ov, O::kWindowNs, o.window_ns);
      put_u64(ov, O::kAdmitted, o.admitted);
      put_u64(ov, O::kDeferred, o.deferred);
      put_u64(ov, O::kGroupSwitches, o.group_switches);
      put_u64(ov, O::kStartupNs, o.startup_ns);
      put_u64(ov, O::kLaunchCallbacksOffNs, o.launch_callbacks_off_ns);
    }
  }
  out += as_record(schema::Record::kSessionEnd, payload);
  return out;
}

std::string RecordEncoder::family(const FamilyDef& fam) {
  std::string out;
  uint64_t mangled = intern(fam.mangled_name, out);
  uint64_t display = intern(fam.display_name, out);
  std::string payload;
  {
    using KF = schema::KernelFamily;
    protozero::pbf_writer m(payload);
    put_u64(m, KF::kId, fam.id);
    put_u64(m, KF::kMangledNameIid, mangled);
    put_u64(m, KF::kDisplayNameIid, display);
    put_u32(m, KF::kDevice, fam.device);
    put_dim3(m, KF::kBlock, fam.block);
  }
  out += as_record(schema::Record::kFamily, payload);
  return out;
}

std::string RecordEncoder::trace_chunk(const TraceChunk& chunk) {
  std::string out;  // interned definitions first, then the chunk
  // Ids resolved before the record is opened: intern() appends to `out`, which must not happen
  // while the chunk's own bytes are being written.
  std::vector<uint64_t> kernel_paths;
  kernel_paths.reserve(chunk.kernels.size());
  for (const KernelExecution& k : chunk.kernels) kernel_paths.push_back(intern(k.nvtx_path, out));
  struct RangeIds {
    uint64_t name;
    uint64_t domain;
  };
  std::vector<RangeIds> ranges;
  ranges.reserve(chunk.nvtx_ranges.size());
  for (const NvtxRange& n : chunk.nvtx_ranges) {
    uint64_t name = intern(n.name, out);
    uint64_t domain = intern(n.domain, out);
    ranges.push_back({name, domain});
  }

  std::string payload;
  {
    using TC = schema::TraceChunk;
    using KE = schema::KernelExecution;
    using CE = schema::CopyExecution;
    using NR = schema::NvtxRange;
    using I = schema::Interval;
    protozero::pbf_writer m(payload);
    for (size_t i = 0; i < chunk.kernels.size(); ++i) {
      const KernelExecution& k = chunk.kernels[i];
      protozero::pbf_writer e(m, TC::kKernels);
      put_u64(e, KE::kFamilyId, k.family_id);
      put_u64(e, KE::kStartNs, k.start_ns);
      put_u64(e, KE::kEndNs, k.end_ns);
      put_u32(e, KE::kStreamId, k.stream_id);
      put_u32(e, KE::kContextId, k.context_id);
      put_u64(e, KE::kCorrelationId, k.correlation_id);
      put_dim3(e, KE::kGrid, k.grid);
      put_u32(e, KE::kGraphId, k.graph_id);
      put_u64(e, KE::kGraphNodeId, k.graph_node_id);
      put_bool(e, KE::kReplayed, k.replayed);
      put_u64(e, KE::kNvtxPathIid, kernel_paths[i]);
      put_bool(e, KE::kCutByPause, k.cut_by_pause);
    }
    for (const CopyExecution& c : chunk.copies) {
      protozero::pbf_writer e(m, TC::kCopies);
      put_enum(e, CE::kKind, c.kind);
      put_u64(e, CE::kStartNs, c.start_ns);
      put_u64(e, CE::kEndNs, c.end_ns);
      put_u64(e, CE::kBytes, c.bytes);
      put_u32(e, CE::kDevice, c.device);
      put_u32(e, CE::kStreamId, c.stream_id);
      put_u32(e, CE::kContextId, c.context_id);
      put_u64(e, CE::kCorrelationId, c.correlation_id);
      put_bool(e, CE::kPageable, c.pageable);
      put_u32(e, CE::kGraphId, c.graph_id);
    }
    for (size_t i = 0; i < chunk.nvtx_ranges.size(); ++i) {
      const NvtxRange& n = chunk.nvtx_ranges[i];
      protozero::pbf_writer e(m, TC::kNvtxRanges);
      put_u64(e, NR::kNameIid, ranges[i].name);
      put_u64(e, NR::kStartNs, n.start_ns);
      put_u64(e, NR::kEndNs, n.end_ns);
      put_u32(e, NR::kThreadId, n.thread_id);
      put_u32(e, NR::kDepth, n.depth);
      put_u64(e, NR::kDomainIid, ranges[i].domain);
    }
    put_u64(m, TC::kDroppedRecords, chunk.dropped_records);
    for (const auto& [start, end] : chunk.untraced) {
      protozero::pbf_writer iv(m, TC::kUntraced);
      put_u64(iv, I::kStartNs, start);
      put_u64(iv, I::kEndNs, end);
    }
  }
  out += as_record(schema::Record::kTrace, payload);
  return out;
}

std::string RecordEncoder::trace_summary(const TraceSummary& summary) {
  std::string out;
  const triage::TimelineSummary& t = summary.timeline;
  // NVTX paths of each family, interned before the record (see trace_chunk).
  std::vector<std::vector<uint64_t>> paths;
  paths.reserve(t.families.size());
  for (const triage::FamilyTimeStats& fam : t.families) {
    std::vector<uint64_t>& ids = paths.emplace_back();
    auto outcome = summary.outcomes.find(fam.family);
    if (outcome == summary.outcomes.end()) continue;
    for (const std::string& p : outcome->second.nvtx_paths) {
      if (uint64_t id = intern(p, out); id != 0) ids.push_back(id);
    }
  }
  // The capture-time NVTX paths of the families' graph nodes, interned the same way.
  std::map<std::string, uint64_t> capture_paths;
  for (const auto& [family, outcome] : summary.outcomes) {
    for (const GraphNodeRef& n : outcome.graph_nodes) {
      if (!n.capture_nvtx_path.empty() && capture_paths.count(n.capture_nvtx_path) == 0) {
        capture_paths[n.capture_nvtx_path] = intern(n.capture_nvtx_path, out);
      }
    }
  }

  std::string payload;
  {
    using TS = schema::TraceSummary;
    using FS = schema::FamilyStats;
    using DT = schema::DeviceTimeline;
    using I = schema::Interval;
    using LB = schema::LaunchBoundStretch;
    using SP = schema::SelectionPolicy;
    protozero::pbf_writer m(payload);
    for (size_t i = 0; i < t.families.size(); ++i) {
      const triage::FamilyTimeStats& fam = t.families[i];
      protozero::pbf_writer fs(m, TS::kFamilies);
      fs.add_uint64(FS::kFamilyId, fam.family);  // even 0: an empty FamilyStats would be dropped (see as_record)
      put_u64(fs, FS::kLaunches, fam.launches);
      put_u64(fs, FS::kReplayedLaunches, fam.replayed_launches);
      put_u64(fs, FS::kGraphLaunches, fam.graph_launches);
      put_u64(fs, FS::kConcurrentLaunches, fam.concurrent_launches);
      put_stat(fs, FS::kTotalNs, fam.total_ns);
      put_stat(fs, FS::kMeanNs, fam.mean_ns());
      put_stat(fs, FS::kP50Ns, fam.durations.quantile(0.5));
      put_stat(fs, FS::kP95Ns, fam.durations.quantile(0.95));
      put_stat(fs, FS::kMinNs, fam.durations.min());
      put_stat(fs, FS::kMaxNs, fam.durations.max());
      put_stat(fs, FS::kTimeShare, t.time_share(fam));
      put_stat(fs, FS::kAmdahlCeiling, t.amdahl_ceiling(fam));
      if (!paths[i].empty()) fs.add_packed_uint64(FS::kNvtxPathIids, paths[i].begin(), paths[i].end());
      if (auto o = summary.outcomes.find(fam.family); o != summary.outcomes.end()) {
        put_enum(fs, FS::kSelection, o->second.selection);
        put_string(fs, FS::kSelectionDetail, o->second.selection_detail);
        put_u64(fs, FS::kProfiledLaunchIndex, o->second.profiled_launch_index);
        for (const GraphNodeRef& n : o->second.graph_nodes) {
          using GN = schema::GraphNodeRef;
          protozero::pbf_writer gn(fs, FS::kGraphNodes);
          put_u32(gn, GN::kGraphId, n.graph_id);
          put_u64(gn, GN::kNodeId, n.node_id);
          put_u64(gn, GN::kCreatedNodeId, n.created_node_id);
          put_bool(gn, GN::kCaptured, n.captured);
          if (!n.capture_nvtx_path.empty()) put_u64(gn, GN::kCaptureNvtxPathIid, capture_paths[n.capture_nvtx_path]);
        }
        put_u64(fs, FS::kApplicationLaunches, o->second.application_launches);
        put_u64(fs, FS::kDirectLaunchesBeforeRank, o->second.direct_launches_before_rank);
      }
    }
    for (const triage::DeviceTimeStats& d : t.devices) {
      protozero::pbf_writer dt(m, TS::kDevices);
      dt.add_uint32(DT::kDevice, d.device);  // even 0: device 0 with nothing else set must stay in the list
      put_u64(dt, DT::kFirstStartNs, d.first_start_ns);
      put_u64(dt, DT::kLastEndNs, d.last_end_ns);
      put_stat(dt, DT::kBusyNs, d.busy_ns);
      put_stat(dt, DT::kKernelBusyNs, d.kernel_busy_ns);
      put_stat(dt, DT::kCopyBusyNs, d.copy_busy_ns);
      put_stat(dt, DT::kCopyOnlyNs, d.copy_only_ns);
      put_stat(dt, DT::kCopyOverlappedNs, d.copy_overlapped_ns);
      put_stat(dt, DT::kPageableCopyNs, d.pageable_copy_ns);
      put_u64(dt, DT::kKernels, d.kernels);
      put_u64(dt, DT::kCopies, d.copies);
      put_u64(dt, DT::kGaps, d.gaps);
      put_stat(dt, DT::kGapNs, d.gap_ns);
      put_stat(dt, DT::kUntracedNs, d.untraced_ns);
      for (const triage::IdleGap& g : d.largest_gaps) {
        protozero::pbf_writer iv(dt, DT::kLargestGaps);
        put_u64(iv, I::kStartNs, g.start_ns);
        put_u64(iv, I::kEndNs, g.end_ns);
      }
      for (const triage::LaunchBoundStretch& s : d.launch_bound) {
        protozero::pbf_writer lb(dt, DT::kLaunchBound);
        put_u64(lb, LB::kStartNs, s.start_ns);
        put_u64(lb, LB::kEndNs, s.end_ns);
        put_u64(lb, LB::kKernels, s.kernels);
        put_stat(lb, LB::kBusyNs, s.busy_ns);
        put_stat(lb, LB::kMeanKernelNs, s.mean_kernel_ns);
      }
    }
    for (const triage::CheckResult& c : summary.findings) put_check(m, TS::kFindings, c);
    put_stat(m, TS::kTotalKernelNs, t.total_kernel_ns);
    put_u64(m, TS::kKernelExecutions, t.kernel_executions);
    put_u64(m, TS::kCopyExecutions, t.copy_executions);
    put_u64(m, TS::kDroppedRecords, summary.dropped_records);
    put_u64(m, TS::kLateRecords, t.late_records);
    {
      const SelectionPolicy& p = summary.selection;
      protozero::pbf_writer sp(m, TS::kSelection);
      put_enum(sp, SP::kMode, p.mode);
      put_u32(sp, SP::kTopK, p.top_k);
      put_stat(sp, SP::kMinShare, p.min_share);
      put_string(sp, SP::kNvtxInclude, p.nvtx_include);
      put_string(sp, SP::kNvtxExclude, p.nvtx_exclude);
    }
    put_u64(m, TS::kTimelineKernelEvents, summary.timeline_kernel_events);
    for (const triage::GraphStats& g : summary.graphs) {
      using GS = schema::GraphStats;
      using GF = schema::GraphFamilyTime;
      protozero::pbf_writer gs(m, TS::kGraphs);
      gs.add_uint32(GS::kGraphId, g.graph_id);  // even 0: the message must not be empty
      put_u64(gs, GS::kReplays, g.replays);
      put_stat(gs, GS::kSpanNs, g.span_ns);
      put_stat(gs, GS::kKernelBusyNs, g.kernel_busy_ns);
      put_stat(gs, GS::kIdleBetweenNodesNs, g.idle_between_nodes_ns());
      put_u64(gs, GS::kKernelExecutions, g.kernel_executions);
      put_u64(gs, GS::kKernelNodes, g.kernel_nodes);
      for (const triage::GraphFamilyTime& f : g.families) {
        protozero::pbf_writer gf(gs, GS::kFamilies);
        gf.add_uint64(GF::kFamilyId, f.family);  // even 0, as in FamilyStats
        put_stat(gf, GF::kTotalNs, f.total_ns);
        put_u64(gf, GF::kExecutions, f.executions);
        if (!f.node_ids.empty()) gf.add_packed_uint64(GF::kNodeIds, f.node_ids.begin(), f.node_ids.end());
      }
      put_u32(gs, GS::kExecId, g.exec_id);
    }
    if (summary.ranking_source) {
      using RS = schema::RankingSource;
      const RankingSource& r = *summary.ranking_source;
      protozero::pbf_writer rs(m, TS::kRankingSource);
      put_string(rs, RS::kPath, r.path);
      put_u64(rs, RS::kPid, r.pid);
      put_u64(rs, RS::kStartTimeUnixNs, r.start_time_unix_ns);
      put_u32(rs, RS::kFamiliesSelected, r.families_selected);
      put_bool(rs, RS::kTraceMatches, r.trace_matches);
      put_u32(rs, RS::kFamiliesCompared, r.families_compared);
      put_u32(rs, RS::kFamiliesDiffering, r.families_differing);
      for (const std::string& d : r.differences) put_text(rs, RS::kDifferences, d);
      put_stat(rs, RS::kMatchingTimeShare, r.matching_time_share);
    }
  }
  out += as_record(schema::Record::kTraceSummary, payload);
  return out;
}

std::string RecordEncoder::control(const ControlRequest& c) {
  std::string payload;
  {
    using CR = schema::ControlRequest;
    protozero::pbf_writer m(payload);
    put_u64(m, CR::kId, c.id);
    put_enum(m, CR::kSource, c.source);
    put_string(m, CR::kTarget, c.target);
    put_double(m, CR::kWindowSeconds, c.window_seconds);
    put_u64(m, CR::kRequestedUnixNs, c.requested_unix_ns);
    put_u64(m, CR::kEndedUnixNs, c.ended_unix_ns);
    put_enum(m, CR::kState, c.state);
    if (!c.family_ids.empty()) m.add_packed_uint64(CR::kFamilyIds, c.family_ids.begin(), c.family_ids.end());
    put_u32(m, CR::kProfiledLaunches, c.profiled_launches);
    put_string(m, CR::kDetail, c.detail);
  }
  return as_record(schema::Record::kControl, payload);
}

}  // namespace cutriage::wire
