#!/usr/bin/env bash
# Issue 21 on the device: short PyTorch programs (tests/gpu/workloads/short_scripts.py) under
# plain `cutriage run` (top:5, --rerun auto), against --rerun never and a plain run. For each: the
# top family's line of the report (a verdict, or why not), whether the application's output is
# the plain run's, wall times. Results under $OUT: summary.txt, the agent files, the reports.
#
#   bash bench/rerun_scripts.sh             # build, then matmul10 layernorm conv2d
#   SCRIPTS="matmul10" SKIP_BUILD=1 bash ...     # a subset, on a warm machine
# On the device, carry .carry (protozero headers).
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu
logs="$out/logs"
mkdir -p "$logs"
sum="$out/summary.txt"
t0=$(date +%s)
if [ -z "${SKIP_BUILD:-}" ]; then
  cmake -S . -B "$build" -G Ninja -DPROTOZERO_INCLUDE_DIR="$PWD/.carry/usr/include" >"$logs/configure.log" 2>&1 &&
    cmake --build "$build" -j16 --target cutriage_agent cutriage_cli >"$logs/build.log" 2>&1
  rc=$?
  echo "build: exit $rc, $(( $(date +%s) - t0 )) s" | tee -a "$sum"
  if [ $rc -ne 0 ]; then tail -40 "$logs/build.log" | tee -a "$sum"; exit 1; fi
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$sum"
echo "commit $(git rev-parse --short HEAD 2>/dev/null), $(date -u +%F)" >>"$sum"
cli="$PWD/$build/tools/cutriage"
py=tests/gpu/workloads/short_scripts.py

timed() {  # LABEL CMD...: stdout/stderr to $logs/LABEL.{out,err}; prints the wall seconds
  local label=$1 s
  shift
  s=$(date +%s.%N)
  timeout 280 "$@" >"$logs/$label.out" 2>"$logs/$label.err"
  echo "$label: exit $?, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $s))") s" >>"$sum"
}
top_family() {  # REPORT: the #1 family's row and the line under it (a verdict or "not profiled")
  python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
for i, l in enumerate(lines):
    if re.match(r"^\s+1\s+\S", l):
        print("   ", l.strip()[:110])
        print("     ", lines[i + 1].strip()[:150] if i + 1 < len(lines) else "")
        break
for l in lines:
    if l.startswith("ranking:") or "this run's trace" in l:
        print("   ", l.strip()[:150])
PY
}
for name in ${SCRIPTS:-matmul10 layernorm conv2d}; do
  echo "== $name" >>"$sum"
  timed "$name-plain" python3 "$py" "$name"
  timed "$name-once" "$cli" run --rerun never -o "$out/$name-once.pb" -- python3 "$py" "$name"
  timed "$name-auto" "$cli" run -o "$out/$name.pb" -- python3 "$py" "$name"
  for arm in once auto; do
    "$cli" report "$out/$name$([ $arm = once ] && echo -once).pb" >"$out/$name-$arm.report.txt" 2>&1
    echo "  --rerun $([ $arm = once ] && echo never || echo auto):" >>"$sum"
    top_family "$out/$name-$arm.report.txt" >>"$sum"
    grep -E "^cutriage run:" "$logs/$name-$arm.err" | sed 's/^/    /' >>"$sum"
  done
  plain=$(grep '^short_script:' "$logs/$name-plain.out")
  for arm in once auto; do
    if grep '^short_script:' "$logs/$name-$arm.out" | sort -u | grep -qxF "$plain" &&
      [ "$(grep '^short_script:' "$logs/$name-$arm.out" | sort -u | wc -l)" -eq 1 ]; then
      echo "  outputs: $arm identical to plain ($plain)" >>"$sum"
    else
      echo "  outputs: $arm DIFFER from plain: $(grep '^short_script:' "$logs/$name-$arm.out" | tr '\n' ' ') vs $plain" >>"$sum"
    fi
  done
done
echo "total $(( $(date +%s) - t0 )) s" >>"$sum"
cat "$sum"
