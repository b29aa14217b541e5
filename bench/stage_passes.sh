#!/usr/bin/env bash
# Always-on with stages over launches (CUTRIAGE_STAGE_PASSES=1, docs/always-on.md "Stages over
# launches") against the default single-pass groups, at the default budget, on both of issue 22's
# programs: when each family is routed and complete, and what it costs. Run on the GPU machine
# after
#   bash tests/gpu/build_with_service.sh build-gpu LOGS -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF
# and first `build-gpu/tests/range_profiler_smoke` (its step 4 checks the collection itself).
#
#   bash bench/stage_passes.sh [BUILD_DIR] [SERVICE_BIN]      # results under $OUT/stage_passes
#
# SECONDS_EACH (280): the length of each always-on run (a device command runs 10 minutes at most:
# run the service and PyTorch halves in separate calls with PROGRAMS=service or PROGRAMS=torch).
# AB_SECONDS (0: none): an A/B of throughput, agent off vs on, AB_ROUNDS (1) rounds of one run each
# way, off first, the median of each side printed last.
# OFF_SECONDS (0: none): instead, one plain run of that length after the always-on run, compared
# with the always-on run itself: the loss over the whole always-on run, up-front work included,
# with the plain rate measured in a shorter run (a device call is 10 minutes at most).
# LOG_LEVEL (info): the PyTorch run's CUTRIAGE_LOG_LEVEL.
# STEP_STAGES=N: the same runs with always-on's steps (CUTRIAGE_STEP_STAGES=N, docs/always-on.md
# "Steps") instead of the stages.
# AGENT_ENV: more agent settings for every run with the agent, space-separated NAME=VALUE words
# (for example "CUTRIAGE_TRACE_DUTY=10 CUTRIAGE_TRACE_PERIOD=300").
set -u -o pipefail
build="${1:-build-gpu}"
svc="${2:-build-service/cutriage_service}"
out="${OUT:-$PWD/bench-out}/stage_passes"
secs="${SECONDS_EACH:-280}"
ab="${AB_SECONDS:-0}"
off_secs="${OFF_SECONDS:-0}"
rounds="${AB_ROUNDS:-1}"
programs="${PROGRAMS:-service torch}"
steps="${STEP_STAGES:-0}"
read -r -a agent_env <<<"${AGENT_ENV:-}"
svc_extra=""
for kv in "${agent_env[@]}"; do svc_extra+=";$kv"; done
if [ "$steps" -gt 0 ]; then stages=0; kind=steps; else stages=1; kind=stages; fi
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$out"
lib="$PWD/$build/agent/libcutriage.so"
cli="$PWD/$build/tools/cutriage"
[ -f "$lib" ] && [ -x "$cli" ] || { echo "no $lib or $cli: build first (see the header)" >&2; exit 2; }
date -u +"%Y-%m-%d %H:%M UTC" | tee "$out/date.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
git rev-parse --short HEAD 2>/dev/null | sed 's/^/tree /' | tee "$out/tree.txt"

notices() {  # LOG: the routed and complete lines, and why stages were left
  grep -E "verdict routed|diagnosis complete|PM window on|PM window costs|stage|step|start-up" "$1" | cut -c1-260
}

. "$(dirname "$0")/lib.sh"  # median

svc_rate() {  # the service's output line -> its requests a second
  sed -E 's/.* ([0-9.]+) requests\/s.*/\1/' <<<"$1"
}

ab_medians() {  # FILE UNIT: "off X" / "on Y" lines -> each side's median and the loss
  local off on
  off=$(awk '$1 == "off" {print $2}' "$1" | median)
  on=$(awk '$1 == "on" {print $2}' "$1" | median)
  awk -v off="$off" -v on="$on" -v n="$(grep -c '^off ' "$1")" -v unit="$2" \
    'BEGIN { printf "A/B medians over %d rounds: off %.1f %s, on %.1f: loss %+.2f%%\n", n, off, unit, on, (off - on) / off * 100 }'
}

run_service() {  # NAME STAGES(0|1) SECONDS
  local name="$1" stages="$2" n="$3"
  SERVICE_CUTRIAGE="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_LOG_LEVEL=info;CUTRIAGE_STAGE_PASSES=$stages;CUTRIAGE_STEP_STAGES=$steps;CUTRIAGE_OUTPUT=$out/$name.pb$svc_extra" \
    timeout $((n + 60)) "$svc" "$n" >"$out/$name.out" 2>"$out/$name.log"
  echo "-- $name (stages $stages, steps $steps, $n s): exit $?: $(cat "$out/$name.out")"
  notices "$out/$name.log"
  "$cli" report "$out/$name.pb" >"$out/$name.report.txt" 2>&1
  grep -E "complete  |without replay|^overhead" -A1 "$out/$name.report.txt" | head -30
}

