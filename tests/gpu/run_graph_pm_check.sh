#!/usr/bin/env bash
# PM sampling per graph node on the device (docs/graphs.md, "PM sampling per node"): graph_mlp in
# deep mode under `cutriage run`, each family's share of its graph, the scope of its counters (the
# graph's, or its own PM samples) and its verdict; the outputs plain vs agent compared. Builds
# nothing: give it a build directory with the agent and the CLI built
# (cmake --build BUILD --target cutriage_agent cutriage_cli).
#
#   bash tests/gpu/run_graph_pm_check.sh BUILD_DIR [REPLAYS]
#   PM_ARGS="--launch-skip 100" bash tests/gpu/run_graph_pm_check.sh BUILD_DIR   # direct launches left
#       unprofiled, so the LayerNorm and GELU records are the graph's (their warm-ups give them own ones)
#
# Results under $OUT (default ./gpu-out): pm-check.txt (the summary), graph_mlp-pm.pb, its report,
# JSON and the agent's log. Exit status 0 when the outputs are identical, no family's PM sampling
# failed and at least one family below half of its graph has its own PM-sampled verdict.
set -u -o pipefail
build="${1:?usage: run_graph_pm_check.sh BUILD_DIR [REPLAYS]}"
replays="${2:-300}"
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
cli="$build/tools/cutriage"
[ -x "$cli" ] || { echo "no $cli: build cutriage_cli and cutriage_agent in $build first" >&2; exit 2; }
w=tests/gpu/workloads
sum="$out/pm-check.txt"
{
  echo "# bash tests/gpu/run_graph_pm_check.sh $build $replays, $(date -u +%FT%RZ), commit $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} >"$sum"

t=$(date +%s.%N)
timeout 560 python3 "$w/graph_mlp.py" "$replays" >"$out/plain.out" 2>"$out/plain.err"
echo "plain: exit $?, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $t))") s: $(grep -E '^graph_mlp' "$out/plain.out")" >>"$sum"
t=$(date +%s.%N)
timeout 560 env CUTRIAGE_LOG_LEVEL=info CUTRIAGE_LOG_FILE="$out/agent.log" \
  "$cli" run --rerun never ${PM_ARGS:-} -o "$out/graph_mlp-pm.pb" -- python3 "$w/graph_mlp.py" "$replays" >"$out/agent.out" 2>"$out/agent.err"
rc=$?
echo "agent (deep): exit $rc, $(python3 -c "print('%.1f' % ($(date +%s.%N) - $t))") s: $(grep -E '^graph_mlp' "$out/agent.out")" >>"$sum"
[ $rc -ge 128 ] && echo "AGENT RUN KILLED BY SIGNAL $((rc - 128))" >>"$sum"
same=0
if [ -n "$(grep -m1 -E '^graph_mlp' "$out/plain.out")" ] &&
   [ "$(grep -m1 -E '^graph_mlp' "$out/plain.out")" = "$(grep -m1 -E '^graph_mlp' "$out/agent.out")" ]; then
  echo "outputs: identical" >>"$sum"; same=1
else
  echo "outputs: DIFFER" >>"$sum"
fi
echo "agent log, PM lines:" >>"$sum"
grep -iE "PM[ -]sampl|graph .*verdicts|could not profile" "$out/agent.log" | head -20 | sed 's/^/  /' >>"$sum"

"$cli" report "$out/graph_mlp-pm.pb" >"$out/graph_mlp-pm.report.txt" 2>&1
"$cli" json "$out/graph_mlp-pm.pb" >"$out/graph_mlp-pm.json" 2>"$out/json.err"
python3 - "$out/graph_mlp-pm.json" >>"$sum" <<'PY'
import json, sys
path = sys.argv[1]
records = []
with open(path) as f:
    text = f.read()
try:
    doc = json.loads(text)
    items = doc if isinstance(doc, list) else doc.get("records", [doc])
except ValueError:  # one JSON object per line
    items = [json.loads(l) for l in text.splitlines() if l.strip()]
def walk(o):
    if isinstance(o, dict):
        if "graphScope" in o or "graph_scope" in o:
            yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
latest = {}
for k in walk(items):
    # names are interned in the file: the interned id tells the families apart
    name = str(k.get("mangledNameIid") or k.get("functionNameIid") or id(k))
    latest[name] = k
ok_pm = 0
print("families in graphs (share | scope | classification | headline):")
for name, k in sorted(latest.items(), key=lambda kv: -float((kv[1].get("graphScope") or kv[1].get("graph_scope"))
                                                             .get("shareOfGraph", (kv[1].get("graphScope") or kv[1].get("graph_scope")).get("share_of_graph", 0)))):
    g = k.get("graphScope") or k.get("graph_scope")
    share = float(g.get("shareOfGraph", g.get("share_of_graph", 0)))
    ns = g.get("nodeSampling") or g.get("node_sampling")
    d = k.get("diagnosis", {})
    scope = ("own PM samples: %s of %s ns over launch %s" % (ns.get("samples"), ns.get("intervalNs", ns.get("interval_ns")),
             ns.get("launchCorrelationId", ns.get("launch_correlation_id")))) if ns else "graph %s as a whole" % g.get("graphId", g.get("graph_id"))
    cls = str(d.get("classification", ""))
    if ns and share < 0.5 and not any(w in cls for w in ("UNTRUSTED", "INCONCLUSIVE", "UNSPECIFIED")) and cls:
        ok_pm += 1
    detail = k.get("statusDetail") or k.get("status_detail") or ""
    print("  %5.1f%% | %s | %s | %s%s" % (100 * share, scope, d.get("classification", "?"), str(d.get("headline", ""))[:150],
                                          ("  [" + detail + "]") if detail else ""))
print("families below half routed from their own PM samples: %d" % ok_pm)
sys.exit(0 if ok_pm > 0 else 3)
PY
pm_ok=$?
grep -nE "counters  this node's own PM samples" "$out/graph_mlp-pm.report.txt" | head -5 | sed 's/^/  report: /' >>"$sum"
fail=$(grep -c "graph_pm_sampling_failed\|PM sampling could not start\|PM sampling failed" "$out/agent.log" 2>/dev/null || true)
echo "PM failures in the log: ${fail:-0}" >>"$sum"
cat "$sum"
[ "$same" = 1 ] && [ "$pm_ok" = 0 ] && [ "${fail:-0}" = 0 ]
