#!/usr/bin/env bash
# The always-on simulation's table (no GPU): bench/always_on_sim.cpp on the fake platform, the
# issue's synthetic workload (five zoo kernels at 60/20/10/5/5% of the GPU time) for 15 simulated
# minutes at the default budget, with BENCHMARKS.md's switch costs.
#   bash bench/always_on_sim.sh [BUILD_DIR] [BUDGET] [SECONDS] [nopm] [stages] [steps=N] [warmup] [switch_ms=N] [same_ms=N] [pm_start_ms=N] [pm_host_ms=N] [first_ms=N]
# SIM_VERBOSE=1 lists every profiled launch; SIM_LOG=FILE appends the agent's log at level debug.
set -euo pipefail
build=${1:-build}
cmake --build "$build" --target cutriage_bench_always_on_sim -j2 >/dev/null
"$build/tests/cutriage_bench_always_on_sim" "${2:-0.004}" "${3:-900}" "${@:4}"
