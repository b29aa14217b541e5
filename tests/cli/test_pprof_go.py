#!/usr/bin/env python3
"""`cutriage pprof` output read by the real pprof: `go tool pprof` (Debian golang-go).

For each committed capture with PC samples (the H200's torch_loop.pb first: kernels sampled at
different periods), `cutriage pprof` writes the profile and `go tool pprof -raw` reads it back; its
sample totals must be what `cutriage report` states for the file: the sum over the sampled launches
of "PC sampling of launch #N: T samples", and in cycles the sum of T x 2^P ("one sample per SM
every 2^P cycles"), the profile's default sample type. `go tool pprof -top` must read it too, and
name cycles as the default. The tree of stacks is checked by the tool tests (test_pprof.cpp).

usage: test_pprof_go.py CUTRIAGE FILE.pb... Exits 77 (CTest: skipped) when `go` is not installed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

cutriage, files = sys.argv[1], sys.argv[2:]
go = os.environ.get("CUTRIAGE_GO") or shutil.which("go")
if not go:
    print("go not found (Debian: golang-go, cmake/install-deps.sh): skipped")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="cutriage-pprof-go-")
env = dict(os.environ)
# pprof keeps nothing of the user's: its cache, temporary files and home are the test's own. No
# symbolization: the profile carries its functions, and nothing may be fetched.
env.update({"HOME": tmp, "GOCACHE": os.path.join(tmp, "gocache"), "PPROF_TMPDIR": tmp,
            "CUTRIAGE_NVDISASM": os.path.join(tmp, "no-nvdisasm")})

TOTALS = re.compile(r"PC sampling of launch #(\d+): ([\d,]+) samples \(([\d,]+) stalls\)"
                    r"(?:, [\d,]+ dropped \([^)]*\))?, one sample per SM every 2\^(\d+) cycles")


def run(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"FAIL {' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def report_totals(path):
    """Samples and cycles the report states: one totals line per sampled launch."""
    text = re.sub(r"\s+", " ", run(cutriage, "report", path, "--verbose"))
    launches = TOTALS.findall(text)
    samples = sum(int(t.replace(",", "")) for _, t, _, _ in launches)
    cycles = sum(int(t.replace(",", "")) << int(p) for _, t, _, p in launches)
    return len(launches), samples, cycles


def pprof_raw_totals(profile):
    """Sums of each sample type over `go tool pprof -raw`'s sample lines."""
    text = run(go, "tool", "pprof", "-raw", "-symbolize=none", profile)
    lines = text.splitlines()
    start = lines.index("Samples:")
    types = lines[start + 1].split()
    sums = [0] * len(types)
    for line in lines[start + 2:]:
        if line.startswith("Locations"):
            break
        m = re.match(r"^\s*((?:\d+\s+)*\d+):", line)
        if m:
            for i, v in enumerate(m.group(1).split()):
                sums[i] += int(v)
    return dict(zip((t.split("/")[0] for t in types), sums))


failed = 0
for path in files:
    name = os.path.basename(path)
    profile = os.path.join(tmp, name + ".pb.gz")
    launches, samples, cycles = report_totals(path)
    if launches == 0:
        print(f"FAIL {name}: the report states no sampled launch")
        failed += 1
        continue
    run(cutriage, "pprof", path, "-o", profile)
    raw = pprof_raw_totals(profile)
    if raw.get("samples") != samples or raw.get("cycles") != cycles:
        print(f"FAIL {name}: go tool pprof -raw sums {raw}; cutriage report states {samples} samples, "
              f"{cycles} cycles over {launches} sampled launches")
        failed += 1
        continue
    top = run(go, "tool", "pprof", "-top", "-symbolize=none", profile)
    if "Type: cycles" not in top or not re.search(r"of [\d.e+]+\s*total", top):
        print(f"FAIL {name}: go tool pprof -top does not show the cycles total:\n{top[:600]}")
        failed += 1
        continue
    print(f"ok   {name}: {launches} sampled launches, {samples} samples, {cycles} cycles in both")

shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(files) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
