#!/usr/bin/env python3
"""The verdicts of a cutriage file, one line per kernel: what a change to the agent must not move.

    cutriage json FILE.pb | python3 tests/gpu/verdicts.py

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
    for rec in doc.get("records", []):
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
    for line in sorted(v[1] for v in latest.values()):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
