// Tests of the ncu raw-page CSV reader. Every CSV here is SYNTHETIC: written by hand in the shape
// of `ncu --csv --page raw [--print-units base]` (Nsight Compute 2025.x), not captured from a GPU.
#include <string>
#include <string_view>
#include <vector>

#include "catch.h"
#include "ncu_csv.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_ncu_csv {

using cutriage::tools::NcuCsvResult;
using cutriage::tools::parse_ncu_csv;
using cutriage::tools::parse_timings;
using cutriage::tools::TimingEntry;

namespace {

#if __has_include(<catch2/catch_approx.hpp>)
using Catch::Approx;
#endif

// Synthetic: header, units row and two launches, as `ncu --csv --page raw --print-units base`.
constexpr std::string_view kBasic =
    R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","device__attribute_display_name","device__attribute_multiprocessor_count","dram__bytes_read.sum","gpu__time_duration.sum","launch__block_size","launch__func_cache_config","launch__grid_size","launch__registers_per_thread","launch__shared_mem_config_size","launch__shared_mem_per_block_dynamic","launch__shared_mem_per_block_static","sm__throughput.avg.pct_of_peak_sustained_elapsed"
"","","","","","","","","","","","","","byte","nsecond","","","","register/thread","byte","byte/block","byte/block","%"
"0","4242","zoo","gpu-node-1","zoo_vector_add(const float *, const float *, float *, unsigned long)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","NVIDIA H200","132","8,388,608","12,345","256","CachePreferNone","4096","16","32,768","0","0","12.5"
"1","4242","zoo","gpu-node-1","void zoo_tiled<float, 32>(const float *, float *, int)","1","7","(32, 8, 1)","(64, 64, 2)","0","9.0","NVIDIA H200","132","n/a","1,000","256","CachePreferNone","8192","40","233,472","16,384","8,192","87.25"
)csv";

const cutriage::tools::NcuImport& ok(const NcuCsvResult& r) {
  if (r.error) FAIL("unexpected error: " << r.error->message);
  REQUIRE(r.import.has_value());
  return *r.import;
}

std::string error_of(const NcuCsvResult& r) {
  REQUIRE(r.error.has_value());
  CHECK_FALSE(r.import.has_value());
  CHECK(r.error->message.find('\n') == std::string::npos);  // one line
  return r.error->message;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

}  // namespace

