#!/usr/bin/env bash
# Issue 21 item 2 on the device: `cutriage run --replay application` (each profiled launch one
# single-pass metric group, nothing replayed in the process; APP run again until the top families
# are complete) against plain `cutriage run` (kernel replay) and a run without the agent, on the
# short PyTorch scripts (tests/gpu/workloads/short_scripts.py) and zoo programs. For each: wall
# times, the number of runs and why the loop stopped, the top family's verdict and trust in both
# modes (do they agree?), Decision 0's d0.assembled_launches on the replayed file, and whether the
# application's output is the plain run's. Results under $OUT: summary.txt, the agent files, the
# reports, every run's stderr.
#
#   bash tests/gpu/run_app_replay_check.sh                  # build, then the scripts and the zoo
#   SCRIPTS="matmul10" ZOO="fma_chain" SKIP_BUILD=1 bash ... # a subset, on a warm machine
#   MAX_RUNS=10 ...                                         # --max-runs (default 40)
# The device runs a command for at most 10 minutes: run the workloads a few at a time.
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
  zoo_targets=""
  for p in ${ZOO:-fma_chain strided_load tiny_kernels}; do zoo_targets="$zoo_targets zoo_$p"; done
  # shellcheck disable=SC2086 # one target per word
  bash tests/gpu/build_targets.sh "$build" "$logs" cutriage_agent cutriage_cli $zoo_targets >"$logs/build-tail.txt"
  rc=$?
  echo "build: exit $rc, $(( $(date +%s) - t0 )) s" | tee -a "$sum"
  if [ $rc -ne 0 ]; then tee -a "$sum" <"$logs/build-tail.txt"; exit 1; fi
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$sum"
echo "commit $(git rev-parse --short HEAD 2>/dev/null), $(date -u +%F)" >>"$sum"
cli="$PWD/$build/tools/cutriage"
zoo="$PWD/$build/examples/zoo"
py=tests/gpu/workloads/short_scripts.py

timed() {  # LABEL CMD...: stdout/stderr to $logs/LABEL.{out,err}; prints the wall seconds
  local label=$1 s
  shift
  s=$(date +%s.%N)
  timeout 590 "$@" >"$logs/$label.out" 2>"$logs/$label.err"
  echo "  $label: exit $?, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $s))") s" >>"$sum"
}
top_kernel() {  # REPORT: the first profiled kernel's name, verdict, trust, assembled and complete lines
  python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
for l in lines:
    if l.startswith("replay:") or l.startswith("mode:"):
        print("   ", l.strip()[:120])
start = next((i for i, l in enumerate(lines) if re.match(r"^\[1\] ", l)), None)
if start is None:
    print("    no profiled kernel")
    sys.exit()
print("   ", lines[start][:110])
for l in lines[start + 1:]:
    if re.match(r"^\[2\] ", l):
        break
    if re.match(r"^    (verdict|trust|assembled|complete|collected) ", l):
        print("   ", l.strip()[:150])
PY
}
d0_assembled() {  # FILE.pb: d0.assembled_launches of each profiled kernel's latest record (cutriage json)
  "$cli" json "$1" 2>/dev/null | python3 -c '
import json, sys
last = {}
for r in json.load(sys.stdin).get("records", []):
    k = r.get("kernel")
    if not k or k.get("status") != "PROFILE_STATUS_PROFILED":
        continue
    for d in k.get("diagnosis", {}).get("path", []):
        for c in d.get("checks", []):
            if c.get("ruleId") == "d0.assembled_launches":
                last[k.get("mangledNameIid")] = (c.get("outcome", ""), c.get("reason", "")[:140])
for outcome, reason in last.values():
    print("    d0.assembled_launches:", outcome, "-", reason)
'
}
compare() {  # NAME MARKER CMD...: plain, kernel replay, application replay; reports and outputs
  local name=$1 marker=$2
  shift 2
  echo "== $name" >>"$sum"
  timed "$name-plain" "$@"
  timed "$name-kernel" "$cli" run -o "$out/$name-kernel.pb" -- "$@"
  timed "$name-app" "$cli" run --replay application --max-runs "${MAX_RUNS:-40}" -o "$out/$name-app.pb" -- "$@"
  grep -c "^cutriage run: application replay, run" "$logs/$name-app.err" | sed 's/^/  application replay runs: /' >>"$sum"
  grep -E "^cutriage run: application replay (stopped|, run [0-9]+ of at most [0-9]+: every)" "$logs/$name-app.err" |
    tail -2 | sed 's/^/    /' >>"$sum"
  for arm in kernel app; do
    "$cli" report "$out/$name-$arm.pb" >"$out/$name-$arm.report.txt" 2>&1
    echo "  --replay $([ $arm = app ] && echo application || echo kernel):" >>"$sum"
    top_kernel "$out/$name-$arm.report.txt" >>"$sum"
  done
  d0_assembled "$out/$name-app.pb" >>"$sum"
  # The application's output: every run's line the plain run's.
  plain=$(grep "$marker" "$logs/$name-plain.out" | sort -u)
  for arm in kernel app; do
    got=$(grep "$marker" "$logs/$name-$arm.out" | sort -u)
    if [ -n "$plain" ] && [ "$got" = "$plain" ]; then
      echo "  outputs: $arm identical to plain ($(echo "$plain" | head -1))" >>"$sum"
    else
      echo "  outputs: $arm DIFFER from plain: $(echo "$got" | tr '\n' ' ') vs $(echo "$plain" | tr '\n' ' ')" >>"$sum"
    fi
  done
}

for name in ${SCRIPTS:-matmul10 layernorm conv2d}; do
  compare "$name" '^short_script:' python3 "$py" "$name"
done
for p in ${ZOO:-fma_chain strided_load tiny_kernels}; do
  compare "zoo_$p" '^zoo ' "$zoo/zoo_$p"
done
echo "total $(( $(date +%s) - t0 )) s" >>"$sum"
cat "$sum"
