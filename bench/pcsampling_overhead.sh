#!/usr/bin/env bash
# What PC sampling adds (issue 5), side by side in one run, medians of RUNS:
#
#   bash bench/pcsampling_overhead.sh [BUILD_DIR]     # BUILD_DIR default build-gpu; results under $OUT
#
# Modes, each a whole run of the same program:
#   plain     no agent;
#   counters  the agent profiling every zoo_ kernel with the range profiler, PC sampling off
#             (CUTRIAGE_SELECT=all CUTRIAGE_PC_SAMPLING=0);
#   sampled   the same plus one PC-sampled launch per profiled kernel (CUTRIAGE_PC_SAMPLING=1);
#   ncu       Nsight Compute's warp-state and source-counter sections on the same kernels
#             (zoo programs only): what a user would otherwise run to get stall reasons per line.
# Cost per sampled launch = (median sampled - median counters) / sampled launches, where the
# sampled launches are counted in the agent's file (records whose PcSampling has samples).
# Programs: zoo_strided_load, zoo_transpose (one hot kernel each, 6 launches), and the PyTorch
# training loop (bench/torch_loop.py, default selection top 5, whole run incl. start-up).
# Writes pcsampling.md (markdown table) and raw.txt under $OUT/pcsampling.
set -u -o pipefail
build="${1:-build-gpu}"
out="${OUT:-$PWD/bench-out}/pcsampling"
runs="${RUNS:-3}"
steps="${STEPS:-100}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
lib="$PWD/$build/agent/libcutriage.so"
cli="$PWD/$build/tools/cutriage"
raw="$out/raw.txt"
: >"$raw"
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }
secs() { python3 -c "print('%.3f' % ($2 - $1))"; }
med() { tr ' ' '\n' <<<"$1" | grep -v '^$' | median; }
pct() { python3 -c "print('%+.1f%%' % (100.0 * ($2 - $1) / $1))"; }

# Sampled launches with samples in an agent file.
sampled_launches() {
  "$cli" json "$1" 2>/dev/null | python3 -c '
import json, sys
n = 0
seen = set()
for rec in json.load(sys.stdin).get("records", []):
    k = rec.get("kernel")
    if not k: continue
    p = k.get("pcSampling")
    if p and p.get("pcs") and not p.get("error"):
        seen.add(p.get("fromLaunchIndex"))
print(len(seen))'
}

run_mode() {  # run_mode MODE PB CMD... ; the program's output on stdout
  local mode=$1 pb=$2
  shift 2
  case "$mode" in
    plain) "$@" 2>&1 ;;
    counters) CUDA_INJECTION64_PATH="$lib" CUTRIAGE_SUMMARY=0 CUTRIAGE_PC_SAMPLING=0 CUTRIAGE_SELECT="$SEL" \
                CUTRIAGE_KERNEL_NAME="$FILTER" CUTRIAGE_OUTPUT="$pb" "$@" 2>&1 ;;
    sampled) CUDA_INJECTION64_PATH="$lib" CUTRIAGE_SUMMARY=0 CUTRIAGE_PC_SAMPLING=1 CUTRIAGE_SELECT="$SEL" \
               CUTRIAGE_KERNEL_NAME="$FILTER" CUTRIAGE_OUTPUT="$pb" "$@" 2>&1 ;;
    ncu) ncu --section WarpStateStats --section SourceCounters -k 'regex:^zoo_' -c 6 \
           -o "$out/ncu-tmp" -f "$@" 2>&1 ;;
  esac
}

declare -A wall samples
programs=(zoo_strided_load zoo_transpose torch_loop)
for r in $(seq "$runs"); do
  for p in "${programs[@]}"; do
    if [ "$p" = torch_loop ]; then
      cmd=(python3 "$PWD/bench/torch_loop.py" "$steps"); modes="plain counters sampled"; SEL=top:5; FILTER=
    else
      cmd=("$PWD/$build/examples/zoo/$p"); modes="plain counters sampled ncu"; SEL=all; FILTER='regex:^zoo_'
    fi
    for mode in $modes; do
      pb="$out/$p-$mode-$r.pb"
      t=$(now); run_mode "$mode" "$pb" "${cmd[@]}" >"$out/last.log"; rc=$?; d=$(secs "$t" "$(now)")
      n=0
      if [ "$mode" = sampled ] && [ -f "$pb" ]; then n=$(sampled_launches "$pb"); fi
      echo "$p $mode run$r rc=$rc wall_s=$d sampled_launches=$n" >>"$raw"
      wall[$p.$mode]+="$d "
      if [ "$mode" = sampled ]; then samples[$p]="$n"; fi
      rm -f "$pb" "$out"/ncu-tmp.ncu-rep
    done
  done
done
{
  echo "| program | plain s | counters s (PC sampling off) | sampled s (PC sampling on) | ncu WarpStateStats+SourceCounters s | sampled launches | cost per sampled launch |"
  echo "|---|---|---|---|---|---|---|"
  for p in "${programs[@]}"; do
    pl=$(med "${wall[$p.plain]}"); co=$(med "${wall[$p.counters]}"); sa=$(med "${wall[$p.sampled]}")
    nc="-"; [ -n "${wall[$p.ncu]:-}" ] && nc="$(med "${wall[$p.ncu]}") ($(pct "$pl" "$(med "${wall[$p.ncu]}")"))"
    n=${samples[$p]:-0}
    per="-"; [ "$n" -gt 0 ] && per="$(python3 -c "print('%.0f ms' % (1000.0 * ($sa - $co) / $n))")"
    echo "| $p | $pl | $co ($(pct "$pl" "$co")) | $sa ($(pct "$pl" "$sa")) | $nc | $n | $per |"
  done
} >"$out/pcsampling.md"
cat "$out/pcsampling.md"
