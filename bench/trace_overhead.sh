#!/usr/bin/env bash
# What the always-running part of the agent costs: the kernel trace (CUPTI Activity API) and the
# launch callbacks, with nothing replayed (CUTRIAGE_SELECT=none), and the default run (trace +
# the top 5 families profiled), against a plain run, side by side in one run, medians of RUNS.
#
#   bash bench/trace_overhead.sh [BUILD_DIR]     # BUILD_DIR default build-gpu; results under $OUT
#
# 1. CPU per launch: bench_launch_rate times only its launch calls (empty kernels, batches of 256);
#    added = injected - plain, per launch, on the application's thread.
# 2. Many tiny kernels: zoo_tiny_kernels (20,000 launches), whole-run wall time.
# 3. PyTorch training loop (bench/torch_loop.py, 300 steps): steady-state steps/s measured by the
#    script after warm-up, so the fixed start-up cost (CUPTI initialisation) is reported apart.
# Writes overhead.md (markdown table) and raw.txt.
set -u -o pipefail
build="${1:-build-gpu}"
out="${OUT:-$PWD/bench-out}"
runs="${RUNS:-5}"
mkdir -p "$out/overhead"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
lib="$PWD/$build/agent/libcutriage.so"
raw="$out/overhead/raw.txt"
: >"$raw"
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }
secs() { python3 -c "print('%.3f' % ($2 - $1))"; }

# mode -> environment prefix
run_mode() {  # run_mode MODE CMD... ; stdout+stderr of the program on stdout
  local mode=$1
  shift
  case "$mode" in
    plain) "$@" 2>&1 ;;
    trace) CUDA_INJECTION64_PATH="$lib" CUTRIAGE_SELECT=none CUTRIAGE_SUMMARY=0 \
             CUTRIAGE_OUTPUT="$out/overhead/trace-%p.pb" "$@" 2>&1 ;;
    default) CUDA_INJECTION64_PATH="$lib" CUTRIAGE_SUMMARY=0 \
             CUTRIAGE_OUTPUT="$out/overhead/default-%p.pb" "$@" 2>&1 ;;
  esac
}

declare -A cpu wall tiny sps torchwall
for r in $(seq "$runs"); do
  for mode in plain trace default; do
    line=$(run_mode "$mode" "$PWD/$build/bench/bench_launch_rate" 200000 | grep launches=)
    echo "launch_rate $mode run$r $line" >>"$raw"
    cpu[$mode]+="$(sed -E 's/.*cpu_ns_per_launch=([0-9.]+).*/\1/' <<<"$line") "
    wall[$mode]+="$(sed -E 's/.*wall_ns_per_launch=([0-9.]+).*/\1/' <<<"$line") "
    t=$(now); run_mode "$mode" "$PWD/$build/examples/zoo/zoo_tiny_kernels" >/dev/null; d=$(secs "$t" "$(now)")
    echo "tiny_kernels $mode run$r wall_s=$d" >>"$raw"
    tiny[$mode]+="$d "
    t=$(now); line=$(run_mode "$mode" python3 "$PWD/bench/torch_loop.py" 300 | grep steps_per_s); d=$(secs "$t" "$(now)")
    echo "torch_loop $mode run$r $line wall_s=$d" >>"$raw"
    sps[$mode]+="$(sed -E 's/.*steps_per_s=([0-9.]+).*/\1/' <<<"$line") "
    torchwall[$mode]+="$d "
    rm -f "$out"/overhead/*.pb
  done
done
med() { tr ' ' '\n' <<<"$1" | grep -v '^$' | median; }
pct() { python3 -c "print('%+.2f%%' % (100.0 * ($2 - $1) / $1))"; }
{
  echo "| measure | plain | trace only (select none) | default (trace + top 5 profiled) |"
  echo "|---|---|---|---|"
  p=$(med "${cpu[plain]}"); t=$(med "${cpu[trace]}"); d=$(med "${cpu[default]}")
  echo "| CPU ns per launch (launch_rate, 200k empty kernels) | $p | $t ($(python3 -c "print('%+.0f' % ($t - $p))") ns) | $d ($(python3 -c "print('%+.0f' % ($d - $p))") ns) |"
  p=$(med "${wall[plain]}"); t=$(med "${wall[trace]}"); d=$(med "${wall[default]}")
  echo "| wall ns per launch call | $p | $t | $d |"
  p=$(med "${tiny[plain]}"); t=$(med "${tiny[trace]}"); d=$(med "${tiny[default]}")
  echo "| zoo_tiny_kernels wall s (20k launches) | $p | $t ($(pct "$p" "$t")) | $d ($(pct "$p" "$d")) |"
  p=$(med "${sps[plain]}"); t=$(med "${sps[trace]}"); d=$(med "${sps[default]}")
  echo "| torch_loop steps/s (steady state) | $p | $t ($(pct "$p" "$t")) | $d ($(pct "$p" "$d")) |"
  p=$(med "${torchwall[plain]}"); t=$(med "${torchwall[trace]}"); d=$(med "${torchwall[default]}")
  echo "| torch_loop wall s (300 steps, incl. start-up) | $p | $t ($(pct "$p" "$t")) | $d ($(pct "$p" "$d")) |"
} >"$out/overhead/overhead.md"
cat "$out/overhead/overhead.md"
