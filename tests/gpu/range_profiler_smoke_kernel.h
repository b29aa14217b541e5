#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

// Launches y[i] += x[i] for i < n on the default stream; returns the launch error.
cudaError_t launch_smoke_accumulate(const float* x, float* y, size_t n);

// Launches y[i] = 2 * x[i] for i < n on the default stream (another function than the
// accumulate's, for the steps probe); returns the launch error.
cudaError_t launch_smoke_scale(const float* x, float* y, size_t n);

// The same two kernels on `stream`, and y[i] *= 1.0001 for i < n (a graph's nodes), for the steps
// probe's service-shaped steps; each returns the launch error.
cudaError_t launch_smoke_accumulate_on(const float* x, float* y, size_t n, cudaStream_t stream);
cudaError_t launch_smoke_scale_on(const float* x, float* y, size_t n, cudaStream_t stream);
cudaError_t launch_smoke_nudge_on(float* y, size_t n, cudaStream_t stream);
