#!/usr/bin/env bash
# The launch gate (CUTRIAGE_LAUNCH_GATE=1) on the PyTorch loop, on the GPU machine: does CUPTI give
# launches fresh correlation ids again once the gate has stayed open after the first repeated one
# (launch_gate.h)? The loop runs plain and under always-on with the gate and a 20 s trace period
# (the gate closes in every pause), outputs compared; the agent's lines about ids, the gate and
# what was profiled go to $OUT/gate-summary.txt.
#
#   [TRACE_PERIOD=S] bash tests/gpu/run_gate_check.sh [STEPS]   from the repository root; carry .carry
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
steps="${1:-20000}"
build=build-gpu
mkdir -p "$out/gate"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
sum="$out/gate-summary.txt"
bash tests/gpu/build_targets.sh "$build" "$out/gate" cutriage_agent cutriage_cli >"$out/gate/build-tail.txt" || {
  echo "build failed" | tee "$sum"; cat "$out/gate/build-tail.txt"; exit 1; }
timeout 200 python3 bench/torch_loop.py "$steps" >"$out/gate/plain.out" 2>"$out/gate/plain.err"
CUTRIAGE_MODE=always-on CUTRIAGE_LAUNCH_GATE=1 CUTRIAGE_TRACE_PERIOD="${TRACE_PERIOD:-20}" CUTRIAGE_LOG_LEVEL=info CUTRIAGE_SUMMARY=0 \
  CUDA_INJECTION64_PATH="$PWD/$build/agent/libcutriage.so" CUTRIAGE_OUTPUT="$out/gate/gate.pb" \
  timeout 200 python3 bench/torch_loop.py "$steps" >"$out/gate/agent.out" 2>"$out/gate/agent.err"
rc=$?
"$build/tools/cutriage" report "$out/gate/gate.pb" >"$out/gate/report.txt" 2>&1
[ "${KEEP_PB:-0}" = 1 ] || rm -f "$out/gate/gate.pb"  # its report stays; KEEP_PB=1 keeps the file
{
  echo "gate check, $(nvidia-smi --query-gpu=name --format=csv,noheader), $(date -u +%FT%TZ), $steps steps"
  cmp -s "$out/gate/plain.out" "$out/gate/agent.out" && echo "stdout: same" || echo "stdout: DIFFERENT"
  echo "exit: $rc; plain $(grep -o 'steps_per_s=[0-9.]*' "$out/gate/plain.err"), agent $(grep -o 'steps_per_s=[0-9.]*' "$out/gate/agent.err")"
  grep -E "correlation|launch callbacks|stay on|launches profiled|verdict routed|diagnosis complete" "$out/gate/agent.err" |
    cut -c1-300 | head -20
  grep -E "launch callbacks off|repeated" "$out/gate/report.txt" | cut -c1-300 | head -6
} >"$sum"
cat "$sum"
