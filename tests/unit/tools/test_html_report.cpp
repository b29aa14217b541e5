// `cutriage report --html` (tools/src/html_report.cpp) on real captures from the H200
// (tests/data/agent, agent-split): each profiled kernel's verdict and evidence on the page in the
// text report's order, the roofline point where the counters put it, nothing fetched from the
// network; and escaping on a SYNTHETIC file whose names are made up to hold < > & and quotes.
// Also the table export counting kernels as the text report does.
#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "capture_support.h"
#include "catch.h"
#include "cutriage/wire/writer.h"
#include "file_reader.h"
#include "html_report.h"
#include "html_svg.h"
#include "nvdisasm_stub.h"
#include "pc_sampling_fixture.h"
#include "report.h"
#include "report_model.h"
#include "report_text.h"
#include "roofline.h"
#include "table_export.h"
#include "trace_fixture.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_html_report {

using namespace cutriage;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(CUTRIAGE_TEST_DATA_DIR);

tools::ReadResult read(const fs::path& p) {
  tools::ReadResult r = tools::read_cutriage_file(p.string());
  INFO(p.string());
  REQUIRE((r.status == tools::ReadStatus::kOk || r.status == tools::ReadStatus::kTruncated));
  return r;
}

// nvdisasm is never looked for: pages do not depend on the machine's CUDA install.
tools::HtmlReportOptions pinned_options() {
  tools::HtmlReportOptions o;
  o.nvdisasm.getenv = [](const char*) -> const char* { return nullptr; };
  o.nvdisasm.fallback_dirs.clear();
  return o;
}

tools::ReportOptions pinned_text_options() {
  tools::ReportOptions o;
  o.nvdisasm.getenv = [](const char*) -> const char* { return nullptr; };
  o.nvdisasm.fallback_dirs.clear();
  return o;
}

// The <article> of kernel N on the page.
std::string article(const std::string& page, size_t n) {
  const std::string open = "<article class=\"kernel\" id=\"k" + std::to_string(n) + "\">";
  const size_t at = page.find(open);
  if (at == std::string::npos) return {};
  const size_t end = page.find("</article>", at);
  return page.substr(at, end - at);
}

std::vector<std::string> all_matches(const std::string& text, const std::regex& re, int group = 1) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[group].str());
  }
  return out;
}

// The metric names of kernel N's evidence in the text report, in its order.
std::vector<std::string> text_evidence(const std::string& report, size_t n) {
  std::vector<std::string> metrics;
  bool in_kernel = false, in_evidence = false;
  for (const std::string& line : testing::lines_of(report)) {
    if (!line.empty() && line[0] == '[') in_kernel = line.rfind("[" + std::to_string(n) + "] ", 0) == 0;
    if (!in_kernel) continue;
    if (line.rfind("    evidence  ", 0) == 0) {
      in_evidence = true;
    } else if (line.rfind("    ", 0) == 0 && line.size() > 4 && line[4] != ' ') {
      in_evidence = false;
    }
    if (!in_evidence) continue;
    std::string rest = line.substr(14);
    if (rest.rfind("threshold ", 0) == 0) continue;
    metrics.push_back(rest.substr(0, rest.find(" = ")));
  }
  return metrics;
}

std::string attr(const std::string& element, const std::string& name) {
  const std::regex re("\\b" + name + "=\"([^\"]*)\"");
  std::smatch m;
  return std::regex_search(element, m, re) ? m[1].str() : std::string();
}

std::vector<double> numbers(const std::string& s) {
  std::vector<double> out;
  std::istringstream in(s);
  double v = 0;
  while (in >> v) out.push_back(v);
  return out;
}

