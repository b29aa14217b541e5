#!/usr/bin/env bash
# PM sampling per CUDA-graph node (docs/graphs.md, "PM sampling per node (probe)"): builds
# tests/gpu/pm_probe.cu with nvcc (standalone: no CMake, nothing to carry) and runs every way, each
# in its own child process, into $OUT/pm-probe.txt (the build log and the attribution selftest
# beside it). About a minute.
#
#   bash tests/gpu/run_pm_probe.sh                          # on the device
#   PM_WAYS="trace_5us reference" bash tests/gpu/run_pm_probe.sh
#   PM_LAUNCHES=20 PM_METRICS=name,name bash tests/gpu/run_pm_probe.sh
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
cuda="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$cuda/bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin="$work/pm_probe"
t0=$(date +%s)
flags=(-std=c++17 -O2 -arch=sm_90 -Xcompiler -Wall -Xcompiler -Wno-missing-field-initializers)
libs=(-L"$cuda/lib64" -Xlinker -rpath -Xlinker "$cuda/lib64")
if [ -d "$cuda/extras/CUPTI/include" ]; then flags+=(-I"$cuda/extras/CUPTI/include"); fi
if [ -d "$cuda/extras/CUPTI/lib64" ]; then
  libs+=(-L"$cuda/extras/CUPTI/lib64" -Xlinker -rpath -Xlinker "$cuda/extras/CUPTI/lib64")
fi
nvcc "${flags[@]}" tests/gpu/pm_probe.cu -o "$bin" "${libs[@]}" -lcupti -lnvperf_host >"$out/pm-build.log" 2>&1
rc=$?
{
  echo "# bash tests/gpu/run_pm_probe.sh, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
  echo "# build: exit $rc, $(($(date +%s) - t0)) s; ways: ${PM_WAYS:-all}; PM_LAUNCHES=${PM_LAUNCHES:-10} PM_METRICS=${PM_METRICS:-default}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>&1
} >"$out/pm-probe.txt"
if [ $rc -ne 0 ]; then
  tail -40 "$out/pm-build.log" | tee -a "$out/pm-probe.txt"
  exit 1
fi
"$bin" --selftest >"$out/pm-selftest.txt" 2>&1
echo "# attribution selftest (made-up samples, pm-selftest.txt): exit $?" >>"$out/pm-probe.txt"
# shellcheck disable=SC2086  # PM_WAYS is a list of words
timeout -k 10 170 "$bin" ${PM_WAYS:-} >>"$out/pm-probe.txt" 2>&1
rc=$?
echo "# probe: exit $rc, $(($(date +%s) - t0)) s in all" | tee -a "$out/pm-probe.txt"
grep -E '^(-- |== )' "$out/pm-probe.txt"
exit $rc
