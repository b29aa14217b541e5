#!/usr/bin/env bash
# Where a program's always-on throughput loss comes from: the same program run, one arm after the
# other on one GPU:
#
#   off       the agent off (the service: linked, CUTRIAGE_ENABLE=0; PyTorch: not injected)
#   callbacks always-on with CUTRIAGE_TRACE=0 and CUTRIAGE_SELECT=none: the launch callbacks only
#             (no kernel records, so CUPTI does not instrument the kernels)
#   trace     always-on with CUTRIAGE_SELECT=none and CUTRIAGE_TRACE_DUTY=100%: the kernel trace
#             throughout and the launch callbacks
#   release0  always-on at the default budget, the range profiler released right after each
#             profiled launch (CUTRIAGE_RELEASE_MS=0): nothing costs outside the measured launches
#   default   always-on at the default budget, as shipped (the trace on 25% of every 60 s)
#   full      the same with the trace throughout (CUTRIAGE_TRACE_DUTY=100%, the default before
#             2026-11-30)
#   duty25    the same with CUTRIAGE_TRACE_DUTY=25% and CUTRIAGE_TRACE_PERIOD=DUTY_PERIOD (default
#             60, as shipped; 20 suits runs of a minute or two)
#   gate      default with the launch gate (CUTRIAGE_LAUNCH_GATE=1)
#   steps     default with steps (CUTRIAGE_STEP_STAGES=STEP_STAGES, default 64)
#   steps-gate  the same with the launch gate
#
#   ARMS="off callbacks trace" bash bench/overhead_parts.sh service|torch OUTDIR
#
# service: examples/service (build-service/, the agent linked) for SECONDS_PER_ARM (default 100)
# each; torch: bench/torch_loop.py TORCH_STEPS (default 45000, about 90 s) steps each, the agent
# injected from BUILD (default build-gpu). Runs on CUDA_VISIBLE_DEVICES as set; on a two-GPU
# machine two lanes (two calls with the arms in different orders) give each arm twice. Writes
# OUTDIR/parts.txt: per arm, the throughput line (requests/s or steady-state steps/s), the result
# (checksum or loss) and the agent's overhead line (what it measured and charged to its budget);
# and OUTDIR/clocks.csv: the SM clock every 500 ms, to see whether the GPU clocks down around a
# profiled launch (its wait leaves the GPU idle for hundreds of milliseconds).
set -u -o pipefail
program="$1"
out="$2"
seconds="${SECONDS_PER_ARM:-100}"
torch_steps="${TORCH_STEPS:-45000}"
build="${BUILD:-build-gpu}"
case "$program" in service | torch) ;; *) echo "program: service or torch" >&2; exit 2 ;; esac
. "$(dirname "$0")/lib.sh"
export BUILD="$build"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
gpu="${CUDA_VISIBLE_DEVICES:-0}"
nvidia-smi -i "$gpu" --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 500 \
  >"$out/clocks.csv" 2>/dev/null &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
for arm in ${ARMS:-off callbacks trace release0 default}; do
  pb="$out/$arm.pb"
  common="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_OUTPUT=$pb"
  case "$arm" in
    off) cfg="" ;;
    callbacks) cfg="$common;CUTRIAGE_TRACE=0;CUTRIAGE_SELECT=none" ;;
    trace) cfg="$common;CUTRIAGE_SELECT=none;CUTRIAGE_TRACE_DUTY=100%" ;;
    release0) cfg="$common;CUTRIAGE_RELEASE_MS=0" ;;
    default) cfg="$common" ;;
    full) cfg="$common;CUTRIAGE_TRACE_DUTY=100%" ;;
    duty25) cfg="$common;CUTRIAGE_TRACE_DUTY=25%;CUTRIAGE_TRACE_PERIOD=${DUTY_PERIOD:-60}" ;;
    gate) cfg="$common;CUTRIAGE_LAUNCH_GATE=1" ;;
    steps) cfg="$common;CUTRIAGE_STEP_STAGES=${STEP_STAGES:-64}" ;;
    steps-gate) cfg="$common;CUTRIAGE_STEP_STAGES=${STEP_STAGES:-64};CUTRIAGE_LAUNCH_GATE=1" ;;
    *) echo "arm: off, callbacks, trace, release0, default, full, duty25, gate, steps or steps-gate" >&2; exit 2 ;;
  esac
  echo "$(date -u +%H:%M:%S.%N | cut -c1-12) start $arm" >>"$out/parts.txt"
  if [ "$program" = service ]; then
    text=$(run_program service "$cfg" "$seconds")
    line=$(echo "$text" | grep -E '^service: ' | tail -1)
  else
    text=$(run_program torch "$cfg" "$torch_steps")
    line="$(echo "$text" | grep -E '^steps_per_s=' | tail -1) $(echo "$text" | grep -E '^final loss' | tail -1)"
  fi
  {
    echo "$(date -u +%H:%M:%S.%N | cut -c1-12) end $arm: $line"
    echo "$text" | grep -E "^cutriage: .*(error|warn|profil)" | cut -c1-200 | sed 's/^/  /'
    if [ -f "$pb" ]; then
      "$build/tools/cutriage" report "$pb" 2>/dev/null | grep -A3 "^overhead:" | sed 's/^/  /'
    fi
  } >>"$out/parts.txt"
done
