#include "pc_samples.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

#include "rule_helpers.h"

namespace cutriage::triage::detail {

namespace {

constexpr std::string_view kNoSamples =
    "no PC samples (collected by cutriage's PC sampling, not by an ncu raw CSV)";
constexpr std::string_view kNotIssuedSuffix = "_not_issued";
constexpr std::string_view kPcSampPrefix = "smsp__pcsamp_";
constexpr std::string_view kPcSampStatePrefix = "smsp__pcsamp_warps_issue_stalled_";

// Other smsp__pcsamp_* names (smsp__pcsamp_sample_count) are totals, not warp states.
bool is_warp_state_name(std::string_view raw) {
  if (raw.empty()) return false;
  return !starts_with(raw, kPcSampPrefix) || starts_with(raw, kPcSampStatePrefix);
}

// Opcodes that set the scoreboard a consumer waits on. long_scoreboard: L1TEX operations (global,
// local, generic, texture and surface loads, global atomics and reductions, cp.async; reductions
// return nothing, but hold their source registers until L1TEX reads them, so a later writer of
// those registers can wait on them). short_scoreboard: MIO operations (shared-memory loads and
// atomics, MUFU; a generic LD may resolve to shared memory). Stores are left out: a load before
// them is the likelier producer.
constexpr std::string_view kLongScoreboardProducers[] = {
    "LDG", "LD", "LDL", "ATOM", "ATOMG", "RED", "REDG", "TEX", "TLD", "TLD4", "TXD", "TMML",
    "SULD", "SUATOM", "SURED", "LDGSTS"};
constexpr std::string_view kShortScoreboardProducers[] = {"LDS", "LDSM", "ATOMS", "MUFU", "LD"};

bool opcode_in(std::string_view opcode, const auto& set) {
  std::string upper(opcode);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return std::find(std::begin(set), std::end(set), upper) != std::end(set);
}

std::string where_of(const PcSampleSummary& pcs, const PcSampleLine& line) {
  if (pcs.has_line_info && !line.file.empty()) return line.file + ":" + std::to_string(line.line);
  return "no line information";
}

}  // namespace

std::optional<std::string> samples_unusable(const KernelInput& kernel) {
  if (!kernel.pc_samples) return std::string(kNoSamples);
  if (!kernel.pc_samples->error.empty()) return "PC sampling failed: " + kernel.pc_samples->error;
  return std::nullopt;
}

std::string sampled_launch_note(const KernelInput& kernel) {
  if (!kernel.pc_samples) return {};
  const uint64_t from = kernel.pc_samples->from_launch_index;
  if (from == 0 || from == kernel.launch_index) return {};
  return " (sampled on launch " + std::to_string(from) + ")";
}

std::map<std::string, uint64_t, std::less<>> warp_states(const PcSampleLine& line) {
  std::map<std::string, uint64_t, std::less<>> all;
  std::map<std::string, uint64_t, std::less<>> not_issued;
  for (const auto& [raw, count] : line.samples_by_reason) {
    if (!is_warp_state_name(raw)) continue;
    std::string reason(canonical_stall_reason(raw));
    if (reason.empty()) continue;
    (ends_with(raw, kNotIssuedSuffix) ? not_issued : all)[reason] += count;
  }
  for (auto& [reason, count] : not_issued) all.try_emplace(reason, count);
  return all;
}

SampleView aggregate_samples(const PcSampleSummary& pcs) {
  SampleView out;
  out.has_line_info = pcs.has_line_info;
  std::map<std::string, SampleLocation> by_key;
  for (const PcSampleLine& line : pcs.lines) {
    SampledPc pc;
    pc.line = &line;
    pc.states = warp_states(line);
    for (const auto& [reason, count] : pc.states) {
      out.warp_state_samples += count;
      if (reason == "selected") out.selected += count;
      if (reason == "not_selected") out.not_selected += count;
      if (is_issue_state_not_stall(reason)) continue;
      pc.stall_samples += count;
    }
    const bool with_line = pcs.has_line_info && !line.file.empty();
    std::string key = with_line ? line.file + ":" + std::to_string(line.line) : "pc " + hex(line.pc_offset);
    if (!line.function.empty() && !with_line) key.insert(0, line.function + " ");
    SampleLocation& loc = by_key[key];
    loc.key = key;
    for (const auto& [reason, count] : pc.states) {
      if (is_issue_state_not_stall(reason)) continue;
      loc.stalls_by_reason[reason] += count;
      out.stalls_by_reason[reason] += count;
    }
    loc.stall_samples += pc.stall_samples;
    out.stall_samples += pc.stall_samples;
    if (loc.pcs.empty() || pc.stall_samples > loc.pcs[loc.hottest_pc].stall_samples) {
      loc.hottest_pc = loc.pcs.size();
    }
    loc.pcs.push_back(std::move(pc));
  }
  for (auto& [key, loc] : by_key) out.locations.push_back(std::move(loc));
  std::stable_sort(out.locations.begin(), out.locations.end(),
                   [](const SampleLocation& a, const SampleLocation& b) { return a.stall_samples > b.stall_samples; });
  return out;
}

std::optional<SampledReason> dominant_sampled_reason(const SampleView& view) {
  if (view.stall_samples == 0) return std::nullopt;
  auto top = std::max_element(view.stalls_by_reason.begin(), view.stalls_by_reason.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top == view.stalls_by_reason.end()) return std::nullopt;
  return SampledReason{top->first, top->second,
                       static_cast<double>(top->second) / static_cast<double>(view.stall_samples)};
}

std::optional<std::string> read_stall_samples(RuleContext& ctx, SampleView& view) {
  if (auto why = samples_unusable(ctx.kernel())) return why;
  view = aggregate_samples(*ctx.kernel().pc_samples);
  if (view.stall_samples == 0) {
    return "PC samples hold no stall samples (selected and not_selected excluded)";
  }
  ctx.note("pc_stall_samples", static_cast<double>(view.stall_samples), "sample");
  const double min = ctx.threshold("min_stall_samples");
  if (static_cast<double>(view.stall_samples) < min) {
    return "only " + std::to_string(view.stall_samples) + " stall samples (< " + count(min) +
           "): too few to trust shares of stall reasons or lines; sample a longer launch or at a "
           "shorter period";
  }
  return std::nullopt;
}

ReasonSite site_at(const SampleLocation& loc, std::string_view reason) {
  ReasonSite site;
  site.location = &loc;
  auto it = loc.stalls_by_reason.find(reason);
  if (it == loc.stalls_by_reason.end()) return site;
  site.samples = it->second;
  uint64_t best = 0;
  for (const SampledPc& pc : loc.pcs) {
    auto s = pc.states.find(reason);
    if (s != pc.states.end() && (site.pc == nullptr || s->second > best)) {
      site.pc = &pc;
      best = s->second;
    }
  }
  return site;
}

std::vector<ReasonSite> sites_of_reason(const SampleView& view, std::string_view reason,
                                        size_t max_sites, double min_share) {
  auto total_it = view.stalls_by_reason.find(reason);
  if (total_it == view.stalls_by_reason.end() || total_it->second == 0) return {};
  const auto total = static_cast<double>(total_it->second);
  std::vector<ReasonSite> sites;
  for (const SampleLocation& loc : view.locations) {
    ReasonSite site = site_at(loc, reason);
    if (site.samples == 0) continue;
    site.share = static_cast<double>(site.samples) / total;
    sites.push_back(site);
  }
  std::stable_sort(sites.begin(), sites.end(),
                   [](const ReasonSite& a, const ReasonSite& b) { return a.samples > b.samples; });
  std::vector<ReasonSite> out;
  for (const ReasonSite& s : sites) {
    if (out.size() >= max_sites) break;
    if (!out.empty() && s.share < min_share) break;  // sorted: the rest hold even less
    out.push_back(s);
  }
  return out;
}

std::string hex(uint64_t v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v, 16);
  return "0x" + std::string(buf, res.ptr);
}

