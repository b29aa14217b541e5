#!/usr/bin/env python3
"""bench/trace_split.py, the analysis behind BENCHMARKS.md's "what the trace costs" table.

    python3 test_trace_split.py REPO_ROOT

1. The H200 outputs it was run on (tests/data/always_on/trace-duty/*-split.txt) give the results
   committed beside them, line for line.
2. SYNTHETIC: a made-up run whose throughput is exactly 2% lower while traced reads 2.00%, and
   windows that straddle a switch are left out.
3. Without window lines or without pause lines it exits non-zero saying what to set.
"""
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
script = os.path.join(root, "bench", "trace_split.py")
data = os.path.join(root, "tests", "data", "always_on", "trace-duty")
failed = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failed.append(what)


def run(path):
    p = subprocess.run([sys.executable, script, path], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


for program in ("service", "torch"):
    rc, out, err = run(os.path.join(data, program + "-split.txt"))
    want = open(os.path.join(data, program + "-split-result.txt")).read()
    check(rc == 0 and out == want, f"{program}: the committed result again ({err.strip()[:200]})")

# SYNTHETIC: 10 s cycles, traced 5 s then paused 5 s, 3000 units/s paused and 2940 traced, a
# window every 250 ms offset 100 ms from the switches. The windows across a switch get no units
# at all: they must be left out, or the loss would read far above 2%.
ns = 1_000_000_000
ms = 1_000_000
t0 = 10 ** 12
lines = []
for k in range(12):
    lines.append("cutriage: kernel trace paused at monotonic %d" % (t0 + 5 * ns + k * 10 * ns))
    lines.append("cutriage: kernel trace resumed at monotonic %d" % (t0 + 10 * ns + k * 10 * ns))
t = t0 + 100 * ms
lines.append("window %d 0" % t)
while t < t0 + 120 * ns:
    start, t = t, t + 250 * ms
    a, b = (start - t0) % (10 * ns), (t - t0) % (10 * ns)
    if (a < 5 * ns) != (b <= 5 * ns) or b < a:  # across a pause or a resume
        units = 0
    else:
        units = 735 if a < 5 * ns else 750
    lines.append("window %d %d" % (t, units))
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("\n".join(lines) + "\n")
    synthetic = f.name
rc, out, err = run(synthetic)
last = out.strip().splitlines()[-1] if out.strip() else ""
check(rc == 0 and "median loss while traced +2.00%" in last, f"synthetic 2%: {last or err.strip()}")
check("pooled: paused 3000.0/s, traced 2940.0/s, +2.00%" in last, "synthetic: pooled rates")

with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("\n".join(l for l in lines if not l.startswith("window")) + "\n")
    no_windows = f.name
rc, out, err = run(no_windows)
check(rc != 0 and "SERVICE_WINDOW_MS" in err, f"no window lines: {err.strip()}")
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("\n".join(l for l in lines if l.startswith("window")) + "\n")
    no_pauses = f.name
rc, out, err = run(no_pauses)
check(rc != 0 and "CUTRIAGE_LOG_LEVEL=debug" in err, f"no pause lines: {err.strip()}")
for p in (synthetic, no_windows, no_pauses):
    os.unlink(p)
sys.exit(1 if failed else 0)
