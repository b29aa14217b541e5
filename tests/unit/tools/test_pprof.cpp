// `cutriage pprof` (tools/src/pprof_export.h) read back the way pprof reads it: the gzip member
// inflated with zlib, the bytes parsed with the classes protoc generated from
// tools/proto/pprof/profile.proto, and every stack checked against the record's PcSampling, on
// the SYNTHETIC samples of pc_sampling_fixture.h.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "cutriage/base/demangle.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "nvdisasm_stub.h"
#include "pc_sampling_fixture.h"
#include "pc_samples.h"
#include "pprof/profile.pb.h"
#include "record_support.h"
#include "pprof_export.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_pprof {

using namespace cutriage;
namespace pp = perftools::profiles;
using testing::SyntheticPc;

namespace {


// A profile as pprof resolves it: per sample, its frames root first, as names.
struct Stack {
  std::vector<std::string> frames;  // kernel, line, PC, warp state
  int64_t value = 0;   // samples
  int64_t cycles = 0;  // samples x 2^period
  std::string kind;  // the "kind" label
};

struct Decoded {
  pp::Profile profile;
  std::vector<Stack> stacks;
  std::vector<std::string> comments;
};

Decoded decode(const std::string& gz) {
  Decoded d;
  REQUIRE(d.profile.ParseFromString(testing::gunzip(gz)));
  const pp::Profile& p = d.profile;
  REQUIRE(p.string_table_size() > 0);
  REQUIRE(p.string_table(0).empty());
  auto str = [&](int64_t i) -> std::string {
    REQUIRE(i >= 0);
    REQUIRE(i < p.string_table_size());
    return p.string_table(static_cast<int>(i));
  };
  std::map<uint64_t, const pp::Function*> functions;
  for (const pp::Function& f : p.function()) {
    REQUIRE(f.id() != 0);
    REQUIRE(functions.emplace(f.id(), &f).second);  // unique ids
  }
  std::map<uint64_t, std::string> frame_names;
  for (const pp::Location& loc : p.location()) {
    REQUIRE(loc.id() != 0);
    CHECK(loc.mapping_id() == 0);
    REQUIRE(loc.line_size() == 1);
    REQUIRE(functions.count(loc.line(0).function_id()) == 1);
    const std::string name = str(functions[loc.line(0).function_id()]->name());
    CHECK_FALSE(name.empty());
    REQUIRE(frame_names.emplace(loc.id(), name).second);
  }
  for (const pp::Sample& s : p.sample()) {
    Stack st;
    REQUIRE(s.value_size() == p.sample_type_size());
    st.value = s.value(0);
    st.cycles = s.value(1);
    for (int i = s.location_id_size() - 1; i >= 0; --i) {  // location_id[0] is the leaf
      REQUIRE(frame_names.count(s.location_id(i)) == 1);
      st.frames.push_back(frame_names[s.location_id(i)]);
    }
    REQUIRE(s.label_size() == 1);
    CHECK(str(s.label(0).key()) == "kind");
    st.kind = str(s.label(0).str());
    d.stacks.push_back(st);
  }
  for (int64_t c : p.comment()) d.comments.push_back(str(c));
  (void)str(p.default_sample_type());
  return d;
}

// What the record's PcSampling says, computed here independently of pc_samples.cpp: per PC, each
// state once (the plain spelling over its _not_issued subset), totals that are not states left out.
struct Expected {
  uint64_t samples = 0;
  uint64_t stall_samples = 0;
  std::map<std::string, uint64_t> by_line;        // "file:line" -> samples, every state
  std::map<std::string, uint64_t> stalls_by_line;
};

Expected expected_from(const tools::ReadResult& r, const v1::PcSampling& pcs) {
  Expected e;
  const std::string prefix = "smsp__pcsamp_warps_issue_stalled_";
  for (const v1::SampledPc& pc : pcs.pcs()) {
    std::map<std::string, uint64_t> raw;
    for (const v1::StallCount& sc : pc.stalls()) raw[std::string(tools::lookup(r, sc.reason_iid()))] += sc.samples();
    const std::string line = std::string(tools::lookup(r, pc.file_iid())) + ":" + std::to_string(pc.line());
    for (const auto& [name, n] : raw) {
      if (name.rfind(prefix, 0) != 0) continue;  // smsp__pcsamp_sample_count
      std::string state = name.substr(prefix.size());
      const std::string suffix = "_not_issued";
      if (state.size() > suffix.size() && state.compare(state.size() - suffix.size(), suffix.size(), suffix) == 0) {
        if (raw.count(name.substr(0, name.size() - suffix.size())) != 0) continue;
        state.resize(state.size() - suffix.size());
      }
      const bool stall = state != "selected" && state != "not_selected";
      e.samples += n;
      e.by_line[line] += n;
      if (stall) {
        e.stall_samples += n;
        e.stalls_by_line[line] += n;
      }
    }
  }
  return e;
}

std::string export_gz(const tools::ReadResult& r, const tools::PprofOptions& options,
                      tools::SassResolver& sass, tools::PprofStats* stats = nullptr) {
  std::ostringstream out;
  std::optional<tools::PprofError> error = tools::export_pprof(r, options, sass, out, stats);
  INFO((error ? error->message : std::string()));
  REQUIRE_FALSE(error);
  return out.str();
}

const std::set<std::string> kStates = {"long_scoreboard", "lg_throttle", "wait", "short_scoreboard", "drain",
                                       "math_pipe_throttle", "imc_miss", "branch_resolving", "selected",
                                       "not_selected"};

}  // namespace

