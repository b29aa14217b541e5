#!/usr/bin/env bash
# Whether CUPTI still drops graph kernel records under torch.compile(mode="reduce-overhead") with
# one global activity buffer queue (activity_trace.cpp); carry .carry.
set -u
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu
bash tests/gpu/build_targets.sh "$build" /tmp/trace-drop-build cutriage_agent cutriage_cli || exit 1
cli="$PWD/$build/tools/cutriage"
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-c
for run in 1 2; do
  CUTRIAGE_SELECT=none timeout 100 "$cli" run -o "$OUT/compile_trace_$run.pb" -- python3 tests/gpu/workloads/compile_reduce_overhead.py 200 > /tmp/o 2>/tmp/e
  echo "run $run: exit $? $(grep compile /tmp/o)"
  "$cli" report "$OUT/compile_trace_$run.pb" > "$OUT/compile_trace_$run.report.txt" 2>&1
  grep -E "^launches|kernel executions|dropped|graph [0-9]+:" "$OUT/compile_trace_$run.report.txt"
  [ $run = 1 ] && rm -f "$OUT/compile_trace_1.pb"
done
timeout 60 "$cli" run -o "$OUT/mlp.pb" -- python3 tests/gpu/workloads/graph_mlp.py 300 | grep graph_mlp
"$cli" report "$OUT/mlp.pb" | grep -E "^launches|kernel executions|dropped|graph [0-9]+:"
rm -f "$OUT/mlp.pb"