std::string describe_location(const SampleLocation& loc) {
  std::string s = loc.key;
  if (loc.pcs.empty()) return s;
  const PcSampleLine& line = *loc.pcs[loc.hottest_pc].line;
  if (!line.sass.empty()) s += " [" + line.sass + " @" + hex(line.pc_offset) + "]";
  if (!line.function.empty() && loc.key.find(line.function) == std::string::npos) {
    s += " in " + line.function;
  }
  return s;
}

std::string line_info_note(const SampleView& view) {
  return view.has_line_info ? std::string()
                            : "; no line information in the cubin (build with -lineinfo), SASS "
                              "offsets shown";
}

std::string_view sass_opcode(std::string_view sass) {
  auto skip_blank = [&sass] {
    while (!sass.empty() &&
           (std::isspace(static_cast<unsigned char>(sass.front())) != 0 || sass.front() == '{')) {
      sass.remove_prefix(1);
    }
  };
  skip_blank();
  // nvdisasm prefixes the offset as a comment: "/*0120*/ LDG.E ...".
  while (starts_with(sass, "/*")) {
    const size_t end = sass.find("*/");
    if (end == std::string_view::npos) return {};
    sass.remove_prefix(end + 2);
    skip_blank();
  }
  if (!sass.empty() && sass.front() == '@') {  // guard predicate: "@!P0"
    const size_t end = sass.find_first_of(" \t");
    if (end == std::string_view::npos) return {};
    sass.remove_prefix(end);
    skip_blank();
  }
  return sass.substr(0, sass.find_first_of(" \t;."));
}

std::string consumer_producer_note(const PcSampleSummary& pcs, const ReasonSite& site,
                                   std::string_view reason) {
  const bool long_sb = reason == "long_scoreboard";
  if ((!long_sb && reason != "short_scoreboard") || site.pc == nullptr) return {};
  const std::string_view producer_kind =
      long_sb ? "global/local/texture load" : "shared-memory load or MUFU";
  const PcSampleLine& consumer = *site.pc->line;
  std::string note = "The " + std::string(reason) + " samples sit on the instruction that waits for the result (";
  note += consumer.sass.empty() ? "@" + hex(consumer.pc_offset) : consumer.sass + " @" + hex(consumer.pc_offset);
  note += "), not on the " + std::string(producer_kind) + " that produces it: ";
  const PcSampleLine* producer = nullptr;
  for (const PcSampleLine& line : pcs.lines) {
    if (line.function != consumer.function || line.pc_offset >= consumer.pc_offset || line.sass.empty()) continue;
    const std::string_view op = sass_opcode(line.sass);
    const bool sets_it = long_sb ? opcode_in(op, kLongScoreboardProducers)
                                 : opcode_in(op, kShortScoreboardProducers);
    if (sets_it && (producer == nullptr || line.pc_offset > producer->pc_offset)) producer = &line;
  }
  if (producer != nullptr) {
    note += "the likely producer is " + producer->sass + " @" + hex(producer->pc_offset) + " (" +
            where_of(pcs, *producer) + "), the nearest sampled " + std::string(producer_kind) +
            " before it in the same function.";
  } else {
    note += "the producer is an earlier " + std::string(producer_kind) +
            " on this or a preceding line.";
  }
  return note;
}

}  // namespace cutriage::triage::detail
