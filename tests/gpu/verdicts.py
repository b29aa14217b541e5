#!/usr/bin/env python3
"""The verdicts of a cutriage file, one line per kernel: what a change to the agent must not move.

    cutriage json FILE.pb | python3 tests/gpu/verdicts.py
    python3 tests/gpu/verdicts.py --compare BEFORE AFTER    # two outputs of the above

--compare prints the kernels whose verdict changed (exit 1 when any did) and, apart, those
profiled in only one of the two runs: which families a run profiles depends on when the trace
ranked them (a directly injected program is ranked at its first quiet wait), not on the engine.
The first line names the GPUs the file's session saw. When the two runs saw different GPUs (the
committed files come from the H200; the lent machine is at times an H100), the differences are
listed but do not fail: the same counters give the same verdict, but another chip gives other
counters (zoo_transpose_padded reads 84% of DRAM peak on the H100, below 80% on the H200).

Reads `cutriage json` on stdin. A kernel's line is its last profiled record (the highest revision
of its latest launch): the function name, the status, the classification, the primary limiter and
the deciding rule, sorted by name. Durations, counter values and trust notes are left out: they vary
from run to run on the same code.
"""
import json
import sys


def main():
    doc = json.load(sys.stdin)
    interned = {}
    latest = {}  # mangled name -> (launch index, revision, line)
    gpus = []
    for rec in doc.get("records", []):
        if "session" in rec:
            gpus = [g.get("name", "?") for g in rec["session"].get("gpus", [])]
        if "interned" in rec:
            interned[rec["interned"]["id"]] = rec["interned"]["value"]
        k = rec.get("kernel")
        if k is None:
            continue
        name = interned.get(k.get("functionNameIid", ""), "?")
        mangled = interned.get(k.get("mangledNameIid", ""), name)
        d = k.get("diagnosis", {})
        line = " | ".join([name, k.get("status", "?"), d.get("classification", "-"),
                           d.get("primaryLimiter", "-"), d.get("primaryRuleId", "-")])
        key = (int(k.get("launchIndex", "0")), int(k.get("revision", 0)))
        if mangled not in latest or key >= latest[mangled][0]:
            latest[mangled] = (key, line)
    print("# gpus: " + (", ".join(gpus) if gpus else "unknown"))
    for line in sorted(v[1] for v in latest.values()):
        print(line)
    return 0


def compare(before_path, after_path):
    def read(path):
        gpus, lines = "unknown", {}
        with open(path) as f:
            for line in f:
                if line.startswith("# gpus: "):
                    gpus = line[len("# gpus: "):].strip()
                elif line.strip():
                    lines[line.split(" | ", 1)[0]] = line.rstrip("\n")
        return gpus, lines
    (gpus_before, before), (gpus_after, after) = read(before_path), read(after_path)
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    for k in changed:
        print("changed: " + before[k] + "\n     ->  " + after[k])
    for k in sorted(before.keys() - after.keys()):
        print("only before: " + k[:160])
    for k in sorted(after.keys() - before.keys()):
        print("only after: " + k[:160])
    summary = "%d kernels in both, %d changed" % (len(before.keys() & after.keys()), len(changed))
    if gpus_before != gpus_after:
        print(summary + " (other GPU: %s before, %s now; not failing)" % (gpus_before, gpus_after))
        return 0
    print(summary)
    return 1 if changed else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    sys.exit(main())
