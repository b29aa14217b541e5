#!/usr/bin/env bash
# What a metric plan costs on the CPU (bench/plan_cost.cpp): CUPTI's Profiler Host API needs no GPU,
# so this runs on any machine with CUDA's libcupti, the development machine included.
#   bash bench/plan_cost.sh [BUILD_DIR] [ROUNDS] [CHIP]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
chip=${3:-GH100}
bin=$build/tests/cutriage_bench_plan_cost
if [[ ! -x $bin ]]; then
  echo "plan_cost.sh: $bin not built (configure with the tests and CUDA: cmake --build $build)" >&2
  exit 2
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -n) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
"$bin" "$chip" "$rounds"
