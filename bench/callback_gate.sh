#!/usr/bin/env bash
# What CUPTI's launch callbacks cost a launch when enabled, disabled again and switched
# (bench/callback_gate.cu), ROUNDS processes one after the other, then the medians per phase.
#
#   bash bench/callback_gate.sh BUILD [ROUNDS] [LAUNCHES]    on the GPU machine; output on stdout
set -u -o pipefail
build="${1:-build-gpu}"
rounds="${2:-3}"
launches="${3:-200000}"
bin="$build/bench/bench_callback_gate"
[ -x "$bin" ] || { echo "no $bin: build with CUTRIAGE_BUILD_EXAMPLES=ON" >&2; exit 2; }
tmp=$(mktemp)
for r in $(seq "$rounds"); do
  echo "== round $r"
  timeout 300 "$bin" "$launches" | tee -a "$tmp"
done
echo "== medians of $rounds rounds (CPU ns per launch)"
python3 - "$tmp" <<'PY'
import re, statistics, sys
by = {}
for line in open(sys.argv[1]):
    m = re.match(r"phase=(\S+) cpu_ns_per_launch=([\d.]+)", line)
    if m:
        by.setdefault(m.group(1), []).append(float(m.group(2)))
for name, v in by.items():
    print(f"{name:14s} {statistics.median(v):8.1f}  ({' '.join(f'{x:.1f}' for x in v)})")
PY
rm -f "$tmp"
