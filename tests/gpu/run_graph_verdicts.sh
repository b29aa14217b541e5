#!/usr/bin/env bash
# Issue 20 on the device: verdicts for kernels inside CUDA graphs, deep and always-on, on the two
# graph workloads (tests/gpu/workloads), outputs compared plain vs agent. Results under $OUT:
# summary.txt, the agent files (committed under tests/data/graphs/ for CI's replay), the reports.
#
#   PHASE=deep bash tests/gpu/run_graph_verdicts.sh     # build, MLP and torch.compile in deep mode,
#                                                       # the CUDA-graph program of the GPU suite
#   PHASE=mlp bash tests/gpu/run_graph_verdicts.sh      # the MLP in deep mode only
#   PHASE=always bash tests/gpu/run_graph_verdicts.sh   # always-on at the default budget: the MLP
#                                                       # loop timed plain and under the agent
#   PHASE=always-compile bash ...                       # the same for torch.compile reduce-overhead
# On the device, carry .carry (protozero headers). AO_SECONDS (default 240) sets the always-on run,
# PLAIN_SECONDS (default 60) the plain timed run it is compared with; PLAIN_AFTER=1 times a second
# plain run after it and gives the loss against the mean of the two.
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
phase="${PHASE:-deep}"
build=build-gpu
logs=$(mktemp -d)
sum="$out/summary.txt"
t0=$(date +%s)
bash tests/gpu/build_targets.sh "$build" "$logs" cutriage_agent cutriage_cli gpu_graphs >"$logs/build-tail.txt"
rc=$?
echo "build: exit $rc, $(( $(date +%s) - t0 )) s" | tee "$sum"
if [ $rc -ne 0 ]; then tee -a "$sum" <"$logs/build-tail.txt"; exit 1; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$sum"
echo "commit $(git rev-parse --short HEAD 2>/dev/null), $(date -u +%F)" >>"$sum"

cli="$PWD/$build/tools/cutriage"
w=tests/gpu/workloads
run_one() {  # LABEL CMD...: the workload's own lines into the summary
  local label=$1 s
  shift
  s=$(date +%s.%N)
  timeout 560 "$@" >"$logs/$label.out" 2>"$logs/$label.err"
  local rc=$?
  echo "$label: exit $rc, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $s))") s: $(grep -E '^(graph_mlp|compile_reduce_overhead):' "$logs/$label.out") $(grep -E '_per_s=' "$logs/$label.err")" >>"$sum"
}
same() {  # A B: whether two runs printed the same output checksums (a `cutriage run` that ran the
          # program again printed one line per run)
  local a b
  a=$(grep -oE 'sha256 [0-9a-f]+' "$logs/$1.out" | sort -u)
  b=$(grep -oE 'sha256 [0-9a-f]+' "$logs/$2.out" | sort -u)
  if [ -z "$a" ] || [ -z "$b" ]; then
    echo "$1 vs $2: NO CHECKSUM printed" >>"$sum"
  elif [ "$a" = "$b" ]; then
    echo "$1 vs $2: outputs identical" >>"$sum"
  else
    echo "$1 vs $2: outputs DIFFER" >>"$sum"
  fi
}
verdicts() {  # FILE: each family with >= 5% of the GPU time and its verdict line
  "$cli" report "$1" >"$1.report.txt" 2>&1
  python3 - "$1.report.txt" >>"$sum" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
print("  report of %s:" % sys.argv[1].split("/")[-1])
for line in text.splitlines():
    if re.search(r"^\s*(verdict|counters|trust)\s", line) or re.match(r"^#\d+ ", line) or "graph " in line[:40]:
        print("   ", line[:200])
EOF
  cp "$logs/agent.log" "$1.log" 2>/dev/null || true
}

if [ "$phase" = deep ] || [ "$phase" = mlp ]; then
  run_one mlp.plain python3 "$w/graph_mlp.py" 300
  run_one mlp.deep env CUTRIAGE_LOG_LEVEL=info CUTRIAGE_LOG_FILE="$logs/agent.log" "$cli" run -o "$out/graph_mlp-deep.pb" -- \
    python3 "$w/graph_mlp.py" 300
  same mlp.plain mlp.deep
  verdicts "$out/graph_mlp-deep.pb"
