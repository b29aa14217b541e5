#!/usr/bin/env bash
# End-to-end checks of the cutriage command: the documented exit codes and one-line errors, and
# the triage -> report -> json path on a real H200 capture.
# usage: test_cli.sh CUTRIAGE_BINARY TEST_DATA_DIR [MAKE_TRACE_FILE]
#   MAKE_TRACE_FILE: tests/cli/make_trace_file, for the checks of `trace` and of the report's
#   application view on a file with a (synthetic) trace
set -u
bin=$1
data=$2
make_trace=${3:-}
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"


csv=$data/ncu/zoo/strided_load.csv
expect "help" 0 "usage: cutriage" -- "$bin" --help
expect "no command" 1 "usage: cutriage" -- "$bin"
expect "unknown command" 1 "unknown command 'frobnicate'" -- "$bin" frobnicate
expect "triage without csv" 1 "--ncu-csv FILE... is required" -- "$bin" triage -o "$tmp/x.pb"
expect "bad clock control" 1 "--clock-control accepts none, locked or unknown, not 'fast'" -- "$bin" triage --ncu-csv "$csv" --clock-control fast
expect "missing csv" 2 "cannot read '$tmp/nope.csv'" -- "$bin" triage --ncu-csv "$tmp/nope.csv" -o "$tmp/x.pb"
printf '"ID","Process ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n' >"$tmp/details.csv"
expect "details page" 5 "--page raw" -- "$bin" triage --ncu-csv "$tmp/details.csv" -o "$tmp/x.pb"
printf 'not.a.rule = 3\n' >"$tmp/bad.thresholds"
expect "bad thresholds" 7 "no rule or session check 'not.a'" -- "$bin" triage --ncu-csv "$csv" --thresholds "$tmp/bad.thresholds" -o "$tmp/x.pb"
expect "unwritable output" 6 "cannot write" -- "$bin" triage --ncu-csv "$csv" -o "$tmp/no/such/dir/x.pb"

expect "triage" 0 "1 kernel triaged" -- "$bin" triage --ncu-csv "$csv" --timings "$data/ncu/timings.csv" --clock-control none -o "$tmp/s.pb"
expect "report verdict" 0 "verdict   MEMORY BOUND - 32.00 sectors per global load request" -- "$bin" report "$tmp/s.pb"
expect "report next action" 0 "next      Make consecutive threads read consecutive addresses" -- "$bin" report "$tmp/s.pb"
expect "report verbose" 0 "not fired  d5.local_memory_traffic" -- "$bin" report "$tmp/s.pb" --verbose
expect "json" 0 '"primaryRuleId": "d5.uncoalesced_global_loads"' -- "$bin" json "$tmp/s.pb"
# A threshold override changes the verdict: with 40 sectors/request allowed, loads are "coalesced".
printf 'd5.uncoalesced_global_loads.sectors_per_request = 40\n' >"$tmp/loose.thresholds"
"$bin" triage --ncu-csv "$csv" --thresholds "$tmp/loose.thresholds" -o "$tmp/loose.pb" 2>/dev/null
expect "threshold override" 0 "not fired  d5.uncoalesced_global_loads" -- "$bin" report "$tmp/loose.pb" --verbose

expect "report missing file" 2 "cannot open" -- "$bin" report "$tmp/none.pb"
expect "report not cutriage" 3 "not a cutriage file" -- "$bin" report "$csv"
: >"$tmp/empty.pb"
expect "report empty" 3 "empty" -- "$bin" report "$tmp/empty.pb"
size=$(stat -c %s "$tmp/s.pb")
head -c $((size - 5)) "$tmp/s.pb" >"$tmp/torn.pb"
expect "report truncated" 4 "truncated: read [0-9]+ complete records, skipped the last [0-9]+ bytes" -- "$bin" report "$tmp/torn.pb"
expect "json truncated" 4 "truncated" -- "$bin" json "$tmp/torn.pb"

# cutriage trace: errors (the export itself is checked by test_trace_export.py).
expect "trace help" 0 "usage: cutriage trace" -- "$bin" trace --help
expect "trace without file" 1 "FILE.pb is required" -- "$bin" trace
expect "trace unknown option" 1 "unknown option '--frobnicate'" -- "$bin" trace --frobnicate "$tmp/s.pb"
expect "trace missing file" 2 "cannot open" -- "$bin" trace "$tmp/none.pb" -o "$tmp/t.json"
expect "trace not cutriage" 3 "not a cutriage file" -- "$bin" trace "$csv" -o "$tmp/t.json"
expect "trace of a file without trace" 10 "the run was made without tracing" -- "$bin" trace "$tmp/s.pb" -o "$tmp/t.json"
if [[ -e "$tmp/t.json" ]]; then
  fail "trace of a file without trace: left $tmp/t.json behind"
fi
if [[ -n "$make_trace" ]]; then
  "$make_trace" "$tmp/trace.pb"
  expect "trace" 0 "10 kernels, 2 copies, 5 NVTX ranges -> $tmp/t.json" -- "$bin" trace "$tmp/trace.pb" -o "$tmp/t.json"
  expect "trace default output" 0 "-> $tmp/trace.pb.trace.json" -- "$bin" trace "$tmp/trace.pb"
  expect "trace to stdout" 0 '^\{"traceEvents":\[' -- "$bin" trace "$tmp/trace.pb" -o -
  expect "trace unwritable output" 6 "cannot write '$tmp/no/dir/t.json'" -- "$bin" trace "$tmp/trace.pb" -o "$tmp/no/dir/t.json"
  expect "report opens with the application view" 0 "^kernel families by GPU time" -- "$bin" report "$tmp/trace.pb"
  expect "report application view verdict" 0 "MEMORY BOUND - DRAM at 91% of peak \(revised\) \(see \[1\]\)" -- "$bin" report "$tmp/trace.pb"
