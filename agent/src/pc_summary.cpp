#include "pc_summary.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>

#include "cutriage/collectors/cubin.h"

namespace cutriage::agent {

uint32_t auto_sampling_period_log2(double duration_ns, double sm_clock_hz, uint32_t sm_count,
                                   uint64_t target) {
  constexpr uint32_t kMin = 5;
  constexpr uint32_t kMax = 31;
  constexpr uint32_t kDefault = 12;
  if (!(duration_ns > 0) || !(sm_clock_hz > 0) || sm_count == 0 || target == 0) return kDefault;
  const double sm_cycles = duration_ns * 1e-9 * sm_clock_hz * static_cast<double>(sm_count);
  const double period = sm_cycles / static_cast<double>(target);
  if (!(period >= 2)) return kMin;
  // Round down: more samples than the target rather than fewer.
  const double n = std::floor(std::log2(period));
  if (n <= kMin) return kMin;
  if (n >= kMax) return kMax;
  return static_cast<uint32_t>(n);
}

void CubinCache::add(std::vector<uint8_t> cubin) {
  if (cubin.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (cubin.size() > max_bytes_) {
    ++dropped_;
    return;
  }
  bytes_ += cubin.size();
  entries_.push_back(Entry{std::make_shared<const std::vector<uint8_t>>(std::move(cubin)), false, 0});
  while (bytes_ > max_bytes_ && !entries_.empty()) {
    bytes_ -= entries_.front().cubin->size();
    entries_.pop_front();
    ++dropped_;
  }
}

std::shared_ptr<const std::vector<uint8_t>> CubinCache::find(uint64_t crc, const Crc& crc_of) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Newest first: a module loaded again (same bytes) matches its latest copy.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (!it->crc_known) {
      collectors::Result<uint64_t> c = crc_of(*it->cubin);
      it->crc_known = true;  // a failure is not retried: it would fail the same way
      it->crc = c.is_ok() ? c.value() : 0;
    }
    if (it->crc == crc && crc != 0) return it->cubin;
  }
  return nullptr;
}

uint64_t CubinCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

uint64_t CubinCache::dropped_modules() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

namespace {

struct MergedPc {
  std::string function;
  uint64_t pc_offset = 0;
  uint64_t crc = 0;
  std::map<uint32_t, uint64_t> by_reason;
  uint64_t total = 0;
};

std::string reason_name(const collectors::PcSampleBatch& batch, uint32_t reason) {
  if (reason < batch.reason_names.size() && !batch.reason_names[reason].empty()) {
    return batch.reason_names[reason];
  }
  return "unknown_reason_" + std::to_string(reason);
}

struct CubinFacts {
  std::shared_ptr<const std::vector<uint8_t>> cubin;
  bool has_line_info = false;
  uint32_t sm_arch = 0;
};

// The line of every instruction of one function (sm_70 and later: 16-byte instructions).
struct FunctionLines {
  bool queried = false;
  std::string home_file;  // the file of the first instruction with a line
  std::vector<std::pair<std::string, uint32_t>> by_instruction;  // "" = no line
};

constexpr uint64_t kInstructionBytes = 16;

void attribute_inlined(triage::PcSampleSummary& s, const std::map<uint64_t, CubinFacts>& by_crc,
                       const std::map<std::string, std::pair<uint64_t, uint64_t>>& function_samples,
                       collectors::Platform& platform, const PcSummaryLimits& limits) {
  if (!s.has_line_info) return;
  size_t queries = 0;
  std::map<std::string, FunctionLines> functions;
  auto lines_of = [&](const std::string& name) -> const FunctionLines* {
    FunctionLines& fl = functions[name];
    if (fl.queried) return &fl;
    fl.queried = true;
    auto fs = function_samples.find(name);
    if (fs == function_samples.end()) return nullptr;
    auto facts = by_crc.find(fs->second.second);
    if (facts == by_crc.end() || !facts->second.cubin || !facts->second.has_line_info ||
        facts->second.sm_arch < 70) {
      return nullptr;
    }
    const std::vector<uint8_t>& cubin = *facts->second.cubin;
    collectors::Result<std::vector<uint8_t>> text = collectors::function_code(cubin.data(), cubin.size(), name);
    if (!text.is_ok()) return nullptr;
    const size_t n = text.value().size() / kInstructionBytes;
    if (queries + n > limits.max_inline_queries) return nullptr;
    queries += n;
    fl.by_instruction.resize(n);
    for (size_t i = 0; i < n; ++i) {
      collectors::Result<collectors::SourceLine> src = platform.sass_to_source(cubin, name, i * kInstructionBytes);
      if (!src.is_ok() || src.value().file.empty()) continue;
      fl.by_instruction[i] = {src.value().file, src.value().line};
      if (fl.home_file.empty()) fl.home_file = src.value().file;
    }
    return &fl;
  };
  for (triage::PcSampleLine& line : s.lines) {
    if (line.file.empty()) continue;
    const FunctionLines* fl = lines_of(line.function);
    if (fl == nullptr || fl->home_file.empty() || line.file == fl->home_file) continue;
    // Walk back to the nearest instruction of the function's own file: the calling line.
    for (size_t i = std::min<size_t>(line.pc_offset / kInstructionBytes, fl->by_instruction.size()); i-- > 0;) {
      const auto& [file, ln] = fl->by_instruction[i];
      if (file != fl->home_file) continue;
      line.inlined_file = std::move(line.file);
      line.inlined_line = line.line;
      line.file = file;
      line.line = ln;
      break;
    }
  }
}

}  // namespace