fi
if [ "$phase" = deep ]; then

  # torch.compile: one Inductor cache, filled by a first plain run, shared by the others, so every
  # run uses the same kernels (autotuning picks them by timing; docs/graphs.md).
  c=compile_reduce_overhead
  export TORCHINDUCTOR_CACHE_DIR="$logs/inductor" DETERMINISTIC=1
  run_one c.fill python3 "$w/$c.py" 200
  run_one c.plain python3 "$w/$c.py" 200
  same c.fill c.plain
  run_one c.deep env CUTRIAGE_LOG_LEVEL=info CUTRIAGE_LOG_FILE="$logs/agent.log" "$cli" run -o "$out/$c-deep.pb" -- python3 "$w/$c.py" 200
  same c.plain c.deep
  verdicts "$out/$c-deep.pb"
  unset TORCHINDUCTOR_CACHE_DIR DETERMINISTIC

  CUDA_INJECTION64_PATH="$PWD/$build/agent/libcutriage.so" CUTRIAGE_OUTPUT="$out/gpu_graphs.pb" CUTRIAGE_SELECT=all \
    timeout 120 "$build/tests/gpu/gpu_graphs" >"$logs/graphs.out" 2>&1
  echo "gpu_graphs under the agent (select all): exit $? ($(tail -1 "$logs/graphs.out"))" >>"$sum"
  verdicts "$out/gpu_graphs.pb"
fi
if [ "$phase" = always ] || [ "$phase" = always-compile ]; then
  # Always-on at the default budget: the workload timed plain, then under the agent for AO_SECONDS.
  # The file keeps 20,000 timeline events (the statistics cover every execution) so that it can be
  # committed under tests/data/graphs/ for CI's replay.
  secs="${AO_SECONDS:-240}"
  if [ "$phase" = always ]; then
    wl=graph_mlp name=graph_mlp
  else
    wl=compile_reduce_overhead name=compile_reduce_overhead
    export TORCHINDUCTOR_CACHE_DIR="$logs/inductor"
    run_one c.fill python3 "$w/$wl.py" 50
  fi
  run_one "$name.plain.timed" python3 "$w/$wl.py" 0 "${PLAIN_SECONDS:-60}"
  run_one "$name.ao" env CUTRIAGE_MODE=always-on CUTRIAGE_TRACE_MAX_EVENTS=20000 CUTRIAGE_LOG_LEVEL=info \
    CUTRIAGE_LOG_FILE="$logs/agent.log" "$cli" run -o "$out/$name-always-on.pb" -- python3 "$w/$wl.py" 0 "$secs"
  verdicts "$out/$name-always-on.pb"
  # PLAIN_AFTER=1: a second plain run after the agent's, so that a drift of the GPU's clocks over
  # the session shows beside the loss (the loss is then against the mean of the two plain runs).
  if [ "${PLAIN_AFTER:-0}" = 1 ]; then
    run_one "$name.plain.after" python3 "$w/$wl.py" 0 "${PLAIN_SECONDS:-60}"
    python3 - "$logs" "$name" >>"$sum" <<'EOF2'
import re, sys
logs, name = sys.argv[1], sys.argv[2]
def rate(label):
    m = re.search(r"_per_s=([0-9.]+)", open("%s/%s.err" % (logs, label)).read())
    return float(m.group(1)) if m else None
before, ao, after = rate(name + ".plain.timed"), rate(name + ".ao"), rate(name + ".plain.after")
if None in (before, ao, after):
    print("A/B: a run printed no rate")
else:
    plain = (before + after) / 2
    print("A/B: plain %.2f before, %.2f after (mean %.2f); always-on %.2f: %+.2f%%" %
          (before, after, plain, ao, 100 * (ao - plain) / plain))
EOF2
  fi
  grep -E "graph|budget|complete|correlation" "$logs/agent.log" | head -40 >>"$sum"
  unset TORCHINDUCTOR_CACHE_DIR
fi
tar -C "$logs" --exclude='inductor' -czf "$out/logs-$phase.tgz" .
echo "total: $(( $(date +%s) - t0 )) s" >>"$sum"