TEST_CASE("ncu csv: header, units row and two launches", "[ncu]") {
  const auto r = parse_ncu_csv(kBasic);
  const auto& imp = ok(r);
  CHECK(imp.warnings.empty());
  CHECK(imp.host == "gpu-node-1");
  CHECK(imp.pid == 4242);
  CHECK(imp.process_name == "zoo");
  REQUIRE(imp.kernels.size() == 2);

  const auto& a = imp.kernels[0];
  CHECK(a.input.demangled_name == "zoo_vector_add(const float *, const float *, float *, unsigned long)");
  CHECK(a.input.function_name == "zoo_vector_add");
  CHECK(a.input.mangled_name.empty());
  CHECK(a.input.launch_index == 0);
  CHECK(a.input.device == 0);
  CHECK(a.context_id == 1);
  CHECK(a.stream_id == 7);
  CHECK(a.duration_ns == Approx(12345));
  CHECK(a.input.collection.replay_mode == cutriage::triage::ReplayMode::kKernel);
  CHECK(a.input.collection.clock_control == cutriage::triage::ClockControl::kUnspecified);

  // Thousands separators, units as in the units row, source measured.
  const auto* dram = a.input.metrics.find("dram__bytes_read.sum");
  REQUIRE(dram != nullptr);
  CHECK(dram->value == Approx(8388608));
  CHECK(dram->unit == "byte");
  CHECK(dram->source == cutriage::triage::MetricSource::kMeasured);
  CHECK(a.input.metrics.find("sm__throughput.avg.pct_of_peak_sustained_elapsed")->unit == "%");
  // Text-valued metrics are not metrics; identity columns are not metrics.
  CHECK_FALSE(a.input.metrics.has("launch__func_cache_config"));
  CHECK_FALSE(a.input.metrics.has("device__attribute_display_name"));
  CHECK_FALSE(a.input.metrics.has("Kernel Name"));
  CHECK(a.input.metrics.size() == 10);

  REQUIRE(a.input.launch.has_value());
  CHECK(a.input.launch->grid.x == 4096);
  CHECK(a.input.launch->block.x == 256);
  CHECK(a.input.launch->registers_per_thread == 16);
  CHECK(a.input.launch->shared_config_bytes_per_sm == 32768);
  CHECK(a.input.launch->local_bytes_per_thread == 0);
  CHECK(a.input.launch->cluster.count() == 0);

  const auto& b = imp.kernels[1];
  CHECK(b.input.function_name == "zoo_tiled<float, 32>");
  CHECK(b.input.launch_index == 1);
  CHECK_FALSE(b.input.metrics.has("dram__bytes_read.sum"));  // "n/a": not collected
  CHECK(b.duration_ns == Approx(1000));
  REQUIRE(b.input.launch.has_value());
  CHECK(b.input.launch->block.x == 32);
  CHECK(b.input.launch->block.y == 8);
  CHECK(b.input.launch->grid.x == 64);
  CHECK(b.input.launch->grid.y == 64);
  CHECK(b.input.launch->grid.z == 2);
  CHECK(b.input.launch->static_shared_bytes == 8192);
  CHECK(b.input.launch->dynamic_shared_bytes == 16384);

  REQUIRE(imp.gpus.size() == 1);
  CHECK(imp.gpus[0].device == 0);
  CHECK(imp.gpus[0].name == "NVIDIA H200");
  CHECK(imp.gpus[0].limits.sm_count == 132);
  REQUIRE(a.input.device_limits.has_value());
  CHECK(a.input.device_limits->cc_major == 9);
  CHECK(a.input.device_limits->cc_minor == 0);
  CHECK(a.input.device_limits->chip == "GH100");
  CHECK(a.input.device_limits->reserved_shared_bytes_per_block == 1024);
}

TEST_CASE("ncu csv: CRLF, leading ==PROF== lines, quoted commas and doubled quotes", "[ncu]") {
  // Synthetic: what `ncu --csv --page raw` prints to stdout when the application also prints.
  std::string text = std::string(
                         "==PROF== Connected to process 4242 (/opt/zoo/bin/zoo)\n"
                         "zoo: starting \"vector_add\", n=1048576\n"
                         "==PROF== Profiling \"zoo_vector_add\" - 0: 0%....50%....100% - 9 passes\n") +
                     std::string(kBasic) + "==PROF== Disconnected from process 4242\n";
  text = replace_all(text, "gpu-node-1", "node \"\"a\"\", rack 3");
  text = replace_all(text, "\n", "\r\n");
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  CHECK(imp.host == "node \"a\", rack 3");
  REQUIRE(imp.kernels.size() == 2);
  CHECK(imp.kernels[1].input.demangled_name == "void zoo_tiled<float, 32>(const float *, float *, int)");
  CHECK(imp.kernels[1].input.metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(87.25));
  CHECK(imp.kernels[0].input.metrics.find("dram__bytes_read.sum")->unit == "byte");
  // The trailing log line is reported once; nothing else is wrong.
  REQUIRE(imp.warnings.size() == 1);
  CHECK(contains(imp.warnings[0], "log line"));
}

