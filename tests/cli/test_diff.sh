#!/usr/bin/env bash
# End-to-end checks of `cutriage diff`, and of `report`, `trace` and `pprof` over several files: exit codes
# (11 for --fail-if-slower), the text and JSON output, the ledger, on the zoo's H200 captures.
# The "slower" run is SYNTHETIC: the same capture imported with every unprofiled median of
# timings.csv raised by 25%.
# usage: test_diff.sh CUTRIAGE_BINARY TEST_DATA_DIR
set -u
bin=$1
data=$2
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
expect_show=all  # a wrong exit status shows stdout too


csv=$data/ncu/zoo/transpose.csv
"$bin" triage --ncu-csv "$csv" --timings "$data/ncu/timings.csv" --clock-control none -o "$tmp/t.pb" 2>/dev/null
awk -F, '{ printf "%s,%s,%d,%s\n", $1, $2, $3 * 1.25, $4 }' "$data/ncu/timings.csv" >"$tmp/slow-timings.csv"
"$bin" triage --ncu-csv "$csv" --timings "$tmp/slow-timings.csv" --clock-control none -o "$tmp/slow.pb" 2>/dev/null

expect "help" 0 "usage: cutriage diff" -- "$bin" diff --help
expect "listed in the main help" 0 "diff BEFORE.pb AFTER.pb" -- "$bin" --help
expect "one file" 1 "two files, BEFORE and AFTER" -- "$bin" diff "$tmp/t.pb"
expect "bad match" 1 "--match needs OLD=NEW" -- "$bin" diff "$tmp/t.pb" "$tmp/t.pb" --match nothing
expect "bad noise" 1 "--noise needs a percentage" -- "$bin" diff "$tmp/t.pb" "$tmp/t.pb" --noise lots
expect "both syntaxes" 1 "either as BEFORE AFTER" -- "$bin" diff "$tmp/t.pb" --before "$tmp/t.pb" --after "$tmp/t.pb"
expect "missing file" 2 "cannot open" -- "$bin" diff "$tmp/t.pb" "$tmp/none.pb"
expect "not cutriage" 3 "not a cutriage file" -- "$bin" diff "$csv" "$tmp/t.pb"

# The padded transpose against the naive one: faster, and the bank conflicts the naive kernel's
# verdict named fell.
expect "renamed kernel: keep" 0 "KEEP: faster beyond the noise" -- \
  "$bin" diff --match zoo_transpose_naive=zoo_transpose_padded "$tmp/t.pb" "$tmp/t.pb"
expect "renamed kernel: chain confirmed" 0 "chain     confirmed: shared_bank_conflict_share" -- \
  "$bin" diff --match zoo_transpose_naive=zoo_transpose_padded "$tmp/t.pb" "$tmp/t.pb"
expect "itself: neutral" 0 "NEUTRAL" -- "$bin" diff "$tmp/t.pb" "$tmp/t.pb"
expect "itself passes the gate" 0 "^pass " -- "$bin" diff "$tmp/t.pb" "$tmp/t.pb" --fail-if-slower 0

# The synthetic 25% slower import.
expect "slower: revert" 0 "REVERT: slower beyond the noise" -- "$bin" diff "$tmp/t.pb" "$tmp/slow.pb"
expect "slower: regressed" 0 "chain     regressed" -- "$bin" diff "$tmp/t.pb" "$tmp/slow.pb"
expect "slower: gate trips (exit 11)" 11 "^FAIL    slower than --fail-if-slower 10%" -- \
  "$bin" diff "$tmp/t.pb" "$tmp/slow.pb" --fail-if-slower 10
expect "slower: a looser gate passes" 0 "" -- "$bin" diff "$tmp/t.pb" "$tmp/slow.pb" --fail-if-slower 30
expect "faster: never fails the gate" 0 "KEEP" -- "$bin" diff "$tmp/slow.pb" "$tmp/t.pb" --fail-if-slower 0
expect "slower: noise wider than the change" 0 "NEUTRAL" -- "$bin" diff "$tmp/t.pb" "$tmp/slow.pb" --noise 30
expect "json lines" 11 '"kind":"total".*"fail":true' -- \
  "$bin" diff --before "$tmp/t.pb" --after "$tmp/slow.pb" --format json --fail-if-slower 10
check "json: one object per line" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["kind"] for r in rows] == ["family", "family", "total"], rows
assert all(r["call"] == "revert" for r in rows[:2])
' "$tmp/out"

