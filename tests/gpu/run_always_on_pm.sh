#!/usr/bin/env bash
# Always-on's PM routing window on the H200 (docs/always-on.md, "The PM routing window"): not run
# in CI. bench/torch_loop.py under always-on at the default budget for about 180 s with the log at
# info, then prints when the first PM window ran, which families it routed and when (the log, the
# notices), the file's verdicts through `cutriage report`, and an A/B of the loop's throughput
# (agent off vs always-on, one run of about 60 s each). Under 8 minutes in all.
#
#   bash tests/gpu/run_always_on_pm.sh BUILD_DIR [OUTDIR]
#
# BUILD_DIR holds agent/libcutriage.so and tools/cutriage. TORCH_STEPS (90000, about 180 s) and
# AB_STEPS (30000, about 60 s) set the runs' lengths. What to check in the output:
#   - "PM window on device 0: N samples every I us": the first window, seconds after the start
#     (the goal: the top family routed within 120 s of its first launch);
#   - "verdict routed ... from its own PM samples": one line per family with 5% or more of the GPU
#     time (the goal: all within 300 s), or "PM window could not start"/"failed" and why;
#   - the report's "its own PM samples" lines and their verdicts against deep mode's (BENCHMARKS.md);
#   - the A/B: the loss with the window within 1%;
#   - the measured PM costs to replace the assumptions (Start 50 ms, Stop 10 ms, drag 10%): the
#     overhead line's spent time, and the window's log lines.
set -u -o pipefail
build="${1:?usage: run_always_on_pm.sh BUILD_DIR [OUTDIR]}"
out="${2:-${OUT:-/tmp}/always-on-pm}"
steps="${TORCH_STEPS:-90000}"
ab_steps="${AB_STEPS:-30000}"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$out"
lib="$PWD/$build/agent/libcutriage.so"
cli="$PWD/$build/tools/cutriage"
[ -f "$lib" ] && [ -x "$cli" ] || { echo "no $lib or $cli: build first" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"

run_torch() {  # STEPS CONFIG(space-separated NAME=VALUE, empty: agent off) LOG
  local n="$1" cfg="$2" log="$3" t0 t1
  t0=$(date +%s.%N)
  if [ -z "$cfg" ]; then
    timeout 300 python3 bench/torch_loop.py "$n" >"$log" 2>&1
  else
    # shellcheck disable=SC2086  # one NAME=VALUE per word
    timeout 300 env $cfg CUDA_INJECTION64_PATH="$lib" python3 bench/torch_loop.py "$n" >"$log" 2>&1
  fi
  local rc=$?
  t1=$(date +%s.%N)
  echo "  exit $rc after $(python3 -c "print('%.1f' % ($t1 - $t0))") s"
}

echo "== always-on at the default budget, ${steps} steps, the PM window on"
run_torch "$steps" "CUTRIAGE_MODE=always-on CUTRIAGE_SUMMARY=0 CUTRIAGE_LOG_LEVEL=info CUTRIAGE_OUTPUT=$out/torch-pm.pb" \
  "$out/torch-pm.log"
echo "-- the PM windows (seconds after the agent started are in each line)"
grep -E "PM window" "$out/torch-pm.log" | cut -c1-400
echo "-- routed and complete notices, in order"
grep -E "verdict routed|diagnosis complete" "$out/torch-pm.log" | cut -c1-300
echo "-- the file's verdicts"
"$cli" report "$out/torch-pm.pb" >"$out/torch-pm-report.txt" 2>&1
grep -nE "its own PM samples|complete  |^overhead:|^  [0-9]+\." "$out/torch-pm-report.txt" | head -60
grep -A2 "^overhead:" "$out/torch-pm-report.txt"
"$cli" json "$out/torch-pm.pb" 2>/dev/null | grep -c '"pmWindow"' | sed 's/^/records with a PM window scope: /'

echo "== A/B, ${ab_steps} steps each (one run each way)"
echo "-- off"
run_torch "$ab_steps" "" "$out/ab-off.log"
off=$(sed -nE 's/^steps_per_s=([0-9.]+)/\1/p' "$out/ab-off.log" | tail -1)
echo "-- on (always-on, default budget, the PM window on)"
run_torch "$ab_steps" "CUTRIAGE_MODE=always-on CUTRIAGE_SUMMARY=0 CUTRIAGE_LOG_LEVEL=info CUTRIAGE_OUTPUT=$out/ab-on.pb" \
  "$out/ab-on.log"
on=$(sed -nE 's/^steps_per_s=([0-9.]+)/\1/p' "$out/ab-on.log" | tail -1)
grep -E "PM window" "$out/ab-on.log" | cut -c1-300
if [ -n "$off" ] && [ -n "$on" ]; then
  echo "steps/s off $off, on $on: change $(python3 -c "print('%+.2f' % (100 * ($on - $off) / $off))")%"
else
  echo "steps/s off ${off:-none}, on ${on:-none}: no comparison"
fi
echo "outputs in $out"
