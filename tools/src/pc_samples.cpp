#include "pc_samples.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace cutriage::triage::detail {
// The stall-reason vocabulary of the rules, defined in triage/src/rules_d3.cpp and not exported
// by a public header yet. Declared here rather than copied so that the report and the verdicts
// can never disagree on a name; a change of its signature there breaks this link, loudly.
std::string_view canonical_stall_reason(std::string_view raw);
}  // namespace cutriage::triage::detail

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

constexpr std::string_view kNotIssued = "_not_issued";
constexpr std::string_view kPcSampPrefix = "smsp__pcsamp_";
constexpr std::string_view kPcSampStatePrefix = "smsp__pcsamp_warps_issue_stalled_";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Other smsp__pcsamp_* names (smsp__pcsamp_sample_count) are totals, not warp states; the same
// rule as the triage library's (triage/src/pc_samples.cpp).
bool is_warp_state_name(std::string_view raw) {
  if (raw.empty()) return false;
  return raw.substr(0, kPcSampPrefix.size()) != kPcSampPrefix ||
         raw.substr(0, kPcSampStatePrefix.size()) == kPcSampStatePrefix;
}

}  // namespace

std::string warp_state_name(std::string_view device_name) {
  return std::string(triage::detail::canonical_stall_reason(device_name));
}

bool is_issue_state(std::string_view state) {
  std::string canonical = warp_state_name(state);
  return canonical == "selected" || canonical == "not_selected";
}

std::string pc_hex(uint64_t offset) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%04llx", static_cast<unsigned long long>(offset));
  return buf;
}

PcSamplingView read_pc_sampling(const ReadResult& file, const v1::PcSampling& pcs) {
  PcSamplingView view;
  view.has_line_info = pcs.has_line_info();
  view.pcs.reserve(static_cast<size_t>(pcs.pcs_size()));
  for (const v1::SampledPc& pc : pcs.pcs()) {
    SampledInstruction& in = view.pcs.emplace_back();
    in.function = std::string(lookup(file, pc.function_iid()));
    in.pc_offset = pc.pc_offset();
    in.file = std::string(lookup(file, pc.file_iid()));
    in.line = pc.line();
    in.sass = pc.sass();
    in.inlined_file = std::string(lookup(file, pc.inlined_file_iid()));
    in.inlined_line = pc.inlined_line();
    // Canonical state -> (samples of the plain form, seen; samples of the _not_issued form).
    struct Forms {
      uint64_t all = 0;
      bool has_all = false;
      uint64_t not_issued = 0;
    };
    std::map<std::string, Forms> forms;
    for (const v1::StallCount& sc : pc.stalls()) {
      std::string_view raw = lookup(file, sc.reason_iid());
      if (!is_warp_state_name(raw)) continue;
      std::string state = warp_state_name(raw);
      if (state.empty()) continue;
      Forms& f = forms[state];
      if (ends_with(raw, kNotIssued)) {
        f.not_issued += sc.samples();
      } else {
        f.all += sc.samples();
        f.has_all = true;
      }
    }
    for (const auto& [state, f] : forms) {
      uint64_t n = f.has_all ? f.all : f.not_issued;
      if (n == 0) continue;
      bool stall = !is_issue_state(state);
      in.states.push_back({state, n, stall});
      in.samples += n;
      if (stall) in.stall_samples += n;
    }
    std::stable_sort(in.states.begin(), in.states.end(),
                     [](const auto& a, const auto& b) { return a.samples > b.samples; });
    view.samples += in.samples;
    view.stall_samples += in.stall_samples;
  }
  // The writer orders hottest first by its raw counts; ordered again on the folded ones.
  std::stable_sort(view.pcs.begin(), view.pcs.end(), [](const auto& a, const auto& b) {
    return std::tie(b.samples, a.function, a.pc_offset) < std::tie(a.samples, b.function, b.pc_offset);
  });
  return view;
}

std::vector<SourceLineSamples> source_lines(const PcSamplingView& view) {
  // Key: (file, line) with a line; ("", 0, function, pc_offset) without.
  using Key = std::tuple<std::string, uint32_t, std::string, uint64_t>;
  std::map<Key, SourceLineSamples> by_key;
  std::map<Key, std::map<std::string, uint64_t>> stalls;
  for (size_t i = 0; i < view.pcs.size(); ++i) {
    const SampledInstruction& pc = view.pcs[i];
    // As the triage library keys them: a line only when the cubin had a line table.
    const bool with_line = view.has_line_info && !pc.file.empty();
    Key key = with_line ? Key{pc.file, pc.line, "", 0} : Key{"", 0, pc.function, pc.pc_offset};
    auto [it, added] = by_key.try_emplace(key);
    SourceLineSamples& line = it->second;
    if (added) {
      if (with_line) {
        line.file = pc.file;
        line.line = pc.line;
      }
      line.hottest = i;
    }
    const SampledInstruction& best = view.pcs[line.hottest];
    if (std::tie(pc.stall_samples, pc.samples) > std::tie(best.stall_samples, best.samples)) line.hottest = i;
    line.function = view.pcs[line.hottest].function;
    line.pc_offset = view.pcs[line.hottest].pc_offset;
    line.samples += pc.samples;
    line.stall_samples += pc.stall_samples;
    std::map<std::string, uint64_t>& reasons = stalls[key];
    for (const WarpStateSamples& s : pc.states) {
      if (s.stall) reasons[s.state] += s.samples;
    }
  }
  std::vector<SourceLineSamples> out;
  out.reserve(by_key.size());
  for (auto& [key, line] : by_key) {
    for (const auto& [reason, n] : stalls[key]) line.stalls.emplace_back(reason, n);
    std::stable_sort(line.stalls.begin(), line.stalls.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    out.push_back(std::move(line));
  }
  // by_key's order (file, line, function, offset) settles ties.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(b.stall_samples, b.samples) < std::tie(a.stall_samples, a.samples);
  });
  return out;
}

}  // namespace cutriage::tools
