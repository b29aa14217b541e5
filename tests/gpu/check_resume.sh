#!/usr/bin/env bash
# CUTRIAGE_RESUME on the GPU (issue 6): the example service always-on for SECONDS (default 40) at
# BUDGET (default 5%), then again resuming from the first run's output. Checks, from the two
# files: the second process took the first one's families; no metric group a family had in the
# first process was collected again; what was complete stayed complete; results unchanged.
# Needs the build from tests/gpu/build_with_service.sh (BUILD, default build-gpu). Files under
# $OUT/resume (or ./gpu-out/resume). Exit status: 0 all checks passed, 1 a check failed.
set -u -o pipefail
build="${BUILD:-build-gpu}"
out="${OUT:-$PWD/gpu-out}/resume"
seconds="${SECONDS_EACH:-40}"
budget="${BUDGET:-5%}"
mkdir -p "$out"
rm -f "$out"/*.pb
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_LOG_LEVEL=info;CUTRIAGE_BUDGET=$budget"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/first.pb" build-service/cutriage_service "$seconds" \
  >"$out/first.out" 2>"$out/first.log"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/second.pb;CUTRIAGE_RESUME=$out/first.pb" \
  build-service/cutriage_service "$seconds" >"$out/second.out" 2>"$out/second.log"
for run in first second; do
  "$build/tools/cutriage" json "$out/$run.pb" >"$out/$run.json" || exit 1
  "$build/tools/cutriage" report "$out/$run.pb" >"$out/$run.report.txt" 2>&1
done
grep -h "CUTRIAGE_RESUME\|diagnosis complete" "$out"/first.log "$out"/second.log | cut -c1-220
python3 - "$out" <<'PY'
import json, sys
sys.path.insert(0, "tests/gpu")
from checks import check, finish
out = sys.argv[1]
def load(run):
    recs = json.load(open(f"{out}/{run}.json"))["records"]
    names = {r["interned"]["id"]: r["interned"]["value"] for r in recs if "interned" in r}
    latest = {}
    for r in recs:
        k = r.get("kernel")
        if not k or k.get("status") != "PROFILE_STATUS_PROFILED" or not k.get("assembledLaunches"):
            continue
        fn = names[k["functionNameIid"]]
        key = (int(k.get("launchIndex", 0)), int(k.get("revision", 0)))
        if fn not in latest or key >= latest[fn][0]:
            latest[fn] = (key, k)
    done = [r["notice"]["message"] for r in recs if "notice" in r and r["notice"].get("code") == "always_on_complete"]
    return {fn: k for fn, (_, k) in latest.items()}, done
first, first_done = load("first")
second, second_done = load("second")
check(len(first) > 0, f"the first run profiled {len(first)} families")
for fn, k1 in first.items():
    k2 = second.get(fn)
    check(k2 is not None, f"{fn}: in the second run")
    if k2 is None:
        continue
    g1 = {a.get("metricGroup") for a in k1["assembledLaunches"]}
    earlier = [a for a in k2["assembledLaunches"] if a.get("earlierPid")]
    own = {a.get("metricGroup") for a in k2["assembledLaunches"] if not a.get("earlierPid")}
    check(len(earlier) == len(k1["assembledLaunches"]),
          f"{fn}: {len(earlier)} of the second record's launches from the first process (it had {len(k1['assembledLaunches'])})")
    check(not (own & g1), f"{fn}: groups collected again: {sorted(own & g1)}")
for msg in first_done:
    fn = msg.split(": diagnosis complete")[0]
    check(any(m.startswith(fn + ": diagnosis complete") and "earlier process, resumed" in m for m in second_done),
          f"{fn}: complete in the first run, complete at once in the second")
print(f"second run: {len(second_done)} complete, {sum(1 for m in second_done if 'resumed' in m)} of them with resumed launches")
finish()
PY
rc=$?
for run in first second; do tail -1 "$out/$run.out"; done
# The service's results must not change with the agent.
c1=$(grep -o 'checksum [0-9.]*' "$out/first.out"); c2=$(grep -o 'checksum [0-9.]*' "$out/second.out")
[ -n "$c1" ] && [ "$c1" = "$c2" ] || { echo "FAIL  checksums: '$c1' vs '$c2'"; rc=1; }
exit $rc
