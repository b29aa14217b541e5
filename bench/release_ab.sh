#!/usr/bin/env bash
# What an enabled but idle range profiler costs, and what releasing it buys (CUTRIAGE_RELEASE_MS),
# on the GPU machine from the repository root, in one call:
#
#   bash bench/release_ab.sh            # output on stdout, agent files under $OUT
#
# 1. bench/switch_cost.cu idle: launches/s with no range-profiler object, with one enabled and
#    configured but idle, and after Disable.
# 2. Builds the agent, installs it, builds the example service against it; then the service for
#    AB_SECONDS with the agent off and always-on at AB_BUDGET (releasing its profiler after the
#    default CUTRIAGE_RELEASE_MS), one after the other; requests/s and the checksum of each.
set -u -o pipefail
out="${OUT:-$PWD/bench-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
seconds="${AB_SECONDS:-75}"
budget="${AB_BUDGET:-2%}"
date -u +"date: %Y-%m-%dT%H:%M:%SZ"; git log -1 --format="commit %H" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
MODES=idle bash bench/switch_cost.sh "" "${IDLE_ROUNDS:-2}" 2>&1 | grep -E "==|idle round|FAIL"
build=build-gpu
bash tests/gpu/build_with_service.sh "$build" "$out" || exit 1
svc=build-service/cutriage_service
echo "service off: $(SERVICE_CUTRIAGE="CUTRIAGE_ENABLE=0" "$svc" "$seconds" 2>&1 | tail -1)"
echo "service always-on $budget: $(SERVICE_CUTRIAGE="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_BUDGET=$budget;CUTRIAGE_LOG_LEVEL=info;CUTRIAGE_OUTPUT=$out/svc-release.pb" \
  "$svc" "$seconds" 2>"$out/svc-release.log" | tail -1)"
"$build/tools/cutriage" report "$out/svc-release.pb" 2>&1 | grep -E "^overhead|^ +\(|^launches|^info"
python3 tests/data/always_on/strip_timeline.py "$out/svc-release.pb" "$out/svc-release.stripped.pb" && rm -f "$out/svc-release.pb"
