set -u
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
bash tests/gpu/build_with_service.sh build-gpu $OUT/logs -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF || exit 1
ao="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_SELECT=none;CUTRIAGE_LOG_LEVEL=debug"
SERVICE_CUTRIAGE="$ao;CUTRIAGE_OUTPUT=$OUT/duty.pb;CUTRIAGE_TRACE_DUTY=25%;CUTRIAGE_TRACE_PERIOD=4" build-service/cutriage_service 13 > $OUT/duty.out 2>&1
build-gpu/tools/cutriage json $OUT/duty.pb > $OUT/duty.json
python3 - $OUT/duty.json <<'PY'
import json, sys, collections
recs = json.load(open(sys.argv[1]))["records"]
names = {}
for r in recs:
    for k in ("family", "kernelFamily"):
        if k in r: names[r[k].get("id")] = r[k].get("name")
unt = []; kern = []
for r in recs:
    c = r.get("traceChunk")
    if not c: continue
    unt += [(int(i.get("startNs", 0)), int(i.get("endNs", 0))) for i in c.get("untraced", [])]
    kern += c.get("kernels", [])
print("record kinds:", collections.Counter(k for r in recs for k in r.keys()).most_common(12))
print("untraced:", [(a, b - a) for a, b in unt])
t0 = min(int(k["startNs"]) for k in kern)
long_ = [k for k in kern if int(k["endNs"]) - int(k["startNs"]) > 50000]
print("kernels", len(kern), "long (>50us):", len(long_))
by = collections.Counter((k.get("familyId"), k.get("graphId", 0) != 0) for k in long_)
print(by)
for k in long_[:40]:
    s, e = int(k["startNs"]), int(k["endNs"])
    inside = [(a - t0, b - t0) for a, b in unt if s < b and e > a]
    print("fam", k.get("familyId"), "graph", k.get("graphId", 0), "node", k.get("graphNodeId", 0), "corr", k.get("correlationId"), "stream", k.get("streamId"),
          "start +%.3f ms" % ((s - t0) / 1e6), "dur %.3f ms" % ((e - s) / 1e6), "overlaps", inside)
# neighbours of first long one
if long_:
    s = int(long_[0]["startNs"])
    near = sorted(kern, key=lambda k: abs(int(k["startNs"]) - s))[:8]
    for k in sorted(near, key=lambda k: int(k["startNs"])):
        print("  near: fam", k.get("familyId"), "graph", k.get("graphId", 0), "corr", k.get("correlationId"), "start +%.3f" % ((int(k["startNs"]) - t0) / 1e6), "end +%.3f" % ((int(k["endNs"]) - t0) / 1e6))
PY
grep "monotonic" $OUT/duty.out | head
rm -f $OUT/duty.json
