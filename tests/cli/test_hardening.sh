#!/usr/bin/env bash
# The tool on hostile inputs and failing outputs (issue 25; docs/guarantees.md, "The tool"):
#  - --thresholds reads bounded regular files only and rejects negative values and duplicate keys.
# usage: test_hardening.sh CUTRIAGE_BINARY TEST_DATA_DIR MAKE_TRACE_FILE MAKE_PC_SAMPLING_FILE
set -u
bin=$1
data=$2
make_trace=$3
make_pcs=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

expect() {  # expect NAME CODE PATTERN -- command...
  local name=$1 code=$2 pattern=$3
  shift 4
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL $name: exit $rc, expected $code"; sed 's/^/  | /' "$tmp/err" | head -5
    failed=$((failed + 1)); return
  fi
  if [[ -n $pattern ]] && ! grep -qE -- "$pattern" "$tmp/out" "$tmp/err"; then
    echo "FAIL $name: output lacks /$pattern/"; sed 's/^/  | /' "$tmp/out" "$tmp/err" | head -8
    failed=$((failed + 1)); return
  fi
  echo "ok   $name"; passed=$((passed + 1))
}
check() {  # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}
# A prefix that runs a command with writes past 1 KiB failing (EFBIG; SIGXFSZ ignored), as on a
# full disk.
small_disk=(bash -c 'ulimit -f 1; trap "" XFSZ; exec "$@"' small_disk)

csv=$data/ncu/zoo/strided_load.csv
"$make_trace" "$tmp/trace.pb" || { echo "FAIL make_trace_file"; exit 1; }
"$make_pcs" "$tmp/pc.pb" || { echo "FAIL make_pc_sampling_file"; exit 1; }

# --- item 16: --thresholds ------------------------------------------------------------------------
mkfifo "$tmp/fifo"
expect "--thresholds /dev/zero: exit 7, what it is" 7 "--thresholds '/dev/zero': is a character device, not a regular file" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds /dev/zero -o "$tmp/x.pb"
expect "--thresholds FIFO: exit 7 at once" 7 "is a named pipe \(FIFO\), not a regular file" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/fifo" -o "$tmp/x.pb"
expect "--thresholds directory: exit 7" 7 "is a directory, not a regular file" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp" -o "$tmp/x.pb"
truncate -s 2M "$tmp/big.thresholds"
expect "--thresholds over 1 MiB: exit 7" 7 "is larger than 1 MiB" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/big.thresholds" -o "$tmp/x.pb"
expect "--thresholds missing: exit 2" 2 "cannot be opened" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/none" -o "$tmp/x.pb"
printf 'd0.duration_divergence.max_ratio = -2\n' >"$tmp/neg.thresholds"
expect "--thresholds negative: exit 7" 7 "line 1: d0.duration_divergence.max_ratio = -2: thresholds are not negative" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/neg.thresholds" -o "$tmp/x.pb"
printf 'd0.duration_divergence.max_ratio = 2\nd0.duration_divergence.max_ratio = 3\n' >"$tmp/dup.thresholds"
expect "--thresholds duplicate key: exit 7" 7 "line 2: d0.duration_divergence.max_ratio is set again \(first on line 1\)" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/dup.thresholds" -o "$tmp/x.pb"
{ printf 'd0.duration_divergence.max_ratio = '; head -c 100000 /dev/zero | tr '\0' 9; printf 'x\n'; } >"$tmp/long.thresholds"
expect "--thresholds long value: exit 7" 7 "\(100001 characters\)" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/long.thresholds" -o "$tmp/x.pb"
check "--thresholds long value: the message is one short line" test "$(wc -c <"$tmp/err")" -lt 300
printf 'session.d2a.idle_gaps.max_idle_pct = 20\n' >"$tmp/session.thresholds"
expect "--thresholds with a session check's threshold (README)" 0 "1 kernel triaged" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/session.thresholds" -o "$tmp/x.pb"
expect "rules lists the session checks' thresholds" 0 "threshold session.d2a.idle_gaps.max_idle_pct = 10" -- "$bin" rules

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
