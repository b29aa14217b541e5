#include "cutriage/wire/writer.h"
#include "cutriage/wire/utf8.h"

#include <protozero/pbf_writer.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace cutriage::wire {

namespace {

// Field numbers of cutriage.v1, by message. Kept next to the encoder so a schema change shows up
// here in review; tests/unit/tools/test_wire_roundtrip.cpp parses the output with libprotobuf.
namespace f {
constexpr protozero::pbf_tag_type kFileRecords = 1;
constexpr protozero::pbf_tag_type kRecordSession = 1, kRecordInterned = 2, kRecordKernel = 3,
                                   kRecordNotice = 4, kRecordSessionEnd = 5, kRecordFamily = 6,
                                   kRecordTrace = 7, kRecordTraceSummary = 8, kRecordControl = 9;
constexpr protozero::pbf_tag_type kInternedId = 1, kInternedValue = 2;
}  // namespace f

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
  protozero::pbf_writer m(w, tag);
  m.add_uint32(1, d.x);
  m.add_uint32(2, d.y);
  m.add_uint32(3, d.z);
}

void put_limits(protozero::pbf_writer& w, protozero::pbf_tag_type tag,
                const triage::DeviceLimits& l) {
  protozero::pbf_writer m(w, tag);
  put_u32(m, 1, l.warp_size);
  put_u32(m, 2, l.max_threads_per_sm);
  put_u32(m, 3, l.max_warps_per_sm);
  put_u32(m, 4, l.max_blocks_per_sm);
  put_u32(m, 5, l.max_threads_per_block);
  put_u32(m, 6, l.registers_per_sm);
  put_u32(m, 7, l.max_registers_per_thread);
  put_u32(m, 8, l.register_alloc_unit);
  put_u32(m, 9, l.shared_bytes_per_sm);
  put_u32(m, 10, l.shared_bytes_per_block_optin);
  put_u32(m, 11, l.reserved_shared_bytes_per_block);
  put_u32(m, 12, l.shared_alloc_unit);
}

void put_finding(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::Finding& fd) {
  protozero::pbf_writer m(w, tag);
  put_enum(m, 1, fd.limiter);
  put_string(m, 2, fd.summary);
  put_string(m, 3, fd.detail);
  put_string(m, 4, fd.next_action);
  put_double(m, 5, fd.estimated_speedup.value_or(0));
  put_string(m, 6, fd.estimate_basis);
  put_double(m, 7, fd.severity);
}

void put_check(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::CheckResult& c) {
  protozero::pbf_writer m(w, tag);
  put_string(m, 1, c.rule_id);
  put_enum(m, 2, c.decision);
  put_string(m, 3, c.title);
  put_enum(m, 4, c.outcome);
  put_string(m, 5, c.reason);
  for (const triage::Evidence& e : c.evidence) {
    protozero::pbf_writer ev(m, 6);
    put_string(ev, 1, e.metric);
    // Written even when zero: a measured 0 is evidence, unlike an unset optional field.
    ev.add_double(2, e.value);
    put_string(ev, 3, e.unit);
    put_bool(ev, 4, e.derived);
  }
  for (const triage::ThresholdUse& t : c.thresholds) {
    protozero::pbf_writer tu(m, 7);
    put_string(tu, 1, t.name);
    tu.add_double(2, t.value);
  }
  if (c.finding) put_finding(m, 8, *c.finding);
}

