#!/usr/bin/env bash
# Where a profiled kernel's cost goes (issue 21): each program of the example zoo run plain and under
# `cutriage run` with every kernel fully triaged (--select all --metrics full, PC sampling on),
# RUNS times each; per program the median wall times and, from the agent's file, each profiled
# launch's phases on the application's thread (KernelProfile.cost: setup, start, launch with its
# replay passes, stop, triage; the PC-sampled launch's the same). What the phases do not cover of
# the added wall time is the agent's start, its trace and its exit.
#
#   bash bench/profile_cost.sh [BUILD_DIR]      # default build-gpu; results under $OUT (or ./bench-out)
#   PROGRAMS="vector_add cublas_gemm" RUNS=3 bash bench/profile_cost.sh
# Writes $OUT/profile_cost.md (a markdown table) and the agent files.
set -u -o pipefail
build="${1:-build-gpu}"
out="${OUT:-$PWD/bench-out}"
runs="${RUNS:-3}"
mkdir -p "$out/cost"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
cli="$PWD/$build/tools/cutriage"
zoo="$PWD/$build/examples/zoo"
programs="${PROGRAMS:-vector_add small_grid odd_block strided_load transpose register_spill warp_divergence global_atomics fp64_heavy fma_chain cublas_gemm}"
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
wall() {  # CMD...: seconds
  local s
  s=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  python3 -c "print('%.3f' % ($(date +%s.%N) - $s))"
}
: >"$out/cost/walls.txt"
for p in $programs; do
  for i in $(seq "$runs"); do
    echo "$p plain $(wall "$zoo/zoo_$p")" >>"$out/cost/walls.txt"
    echo "$p agent $(wall "$cli" run --select all --metrics full --rerun never --no-report --quiet \
      -o "$out/cost/$p-$i.pb" -- "$zoo/zoo_$p")" >>"$out/cost/walls.txt"
    "$cli" json "$out/cost/$p-$i.pb" >"$out/cost/$p-$i.json" 2>/dev/null
  done
done
python3 - "$out/cost" "$runs" "$programs" >"$out/profile_cost.md" <<'PY'
import json, statistics, sys
d, runs, programs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
walls = {}
for line in open(d + "/walls.txt"):
    p, arm, s = line.split()
    walls.setdefault((p, arm), []).append(float(s))
def latest_costed(p, i):
    """Run i's profiled launches with a cost, the latest revision of each (its cost is the
    launch's own); None when the run left no readable file."""
    try:
        recs = json.load(open("%s/%s-%d.json" % (d, p, i)))["records"]
    except Exception:
        return None
    latest = {}
    for r in recs:
        k = r.get("kernel")
        if not k or "cost" not in k:
            continue
        key = (k.get("mangledNameIid"), k.get("launchIndex"))
        if key not in latest or int(k.get("revision", 0)) >= int(latest[key].get("revision", 0)):
            latest[key] = k
    return latest

phases = ["setupNs", "startNs", "launchNs", "stopNs", "triageNs"]
print("| program | plain s | cutriage s | added s | launches profiled | passes | setup | start | launch | stop | triage | PC launch | phases / added |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
tot = {}
for p in programs:
    per_run = []
    for i in range(1, runs + 1):
        latest = latest_costed(p, i)
        if latest is None:
            continue
        sums = {ph: 0.0 for ph in phases}
        pc = 0.0
        passes = 0
        for k in latest.values():
            for ph in phases:
                sums[ph] += float(k["cost"].get(ph, 0)) / 1e9
            passes += int(k["cost"].get("passes", 0))
            c = k.get("pcSampling", {}).get("cost")
            if c:
                pc += sum(float(c.get(ph, 0)) for ph in phases) / 1e9
        per_run.append((len(latest), passes, sums, pc))
    if not per_run:
        print("| %s | no agent file |" % p)
        continue
    plain = statistics.median(walls.get((p, "plain"), [0]))
    agent = statistics.median(walls.get((p, "agent"), [0]))
    n, passes, _, _ = per_run[0]
    med = {ph: statistics.median(r[2][ph] for r in per_run) for ph in phases}
    pcm = statistics.median(r[3] for r in per_run)
    covered = sum(med.values()) + pcm
    added = agent - plain
    print("| %s | %.2f | %.2f | %.2f | %d | %d | %s | %.3f | %s |" % (
        p, plain, agent, added, n, passes, " | ".join("%.3f" % med[ph] for ph in phases), pcm,
        "%.0f%%" % (100 * covered / added) if added > 0 else "-"))
print()
print("Seconds, medians of %d runs; phases summed over the program's profiled launches (KernelProfile.cost)." % runs)

# Inside the phases: the plan made on the application's thread (setup), the range profiler's CUPTI
# calls (start and stop), the evaluation (stop); ProfileCost.plan_ns, range_steps, evaluate_ns.
parts = [("plan", None, "planNs"), ("enable", "rangeSteps", "enableNs"),
         ("counter-data image", "rangeSteps", "counterDataNs"), ("set config", "rangeSteps", "setConfigNs"),
         ("cupti start", "rangeSteps", "startNs"), ("cupti stop", "rangeSteps", "stopNs"),
         ("decode", "rangeSteps", "decodeNs"), ("disable", "rangeSteps", "disableNs"),
         ("evaluate", None, "evaluateNs")]
print()
print("| program | " + " | ".join(name for name, _, _ in parts) + " |")
print("|---|" + "---|" * len(parts))
for p in programs:
    per_run = []
    for i in range(1, runs + 1):
        latest = latest_costed(p, i)
        if latest is None:
            continue
        sums = {name: 0.0 for name, _, _ in parts}
        for k in latest.values():
            for name, sub, field in parts:
                c = k["cost"].get(sub, {}) if sub else k["cost"]
                sums[name] += float(c.get(field, 0)) / 1e9
        per_run.append(sums)
    if per_run:
        print("| %s | %s |" % (p, " | ".join("%.3f" % statistics.median(r[name] for r in per_run) for name, _, _ in parts)))
print()
print("Seconds, medians of %d runs, summed over the profiled launches: the parts of setup, start and stop." % runs)
PY
cat "$out/profile_cost.md"
