#!/usr/bin/env bash
# Time to complete always-on diagnoses (issue 6), on a two-GPU machine (device kind
# nvidia-h200-x2), from the repository root, in one call of the device tool:
#
#   bash tests/gpu/run_time_to_diagnosis.sh
#
# Builds, installs the package and the example service, then runs two lanes at once, one per GPU
# (each GPU's counters serve one process at a time, so the lanes do not meet):
#   GPU 0  the service, always-on at DEFAULT_BUDGET (empty: the agent's default), for
#          DEFAULT_SECONDS
#   GPU 1  the GPU tests (ctest -L gpu), then the service for FAST_SECONDS (0: not run) and
#          bench/torch_loop.py for at most TORCH_SECONDS, always-on at FAST_BUDGET (the time to
#          a diagnosis scales with the budget)
# Every agent file is kept without its timeline (tests/data/always_on/strip_timeline.py) with its
# `cutriage report`; everything is tarred under $OUT (the device tool brings back few files).
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
work="$out/ttd"
mkdir -p "$work"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
default_seconds="${DEFAULT_SECONDS:-420}"
default_budget="${DEFAULT_BUDGET:-}"
torch_seconds="${TORCH_SECONDS:-190}"
fast_budget="${FAST_BUDGET:-2%}"
fast_seconds="${FAST_SECONDS:-150}"
torch_steps="${TORCH_STEPS:-60000}"
build=build-gpu
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  git log -1 --format="commit %H" 2>/dev/null
  echo "DEFAULT_BUDGET=$default_budget DEFAULT_SECONDS=$default_seconds TORCH_SECONDS=$torch_seconds FAST_BUDGET=$fast_budget FAST_SECONDS=$fast_seconds TORCH_STEPS=$torch_steps"
} >"$work/env.txt" 2>&1
t0=$(date +%s)
if ! bash tests/gpu/build_with_service.sh "$build" "$work" -DCUTRIAGE_WERROR=ON; then
  tar -C "$out" -czf "$out/ttd.tgz" ttd; exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s"
svc="$PWD/build-service/cutriage_service"
lib="$PWD/$build/agent/libcutriage.so"
cli="$PWD/$build/tools/cutriage"
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_LOG_LEVEL=info"

keep() {  # keep NAME: the agent file without its timeline, and its report
  python3 tests/data/always_on/strip_timeline.py "$work/$1.pb" "$work/$1.stripped.pb" &&
    "$cli" report "$work/$1.pb" >"$work/$1.report.txt" 2>&1 && rm -f "$work/$1.pb"
}

lane0() {
  CUDA_VISIBLE_DEVICES=0 SERVICE_CUTRIAGE="$ao${default_budget:+;CUTRIAGE_BUDGET=$default_budget};CUTRIAGE_OUTPUT=$work/svc-default.pb" \
    "$svc" "$default_seconds" >"$work/svc-default.out" 2>"$work/svc-default.log"
  keep svc-default
}
lane1() {
  CUDA_VISIBLE_DEVICES=1 timeout 240 ctest --test-dir "$build" -L gpu -j4 --output-on-failure >"$work/ctest-gpu.log" 2>&1
  if [ "$fast_seconds" != 0 ]; then
    CUDA_VISIBLE_DEVICES=1 SERVICE_CUTRIAGE="$ao;CUTRIAGE_BUDGET=$fast_budget;CUTRIAGE_OUTPUT=$work/svc-fast.pb" \
      "$svc" "$fast_seconds" >"$work/svc-fast.out" 2>"$work/svc-fast.log"
    keep svc-fast
  fi
  CUDA_VISIBLE_DEVICES=1 CUDA_INJECTION64_PATH="$lib" CUTRIAGE_MODE=always-on CUTRIAGE_SUMMARY=0 \
    CUTRIAGE_LOG_LEVEL=info CUTRIAGE_BUDGET="$fast_budget" CUTRIAGE_OUTPUT="$work/torch-fast.pb" \
    timeout "$torch_seconds" python3 bench/torch_loop.py "$torch_steps" >"$work/torch-fast.out" 2>"$work/torch-fast.log"
  echo "torch exit $?" >>"$work/torch-fast.out"
  keep torch-fast
}
lane0 &
p0=$!
lane1
wait "$p0"
echo "ctest: $(grep -E 'tests passed|tests failed' "$work/ctest-gpu.log")"
grep -E "\*\*\*Failed|Failed  " "$work/ctest-gpu.log" | head
for f in "$work"/*.report.txt; do
  echo "== $(basename "$f")"
  grep -E "^info:|^overhead|^ +\(|^launches" "$f" | head -20
done
tar -C "$out" -czf "$out/ttd.tgz" ttd
