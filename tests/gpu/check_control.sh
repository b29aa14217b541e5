#!/usr/bin/env bash
# Deep captures requested from outside a running service (issue 6): the example service always-on
# for SECONDS_EACH (default 20) twice, once asked through CUTRIAGE_CONTROL_FILE and once through
# CUTRIAGE_CONTROL_SIGNAL (usr1), 5 s after it started. Checks, from each output file: one
# ControlRequest from that source, completed, its families profiled with replay; results
# unchanged. Needs the build from tests/gpu/build_with_service.sh (BUILD, default build-gpu).
# Files under $OUT/control (or ./gpu-out/control). Exit status: 0 all checks passed, 1 otherwise.
set -u -o pipefail
build="${BUILD:-build-gpu}"
out="${OUT:-$PWD/gpu-out}/control"
seconds="${SECONDS_EACH:-20}"
mkdir -p "$out"
rm -f "$out"/*.pb "$out"/ctl*
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_LOG_LEVEL=info;CUTRIAGE_TRACE_FLUSH_MS=200"

SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/file.pb;CUTRIAGE_CONTROL_FILE=$out/ctl" \
  build-service/cutriage_service "$seconds" >"$out/file.out" 2>"$out/file.log" &
pid=$!
sleep 5
# Written under another name and renamed: the agent never reads half a request.
echo "deep 10 top:2" >"$out/ctl.tmp" && mv "$out/ctl.tmp" "$out/ctl"
wait "$pid"
file_left=$([ -e "$out/ctl" ] && echo yes || echo no)

SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$out/signal.pb;CUTRIAGE_CONTROL_SIGNAL=usr1;CUTRIAGE_DEEP_TARGET=top:2" \
  build-service/cutriage_service "$seconds" >"$out/signal.out" 2>"$out/signal.log" &
pid=$!
sleep 5
kill -USR1 "$pid"
wait "$pid"
signal_rc=$?

for run in file signal; do
  "$build/tools/cutriage" json "$out/$run.pb" >"$out/$run.json" || exit 1
  "$build/tools/cutriage" report "$out/$run.pb" >"$out/$run.report.txt" 2>&1
done
grep -h "deep capture" "$out"/file.log "$out"/signal.log | cut -c1-200
python3 - "$out" "$file_left" "$signal_rc" <<'PY'
import json, sys
sys.path.insert(0, "tests/gpu")
from checks import check, finish
out, file_left, signal_rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
for run, source in (("file", "CONTROL_SOURCE_FILE"), ("signal", "CONTROL_SOURCE_SIGNAL")):
    recs = json.load(open(f"{out}/{run}.json"))["records"]
    reqs = {}
    for r in recs:
        c = r.get("control")
        if c:
            reqs[c.get("id")] = c  # the latest state of each request
    check(len(reqs) == 1, f"{run}: one request ({len(reqs)})")
    for c in reqs.values():
        check(c.get("source") == source, f"{run}: from {c.get('source')}")
        check(c.get("state") == "CONTROL_STATE_COMPLETED", f"{run}: {c.get('state')} ({c.get('detail', '')})")
        check(len(c.get("familyIds", [])) == 2, f"{run}: {len(c.get('familyIds', []))} families captured")
    replayed = [r["kernel"] for r in recs if "kernel" in r and r["kernel"].get("replayMode") == "REPLAY_MODE_KERNEL"]
    check(len(replayed) >= 2, f"{run}: {len(replayed)} records profiled with replay")
check(file_left == "no", "the request file was deleted once read")
check(signal_rc == 0, f"the service ran on after the signal (exit {signal_rc})")
finish()
PY
rc=$?
c1=$(grep -o 'checksum [0-9.]*' "$out/file.out"); c2=$(grep -o 'checksum [0-9.]*' "$out/signal.out")
[ -n "$c1" ] && [ "$c1" = "$c2" ] || { echo "FAIL  checksums: '$c1' vs '$c2'"; rc=1; }
exit $rc
