#!/usr/bin/env bash
# The tool on hostile inputs and failing outputs (issue 25; docs/guarantees.md, "The tool"):
#  - a failed write never destroys what -o names (a pre-existing file is kept whole, a device node
#    stays), and -o naming an input is refused;
#  - a failed write to stdout exits 6 with a message;
#  - control characters in kernel names are escaped in the report;
#  - --thresholds reads bounded regular files only and rejects negative values and duplicate keys.
# usage: test_hardening.sh CUTRIAGE_BINARY TEST_DATA_DIR MAKE_TRACE_FILE MAKE_PC_SAMPLING_FILE
set -u
bin=$1
data=$2
make_trace=$3
make_pcs=$4
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
expect_timeout=60  # a command that hangs fails its check, not the whole script

# A prefix that runs a command with writes past 1 KiB failing (EFBIG; SIGXFSZ ignored), as on a
# full disk.
small_disk=(bash -c 'ulimit -f 1; trap "" XFSZ; exec "$@"' small_disk)

csv=$data/ncu/zoo/strided_load.csv
"$make_trace" "$tmp/trace.pb" || { echo "FAIL make_trace_file"; exit 1; }
"$make_pcs" "$tmp/pc.pb" || { echo "FAIL make_pc_sampling_file"; exit 1; }

# --- item 11: a failed write keeps what -o named -----------------------------------------------
for cmd in trace pprof triage; do
  printf 'precious\n' >"$tmp/keep.$cmd"
  case $cmd in
    trace) args=(trace "$tmp/trace.pb" -o "$tmp/keep.$cmd") ;;
    pprof) args=(pprof "$tmp/pc.pb" -o "$tmp/keep.$cmd") ;;
    triage) args=(triage --ncu-csv "$csv" -o "$tmp/keep.$cmd") ;;
  esac
  expect "$cmd: a failed write exits 6" 6 "cannot write '$tmp/keep.$cmd'" -- "${small_disk[@]}" "$bin" "${args[@]}"
  check "$cmd: a failed write leaves the file that was there whole" \
    bash -c "grep -qx precious '$tmp/keep.$cmd' && test \$(wc -c <'$tmp/keep.$cmd') = 9"
  check "$cmd: a failed write leaves no temporary file" \
    test -z "$(find "$tmp" -name '.keep.*' -print -quit)"
  expect "$cmd: the same write with room succeeds" 0 "" -- "$bin" "${args[@]}"
  check "$cmd: and replaces the file" bash -c "! grep -qx precious '$tmp/keep.$cmd'"
done
if [[ $(id -u) = 0 ]]; then
  # A device node of our own (a copy of /dev/full), so that a regression deletes nothing outside.
  mknod "$tmp/full" c 1 7
  for cmd in trace pprof; do
    src=$tmp/trace.pb
    [[ $cmd = pprof ]] && src=$tmp/pc.pb
    expect "$cmd -o a full device: exits 6" 6 "cannot write '$tmp/full'" -- "$bin" $cmd "$src" -o "$tmp/full"
    check "$cmd -o a full device: the device node is still there" test -c "$tmp/full"
  done
else
  echo "skip device-node checks (mknod needs root)"
fi
expect "-o /dev/null is written in place" 0 "-> /dev/null" -- "$bin" trace "$tmp/trace.pb" -o /dev/null
check "/dev/null is still a device" test -c /dev/null

cp "$tmp/trace.pb" "$tmp/in.pb"
expect "trace -o its input: refused" 1 "is the input" -- "$bin" trace "$tmp/in.pb" -o "$tmp/in.pb"
expect "pprof -o its input (another spelling): refused" 1 "is the input" -- "$bin" pprof "$tmp/in.pb" -o "$tmp/./in.pb"
check "the input is untouched" cmp -s "$tmp/in.pb" "$tmp/trace.pb"
cp "$csv" "$tmp/in.csv"
expect "triage -o its input: refused" 1 "is the input" -- "$bin" triage --ncu-csv "$tmp/in.csv" -o "$tmp/in.csv"
check "the CSV is untouched" cmp -s "$tmp/in.csv" "$csv"

# --- item 14: a failed stdout write is a failure -------------------------------------------------
"$bin" triage --ncu-csv "$csv" -o "$tmp/s.pb" 2>/dev/null
expect "report > /dev/full: exits 6" 6 "cannot write to stdout" -- sh -c '"$0" report "$1" >/dev/full' "$bin" "$tmp/s.pb"
expect "json > /dev/full: exits 6" 6 "cannot write to stdout" -- sh -c '"$0" json "$1" >/dev/full' "$bin" "$tmp/s.pb"
expect "trace -o - > /dev/full: exits 6" 6 "cannot write" -- sh -c '"$0" trace "$1" -o - >/dev/full' "$bin" "$tmp/trace.pb"
expect "rules > /dev/full: exits 6" 6 "cannot write to stdout" -- sh -c '"$0" rules >/dev/full' "$bin"

# --- item 15: control characters in kernel names are escaped -------------------------------------
esc=$(printf '\033')
bel=$(printf '\007')
csi=$(printf '\302\233')  # U+009B, a one-character CSI
sed "s/zoo_strided_load(const float/zoo_${esc}[2J${esc}]0;owned${bel}x${csi}31m(const float/" "$csv" >"$tmp/evil.csv"
check "the CSV has the escape bytes" grep -q "$esc" "$tmp/evil.csv"
expect "triage of a CSV with escapes in a name" 0 "1 kernel triaged" -- \
  "$bin" triage --ncu-csv "$tmp/evil.csv" -o "$tmp/evil.pb" --report
check "triage --report prints no ESC, BEL or CSI byte" bash -c "! grep -q '[$esc$bel]' '$tmp/out' && ! grep -q '$csi' '$tmp/out'"
check "triage --report shows them escaped" grep -qF 'zoo_\x1b[2J\x1b]0;owned\x07x\u009b31m' "$tmp/out"
expect "report of that file" 0 "" -- "$bin" report "$tmp/evil.pb"
check "report prints no ESC, BEL or CSI byte" bash -c "! grep -q '[$esc$bel]' '$tmp/out' && ! grep -q '$csi' '$tmp/out'"
check "report shows them escaped" grep -qF 'zoo_\x1b[2J' "$tmp/out"

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
expect "--thresholds with a session check's threshold (docs/engine.md)" 0 "1 kernel triaged" -- \
  "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/session.thresholds" -o "$tmp/x.pb"
expect "rules lists the session checks' thresholds" 0 "threshold session.d2a.idle_gaps.max_idle_pct = 10" -- "$bin" rules
expect "rules marks a note (docs/engine.md)" 0 "note     qualifies the other findings" -- "$bin" rules

finish