TEST_CASE("ncu csv: scaled units are normalized to base units", "[ncu]") {
  // Synthetic: the same export without --print-units base.
  constexpr std::string_view text =
      R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes.sum.per_second","sm__cycles_elapsed.avg.per_second","l1tex__data_pipe_lsu_wavefronts.sum","launch__shared_mem_per_block_static","gpc__cycles_elapsed.max","smsp__inst_executed.sum","dram__cycles_elapsed.avg.per_second"
"","","","","","","","","","","","usecond","Kbyte","Gbyte/second","Mhz","","Kbyte/block","cycle","Minst","cycle/nsecond"
"3","10","bench","h","k(int)","1","13","(128, 1, 1)","(1, 1, 1)","0","9.0","12.5","2","1.5","1,755","7","1.02","1,234","2.5","3.2"
)csv";
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  CHECK(imp.warnings.empty());
  REQUIRE(imp.kernels.size() == 1);
  const auto& m = imp.kernels[0].input.metrics;
  CHECK(m.find("gpu__time_duration.sum")->value == Approx(12500));
  CHECK(m.find("gpu__time_duration.sum")->unit == "nsecond");
  CHECK(imp.kernels[0].duration_ns == Approx(12500));
  CHECK(m.find("dram__bytes_read.sum")->value == Approx(2000));  // decimal kilo
  CHECK(m.find("dram__bytes_read.sum")->unit == "byte");
  CHECK(m.find("dram__bytes.sum.per_second")->value == Approx(1.5e9));
  CHECK(m.find("dram__bytes.sum.per_second")->unit == "byte/second");
  CHECK(m.find("sm__cycles_elapsed.avg.per_second")->value == Approx(1.755e9));
  CHECK(m.find("sm__cycles_elapsed.avg.per_second")->unit == "hz");
  CHECK(m.find("l1tex__data_pipe_lsu_wavefronts.sum")->unit.empty());
  CHECK(m.find("launch__shared_mem_per_block_static")->value == Approx(1020));
  CHECK(m.find("launch__shared_mem_per_block_static")->unit == "byte/block");
  CHECK(m.find("gpc__cycles_elapsed.max")->value == Approx(1234));
  CHECK(m.find("smsp__inst_executed.sum")->value == Approx(2.5e6));
  CHECK(m.find("smsp__inst_executed.sum")->unit == "inst");
  CHECK(m.find("dram__cycles_elapsed.avg.per_second")->value == Approx(3.2e9));
  CHECK(m.find("dram__cycles_elapsed.avg.per_second")->unit == "cycle/second");
  REQUIRE(imp.kernels[0].input.launch.has_value());
  CHECK(imp.kernels[0].input.launch->static_shared_bytes == 1020);
}

TEST_CASE("ncu csv: device limits from device__attribute_* columns", "[ncu]") {
  // Synthetic: a raw page with the device attributes (values as on an H200).
  constexpr std::string_view text =
      R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","device__attribute_compute_capability_major","device__attribute_compute_capability_minor","device__attribute_display_name","device__attribute_max_blocks_per_multiprocessor","device__attribute_max_registers_per_multiprocessor","device__attribute_max_shared_memory_per_block_optin","device__attribute_max_shared_memory_per_multiprocessor","device__attribute_max_threads_per_block","device__attribute_max_threads_per_multiprocessor","device__attribute_multiprocessor_count","device__attribute_warp_size","device__attribute_clock_rate","gpu__time_duration.sum"
"","","","","","","","","","","","","","","block","register","byte","byte","thread","thread","","thread","hz","nsecond"
"0","1","p","h","k()","1","7","(1, 1, 1)","(1, 1, 1)","1","9.0","9","0","NVIDIA H200","32","65,536","232,448","233,472","1,024","2,048","132","32","1,980,000,000","100"
"1","1","p","h","k()","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","9","0","NVIDIA H200","32","65,536","232,448","233,472","1,024","2,048","132","32","1,980,000,000","100"
)csv";
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  CHECK(imp.warnings.empty());
  REQUIRE(imp.kernels.size() == 2);
  const auto& in = imp.kernels[0].input;
  CHECK(in.device == 1);
  REQUIRE(in.device_limits.has_value());
  const auto& d = *in.device_limits;
  CHECK(d.cc_major == 9);
  CHECK(d.cc_minor == 0);
  CHECK(d.chip == "GH100");
  CHECK(d.sm_count == 132);
  CHECK(d.warp_size == 32);
  CHECK(d.max_threads_per_sm == 2048);
  CHECK(d.max_warps_per_sm == 64);
  CHECK(d.max_blocks_per_sm == 32);
  CHECK(d.max_threads_per_block == 1024);
  CHECK(d.registers_per_sm == 65536);
  CHECK(d.shared_bytes_per_sm == 233472);
  CHECK(d.shared_bytes_per_block_optin == 232448);
  CHECK(d.reserved_shared_bytes_per_block == 1024);
  CHECK(d.sm_clock_hz == Approx(1.98e9));
  // The attributes stay available as metrics too.
  CHECK(in.metrics.get("device__attribute_multiprocessor_count") == Approx(132));
  // One GpuInfo per device, ordered by device index.
  REQUIRE(imp.gpus.size() == 2);
  CHECK(imp.gpus[0].device == 0);
  CHECK(imp.gpus[1].device == 1);
  CHECK(imp.gpus[1].name == "NVIDIA H200");
  CHECK(imp.gpus[1].limits.registers_per_sm == 65536);
}

