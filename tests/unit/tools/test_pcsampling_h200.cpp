// PC sampling on the H200 (tests/data/pcsampling/, written by tests/gpu/run_agent_tests.sh; see the
// README there), replayed on CI:
//  - each zoo kernel with a known hot line has it as its top source line, with the stall reason the
//    `cutriage-hot:` marker in its source names (examples/zoo/*.cu: the markers are read here, so a
//    moved line or a changed expectation fails this test);
//  - the kernel built without -lineinfo gives SASS offsets only, and its hottest PC is the same
//    instruction the -lineinfo build's hot line holds;
//  - today's engine, re-run on each record's metrics and samples, reproduces Decision 3 and 6;
//  - the PyTorch loop's sampled families carry thousands of samples and lose none.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "capture_support.h"
#include "catch.h"
#include "cutriage/triage/engine.h"
#include "file_reader.h"
#include "pc_samples.h"
#include "pprof_export.h"
#include "record_support.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_pcsampling_h200 {

using namespace cutriage;

namespace {

std::filesystem::path data(const std::string& rel) {
  return std::filesystem::path(CUTRIAGE_TEST_DATA_DIR) / "pcsampling" / rel;
}

struct Marker {
  uint32_t line = 0;
  std::vector<std::string> reasons;
};

// The `cutriage-hot: a|b` comment of a zoo source: its line number and reasons.
Marker marker_in(const std::filesystem::path& source) {
  std::ifstream in(source);
  REQUIRE(in.good());
  Marker m;
  std::string text;
  for (uint32_t n = 1; std::getline(in, text); ++n) {
    const size_t at = text.find("cutriage-hot:");
    if (at == std::string::npos) continue;
    REQUIRE(m.line == 0);  // one marker per program
    m.line = n;
    std::istringstream words(text.substr(at + 13));
    std::string list;
    words >> list;
    std::stringstream split(list);
    for (std::string r; std::getline(split, r, '|');) m.reasons.push_back(r);
  }
  REQUIRE(m.line != 0);
  REQUIRE(!m.reasons.empty());
  return m;
}

Marker marker_of(const std::string& program) {
  return marker_in(std::filesystem::path(CUTRIAGE_SOURCE_DIR) / "examples/zoo" / (program + ".cu"));
}

// The current record of `function` that carries samples.
const v1::KernelProfile* sampled_record(const tools::ReadResult& r, const std::string& function) {
  const v1::KernelProfile* found = nullptr;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (tools::lookup(r, k->function_name_iid()) == function && k->pc_sampling().pcs_size() > 0) found = k;
  }
  return found;
}

// The engine's input rebuilt from a record: measured metrics, launch, samples.
triage::KernelInput input_from(const tools::ReadResult& r, const v1::KernelProfile& k) {
  return testing::input_from_record(r, k, *triage::known_device_limits("GH100"));
}

const triage::CheckResult* find_rule(const triage::Diagnosis& d, const std::string& id) {
  for (const triage::DecisionVisit& v : d.path) {
    for (const triage::CheckResult& c : v.checks) {
      if (c.rule_id == id) return &c;
    }
  }
  return nullptr;
}

const v1::Check* find_check(const v1::KernelProfile& k, const std::string& id) {
  for (const v1::DecisionVisit& d : k.diagnosis().path()) {
    for (const v1::Check& c : d.checks()) {
      if (c.rule_id() == id) return &c;
    }
  }
  return nullptr;
}

struct HotCase {
  const char* program;
  const char* function;
};
const HotCase kHot[] = {
    {"strided_load", "zoo_strided_load"},      // uncoalesced global loads
    {"transpose", "zoo_transpose_naive"},      // bank-conflicted shared loads
    {"register_spill", "zoo_register_spill"},  // local-memory spills
    {"global_atomics", "zoo_global_atomics"},  // contended atomics, waited on where used
};


}  // namespace

