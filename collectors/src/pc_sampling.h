// The CUPTI PC-sampling collector (cupti_pcsampling.h), internal to the collectors: a PcSampler
// for one context, and the two offline helpers the Platform exposes (cubin CRC, SASS-to-source).
// cupti_platform.cpp wires them into Platform; nothing here is visible to the agent but through
// the interfaces of platform.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cutriage/collectors/platform.h"
#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// A PcSampler on the CUcontext `cu_context` (opaque here), kernel-serialized (or continuous, see
// PcSamplingOptions::continuous) with start/stop
// control: begin() enables PC sampling on the context, configures it and starts it; end()
// synchronizes the context, stops, drains the samples and disables PC sampling again, so that
// between two sessions the context is free for the range profiler. Makes no CUPTI call itself
// (enabling early would lock the range profiler out of the context): kInvalidArgument for a null
// context, kUnavailable without a CUDA driver, kNotSupported when the loaded CUPTI is older than
// the CUpti_PCSamplingPCData layout this code was built against (CUDA 12.4 added correlationId).
Result<std::unique_ptr<PcSampler>> make_cupti_pc_sampler(void* cu_context);

// How the last end() of a sampler made by make_cupti_pc_sampler went, for the GPU smoke test and
// diagnostics: the numbers the interface does not carry but the first runs on a GPU must show.
struct PcDrainReport {
  bool synchronized = false;        // the context synchronize before Stop succeeded
  uint32_t get_data_calls = 0;      // cuptiPCSamplingGetData calls, retries included
  uint32_t empty_retries = 0;       // calls repeated because nothing had been handed over yet
  double waited_ms = 0;             // time slept in those retries
  size_t pcs_from_drains = 0;       // PC records GetData returned (before merging)
  size_t pcs_from_disable = 0;      // PC records cuptiPCSamplingDisable left in the config buffer
  uint64_t samples_from_disable = 0;  // the config buffer's totalSamples after Disable
  uint64_t last_range_id = 0;       // rangeId of the last drain that returned data
  size_t function_names_retained = 0;  // process-wide, see retained_function_name_count()
};

// The report of `sampler`'s last end(); nullptr when the sampler was not made by
// make_cupti_pc_sampler or end() has not run yet.
const PcDrainReport* last_drain_report(const PcSampler& sampler);

// Distinct function-name strings CUPTI has handed out in PC-sampling records so far in this
// process. They are kept, never freed (pc_sampling.cpp says why), so this is also the number of
// strings that leak; it grows only with the number of distinct sampled functions when CUPTI
// reuses its strings, which the GPU smoke test checks.
size_t retained_function_name_count();

// cuptiGetCubinCrc: the CRC CUPTI writes into PC-sampling records for this cubin. The image is
// checked with inspect_cubin first (it may come from anywhere): kInvalidArgument for anything that
// is not a well-formed cubin, which CUPTI's own parser never sees. Needs no GPU or driver.
Result<uint64_t> cupti_cubin_crc(const std::vector<uint8_t>& cubin);

// cuptiGetSassToSourceCorrelation: file and line of the instruction at `pc_offset` of `function`
// in `cubin`. kNotSupported when the cubin has no line table (built without -lineinfo or -G) or
// CUPTI has no line for that PC; kInvalidArgument for an empty function name, an image
// inspect_cubin rejects, a function without code in the cubin (function_code) or a PC past its end. The file is "dirName/fileName" (fileName alone when the directory is
// empty or the file name is absolute). Needs no GPU or driver.
Result<SourceLine> cupti_sass_to_source(const std::vector<uint8_t>& cubin, const std::string& function,
                                        uint64_t pc_offset);

}  // namespace cutriage::collectors
