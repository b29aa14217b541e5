#!/usr/bin/env bash
# What one PC-sampled launch costs, phase by phase (begin, the launch call, end), for hardware
# buffers of 256, 64, 16 and 4 MiB: step G of the PC-sampling smoke program
# (tests/gpu/pc_sampling_smoke.cpp), against the same launch unsampled. On the GPU machine.
#
#   bash bench/pc_sampler_cost.sh [BUILD_DIR]     # BUILD_DIR default build-gpu, already built
set -u -o pipefail
build="${1:-build-gpu}"
PCS_COST_SWEEP=1 "$build/tests/pc_sampling_smoke" | sed -n '/^G\./,$p'