TEST_CASE("pprof: the export reads back with the protoc classes, stacks and totals match the samples",
          "[pprof]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_pc_file());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  tools::SassResolver sass(testing::no_nvdisasm());
  tools::PprofStats stats;
  const std::string gz = export_gz(r, {"", "synthetic.pb"}, sass, &stats);
  REQUIRE(gz.size() > 18);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);  // gzip magic
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  const Decoded d = decode(gz);
  const pp::Profile& p = d.profile;

  REQUIRE(p.sample_type_size() == 2);
  CHECK(p.string_table(static_cast<int>(p.sample_type(0).type())) == "samples");
  CHECK(p.string_table(static_cast<int>(p.sample_type(0).unit())) == "count");
  CHECK(p.string_table(static_cast<int>(p.sample_type(1).type())) == "cycles");
  CHECK(p.string_table(static_cast<int>(p.sample_type(1).unit())) == "count");
  CHECK(p.string_table(static_cast<int>(p.default_sample_type())) == "cycles");
  CHECK(p.string_table(static_cast<int>(p.period_type().type())) == "cycles");
  CHECK(p.period() == 0);  // stencil at 2^12, scale at 2^10: no single period
  CHECK(p.time_nanos() == 1'700'000'000'000'000'000LL);

  // The two sampled kernels; the failed one and the unsampled one give no stack.
  const auto kernels = tools::current_kernels(r);
  REQUIRE(kernels.size() == 4);
  const Expected stencil = expected_from(r, kernels[0]->pc_sampling());
  const Expected scale = expected_from(r, kernels[1]->pc_sampling());
  CHECK(stencil.samples == SyntheticPc::kSamples);
  CHECK(stencil.samples == kernels[0]->pc_sampling().total_samples());
  CHECK(stencil.stall_samples == SyntheticPc::kStallSamples);
  CHECK(scale.samples == kernels[1]->pc_sampling().total_samples());

  int64_t total = 0, stalls = 0;
  std::map<std::string, int64_t> stencil_by_line, stencil_stalls_by_line;
  std::set<std::string> kernels_seen, states_seen;
  for (const Stack& s : d.stacks) {
    INFO("stack " << s.frames.size() << " frames, leaf " << (s.frames.empty() ? "" : s.frames.back()));
    REQUIRE(s.frames.size() == 4);
    CHECK(s.value > 0);
    total += s.value;
    const std::string& state = s.frames[3];
    CHECK(kStates.count(state) == 1);  // canonical names only: no smsp__ prefix, no _not_issued
    states_seen.insert(state);
    const bool issue = state == "selected" || state == "not_selected";
    CHECK(s.kind == (issue ? "issue" : "stall"));
    if (!issue) stalls += s.value;
    kernels_seen.insert(s.frames[0]);
    if (s.frames[0] == SyntheticPc::kKernelDemangled) {
      stencil_by_line[s.frames[1]] += s.value;
      if (!issue) stencil_stalls_by_line[s.frames[1]] += s.value;
    } else {
      CHECK(s.frames[0] == "scale(float*, int)");
      CHECK(s.frames[1] == "pc 0x0050");  // no line information: the PC stands for the line
      CHECK(s.frames[2] == "0x0050");     // no SASS without nvdisasm
    }
  }
  CHECK(total == static_cast<int64_t>(stencil.samples + scale.samples));
  CHECK(stalls == static_cast<int64_t>(stencil.stall_samples + scale.stall_samples));
  CHECK(stats.kernels == 2);
  CHECK(stats.samples == stencil.samples + scale.samples);
  CHECK(stats.stall_samples == stencil.stall_samples + scale.stall_samples);
  CHECK(stats.stacks == d.stacks.size());
  CHECK(kernels_seen == std::set<std::string>{SyntheticPc::kKernelDemangled, "scale(float*, int)"});
  CHECK(states_seen == kStates);
  // Per line, against the record.
  REQUIRE(stencil_by_line.size() == stencil.by_line.size());
  for (const auto& [line, n] : stencil.by_line) {
    INFO(line);
    CHECK(stencil_by_line[line] == static_cast<int64_t>(n));
    auto expected_stalls = stencil.stalls_by_line.find(line);
    const uint64_t line_stalls = expected_stalls == stencil.stalls_by_line.end() ? 0 : expected_stalls->second;
    CHECK(stencil_stalls_by_line[line] == static_cast<int64_t>(line_stalls));
  }
  CHECK(stencil_stalls_by_line["src/stencil.cu:5"] == 700);
  CHECK(stencil_by_line["src/stencil.cu:3"] == 35);  // issue states only, still a line

  // Frames: the agent's SASS for the store; the helper's PC says where it is.
  std::set<std::string> pc_frames;
  for (const Stack& s : d.stacks) pc_frames.insert(s.frames[1] + " > " + s.frames[2]);
  CHECK(pc_frames.count("src/stencil.cu:7 > 0x01a0 STG.E desc[UR4][R2.64], R9") == 1);
  CHECK(pc_frames.count("src/stencil.cu:5 > 0x0110") == 1);
  CHECK(pc_frames.count("src/common.cuh:12 > 0x0010 [in helper]") == 1);

  // Comments: what was exported and why some kernel gave nothing; the missing nvdisasm, once.
  REQUIRE(d.comments.size() >= 4);
  CHECK(d.comments[0].rfind("cutriage pprof of synthetic.pb:", 0) == 0);
  CHECK(d.comments[1] == "stencil(const float*, float*, int), launch #18: 1095 samples, 965 of them stalls, 7 "
                         "dropped, one sample per SM every 2^12 cycles");
  CHECK(d.comments[2] == "scale(float*, int), launch #31: 80 samples, 60 of them stalls, one sample per SM every "
                         "2^10 cycles; built without -lineinfo: lines are SASS offsets");
  CHECK(d.comments[3] == "reduce(const float*, float*), launch #41: PC sampling failed: cuptiPCSamplingEnable: "
                         "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  size_t nvdisasm_notes = 0;
  for (const std::string& c : d.comments) nvdisasm_notes += c.rfind("nvdisasm not found", 0) == 0 ? 1 : 0;
  CHECK(nvdisasm_notes == 1);
}

