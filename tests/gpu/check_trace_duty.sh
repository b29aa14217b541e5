#!/usr/bin/env bash
# The duty-cycled kernel trace on the GPU (CUTRIAGE_TRACE_DUTY): the example service always-on for
# DUTY_SECONDS (default 16) with the trace on 1 s of every 4 s (25%), and once with the full trace.
# Checks, from the output files: one trace_duty notice; the device timeline's untraced time is
# most of the run and no idle gap is longer than the paused 3 s could explain; fewer kernel
# executions traced than launches; the full-trace run has no untraced time; results unchanged.
# Needs the build from tests/gpu/build_with_service.sh (BUILD, default build-gpu). Files under
# $OUT/trace_duty (or ./gpu-out/trace_duty). Exit status: 0 all checks passed, 1 otherwise.
set -u -o pipefail
build="${BUILD:-build-gpu}"
out="${OUT:-$PWD/gpu-out}/trace_duty"
seconds="${DUTY_SECONDS:-16}"
mkdir -p "$out"
rm -f "$out"/*.pb
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_LOG_LEVEL=info"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/duty.pb;CUTRIAGE_TRACE_DUTY=25%;CUTRIAGE_TRACE_PERIOD=4" \
  build-service/cutriage_service "$seconds" >"$out/duty.out" 2>"$out/duty.log"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/full.pb;CUTRIAGE_TRACE_DUTY=100%" \
  build-service/cutriage_service "$seconds" >"$out/full.out" 2>"$out/full.log"
for run in duty full; do
  "$build/tools/cutriage" json "$out/$run.pb" >"$out/$run.json" || exit 1
  "$build/tools/cutriage" report "$out/$run.pb" >"$out/$run.report.txt" 2>&1
done
cat "$out"/duty.out "$out"/full.out
python3 - "$out" <<'PY'
import json, re, sys
sys.path.insert(0, "tests/gpu")
from checks import check, finish
out = sys.argv[1]
def load(run):
    recs = json.load(open(f"{out}/{run}.json"))["records"]
    summary = [r["traceSummary"] for r in recs if "traceSummary" in r][-1]
    notices = [r["notice"] for r in recs if "notice" in r and r["notice"].get("code") == "trace_duty"]
    return summary, notices
duty, duty_notices = load("duty")
full, full_notices = load("full")
check(len(duty_notices) == 1, f"duty: one trace_duty notice ({len(duty_notices)})")
check(len(full_notices) == 0, f"full: no trace_duty notice ({len(full_notices)})")
d = duty["devices"][0]
span = int(d.get("lastEndNs", 0)) - int(d.get("firstStartNs", 0))
untraced = float(d.get("untracedNs", 0))
check(span > 0 and untraced > 0.5 * span, f"duty: {untraced / 1e9:.2f} s untraced of a {span / 1e9:.2f} s span")
gaps = [int(g["endNs"]) - int(g["startNs"]) for g in d.get("largestGaps", [])]
check(all(g < 1e9 for g in gaps), f"duty: longest idle gap {max(gaps, default=0) / 1e6:.1f} ms")
check(float(full["devices"][0].get("untracedNs", 0)) == 0, "full: nothing untraced")
de, fe = int(duty.get("kernelExecutions", 0)), int(full.get("kernelExecutions", 0))
check(0 < de < 0.5 * fe, f"duty: {de} executions traced against {fe} with the full trace")
sums = set()
for run in ("duty", "full"):
    m = re.search(r"checksum ([0-9.]+)", open(f"{out}/{run}.out").read())
    sums.add(m.group(1) if m else None)
check(len(sums) == 1 and None not in sums, f"checksums equal: {sums}")
report = open(f"{out}/duty.report.txt").read()
check("the trace was paused for the rest" in report, "duty: the report says the trace paused")
finish()
PY