void put_diagnosis(protozero::pbf_writer& w, protozero::pbf_tag_type tag,
                   const triage::Diagnosis& d) {
  protozero::pbf_writer m(w, tag);
  for (const triage::DecisionVisit& v : d.path) {
    protozero::pbf_writer visit(m, 1);
    put_enum(visit, 1, v.decision);
    put_string(visit, 2, v.entered_because);
    for (const triage::CheckResult& c : v.checks) put_check(visit, 3, c);
  }
  put_enum(m, 2, d.classification);
  put_enum(m, 3, d.primary_limiter);
  put_string(m, 4, d.headline);
  put_string(m, 5, d.next_action);
  put_double(m, 6, d.estimated_speedup.value_or(0));
  put_double(m, 7, d.amdahl_ceiling.value_or(0));
  put_enum(m, 8, d.trust);
  for (const std::string& note : d.trust_notes) put_text(m, 9, note);
  put_bool(m, 10, d.at_hardware_limit);
  put_string(m, 11, d.primary_rule);
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

void put_pc_sampling(protozero::pbf_writer& w, protozero::pbf_tag_type tag, const triage::PcSampleSummary& pcs,
                     const PcSamplingIds& ids, const KernelRecord& k) {
  protozero::pbf_writer m(w, tag);
  // Written even when 0: a PcSampling with every field unset (an empty sampling, no error) would
  // be dropped by protozero, and the reader could not tell it from a launch never sampled.
  m.add_uint64(1, pcs.from_launch_index);
  put_u32(m, 2, pcs.sampling_period_log2);
  put_u64(m, 3, pcs.total_samples);
  put_u64(m, 4, pcs.dropped_samples);
  put_bool(m, 5, pcs.hardware_buffer_full);
  put_bool(m, 6, pcs.has_line_info);
  put_string(m, 7, pcs.error);
  for (size_t i : ids.order) {
    const triage::PcSampleLine& line = pcs.lines[i];
    protozero::pbf_writer sp(m, 8);
    put_u64(sp, 1, ids.function[i]);
    sp.add_uint64(2, line.pc_offset);  // even 0 (the first instruction): keeps the SampledPc
    put_u64(sp, 3, ids.file[i]);
    put_u32(sp, 4, line.line);
    put_string(sp, 5, line.sass);
    for (const auto& [reason, samples] : ids.stalls[i]) {
      protozero::pbf_writer sc(sp, 6);
      put_u64(sc, 1, reason);
      sc.add_uint64(2, samples);  // even 0: keeps the StallCount
    }
    put_u64(sp, 7, ids.inlined_file[i]);
    put_u32(sp, 8, line.inlined_line);
  }
  for (size_t i = 0; i < k.pc_code.size(); ++i) {
    const FunctionCode& fc = k.pc_code[i];
    protozero::pbf_writer code(m, 9);
    put_u64(code, 1, ids.code_function[i]);
    // Raw bytes, not text: never through put_text's UTF-8 repair. Written even when empty.
    code.add_bytes(2, reinterpret_cast<const char*>(fc.text.data()), fc.text.size());
  }
  put_string(m, 10, k.pc_sm_arch);
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
  file.add_message(f::kFileRecords, record);
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
    s.add_uint64(f::kInternedId, id);
    put_text(s, f::kInternedValue, value);
  }
  out += as_record(f::kRecordInterned, payload);
  return id;
}

