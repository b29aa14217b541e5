#include "cutriage/wire/writer.h"
#include "cutriage/wire/utf8.h"

#include <protozero/pbf_writer.hpp>

#include <algorithm>
#include <vector>

namespace cutriage::wire {

namespace {

// Field numbers of cutriage.v1, by message. Kept next to the encoder so a schema change shows up
// here in review; tests/unit/tools/test_wire_roundtrip.cpp parses the output with libprotobuf.
namespace f {
constexpr protozero::pbf_tag_type kFileRecords = 1;
constexpr protozero::pbf_tag_type kRecordSession = 1, kRecordInterned = 2, kRecordKernel = 3,
                                   kRecordNotice = 4, kRecordSessionEnd = 5;
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

// Wraps one Record's bytes as a File.records field.
std::string as_file_field(const std::string& record) {
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
  std::string record;
  {
    protozero::pbf_writer r(record);
    protozero::pbf_writer s(r, f::kRecordInterned);
    s.add_uint64(f::kInternedId, id);
    put_text(s, f::kInternedValue, value);
  }
  out += as_file_field(record);
  return id;
}

std::string RecordEncoder::session(const SessionInfo& s) {
  std::string record;
  {
    protozero::pbf_writer r(record);
    protozero::pbf_writer m(r, f::kRecordSession);
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
  }
  return as_file_field(record);
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

  std::string record;
  {
    protozero::pbf_writer r(record);
    protozero::pbf_writer m(r, f::kRecordKernel);
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
      put_double(m, 15, sorted[sorted.size() / 2]);
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
  }
  out += as_file_field(record);
  return out;
}

std::string RecordEncoder::notice(const Notice& n) {
  std::string record;
  {
    protozero::pbf_writer r(record);
    protozero::pbf_writer m(r, f::kRecordNotice);
    put_enum(m, 1, n.severity);
    put_string(m, 2, n.code);
    put_string(m, 3, n.message);
    put_u64(m, 4, n.time_unix_ns);
  }
  return as_file_field(record);
}

std::string RecordEncoder::session_end(const SessionEnd& e) {
  std::string out;
  std::vector<uint64_t> names;
  names.reserve(e.kernels.size());
  for (const KernelLaunchStats& k : e.kernels) names.push_back(intern(k.mangled_name, out));
  std::string record;
  {
    protozero::pbf_writer r(record);
    protozero::pbf_writer m(r, f::kRecordSessionEnd);
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
  }
  out += as_file_field(record);
  return out;
}

}  // namespace cutriage::wire