run_torch() {  # NAME STAGES(0|1) SECONDS
  local name="$1" stages="$2" n="$3"
  # About 530 steps a second on the H200 (bench/torch_loop.py).
  timeout $((n + 90)) env CUTRIAGE_MODE=always-on CUTRIAGE_SUMMARY=0 CUTRIAGE_LOG_LEVEL="${LOG_LEVEL:-info}" \
    CUTRIAGE_STAGE_PASSES="$stages" CUTRIAGE_STEP_STAGES="$steps" CUTRIAGE_OUTPUT="$out/$name.pb" CUDA_INJECTION64_PATH="$lib" "${agent_env[@]}" \
    python3 bench/torch_loop.py $((n * 530)) >"$out/$name.log" 2>&1
  echo "-- $name (stages $stages, steps $steps, about $n s): exit $?: $(grep -E '^steps_per_s=' "$out/$name.log" | tail -1)"
  notices "$out/$name.log"
  "$cli" report "$out/$name.pb" >"$out/$name.report.txt" 2>&1
  grep -E "complete  |without replay|^overhead" -A1 "$out/$name.report.txt" | head -30
}

for p in $programs; do
  case "$p" in
    service)
      [ -x "$svc" ] || { echo "no $svc: build it first (see the header)" >&2; continue; }
      echo "== the example service"
      run_service "svc-$kind" "$stages" "$secs"
      if [ "$off_secs" -gt 0 ]; then
        off=$(SERVICE_CUTRIAGE="CUTRIAGE_ENABLE=0" "$svc" "$off_secs" 2>/dev/null)
        on=$(cat "$out/svc-$kind.out")
        echo "plain run ($off_secs s): $off"
        [ "${off##*checksum }" = "${on##*checksum }" ] || echo "CHECKSUM DIFFERS"
        printf 'off %s\non %s\n' "$(svc_rate "$off")" "$(svc_rate "$on")" >"$out/svc-off.txt"
        ab_medians "$out/svc-off.txt" requests/s
      fi
      if [ "$ab" -gt 0 ]; then
        : >"$out/svc-ab.txt"
        for r in $(seq "$rounds"); do
          off=$(SERVICE_CUTRIAGE="CUTRIAGE_ENABLE=0" "$svc" "$ab" 2>/dev/null)
          on=$(SERVICE_CUTRIAGE="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_STAGE_PASSES=$stages;CUTRIAGE_STEP_STAGES=$steps;CUTRIAGE_OUTPUT=$out/svc-ab.pb$svc_extra" "$svc" "$ab" 2>/dev/null)
          echo "A/B round $r off: $off"
          echo "A/B round $r on:  $on"
          [ "${off##*checksum }" = "${on##*checksum }" ] || echo "CHECKSUM DIFFERS"
          echo "off $(svc_rate "$off")" >>"$out/svc-ab.txt"
          echo "on $(svc_rate "$on")" >>"$out/svc-ab.txt"
        done
        ab_medians "$out/svc-ab.txt" requests/s
      fi
      ;;
    torch)
      echo "== bench/torch_loop.py"
      run_torch "torch-$kind" "$stages" "$secs"
      if [ "$off_secs" -gt 0 ]; then
        python3 bench/torch_loop.py $((off_secs * 530)) >"$out/torch-off.log" 2>&1
        off=$(grep -E '^steps_per_s=' "$out/torch-off.log" | tail -1)
        on=$(grep -E '^steps_per_s=' "$out/torch-$kind.log" | tail -1)
        echo "plain run (about $off_secs s): $off"
        printf 'off %s\non %s\n' "${off#steps_per_s=}" "${on#steps_per_s=}" >"$out/torch-off.txt"
        ab_medians "$out/torch-off.txt" steps/s
      fi
      if [ "$ab" -gt 0 ]; then
        : >"$out/torch-ab.txt"
        for r in $(seq "$rounds"); do
          python3 bench/torch_loop.py $((ab * 530)) >"$out/torch-ab-off.log" 2>&1
          env CUTRIAGE_MODE=always-on CUTRIAGE_SUMMARY=0 CUTRIAGE_STAGE_PASSES="$stages" CUTRIAGE_STEP_STAGES="$steps" CUTRIAGE_OUTPUT="$out/torch-ab.pb" \
            CUDA_INJECTION64_PATH="$lib" "${agent_env[@]}" python3 bench/torch_loop.py $((ab * 530)) >"$out/torch-ab-on.log" 2>&1
          off=$(grep -E '^steps_per_s=' "$out/torch-ab-off.log" | tail -1)
          on=$(grep -E '^steps_per_s=' "$out/torch-ab-on.log" | tail -1)
          echo "A/B round $r off: $off"
          echo "A/B round $r on:  $on"
          echo "off ${off#steps_per_s=}" >>"$out/torch-ab.txt"
          echo "on ${on#steps_per_s=}" >>"$out/torch-ab.txt"
        done
        ab_medians "$out/torch-ab.txt" steps/s
      fi
      ;;
    *) echo "unknown program '$p' (service, torch)" >&2 ;;
  esac
done
echo "outputs in $out"
