#!/usr/bin/env bash
# The test command (README): configure, build, run every test. Extra CMake arguments come from
# CUTRIAGE_CMAKE_ARGS; the build directory from CUTRIAGE_BUILD_DIR (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CUTRIAGE_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CUTRIAGE_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
