#!/usr/bin/env bash
# Issue 20 on the device: are CUDA-graph launches' correlation ids unique while always-on's duty
# cycle pauses and resumes the trace? graph_probe's corr_pause ways (CUPTI alone), then the two
# graph workloads under always-on with a 4 s trace period (1 s traced, 3 s paused), and graph_mlp
# with the trace never paused: each report's graph line (replays counted by correlation id) and
# the graph stages' launches. Results under $OUT: summary.txt, corr.tgz.
#
#   bash tests/gpu/run_corr_probe.sh     # on the device, carry .carry (protozero headers)
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu
logs=$(mktemp -d)
sum="$out/summary.txt"
t0=$(date +%s)
bash tests/gpu/build_targets.sh "$build" "$logs" graph_probe cutriage_agent cutriage_cli >"$logs/build-tail.txt"
rc=$?
echo "build: exit $rc, $(( $(date +%s) - t0 )) s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee "$sum"
if [ $rc -ne 0 ]; then tee -a "$sum" <"$logs/build-tail.txt"; tar -C "$logs" -czf "$out/corr.tgz" .; exit 1; fi
echo "commit $(git rev-parse --short HEAD 2>/dev/null), $(date -u +%F)" >>"$sum"

timeout 120 "$build/tests/graph_probe" corr_pause corr_pause_rp >"$logs/probe.txt" 2>&1
echo "graph_probe corr_pause corr_pause_rp: exit $?" >>"$sum"
cat "$logs/probe.txt" >>"$sum"

cli="$PWD/$build/tools/cutriage"
w=tests/gpu/workloads
ao() {  # LABEL SECONDS WORKLOAD [ENV...]: always-on run, the report's graph lines and stages
  local label=$1 secs=$2 wl=$3
  shift 3
  timeout 200 env CUTRIAGE_MODE=always-on CUTRIAGE_LOG_LEVEL=info CUTRIAGE_LOG_FILE="$logs/$label.log" "$@" \
    "$cli" run -o "$logs/$label.pb" -- python3 "$w/$wl.py" 0 "$secs" >"$logs/$label.out" 2>"$logs/$label.err"
  echo "$label: exit $? ($(grep -oE '_per_s=[0-9.]+' "$logs/$label.err"))" >>"$sum"
  "$cli" report "$logs/$label.pb" >"$logs/$label.report.txt" 2>&1
  grep -E "replays, |span [0-9]|launches: " "$logs/$label.report.txt" | head -4 >>"$sum"
  "$cli" json "$logs/$label.pb" >"$logs/$label.json" 2>/dev/null
  python3 - "$logs/$label.json" >>"$sum" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
seen = None
for r in d.get("records", []):
    k = r.get("kernel") or {}
    al = k.get("assembledLaunches")
    if al:
        seen = [(a.get("launchIndex"), a.get("durationNs"), a.get("metricGroup")) for a in al]
print("  graph stage launches (correlation, traced span ns, stage): %s" % (seen,))
PY
  grep -E "graph|resum|pause" "$logs/$label.log" | head -8 | sed 's/^/  log: /' >>"$sum"
}
ao mlp.period4 25 graph_mlp CUTRIAGE_TRACE_PERIOD=4
ao mlp.duty100 15 graph_mlp CUTRIAGE_TRACE_DUTY=100%
export TORCHINDUCTOR_CACHE_DIR="$logs/inductor"
timeout 200 python3 "$w/compile_reduce_overhead.py" 50 >"$logs/c.fill.out" 2>&1
echo "compile fill: exit $?" >>"$sum"
ao compile.period4 25 compile_reduce_overhead CUTRIAGE_TRACE_PERIOD=4
tar -C "$logs" --exclude='inductor' --exclude='*.json' -czf "$out/corr.tgz" .
echo "total: $(( $(date +%s) - t0 )) s" >>"$sum"
