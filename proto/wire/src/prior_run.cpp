#include "cutriage/wire/prior_run.h"
#include "cutriage/wire/schema.h"
#include "pbf_read.h"

#include <map>
#include <protozero/pbf_reader.hpp>
#include <tuple>
#include <unordered_map>

namespace cutriage::wire {
namespace {

// Field numbers and enum values: schema.h, generated from proto/cutriage/v1/cutriage.proto.
using K = schema::KernelProfile;
using LC = schema::LaunchConfig;
using A = schema::AssembledLaunch;
using pbf::boolean;
using pbf::read_dim3;
using pbf::enum32;
using pbf::f64;
using pbf::message;
using pbf::text;
using pbf::u32;
using pbf::u64;
using pbf::wire_number;

triage::LaunchConfig read_launch(protozero::pbf_reader m) {
  triage::LaunchConfig l;
  while (m.next()) {
    switch (m.tag()) {
      case LC::kGrid: l.grid = read_dim3(message(m)); break;
      case LC::kBlock: l.block = read_dim3(message(m)); break;
      case LC::kCluster: l.cluster = read_dim3(message(m)); break;
      case LC::kRegistersPerThread: l.registers_per_thread = u32(m); break;
      case LC::kStaticSharedBytes: l.static_shared_bytes = u32(m); break;
      case LC::kDynamicSharedBytes: l.dynamic_shared_bytes = u32(m); break;
      case LC::kLocalBytesPerThread: l.local_bytes_per_thread = u32(m); break;
      case LC::kSharedConfigBytesPerSm: l.shared_config_bytes_per_sm = u32(m); break;
      default: m.skip();
    }
  }
  return l;
}

// A kernel record as read, names still interned (ids are per file: resolved once the file is read).
struct RawMetric {
  uint64_t name = 0;
  double value = 0;
  uint64_t unit = 0;
  bool derived = false;
  uint64_t from_launch = 0;
};
struct RawKernel {
  uint64_t mangled = 0;
  uint32_t device = 0;
  uint64_t launch_index = 0;
  uint32_t revision = 0;
  int32_t status = 0;
  int32_t replay = 0;
  bool has_launch = false;
  bool graph_scope = false;  // a graph's counters (its kernels' records): never resumed
  triage::LaunchConfig launch;
  std::vector<RawMetric> metrics;
  std::vector<std::string> rejected;
  std::vector<triage::AssembledLaunch> assembled;
};

RawKernel read_kernel(protozero::pbf_reader m) {
  RawKernel k;
  while (m.next()) {
    switch (m.tag()) {
      case K::kMangledNameIid: k.mangled = u64(m); break;
      case K::kDevice: k.device = u32(m); break;
      case K::kLaunchIndex: k.launch_index = u64(m); break;
      case K::kLaunch:
        k.launch = read_launch(message(m));
        k.has_launch = true;
        break;
      case K::kMetrics: {
        using M = schema::Metric;
        protozero::pbf_reader mm = message(m);
        RawMetric r;
        while (mm.next()) {
          switch (mm.tag()) {
            case M::kNameIid: r.name = u64(mm); break;
            case M::kValue: r.value = f64(mm); break;
            case M::kUnitIid: r.unit = u64(mm); break;
            case M::kDerived: r.derived = boolean(mm); break;
            case M::kFromLaunchIndex: r.from_launch = u64(mm); break;
            default: mm.skip();
          }
        }
        k.metrics.push_back(r);
        break;
      }
      case K::kReplayMode: k.replay = enum32(m); break;
      case K::kGraphScope:
        k.graph_scope = true;
        m.skip();
        break;
      case K::kStatus: k.status = enum32(m); break;
      case K::kRevision: k.revision = u32(m); break;
      case K::kRejectedMetrics: k.rejected.push_back(text(m)); break;
      case K::kAssembledLaunches: {
        protozero::pbf_reader a = message(m);
        triage::AssembledLaunch l;
        while (a.next()) {
          switch (a.tag()) {
            case A::kLaunchIndex: l.launch_index = u64(a); break;
            case A::kGrid: l.grid = read_dim3(message(a)); break;
            case A::kBlock: l.block = read_dim3(message(a)); break;
            case A::kDynamicSharedBytes: l.dynamic_shared_bytes = u32(a); break;
            case A::kDurationNs: l.duration_ns = f64(a); break;
            case A::kMetricGroup: l.metric_group = u32(a); break;
            case A::kMetrics: l.metrics = u32(a); break;
            case A::kEarlierPid: l.earlier_pid = u64(a); break;
            case A::kEarlierStartUnixNs: l.earlier_start_unix_ns = u64(a); break;
            default: a.skip();
          }
        }
        k.assembled.push_back(l);
        break;
      }
      default: m.skip();
    }
  }
  return k;
}

}  // namespace

std::optional<PriorRun> parse_prior_run(std::string_view bytes, std::string* error) {
  PriorRun run;
  std::unordered_map<uint64_t, std::string> strings;
  std::map<uint32_t, std::string> chips;  // device -> chip
  // Per family (mangled id, device, block): the record to resume from.
  std::map<std::tuple<uint64_t, uint32_t, uint32_t, uint32_t, uint32_t>, RawKernel> latest;
  const auto on_session = [&](protozero::pbf_reader s) {
    using H = schema::SessionHeader;
    while (s.next()) {
      switch (s.tag()) {
        case H::kAgentVersion: run.agent_version = text(s); break;
        case H::kPid: run.pid = u64(s); break;
        case H::kStartTimeUnixNs: run.start_unix_ns = u64(s); break;
        case H::kMode: run.mode = text(s); break;
        case H::kSettings: {
          protozero::pbf_reader cs = message(s);
          while (cs.next()) {
            if (cs.tag() == schema::CollectionSettings::kReplayMode) {
              run.application_replay = enum32(cs) == wire_number(schema::ReplayMode::kApplication);
            } else {
              cs.skip();
            }
          }
          break;
        }
        case H::kGpus: {
          protozero::pbf_reader g = message(s);
          uint32_t device = 0;
          std::string chip;
          while (g.next()) {
            if (g.tag() == schema::Gpu::kDevice) {
              device = u32(g);
            } else if (g.tag() == schema::Gpu::kChip) {
              chip = text(g);
            } else {
              g.skip();
            }
          }
          chips[device] = chip;
          break;
        }
        default: s.skip();
      }
    }
  };
  const auto on_field = [&](protozero::pbf_reader& record) {
    switch (record.tag()) {
      case schema::Record::kInterned: pbf::read_interned(message(record), strings); break;
      case schema::Record::kKernel: {
        RawKernel k = read_kernel(message(record));
        // Always-on records only: assembled from single-pass launches (replay mode none) or from
        // stages over the family's own launches (CUTRIAGE_STAGE_PASSES: application replay), none
        // replayed; not a graph's counters, which are the graph's and not the kernel's own.
        const bool single_pass = k.replay == wire_number(schema::ReplayMode::kNone);
        const bool stages = k.replay == wire_number(schema::ReplayMode::kApplication) && !k.graph_scope;
        if (k.status != wire_number(schema::ProfileStatus::kProfiled) || !(single_pass || stages) ||
            k.assembled.empty() || !k.has_launch || k.mangled == 0) {
          break;
        }
        const auto key = std::make_tuple(k.mangled, k.device, k.launch.block.x, k.launch.block.y, k.launch.block.z);
        auto it = latest.find(key);
        if (it == latest.end() || std::make_pair(k.launch_index, k.revision) >=
                                      std::make_pair(it->second.launch_index, it->second.revision)) {
          latest[key] = std::move(k);
        }
        break;
      }
      default: record.skip();
    }
  };
  if (!pbf::for_each_record(bytes, on_session, on_field, &run.truncated, error)) return std::nullopt;
  auto lookup = [&](uint64_t id) -> std::string {
    auto it = strings.find(id);
    return it == strings.end() ? std::string() : it->second;
  };
  for (auto& [key, k] : latest) {
    PriorFamily fam;
    fam.mangled_name = lookup(k.mangled);
    if (fam.mangled_name.empty()) continue;  // its name's record is missing: cannot be matched
    fam.device = k.device;
    if (auto c = chips.find(k.device); c != chips.end()) fam.chip = c->second;
    fam.launch = k.launch;
    fam.launch_index = k.launch_index;
    for (const RawMetric& m : k.metrics) {
      if (m.derived) continue;
      std::string name = lookup(m.name);
      if (name.empty()) continue;
      fam.metrics.push_back({std::move(name), m.value, lookup(m.unit), m.from_launch != 0 ? m.from_launch : k.launch_index});
    }
    fam.rejected = std::move(k.rejected);
    for (triage::AssembledLaunch& a : k.assembled) {
      if (!a.from_earlier_process()) {
        a.earlier_pid = run.pid;
        a.earlier_start_unix_ns = run.start_unix_ns;
      }
      fam.assembled.push_back(a);
    }
    run.families.push_back(std::move(fam));
  }
  return run;
}

}  // namespace cutriage::wire
