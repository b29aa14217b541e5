#!/usr/bin/env python3
"""What profiling each family at its second launch, before any ranking, would have caught.

    python3 bench/early_picks.py [--cutriage PATH] [--picks K] FILE.pb [FILE.pb...]

Reads first-run files of `cutriage run --rerun never` (tests/data/rerun/*-once.pb): the launch
order comes from the trace's kernel executions (by correlation id), the families' GPU-time shares
from the file's trace summary. A family is "picked" at its second launch while fewer than K
families have been (K = 5, deep mode's top:5): the candidate way for a short script's top family
to get counters in the first run, without `--rerun auto` running the program again (issue 21).
Prints, per file, the families by share with their launch counts and whether a pick caught them.
No GPU needed; a replay of what the trace shows, not a measurement of cost.
"""
import argparse
import json
import subprocess
import sys


def load(cli, path):
    out = subprocess.run([cli, "json", path], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def analyse(doc, picks_allowed):
    interned, names, executions, shares = {}, {}, [], {}
    for rec in doc.get("records", []):
        if "interned" in rec:
            interned[rec["interned"]["id"]] = rec["interned"]["value"]
        elif "family" in rec:
            names[rec["family"]["id"]] = rec["family"].get("displayNameIid", "")
        elif "trace" in rec:
            executions.extend(rec["trace"].get("kernels", []))
        elif "traceSummary" in rec:
            for f in rec["traceSummary"].get("families", []):
                shares[f["familyId"]] = float(f.get("timeShare", 0.0))
    executions.sort(key=lambda k: int(k["correlationId"]))
    launches, picked = {}, []
    for k in executions:
        fid = k["familyId"]
        launches[fid] = launches.get(fid, 0) + 1
        if launches[fid] == 2 and len(picked) < picks_allowed:
            picked.append(fid)
    ranked = sorted(shares, key=lambda f: -shares[f])
    return [(fid, shares[fid], launches.get(fid, 0), fid in picked, interned.get(names.get(fid, ""), "?"))
            for fid in ranked], picked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cutriage", default="build/tools/cutriage")
    ap.add_argument("--picks", type=int, default=5)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for path in args.files:
        rows, picked = analyse(load(args.cutriage, path), args.picks)
        print("%s: %d families, %d picked at their second launch" % (path, len(rows), len(picked)))
        for i, (fid, share, n, caught, name) in enumerate(rows[:args.picks]):
            print("  #%d %5.1f%%  %3d launches  %-7s %s" % (i + 1, 100 * share, n, "picked" if caught else "-",
                                                         name[:70]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
