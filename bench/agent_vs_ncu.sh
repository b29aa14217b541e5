#!/usr/bin/env bash
# The headline comparison (BENCHMARKS.md's first section): each program plain, under cutriage and
# under Nsight Compute, side by side in one run on the GPU machine, medians of RUNS runs.
#
#   bash bench/agent_vs_ncu.sh [BUILD_DIR]     # BUILD_DIR default build-gpu; results under $OUT
#
# Arms (ARMS to choose, in this order by default):
#   plain        the program alone
#   default      `cutriage run -- APP`: the top 5 families, adaptive counters, PC sampling, a second
#                run when the first ranked its top families after their last launch
#   full         `cutriage run --select all --metrics full --rerun never`: every kernel fully
#                triaged (every counter, source lines)
#   appreplay    `cutriage run --replay application --select all` (when the build has it)
#   ncu-basic    `ncu --set basic`
#   ncu-full     `ncu --set full`
#   ncu-app      `ncu --set full --replay-mode application` (RUNS_APP runs, default 1: it runs the
#                program once per pass)
# Every ncu arm profiles the first launch of every kernel (`--kernel-id ::regex:.:1`), the same
# kernels as cutriage's `--select all` (one profiled launch per family); ncu keeps clocks as found
# (`--clock-control none`, as cutriage does). Per arm: median wall time, time added to the plain
# run, that as a fraction of what `ncu --set full` adds, the kernels profiled, and whether the
# program's stdout is the plain run's (programs print a checksum).
#
# PROGRAMS: many_kernels (examples/zoo/many_kernels.cu, 11 kernels x 3 launches, 1 GiB buffers),
# matmul10 and layernorm (tests/gpu/workloads/short_scripts.py), torch_loop (bench/torch_loop.py
# 30 steps).
set -u -o pipefail
build="${1:-build-gpu}"
out="${OUT:-$PWD/bench-out}/agent_vs_ncu"
runs="${RUNS:-3}"
runs_app="${RUNS_APP:-1}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
cli="$PWD/$build/tools/cutriage"
zoo="$PWD/$build/examples/zoo"
arms=(${ARMS:-plain default full ncu-basic ncu-full ncu-app})
programs=(${PROGRAMS:-many_kernels matmul10 layernorm torch_loop})
limit="${ARM_TIMEOUT:-400}"

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
app_of() {
  case "$1" in
    many_kernels) echo "$zoo/zoo_many_kernels" ;;
    matmul10 | layernorm | conv2d) echo "python3 $PWD/tests/gpu/workloads/short_scripts.py $1" ;;
    torch_loop) echo "python3 $PWD/bench/torch_loop.py 30" ;;
    *) echo "unknown program $1" >&2; return 1 ;;
  esac
}
# One run of ARM on PROGRAM, number R: prints the wall seconds; stdout to $out/PROGRAM.ARM.R.out,
# stderr to .err, the agent's file to .pb.
run_arm() {
  local prog=$1 arm=$2 r=$3 base="$out/$1.$2.$3" app s rc
  read -r -a app <<<"$(app_of "$prog")"
  local cmd=()
  case "$arm" in
    plain) cmd=("${app[@]}") ;;
    default) cmd=("$cli" run -o "$base.pb" -- "${app[@]}") ;;
    full) cmd=("$cli" run --select all --metrics full --rerun never -o "$base.pb" -- "${app[@]}") ;;
    appreplay) cmd=("$cli" run --replay application --select all -o "$base.pb" -- "${app[@]}") ;;
    ncu-basic) cmd=(ncu --set basic --clock-control none --kernel-id ::regex:.:1 "${app[@]}") ;;
    ncu-full) cmd=(ncu --set full --clock-control none --kernel-id ::regex:.:1 "${app[@]}") ;;
    ncu-app) cmd=(ncu --set full --clock-control none --replay-mode application --kernel-id ::regex:.:1 "${app[@]}") ;;
  esac
  rm -f "$base.pb"
  s=$(date +%s.%N)
  timeout "$limit" "${cmd[@]}" >"$base.out" 2>"$base.err"
  rc=$?
  python3 -c "print('%.3f' % ($(date +%s.%N) - $s))"
  [ $rc -eq 0 ] || echo "$prog $arm run $r: exit $rc" >>"$out/errors.txt"
}
# The program's own result lines, among ncu's report lines (cutriage prints on stderr), each once:
# a program run several times (a rerun, application replay) prints them several times.
app_lines() { grep -E 'checksum|^final loss|: OK$' "$1" | sort -u; }
profiled() {  # PROGRAM ARM R: kernels profiled in that run
  local base="$out/$1.$2.$3"
  case "$2" in
    plain) echo "-" ;;
    ncu-*) grep -cE ', Context [0-9]+, Stream [0-9]+' "$base.out" ;;
    *) "$cli" json "$base.pb" 2>/dev/null | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except Exception:
    print("?"); sys.exit()
fams = {r["kernel"].get("mangledNameIid") for r in d.get("records", [])
        if r.get("kernel", {}).get("status") == "PROFILE_STATUS_PROFILED"}
print(len(fams))' ;;
  esac
}

{
  echo "tree $(git rev-parse --short HEAD 2>/dev/null) $(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(ncu --version | tail -1)"
  echo "runs $runs (ncu-app $runs_app)"
} >"$out/env.txt"
table="$out/table.md"
echo "| program | arm | wall s (median) | added s | added / ncu-full added | kernels profiled | output as plain |" >"$table"
echo "|---|---|---|---|---|---|---|" >>"$table"
for prog in "${programs[@]}"; do
  declare -A wall=()
  for arm in "${arms[@]}"; do
    n=$runs
    [ "$arm" = ncu-app ] && n=$runs_app
    ts=()
    for r in $(seq "$n"); do ts+=("$(run_arm "$prog" "$arm" "$r")"); done
    wall[$arm]=$(printf '%s\n' "${ts[@]}" | median)
    echo "$prog $arm: ${ts[*]} -> ${wall[$arm]}" >>"$out/raw.txt"
  done
  for arm in "${arms[@]}"; do
    p=${wall[plain]:-nan}
    added=$(python3 -c "print('%.2f' % (${wall[$arm]} - $p))" 2>/dev/null || echo "?")
    frac=$(python3 -c "
a, f = ${wall[$arm]} - $p, ${wall[ncu-full]:-0} - $p
print('%.2f' % (a / f) if f > 0 else '-')" 2>/dev/null || echo "?")
    same=yes
    if [ "$arm" != plain ]; then
      if [ "$(app_lines "$out/$prog.$arm.1.out")" != "$(app_lines "$out/$prog.plain.1.out")" ]; then same=NO; fi
    else
      same="-"
    fi
    echo "| $prog | $arm | ${wall[$arm]} | $added | $frac | $(profiled "$prog" "$arm" 1) | $same |" >>"$table"
  done
  unset wall
done
cat "$out/env.txt" "$table"
[ -f "$out/errors.txt" ] && cat "$out/errors.txt"
exit 0
