#!/usr/bin/env bash
# The agent's CPU per launch callback, two builds side by side (bench/launch_enter.cpp): runs the
# two binaries alternately ROUNDS times each (each run is itself the median of 5 rounds of CALLS
# callbacks) and prints the medians of the runs, per case and binary.
#
#   bash bench/launch_enter_ab.sh BEFORE_BIN AFTER_BIN [ROUNDS=5] [CALLS=1000000]
set -euo pipefail
before=$1 after=$2 rounds=${3:-5} calls=${4:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((i = 0; i < rounds; ++i)); do
  "$before" "$calls" >>"$tmp/before"
  "$after" "$calls" >>"$tmp/after"
done
python3 - "$tmp/before" "$tmp/after" <<'PY'
import re, statistics, sys
def cases(path):
    out = {}
    for line in open(path):
        m = re.match(r"(.*): ([0-9.]+) ns per call", line.strip())
        if m:
            out.setdefault(m.group(1), []).append(float(m.group(2)))
    return out
before, after = cases(sys.argv[1]), cases(sys.argv[2])
print("| case | before, ns | after, ns | runs |")
print("| --- | --- | --- | --- |")
for case in before:
    b, a = statistics.median(before[case]), statistics.median(after.get(case, [float("nan")]))
    print(f"| {case} | {b:.1f} | {a:.1f} | {len(before[case])} |")
PY
