#!/usr/bin/env bash
# `cutriage report` over the ranks of one job (docs/multi-gpu.md): the job view, the rank column
# of the exports, `--rows ranks` and its exit codes, on tests/data/job/: real H200 captures with
# SYNTHETIC rank headers (that directory's README). Also: the fixtures are what set_rank.py makes
# of the captures they name, so the README's commands stay true, and docs/multi-gpu.md's sample is
# what the report prints.
# usage: test_job.sh CUTRIAGE_BINARY TEST_DATA_DIR
set -u
bin=$1
data=$2
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
expect_show=all  # a wrong exit status shows stdout too


job=$data/job
# Given rank 1 first: the job view lists rank 0 first, and the sections follow by rank.
expect "report: the job view opens the report" 0 '^job: 2 ranks of world size 2, rank from RANK$' -- \
  "$bin" report "$job/rank1.pb" "$job/rank0.pb"
cp "$tmp/out" "$tmp/report"
check "report: the straggler is named" grep -qE '^straggler: rank [01] \(' "$tmp/report"
check "report: the families side by side" grep -qE '^  zoo_strided_load +[0-9.]+% memory bound +[0-9.]+% memory bound$' "$tmp/report"
check "report: rank 0's section before rank 1's" \
  test "$(grep -n '^=== process .*, rank 0 ===$' "$tmp/report" | cut -d: -f1)" -lt \
       "$(grep -n '^=== process .*, rank 1 ===$' "$tmp/report" | cut -d: -f1)"

expect "csv: a rank column after the process" 0 '^process,rank,family_id,' -- \
  "$bin" report "$job/rank0.pb" "$job/rank1.pb" --format csv --rows families
check "csv: each row has its rank" grep -qE $'^[^,]+,1,[0-9]+,fill_strided_input,' "$tmp/out"
expect "json: \"rank\" after \"process\"" 0 '^\{"process":"[^"]+","rank":0,"launch_index":' -- \
  "$bin" report "$job/rank0.pb" "$job/rank1.pb" --format json
expect "--rows ranks: one row per rank" 0 '^1,1,[^,]+,2,' -- \
  "$bin" report "$job/rank0.pb" "$job/rank1.pb" --format csv --rows ranks
check "--rows ranks: header and two rows" test "$(wc -l <"$tmp/out")" -eq 3
check "--rows ranks: one straggler" test "$(grep -cE ',(compute|idle),zoo_strided_load,' "$tmp/out")" -eq 1

# Not a job: a file without a rank among them, or one file.
expect "--rows ranks over files that are not a job's ranks: exit 1" 1 'not the ranks of one job' -- \
  "$bin" report "$data/agent-split/zoo_strided_load.pb" "$job/rank1.pb" --format csv --rows ranks
expect "--rows ranks over one file: usage error" 1 'two or more' -- \
  "$bin" report "$job/rank0.pb" --format csv --rows ranks
expect "processes that are not one job: no job view" 0 '^=== process ' -- \
  "$bin" report "$data/agent-split/zoo_strided_load.pb" "$job/rank1.pb"
check "processes that are not one job: no job line" bash -c "! grep -q '^job: ' '$tmp/out'"
check "processes that are not one job: no rank in the headings" bash -c "! grep -q ', rank [0-9]* ===' '$tmp/out'"

# The fixtures are set_rank.py's output on the captures the README names, byte for byte.
python3 "$job/set_rank.py" "$data/agent-split/zoo_strided_load.pb" "$tmp/r0.pb" --rank 0 --world-size 2 --local-rank 0
python3 "$job/set_rank.py" "$data/agent-split/zoo_strided_load_nolineinfo.pb" "$tmp/r1.pb" --rank 1 --world-size 2 --local-rank 1
check "fixtures: rank0.pb is set_rank.py's" cmp -s "$tmp/r0.pb" "$job/rank0.pb"
check "fixtures: rank1.pb is set_rank.py's" cmp -s "$tmp/r1.pb" "$job/rank1.pb"
# Only the header changed: every later byte is the capture's.
h0=$(( $(stat -c %s "$job/rank0.pb") - $(stat -c %s "$data/agent-split/zoo_strided_load.pb") ))
check "fixtures: only the header grew" test "$h0" -gt 0 -a "$h0" -lt 64
check "fixtures: the records after the header are the capture's" \
  cmp -s <(tail -c 100000 "$job/rank0.pb") <(tail -c 100000 "$data/agent-split/zoo_strided_load.pb")

# docs/multi-gpu.md's sample is the job section the report prints today.
doc=$data/../../docs/multi-gpu.md
awk '/^```text$/ { on = 1; next } on && /^```$/ { exit } on' "$doc" >"$tmp/doc-sample"
"$bin" report "$job/rank0.pb" "$job/rank1.pb" | sed '/^=== process /,$d' | sed '${/^$/d}' >"$tmp/now-sample"
if [[ -s $tmp/doc-sample ]] && cmp -s "$tmp/doc-sample" "$tmp/now-sample"; then
  ok "docs/multi-gpu.md's sample is what the report prints"
else
  fail "docs/multi-gpu.md's sample differs from the report:"; diff "$tmp/doc-sample" "$tmp/now-sample" | head -20
fi

finish
