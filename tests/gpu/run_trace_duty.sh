#!/usr/bin/env bash
# One device call on the two-GPU machine (nvidia-h200-x2), about 7 minutes: does the duty-cycled
# kernel trace (CUTRIAGE_TRACE_DUTY) work on the GPU, and what does it save?
#
#   bash tests/gpu/run_trace_duty.sh
#
# Builds (tests/gpu/build_with_service.sh, without the test suite), runs
# tests/gpu/check_trace_duty.sh on GPU 0, then bench/overhead_parts.sh with both programs at once:
# the service on GPU 0 and the PyTorch loop on GPU 1, arms ARMS (default "off callbacks trace
# duty25 default"), SECONDS_PER_ARM (70) service seconds and TORCH_STEPS (35000) steps each, the
# duty arm with a DUTY_PERIOD (20) s window. Everything comes back as $OUT/trace_duty.tgz (the
# check's agent files stripped of their timelines).
set -u -o pipefail
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
out="${OUT:-$PWD/gpu-out}"
work="$out/trace_duty"
mkdir -p "$work"
build=build-gpu
bash tests/gpu/build_with_service.sh "$build" "$work/logs" -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF || exit 1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader >"$work/env.txt" 2>&1
date -u +"date: %Y-%m-%dT%H:%M:%SZ" >>"$work/env.txt"
CUDA_VISIBLE_DEVICES=0 OUT="$work" BUILD="$build" timeout 150 bash tests/gpu/check_trace_duty.sh >"$work/check.txt" 2>&1
echo "check_trace_duty.sh: exit $?"; grep -E "^(ok|FAIL)" "$work/check.txt"
arms="${ARMS:-off callbacks trace duty25 default}"
export DUTY_PERIOD="${DUTY_PERIOD:-20}" SECONDS_PER_ARM="${SECONDS_PER_ARM:-70}" TORCH_STEPS="${TORCH_STEPS:-35000}" BUILD="$build"
CUDA_VISIBLE_DEVICES=0 ARMS="$arms" bash bench/overhead_parts.sh service "$work/service" &
svc=$!
CUDA_VISIBLE_DEVICES=1 ARMS="$arms" bash bench/overhead_parts.sh torch "$work/torch"
wait "$svc"
cat "$work"/service/parts.txt "$work"/torch/parts.txt
rm -f "$work"/service/*.pb "$work"/torch/*.pb
rm -f "$work"/trace_duty/*.json  # the timelines in JSON: tens of MB, the check has read them
# The check's agent files without their timelines, for CI to replay (tests/data/always_on/).
for pb in "$work"/trace_duty/*.pb; do
  [ -f "$pb" ] && python3 tests/data/always_on/strip_timeline.py "$pb" "${pb%.pb}.stripped.pb" >/dev/null && rm -f "$pb"
done
tar -C "$out" -czf "$out/trace_duty.tgz" trace_duty && rm -rf "$work"
