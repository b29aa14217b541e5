#!/usr/bin/env bash
# One device call for issue 20, step 2: the collector's graph route (graph_probe collectorN), the
# graph events the agent relies on (graph_probe trace), the graph workloads under the agent
# (outputs plain vs agent, the report's graph section, the agent file kept for CI replay), the
# CUDA-graph program of the GPU suite under the agent, and whether torch.compile's autotuning is
# what changed its output under the agent (docs/graphs.md): each order of plain and agent runs
# sharing one fresh Inductor cache. Results under $OUT.
#
#   bash tests/gpu/run_graph_check.sh      # on the device, carry .carry (protozero headers)
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu
logs=$(mktemp -d)
sum="$out/summary.txt"
t0=$(date +%s)
bash tests/gpu/build_targets.sh "$build" "$logs" graph_probe cutriage_agent cutriage_cli gpu_graphs >"$logs/build-tail.txt"
rc=$?
echo "build: exit $rc, $(( $(date +%s) - t0 )) s" | tee "$sum"
if [ $rc -ne 0 ]; then tee -a "$sum" <"$logs/build-tail.txt"; exit 1; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$sum"

timeout 120 "$build/tests/graph_probe" collectorN trace >"$out/probe.txt" 2>&1
echo "probe collectorN trace: exit $?" >>"$sum"

cli="$PWD/$build/tools/cutriage"
w=tests/gpu/workloads
run_one() {  # LABEL CMD...: the workload's own line into the summary
  local label=$1 s
  shift
  s=$(date +%s.%N)
  timeout 200 "$@" >"$logs/$label.out" 2>"$logs/$label.err"
  local rc=$?
  echo "$label: exit $rc, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $s))") s: $(grep -E '^(graph_mlp|compile_reduce_overhead):' "$logs/$label.out")" >>"$sum"
}
same() {  # A B: whether two runs printed the same output line
  if [ "$(grep -E '^(graph_mlp|compile)' "$logs/$1.out")" = "$(grep -E '^(graph_mlp|compile)' "$logs/$2.out")" ]; then
    echo "$1 vs $2: outputs identical" >>"$sum"
  else
    echo "$1 vs $2: outputs DIFFER" >>"$sum"
  fi
}
run_one mlp.plain python3 "$w/graph_mlp.py" 300
run_one mlp.agent "$cli" run -o "$out/graph_mlp.pb" -- python3 "$w/graph_mlp.py" 300
same mlp.plain mlp.agent
"$cli" report "$out/graph_mlp.pb" >"$out/graph_mlp.report.txt" 2>&1

c=compile_reduce_overhead
export TORCHINDUCTOR_CACHE_DIR="$logs/inductor-a"
run_one a1.plain python3 "$w/$c.py" 200
run_one a2.trace env CUTRIAGE_SELECT=none "$cli" run -o "$logs/a2.pb" -- python3 "$w/$c.py" 200
same a1.plain a2.trace
export TORCHINDUCTOR_CACHE_DIR="$logs/inductor-b"
run_one b1.trace env CUTRIAGE_SELECT=none "$cli" run -o "$logs/b1.pb" -- python3 "$w/$c.py" 200
run_one b2.plain python3 "$w/$c.py" 200
same b1.trace b2.plain
same a1.plain b2.plain
run_one b3.deep "$cli" run -o "$out/compile_reduce_overhead.pb" -- python3 "$w/$c.py" 200
same b2.plain b3.deep
"$cli" report "$out/compile_reduce_overhead.pb" >"$out/compile_reduce_overhead.report.txt" 2>&1
for f in a2 b1; do
  echo "$f: Triton benchmark fills (FillFunctor<int>) in the trace: $("$cli" report "$logs/$f.pb" 2>/dev/null | grep -c 'FillFunctor<int>')" >>"$sum"
done

CUDA_INJECTION64_PATH="$PWD/$build/agent/libcutriage.so" CUTRIAGE_OUTPUT="$logs/graphs.pb" CUTRIAGE_SELECT=all \
  timeout 60 "$build/tests/gpu/gpu_graphs" >"$logs/graphs.out" 2>&1
echo "gpu_graphs under the agent (select all): exit $? ($(tail -1 "$logs/graphs.out"))" >>"$sum"
"$cli" report "$logs/graphs.pb" >"$logs/graphs.report.txt" 2>&1
tar -C "$logs" --exclude='inductor-*' -czf "$out/logs.tgz" .
