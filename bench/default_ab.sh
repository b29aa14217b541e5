#!/usr/bin/env bash
# Throughput with always-on at the default budget against the agent off, over runs long enough for
# the agent to profile (issue 6's target: at most 1% lost). One program per call, so that two GPUs
# can take one each at the same time:
#
#   bash bench/default_ab.sh service OUTDIR     # examples/service, agent linked (build-service/)
#   bash bench/default_ab.sh torch OUTDIR       # bench/torch_loop.py, agent injected
#
# ROUNDS (default 2) rounds of both arms, the order alternating from round to round (off first in
# odd rounds) so that a drift of the machine falls on both. Each service run lasts SVC_SECONDS
# (default 180); each PyTorch run TORCH_STEPS (default 90000, about 3 minutes). BUILD (default
# build-gpu) holds libcutriage.so and the cutriage command.
# Writes OUTDIR/PROGRAM-ab.txt (every run: throughput, result, the agent's overhead line) and
# OUTDIR/PROGRAM-ab-summary.txt (medians, change, whether every run's result was the same).
set -u -o pipefail
program="$1"
out="$2"
rounds="${ROUNDS:-2}"
build="${BUILD:-build-gpu}"
svc_seconds="${SVC_SECONDS:-180}"
torch_steps="${TORCH_STEPS:-90000}"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$out"
raw="$out/$program-ab.txt"
: >"$raw"
cli="$PWD/$build/tools/cutriage"
case "$program" in
  service) length="$svc_seconds" ;;
  torch) length="$torch_steps" ;;
  *) echo "program: service or torch" >&2; exit 2 ;;
esac
. "$(dirname "$0")/lib.sh"
export BUILD="$build"

# One run of one arm: "<throughput> <result>" on stdout, the rest in $raw.
run_arm() {  # arm round
  local arm="$1" r="$2" pb="$out/$program-on-$2.pb" text value result
  local cfg=""
  [ "$arm" = on ] && cfg="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$pb"
  text=$(run_program "$program" "$cfg" "$length")
  if [ "$program" = service ]; then
    value=$(echo "$text" | sed -nE 's/^service: .* ([0-9.]+) requests\/s.*/\1/p' | tail -1)
    result=$(echo "$text" | sed -nE 's/^service: .*checksum ([0-9.]+).*/\1/p' | tail -1)
  else
    value=$(echo "$text" | sed -nE 's/^steps_per_s=([0-9.]+)/\1/p' | tail -1)
    result=$(echo "$text" | sed -nE 's/^final loss ([0-9.]+)/\1/p' | tail -1)
  fi
  {
    echo "round $r $arm: ${value:-none} result ${result:-none}"
    echo "$text" | grep -E "^cutriage: .*(diagnosis complete|error|warn)" | cut -c1-200 | sed 's/^/  /'
    if [ "$arm" = on ] && [ -f "$pb" ]; then
      "$cli" report "$pb" 2>/dev/null | grep -A1 "^overhead:" | sed 's/^/  /'
    fi
  } >>"$raw"
  echo "${value:-nan} ${result:-none}"
}

declare -A values results
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  for arm in $order; do
    read -r v res < <(run_arm "$arm" "$r")
    values[$arm]+="$v "
    results[$arm]+="$res "
  done
done

off=$(echo "${values[off]}" | tr ' ' '\n' | grep -v '^$' | median)
on=$(echo "${values[on]}" | tr ' ' '\n' | grep -v '^$' | median)
same=$(echo "${results[off]} ${results[on]}" | tr ' ' '\n' | grep -v '^$' | sort -u | wc -l)
{
  echo "program: $program, $rounds rounds, $([ "$program" = service ] && echo "$svc_seconds s a run, requests/s" || echo "$torch_steps steps a run, steady-state steps/s")"
  echo "off runs: ${values[off]}"
  echo "on runs:  ${values[on]}"
  awk -v off="$off" -v on="$on" 'BEGIN { printf "median off %s, always-on %s, change %+.2f%%\n", off, on, (on - off) / off * 100 }'
  if [ "$same" = 1 ]; then echo "results: identical in every run"; else echo "RESULTS DIFFER: ${results[off]} | ${results[on]}"; fi
} | tee "$out/$program-ab-summary.txt"