std::optional<double> metric(const tools::ReadResult& file, const v1::KernelProfile& k, std::string_view name) {
  for (const v1::Metric& m : k.metrics()) {
    if (tools::lookup(file, m.name_iid()) == name) return m.value();
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("html: every profiled kernel's verdict and evidence, in the text report's order", "[html]") {
  for (const char* name : {"agent-split/torch_loop.pb", "agent/zoo_strided_load.pb", "agent/zoo_cublas_gemm.pb",
                           "agent/zoo_fp64_heavy.pb", "agent/prog_graphs.pb"}) {
    INFO(name);
    const tools::ReadResult r = read(kData / name);
    const std::string page = tools::render_html_report(r, pinned_options());
    const std::string text = tools::render_report(r, pinned_text_options());
    const tools::model::ReportKernels kernels = tools::model::report_kernels(r);
    REQUIRE(!kernels.profiled.empty());
    CHECK(text.find(std::to_string(kernels.profiled.size()) + " profiled kernel") != std::string::npos);
    // Decision 7 names a unit, never the engine's routing bookkeeping (files from before evidence
    // was marked deciding open the check's evidence with it).
    CHECK(text.find("Decision 7: cutriage__") == std::string::npos);
    CHECK(page.find("Decision 7: cutriage__") == std::string::npos);
    for (size_t i = 0; i < kernels.profiled.size(); ++i) {
      const v1::KernelProfile& k = *kernels.profiled[i];
      const v1::Diagnosis& d = k.diagnosis();
      INFO("kernel [" << i + 1 << "] " << tools::model::kernel_name(r, k));
      const std::string a = article(page, i + 1);
      REQUIRE(!a.empty());
      CHECK(a.find(tools::html::escape(tools::model::kernel_name(r, k))) != std::string::npos);
      // The verdict: the classification as a badge, then the headline.
      std::string cls = tools::model::enum_words(v1::Classification_Name(d.classification()), "CLASSIFICATION_");
      for (char& c : cls) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      CHECK(a.find("<span class=\"badge\">" + cls + "</span>") != std::string::npos);
      const std::string verdict = tools::model::verdict_text(d);
      if (verdict.size() > cls.size() + 3) {
        CHECK(a.find(tools::html::escape(verdict.substr(cls.size() + 3))) != std::string::npos);
      }
      if (!d.next_action().empty()) CHECK(a.find(tools::html::escape(d.next_action())) != std::string::npos);
      // The evidence rows: the same metrics as the text report's, in its order, the deciding one
      // first and marked.
      const std::vector<std::string> rows =
          all_matches(a, std::regex("<tr(?: class=\"deciding\")?><td class=\"metric\">([^<]*)</td>"));
      CHECK(rows == text_evidence(text, i + 1));
      const v1::Check* primary = tools::model::find_primary(d);
      if (primary == nullptr) continue;
      for (const v1::Evidence& e : primary->evidence()) {
        if (!e.deciding()) continue;
        REQUIRE(!rows.empty());
        CHECK(rows.front() == e.metric());
        CHECK(a.find("<tr class=\"deciding\"><td class=\"metric\">" + e.metric() + "</td>") != std::string::npos);
      }
      for (const v1::ThresholdUse& t : primary->thresholds()) {
        CHECK(a.find("threshold " + tools::html::escape(t.name())) != std::string::npos);
      }
    }
  }
}

TEST_CASE("html: the roofline point lies under the roof, at the intensity the counters give", "[html]") {
  size_t points = 0;
  for (const char* name : {"agent/zoo_fma_chain.pb", "agent/zoo_vector_add.pb", "agent/zoo_fp64_heavy.pb",
                           "agent-split/torch_loop.pb", "agent/zoo_transpose.pb"}) {
    INFO(name);
    const tools::ReadResult r = read(kData / name);
    const std::string page = tools::render_html_report(r, pinned_options());
    // The device's peaks, from the session header (an H200 in every capture here).
    const v1::Gpu& gpu = r.file.records(0).session().gpus(0);
    REQUIRE(gpu.sm_count() == 132);
    const double bandwidth = gpu.dram_peak_bytes_per_second();
    const double per_lane = double(gpu.sm_count()) * gpu.sm_clock_hz() * 2;
    const tools::model::ReportKernels kernels = tools::model::report_kernels(r);
    for (size_t i = 0; i < kernels.profiled.size(); ++i) {
      const v1::KernelProfile& k = *kernels.profiled[i];
      INFO("kernel [" << i + 1 << "] " << tools::model::kernel_name(r, k));
      const std::string a = article(page, i + 1);
      std::smatch svg_match;
      REQUIRE(std::regex_search(a, svg_match, std::regex("<svg class=\"roofline\"[^>]*>")));
      const std::string svg = svg_match[0].str();
      const std::vector<double> xd = numbers(attr(svg, "data-x-decades"));
      const std::vector<double> yd = numbers(attr(svg, "data-y-decades"));
      const std::vector<double> plot = numbers(attr(svg, "data-plot"));  // x0 x1 y0(bottom) y1(top)
      REQUIRE(xd.size() == 2);
      REQUIRE(yd.size() == 2);
      REQUIRE(plot.size() == 4);
      auto x_of = [&](double v) { return plot[0] + (std::log10(v) - xd[0]) / (xd[1] - xd[0]) * (plot[1] - plot[0]); };
      auto y_of = [&](double v) { return plot[2] + (std::log10(v) - yd[0]) / (yd[1] - yd[0]) * (plot[3] - plot[2]); };
      // The kernel's work and traffic, from its counters: 2 FLOP per FP32/FP64 add, mul or fma
      // thread instruction; DRAM bytes as the rate times the profiled duration.
      const double seconds = k.duration_ns() * 1e-9;
      double bytes = 0;
      if (auto b = metric(r, k, "dram__bytes.sum")) {
        bytes = *b;
      } else if (auto rate = metric(r, k, "dram__bytes.sum.per_second")) {
        bytes = *rate * seconds;
      }
      const std::vector<std::string> circles = all_matches(a, std::regex("(<circle class=\"roof-point[^>]*>)"));
      for (const auto& [precision, counter, lanes] :
           {std::tuple{"FP32", "sm__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on.sum", 128},
            std::tuple{"FP64", "sm__sass_thread_inst_executed_ops_dadd_dmul_dfma_pred_on.sum", 64}}) {
        const std::optional<double> ops = metric(r, k, counter);
        std::string circle;
        for (const std::string& c : circles) {
          if (attr(c, "data-precision") == precision) circle = c;
        }
        if (!ops || !(*ops > 0) || !(bytes > 0)) {
          CHECK(circle.empty());
          continue;
        }
        INFO(precision);
        REQUIRE(!circle.empty());
        ++points;
        const double intensity = 2 * *ops / bytes;
        const double flops = 2 * *ops / seconds;
        CHECK(std::stod(attr(circle, "data-intensity-exact")) == Approx(intensity).epsilon(1e-6));
        CHECK(std::stod(attr(circle, "cx")) == Approx(x_of(intensity)).margin(0.011));
        CHECK(std::stod(attr(circle, "cy")) == Approx(y_of(flops)).margin(0.011));
        // Under the roof: SVG's y grows downwards, so the point's y is at or below the roof's.
        const double ceiling = per_lane * lanes;
        const double roof = std::min(ceiling, bandwidth * intensity);
        CHECK(flops <= roof * 1.0001);
        CHECK(std::stod(attr(circle, "cy")) >= y_of(roof) - 0.011);
      }
    }
  }
  CHECK(points >= 6);
}

TEST_CASE("html: every string from the file is escaped (SYNTHETIC names with < > & and quotes)", "[html]") {
  // Made-up names: a C++ template with an operator&&, a quote, and markup that must stay text.
  const std::string evil = "evil<int&&, \"q\" 'x'> <script>alert(1)</script> & <img src=x>";
  wire::RecordEncoder enc;
  wire::SessionInfo session = testing::synthetic_trace_session();
  session.command_line = {"./app", "--name=<b>bold</b>&"};
  std::string bytes = enc.session(session);
  bytes += enc.family({1, "_Z4evilv", evil, 0, {256, 1, 1}});
  wire::TraceChunk chunk;
  for (uint64_t i = 0; i < 3; ++i) {
    wire::KernelExecution e;
    e.family_id = 1;
    e.start_ns = testing::SyntheticTrace::kClock + i * 100'000;
    e.end_ns = e.start_ns + 50'000;
    e.stream_id = 7;
    e.context_id = 1;
    e.correlation_id = 100 + i;
    chunk.kernels.push_back(e);
  }
  bytes += enc.trace_chunk(chunk);
  wire::Notice notice;
  notice.severity = wire::Severity::kWarning;
  notice.code = "synthetic";
  notice.message = "a notice with <tags> & \"quotes\"";
  bytes += enc.notice(notice);
  wire::KernelRecord k = testing::synthetic_profiled_gemm(0, "memory_bound: <DRAM> & more");
  k.input.function_name = evil;
  k.family_id = 1;
  k.diagnosis.next_action = "fuse <a> & <b>";
  bytes += enc.kernel(k);
  const tools::ReadResult r = tools::read_cutriage_bytes(bytes);
  REQUIRE(r.status == tools::ReadStatus::kOk);
  const std::string page = tools::render_html_report(r, pinned_options());

  const std::string escaped = "evil&lt;int&amp;&amp;, &quot;q&quot; &#39;x&#39;&gt; &lt;script&gt;alert(1)&lt;/script&gt; "
                              "&amp; &lt;img src=x&gt;";
  CHECK(page.find(escaped) != std::string::npos);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("<img") == std::string::npos);
  CHECK(page.find("<b>bold") == std::string::npos);
  CHECK(page.find("--name=&lt;b&gt;bold&lt;/b&gt;&amp;") != std::string::npos);
  CHECK(page.find("a notice with &lt;tags&gt; &amp; &quot;quotes&quot;") != std::string::npos);
  CHECK(page.find("&lt;DRAM&gt; &amp; more") != std::string::npos);
  CHECK(page.find("fuse &lt;a&gt; &amp; &lt;b&gt;") != std::string::npos);
  // Every '<' on the page opens one of the page's own elements.
  const std::set<std::string> allowed = {
      "!DOCTYPE", "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "p", "a",
      "section", "table", "tr", "th", "td", "span", "ul", "li", "b", "br", "code", "svg", "line", "rect",
      "circle", "polyline", "text", "article", "div", "dl", "dt", "dd", "details", "summary", "footer"};
  for (size_t at = page.find('<'); at != std::string::npos; at = page.find('<', at + 1)) {
    size_t start = at + 1 + (page[at + 1] == '/' ? 1 : 0);
    size_t end = page.find_first_of(" >/", start);
    const std::string tag = page.substr(start, end - start);
    INFO("element at " << at << ": " << page.substr(at, 40));
    CHECK(allowed.count(tag) == 1);
  }
  // Control characters and bytes that are not UTF-8 are shown, never written raw.
  CHECK(tools::html::escape("a\x1b[31m\xff<") == "a\\x1b[31m\\xff&lt;");
}

TEST_CASE("html: nothing on the page reaches for the network", "[html]") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kData / "agent")) {
    if (e.path().extension() == ".pb") files.push_back(e.path());
  }
  files.push_back(kData / "agent-split" / "torch_loop.pb");
  REQUIRE(files.size() > 10);
  for (const fs::path& p : files) {
    INFO(p.string());
    const std::string page = tools::render_html_report(read(p), pinned_options());
    CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(page.size() < 4u << 20);
    for (const char* needle : {"http://", "https://", "src=", "<link", "<script", "@import", "url(", "<iframe",
                               "<object", "<embed", "//fonts", "xlink:href"}) {
      INFO(needle);
      CHECK(page.find(needle) == std::string::npos);
    }
    // Links stay on the page.
    for (const std::string& href : all_matches(page, std::regex("href=\"([^\"]*)\""))) CHECK(href.rfind('#', 0) == 0);
  }
}

