// The CUPTI PM-sampling collector (cupti_pmsampling.h), internal to the collectors: a PmSampler on
// the device of one context, wired into Platform by cupti_platform.cpp. Facts it rests on, seen on
// the H200 (docs/graphs.md, "PM sampling per node (probe)"):
//  * only one-pass configurations are accepted; the Profiler Host API builds them offline with
//    CUPTI_PROFILER_TYPE_PM_SAMPLING for the chip;
//  * the samples' timestamps share the activity records' clock (lag 0), so a sample is placed
//    against traced kernel executions as it comes;
//  * the counter-data image is large per sample (1.24 GB for 10,600 samples of 20 metrics): it is
//    sized to PmSamplingOptions::max_samples, which this file caps (kMaxPmSamples);
//  * the range profiler enabled while PM sampling runs crashed the probe: the caller keeps them
//    apart on the context (the agent disables its range profiler before begin());
//  * cuptiPmSamplingEnable takes a device index, and the calls after it the sampling object: none
//    names a context. Whether they need one current on the calling thread is not documented; a
//    time window (PmSamplingOptions::synchronize false, begun on the agent's flush thread) makes
//    the sampler's context current around begin() and end() all the same, which costs a push and
//    a pop and changes nothing for the application's threads (unverified on the GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cutriage/collectors/platform.h"
#include "cutriage/collectors/status.h"

namespace cutriage::collectors {

// The most samples one session's counter-data image is sized for, whatever the options ask
// (~117 KB per sample at 20 metrics on the H200: about 240 MB at this cap).
inline constexpr uint32_t kMaxPmSamples = 2048;

// A PmSampler on `device` (the CUDA ordinal, as cuptiPmSamplingEnable takes it) for `chip`
// ("GH100"), synchronizing `cu_context` (opaque CUcontext) before it stops. Makes no CUPTI call:
// begin() enables, configures and starts; end() synchronizes, stops, decodes, evaluates each
// completed sample and disables. kInvalidArgument for a null context or an empty chip.
Result<std::unique_ptr<PmSampler>> make_cupti_pm_sampler(void* cu_context, uint32_t device, const std::string& chip);

// From the other collectors (not in a public header: CUDA types stay in collectors/src).
Status ensure_profiler_initialized();             // range_profiler.cpp
Status synchronize_cu_context(void* cu_context);  // pc_sampling.cpp
// Makes the context current on the calling thread (and back): for a PM window begun and ended on
// the agent's flush thread, which has none current (pc_sampling.cpp).
Status push_cu_context(void* cu_context);
void pop_cu_context();

}  // namespace cutriage::collectors
