#!/usr/bin/env bash
# One device call for issue 20 (kernels in CUDA graphs), step 1: what CUPTI gives for graphs
# (tests/gpu/graph_probe.cu, every way in its own child) and what the agent does today with the
# two graph workloads (tests/gpu/workloads/): output checksums plain and under `cutriage run`,
# and the report. Results under $OUT (probe.txt, workloads.txt, logs.tgz).
#
#   bash tests/gpu/run_graph_probe.sh      # on the device, carry .carry (protozero headers)
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu
logs=$(mktemp -d)
t0=$(date +%s)
bash tests/gpu/build_targets.sh "$build" "$logs" graph_probe cutriage_agent cutriage_cli
rc=$?
echo "build: exit $rc, $(( $(date +%s) - t0 )) s" | tee "$out/workloads.txt"
if [ $rc -ne 0 ]; then tar -C "$logs" -czf "$out/logs.tgz" .; exit 1; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$out/workloads.txt"

timeout 240 "$build/tests/graph_probe" ${PROBE_WAYS:-trace user1 userN userrange userrangeN collectorN pcs_serial pcs_cont pcs_cb pcs_cb_late kernelN} >"$out/probe.txt" 2>&1
echo "probe: exit $?" >>"$out/workloads.txt"

cli="$PWD/$build/tools/cutriage"
w=tests/gpu/workloads
# Is torch.compile's output the same from run to run at all? plain, agent (deep), agent
# (trace only), plain again.
run_one() {  # LABEL CMD...
  local label=$1 s
  shift
  s=$(date +%s.%N)
  timeout 240 "$@" >"$logs/$label.out" 2>"$logs/$label.err"
  echo "$label: exit $?, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $s))") s: $(grep -E '^(graph_mlp|compile_reduce_overhead):' "$logs/$label.out")" >>"$out/workloads.txt"
}
c=compile_reduce_overhead
run_one "$c.plain1" python3 "$w/$c.py" 200
run_one "$c.deep" "$cli" run -o "$logs/$c.deep.pb" -- python3 "$w/$c.py" 200
run_one "$c.trace" env CUTRIAGE_SELECT=none "$cli" run -o "$logs/$c.trace.pb" -- python3 "$w/$c.py" 200
run_one "$c.plain2" python3 "$w/$c.py" 200
"$cli" report "$logs/$c.deep.pb" >"$logs/$c.deep.report.txt" 2>&1
tar -C "$logs" -czf "$out/logs.tgz" .
