#!/usr/bin/env bash
# Where the example service's always-on throughput loss comes from: the same service run, one arm
# after the other on one GPU, each for SECONDS (default 100):
#
#   off       agent linked but CUTRIAGE_ENABLE=0
#   callbacks always-on with CUTRIAGE_TRACE=0 and CUTRIAGE_SELECT=none: the launch callbacks only
#             (no kernel records: CUPTI does not instrument the kernels)
#   trace     always-on with CUTRIAGE_SELECT=none: the kernel trace and launch callbacks only
#   release0  always-on at the default budget, the range profiler released right after each
#             profiled launch (CUTRIAGE_RELEASE_MS=0): nothing costs outside the measured launches
#   default   always-on at the default budget, as shipped
#
#   ARMS="off trace release0" bash bench/service_overhead_parts.sh OUTDIR
#
# Runs on CUDA_VISIBLE_DEVICES as set; on a two-GPU machine two lanes (two calls with different
# arm orders) give each arm twice. Writes OUTDIR/parts.txt: per arm, requests/s, the checksum and
# the agent's overhead line (what it measured and charged to its budget); and OUTDIR/clocks.csv:
# the SM clock every 500 ms, to see whether the GPU clocks down around a profiled launch (the wait
# leaves the GPU idle for hundreds of milliseconds).
set -u -o pipefail
out="$1"
seconds="${SECONDS_PER_ARM:-100}"
build="${BUILD:-build-gpu}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
gpu="${CUDA_VISIBLE_DEVICES:-0}"
nvidia-smi -i "$gpu" --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 500 \
  >"$out/clocks.csv" 2>/dev/null &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
for arm in ${ARMS:-off callbacks trace release0 default}; do
  pb="$out/$arm.pb"
  case "$arm" in
    off) cfg="CUTRIAGE_ENABLE=0" ;;
    callbacks) cfg="CUTRIAGE_MODE=always-on;CUTRIAGE_TRACE=0;CUTRIAGE_SELECT=none;CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$pb" ;;
    trace) cfg="CUTRIAGE_MODE=always-on;CUTRIAGE_SELECT=none;CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$pb" ;;
    release0) cfg="CUTRIAGE_MODE=always-on;CUTRIAGE_RELEASE_MS=0;CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$pb" ;;
    default) cfg="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$pb" ;;
    *) echo "arm: off, callbacks, trace, release0 or default" >&2; exit 2 ;;
  esac
  echo "$(date -u +%H:%M:%S.%N | cut -c1-12) start $arm" >>"$out/parts.txt"
  text=$(SERVICE_CUTRIAGE="$cfg" build-service/cutriage_service "$seconds" 2>&1)
  {
    echo "$(date -u +%H:%M:%S.%N | cut -c1-12) end $arm: $(echo "$text" | grep -E '^service: ' | tail -1)"
    echo "$text" | grep -E "^cutriage: .*(error|warn|profil)" | cut -c1-200 | sed 's/^/  /'
    if [ -f "$pb" ]; then
      "$build/tools/cutriage" report "$pb" 2>/dev/null | grep -A1 "^overhead:" | sed 's/^/  /'
    fi
  } >>"$out/parts.txt"
done