fi

# cutriage run: the app's own exit status, one-line errors, the report of an agent file.
expect "run help lists every option" 0 "CUTRIAGE_MAX_PROFILES_PER_KERNEL" -- "$bin" run --help
expect "run without app" 1 "which application" -- "$bin" run
expect "run unknown flag" 1 "unknown option '--frobnicate'" -- "$bin" run --frobnicate 1 -- true
# A bad value is named by the flag as typed, not by the variable it sets.
expect "run bad value" 1 '^cutriage run: --launch-count "ten": expected a non-negative integer' -- "$bin" run --launch-count ten -- true
expect "run bad value, short flag" 1 '^cutriage run: -c "ten": expected a non-negative integer' -- "$bin" run -c ten -- true
expect "run bad value from the environment" 1 'CUTRIAGE_LAUNCH_COUNT="ten": expected' -- env CUTRIAGE_LAUNCH_COUNT=ten "$bin" run -- true
expect "run library missing" 8 "libcutriage.so not found at $tmp/none.so" -- "$bin" run --library "$tmp/none.so" -- true
if [[ -n "${CUTRIAGE_AGENT_LIBRARY:-}" ]]; then
  expect "run keeps the app's status" 3 "no profile was written" -- "$bin" run -- sh -c 'exit 3'
  expect "run cannot start app" 9 "cannot start $tmp/no-such-app" -- "$bin" run -- "$tmp/no-such-app"
  expect "run passes flags as variables" 0 "^CUTRIAGE_LAUNCH_SKIP=7$" -- \
    "$bin" run --launch-skip 7 --no-report -- sh -c 'env | grep ^CUTRIAGE_LAUNCH_SKIP='
  expect "run passes ncu's short flags as variables" 0 "^CUTRIAGE_KERNEL_NAME=gemm CUTRIAGE_LAUNCH_COUNT=2 CUTRIAGE_LAUNCH_SKIP=3 CUTRIAGE_OUTPUT=$tmp/o.pb$" -- \
    "$bin" run -k gemm -c 2 -s 3 -o "$tmp/o.pb" --no-report -- sh -c 'echo "CUTRIAGE_KERNEL_NAME=$CUTRIAGE_KERNEL_NAME CUTRIAGE_LAUNCH_COUNT=$CUTRIAGE_LAUNCH_COUNT CUTRIAGE_LAUNCH_SKIP=$CUTRIAGE_LAUNCH_SKIP CUTRIAGE_OUTPUT=$CUTRIAGE_OUTPUT"'
  expect "run --flag=value" 0 "^CUTRIAGE_SELECT=all$" -- \
    "$bin" run --select=all --no-report -- sh -c 'env | grep ^CUTRIAGE_SELECT='
  expect "run leaves the application's flags alone" 0 "^app: --help -c 1$" -- \
    "$bin" run --no-report sh -c 'echo "app: $*"' sh --help -c 1
  expect "run injects the agent" 0 "^CUDA_INJECTION64_PATH=.*libcutriage.so$" -- \
    "$bin" run --no-report -- sh -c 'env | grep ^CUDA_INJECTION64_PATH='
fi
# run's progress lines: the "application" writes an agent file (H200, 6 profiled launches) in two
# parts 0.4 s apart, as the agent would while it runs; run follows it and prints a line per launch.
# Any regular file stands for the agent library: the application here is a shell.
agent_file=$data/agent/prog_multithread.pb
grow='head -c 30000 "$1" >"$2"; sleep 0.4; tail -c +30001 "$1" >>"$2"; sleep 0.4'
expect "run prints a line per profiled launch as the file grows" 0 \
  "^cutriage: profiled gt_[a-z_]+ \(launch #[0-9]+\): LATENCY BOUND - achieved occupancy" -- \
  "$bin" run --library "$bin" -o "$tmp/grow.pb" --no-report -- sh -c "$grow" sh "$agent_file" "$tmp/grow.pb"
n=$(grep -c '^cutriage: profiled ' "$tmp/err")
want=$("$bin" json "$agent_file" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len({r["kernel"]["launchIndex"] for r in d["records"] if "kernel" in r and r["kernel"].get("status") == "PROFILE_STATUS_PROFILED"}))' 2>/dev/null || echo "?")
if [[ $n == "$want" ]]; then
  ok "run: one line per profiled launch ($n)"
else
  fail "run: $n progress lines, expected $want"
fi
if grep -q $'\x1b' "$tmp/err"; then
  fail "run: colour in a pipe"
else
  ok "run: no colour in a pipe"
fi
expect "run --quiet prints no progress" 0 "" -- \
  "$bin" run --quiet --library "$bin" -o "$tmp/quiet.pb" --no-report -- sh -c "$grow" sh "$agent_file" "$tmp/quiet.pb"
if grep -q 'cutriage: profiled' "$tmp/err"; then
  fail "run --quiet: progress lines"
else
  ok "run --quiet: no progress lines"
fi

# The report of a real agent file (H200): status lines, session end, not-profiled section.
expect "report of an agent file" 0 "3 CUDA graph launches" -- "$bin" report "$data/agent/prog_graphs.pb"
expect "report of an agent file names the kernel" 0 "gt_add_one" -- "$bin" report "$data/agent/prog_graphs.pb"

finish
