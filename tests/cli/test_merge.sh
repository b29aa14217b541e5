#!/usr/bin/env bash
# End-to-end checks of `cutriage merge` (docs/commands.md, merging replicas' always-on counters):
# exit codes, the summary line, the report and the JSON of the merged file, on two always-on runs
# of the H200 service (tests/data/always_on: two processes of one program, which stand in for two
# replicas) and its deep run (skipped).
# usage: test_merge.sh CUTRIAGE_BINARY TEST_DATA_DIR
set -u
bin=$1
data=$2/always_on
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
expect_show=all  # a wrong exit status shows stdout too

a=$data/svc-ao-default.pb
b=$data/svc-ao-2pct.pb
cp "$a" "$tmp/a.pb"
printf 'not a cutriage file\n' >"$tmp/text.txt"

expect "help" 0 "usage: cutriage merge -o OUT.pb" -- "$bin" merge --help
expect "listed in the main help" 0 "merge -o OUT.pb FILE.pb" -- "$bin" --help
expect "one file" 1 "two files or more" -- "$bin" merge -o "$tmp/m.pb" "$a"
expect "no -o" 1 "output" -- "$bin" merge "$a" "$b"
expect "output is an input" 1 "is the input" -- "$bin" merge -o "$tmp/a.pb" "$tmp/a.pb" "$b"
check "the input is left as it was" cmp -s "$a" "$tmp/a.pb"
expect "missing file" 2 "none.pb" -- "$bin" merge -o "$tmp/m.pb" "$a" "$tmp/none.pb"
expect "not cutriage" 3 "text.txt: not a" -- "$bin" merge -o "$tmp/m.pb" "$a" "$tmp/text.txt"
expect "only deep files" 1 "nothing to merge" -- "$bin" merge -o "$tmp/m.pb" "$data/svc-deep.pb" "$data/svc-deep.pb"
check "no output after a failure" test ! -e "$tmp/m.pb"

expect "merge" 0 "^cutriage merge: 4 families from 2 files \(1 assembled across processes\) -> $tmp/m.pb$" -- \
  "$bin" merge -o "$tmp/m.pb" "$a" "$b"
expect "a deep file is skipped" 0 "svc-deep.pb: not an always-on file" -- \
  "$bin" merge -o "$tmp/m2.pb" "$a" "$data/svc-deep.pb" "$b"
check "the deep file changes nothing" cmp -s "$tmp/m.pb" "$tmp/m2.pb"

pids=$("$bin" json "$a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"][0]["session"]["pid"])')
expect "report" 0 "mode: always-on" -- "$bin" report "$tmp/m.pb"
check "report: a notice per family" test "$(grep -c '^info: .* counters from pid ' "$tmp/out")" -eq 4
check "report: a file that added nothing is named" grep -q "; nothing new from pid " "$tmp/out"
check "report: the first file's pid contributed" grep -q "from pid $pids (" "$tmp/out"
check "report: launches of both processes" grep -qE "by 2 processes \(merged; pid [0-9]+ [0-9]+\)" "$tmp/out"
expect "json" 0 '"code": "merge"' -- "$bin" json "$tmp/m.pb"
check "json: the header" python3 -c '
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
s = recs[0]["session"]
assert s["host"] == "merged" and s["mode"] == "always-on" and "pid" not in s, s
kernels = [r["kernel"] for r in recs if "kernel" in r]
assert len(kernels) == 4, len(kernels)
for k in kernels:
    pids = {a.get("earlierPid") for a in k["assembledLaunches"]}
    assert None not in pids, k["assembledLaunches"]
    assert k["diagnosis"]["headline"], k["diagnosis"]
assert sum(len({a["earlierPid"] for a in k["assembledLaunches"]}) > 1 for k in kernels) == 1
' "$tmp/out"
# The merged file merged again with one of its inputs: every launch once, nothing new.
expect "merged again" 0 "4 families from 2 files \(1 assembled across processes\)" -- \
  "$bin" merge -o "$tmp/m3.pb" "$tmp/m.pb" "$b"
finish