TEST_CASE("pprof: with nvdisasm the PC frames carry their SASS", "[pprof][sass]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_pc_file());
  const std::string dir = testing::temp_dir("pprof");
  testing::write_fake_nvdisasm(dir + "/nvdisasm", SyntheticPc::kKernelCodeBytes);
  tools::SassResolver sass(testing::nvdisasm_only_in(dir));
  tools::PprofOptions options;
  options.kernel = "stencil";
  const Decoded d = decode(export_gz(r, options, sass));
  std::set<std::string> pcs;
  for (const Stack& s : d.stacks) pcs.insert(s.frames[2]);
  CHECK(pcs.count("0x0110 FADD R0, R0, R7") == 1);
  CHECK(pcs.count("0x00d0 LDG.E R0, desc[UR4][R2.64]") == 1);
  CHECK(pcs.count("0x01a0 STG.E desc[UR4][R2.64], R9") == 1);  // the record's own text
  CHECK(pcs.count("0x0010 [in helper]") == 1);  // the stand-in refuses the helper's body
  CHECK(d.profile.period() == 4096);            // one kernel: its period, 2^12
  std::filesystem::remove_all(dir);
}

TEST_CASE("pprof: --kernel, files without samples, failed sampling, one sampled launch counted once",
          "[pprof]") {
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_pc_file());
  tools::SassResolver sass(testing::no_nvdisasm());
  pp::Profile p;

  tools::PprofOptions options;
  options.kernel = "scale";
  tools::PprofStats stats;
  REQUIRE_FALSE(tools::build_pprof(r, options, sass, p, &stats));
  CHECK(stats.kernels == 1);
  CHECK(stats.samples == 80);
  CHECK(p.period() == 1024);

  options.kernel = "_Z7stencil";  // the mangled name matches too
  REQUIRE_FALSE(tools::build_pprof(r, options, sass, p, &stats));
  CHECK(stats.samples == SyntheticPc::kSamples);

  options.kernel = "gemm";
  std::optional<tools::PprofError> e = tools::build_pprof(r, options, sass, p);
  REQUIRE(e);
  CHECK(e->kind == tools::PprofError::Kind::kNoSamples);
  CHECK(e->message == "no sampled kernel matches 'gemm' (sampled: reduce(const float*, float*); scale(float*, "
                      "int); stencil(const float*, float*, int))");

  options.kernel = "reduce";
  e = tools::build_pprof(r, options, sass, p);
  REQUIRE(e);
  CHECK(e->kind == tools::PprofError::Kind::kNoSamples);
  CHECK(e->message == "no PC samples were collected: reduce(const float*, float*), launch #41: PC sampling "
                      "failed: cuptiPCSamplingEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");

  const tools::ReadResult no_samples = tools::read_cutriage_bytes(testing::synthetic_trace_file());
  REQUIRE(no_samples.status == tools::ReadStatus::kOk);
  e = tools::build_pprof(no_samples, {}, sass, p);
  REQUIRE(e);
  CHECK(e->kind == tools::PprofError::Kind::kNoSamples);
  CHECK(e->message.rfind("the file has no PC samples", 0) == 0);

  // The samples of launch 18 carried by two current records (the launch's own and a later one
  // that combined it) count once; a revision of the first record replaces it as usual.
  wire::RecordEncoder enc;
  std::string bytes = enc.session(testing::synthetic_pc_session());
  wire::KernelRecord first = testing::synthetic_pc_kernel();
  bytes += enc.kernel(first);
  wire::KernelRecord later = testing::synthetic_pc_kernel();
  later.input.launch_index = 19;
  later.combined_launch_indices = {SyntheticPc::kLaunch};
  bytes += enc.kernel(later);
  first.revision = 1;
  bytes += enc.kernel(first);
  const tools::ReadResult twice = tools::read_cutriage_bytes(bytes);
  REQUIRE(tools::current_kernels(twice).size() == 2);
  REQUIRE_FALSE(tools::build_pprof(twice, {}, sass, p, &stats));
  CHECK(stats.kernels == 1);
  CHECK(stats.samples == SyntheticPc::kSamples);
}