std::string RecordEncoder::session(const SessionInfo& s) {
  std::string payload;
  {
    protozero::pbf_writer m(payload);
    m.add_uint32(1, kSchemaVersion);
    put_string(m, 2, s.agent_version);
    put_string(m, 3, s.host);
    put_u64(m, 4, s.pid);
    for (const std::string& arg : s.command_line) put_text(m, 5, arg);
    put_u64(m, 6, s.start_time_unix_ns);
    for (const GpuInfo& g : s.gpus) {
      protozero::pbf_writer gpu(m, 7);
      put_u32(gpu, 1, g.device);
      put_string(gpu, 2, g.name);
      put_string(gpu, 3, g.limits.chip);
      put_string(gpu, 4, g.uuid);
      put_u32(gpu, 5, static_cast<uint32_t>(g.limits.cc_major));
      put_u32(gpu, 6, static_cast<uint32_t>(g.limits.cc_minor));
      put_u32(gpu, 7, g.limits.sm_count);
      put_double(gpu, 8, g.limits.sm_clock_hz);
      put_double(gpu, 9, g.limits.memory_clock_hz);
      put_u64(gpu, 10, g.limits.memory_bytes);
      put_double(gpu, 11, g.limits.dram_peak_bytes_per_second);
      put_limits(gpu, 12, g.limits);
    }
    put_string(m, 8, s.driver_version);
    put_string(m, 9, s.cuda_version);
    put_string(m, 10, s.cupti_version);
    {
      protozero::pbf_writer cs(m, 11);
      put_enum(cs, 1, s.replay_mode);
      put_enum(cs, 2, s.clock_control);
      put_string(cs, 3, s.cache_control);
      put_string(cs, 4, s.metric_set);
      put_string(cs, 5, s.kernel_filter);
    }
    put_enum(m, 12, s.source);
    put_string(m, 13, s.source_path);
    put_u64(m, 14, s.trace_clock_at_start_ns);
    put_u32(m, 15, s.segment_index);
    put_string(m, 16, s.mode);
  }
  return as_record(f::kRecordSession, payload);
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
    protozero::pbf_writer m(payload);
    put_u64(m, 1, mangled);
    put_u64(m, 2, demangled);
    put_u64(m, 3, function);
    put_u32(m, 4, in.device);
    put_u64(m, 5, k.context_id);
    put_u64(m, 6, k.stream_id);
    put_u64(m, 7, in.launch_index);
    for (const std::string& range : k.nvtx_path) put_text(m, 8, range);
    if (in.launch) {
      const triage::LaunchConfig& lc = *in.launch;
      protozero::pbf_writer l(m, 9);
      put_dim3(l, 1, lc.grid);
      put_dim3(l, 2, lc.block);
      put_dim3(l, 3, lc.cluster);
      put_u32(l, 4, lc.registers_per_thread);
      put_u32(l, 5, lc.static_shared_bytes);
      put_u32(l, 6, lc.dynamic_shared_bytes);
      put_u32(l, 7, lc.local_bytes_per_thread);
      put_u32(l, 8, lc.shared_config_bytes_per_sm);
    }
    size_t i = 0;
    for (const auto& [name, value] : in.metrics.all()) {
      protozero::pbf_writer mv(m, 10);
      mv.add_uint64(1, ids[i].name);
      mv.add_double(2, value.value);
      put_u64(mv, 3, ids[i].unit);
      put_bool(mv, 4, value.source == triage::MetricSource::kDerived);
      if (auto from = k.metric_launch.find(name); from != k.metric_launch.end()) {
        put_u64(mv, 5, from->second);
      }
      ++i;
    }
    put_u32(m, 11, in.collection.passes);
    put_enum(m, 12, in.collection.replay_mode);
    put_enum(m, 13, in.collection.clock_control);
    put_double(m, 14, k.duration_ns);
    if (!in.unprofiled_durations_ns.empty()) {
      std::vector<double> sorted = in.unprofiled_durations_ns;
      std::sort(sorted.begin(), sorted.end());
      // The median Decision 0 compares with (the mean of the middle two for an even count).
      const size_t n = sorted.size();
      put_double(m, 15, n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
      put_u32(m, 16, static_cast<uint32_t>(sorted.size()));
    }
    put_diagnosis(m, 17, k.diagnosis);
    put_u64(m, 18, k.correlation_id);
    put_double(m, 19, in.time_share.value_or(0));
    put_enum(m, 20, k.status);
    put_string(m, 21, k.status_detail);
    put_enum(m, 22, k.launch_api);
    put_u32(m, 23, k.profile_number);
    for (uint64_t li : k.combined_launch_indices) m.add_uint64(24, li);
    for (const std::string& name : k.rejected_metrics) put_text(m, 25, name);
    put_u64(m, 26, k.family_id);
    put_u32(m, 27, k.revision);
    if (in.pc_samples) put_pc_sampling(m, 28, *in.pc_samples, pc_ids, k);
    for (const triage::AssembledLaunch& a : in.assembled_launches) {
      protozero::pbf_writer al(m, 29);
      al.add_uint64(1, a.launch_index);  // even 0: keeps the AssembledLaunch (see as_record)
      put_dim3(al, 2, a.grid);
      put_dim3(al, 3, a.block);
      put_u32(al, 4, a.dynamic_shared_bytes);
      put_double(al, 5, a.duration_ns);
      put_u32(al, 6, a.metric_group);
      put_u32(al, 7, a.metrics);
      put_u64(al, 8, a.earlier_pid);
      put_u64(al, 9, a.earlier_start_unix_ns);
    }
  }
  out += as_record(f::kRecordKernel, payload);
  return out;
}

std::string RecordEncoder::notice(const Notice& n) {
  std::string payload;
  {
    protozero::pbf_writer m(payload);
    put_enum(m, 1, n.severity);
    put_string(m, 2, n.code);
    put_string(m, 3, n.message);
    put_u64(m, 4, n.time_unix_ns);
    put_u64(m, 5, n.family_id);
  }
  return as_record(f::kRecordNotice, payload);
}

