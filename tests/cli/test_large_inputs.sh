#!/usr/bin/env bash
# The tool on inputs far larger than the memory it is given (issue 25, items 12 and 13;
# docs/guarantees.md, "The tool"):
#  - a cutriage file is streamed record by record with 64-bit offsets: a file of several GiB (a
#    hole after real records, so the test writes nothing big) is read under a 1 GiB address-space
#    limit and its tail measured exactly (before: the whole file was copied into memory and sized
#    as an int);
#  - an ncu CSV is imported one row at a time: 1000 replicated rows of a real H200 capture (17 MB)
#    under the same limit (before: 680 KB of memory a row, 717 MB for these, and std::bad_alloc
#    at 100k rows), with the result of the small capture kept.
# Runs each command under `ulimit -v`; where the binary cannot start under a limit at all
# (AddressSanitizer reserves terabytes of address space) the test is skipped (exit 77).
# usage: test_large_inputs.sh CUTRIAGE_BINARY TEST_DATA_DIR
set -u
bin=$1
data=$2
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
expect_timeout=120  # a command that hangs fails its check, not the whole script
limit_kb=$((512 * 1024))  # 512 MiB of address space

limited=(bash -c 'ulimit -v "$0" && exec "$@"' "$limit_kb")
# An AddressSanitizer build is not even tried: its failed shadow reservation would be written as
# a sanitizer report, which fails the sanitizer gate (.ci/sanitize.sh) though nothing is wrong.
if grep -qa "__asan_init" "$bin"; then
  echo "an AddressSanitizer build cannot run under ulimit -v (it reserves terabytes of address space): skipped"
  exit 77
fi
if ! "${limited[@]}" "$bin" --help >/dev/null 2>&1; then
  echo "the tool cannot start under ulimit -v $limit_kb (a sanitizer build?): skipped"
  exit 77
fi


# --- item 12: files over 2 and 4 GiB ------------------------------------------------------------
src=$data/trace/trace_timeline.pb
cp "$src" "$tmp/big.pb"
truncate -s +5G "$tmp/big.pb"  # a hole: reads as zeros, takes no disk
hole=$((5 * 1024 * 1024 * 1024))
for cmd in report trace json; do
  args=("$cmd" "$tmp/big.pb")
  [[ $cmd = trace ]] && args+=(-o "$tmp/big.json")
  expect "$cmd: a 5 GiB file (complete records, then a torn tail) under 512 MiB of memory" 4 \
    "truncated: read [0-9]+ complete records, skipped the last $hole bytes" -- "${limited[@]}" "$bin" "${args[@]}"
done
expect "report: the records before the tail are all there" 4 "" -- "${limited[@]}" "$bin" report "$tmp/big.pb"
cp "$tmp/out" "$tmp/big.report"
"$bin" report "$src" >"$tmp/small.report" 2>/dev/null
if cmp -s "$tmp/big.report" "$tmp/small.report"; then
  ok "report: the 5 GiB file reports as the file it starts with"
else
  fail "report: the 5 GiB file reports differently from the file it starts with"
fi

# --- item 13: large CSVs ------------------------------------------------------------------------
csv=$data/ncu/zoo/strided_load.csv
[[ $(wc -l <"$csv") -eq 3 ]] || { echo "FAIL $csv is no longer header, units, one row"; exit 1; }
rows=1000
{
  head -n 2 "$csv"
  row=$(sed -n 3p "$csv")
  for ((i = 0; i < rows; i++)); do printf '%s\n' "$row"; done
} >"$tmp/big.csv"
expect "triage: $rows full rows under 512 MiB of memory" 0 "$rows kernels triaged" -- \
  "${limited[@]}" "$bin" triage --ncu-csv "$tmp/big.csv" --clock-control none -o /dev/null
# A pipe is read once (into memory); time shares are relative to every row.
expect "triage: ten rows from a pipe" 0 "10 kernels triaged" -- \
  "${limited[@]}" "$bin" triage --ncu-csv <(head -n 12 "$tmp/big.csv") --clock-control none -o "$tmp/ten.pb"
expect "triage: the rows read from a pipe are all there" 0 "10 profiled kernels" -- \
  "$bin" report "$tmp/ten.pb"
expect "triage: ... each 10% of the captured time" 0 "10% of captured time" -- "$bin" report "$tmp/ten.pb"

finish