TEST_CASE("ncu csv: without device attributes the CC column still names the chip", "[ncu]") {
  // Synthetic.
  constexpr std::string_view text =
      R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"
"","","","","","","","","","","","nsecond"
"0","1","p","h","k()","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","100"
"1","1","p","h","k()","1","7","(1, 1, 1)","(1, 1, 1)","0","8.6","100"
)csv";
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  REQUIRE(imp.kernels.size() == 2);
  REQUIRE(imp.kernels[0].input.device_limits.has_value());
  CHECK(imp.kernels[0].input.device_limits->chip == "GH100");
  CHECK(imp.kernels[0].input.device_limits->cc_major == 9);
  REQUIRE(imp.kernels[1].input.device_limits.has_value());
  CHECK(imp.kernels[1].input.device_limits->chip.empty());
  CHECK(imp.kernels[1].input.device_limits->cc_major == 8);
  CHECK(imp.kernels[1].input.device_limits->cc_minor == 6);
}

TEST_CASE("ncu csv: launch configuration from launch__* when the identity cells are missing", "[ncu]") {
  // Synthetic: a tool that exported only ID, Kernel Name and metrics; a cluster launch.
  constexpr std::string_view text =
      R"csv("ID","Kernel Name","launch__grid_dim_x","launch__grid_dim_y","launch__grid_dim_z","launch__block_dim_x","launch__block_dim_y","launch__block_dim_z","launch__cluster_dim_x","launch__cluster_dim_y","launch__cluster_dim_z","launch__registers_per_thread"
"","","","","","","","","","","","register/thread"
"0","k()","132","2","1","128","1","1","2","1","1","64"
"1","k()","","","","","","","0","0","0","64"
)csv";
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  REQUIRE(imp.kernels.size() == 2);
  const auto& l = imp.kernels[0].input.launch;
  REQUIRE(l.has_value());
  CHECK(l->grid.x == 132);
  CHECK(l->grid.y == 2);
  CHECK(l->block.x == 128);
  CHECK(l->cluster.x == 2);
  CHECK(l->cluster.count() == 2);
  CHECK(l->registers_per_thread == 64);
  CHECK_FALSE(imp.kernels[1].input.launch.has_value());  // nothing says how it was launched
  CHECK_FALSE(imp.kernels[0].input.device_limits.has_value());
}

TEST_CASE("ncu csv: a mangled Kernel Name is demangled", "[ncu]") {
  // Synthetic: `--print-kernel-base mangled`, no units row.
  constexpr std::string_view text =
      R"csv("ID","Kernel Name","gpu__time_duration.sum"
"5","_Z9zoo_tiledIfLi32EEvPKT_PS0_i","100"
)csv";
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  REQUIRE(imp.kernels.size() == 1);
  const auto& in = imp.kernels[0].input;
  CHECK(in.mangled_name == "_Z9zoo_tiledIfLi32EEvPKT_PS0_i");
  CHECK(in.demangled_name == "void zoo_tiled<float, 32>(float const*, float*, int)");
  CHECK(in.function_name == "zoo_tiled<float, 32>");
  CHECK(in.launch_index == 5);
  CHECK(in.metrics.find("gpu__time_duration.sum")->unit.empty());
}

