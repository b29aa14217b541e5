#include "pprof_export.h"

#define ZLIB_CONST  // next_in is const: the input is never written through
#include <zlib.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "cutriage/base/demangle.h"
#include "pc_samples.h"
#include "report.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
namespace pp = perftools::profiles;

namespace {

int64_t as_int64(uint64_t v) {
  return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                      : static_cast<int64_t>(v);
}

std::string kernel_display_name(const ReadResult& file, const v1::KernelProfile& k) {
  std::string name(lookup(file, k.demangled_name_iid()));
  if (name.empty()) name = demangle(lookup(file, k.mangled_name_iid()));
  if (name.empty()) name = std::string(lookup(file, k.function_name_iid()));
  return name.empty() ? std::string("(unnamed kernel)") : name;
}

// A device function's short name for frames: "helper" for "_Z6helperf".
std::string short_function_name(std::string_view mangled) {
  std::string base = function_base_name(demangle(mangled));
  return base.empty() ? std::string(mangled) : base;
}

bool matches(const ReadResult& file, const v1::KernelProfile& k, std::string_view filter) {
  if (filter.empty()) return true;
  std::string_view mangled = lookup(file, k.mangled_name_iid());
  std::string demangled(lookup(file, k.demangled_name_iid()));
  if (demangled.empty()) demangled = demangle(mangled);
  return mangled.find(filter) != std::string_view::npos || demangled.find(filter) != std::string::npos;
}

// The profile's tables: strings (entry 0 ""), and one Function and one Location per frame, the
// Location's single Line pointing at its Function (pprof names a frame by its Function).
class ProfileTables {
 public:
  explicit ProfileTables(pp::Profile& p) : p_(p) { str(""); }

  int64_t str(std::string_view s) {
    auto [it, added] = strings_.try_emplace(std::string(s), static_cast<int64_t>(p_.string_table_size()));
    if (added) p_.add_string_table(it->first);
    return it->second;
  }

  struct Frame {
    std::string name;         // what pprof shows
    std::string system_name;  // e.g. the mangled name
    std::string filename;
    int64_t line = 0;
    uint64_t address = 0;
  };

  // The location of the frame known as `key` (unique per kind of frame), made on first use.
  uint64_t location(const std::string& key, const Frame& frame) {
    auto it = locations_.find(key);
    if (it != locations_.end()) return it->second;
    const uint64_t id = static_cast<uint64_t>(p_.location_size()) + 1;  // ids are nonzero
    pp::Function* fn = p_.add_function();
    fn->set_id(id);
    fn->set_name(str(frame.name));
    fn->set_system_name(str(frame.system_name.empty() ? frame.name : frame.system_name));
    if (!frame.filename.empty()) fn->set_filename(str(frame.filename));
    fn->set_start_line(frame.line);
    pp::Location* loc = p_.add_location();
    loc->set_id(id);
    loc->set_address(frame.address);
    pp::Line* line = loc->add_line();
    line->set_function_id(id);
    line->set_line(frame.line);
    locations_.emplace(key, id);
    return id;
  }

 private:
  pp::Profile& p_;
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::string, uint64_t> locations_;
};

std::string key_of(std::initializer_list<std::string_view> parts) {
  std::string key;
  for (std::string_view part : parts) {
    key += part;
    key += '\0';
  }
  return key;
}

std::string kernel_summary(const ReadResult& file, const v1::KernelProfile& k, const PcSamplingView& view) {
  const v1::PcSampling& pcs = k.pc_sampling();
  std::string s = kernel_display_name(file, k);
  uint64_t launch = pcs.from_launch_index() != 0 ? pcs.from_launch_index() : k.launch_index();
  if (launch != 0) s += ", launch #" + std::to_string(launch);
  if (!pcs.error().empty()) return s + ": PC sampling failed: " + pcs.error();
  s += ": " + std::to_string(pcs.total_samples() != 0 ? pcs.total_samples() : view.samples) + " samples, " +
       std::to_string(view.stall_samples) + " of them stalls";
  if (pcs.dropped_samples() != 0) s += ", " + std::to_string(pcs.dropped_samples()) + " dropped";
  if (pcs.sampling_period_log2() != 0) {
    s += ", one sample per SM every 2^" + std::to_string(pcs.sampling_period_log2()) + " cycles";
  }
  if (pcs.hardware_buffer_full()) s += ", hardware buffer full";
  if (!pcs.has_line_info()) s += "; built without -lineinfo: lines are SASS offsets";
  return s;
}

}  // namespace

