#!/usr/bin/env bash
# How many stages adaptive collection took per kernel in deep mode, and what a later stage's start
# cost (issue 21: whether adaptive sets save replay passes), read from the H200 deep-mode captures
# committed under tests/data/ (adaptive was deep mode's default when they were made). Needs no GPU:
#
#   bash bench/stage_counts.sh [BUILD_DIR]      # default build; prints a markdown table
#
# Per profiled family: the stages its record combines ("collected launch #a + #b": two) and the
# last stage's replay passes; the first stage is 9 passes on GH100 (first_stage_counters). For the
# records that carry a cost (captures made since the cost phases), the last stage's start: over
# 100 ms is a newly enabled range-profiler object (a new configuration), under 1 ms an object
# reused from the previous launch's list.
set -u -o pipefail
build="${1:-build}"
cli="$build/tools/cutriage"
[ -x "$cli" ] || { echo "no $cli: build first" >&2; exit 2; }
files=(tests/data/rerun/conv2d.pb tests/data/rerun/matmul10.pb tests/data/agent/torch_loop.pb
       tests/data/agent/prog_*.pb tests/data/agent/zoo_*.pb tests/data/graphs/graph_mlp-rerun.pb
       tests/data/graphs/compile_reduce_overhead-rerun.pb)
for f in "${files[@]}"; do
  # One line per record: its "collected" line and, where present, its "cost" line.
  "$cli" report --verbose "$f" 2>/dev/null | awk -v f="$(basename "$f")" '
    /^    collected launch/ { if (c != "") print f "\t" c "\t"; c = $0; next }
    /^    cost / && c != "" { print f "\t" c "\t" $0; c = ""; next }
    END { if (c != "") print f "\t" c "\t" }'
done | python3 -c "$(cat <<'PY'
import collections, re, sys
stages = collections.Counter()
last = collections.Counter()
new_start, reused = [], 0
files = set()
for line in sys.stdin:
    f, collected, cost = (line.rstrip("\n").split("\t") + ["", ""])[:3]
    m = re.search(r"collected launch ((?:#\d+(?: \+ )?)+)(?:, the last in (\d+)|, in (\d+))", collected)
    if not m:
        continue
    files.add(f)
    n = m.group(1).count("#")
    stages[n] += 1
    if n > 1 and m.group(2):
        last[int(m.group(2))] += 1
    s = re.search(r"start ([\d.]+) (ms|us)", cost)
    if n > 1 and s:
        ms = float(s.group(1)) * (1 if s.group(2) == "ms" else 1e-3)
        if ms >= 100:
            new_start.append(ms)
        else:
            reused += 1
total = sum(stages.values())
print("| profiled families | 1 stage | 2 stages | 3 stages | last stage's passes (families) | later stage's start: new object | reused object |")
print("|---|---|---|---|---|---|---|")
print("| %d (%d files) | %d | %d | %d | %s | %d: %s ms | %d |" % (
    total, len(files), stages[1], stages[2], stages[3],
    ", ".join("%d (%d)" % (p, last[p]) for p in sorted(last)), len(new_start),
    ("%.0f-%.0f" % (min(new_start), max(new_start))) if new_start else "-", reused))
PY
)"
