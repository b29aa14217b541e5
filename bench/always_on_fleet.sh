#!/usr/bin/env bash
# The fleet simulation's table (no GPU): N replicas of the synthetic service
# (CUTRIAGE_REPLICA=K/N) for SECONDS simulated seconds each at the default budget, merged by
# `cutriage merge`, then resumed from the merged file (bench/always_on_fleet.cpp).
#   bash bench/always_on_fleet.sh [BUILD_DIR] [SECONDS] [REPLICA_COUNTS...] [stages] [switch_ms=N] [same_ms=N]
set -euo pipefail
build=${1:-build}
shift || true
cmake --build "$build" --target cutriage_bench_always_on_fleet -j2 >/dev/null
"$build/tests/cutriage_bench_always_on_fleet" "$@"
