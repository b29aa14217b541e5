#!/usr/bin/env bash
# One range-profiler collection whose passes are "steps" of several kernels' launches (issue 22):
# the range profiler smoke's steps probe (tests/gpu/range_profiler_smoke.cpp, step 7). Prints each
# pass's cost, the ranges per pass and each range against its launch profiled alone. On the GPU
# machine, from the repository root.
#
#   bash bench/steps_probe.sh [BUILD_DIR]     # BUILD_DIR default build-gpu; built if missing
#
# SHAPES=1: also the service-shaped steps (step 8 of the smoke: two streams, a graph launch in the
# step, and the variants without them), whose lines begin "step shapes".
set -u -o pipefail
build="${1:-build-gpu}"
if [ ! -x "$build/tests/range_profiler_smoke" ]; then
  logs=$(mktemp -d)
  bash tests/gpu/build_targets.sh "$build" "$logs" range_profiler_smoke -- -DCUTRIAGE_WERROR=ON || exit 1
fi
flags=(--probe-steps)
[ "${SHAPES:-0}" = 1 ] && flags+=(--probe-step-shapes)
"$build/tests/range_profiler_smoke" "${flags[@]}" | sed -n '/^steps probe/,$p'