std::string RecordEncoder::session_end(const SessionEnd& e) {
  std::string out;
  std::vector<uint64_t> names;
  names.reserve(e.kernels.size());
  for (const KernelLaunchStats& k : e.kernels) names.push_back(intern(k.mangled_name, out));
  std::string payload;
  {
    protozero::pbf_writer m(payload);
    put_u64(m, 1, e.end_time_unix_ns);
    put_enum(m, 2, e.state);
    put_string(m, 3, e.state_detail);
    put_u64(m, 4, e.kernel_launches);
    put_u64(m, 5, e.graph_launches);
    put_u64(m, 6, e.captured_launches);
    put_u64(m, 7, e.profiled_launches);
    put_u64(m, 8, e.failed_profiles);
    put_u64(m, 9, e.not_replayable_launches);
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const KernelLaunchStats& k = e.kernels[i];
      protozero::pbf_writer ks(m, 10);
      put_u64(ks, 1, names[i]);
      put_u64(ks, 2, k.launches);
      put_u64(ks, 3, k.profiled);
      put_u64(ks, 4, k.captured);
      put_u64(ks, 5, k.not_replayable);
      put_u64(ks, 6, k.failed);
      put_u64(ks, 7, k.filtered);
    }
    if (e.overhead) {
      const OverheadStats& o = *e.overhead;
      protozero::pbf_writer ov(m, 11);
      // Written even when 0: an OverheadStats with every field unset would be dropped, and the
      // reader could not tell an always-on run that spent nothing from a run of another mode.
      ov.add_double(1, o.budget_fraction);
      put_double(ov, 2, o.max_profiles_per_second);
      put_u64(ov, 3, o.wall_ns);
      put_u64(ov, 4, o.spent_ns);
      put_u64(ov, 5, o.max_window_spent_ns);
      put_u64(ov, 6, o.window_ns);
      put_u64(ov, 7, o.admitted);
      put_u64(ov, 8, o.deferred);
      put_u64(ov, 9, o.group_switches);
    }
  }
  out += as_record(f::kRecordSessionEnd, payload);
  return out;
}