std::optional<PprofError> build_pprof(const ReadResult& file, const PprofOptions& options, SassResolver& sass,
                                      pp::Profile& profile, PprofStats* stats) {
  return build_pprof(std::vector<PprofSource>{{&file, {}}}, options, sass, profile, stats);
}

std::optional<PprofError> build_pprof(const std::vector<PprofSource>& sources, const PprofOptions& options,
                                      SassResolver& sass, pp::Profile& profile, PprofStats* stats) {
  profile.Clear();
  PprofStats local;
  PprofStats& st = stats != nullptr ? *stats : local;
  st = PprofStats{};
  if (sources.empty()) return PprofError{PprofError::Kind::kNoSamples, "no file given"};

  // The records to export: current, sampled, matching the filter; one per sampled launch (the
  // last in file order, the most recent write).
  // Per record, the source it came from (index in `sources`): its names are that file's.
  std::vector<std::pair<size_t, const v1::KernelProfile*>> records;
  // (source, mangled iid, sampled launch) -> index
  std::map<std::tuple<size_t, uint64_t, uint64_t>, size_t> by_launch;
  size_t sampled = 0;
  std::set<std::string> sampled_names;
  for (size_t src = 0; src < sources.size(); ++src) {
    const ReadResult& file = *sources[src].file;
    for (const v1::KernelProfile* k : current_kernels(file)) {
      if (!k->has_pc_sampling()) continue;
      ++sampled;
      sampled_names.insert(kernel_display_name(file, *k));
      if (!matches(file, *k, options.kernel)) continue;
      const uint64_t launch = k->pc_sampling().from_launch_index();
      if (launch != 0) {
        auto [it, added] = by_launch.try_emplace({src, k->mangled_name_iid(), launch}, records.size());
        if (!added) {
          records[it->second] = {src, k};
          continue;
        }
      }
      records.emplace_back(src, k);
    }
  }
  for (size_t src = 0; src < sources.size(); ++src) {
    std::vector<const v1::KernelProfile*> of_source;
    for (const auto& [from, k] : records) {
      if (from == src) of_source.push_back(k);
    }
    sass.prefetch(*sources[src].file, of_source);
  }
  if (sampled == 0) {
    return PprofError{PprofError::Kind::kNoSamples,
                      std::string(sources.size() == 1 ? "the file has no PC samples" : "no file has PC samples") +
                          ": no kernel was sampled (PC sampling was off, "
                          "CUTRIAGE_PC_SAMPLING=0, or no kernel was profiled)"};
  }
  if (records.empty()) {
    std::string names;
    for (const std::string& n : sampled_names) names += (names.empty() ? "" : "; ") + n;
    return PprofError{PprofError::Kind::kNoSamples,
                      "no sampled kernel matches '" + options.kernel + "' (sampled: " + names + ")"};
  }

  ProfileTables t(profile);
  // Two values per Sample: the samples, and the SM cycles they stand for (samples x 2^period). A
  // kernel sampled at 2^8 takes 16 times the samples per cycle of one sampled at 2^12, so only the
  // cycles compare across kernels; they are the default view.
  pp::ValueType* type = profile.add_sample_type();
  type->set_type(t.str("samples"));
  type->set_unit(t.str("count"));
  pp::ValueType* cycles_type = profile.add_sample_type();
  cycles_type->set_type(t.str("cycles"));
  cycles_type->set_unit(t.str("count"));
  profile.set_default_sample_type(t.str("cycles"));
  profile.mutable_period_type()->set_type(t.str("cycles"));
  profile.mutable_period_type()->set_unit(t.str("count"));
  for (const v1::Record& r : sources.front().file->file.records()) {
    if (r.has_session()) {
      profile.set_time_nanos(as_int64(r.session().start_time_unix_ns()));
      break;
    }
  }
  std::vector<std::string> comments;
  std::string title = "cutriage pprof";
  if (!options.source_name.empty()) title.append(" of ").append(options.source_name);
  title += ": GPU warp-state samples (PC sampling); stacks kernel > source line > SASS PC > warp "
           "state; label kind=stall|issue (selected and not_selected are issue states)";
  if (!sources.front().process.empty()) title += "; label process=host:pid (several processes)";
  comments.push_back(std::move(title));

  const int64_t kind = t.str("kind");
  const int64_t kind_stall = t.str("stall");
  const int64_t kind_issue = t.str("issue");
  const int64_t kind_unattributed = t.str("unattributed");
  // (kernel, line, pc, state) locations -> values: records of one kernel merge their stacks. A
  // kernel's samples that no PC holds have the stack (kernel, unattributed frame, 0, 0).
  struct Values {
    uint64_t samples = 0;
    uint64_t cycles = 0;
    int64_t kind = 0;
  };
  // Keyed by the process label's string (0: one process, no label) first: the stacks of two
  // processes stay apart.
  std::map<std::pair<int64_t, std::array<uint64_t, 4>>, Values> stacks;
  std::set<uint32_t> unknown_period;  // kernels without a recorded period: weighted as 2^0
  std::set<uint32_t> periods;
  for (const auto& [src, k] : records) {
    const ReadResult& file = *sources[src].file;
    const int64_t process = sources[src].process.empty() ? 0 : t.str(sources[src].process);
    const v1::PcSampling& pcs = k->pc_sampling();
    const PcSamplingView view = read_pc_sampling(file, pcs);
    comments.push_back((sources[src].process.empty() ? std::string() : sources[src].process + ": ") +
                       kernel_summary(file, *k, view));
    if (view.samples == 0) {
      st.notes.push_back("no samples for " + comments.back());
      continue;
    }
    ++st.kernels;
    // Beyond 2^40 cycles per sample the weight would overflow int64 with few samples; CUPTI's
    // periods are 2^5 to 2^31. The file's value is untrusted: clamped before any shift.
    const uint32_t log2 = std::min<uint32_t>(pcs.sampling_period_log2(), 40);
    if (log2 != 0) periods.insert(log2);
    if (log2 == 0) unknown_period.insert(0);
    const uint64_t weight = uint64_t{1} << log2;
    const std::string mangled(lookup(file, k->mangled_name_iid()));
    const std::string kernel_key = mangled.empty() ? "#" + std::to_string(k->launch_index()) : mangled;
    const uint64_t kernel_loc = t.location(key_of({"kernel", kernel_key}),
                                           {kernel_display_name(file, *k), mangled, "", 0, 0});
    for (const SampledInstruction& pc : view.pcs) {
      if (pc.samples == 0) continue;
      // A PC of another function than the kernel's (a device function not inlined) says which.
      const bool foreign = !pc.function.empty() && pc.function != mangled;
      const std::string in_fn = foreign ? short_function_name(pc.function) : std::string();
      const std::string hex = pc_hex(pc.pc_offset);
      const std::string pc_fn = pc.function.empty() ? mangled : pc.function;
      const std::string offset = std::to_string(pc.pc_offset);
      uint64_t line_loc = 0;
      if (view.has_line_info && !pc.file.empty()) {  // keyed as source_lines() keys them
        line_loc = t.location(key_of({"line", pc.file, std::to_string(pc.line)}),
                              {pc.file + ":" + std::to_string(pc.line), "", pc.file, pc.line, 0});
      } else {
        line_loc = t.location(key_of({"nolines", pc_fn, offset}),
                              {"pc " + hex + (foreign ? " in " + in_fn : std::string()), pc_fn, "", 0, 0});
      }
      std::string text = pc.sass.empty() ? sass.instruction(file, pcs, pc_fn, pc.pc_offset) : pc.sass;
      std::string pc_name = hex;
      if (!text.empty()) pc_name.append(" ").append(text);
      if (foreign) pc_name.append(" [in ").append(in_fn).append("]");
      std::string pc_system_name = pc_fn;
      pc_system_name.append("+").append(hex);
      const uint64_t pc_loc = t.location(key_of({"pc", pc_fn, offset}),
                                         {pc_name, pc_system_name, pc.file, pc.line, pc.pc_offset});
      for (const WarpStateSamples& s : pc.states) {
        const uint64_t state_loc = t.location(key_of({"state", s.state}), {s.state, "", "", 0, 0});
        Values& entry = stacks[{process, {kernel_loc, line_loc, pc_loc, state_loc}}];
        entry.samples += s.samples;
        entry.cycles += s.samples * weight;
        entry.kind = s.stall ? kind_stall : kind_issue;
      }
    }
    // The device's total counts every sample it took (PcSampling.total_samples); the PCs delivered
    // may hold fewer. The rest is kept under the kernel, so the profile's total is the report's.
    if (pcs.total_samples() > view.samples) {
      const uint64_t loc = t.location(key_of({"unattributed"}),
                                      {"(samples not attributed to a PC)", "", "", 0, 0});
      Values& entry = stacks[{process, {kernel_loc, loc, 0, 0}}];
      entry.samples += pcs.total_samples() - view.samples;
      entry.cycles += (pcs.total_samples() - view.samples) * weight;
      entry.kind = kind_unattributed;
    }
  }
  for (std::string& note : sass.take_notes()) {
    comments.push_back(note);
    st.notes.push_back(std::move(note));
  }
  if (st.kernels == 0) {
    std::string why;
    for (size_t i = 1; i < comments.size(); ++i) why += (why.empty() ? "" : "; ") + comments[i];
    // One line: the reasons quote the file's own strings (a PC sampling error), which may hold
    // line breaks or terminal controls.
    return PprofError{PprofError::Kind::kNoSamples, "no PC samples were collected: " + terminal_safe(why, false)};
  }
  if (periods.size() == 1) {
    profile.set_period(int64_t{1} << *periods.begin());
  } else if (periods.size() > 1) {
    comments.push_back("the kernels were sampled at different periods; period is left 0, each "
                       "kernel's is in its comment, and the cycles value (samples x 2^period) "
                       "compares them");
  }
  if (!unknown_period.empty()) {
    comments.push_back("a kernel's sampling period was not recorded: its cycles are its samples");
  }

  const int64_t process_key = sources.front().process.empty() ? 0 : t.str("process");
  for (const auto& [key, value] : stacks) {
    const auto& [process, locs] = key;
    pp::Sample* sample = profile.add_sample();
    // Leaf first; the unattributed stack's unused frames (0) are left out.
    for (auto it = locs.rbegin(); it != locs.rend(); ++it) {
      if (*it != 0) sample->add_location_id(*it);
    }
    sample->add_value(as_int64(value.samples));
    sample->add_value(as_int64(value.cycles));
    pp::Label* label = sample->add_label();
    label->set_key(kind);
    label->set_str(value.kind);
    if (process != 0) {
      pp::Label* by_process = sample->add_label();
      by_process->set_key(process_key);
      by_process->set_str(process);
    }
    st.samples += value.samples;
    st.cycles += value.cycles;
    if (value.kind == kind_stall) st.stall_samples += value.samples;
    if (value.kind == kind_unattributed) st.unattributed_samples += value.samples;
    ++st.stacks;
  }
  for (const std::string& c : comments) profile.add_comment(t.str(c));
  return std::nullopt;
}