TEST_CASE("pprof: gzip_compress makes one gzip member zlib inflates back", "[pprof]") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{70000}, size_t{1} << 20}) {
    std::string in(n, '\0');
    for (size_t i = 0; i < n; ++i) in[i] = static_cast<char>((i * 2654435761u) >> 13);
    std::string gz, error;
    REQUIRE(tools::gzip_compress(in, gz, error));
    CHECK(error.empty());
    CHECK(testing::gunzip(gz) == in);
  }
}

// torch_loop.pb (H200): the GEMMs sampled at 2^12, a 30 us elementwise kernel at 2^8. Counted in
// samples the small kernel outweighed a 350 us GEMM; in cycles (samples x 2^period, the default
// type) the GEMM weighs more. The total is the report's: the sum of each launch's device total.
TEST_CASE("pprof: samples weighed by their period, the total is the report's", "[pprof]") {
  const tools::ReadResult r = tools::read_cutriage_file(CUTRIAGE_TEST_DATA_DIR "/pcsampling/torch_loop.pb");
  REQUIRE(r.status == tools::ReadStatus::kOk);
  tools::SassResolver sass(testing::no_nvdisasm());
  tools::PprofStats stats;
  const Decoded d = decode(export_gz(r, {"", "torch_loop.pb"}, sass, &stats));
  REQUIRE(d.profile.sample_type_size() == 2);
  CHECK(d.profile.period() == 0);  // two periods

  uint64_t report_total = 0;
  const v1::KernelProfile* gemm = nullptr;   // the longest kernel sampled at 2^12
  const v1::KernelProfile* small = nullptr;  // the one sampled at 2^8
  for (const v1::KernelProfile* k : tools::current_kernels(r)) {
    if (!k->has_pc_sampling()) continue;
    const v1::PcSampling& pcs = k->pc_sampling();
    report_total += pcs.total_samples() != 0 ? pcs.total_samples() : tools::read_pc_sampling(r, pcs).samples;
    if (pcs.sampling_period_log2() == 8) small = k;
    if (pcs.sampling_period_log2() == 12 && (gemm == nullptr || k->duration_ns() > gemm->duration_ns())) gemm = k;
  }
  REQUIRE(gemm != nullptr);
  REQUIRE(small != nullptr);
  CHECK(gemm->duration_ns() > 10 * small->duration_ns());

  std::map<std::string, int64_t> samples, cycles;
  int64_t total = 0;
  for (const Stack& s : d.stacks) {
    REQUIRE_FALSE(s.frames.empty());
    samples[s.frames[0]] += s.value;
    cycles[s.frames[0]] += s.cycles;
    total += s.value;
    if (s.kind == "unattributed") CHECK(s.frames.size() == 2);
  }
  auto name = [&](const v1::KernelProfile* k) {
    std::string n(tools::lookup(r, k->demangled_name_iid()));
    return n.empty() ? base::demangle(tools::lookup(r, k->mangled_name_iid())) : n;
  };
  INFO("GEMM " << name(gemm) << ", small " << name(small));
  REQUIRE(samples.count(name(gemm)) == 1);
  REQUIRE(samples.count(name(small)) == 1);
  CHECK(samples[name(small)] > samples[name(gemm)]);  // what misled: more samples, fewer cycles
  CHECK(cycles[name(gemm)] > cycles[name(small)]);
  CHECK(cycles[name(gemm)] == samples[name(gemm)] * 4096);
  CHECK(cycles[name(small)] == samples[name(small)] * 256);
  // The report's total: 111,439 samples; the PCs alone hold 110,490.
  CHECK(total == static_cast<int64_t>(report_total));
  CHECK(stats.samples == report_total);
  CHECK(stats.unattributed_samples > 0);
}

}  // namespace test_pprof