PcSummary build_pc_summary(const collectors::PcSampleBatch& batch, CubinCache& cubins,
                           collectors::Platform& platform, const PcSummaryLimits& limits) {
  PcSummary out;
  triage::PcSampleSummary& s = out.summary;
  s.total_samples = batch.total_samples;
  s.dropped_samples = batch.dropped_samples;
  s.hardware_buffer_full = batch.hardware_buffer_full;
  s.sampling_period_log2 = batch.period_log2;

  std::map<std::pair<std::string_view, uint64_t>, MergedPc> merged;
  for (const collectors::PcSampleRecord& pc : batch.pcs) {
    MergedPc& m = merged[{pc.function, pc.pc_offset}];
    if (m.function.empty()) {
      m.function = pc.function;
      m.pc_offset = pc.pc_offset;
      m.crc = pc.cubin_crc;
    }
    for (const collectors::PcStallCount& st : pc.stalls) {
      if (st.samples == 0) continue;
      m.by_reason[st.reason] += st.samples;
      m.total += st.samples;
    }
  }
  std::vector<MergedPc*> order;
  order.reserve(merged.size());
  for (auto& [key, m] : merged) {
    if (m.total > 0) order.push_back(&m);
  }
  std::sort(order.begin(), order.end(), [](const MergedPc* a, const MergedPc* b) {
    return std::tie(b->total, a->function, a->pc_offset) < std::tie(a->total, b->function, b->pc_offset);
  });

  std::map<uint64_t, CubinFacts> by_crc;
  auto facts_for = [&](uint64_t crc) -> const CubinFacts& {
    auto it = by_crc.find(crc);
    if (it != by_crc.end()) return it->second;
    CubinFacts f;
    f.cubin = cubins.find(crc, [&](const std::vector<uint8_t>& c) { return platform.cubin_crc(c); });
    if (f.cubin) {
      collectors::Result<collectors::CubinInfo> info =
          collectors::inspect_cubin(f.cubin->data(), f.cubin->size());
      if (info.is_ok()) {
        f.has_line_info = info.value().has_line_info;
        f.sm_arch = info.value().sm_arch;
      }
    }
    return by_crc.emplace(crc, std::move(f)).first->second;
  };

  bool any_line_table = false;
  size_t correlated_tries = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> function_samples;  // name -> samples, crc
  for (const MergedPc* m : order) {
    triage::PcSampleLine line;
    line.function = m->function;
    line.pc_offset = m->pc_offset;
    for (const auto& [reason, count] : m->by_reason) line.samples_by_reason[reason_name(batch, reason)] += count;
    auto& fs = function_samples[m->function];
    fs.first += m->total;
    fs.second = m->crc;
    const CubinFacts& f = facts_for(m->crc);
    if (!f.cubin) {
      out.cubin_missing = true;
    } else if (f.has_line_info && correlated_tries < limits.max_correlated_pcs) {
      any_line_table = true;
      ++correlated_tries;
      collectors::Result<collectors::SourceLine> src = platform.sass_to_source(*f.cubin, m->function, m->pc_offset);
      if (src.is_ok() && !src.value().file.empty()) {
        line.file = src.value().file;
        line.line = src.value().line;
        ++out.correlated_pcs;
      }
    } else if (f.has_line_info) {
      any_line_table = true;
    }
    if (out.sm_arch.empty() && f.sm_arch != 0) out.sm_arch = "sm_" + std::to_string(f.sm_arch);
    s.lines.push_back(std::move(line));
  }
  s.has_line_info = any_line_table && out.correlated_pcs > 0;
  attribute_inlined(s, by_crc, function_samples, platform, limits);

  // The hottest functions' instructions, for the tool's disassembly.
  std::vector<std::pair<uint64_t, std::string>> functions;
  functions.reserve(function_samples.size());
  for (const auto& [name, fs] : function_samples) functions.emplace_back(fs.first, name);
  std::sort(functions.begin(), functions.end(), [](const auto& a, const auto& b) {
    return std::tie(b.first, a.second) < std::tie(a.first, b.second);
  });
  for (const auto& [samples, name] : functions) {
    if (out.code.size() >= limits.max_functions_with_code) break;
    const CubinFacts& f = facts_for(function_samples[name].second);
    if (!f.cubin) continue;
    collectors::Result<std::vector<uint8_t>> text = collectors::function_code(f.cubin->data(), f.cubin->size(), name);
    if (!text.is_ok() || text.value().empty() || text.value().size() > limits.max_code_bytes) continue;
    out.code.push_back(wire::FunctionCode{name, std::move(text).value()});
  }
  return out;
}

}  // namespace cutriage::agent