bool gzip_compress(std::string_view bytes, std::string& out, std::string& error) {
  out.clear();
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    error = "zlib: deflateInit2 failed";
    return false;
  }
  zs.next_in = reinterpret_cast<const Bytef*>(bytes.data());
  std::array<unsigned char, 1 << 16> buf{};
  int rc = Z_OK;
  size_t left = bytes.size();
  do {
    // avail_in is 32 bits: feed larger inputs in slices.
    if (zs.avail_in == 0 && left > 0) {
      const uInt slice = static_cast<uInt>(std::min<size_t>(left, std::numeric_limits<uInt>::max()));
      zs.avail_in = slice;
      left -= slice;
    }
    zs.next_out = buf.data();
    zs.avail_out = static_cast<uInt>(buf.size());
    rc = deflate(&zs, left == 0 ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) break;
    out.append(reinterpret_cast<const char*>(buf.data()), buf.size() - zs.avail_out);
  } while (rc != Z_STREAM_END);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    error = "zlib: deflate failed";
    out.clear();
    return false;
  }
  return true;
}

std::optional<PprofError> export_pprof(const ReadResult& file, const PprofOptions& options, SassResolver& sass,
                                       std::ostream& out, PprofStats* stats) {
  return export_pprof(std::vector<PprofSource>{{&file, {}}}, options, sass, out, stats);
}

std::optional<PprofError> export_pprof(const std::vector<PprofSource>& sources, const PprofOptions& options,
                                       SassResolver& sass, std::ostream& out, PprofStats* stats) {
  pp::Profile profile;
  if (std::optional<PprofError> error = build_pprof(sources, options, sass, profile, stats)) return error;
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) {
    return PprofError{PprofError::Kind::kWriteFailed, "the profile could not be serialized"};
  }
  std::string compressed, error;
  if (!gzip_compress(bytes, compressed, error)) return PprofError{PprofError::Kind::kWriteFailed, error};
  out.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
  out.flush();
  if (!out) return PprofError{PprofError::Kind::kWriteFailed, ""};
  return std::nullopt;
}

}  // namespace cutriage::tools