TEST_CASE("pc sampling on the H200: each zoo kernel's hot line is the marked one, with its reason",
          "[pcsampling-h200]") {
  for (const HotCase& c : kHot) {
    INFO(c.program);
    const Marker want = marker_of(c.program);
    tools::ReadResult r = tools::read_cutriage_file(data(std::string("zoo_") + c.program + ".pb").string());
    REQUIRE(r.status == tools::ReadStatus::kOk);
    const v1::KernelProfile* k = sampled_record(r, c.function);
    REQUIRE(k != nullptr);
    const v1::PcSampling& p = k->pc_sampling();
    CHECK(p.error().empty());
    CHECK(p.has_line_info());
    CHECK(p.dropped_samples() == 0);
    CHECK(p.total_samples() > 10000);  // the period was chosen from the duration
    // The sampled launch came after the counter launches of the record it joins.
    CHECK(p.from_launch_index() > k->launch_index());

    const tools::PcSamplingView view = tools::read_pc_sampling(r, p);
    const std::vector<tools::SourceLineSamples> lines = tools::source_lines(view);
    REQUIRE(!lines.empty());
    const tools::SourceLineSamples& top = lines.front();
    INFO("top line " << top.file << ":" << top.line << ", " << top.stall_samples << " of " << view.stall_samples);
    const std::string suffix = std::string("/examples/zoo/") + c.program + ".cu";
    CHECK(top.file.size() > suffix.size());
    CHECK(top.file.compare(top.file.size() - suffix.size(), suffix.size(), suffix) == 0);
    CHECK(top.line == want.line);
    REQUIRE(!top.stalls.empty());
    INFO("dominant reason on the line: " << top.stalls.front().first);
    CHECK(std::find(want.reasons.begin(), want.reasons.end(), top.stalls.front().first) != want.reasons.end());
    if (std::string(c.program) == "transpose") {
      // The bank-conflict signature: the conflicted LDS wait on short_scoreboard and mio_throttle,
      // together most of the line's stalls; barrier (the warps waiting at __syncthreads(), sampled
      // on the LDS that follows it) is the largest single reason but not the majority.
      uint64_t conflict = 0;
      for (const auto& [reason, n] : top.stalls) {
        if (reason == "short_scoreboard" || reason == "mio_throttle") conflict += n;
      }
      CHECK(static_cast<double>(conflict) > 0.5 * static_cast<double>(top.stall_samples));
    }
    // The guide's primary target: more than ~30% of the kernel's stall samples.
    CHECK(static_cast<double>(top.stall_samples) > 0.30 * static_cast<double>(view.stall_samples));

    // The agent's own verdict named that line, and today's engine says the same on the record.
    const std::string where = ":" + std::to_string(want.line);
    const v1::Check* recorded = find_check(*k, "d6.hot_line");
    REQUIRE(recorded != nullptr);
    CHECK(recorded->outcome() == v1::OUTCOME_FIRED);
    CHECK(recorded->reason().find(suffix + where) != std::string::npos);
    const triage::Diagnosis d = triage::triage_kernel(input_from(r, *k));
    const triage::CheckResult* hot = find_rule(d, "d6.hot_line");
    REQUIRE(hot != nullptr);
    INFO(hot->reason);
    CHECK(hot->outcome == triage::Outcome::kFired);
    CHECK(hot->reason.find(suffix + where) != std::string::npos);
  }
}

