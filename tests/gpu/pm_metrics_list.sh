#!/usr/bin/env bash
# Offline (no GPU, no driver): which of the rules' counters CUPTI's PM sampling can collect on a
# chip, and how many fit one pass. Writes tests/data/graphs/pm-metrics-gh100.txt's content to stdout.
#
#   bash tests/gpu/pm_metrics_list.sh BUILD_DIR [CHIP] > tests/data/graphs/pm-metrics-gh100.txt
#
# BUILD_DIR: a CMake build of this tree (its triage/ and base/ libraries give the rules' counters,
# tests/gpu/rule_counters.cpp). CUDA 13.0 at ${CUDA_HOME:-/usr/local/cuda-13.0}.
set -euo pipefail
build=${1:?usage: pm_metrics_list.sh BUILD_DIR [CHIP]}
chip=${2:-GH100}
cuda=${CUDA_HOME:-/usr/local/cuda-13.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -Itriage/include -Ibase/include tests/gpu/rule_counters.cpp \
  "$build/triage/libcutriage_triage.a" "$build/base/libcutriage_base.a" -o "$work/rule_counters"
g++ -std=c++17 -O1 -I"$cuda/include" tests/gpu/pm_metrics_list.cpp -L"$cuda/lib64" -lcupti -lnvperf_host \
  -Wl,-rpath,"$cuda/lib64" -o "$work/pm_metrics_list"
"$work/rule_counters" >"$work/rules.txt"
echo "# bash tests/gpu/pm_metrics_list.sh BUILD_DIR $chip   (commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d))"
echo "# tests/gpu/pm_metrics_list.cpp: CUPTI Profiler Host API, offline; rule counters from tests/gpu/rule_counters.cpp"
echo
"$work/pm_metrics_list" "$chip" "$work/rules.txt"