TEST_CASE("html: the timeline draws the trace per stream, a file without one says so", "[html]") {
  const tools::ReadResult r = read(kData / "agent-split" / "torch_loop.pb");
  const std::string page = tools::render_html_report(r, pinned_options());
  std::smatch m;
  REQUIRE(std::regex_search(page, m, std::regex("<svg class=\"timeline\"[^>]*>")));
  CHECK(page.find(">stream 7</text>") != std::string::npos);
  CHECK(page.find("<rect class=\"kernel") != std::string::npos);
  CHECK(page.find("<rect class=\"copy") != std::string::npos);
  // Boxes are merged below a pixel: far fewer than the trace's 369 executions and copies.
  const size_t first = page.find("<svg class=\"timeline\"");
  const std::string strip = page.substr(first, page.find("</svg>", first) - first);
  const size_t boxes = all_matches(strip, std::regex("(<rect class=\"(kernel|copy))")).size();
  CHECK(boxes > 20);
  CHECK(boxes < 369);
  // The GPU is busy a quarter of the span: a second strip zooms on the busiest stretch, marked on
  // the first.
  CHECK(strip.find("<rect class=\"zoom-mark\"") != std::string::npos);
  CHECK(page.find("aria-label=\"zoomed timeline of GPU 0 (NVIDIA H200)") != std::string::npos);

  // An ncu import has no trace.
  const tools::ReadResult imported = tools::read_cutriage_bytes([] {
    wire::RecordEncoder enc;
    wire::SessionInfo s = testing::synthetic_trace_session();
    s.source = wire::SessionSource::kNcuCsv;
    return enc.session(s) + enc.kernel(testing::synthetic_profiled_gemm(0, "memory_bound: DRAM"));
  }());
  const std::string no_trace = tools::render_html_report(imported, pinned_options());
  CHECK(no_trace.find("The file has no trace") != std::string::npos);
  CHECK(no_trace.find("<svg class=\"timeline\"") == std::string::npos);
  CHECK(no_trace.find("<svg class=\"roofline\"") != std::string::npos);
  CHECK(no_trace.find("No point for this kernel: no FLOP counter") != std::string::npos);
}

