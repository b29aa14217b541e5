// Shared by the tests that read cutriage files back: the triage engine's input rebuilt from a
// KernelProfile record (to re-run today's engine on a capture), and gzip inflation (pprof output).
#pragma once

#define ZLIB_CONST  // next_in is const
#include <zlib.h>

#include <optional>
#include <string>
#include <utility>

#include "catch.h"
#include "cutriage/triage/inputs.h"
#include "file_reader.h"

namespace cutriage::testing {

// Measured metrics (derived ones left out: the engine derives them again), launch shape, device
// limits as given, kernel replay with clocks as found, and the PC samples when the record has them.
inline triage::KernelInput input_from_record(const tools::ReadResult& r, const v1::KernelProfile& k,
                                             const triage::DeviceLimits& limits) {
  triage::KernelInput in;
  in.mangled_name = tools::lookup(r, k.mangled_name_iid());
  in.function_name = tools::lookup(r, k.function_name_iid());
  for (const v1::Metric& m : k.metrics()) {
    if (m.derived()) continue;
    in.metrics.set(std::string(tools::lookup(r, m.name_iid())), m.value(), std::string(tools::lookup(r, m.unit_iid())));
  }
  triage::LaunchConfig lc;
  lc.grid = {k.launch().grid().x(), k.launch().grid().y(), k.launch().grid().z()};
  lc.block = {k.launch().block().x(), k.launch().block().y(), k.launch().block().z()};
  lc.registers_per_thread = k.launch().registers_per_thread();
  lc.static_shared_bytes = k.launch().static_shared_bytes();
  lc.dynamic_shared_bytes = k.launch().dynamic_shared_bytes();
  lc.local_bytes_per_thread = k.launch().local_bytes_per_thread();
  in.launch = lc;
  in.device_limits = limits;
  // Always-on's assembled launches and a graph's own launches ran once each, nothing replayed.
  const bool no_replay = k.replay_mode() == v1::REPLAY_MODE_NONE;
  const bool application = k.replay_mode() == v1::REPLAY_MODE_APPLICATION;
  in.collection.replay_mode = no_replay     ? triage::ReplayMode::kNone
                              : application ? triage::ReplayMode::kApplication
                                            : triage::ReplayMode::kKernel;
  in.collection.clock_control = triage::ClockControl::kNone;
  in.collection.collector = triage::Collector::kAgent;  // the records read here are the agent's
  in.collection.passes = k.passes();
  in.collection.cache_control = no_replay || application ? "none" : "all";
  if (k.has_graph_scope()) {
    // Decision 0's comparison: the graph's traced replays, as their median on the record.
    if (k.unprofiled_duration_ns() > 0) in.unprofiled_durations_ns = {k.unprofiled_duration_ns()};
    if (k.time_share() > 0) in.time_share = k.time_share();
    const v1::GraphScope& g = k.graph_scope();
    triage::GraphScope scope;
    scope.graph_id = g.graph_id();
    scope.exec_id = g.exec_id();
    scope.share_of_graph = g.share_of_graph();
    scope.other_families = g.other_families();
    scope.replays_profiled = g.replays_profiled();
    scope.mean_replay_ns = g.mean_replay_ns();
    if (g.has_node_sampling()) {
      const v1::NodeSampling& n = g.node_sampling();
      triage::NodeSampling ns;
      ns.samples = n.samples();
      ns.interval_ns = n.interval_ns();
      ns.launch_correlation_id = n.launch_correlation_id();
      ns.launch_samples = n.launch_samples();
      ns.executions = n.executions();
      scope.node_sampling = ns;
    }
    in.graph_scope = scope;
  }
  if (k.has_pm_window()) {
    // Always-on's PM routing window: Decision 0 compares the window's durations with the traced ones.
    if (k.unprofiled_duration_ns() > 0) in.unprofiled_durations_ns = {k.unprofiled_duration_ns()};
    if (k.time_share() > 0) in.time_share = k.time_share();
    const v1::PmWindowScope& w = k.pm_window();
    triage::PmWindowScope scope;
    scope.samples = w.samples();
    scope.interval_ns = w.interval_ns();
    scope.window_start_ns = w.window_start_ns();
    scope.window_end_ns = w.window_end_ns();
    scope.window_samples = w.window_samples();
    scope.executions = w.executions();
    in.pm_window = scope;
  }
  for (const v1::AssembledLaunch& a : k.assembled_launches()) {
    triage::AssembledLaunch t;
    t.launch_index = a.launch_index();
    t.grid = {a.grid().x(), a.grid().y(), a.grid().z()};
    t.block = {a.block().x(), a.block().y(), a.block().z()};
    t.dynamic_shared_bytes = a.dynamic_shared_bytes();
    t.duration_ns = a.duration_ns();
    t.metric_group = a.metric_group();
    t.metrics = a.metrics();
    t.earlier_pid = a.earlier_pid();
    t.earlier_start_unix_ns = a.earlier_start_unix_ns();
    in.assembled_launches.push_back(t);
  }
  if (!k.has_pc_sampling()) return in;
  const v1::PcSampling& p = k.pc_sampling();
  triage::PcSampleSummary s;
  s.total_samples = p.total_samples();
  s.dropped_samples = p.dropped_samples();
  s.hardware_buffer_full = p.hardware_buffer_full();
  s.has_line_info = p.has_line_info();
  s.sampling_period_log2 = p.sampling_period_log2();
  s.from_launch_index = p.from_launch_index();
  s.error = p.error();
  for (const v1::SampledPc& pc : p.pcs()) {
    triage::PcSampleLine line;
    line.file = tools::lookup(r, pc.file_iid());
    line.line = pc.line();
    line.pc_offset = pc.pc_offset();
    line.sass = pc.sass();
    line.function = tools::lookup(r, pc.function_iid());
    line.inlined_file = tools::lookup(r, pc.inlined_file_iid());
    line.inlined_line = pc.inlined_line();
    for (const v1::StallCount& st : pc.stalls()) {
      line.samples_by_reason[std::string(tools::lookup(r, st.reason_iid()))] += st.samples();
    }
    s.lines.push_back(std::move(line));
  }
  in.pc_samples = std::move(s);
  return in;
}

// The device limits a session header recorded for its one GPU, over the known chip's table.
inline triage::DeviceLimits device_limits_from_header(const v1::SessionHeader& header) {
  REQUIRE(header.gpus_size() == 1);
  const v1::Gpu& g = header.gpus(0);
  std::optional<triage::DeviceLimits> known = triage::known_device_limits(g.chip());
  REQUIRE(known.has_value());
  triage::DeviceLimits d = *known;
  d.sm_count = g.sm_count();
  d.max_threads_per_sm = g.limits().max_threads_per_sm();
  d.max_warps_per_sm = g.limits().max_warps_per_sm();
  d.max_blocks_per_sm = g.limits().max_blocks_per_sm();
  d.registers_per_sm = g.limits().registers_per_sm();
  d.shared_bytes_per_sm = g.limits().shared_bytes_per_sm();
  d.shared_bytes_per_block_optin = g.limits().shared_bytes_per_block_optin();
  d.reserved_shared_bytes_per_block = g.limits().reserved_shared_bytes_per_block();
  return d;
}

// One gzip member, inflated (windowBits 15 + 16: gzip framing only, no zlib or raw deflate).
inline std::string gunzip(const std::string& in) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  zs.next_in = reinterpret_cast<const Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[4096];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    REQUIRE((rc == Z_OK || rc == Z_STREAM_END));
    out.append(buf, sizeof buf - zs.avail_out);
  }
  CHECK(zs.avail_in == 0);  // nothing after the member
  inflateEnd(&zs);
  return out;
}

}  // namespace cutriage::testing