TEST_CASE("ncu csv: unparsable cells and short rows are warned about once per row", "[ncu]") {
  // Synthetic: row 2 has two bad numbers, row 3 was cut short.
  constexpr std::string_view text =
      R"csv("ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed"
"","","byte","nsecond","%"
"0","a()","1.2.3","12 ns","50"
"1","b()","100"
"2","c()","100","200","ok"
)csv";
  const auto r = parse_ncu_csv(text);
  const auto& imp = ok(r);
  REQUIRE(imp.kernels.size() == 3);
  REQUIRE(imp.warnings.size() == 3);
  CHECK(contains(imp.warnings[0], "line 3"));
  CHECK(contains(imp.warnings[0], "2 value(s)"));
  CHECK(contains(imp.warnings[0], "dram__bytes_read.sum"));
  CHECK(contains(imp.warnings[1], "line 4"));
  CHECK(contains(imp.warnings[1], "3 of the header's 5 columns"));
  CHECK(contains(imp.warnings[2], "line 5"));  // text in a column with a unit
  CHECK(imp.kernels[0].input.metrics.get("sm__throughput.avg.pct_of_peak_sustained_elapsed") == Approx(50));
  CHECK_FALSE(imp.kernels[0].input.metrics.has("dram__bytes_read.sum"));
  CHECK(imp.kernels[1].input.metrics.get("dram__bytes_read.sum") == Approx(100));
  CHECK(imp.kernels[1].input.metrics.size() == 1);
  CHECK(imp.kernels[2].input.metrics.size() == 2);
}

TEST_CASE("ncu csv: a details-page export is refused with the fix", "[ncu]") {
  // Synthetic: `ncu --csv --page details`.
  constexpr std::string_view text =
      R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","zoo","h","k(int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","nsecond","12,345"
)csv";
  const auto msg = error_of(parse_ncu_csv(text));
  CHECK(contains(msg, "--page details"));
  CHECK(contains(msg, "--page raw"));
}

TEST_CASE("ncu csv: errors for inputs that are not raw-page exports", "[ncu]") {
  CHECK(contains(error_of(parse_ncu_csv("")), "empty"));
  CHECK(contains(error_of(parse_ncu_csv(" \r\n\n")), "empty"));
  CHECK(contains(error_of(parse_ncu_csv("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n")),
                 "no header"));
  // Synthetic: the header lacks "Kernel Name".
  CHECK(contains(error_of(parse_ncu_csv("\"ID\",\"Process ID\",\"gpu__time_duration.sum\"\n\"0\",\"1\",\"5\"\n")),
                 "Kernel Name"));
  // Synthetic: identity columns only.
  CHECK(contains(error_of(parse_ncu_csv("\"ID\",\"Kernel Name\",\"Device\"\n\"0\",\"k()\",\"0\"\n")),
                 "no metric columns"));
  // Synthetic: header and units, no launches.
  const auto msg = error_of(parse_ncu_csv("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n"));
  CHECK(contains(msg, "the CSV has a header but no profiled kernels"));
}

TEST_CASE("timings: program, kernel, median and sample count per line", "[ncu][timings]") {
  std::vector<std::string> warnings;
  const auto t = parse_timings(
      "# zoo timings (synthetic)\n"
      "program,kernel,median_ns,samples\n"
      "zoo,zoo_vector_add,12000.5,20\r\n"
      "\n"
      "zoo,zoo_tiled<float, 32>,800,10\n"
      "zoo,*,1e3,3\n"
      "zoo,broken,abc,3\n"
      "zoo,too_few\n"
      "zoo,neg,-1,3\n"
      ",k,1,1\n",
      warnings);
  REQUIRE(t.size() == 3);
  CHECK(t[0].program == "zoo");
  CHECK(t[0].kernel == "zoo_vector_add");
  CHECK(t[0].median_ns == Approx(12000.5));
  CHECK(t[0].samples == 20);
  CHECK(t[1].kernel == "zoo_tiled<float, 32>");
  CHECK(t[1].samples == 10);
  CHECK(t[2].kernel == "*");
  CHECK(t[2].median_ns == Approx(1000));
  REQUIRE(warnings.size() == 4);
  CHECK(contains(warnings[0], "timings line 7"));
  CHECK(contains(warnings[1], "timings line 8"));
  CHECK(contains(warnings[2], "timings line 9"));
  CHECK(contains(warnings[3], "timings line 10"));

  warnings.clear();
  CHECK(parse_timings("", warnings).empty());
  CHECK(warnings.empty());
}

}  // namespace test_ncu_csv
