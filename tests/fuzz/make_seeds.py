#!/usr/bin/env python3
"""Derives the committed ncu-CSV fuzz seeds (tests/fuzz/seeds/ncu_csv/) from the H200 captures.

The captures (tests/data/ncu/zoo/*.csv) have ~2,400 columns each (170 KB): as fuzz inputs they are
slow to run and most mutations land in numbers nothing reads. The seeds keep, per capture, the
identity columns, the launch__* columns, the metrics the importer itself reads (quoted names in
tools/src/ncu_csv.cpp) and every metric some rule reads (`cutriage metrics`), in the capture's own
order, header, units row and data rows unchanged.

Run after the captures or the rules change:
    python3 tests/fuzz/make_seeds.py build/tools/cutriage
"""
import csv
import io
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[2]
cli = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/tools/cutriage")
read = set(subprocess.run([cli, "metrics"], check=True, capture_output=True, text=True).stdout.split())
read |= set(re.findall(r'"([a-z0-9_]+__[a-z0-9_.]+)"', (root / "tools/src/ncu_csv.cpp").read_text()))
out_dir = root / "tests/fuzz/seeds/ncu_csv"
out_dir.mkdir(parents=True, exist_ok=True)


def keep(name: str) -> bool:
    if name.startswith("derived_tempMetric"):
        return False  # ncu's scratch columns
    if "__" not in name:
        return True  # ID, Kernel Name, Grid Size, CC, ...
    return name in read or name.startswith("launch__")


for capture in sorted((root / "tests/data/ncu/zoo").glob("*.csv")):
    rows = list(csv.reader(io.StringIO(capture.read_text(), newline="")))
    columns = [i for i, name in enumerate(rows[0]) if keep(name)]
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for row in rows:
        writer.writerow([row[i] if i < len(row) else "" for i in columns])
    (out_dir / capture.name).write_text(buf.getvalue())
    print(f"{capture.name}: {len(columns)} of {len(rows[0])} columns, {len(buf.getvalue())} bytes")
