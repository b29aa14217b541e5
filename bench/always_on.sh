#!/usr/bin/env bash
# Always-on mode (issue 6): what it costs a running service and how long until its top families
# have complete diagnoses, side by side in one run, medians of RUNS:
#
#   bash bench/always_on.sh BUILD_DIR SERVICE_BIN       # results under $OUT/always_on
#
# 1. The example service (examples/service, linked against the installed package): requests/s
#    over SVC_SECONDS, agent off (CUTRIAGE_ENABLE=0) vs always-on at the default budget,
#    interleaved round by round; results must be identical (the service prints a checksum).
# 2. PyTorch (bench/torch_loop.py TORCH_STEPS): steady-state steps/s, plain vs the agent injected
#    in always-on mode; the final loss must be identical.
# 3. Time to complete diagnoses: the service once for LONG_SECONDS at the default budget and once
#    at FAST_BUDGET; each family's "always_on_complete" notice says when its counters were
#    complete. The service once in deep mode (replay) for the verdicts always-on must match, and
#    once with a deep capture requested through the C API after a few seconds.
# Writes always_on.md (tables), raw.txt and the agent files (*.pb).
set -u -o pipefail
build="${1:-build-gpu}"
svc="${2:-build-service/cutriage_service}"
out="${OUT:-$PWD/bench-out}/always_on"
runs="${RUNS:-3}"
svc_seconds="${SVC_SECONDS:-20}"
torch_steps="${TORCH_STEPS:-6000}"
long_seconds="${LONG_SECONDS:-150}"
fast_budget="${FAST_BUDGET:-5%}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
lib="$PWD/$build/agent/libcutriage.so"
cli="$PWD/$build/tools/cutriage"
raw="$out/raw.txt"
[ "${PHASE:-all}" = long ] || : >"$raw"
. "$(dirname "$0")/lib.sh"  # median
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0"

phase="${PHASE:-all}"   # rounds: parts 1-2; long: part 3; all (the device's 10-minute calls need two)
declare -A rps sps
[ "$phase" = long ] && runs=0
for r in $(seq 1 "$runs"); do
  line=$(SERVICE_CUTRIAGE="CUTRIAGE_ENABLE=0" "$svc" "$svc_seconds" 2>>"$raw")
  echo "round $r service off: $line" >>"$raw"
  rps[off]+="$(echo "$line" | sed -E 's/.* ([0-9.]+) requests\/s.*/\1/') "
  sum_off=$(echo "$line" | sed -E 's/.*checksum //')
  line=$(SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/svc-ao-$r.pb" "$svc" "$svc_seconds" 2>>"$raw")
  echo "round $r service always-on: $line" >>"$raw"
  rps[on]+="$(echo "$line" | sed -E 's/.* ([0-9.]+) requests\/s.*/\1/') "
  sum_on=$(echo "$line" | sed -E 's/.*checksum //')
  [ "$sum_off" = "$sum_on" ] || echo "CHECKSUM DIFFERS round $r: $sum_off vs $sum_on" | tee -a "$raw"

  res=$(python3 bench/torch_loop.py "$torch_steps" 2>&1)
  echo "round $r torch plain: $(echo $res)" >>"$raw"
  sps[off]+="$(echo "$res" | sed -nE 's/steps_per_s=([0-9.]+)/\1/p') "
  loss_off=$(echo "$res" | grep "final loss")
  res=$(CUDA_INJECTION64_PATH="$lib" CUTRIAGE_MODE=always-on CUTRIAGE_SUMMARY=0 \
        CUTRIAGE_OUTPUT="$out/torch-ao-$r.pb" python3 bench/torch_loop.py "$torch_steps" 2>&1)
  echo "round $r torch always-on: $(echo $res)" >>"$raw"
  sps[on]+="$(echo "$res" | sed -nE 's/steps_per_s=([0-9.]+)/\1/p') "
  loss_on=$(echo "$res" | grep "final loss")
  [ "$loss_off" = "$loss_on" ] || echo "LOSS DIFFERS round $r: $loss_off vs $loss_on" | tee -a "$raw"
done

if [ "$phase" = rounds ]; then
  printf '%s\n' "off ${rps[off]}" "on ${rps[on]}" >"$out/service_rounds.txt"
  printf '%s\n' "off ${sps[off]}" "on ${sps[on]}" >"$out/torch_rounds.txt"
  exit 0
fi
if [ "$phase" = long ]; then  # the rounds' medians from the earlier call
  rps[off]=$(sed -n 's/^off //p' "$out/service_rounds.txt"); rps[on]=$(sed -n 's/^on //p' "$out/service_rounds.txt")
  sps[off]=$(sed -n 's/^off //p' "$out/torch_rounds.txt"); sps[on]=$(sed -n 's/^on //p' "$out/torch_rounds.txt")
fi

# Time to diagnosis, and the verdicts to compare.
SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/svc-ao-long.pb;CUTRIAGE_LOG_LEVEL=info" \
  "$svc" "$long_seconds" >>"$raw" 2>"$out/svc-ao-long.log"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_BUDGET=$fast_budget;CUTRIAGE_OUTPUT=$out/svc-ao-fast.pb;CUTRIAGE_LOG_LEVEL=info" \
  "$svc" "$long_seconds" >>"$raw" 2>"$out/svc-ao-fast.log"
SERVICE_CUTRIAGE="CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$out/svc-deep.pb" "$svc" 15 >>"$raw" 2>&1
SERVICE_DEEP_AFTER=5 SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/svc-ao-request.pb;CUTRIAGE_LOG_LEVEL=info" \
  "$svc" 20 >>"$raw" 2>"$out/svc-ao-request.log"
CUDA_INJECTION64_PATH="$lib" CUTRIAGE_SUMMARY=0 CUTRIAGE_OUTPUT="$out/torch-deep.pb" \
  python3 bench/torch_loop.py 300 >>"$raw" 2>&1
for f in "$out"/*.pb; do "$cli" json "$f" >"${f%.pb}.json" 2>>"$raw"; done

m() { echo "${1}" | tr ' ' '\n' | grep -v '^$' | median; }
{
  echo "| measure | agent off | always-on (default budget) | change |"
  echo "|---|---|---|---|"
  off=$(m "${rps[off]}"); on=$(m "${rps[on]}")
  echo "| example service, requests/s (${svc_seconds} s runs) | $off | $on | $(python3 -c "print('%+.2f%%' % (100*($on/$off-1)))") |"
  off=$(m "${sps[off]}"); on=$(m "${sps[on]}")
  echo "| torch_loop.py $torch_steps, steady-state steps/s | $off | $on | $(python3 -c "print('%+.2f%%' % (100*($on/$off-1)))") |"
  echo
  echo "per round: service off [${rps[off]}] on [${rps[on]}]; torch off [${sps[off]}] on [${sps[on]}]"
} >"$out/always_on.md"
python3 bench/always_on_report.py "$out" >>"$out/always_on.md" 2>>"$raw"
cat "$out/always_on.md"
