#!/usr/bin/env bash
# Always-on over CUDA graphs at the default budget (issue 20), on the GPU machine from the
# repository root (carry .carry): each graph workload timed plain, then under always-on, with the
# time to its graph's verdicts from the agent's log. Results in BENCHMARKS.md.
#
#   AO_SECONDS=280 bash bench/graph_always_on.sh        # $OUT/mlp, $OUT/compile: summary.txt, files
#
# One workload per phase of tests/gpu/run_graph_verdicts.sh, which builds, runs and summarizes;
# each phase takes about six minutes, so a device call of ten minutes fits one of them (WORKLOADS).
set -u -o pipefail
out="${OUT:-$PWD/bench-out}"
for w in ${WORKLOADS:-mlp compile}; do
  case $w in
    mlp) phase=always ;;
    compile) phase=always-compile ;;
    *) echo "graph_always_on: unknown workload '$w' (mlp, compile)" >&2; exit 1 ;;
  esac
  mkdir -p "$out/$w"
  OUT="$out/$w" PHASE=$phase AO_SECONDS="${AO_SECONDS:-280}" bash tests/gpu/run_graph_verdicts.sh
done
