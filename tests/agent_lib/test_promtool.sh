#!/usr/bin/env bash
# `promtool check metrics` (Debian package prometheus) on every Prometheus file cutriage writes:
# the agent's export of a run through the fake platform, a snapshot holding every series the
# agent can write (always-on budget and progress, CUDA graphs, two GPUs), each with the default
# labels and with CUTRIAGE_PROMETHEUS_DCGM_LABELS=1, and the files the agent wrote on the H200
# (tests/data/prometheus/, tests/data/service/).
#
# Default labels: promtool must print nothing and exit 0. dcgm-exporter's labels (and the H200
# files, written before model_name was the default): promtool may only report label names that are
# not snake_case (exit 3, "lint error"; a parse error exits 1), and the file's only such label must
# be modelName, the one the option exists for. Anything else fails (docs/exports.md).
#
# usage: test_promtool.sh PROMETHEUS_EXAMPLE WORKDIR DATA_DIR. Exits 77 (skipped) without promtool.
set -u
example=$1
work=$2
data=$3
promtool=${CUTRIAGE_PROMTOOL:-$(command -v promtool || true)}
if [[ -z $promtool || ! -x $promtool ]]; then
  echo "promtool not found (Debian: prometheus, cmake/install-deps.sh): skipped"
  exit 77
fi
"$promtool" --version 2>&1 | head -1
mkdir -p "$work"
passed=0
failed=0

clean() {  # clean NAME FILE: promtool prints nothing and exits 0
  local out rc
  out=$("$promtool" check metrics <"$2" 2>&1)
  rc=$?
  if [[ $rc -ne 0 || -n $out ]]; then
    echo "FAIL $1: promtool exit $rc on $2"; printf '%s\n' "$out" | sed 's/^/  | /' | head -20
    failed=$((failed + 1)); return
  fi
  echo "ok   $1: promtool clean ($(grep -vc '^#' "$2") samples)"; passed=$((passed + 1))
}

only_model_name() {  # only_model_name NAME FILE: promtool's only finding is modelName's case
  local out rc others camel
  out=$("$promtool" check metrics <"$2" 2>&1)
  rc=$?
  others=$(printf '%s\n' "$out" | grep -v "label names should be written in 'snake_case' not 'camelCase'$" | grep -v '^$')
  # promtool names the metric, not the label: the file itself says which labels are camelCase.
  camel=$(grep -v '^#' "$2" | grep -o '[{,][a-zA-Z_][a-zA-Z0-9_]*="' | tr -d '{,="' | sort -u | grep '[a-z][A-Z]' | tr '\n' ' ')
  if [[ $rc -ne 3 || -n $others || $camel != "modelName " ]]; then
    echo "FAIL $1: promtool exit $rc (expected 3, lint only), camelCase labels '$camel' (expected modelName)"
    printf '%s\n' "${others:-$out}" | sed 's/^/  | /' | head -20
    failed=$((failed + 1)); return
  fi
  echo "ok   $1: only modelName reported ($(printf '%s\n' "$out" | grep -c .) lines, exit 3)"; passed=$((passed + 1))
}

for mode in "" dcgm all all-dcgm; do
  file=$work/promtool-${mode:-default}.prom
  rm -f "$file"
  # shellcheck disable=SC2086
  if ! "$example" "$file" $mode; then
    echo "FAIL: $example $file $mode"; failed=$((failed + 1)); continue
  fi
  case $mode in
    "" | all) clean "export (${mode:-fake run})" "$file" ;;
    *) only_model_name "export ($mode)" "$file" ;;
  esac
done
# The every-series snapshot must hold every series the agent writes: a name added to the agent and
# not to the snapshot would go unchecked here.
names=$(grep -o '"cutriage_[a-z_]*"' "$(dirname "$0")/../../agent/src/prometheus.cpp" | tr -d '"' | sort -u)
missing=""
for n in $names; do
  grep -q "^# TYPE $n " "$work/promtool-all.prom" || missing+=" $n"
done
if [[ -n $missing ]]; then
  echo "FAIL every-series snapshot lacks:$missing"; failed=$((failed + 1))
else
  echo "ok   every-series snapshot holds all $(echo "$names" | wc -w) series of agent/src/prometheus.cpp"
  passed=$((passed + 1))
fi
only_model_name "H200 torch_loop.prom (agent before model_name)" "$data/prometheus/torch_loop.prom"
only_model_name "H200 service svc.prom (agent before model_name)" "$data/service/svc.prom"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