std::string RecordEncoder::family(const FamilyDef& fam) {
  std::string out;
  uint64_t mangled = intern(fam.mangled_name, out);
  uint64_t display = intern(fam.display_name, out);
  std::string payload;
  {
    protozero::pbf_writer m(payload);
    put_u64(m, 1, fam.id);
    put_u64(m, 2, mangled);
    put_u64(m, 3, display);
    put_u32(m, 4, fam.device);
    put_dim3(m, 5, fam.block);
  }
  out += as_record(f::kRecordFamily, payload);
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
    protozero::pbf_writer m(payload);
    for (size_t i = 0; i < chunk.kernels.size(); ++i) {
      const KernelExecution& k = chunk.kernels[i];
      protozero::pbf_writer e(m, 1);
      put_u64(e, 1, k.family_id);
      put_u64(e, 2, k.start_ns);
      put_u64(e, 3, k.end_ns);
      put_u32(e, 4, k.stream_id);
      put_u32(e, 5, k.context_id);
      put_u64(e, 6, k.correlation_id);
      put_dim3(e, 7, k.grid);
      put_u32(e, 8, k.graph_id);
      put_u64(e, 9, k.graph_node_id);
      put_bool(e, 10, k.replayed);
      put_u64(e, 11, kernel_paths[i]);
      put_bool(e, 12, k.cut_by_pause);
    }
    for (const CopyExecution& c : chunk.copies) {
      protozero::pbf_writer e(m, 2);
      put_enum(e, 1, c.kind);
      put_u64(e, 2, c.start_ns);
      put_u64(e, 3, c.end_ns);
      put_u64(e, 4, c.bytes);
      put_u32(e, 5, c.device);
      put_u32(e, 6, c.stream_id);
      put_u32(e, 7, c.context_id);
      put_u64(e, 8, c.correlation_id);
      put_bool(e, 9, c.pageable);
      put_u32(e, 10, c.graph_id);
    }
    for (size_t i = 0; i < chunk.nvtx_ranges.size(); ++i) {
      const NvtxRange& n = chunk.nvtx_ranges[i];
      protozero::pbf_writer e(m, 3);
      put_u64(e, 1, ranges[i].name);
      put_u64(e, 2, n.start_ns);
      put_u64(e, 3, n.end_ns);
      put_u32(e, 4, n.thread_id);
      put_u32(e, 5, n.depth);
      put_u64(e, 6, ranges[i].domain);
    }
    put_u64(m, 4, chunk.dropped_records);
    for (const auto& [start, end] : chunk.untraced) {
      protozero::pbf_writer iv(m, 5);
      put_u64(iv, 1, start);
      put_u64(iv, 2, end);
    }
  }
  out += as_record(f::kRecordTrace, payload);
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

  std::string payload;
  {
    protozero::pbf_writer m(payload);
    for (size_t i = 0; i < t.families.size(); ++i) {
      const triage::FamilyTimeStats& fam = t.families[i];
      protozero::pbf_writer fs(m, 1);
      fs.add_uint64(1, fam.family);  // even 0: an empty FamilyStats would be dropped (see as_record)
      put_u64(fs, 2, fam.launches);
      put_u64(fs, 3, fam.replayed_launches);
      put_u64(fs, 4, fam.graph_launches);
      put_u64(fs, 5, fam.concurrent_launches);
      put_stat(fs, 6, fam.total_ns);
      put_stat(fs, 7, fam.mean_ns());
      put_stat(fs, 8, fam.durations.quantile(0.5));
      put_stat(fs, 9, fam.durations.quantile(0.95));
      put_stat(fs, 10, fam.durations.min());
      put_stat(fs, 11, fam.durations.max());
      put_stat(fs, 12, t.time_share(fam));
      put_stat(fs, 13, t.amdahl_ceiling(fam));
      if (!paths[i].empty()) fs.add_packed_uint64(14, paths[i].begin(), paths[i].end());
      if (auto o = summary.outcomes.find(fam.family); o != summary.outcomes.end()) {
        put_enum(fs, 15, o->second.selection);
        put_string(fs, 16, o->second.selection_detail);
        put_u64(fs, 17, o->second.profiled_launch_index);
      }
    }
    for (const triage::DeviceTimeStats& d : t.devices) {
      protozero::pbf_writer dt(m, 2);
      dt.add_uint32(1, d.device);  // even 0: device 0 with nothing else set must stay in the list
      put_u64(dt, 2, d.first_start_ns);
      put_u64(dt, 3, d.last_end_ns);
      put_stat(dt, 4, d.busy_ns);
      put_stat(dt, 5, d.kernel_busy_ns);
      put_stat(dt, 6, d.copy_busy_ns);
      put_stat(dt, 7, d.copy_only_ns);
      put_stat(dt, 8, d.copy_overlapped_ns);
      put_stat(dt, 9, d.pageable_copy_ns);
      put_u64(dt, 10, d.kernels);
      put_u64(dt, 11, d.copies);
      put_u64(dt, 12, d.gaps);
      put_stat(dt, 13, d.gap_ns);
      put_stat(dt, 16, d.untraced_ns);
      for (const triage::IdleGap& g : d.largest_gaps) {
        protozero::pbf_writer iv(dt, 14);
        put_u64(iv, 1, g.start_ns);
        put_u64(iv, 2, g.end_ns);
      }
      for (const triage::LaunchBoundStretch& s : d.launch_bound) {
        protozero::pbf_writer lb(dt, 15);
        put_u64(lb, 1, s.start_ns);
        put_u64(lb, 2, s.end_ns);
        put_u64(lb, 3, s.kernels);
        put_stat(lb, 4, s.busy_ns);
        put_stat(lb, 5, s.mean_kernel_ns);
      }
    }
    for (const triage::CheckResult& c : summary.findings) put_check(m, 3, c);
    put_stat(m, 4, t.total_kernel_ns);
    put_u64(m, 5, t.kernel_executions);
    put_u64(m, 6, t.copy_executions);
    put_u64(m, 7, summary.dropped_records);
    put_u64(m, 8, t.late_records);
    {
      const SelectionPolicy& p = summary.selection;
      protozero::pbf_writer sp(m, 9);
      put_enum(sp, 1, p.mode);
      put_u32(sp, 2, p.top_k);
      put_stat(sp, 3, p.min_share);
      put_string(sp, 4, p.nvtx_include);
      put_string(sp, 5, p.nvtx_exclude);
    }
    put_u64(m, 10, summary.timeline_kernel_events);
  }
  out += as_record(f::kRecordTraceSummary, payload);
  return out;
}

std::string RecordEncoder::control(const ControlRequest& c) {
  std::string payload;
  {
    protozero::pbf_writer m(payload);
    put_u64(m, 1, c.id);
    put_enum(m, 2, c.source);
    put_string(m, 3, c.target);
    put_double(m, 4, c.window_seconds);
    put_u64(m, 5, c.requested_unix_ns);
    put_u64(m, 6, c.ended_unix_ns);
    put_enum(m, 7, c.state);
    if (!c.family_ids.empty()) m.add_packed_uint64(8, c.family_ids.begin(), c.family_ids.end());
    put_u32(m, 9, c.profiled_launches);
    put_string(m, 10, c.detail);
  }
  return as_record(f::kRecordControl, payload);
}

}  // namespace cutriage::wire
