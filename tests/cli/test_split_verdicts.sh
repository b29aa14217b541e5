#!/usr/bin/env bash
# The agent's split into components (issue 19) left the zoo's verdicts where they were: every zoo
# file of the H200 run after it (tests/data/agent-split/) has the classification, limiter and
# deciding rule of the same program's file before it (tests/data/agent/), read back with
# `cutriage json` and tests/gpu/verdicts.py. Two different programs must differ (the comparison
# can fail).
#
#   test_split_verdicts.sh CUTRIAGE DATA_DIR VERDICTS_PY
set -u -o pipefail
cli=$1 data=$2 verdicts=$3
v() { "$cli" json "$1" 2>/dev/null | python3 "$verdicts"; }
fail=0 n=0
for after in "$data"/agent-split/zoo_*.pb; do
  before="$data/agent/$(basename "$after")"
  [ -f "$before" ] || continue
  n=$((n + 1))
  if ! diff <(v "$before") <(v "$after") >/dev/null; then
    echo "FAIL $(basename "$after"): verdicts differ"; diff <(v "$before") <(v "$after"); fail=1
  elif [ -z "$(v "$after")" ]; then
    echo "FAIL $(basename "$after"): no verdict read"; fail=1
  fi
done
[ "$n" -ge 12 ] || { echo "FAIL: only $n zoo files compared"; fail=1; }
if diff <(v "$data/agent-split/zoo_fma_chain.pb") <(v "$data/agent-split/zoo_transpose.pb") >/dev/null; then
  echo "FAIL: two different programs read the same verdicts"; fail=1
fi
[ $fail = 0 ] && echo "$n zoo files: same verdicts before and after"
exit $fail
