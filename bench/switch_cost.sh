#!/usr/bin/env bash
# What a metric-group switch costs, and which ways of switching work (bench/switch_cost.cu): each
# mode in its own process, so a mode that crashes is reported and the others still run.
#
#   bash bench/switch_cost.sh [BINARY] [ROUNDS]    on the GPU machine; output on stdout
#
# BINARY defaults to a fresh nvcc build in $TMPDIR (no CMake tree needed).
set -u -o pipefail
bin="${1:-}"
rounds="${2:-3}"
if [ -z "$bin" ]; then
  bin="${TMPDIR:-/tmp}/bench_switch_cost"
  cupti=/usr/local/cuda/extras/CUPTI
  nvcc -std=c++17 -O2 -arch=sm_90 -I"$cupti/include" "$(dirname "$0")/switch_cost.cu" -o "$bin" \
    -L"$cupti/lib64" -L/usr/local/cuda/lib64 -lcupti -lcuda || exit 1
fi
for mode in ${MODES:-fresh inplace thread warm-empty warm-kernel idle}; do
  echo "== $mode"
  timeout 120 "$bin" "$mode" "$rounds"
  echo "== $mode: exit $?"
done