TEST_CASE("table export: one kernel row per kernel as the text report counts them", "[html][tools]") {
  // Adaptive collection writes a record per profiled launch; the last combines the earlier ones
  // (combined_launch_indices). The text report shows one kernel for them, and so must the rows.
  bool merged_somewhere = false;
  for (const char* name : {"agent/torch_loop.pb", "agent-split/torch_loop.pb", "trace/torch_loop.pb",
                           "pcsampling/torch_loop.pb", "agent/zoo_cublas_gemm.pb"}) {
    INFO(name);
    const tools::ReadResult r = read(kData / name);
    const tools::model::ReportKernels kernels = tools::model::report_kernels(r);
    merged_somewhere = merged_somewhere || tools::current_kernels(r).size() > kernels.current.size();
    const std::string text = tools::render_report(r, pinned_text_options());
    size_t not_profiled = 0;
    bool in_list = false;
    for (const std::string& line : testing::lines_of(text)) {
      if (line == "not profiled") in_list = true;
      else if (in_list && line.rfind("  - ", 0) == 0) ++not_profiled;
    }
    std::string error;
    const std::string rows = tools::render_table(r, tools::TableFormat::kJsonLines, tools::TableRows::kKernels, error);
    CHECK(error.empty());
    const size_t n = testing::lines_of(rows).size();
    CHECK(text.find(std::to_string(kernels.profiled.size()) + " profiled kernel") != std::string::npos);
    CHECK(n == kernels.profiled.size() + not_profiled);
    // Each kernel of the text report has its row, by launch index.
    for (const v1::KernelProfile* k : kernels.current) {
      CHECK(rows.find("{\"launch_index\":" + std::to_string(k->launch_index()) + ",") != std::string::npos);
    }
    const std::string csv = tools::render_table(r, tools::TableFormat::kCsv, tools::TableRows::kKernels, error);
    CHECK(testing::lines_of(csv).size() == n + 1);
  }
  CHECK(merged_somewhere);
}