# The ledger: appended, never overwritten, 0600.
expect "ledger first" 0 "" -- "$bin" diff "$tmp/t.pb" "$tmp/slow.pb" --ledger "$tmp/ledger.jsonl" --label "first"
expect "ledger second" 0 "" -- "$bin" diff "$tmp/t.pb" "$tmp/t.pb" --ledger "$tmp/ledger.jsonl" --label "second"
check "ledger: 2 + 2 lines" test "$(wc -l <"$tmp/ledger.jsonl")" -eq 4
check "ledger: first rows kept" grep -q '"label":"first"' "$tmp/ledger.jsonl"
check "ledger: mode 0600" test "$(stat -c %a "$tmp/ledger.jsonl")" = 600
printf 'keep me\n' >"$tmp/target"
ln -s "$tmp/target" "$tmp/link.jsonl"
expect "ledger: symlink refused" 6 "cannot append to the ledger" -- \
  "$bin" diff "$tmp/t.pb" "$tmp/slow.pb" --ledger "$tmp/link.jsonl"
check "ledger: symlink target untouched" test "$(cat "$tmp/target")" = "keep me"
expect "ledger: an input refused" 1 "is the input" -- "$bin" diff "$tmp/t.pb" "$tmp/slow.pb" --ledger "$tmp/slow.pb"

# Several files: processes kept apart.
a=$data/agent-split/zoo_transpose.pb
b=$data/agent-split/zoo_vector_add.pb
expect "report two processes" 0 "^2 processes" -- "$bin" report "$a" "$b"
expect "report: process heading" 0 "^=== process .*zoo_vector_add.pb" -- "$bin" report "$a" "$b"
expect "report csv: process column" 0 "^process,family_id,name" -- "$bin" report "$a" "$b" --format csv --rows families
expect "report json: process key" 0 '^\{"process":' -- "$bin" report "$a" "$b" --format json
expect "report: a file twice" 1 "give each segment once" -- "$bin" report "$a" "$a"
expect "report: a missing file" 2 "cannot open" -- "$bin" report "$a" "$tmp/none.pb"
expect "report: not a cutriage file" 3 "not a cutriage file" -- "$bin" report "$a" "$csv"
# tests/data/agent/zoo_transpose.pb was written without a trace: no family rows for its process.
expect "report families: a process without a trace" 10 "process .*no trace summary" -- \
  "$bin" report "$a" "$data/agent/zoo_transpose.pb" --format csv --rows families
expect "diff: several files a side" 0 "zoo_vector_add" -- "$bin" diff --before "$a" "$b" --after "$a" "$b"

# The exports over several files: segments merged, processes apart (docs/exports.md).
expect "trace two processes" 0 "2 processes, .* -> " -- "$bin" trace "$a" "$b" -o "$tmp/two.trace.json"
check "trace two processes: each named" grep -q '"process_name","args":{"name":"[^"]*:[0-9]* GPU 0' "$tmp/two.trace.json"
check "trace two processes: second pid base" grep -q '"pid":1000002,' "$tmp/two.trace.json"
check "trace two processes: otherData lists them" grep -q '"processes":\[{"name":' "$tmp/two.trace.json"
expect "trace several files: -o required" 1 "need -o" -- "$bin" trace "$a" "$b"
check "trace several files: nothing written" test ! -e "$a.trace.json"
expect "trace: a file twice" 1 "give each segment once" -- "$bin" trace "$a" "$a" -o "$tmp/twice.json"
expect "trace: an input as output" 1 "is the input" -- "$bin" trace "$a" "$b" -o "$b"
expect "trace: a missing file" 2 "cannot open" -- "$bin" trace "$a" "$tmp/none.pb" -o "$tmp/none.json"
expect "trace: no file has a trace" 10 "no file has a trace" -- \
  "$bin" trace "$data/agent/zoo_transpose.pb" "$data/agent/zoo_vector_add.pb" -o "$tmp/untraced.json"
check "trace: no file has a trace: nothing written" test ! -e "$tmp/untraced.json"
expect "trace: one of two without a trace" 0 "note: process .* has no trace" -- \
  "$bin" trace "$a" "$data/agent/zoo_transpose.pb" -o "$tmp/half.json"
p1=$data/pcsampling/zoo_transpose.pb
p2=$data/pcsampling/zoo_strided_load.pb
expect "pprof two processes" 0 "samples .* -> " -- "$bin" pprof "$p1" "$p2" -o "$tmp/two.pb.gz"
check "pprof two processes: gzip" test "$(head -c 2 "$tmp/two.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b
expect "pprof several files: -o required" 1 "need -o" -- "$bin" pprof "$p1" "$p2"
expect "pprof: a file twice" 1 "give each segment once" -- "$bin" pprof "$p1" "$p1" -o "$tmp/twice.pb.gz"
expect "pprof: no file has samples" 10 "no file has PC samples" -- \
  "$bin" pprof "$data/agent/zoo_transpose.pb" "$data/agent/zoo_vector_add.pb" -o "$tmp/none.pb.gz"
check "pprof: no samples: nothing written" test ! -e "$tmp/none.pb.gz"

finish
