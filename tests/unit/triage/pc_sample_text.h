// PC samples written as text, for the triage tests: the synthetic inputs of the sample-based rules,
// and real captures replayed from tests/data/pc_samples/*.txt (test_pc_samples.cpp), which carry
// their expected verdicts as %expect lines.
//
// One sampled PC per line:
//   FUNCTION PC LOCATION | SASS | STATE=COUNT STATE=COUNT ...
// LOCATION is file:line, or '-' without line information; SASS may be empty; STATE is a warp state
// as the device reports it (smsp__pcsamp_warps_issue_stalled_long_scoreboard, its _not_issued
// variant) or bare (long_scoreboard). Directives, one per line:
//   %line_info            the cubin had a line table (file:line locations are used)
//   %total N              PcSampleSummary::total_samples (default: the sum of every count)
//   %dropped N            dropped_samples
//   %buffer_full          hardware_buffer_full
//   %period N             sampling_period_log2
//   %from_launch N        from_launch_index
//   %error TEXT           error (collection failed)
//   %kernel NAME          the kernel's mangled (and display) name; default "kernel"
//   %expect RULE OUTCOME [TEXT]   OUTCOME fired|not_fired|not_evaluated; TEXT must appear in the
//                         check's reason (replay only)
// Lines starting with '#' are comments.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "cutriage/triage/inputs.h"

namespace cutriage::triage::test_support {

struct SampleExpectation {
  std::string rule;
  std::string outcome;  // "fired", "not_fired", "not_evaluated"
  std::string text;     // must appear in the reason; may be empty
};

struct PcSampleText {
  PcSampleSummary samples;
  std::string kernel = "kernel";
  std::vector<SampleExpectation> expectations;
};

namespace pc_text_detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The next whitespace-separated word of `s`, removed from it.
inline std::string_view next_word(std::string_view& s) {
  s = trim(s);
  const size_t end = s.find_first_of(" \t");
  std::string_view word = s.substr(0, end);
  s = end == std::string_view::npos ? std::string_view{} : s.substr(end);
  return word;
}

inline uint64_t number(std::string_view s, std::string_view line) {
  int base = 10;
  if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") {
    s.remove_prefix(2);
    base = 16;
  }
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  INFO(line);
  REQUIRE((ec == std::errc{} && ptr == s.data() + s.size() && !s.empty()));
  return v;
}

}  // namespace pc_text_detail

inline PcSampleText parse_pc_samples(std::string_view text) {
  using pc_text_detail::next_word;
  using pc_text_detail::number;
  using pc_text_detail::trim;
  PcSampleText out;
  bool total_given = false;
  uint64_t sum = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view raw = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '%') {
      line.remove_prefix(1);
      const std::string_view key = next_word(line);
      const std::string_view rest = trim(line);
      if (key == "line_info") {
        out.samples.has_line_info = true;
      } else if (key == "total") {
        out.samples.total_samples = number(rest, raw);
        total_given = true;
      } else if (key == "dropped") {
        out.samples.dropped_samples = number(rest, raw);
      } else if (key == "buffer_full") {
        out.samples.hardware_buffer_full = true;
      } else if (key == "period") {
        out.samples.sampling_period_log2 = static_cast<uint32_t>(number(rest, raw));
      } else if (key == "from_launch") {
        out.samples.from_launch_index = number(rest, raw);
      } else if (key == "error") {
        out.samples.error = std::string(rest);
      } else if (key == "kernel") {
        out.kernel = std::string(rest);
      } else if (key == "expect") {
        std::string_view words = rest;
        SampleExpectation e;
        e.rule = std::string(next_word(words));
        e.outcome = std::string(next_word(words));
        e.text = std::string(trim(words));
        out.expectations.push_back(std::move(e));
      } else {
        INFO(raw);
        FAIL("unknown directive");
      }
      continue;
    }
    const size_t bar1 = line.find('|');
    const size_t bar2 = bar1 == std::string_view::npos ? bar1 : line.find('|', bar1 + 1);
    INFO(raw);
    REQUIRE(bar2 != std::string_view::npos);
    std::string_view head = line.substr(0, bar1);
    PcSampleLine pc;
    pc.function = std::string(next_word(head));
    pc.pc_offset = number(next_word(head), raw);
    const std::string_view where = next_word(head);
    if (where != "-") {
      const size_t colon = where.rfind(':');
      REQUIRE(colon != std::string_view::npos);
      pc.file = std::string(where.substr(0, colon));
      pc.line = static_cast<uint32_t>(number(where.substr(colon + 1), raw));
    }
    pc.sass = std::string(trim(line.substr(bar1 + 1, bar2 - bar1 - 1)));
    std::string_view states = line.substr(bar2 + 1);
    for (std::string_view word = next_word(states); !word.empty(); word = next_word(states)) {
      const size_t eq = word.find('=');
      REQUIRE(eq != std::string_view::npos);
      const uint64_t n = number(word.substr(eq + 1), raw);
      pc.samples_by_reason[std::string(word.substr(0, eq))] += n;
      sum += n;
    }
    out.samples.lines.push_back(std::move(pc));
  }
  if (!total_given) out.samples.total_samples = sum;
  return out;
}

// A kernel carrying the samples of `text` (no metrics), named as its %kernel line says.
inline KernelInput kernel_with_samples(std::string_view text) {
  PcSampleText parsed = parse_pc_samples(text);
  KernelInput k;
  k.mangled_name = parsed.kernel;
  k.demangled_name = parsed.kernel;
  k.function_name = parsed.kernel;
  k.pc_samples = std::move(parsed.samples);
  return k;
}

}  // namespace cutriage::triage::test_support