TEST_CASE("html: hot source lines with the SASS of their hottest instruction (SYNTHETIC samples)", "[html]") {
  // pc_sampling_fixture.h's made-up samples, disassembled by the nvdisasm stand-in.
  const std::string dir = testing::temp_dir("html");
  testing::write_fake_nvdisasm(dir + "/nvdisasm", testing::SyntheticPc::kKernelCodeBytes);
  const tools::ReadResult r = tools::read_cutriage_bytes(testing::synthetic_pc_file());
  REQUIRE(r.status == tools::ReadStatus::kOk);
  tools::HtmlReportOptions options;
  options.nvdisasm = testing::nvdisasm_only_in(dir);
  const std::string page = tools::render_html_report(r, options);
  const size_t at = page.find("<table class=\"source\">");
  REQUIRE(at != std::string::npos);
  const std::string table = page.substr(at, page.find("</table>", at) - at);
  // The text report's first line (test_report_pc.cpp): src/stencil.cu:5, 700 stalls, 72.5%,
  // long_scoreboard 85.7%, hottest instruction FADD at 0x0110.
  CHECK(table.find("<td class=\"mono name\">src/stencil.cu:5</td><td class=\"num\">700</td><td class=\"num\">72.5%</td>"
                   "<td>long_scoreboard 85.7%</td><td class=\"sass\">0x0110  FADD R0, R0, R7</td>") != std::string::npos);
  CHECK(table.find("0x01a0  STG.E desc[UR4][R2.64], R9") != std::string::npos);
  // The helper's body the stand-in refuses: its PC without SASS, and the failure said once.
  CHECK(page.find("0x0010 in helper</td>") != std::string::npos);
  CHECK(page.find("note: nvdisasm failed on _Z6helperf") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("html: SVG helpers: numbers, SI labels, log axes, roofline peaks", "[html]") {
  using tools::html::LogAxis;
  CHECK(tools::html::num(12.5) == "12.5");
  CHECK(tools::html::num(3.0) == "3");
  CHECK(tools::html::num(-0.001) == "0");
  CHECK(tools::html::num(1e30).find('e') == std::string::npos);
  CHECK(tools::html::num(std::nan("")) == "0");
  CHECK(tools::html::si(66.9e12) == "66.9 T");
  CHECK(tools::html::si(4.8143e12) == "4.81 T");
  CHECK(tools::html::si(512e9) == "512 G");
  CHECK(tools::html::si(12.34) == "12.3");
  // Whole decades around the data, at least `min_decades` wide; y axes run upwards.
  const LogAxis x = LogAxis::covering(0.03, 1.4e3, 100, 600, 3);
  CHECK(x.lo == -2);
  CHECK(x.hi == 4);
  CHECK(x.at(0.01) == Approx(100));
  CHECK(x.at(1e4) == Approx(600));
  CHECK(x.at(1) == Approx(100 + 500.0 * 2 / 6));
  CHECK(x.value_at(x.at(42.0)) == Approx(42.0));
  const LogAxis y = LogAxis::covering(5e12, 6e12, 300, 20, 3);
  CHECK(y.hi - y.lo == 3);
  CHECK(y.at(std::pow(10.0, y.lo)) == Approx(300));
  CHECK(y.at(std::pow(10.0, y.hi)) == Approx(20));
  // The H200 defaults, and the file's figures over them.
  const tools::RooflinePeaks d = tools::h200_default_peaks();
  CHECK(d.fp32_flops_per_s == Approx(66.9e12).epsilon(0.001));
  CHECK(d.fp64_flops_per_s == Approx(33.45e12).epsilon(0.001));
  CHECK(d.dram_bytes_per_s == Approx(4.8e12));
  CHECK_FALSE(d.compute_from_file);
  v1::Gpu a100;
  a100.set_name("NVIDIA A100-SXM4-80GB");
  a100.set_cc_major(8);
  a100.set_sm_count(108);
  a100.set_sm_clock_hz(1.41e9);
  a100.set_dram_peak_bytes_per_second(2.039e12);
  const tools::RooflinePeaks p = tools::roofline_peaks(&a100);
  CHECK(p.compute_from_file);
  CHECK(p.bandwidth_from_file);
  CHECK(p.fp32_flops_per_s == Approx(19.49e12).epsilon(0.001));  // A100: 19.5 TFLOP/s FP32
  CHECK(p.fp64_flops_per_s == Approx(9.75e12).epsilon(0.001));   // and 9.7 FP64 (without tensor cores)
  CHECK(p.gpu == "NVIDIA A100-SXM4-80GB");
  v1::Gpu unknown;
  unknown.set_cc_major(3);
  unknown.set_sm_count(15);
  unknown.set_sm_clock_hz(1e9);
  const tools::RooflinePeaks u = tools::roofline_peaks(&unknown);
  CHECK_FALSE(u.compute_from_file);
  CHECK(u.fp32_flops_per_s == Approx(d.fp32_flops_per_s));
  CHECK(tools::attainable(66.9e12, 4.8e12, 1.0) == Approx(4.8e12));
  CHECK(tools::attainable(66.9e12, 4.8e12, 100.0) == Approx(66.9e12));
}

}  // namespace test_html_report
