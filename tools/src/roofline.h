// The roofline of a profiled kernel: the device's compute ceilings and DRAM bandwidth slope, and
// the kernel's point(s) from its counters, for the HTML report's chart (html_report.cpp).
//
// Work: the FP32 and FP64 add/mul/fma thread instructions the kernel executed
// (sm__sass_thread_inst_executed_ops_{fadd_fmul_ffma,dadd_dmul_dfma}_pred_on.sum; an FFMA counts
// once there, as the zoo's fma_chain capture shows), two FLOP each. That is exact for FMA and an
// upper bound for FADD/FMUL; all three issue at the same rate on their pipe, so the point's height
// under its ceiling is the share of the pipe's peak it used either way. Tensor-core work has no
// FLOP counter in the file and is not in the point (KernelRoofline::tensor_work says when it ran).
// Traffic: DRAM bytes, dram__bytes.sum, else read + write, else dram__bytes.sum.per_second times
// the profiled duration. Time: the profiled duration (gpu__time_duration.sum).
//
// Peaks: from the file's GPU (Gpu: SMs x SM clock x FP lanes per SM by compute capability x 2 for
// the FMA; dram_peak_bytes_per_second), each figure the file lacks from the H200 SXM defaults
// below (docs/html-report.md).
#pragma once

#include <string>
#include <vector>

#include "file_reader.h"

namespace cutriage::tools {

struct RooflinePeaks {
  double fp32_flops_per_s = 0;
  double fp64_flops_per_s = 0;
  double dram_bytes_per_s = 0;
  bool compute_from_file = false;    // SM count, SM clock and compute capability were in the file
  bool bandwidth_from_file = false;  // Gpu.dram_peak_bytes_per_second was
  std::string gpu;                   // "NVIDIA H200", or "H200 defaults"
};

// NVIDIA H200 SXM: 132 SMs at 1.98 GHz, 128 FP32 and 64 FP64 lanes per SM (66.9 and 33.5
// TFLOP/s with FMA), 4.8 TB/s of HBM3e.
RooflinePeaks h200_default_peaks();

// The peaks of `gpu` (null: the defaults); a figure the file does not give comes from the defaults.
RooflinePeaks roofline_peaks(const cutriage::v1::Gpu* gpu);

// FP32 and FP64 lanes per SM of a compute capability; 0 when the table does not know it.
int fp32_lanes_per_sm(uint32_t cc_major, uint32_t cc_minor);
int fp64_lanes_per_sm(uint32_t cc_major, uint32_t cc_minor);

struct RooflinePoint {
  std::string precision;  // "FP32" or "FP64"
  double flop = 0;
  double bytes = 0;       // DRAM bytes of the whole kernel
  double seconds = 0;
  double ceiling_flops_per_s = 0;  // that precision's compute ceiling
  [[nodiscard]] double intensity() const { return bytes > 0 ? flop / bytes : 0; }  // FLOP/byte
  [[nodiscard]] double flops_per_s() const { return seconds > 0 ? flop / seconds : 0; }
};

struct KernelRoofline {
  RooflinePeaks peaks;
  std::vector<RooflinePoint> points;  // one per precision with work; FP32 first
  double dram_bytes = 0;
  std::string bytes_from;             // the counter(s) the bytes came from
  double seconds = 0;
  // Why there is no point, when there is none: a counter missing, no floating-point work.
  std::string missing;
  bool tensor_work = false;  // the tensor pipe ran: its FLOPs are not in the points
  bool graph_scope = false;  // the counters are a whole CUDA graph launch's (KernelProfile.graph_scope)
};

KernelRoofline kernel_roofline(const ReadResult& file, const cutriage::v1::KernelProfile& k);

// What the roofline allows at `intensity` FLOP/byte: min(ceiling, bandwidth x intensity).
double attainable(double ceiling_flops_per_s, double dram_bytes_per_s, double intensity);

}  // namespace cutriage::tools
