#!/usr/bin/env bash
# The always-on GPU run (issue 6), on the GPU machine from the repository root, in two calls of the
# device tool (each under its 10-minute limit; the build stays between them):
#
#   STEP=1 bash tests/gpu/run_always_on.sh   # build, install, the service; the whole CTest suite;
#                                            # the benchmark's side-by-side rounds
#   STEP=2 bash tests/gpu/run_always_on.sh   # the benchmark's long runs (time to diagnosis, verdicts)
#
# Logs and results under $OUT (tarred: the device tool brings back few files).
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out/logs"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu
step="${STEP:-1}"
persist="$PWD/.ao-bench"  # survives between the two calls (ignored by git)
mkdir -p "$persist"
if [ "$step" = 1 ]; then
  {
    date -u +"date: %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
    git log -1 --format="commit %H" 2>/dev/null
  } >"$out/env.txt" 2>&1
  t0=$(date +%s)
  bash tests/gpu/build_with_service.sh "$build" "$out/logs" -DCUTRIAGE_WERROR=ON || exit 1
  echo "build: $(( $(date +%s) - t0 )) s"
  # CTEST_REGEX: only those tests (a rerun after a fix); the whole suite otherwise.
  ctest --test-dir "$build" -j8 --output-on-failure ${CTEST_REGEX:+-R "$CTEST_REGEX"} >"$out/logs/ctest.log" 2>&1
  echo "ctest: $(grep -E 'tests passed|tests failed' "$out/logs/ctest.log")"
  grep -E "\*\*\*Failed|Failed  |Exception" "$out/logs/ctest.log" | head -20
  grep -A40 "range_profiler_smoke" "$out/logs/ctest.log" | grep -E "C #|multi-pass|plan C" | head
  # PHASE=all: rounds and long runs in this one call (when they fit its 10 minutes).
  OUT="$persist" PHASE="${PHASE:-rounds}" bash bench/always_on.sh "$build" build-service/cutriage_service
  grep -E "^round|DIFFERS" "$persist/always_on/raw.txt" | tail -20
else
  OUT="$persist" PHASE=long bash bench/always_on.sh "$build" build-service/cutriage_service
fi
tar -C "$persist" -czf "$out/always_on.tgz" always_on
tar -C "$out" -czf "$out/logs.tgz" logs env.txt 2>/dev/null
