#!/usr/bin/env bash
# One device call on the two-GPU machine (nvidia-h200-x2), about 4 minutes: the kernel trace's
# cost inside one run (bench/trace_split.sh), the service on GPU 0 and the PyTorch loop on GPU 1 at
# once.
#
#   bash tests/gpu/run_trace_split.sh
#
# Everything comes back as $OUT/trace_split.tgz (the programs' output, the agent's debug lines, the
# per-cycle results; not the agent files).
set -u -o pipefail
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
out="${OUT:-$PWD/gpu-out}"
work="$out/trace_split"
mkdir -p "$work"
build=build-gpu
bash tests/gpu/build_with_service.sh "$build" "$work/logs" -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF || exit 1
{
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  git rev-parse HEAD 2>/dev/null
} >"$work/env.txt" 2>&1
CUDA_VISIBLE_DEVICES=0 BUILD="$build" bash bench/trace_split.sh service "$work" &
svc=$!
CUDA_VISIBLE_DEVICES=1 BUILD="$build" bash bench/trace_split.sh torch "$work"
wait "$svc"
rm -f "$work"/*.pb
tar -C "$out" -czf "$out/trace_split.tgz" trace_split && rm -rf "$work"