TEST_CASE("pc sampling on the H200: Decision 3 from the samples agrees with the counters and names the lines",
          "[pcsampling-h200]") {
  // strided_load: long_scoreboard dominates both the counters and the samples, on line 23.
  tools::ReadResult r = tools::read_cutriage_file(data("zoo_strided_load.pb").string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const v1::KernelProfile* k = sampled_record(r, "zoo_strided_load");
  REQUIRE(k != nullptr);
  const triage::Diagnosis d = triage::triage_kernel(input_from(r, *k));
  const triage::CheckResult* dominant = find_rule(d, "d3.dominant_stall");
  REQUIRE(dominant != nullptr);
  INFO(dominant->reason);
  CHECK(dominant->outcome == triage::Outcome::kFired);
  REQUIRE(dominant->finding);
  CHECK(dominant->finding->detail == "long_scoreboard");
  CHECK(dominant->reason.find("PC samples agree") != std::string::npos);
  CHECK(dominant->reason.find("strided_load.cu:" + std::to_string(marker_of("strided_load").line)) !=
        std::string::npos);
  // Without the ratio counters the samples alone decide, and name the same reason.
  triage::KernelInput only_samples = input_from(r, *k);
  triage::MetricSet kept;
  for (const auto& [name, v] : only_samples.metrics.all()) {
    if (name.find("warps_issue_stalled") == std::string::npos) kept.set(name, v.value, v.unit);
  }
  only_samples.metrics = kept;
  const triage::Diagnosis ds = triage::triage_kernel(only_samples);
  const triage::CheckResult* sampled = find_rule(ds, "d3.dominant_stall");
  REQUIRE(sampled != nullptr);
  INFO(sampled->reason);
  CHECK(sampled->outcome == triage::Outcome::kFired);
  REQUIRE(sampled->finding);
  CHECK(sampled->finding->detail == "long_scoreboard");
}

TEST_CASE("pc sampling on the H200: without -lineinfo, SASS offsets of the same hot instruction",
          "[pcsampling-h200]") {
  tools::ReadResult with = tools::read_cutriage_file(data("zoo_strided_load.pb").string());
  tools::ReadResult without = tools::read_cutriage_file(data("zoo_strided_load_nolineinfo.pb").string());
  REQUIRE(with.status == tools::ReadStatus::kOk);
  REQUIRE(without.status == tools::ReadStatus::kOk);
  const v1::KernelProfile* kw = sampled_record(with, "zoo_strided_load");
  const v1::KernelProfile* kn = sampled_record(without, "zoo_strided_load");
  REQUIRE(kw != nullptr);
  REQUIRE(kn != nullptr);
  const v1::PcSampling& pn = kn->pc_sampling();
  CHECK_FALSE(pn.has_line_info());
  for (const v1::SampledPc& pc : pn.pcs()) CHECK(pc.file_iid() == 0);
  CHECK(pn.code_size() >= 1);  // the instructions still travel for the tool's disassembly
  // Same code either way (-lineinfo changes no instruction): the hottest PC is the same offset.
  const tools::PcSamplingView vw = tools::read_pc_sampling(with, kw->pc_sampling());
  const tools::PcSamplingView vn = tools::read_pc_sampling(without, pn);
  REQUIRE(!vw.pcs.empty());
  REQUIRE(!vn.pcs.empty());
  CHECK(vw.pcs.front().pc_offset == vn.pcs.front().pc_offset);
  // Decision 6 still names the hot instruction, and says why there is no line.
  const v1::Check* hot = find_check(*kn, "d6.hot_line");
  REQUIRE(hot != nullptr);
  INFO(hot->reason());
  CHECK(hot->outcome() == v1::OUTCOME_FIRED);
  CHECK(hot->reason().find("-lineinfo") != std::string::npos);
  std::ostringstream pc;
  pc << "pc 0x" << std::hex << vn.pcs.front().pc_offset;
  CHECK(hot->reason().find(pc.str()) != std::string::npos);
}

TEST_CASE("pc sampling on the H200: the PyTorch loop's top families are sampled without loss",
          "[pcsampling-h200]") {
  tools::ReadResult r = tools::read_cutriage_file(data("torch_loop.pb").string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  int sampled = 0;
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (!k->has_pc_sampling()) continue;
    const v1::PcSampling& p = k->pc_sampling();
    INFO(tools::lookup(r, k->function_name_iid()));
    CHECK(p.error().empty());
    CHECK(p.dropped_samples() == 0);
    CHECK_FALSE(p.hardware_buffer_full());
    CHECK(p.total_samples() > 10000);
    CHECK_FALSE(p.has_line_info());  // PyTorch's and cuBLAS's kernels carry no line table
    // Every warp state counted once: the plain states never exceed the device's total.
    const tools::PcSamplingView view = tools::read_pc_sampling(r, p);
    CHECK(view.samples <= p.total_samples());
    CHECK(view.samples > p.total_samples() / 2);
    ++sampled;
  }
  CHECK(sampled == 5);  // the default selection: top 5
}

TEST_CASE("pc sampling on the H200: a JIT-compiled kernel's samples reach its source lines", "[pcsampling-h200]") {
  // tests/gpu/programs/jit_ptx.cu loads jit_kernel.cu's PTX with cuModuleLoadDataEx: the cubin
  // the module-load callback handed over was compiled by the driver.
  const Marker want = marker_in(std::filesystem::path(CUTRIAGE_SOURCE_DIR) / "tests/gpu/programs/jit_kernel.cu");
  tools::ReadResult r = tools::read_cutriage_file(data("jit_ptx.pb").string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const v1::KernelProfile* k = sampled_record(r, "jit_gather");
  REQUIRE(k != nullptr);
  CHECK(k->pc_sampling().has_line_info());
  const std::vector<tools::SourceLineSamples> lines = tools::source_lines(tools::read_pc_sampling(r, k->pc_sampling()));
  REQUIRE(!lines.empty());
  INFO(lines.front().file << ":" << lines.front().line);
  CHECK(lines.front().file.find("jit_kernel.cu") != std::string::npos);
  CHECK(lines.front().line == want.line);
  REQUIRE(!lines.front().stalls.empty());
  CHECK(lines.front().stalls.front().first == want.reasons.front());
}

TEST_CASE("pc sampling on the H200: atomicAdd's inlined body is attributed near its calling line",
          "[pcsampling-h200]") {
  // The ATOMG lies in device_atomic_functions.hpp (CUPTI's line for it); the agent files it under
  // the nearest earlier line of the kernel's own file and keeps the header's position.
  tools::ReadResult r = tools::read_cutriage_file(data("zoo_global_atomics.pb").string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const v1::KernelProfile* k = sampled_record(r, "zoo_global_atomics");
  REQUIRE(k != nullptr);
  const tools::PcSamplingView view = tools::read_pc_sampling(r, k->pc_sampling());
  const tools::SampledInstruction* atom = nullptr;
  for (const tools::SampledInstruction& pc : view.pcs) {
    if (pc.inlined_file.find("device_atomic_functions.hpp") != std::string::npos) atom = &pc;
  }
  REQUIRE(atom != nullptr);
  INFO(atom->file << ":" << atom->line << " inlined from " << atom->inlined_file << ":" << atom->inlined_line);
  CHECK(atom->file.find("global_atomics.cu") != std::string::npos);
  // The atomic's statement is on line 28; the instruction just before the inlined body computes
  // its operand on line 27: the estimate lands on one of the two.
  CHECK((atom->line == 27 || atom->line == 28));
  CHECK(atom->inlined_line > 0);
  for (const tools::SampledInstruction& pc : view.pcs) {
    if (pc.file.find("global_atomics.cu") == std::string::npos) CHECK(pc.file.empty());  // none left in the header
  }
}

TEST_CASE("pc sampling on the H200: the pprof export of a capture parses and adds up", "[pcsampling-h200]") {
  tools::ReadResult r = tools::read_cutriage_file(data("zoo_strided_load.pb").string());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  tools::NvdisasmSearch none;
  none.getenv = [](const char*) -> const char* { return nullptr; };
  none.fallback_dirs.clear();  // no disassembler: PC frames are offsets only
  tools::SassResolver sass(none);
  std::ostringstream gz;
  tools::PprofStats stats;
  REQUIRE_FALSE(tools::export_pprof(r, tools::PprofOptions{}, sass, gz, &stats).has_value());
  perftools::profiles::Profile p;
  REQUIRE(p.ParseFromString(testing::gunzip(gz.str())));
  REQUIRE(p.string_table_size() > 0);
  CHECK(p.string_table(0).empty());
  auto str = [&](int64_t i) -> std::string { return p.string_table(static_cast<int>(i)); };
  std::map<uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : p.location()) locations[l.id()] = &l;
  std::map<uint64_t, std::string> functions;
  for (const auto& f : p.function()) functions[f.id()] = str(f.name());
  auto frame = [&](uint64_t location) {
    const perftools::profiles::Location* l = locations.at(location);
    REQUIRE(l->line_size() == 1);
    return functions.at(l->line(0).function_id());
  };
  // The samples of the file add up, and the heaviest stall stack is line 23 waiting on
  // long_scoreboard: what the report and Decision 6 say.
  const tools::PcSamplingView view = tools::read_pc_sampling(r, sampled_record(r, "zoo_strided_load")->pc_sampling());
  int64_t total = 0;
  int64_t best = 0;
  std::vector<std::string> best_frames;
  for (const auto& sample : p.sample()) {
    REQUIRE(sample.value_size() >= 1);
    total += sample.value(0);
    // Leaf first: warp state, PC, line, kernel; or the kernel's samples no PC holds (two frames).
    REQUIRE((sample.location_id_size() == 4 || sample.location_id_size() == 2));
    if (sample.location_id_size() == 4 && sample.value(0) > best) {
      best = sample.value(0);
      best_frames.clear();
      for (uint64_t id : sample.location_id()) best_frames.push_back(frame(id));
    }
  }
  CHECK(static_cast<uint64_t>(total) == stats.samples);
  CHECK(static_cast<uint64_t>(total) >= view.samples);  // every kernel of the file, this one included
  REQUIRE(best_frames.size() == 4);
  INFO(best_frames[0] << " < " << best_frames[1] << " < " << best_frames[2] << " < " << best_frames[3]);
  CHECK(best_frames[0] == "long_scoreboard");
  CHECK(best_frames[2].find("strided_load.cu:" + std::to_string(marker_of("strided_load").line)) != std::string::npos);
  CHECK(best_frames[3].find("zoo_strided_load") != std::string::npos);
}

}  // namespace test_pcsampling_h200
