#include "roofline.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

constexpr double kH200Sms = 132;
constexpr double kH200ClockHz = 1.98e9;
constexpr double kH200DramBytesPerSecond = 4.8e12;

constexpr std::string_view kFp32Ops = "sm__sass_thread_inst_executed_ops_fadd_fmul_ffma_pred_on.sum";
constexpr std::string_view kFp64Ops = "sm__sass_thread_inst_executed_ops_dadd_dmul_dfma_pred_on.sum";
constexpr std::string_view kDramBytes = "dram__bytes.sum";
constexpr std::string_view kDramRead = "dram__bytes_read.sum";
constexpr std::string_view kDramWrite = "dram__bytes_write.sum";
constexpr std::string_view kDramRate = "dram__bytes.sum.per_second";
constexpr std::string_view kTensorInst = "sm__inst_executed_pipe_tensor.sum";

std::optional<double> metric(const ReadResult& file, const v1::KernelProfile& k, std::string_view name) {
  for (const v1::Metric& m : k.metrics()) {
    if (lookup(file, m.name_iid()) == name && std::isfinite(m.value())) return m.value();
  }
  return std::nullopt;
}

const v1::Gpu* gpu_of(const ReadResult& file, uint32_t device) {
  const v1::Gpu* first = nullptr;
  for (const v1::Record& r : file.file.records()) {
    if (!r.has_session()) continue;
    for (const v1::Gpu& g : r.session().gpus()) {
      if (g.device() == device) return &g;
      if (first == nullptr) first = &g;
    }
    break;  // the first session header describes the run
  }
  return first;
}

}  // namespace

int fp32_lanes_per_sm(uint32_t cc_major, uint32_t cc_minor) {
  switch (cc_major) {
    case 7: return 64;                          // Volta, Turing
    case 8: return cc_minor == 0 ? 64 : 128;    // A100; GA10x and Ada
    case 9: case 10: case 12: return 128;       // Hopper, Blackwell
    default: return 0;
  }
}

int fp64_lanes_per_sm(uint32_t cc_major, uint32_t cc_minor) {
  switch (cc_major) {
    case 7: case 8: return cc_minor == 0 ? 32 : 2;  // V100 and A100 at full rate, the others 1/32
    case 9: case 10: return 64;                     // H100/H200, B200
    case 12: return 2;
    default: return 0;
  }
}

RooflinePeaks h200_default_peaks() {
  RooflinePeaks p;
  p.fp32_flops_per_s = kH200Sms * kH200ClockHz * 128 * 2;
  p.fp64_flops_per_s = kH200Sms * kH200ClockHz * 64 * 2;
  p.dram_bytes_per_s = kH200DramBytesPerSecond;
  p.gpu = "H200 defaults";
  return p;
}

RooflinePeaks roofline_peaks(const v1::Gpu* gpu) {
  RooflinePeaks p = h200_default_peaks();
  if (gpu == nullptr) return p;
  const std::string& name = gpu->name().empty() ? gpu->chip() : gpu->name();
  if (!name.empty()) p.gpu = name;
  const int fp32 = fp32_lanes_per_sm(gpu->cc_major(), gpu->cc_minor());
  const int fp64 = fp64_lanes_per_sm(gpu->cc_major(), gpu->cc_minor());
  if (gpu->sm_count() > 0 && gpu->sm_clock_hz() > 0 && fp32 > 0 && fp64 > 0) {
    const double per_lane = double(gpu->sm_count()) * gpu->sm_clock_hz() * 2;  // an FMA is 2 FLOP
    p.fp32_flops_per_s = per_lane * fp32;
    p.fp64_flops_per_s = per_lane * fp64;
    p.compute_from_file = true;
  }
  if (gpu->dram_peak_bytes_per_second() > 0 && std::isfinite(gpu->dram_peak_bytes_per_second())) {
    p.dram_bytes_per_s = gpu->dram_peak_bytes_per_second();
    p.bandwidth_from_file = true;
  }
  return p;
}

double attainable(double ceiling_flops_per_s, double dram_bytes_per_s, double intensity) {
  return std::min(ceiling_flops_per_s, dram_bytes_per_s * intensity);
}

KernelRoofline kernel_roofline(const ReadResult& file, const v1::KernelProfile& k) {
  KernelRoofline r;
  r.peaks = roofline_peaks(gpu_of(file, k.device()));
  r.graph_scope = k.has_graph_scope() && !k.graph_scope().has_node_sampling();  // PM samples are its own
  r.seconds = k.duration_ns() > 0 ? k.duration_ns() * 1e-9 : 0;
  if (auto t = metric(file, k, kTensorInst); t && *t > 0) r.tensor_work = true;

  if (auto b = metric(file, k, kDramBytes)) {
    r.dram_bytes = *b;
    r.bytes_from = std::string(kDramBytes);
  } else if (auto rd = metric(file, k, kDramRead), wr = metric(file, k, kDramWrite); rd && wr) {
    r.dram_bytes = *rd + *wr;
    r.bytes_from = std::string(kDramRead) + " + " + std::string(kDramWrite);
  } else if (auto rate = metric(file, k, kDramRate); rate && r.seconds > 0) {
    r.dram_bytes = *rate * r.seconds;
    r.bytes_from = std::string(kDramRate) + " x duration";
  }

  const std::optional<double> fp32 = metric(file, k, kFp32Ops);
  const std::optional<double> fp64 = metric(file, k, kFp64Ops);
  if (!fp32 && !fp64) {
    r.missing = "no FLOP counter in the file (" + std::string(kFp32Ops) + ")";
    return r;
  }
  if (!(r.seconds > 0)) {
    r.missing = "no profiled duration";
    return r;
  }
  if (r.bytes_from.empty()) {
    r.missing = "no DRAM byte counter in the file (" + std::string(kDramBytes) + " or " + std::string(kDramRate) + ")";
    return r;
  }
  if (!(r.dram_bytes > 0)) {
    r.missing = "no DRAM traffic was counted: the arithmetic intensity is unbounded";
    return r;
  }
  auto add = [&](const char* precision, std::optional<double> ops, double ceiling) {
    if (!ops || !(*ops > 0)) return;
    RooflinePoint& p = r.points.emplace_back();
    p.precision = precision;
    p.flop = 2 * *ops;
    p.bytes = r.dram_bytes;
    p.seconds = r.seconds;
    p.ceiling_flops_per_s = ceiling;
  };
  add("FP32", fp32, r.peaks.fp32_flops_per_s);
  add("FP64", fp64, r.peaks.fp64_flops_per_s);
  if (r.points.empty()) r.missing = "no FP32 or FP64 add, multiply or FMA was executed";
  return r;
}

}  // namespace cutriage::tools
