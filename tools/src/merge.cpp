#include "merge.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "cutriage/triage/engine.h"
#include "cutriage/triage/inputs.h"
#include "cutriage/wire/prior_run.h"
#include "cutriage/wire/records.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"

namespace cutriage::tools {
namespace {

namespace v1 = cutriage::v1;

// What parse_prior_run does not read, from the file's own records: its session header (GPU names
// and limits, command line, versions) and the names of its kernels for people.
struct FileFacts {
  std::optional<v1::SessionHeader> header;
  // mangled -> (demangled, function)
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> names;
};

FileFacts scan_file(std::string_view bytes) {
  FileFacts facts;
  std::unordered_map<uint64_t, std::string> strings;
  std::set<std::tuple<uint64_t, uint64_t, uint64_t>> kernel_names;  // interned ids, resolved at the end
  (void)stream_cutriage_bytes(bytes, [&](v1::Record& r) {
    if (r.has_session()) {
      if (!facts.header) facts.header = std::move(*r.mutable_session());
    } else if (r.has_interned()) {
      strings[r.interned().id()] = r.interned().value();
    } else if (r.has_kernel()) {
      const v1::KernelProfile& k = r.kernel();
      kernel_names.emplace(k.mangled_name_iid(), k.demangled_name_iid(), k.function_name_iid());
    }
  });
  const auto lookup_id = [&](uint64_t id) -> std::string {
    auto it = strings.find(id);
    return it == strings.end() ? std::string() : it->second;
  };
  for (const auto& [mangled, demangled, function] : kernel_names) {
    std::string name = lookup_id(mangled);
    if (name.empty()) continue;
    auto& slot = facts.names[name];
    if (slot.first.empty()) slot.first = lookup_id(demangled);
    if (slot.second.empty()) slot.second = lookup_id(function);
  }
  return facts;
}

struct LoadedFile {
  const MergeInput* input = nullptr;
  wire::PriorRun run;
  FileFacts facts;
};

// One family of one file, as it goes into a merged family.
struct Contribution {
  size_t file = 0;  // index into the loaded files
  uint64_t pid = 0;
  const wire::PriorFamily* family = nullptr;
};

// mangled name, chip, block x y z, grid x y z
using ShapeKey = std::tuple<std::string, std::string, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>;

struct MergedFamily {
  std::string mangled;
  std::string chip;
  triage::LaunchConfig launch;
  uint64_t launch_index = 0;
  std::vector<wire::PriorFamily::Value> metrics;
  std::map<uint64_t, size_t> counters_by_pid;  // kept counters, by the process that measured them
  std::vector<std::string> rejected;
  std::vector<triage::AssembledLaunch> assembled;
  std::vector<uint64_t> file_pids;  // the contributing files' processes, in contribution order
  std::string demangled;
  std::string function;
  uint32_t device = 0;  // in the merged file (see assign_devices)
};

std::string dim3_text(const triage::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// The process that measured `v` of a contribution: the one whose assembled launch of that launch
// index holds it, when only one process's does; else the file's own.
uint64_t measured_by(const Contribution& c, const wire::PriorFamily::Value& v) {
  std::set<uint64_t> pids;
  for (const triage::AssembledLaunch& a : c.family->assembled) {
    if (a.launch_index == v.launch_index) pids.insert(a.earlier_pid != 0 ? a.earlier_pid : c.pid);
  }
  return pids.size() == 1 ? *pids.begin() : c.pid;
}

MergedFamily merge_group(std::vector<Contribution> group, const std::vector<LoadedFile>& files) {
  // The process with the most counters first: its values win (ties: lowest pid, then input order).
  std::stable_sort(group.begin(), group.end(), [](const Contribution& a, const Contribution& b) {
    if (a.family->metrics.size() != b.family->metrics.size()) {
      return a.family->metrics.size() > b.family->metrics.size();
    }
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.file != b.file) return a.file < b.file;
    return a.family->device < b.family->device;
  });
  MergedFamily m;
  const wire::PriorFamily& top = *group.front().family;
  m.mangled = top.mangled_name;
  m.chip = top.chip;
  m.launch = top.launch;
  m.launch_index = top.launch_index;

  std::set<std::string> measured;
  // The launches the kept counters were measured on, per contribution: (launch index, pid).
  std::vector<std::set<std::pair<uint64_t, uint64_t>>> used(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    const Contribution& c = group[i];
    for (const wire::PriorFamily::Value& v : c.family->metrics) {
      if (!measured.insert(v.name).second) continue;
      m.metrics.push_back(v);
      ++m.counters_by_pid[measured_by(c, v)];
      // Its launch: every process's launch of that index in the file, when more than one has it
      // (a file resumed from another numbers launches per process), so none that counted is lost.
      for (const triage::AssembledLaunch& a : c.family->assembled) {
        if (a.launch_index == v.launch_index) used[i].emplace(v.launch_index, a.earlier_pid != 0 ? a.earlier_pid : c.pid);
      }
    }
    if (std::find(m.file_pids.begin(), m.file_pids.end(), c.pid) == m.file_pids.end()) m.file_pids.push_back(c.pid);
  }
  std::sort(m.metrics.begin(), m.metrics.end(),
            [](const wire::PriorFamily::Value& a, const wire::PriorFamily::Value& b) { return a.name < b.name; });

  // Rejected by any contributing process and measured by none. A rejection is the chip's answer
  // for that counter in one pass (refused twice, or no value back), not the process's: a replica
  // that never asked would otherwise make a resuming agent ask again, and its family would not
  // complete where a process alone would have.
  std::set<std::string> rejected;
  for (const Contribution& c : group) rejected.insert(c.family->rejected.begin(), c.family->rejected.end());
  for (const std::string& r : rejected) {
    if (measured.count(r) == 0) m.rejected.push_back(r);
  }

  // The launches a kept counter was measured on, each once (a file that resumed from another holds
  // that one's launches too), taken in turns so that every process keeps some under the cap. A
  // launch whose counters another process's values stand for is left out: a resuming agent counts
  // the record's launches against its most (kMaxAssembledLaunches), and replicas measuring the same
  // group would fill it with launches that add nothing.
  std::vector<std::vector<triage::AssembledLaunch>> lists;
  for (size_t i = 0; i < group.size(); ++i) {
    const Contribution& c = group[i];
    std::vector<triage::AssembledLaunch>& list = lists.emplace_back();
    for (triage::AssembledLaunch a : c.family->assembled) {
      if (a.earlier_pid == 0) a.earlier_pid = c.pid;
      if (a.earlier_start_unix_ns == 0 && a.earlier_pid == c.pid) a.earlier_start_unix_ns = files[c.file].run.start_unix_ns;
      if (used[i].count({a.launch_index, a.earlier_pid}) > 0) list.push_back(a);
    }
  }
  std::set<std::tuple<uint64_t, uint64_t, uint64_t, uint32_t>> seen;
  for (size_t turn = 0; m.assembled.size() < kMaxMergedLaunches; ++turn) {
    bool any = false;
    for (const std::vector<triage::AssembledLaunch>& list : lists) {
      if (turn >= list.size() || m.assembled.size() >= kMaxMergedLaunches) continue;
      any = true;
      const triage::AssembledLaunch& a = list[turn];
      if (seen.emplace(a.earlier_pid, a.earlier_start_unix_ns, a.launch_index, a.metric_group).second) {
        m.assembled.push_back(a);
      }
    }
    if (!any) break;
  }
  std::stable_sort(m.assembled.begin(), m.assembled.end(),
                   [](const triage::AssembledLaunch& a, const triage::AssembledLaunch& b) {
                     return std::tie(a.earlier_pid, a.earlier_start_unix_ns, a.launch_index) <
                            std::tie(b.earlier_pid, b.earlier_start_unix_ns, b.launch_index);
                   });

  for (const Contribution& c : group) {
    auto it = files[c.file].facts.names.find(m.mangled);
    if (it == files[c.file].facts.names.end()) continue;
    if (m.demangled.empty()) m.demangled = it->second.first;
    if (m.function.empty()) m.function = it->second.second;
  }
  return m;
}

// Device indices of the merged file. parse_prior_run (and so CUTRIAGE_RESUME) keeps one record per
// mangled name, device and block: merged families of one kernel and block but different grids get
// devices of their own, so that every one reads back. Among those, the one with the most counters
// gets the highest index: a resuming agent keeps one per name, chip and block, the last it reads.
// Returns the chip of each device index.
std::vector<std::string> assign_devices(std::vector<MergedFamily>& merged) {
  std::map<std::tuple<std::string, std::string, uint32_t, uint32_t, uint32_t>, std::vector<MergedFamily*>> by_block;
  for (MergedFamily& m : merged) {
    by_block[{m.mangled, m.chip, m.launch.block.x, m.launch.block.y, m.launch.block.z}].push_back(&m);
  }
  std::map<std::string, size_t> slots_per_chip;
  std::map<MergedFamily*, size_t> slot_of;
  for (auto& [key, list] : by_block) {
    std::stable_sort(list.begin(), list.end(), [](const MergedFamily* a, const MergedFamily* b) {
      return std::make_pair(a->metrics.size(), a->assembled.size()) < std::make_pair(b->metrics.size(), b->assembled.size());
    });
    for (size_t i = 0; i < list.size(); ++i) slot_of[list[i]] = i;
    size_t& slots = slots_per_chip[std::get<1>(key)];
    slots = std::max(slots, list.size());
  }
  std::map<std::string, size_t> first_device;
  std::vector<std::string> chips;
  for (const auto& [chip, slots] : slots_per_chip) {
    first_device[chip] = chips.size();
    chips.insert(chips.end(), slots, chip);
  }
  for (MergedFamily& m : merged) m.device = static_cast<uint32_t>(first_device[m.chip] + slot_of[&m]);
  return chips;
}

// The limits of `chip`: the known chip's table, with what an input's header measured over it.
std::optional<triage::DeviceLimits> limits_for(const std::string& chip, const v1::Gpu* gpu) {
  std::optional<triage::DeviceLimits> known = triage::known_device_limits(chip);
  if (gpu == nullptr) return known;
  triage::DeviceLimits d = known.value_or(triage::DeviceLimits{});
  d.chip = chip;
  const auto over = [](auto& field, auto value) {
    if (value != 0) field = static_cast<std::remove_reference_t<decltype(field)>>(value);
  };
  over(d.cc_major, gpu->cc_major());
  over(d.cc_minor, gpu->cc_minor());
  over(d.sm_count, gpu->sm_count());
  over(d.sm_clock_hz, gpu->sm_clock_hz());
  over(d.memory_clock_hz, gpu->memory_clock_hz());
  over(d.memory_bytes, gpu->memory_bytes());
  over(d.dram_peak_bytes_per_second, gpu->dram_peak_bytes_per_second());
  const v1::DeviceLimits& l = gpu->limits();
  over(d.warp_size, l.warp_size());
  over(d.max_threads_per_sm, l.max_threads_per_sm());
  over(d.max_warps_per_sm, l.max_warps_per_sm());
  over(d.max_blocks_per_sm, l.max_blocks_per_sm());
  over(d.max_threads_per_block, l.max_threads_per_block());
  over(d.registers_per_sm, l.registers_per_sm());
  over(d.max_registers_per_thread, l.max_registers_per_thread());
  over(d.register_alloc_unit, l.register_alloc_unit());
  over(d.shared_bytes_per_sm, l.shared_bytes_per_sm());
  over(d.shared_bytes_per_block_optin, l.shared_bytes_per_block_optin());
  over(d.reserved_shared_bytes_per_block, l.reserved_shared_bytes_per_block());
  over(d.shared_alloc_unit, l.shared_alloc_unit());
  return d;
}

// The first GPU of `chip` in the inputs' headers, in input order.
const v1::Gpu* gpu_of(const std::vector<LoadedFile>& files, const std::string& chip) {
  for (const LoadedFile& f : files) {
    if (!f.facts.header) continue;
    for (const v1::Gpu& g : f.facts.header->gpus()) {
      if (g.chip() == chip) return &g;
    }
  }
  return nullptr;
}

std::string counted(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "gemm_kernel: 41 counters from pid 1234 (3 launches), 17 from pid 5678 (1 launch)"
std::string contribution_text(const MergedFamily& m, const std::string& name) {
  std::map<uint64_t, size_t> launches;
  for (const triage::AssembledLaunch& a : m.assembled) ++launches[a.earlier_pid];
  std::set<uint64_t> pids;
  for (const auto& [pid, n] : m.counters_by_pid) pids.insert(pid);
  for (const auto& [pid, n] : launches) pids.insert(pid);
  std::vector<uint64_t> order(pids.begin(), pids.end());
  const auto counters = [&m](uint64_t pid) {
    auto it = m.counters_by_pid.find(pid);
    return it == m.counters_by_pid.end() ? size_t{0} : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return counters(a) > counters(b); });
  std::string text = name + ":";
  bool first = true;
  for (uint64_t pid : order) {
    text += first ? " " : ", ";
    text += first ? counted(counters(pid), "counter", "counters") : std::to_string(counters(pid));
    text += " from pid " + std::to_string(pid) + " (" + counted(launches[pid], "launch", "launches") + ")";
    first = false;
  }
  // Files that held the family but added nothing (every counter they measured, another had).
  std::string none;
  for (uint64_t pid : m.file_pids) {
    if (pids.count(pid) == 0) none += (none.empty() ? "" : ", ") + std::to_string(pid);
  }
  if (!none.empty()) text += "; nothing new from pid " + none;
  return text;
}

wire::KernelRecord merged_record(const MergedFamily& m, const std::vector<LoadedFile>& files) {
  wire::KernelRecord record;
  triage::KernelInput& in = record.input;
  in.mangled_name = m.mangled;
  in.demangled_name = m.demangled;
  in.function_name = m.function;
  in.device = m.device;
  in.launch_index = m.launch_index;
  in.launch = m.launch;
  if (!m.chip.empty()) in.device_limits = limits_for(m.chip, gpu_of(files, m.chip));
  for (const wire::PriorFamily::Value& v : m.metrics) {
    in.metrics.set(v.name, v.value, v.unit);
    if (v.launch_index != 0) record.metric_launch[v.name] = v.launch_index;
  }
  in.assembled_launches = m.assembled;
  // As the agent's always-on records: one single-pass group per launch, none replayed, caches
  // and clocks as the application left them; nothing collected by this file's own process.
  in.collection.collector = triage::Collector::kAgent;
  in.collection.replay_mode = triage::ReplayMode::kNone;
  in.collection.cache_control = "none";
  in.collection.clock_control = triage::ClockControl::kNone;
  in.collection.passes = 0;
  record.rejected_metrics = m.rejected;
  record.status = wire::ProfileStatus::kProfiled;
  std::string pids;
  for (uint64_t pid : m.file_pids) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
  record.status_detail = "merged by cutriage merge from the always-on files of pid " + pids;
  if (auto d = in.metrics.get("gpu__time_duration.sum")) record.duration_ns = *d;
  record.diagnosis = triage::triage_kernel(in, {});
  return record;
}

wire::SessionInfo merged_session(const std::vector<LoadedFile>& used, const std::vector<std::string>& device_chips) {
  wire::SessionInfo s;
  s.agent_version = CUTRIAGE_VERSION;
  s.host = "merged";
  s.pid = 0;
  s.mode = "always-on";
  s.replay_mode = triage::ReplayMode::kNone;
  s.clock_control = triage::ClockControl::kNone;
  s.cache_control = "none";
  s.source = wire::SessionSource::kUnspecified;
  for (const LoadedFile& f : used) {
    s.source_path += (s.source_path.empty() ? "" : " ") + f.input->path;
    if (f.run.start_unix_ns != 0 && (s.start_time_unix_ns == 0 || f.run.start_unix_ns < s.start_time_unix_ns)) {
      s.start_time_unix_ns = f.run.start_unix_ns;
    }
  }
  for (const LoadedFile& f : used) {
    if (!f.facts.header) continue;
    const v1::SessionHeader& h = *f.facts.header;
    s.command_line.assign(h.command_line().begin(), h.command_line().end());
    s.driver_version = h.driver_version();
    s.cuda_version = h.cuda_version();
    s.cupti_version = h.cupti_version();
    s.metric_set = h.settings().metric_set();
    s.kernel_filter = h.settings().kernel_filter();
    break;
  }
  for (size_t device = 0; device < device_chips.size(); ++device) {
    const std::string& chip = device_chips[device];
    if (chip.empty()) continue;
    wire::GpuInfo g;
    g.device = static_cast<uint32_t>(device);
    const v1::Gpu* seen = gpu_of(used, chip);
    if (seen != nullptr) g.name = seen->name();
    g.limits = limits_for(chip, seen).value_or(triage::DeviceLimits{});
    g.limits.chip = chip;
    s.gpus.push_back(std::move(g));
  }
  return s;
}

}  // namespace

MergeResult merge_always_on(const std::vector<MergeInput>& inputs) {
  MergeResult result;
  std::vector<LoadedFile> files;
  for (const MergeInput& input : inputs) {
    std::string error;
    std::optional<wire::PriorRun> run = wire::parse_prior_run(input.bytes, &error);
    if (!run) {
      result.status = MergeStatus::kNotCutriage;
      result.error = input.path + ": " + error;
      return result;
    }
    if (run->mode != "always-on" && !run->application_replay) {
      result.warnings.push_back(input.path + ": not an always-on file (mode \"" + run->mode +
                                "\", no application replay); skipped");
      continue;
    }
    if (run->truncated) {
      result.warnings.push_back(input.path + ": cut short (its process was killed while writing?); its complete "
                                "records are used");
    }
    LoadedFile& f = files.emplace_back();
    f.input = &input;
    f.run = std::move(*run);
    f.facts = scan_file(input.bytes);
  }
  if (files.empty()) {
    result.status = MergeStatus::kNoAlwaysOn;
    result.error = "no input was written in always-on mode (or under application replay): nothing to merge";
    return result;
  }
  result.files = files.size();

  std::map<ShapeKey, std::vector<Contribution>> groups;
  for (size_t i = 0; i < files.size(); ++i) {
    for (const wire::PriorFamily& fam : files[i].run.families) {
      const triage::LaunchConfig& l = fam.launch;
      groups[{fam.mangled_name, fam.chip, l.block.x, l.block.y, l.block.z, l.grid.x, l.grid.y, l.grid.z}].push_back(
          {i, files[i].run.pid, &fam});
    }
  }
  std::vector<MergedFamily> merged;
  merged.reserve(groups.size());
  for (auto& [key, group] : groups) merged.push_back(merge_group(std::move(group), files));
  const std::vector<std::string> device_chips = assign_devices(merged);

  std::map<std::string, size_t> per_mangled;
  for (const MergedFamily& m : merged) ++per_mangled[m.mangled];
  wire::RecordEncoder enc;
  result.bytes = enc.session(merged_session(files, device_chips));
  for (const MergedFamily& m : merged) {
    result.bytes += enc.kernel(merged_record(m, files));
    std::string name = !m.function.empty() ? m.function : !m.demangled.empty() ? m.demangled : m.mangled;
    if (per_mangled[m.mangled] > 1) name += " (grid " + dim3_text(m.launch.grid) + ")";
    wire::Notice n;
    n.severity = wire::Severity::kInfo;
    n.code = "merge";
    n.message = contribution_text(m, name);
    result.bytes += enc.notice(n);
    std::set<uint64_t> pids;
    for (const triage::AssembledLaunch& a : m.assembled) pids.insert(a.earlier_pid);
    if (pids.size() > 1) ++result.across_processes;
  }
  result.families = merged.size();
  return result;
}

}  // namespace cutriage::tools
