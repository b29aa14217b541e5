#!/usr/bin/env bash
# What the kernel trace costs a program, inside one run (bench/trace_split.py explains the method):
# always-on with nothing profiled (CUTRIAGE_SELECT=none) and the trace on half of every
# SPLIT_PERIOD (default 10) seconds, the program printing its throughput every 250 ms.
#
#   bash bench/trace_split.sh service OUTDIR   # examples/service (build-service/), SPLIT_SECONDS (150)
#   bash bench/trace_split.sh torch OUTDIR     # bench/torch_loop.py, SPLIT_TORCH_STEPS (80000) steps,
#                                              # the agent injected from BUILD (build-gpu)
#
# Writes OUTDIR/PROGRAM-split.txt (the program's output, the agent's debug lines included) and
# OUTDIR/PROGRAM-split-result.txt (per cycle and overall: the rates traced and paused).
set -u -o pipefail
program="$1"
out="$2"
period="${SPLIT_PERIOD:-10}"
build="${BUILD:-build-gpu}"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$out"
text="$out/$program-split.txt"
cfg="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_SELECT=none;CUTRIAGE_TRACE_DUTY=50%"
cfg="$cfg;CUTRIAGE_TRACE_PERIOD=$period;CUTRIAGE_LOG_LEVEL=debug;CUTRIAGE_OUTPUT=$out/$program-split.pb"
case "$program" in
  service) length="${SPLIT_SECONDS:-150}" ;;
  torch) length="${SPLIT_TORCH_STEPS:-80000}" ;;
  *) echo "program: service or torch" >&2; exit 2 ;;
esac
. "$(dirname "$0")/lib.sh"
export BUILD="$build"
SERVICE_WINDOW_MS=250 TORCH_LOOP_WINDOW_MS=250 run_program "$program" "$cfg" "$length" >"$text"
python3 bench/trace_split.py "$text" >"$out/$program-split-result.txt" 2>&1
cat "$out/$program-split-result.txt"
