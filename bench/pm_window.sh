#!/usr/bin/env bash
# Always-on's PM routing window (issue 22) on both programs at the default budget: when the
# families are routed, and what it costs the application. Run on the GPU machine after
#   bash tests/gpu/build_with_service.sh build-gpu LOGS -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF
#
#   bash bench/pm_window.sh [BUILD_DIR] [SERVICE_BIN]        # results under $OUT/pm_window
#
# 1. The example service, always-on with the log at info, SVC_SECONDS (120): the PM window's lines,
#    the routed notices (seconds after the start) and the report's overhead line.
# 2. The service agent off vs always-on, ROUNDS (2) rounds of AB_SECONDS (30) each: requests/s and
#    the checksum, which must match.
# 3. bench/torch_loop.py through tests/gpu/run_always_on_pm.sh (TORCH_STEPS 60000, AB_STEPS 20000).
set -u -o pipefail
build="${1:-build-gpu}"
svc="${2:-build-service/cutriage_service}"
out="${OUT:-$PWD/bench-out}/pm_window"
svc_seconds="${SVC_SECONDS:-120}"
ab_seconds="${AB_SECONDS:-30}"
rounds="${ROUNDS:-2}"
mkdir -p "$out"
cli="$build/tools/cutriage"
[ -x "$svc" ] && [ -x "$cli" ] || { echo "no $svc or $cli: build them first (see the header)" >&2; exit 2; }
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0"

echo "== the service, always-on, ${svc_seconds} s"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_LOG_LEVEL=info;CUTRIAGE_OUTPUT=$out/svc-pm.pb" "$svc" "$svc_seconds" \
  >"$out/svc-pm.out" 2>"$out/svc-pm.log"
echo "exit $?: $(cat "$out/svc-pm.out")"
grep -E "PM window|verdict routed|diagnosis complete|could not" "$out/svc-pm.log" | cut -c1-260
"$cli" report "$out/svc-pm.pb" >"$out/svc-pm.report.txt" 2>&1
grep -A1 "^overhead" "$out/svc-pm.report.txt"

echo "== the service, agent off vs always-on, ${rounds} rounds of ${ab_seconds} s"
for r in $(seq 1 "$rounds"); do
  off=$(SERVICE_CUTRIAGE="CUTRIAGE_ENABLE=0" "$svc" "$ab_seconds" 2>/dev/null)
  on=$(SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/svc-ab-$r.pb" "$svc" "$ab_seconds" 2>/dev/null)
  echo "round $r off: $off"
  echo "round $r on:  $on"
  [ "${off##*checksum }" = "${on##*checksum }" ] || echo "CHECKSUM DIFFERS in round $r"
done

echo "== PyTorch"
TORCH_STEPS="${TORCH_STEPS:-60000}" AB_STEPS="${AB_STEPS:-20000}" bash tests/gpu/run_always_on_pm.sh "$build" "$out/torch"
