#!/usr/bin/env bash
# The tool's memory is bounded by what it prints, not by the file (issue 25; docs/guarantees.md,
# "The tool"). Real H200 captures are inflated (inflate_file) to MIB mebibytes: a run with a trace
# summary, PC samples and rewritten kernel records gets superseded revisions of those records and
# its trace repeated, as if it had run on (pcsampling/torch_loop.pb); a trace of 20,000 tiny
# kernels gets its trace repeated, to millions of executions (trace/zoo_tiny_kernels.pb), whole and
# as a run killed before its end (no trace summary: the report recomputes the view from every
# event). Each command's peak resident memory must stay below a fixed bound, itself far below the
# file's size, and its output must be the capture's where the capture's must be its (before: every
# record read was kept, so memory grew with the file: 0.9 to 2.2 GB).
#  - report (text, json and csv rows, several files), diff and pprof of the large file print what
#    they print for the capture; so does `report -` reading it from a pipe;
#  - json prints every record (so many more than the capture's), streamed;
#  - trace exports every execution (so many more), streamed;
#  - report --html holds its timeline's executions up to a cap, and says what it left out;
#  - the killed run's report counts every execution (the capture's times the copies), read from
#    the file or from a pipe.
# usage: test_report_memory.sh CUTRIAGE_BINARY INFLATE_FILE TEST_DATA_DIR WORK_DIR [MIB]
set -u
bin=$(realpath "$1")  # the commands run in other directories
inflate=$2
data=$(realpath "$3")
work=$4
mib=${5:-256}
bound_kb=$((64 * 1024))  # resident memory allowed to each command, whatever the file's size
if ! command -v python3 >/dev/null; then
  echo "python3 not found: the peak resident memory is read with its resource module; skipped"
  exit 77
fi
# Sanitizer runtimes keep shadow memory and quarantines of their own: the bound is not theirs.
if grep -qaE "__asan_init|__tsan_init|__msan_init" "$bin"; then
  echo "a sanitizer build's resident memory is the runtime's as much as the tool's: skipped"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work/small" "$work/big"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

src=$data/pcsampling/torch_loop.pb
other=$data/trace/zoo_fma_chain.pb
tiny=$data/trace/zoo_tiny_kernels.pb
cp "$src" "$work/small/run.pb"
cp "$other" "$work/other.pb"
# inflate_file prints "copies N": the large file holds its source's trace N + 1 times.
if ! copies=$("$inflate" "$src" "$work/big/run.pb" "$mib" | sed -n 's/^copies //p') || [[ -z $copies ]]; then
  echo "FAIL inflate_file could not write the large file"; exit 1
fi
size_kb=$(($(stat -c %s "$work/big/run.pb") / 1024))
limit_kb=$((size_kb / 4 < bound_kb ? size_kb / 4 : bound_kb))
echo "the large file: $size_kb KiB ($copies more copies); peak resident memory allowed: $limit_kb KiB"

# run_in DIR OUT [--stdin FILE] [--filter 'SHELL COMMAND'] [--stderr FILE] -- command...: runs the
# command in DIR, its stdin from FILE through a pipe (cat), its stdout to OUT or through the filter
# into OUT (a large output is counted, not stored), its stderr to FILE or nowhere; prints its exit
# status and the peak resident memory (KiB, getrusage RUSAGE_CHILDREN: the largest of the command,
# cat and the filter).
run_in() {
  python3 - "$@" <<'EOF'
import resource, subprocess, sys
args = sys.argv[1:]
dir, out = args[0], args[1]
args = args[2:]
stdin_file = filt = err = None
while args[0] != "--":
    if args[0] == "--stdin":
        stdin_file = args[1]
    elif args[0] == "--filter":
        filt = args[1]
    elif args[0] == "--stderr":
        err = args[1]
    args = args[2:]
cmd = args[1:]
feeder = subprocess.Popen(["cat", stdin_file], stdout=subprocess.PIPE) if stdin_file else None
with open(out, "wb") as f, open(err or "/dev/null", "wb") as e:
    proc = subprocess.Popen(cmd, cwd=dir, stdin=feeder.stdout if feeder else subprocess.DEVNULL,
                            stdout=subprocess.PIPE if filt else f, stderr=e)
    if feeder:
        feeder.stdout.close()
    consumer = subprocess.Popen(["sh", "-c", filt], stdin=proc.stdout, stdout=f) if filt else None
    if consumer:
        proc.stdout.close()
    rc = proc.wait()
    if consumer:
        consumer.wait()
    if feeder:
        feeder.wait()
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
}

# within NAME RC KB: the large file's command succeeded (a command that stopped early proves
# nothing about its memory) and ran within the memory bound.
within() {
  if [[ ${2:-} != 0 ]]; then
    fail "$1: exit ${2:-?}: its memory was not measured on the whole file"
  elif ((${3:-$((limit_kb + 1))} < limit_kb)); then
    pass "$1: peak resident memory $3 KiB < $limit_kb KiB"
  else
    fail "$1: peak resident memory ${3:-?} KiB, allowed $limit_kb KiB (the file: $size_kb KiB)"
  fi
}

# same NAME RC_A RC_B FILE_A FILE_B: same exit status and output.
same() {
  if [[ -z ${2:-} || -z ${3:-} ]]; then
    fail "$1: the command could not be run"
  elif [[ $2 != "$3" ]]; then
    fail "$1: exit $3 on the large file, $2 on the capture"
  elif ! cmp -s "$4" "$5"; then
    fail "$1: the large file's output differs from the capture's"
    diff "$4" "$5" | head -8 | sed 's/^/  | /'
  else
    pass "$1: the large file prints what the capture prints (exit $3)"
  fi
}

# check NAME -- ARGS...: the command on the capture and on the large file (each named run.pb in
# its own directory, so paths it prints are the same): same exit status, same output, and the
# large file's run within the memory bound.
check() {
  local name=$1
  shift 2
  read -r small_rc small_kb < <(run_in "$work/small" "$work/small.out" -- "$bin" "$@")
  read -r big_rc big_kb < <(run_in "$work/big" "$work/big.out" -- "$bin" "$@")
  same "$name" "${small_rc:-}" "${big_rc:-}" "$work/small.out" "$work/big.out"
  within "$name (the capture: ${small_kb:-?} KiB)" "${big_rc:-}" "${big_kb:-}"
}

check "report" -- report run.pb
check "report --verbose" -- report --verbose run.pb
check "report --format json" -- report --format json run.pb
check "report --format csv --rows families" -- report --format csv --rows families run.pb
check "report of two processes" -- report run.pb ../other.pb
check "diff" -- diff ../other.pb run.pb
check "pprof" -- pprof run.pb -o -

# json: every record, streamed. The records are counted as they go by (the text is about four
# times the file): the capture's, and `copies` more of each trace chunk and rewritten record.
count_records='awk '\''/^  \{$/{r++} /^   "trace": \{$/{t++} /^    "revision": /{v++} {last=$0} NR==1{first=$0}
                   END{print r+0, t+0, v+0, first, (last == "" ? "closed" : "open")}'\'''
read -r small_rc _ < <(run_in "$work/small" "$work/small.count" --filter "$count_records" -- "$bin" json run.pb)
read -r big_rc big_kb < <(run_in "$work/big" "$work/big.count" --filter "$count_records" -- "$bin" json run.pb)
read -r records traces revised first closed <"$work/small.count"
want=$((records + copies * (traces + revised)))
read -r big_records _ _ big_first big_closed <"$work/big.count"
if [[ ${big_rc:-} == 0 && $big_records == "$want" && $big_first == "$first" && $big_closed == closed ]]; then
  pass "json: $big_records records, the capture's $records and $copies more copies of its $traces trace chunks and $revised rewritten records"
else
  fail "json: exit ${big_rc:-?}, $big_records records (want $want), first line '$big_first', array $big_closed"
fi
within "json" "${big_rc:-}" "${big_kb:-}"

# The trace of millions of tiny kernels, with its summary: it reports as the capture does (also
# from a pipe), exports every execution and draws a capped timeline.
rm -f "$work/big/run.pb"
cp "$tiny" "$work/small/tiny.pb"
if ! copies=$("$inflate" "$tiny" "$work/big/tiny.pb" "$mib" | sed -n 's/^copies //p') || [[ -z $copies ]]; then
  echo "FAIL inflate_file could not write the large trace"; exit 1
fi
echo "the large trace: $(($(stat -c %s "$work/big/tiny.pb") / 1024)) KiB ($copies more copies)"

read -r small_rc _ < <(run_in "$work/small" "$work/small.out" -- "$bin" report tiny.pb)
read -r big_rc big_kb < <(run_in "$work/big" "$work/big.out" --stdin "$work/big/tiny.pb" -- "$bin" report -)
same "report - (from a pipe)" "${small_rc:-}" "${big_rc:-}" "$work/small.out" "$work/big.out"
within "report - (from a pipe)" "${big_rc:-}" "${big_kb:-}"

# trace: the summary line counts every execution, and the output holds one event a line for each
# (plus the placed profiled launches), between its opening and its otherData.
count_events='awk '\''/^\{"ph":"X"/{x++} NR==1{first=$0} {last=$0} END{print x+0, first, substr(last, 1, 14)}'\'''
trace_line() { sed -n 's/^cutriage: \([0-9]*\) kernels, \([0-9]*\) copies, \([0-9]*\) NVTX ranges.*/\1 \2 \3/p' "$1"; }
(cd "$work/small" && "$bin" trace tiny.pb -o tiny.json 2>"$work/small.err")
read -r kernels copies_n ranges < <(trace_line "$work/small.err")
read -r big_rc big_kb < <(run_in "$work/big" "$work/big.count" --filter "$count_events" --stderr "$work/big.err" \
                           -- "$bin" trace tiny.pb -o /dev/stdout)
read -r big_kernels big_copies big_ranges < <(trace_line "$work/big.err")
read -r x_events x_first x_last <"$work/big.count"
small_x=$(awk '/^\{"ph":"X"/{x++} END{print x+0}' "$work/small/tiny.json")
n=$((copies + 1))
if [[ ${big_rc:-} == 0 && $big_kernels == $((kernels * n)) && $big_copies == $((copies_n * n)) &&
      $big_ranges == $((ranges * n)) && $x_events == $((small_x + (kernels + copies_n + ranges) * copies)) &&
      $x_first == '{"traceEvents":[' && $x_last == '],"otherData":' ]]; then
  pass "trace: $big_kernels kernels and $big_copies copies, $n times the capture's, $x_events events written"
else
  fail "trace: exit ${big_rc:-?}; $big_kernels kernels, $big_copies copies, $big_ranges NVTX ranges (the capture: $kernels, $copies_n, $ranges, times $n); $x_events events (the capture: $small_x); first '$x_first', last '$x_last'"
fi
within "trace" "${big_rc:-}" "${big_kb:-}"

# The same trace from a pipe: spooled to an unlinked temporary file and read again from there, so
# the same events come out within the same bound (before: every record of the pipe was held).
read -r pipe_rc pipe_kb < <(run_in "$work/big" "$work/pipe.count" --filter "$count_events" --stderr "$work/pipe.err" \
                             --stdin "$work/big/tiny.pb" -- "$bin" trace - -o /dev/stdout)
if [[ ${pipe_rc:-} == 0 ]] && cmp -s "$work/big.count" "$work/pipe.count" &&
   [[ "$(trace_line "$work/pipe.err")" == "$(trace_line "$work/big.err")" ]]; then
  pass "trace - (from a pipe): the file's $x_events events"
else
  fail "trace - (from a pipe): exit ${pipe_rc:-?}; events '$(cat "$work/pipe.count" 2>/dev/null)' vs the file's '$x_events $x_first $x_last'"
fi
within "trace - (from a pipe)" "${pipe_rc:-}" "${pipe_kb:-}"

read -r big_rc big_kb < <(run_in "$work/big" "$work/big.html" -- "$bin" report tiny.pb --html -)
seen=$(sed -n 's/.*class="muted timeline-cut" data-drawn="\([0-9]*\)" data-seen="\([0-9]*\)".*/\1 \2/p' "$work/big.html")
want_seen=$(((kernels + copies_n) * n))
if [[ ${big_rc:-} == 0 && ${seen#* } == "$want_seen" ]] && grep -q 'id="families"' "$work/big.html"; then
  pass "report --html: the timeline draws ${seen% *} of the $want_seen executions and says so"
else
  fail "report --html: exit ${big_rc:-?}, drawn/seen '${seen}' (want $want_seen seen)"
fi
within "report --html" "${big_rc:-}" "${big_kb:-}"

# The same trace as a run killed before its end: no trace summary, so the report recomputes the
# application view from every execution, folded as they are read (before: held, or read again
# whole). Each family's launches and time are the capture's times the copies, its mean the same.
rm -f "$work/big/tiny.pb"
"$inflate" "$tiny" "$work/small/killed.pb" 0 --killed >/dev/null || fail "inflate_file --killed (the capture)"
"$inflate" "$tiny" "$work/big/killed.pb" "$mib" --killed >/dev/null || fail "inflate_file --killed"
families_scaled() {  # SMALL.csv BIG.csv N: the big file's families are the small's, N times over
  python3 - "$@" <<'EOF'
import csv, sys
small, big = (list(csv.DictReader(open(p, newline=""))) for p in sys.argv[1:3])
n = int(sys.argv[3])
close = lambda a, b: abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
ok = len(small) == len(big) > 0 and all(
    s["family_id"] == b["family_id"] and int(b["launches"]) == n * int(s["launches"]) and
    int(b["replayed_launches"]) == n * int(s["replayed_launches"]) and
    close(float(b["total_ns"]), n * float(s["total_ns"])) and close(b["mean_ns"], s["mean_ns"])
    for s, b in zip(small, big))
print("yes" if ok else "no: " + str(small[:1]) + " / " + str(big[:1]))
EOF
}
read -r small_rc _ < <(run_in "$work/small" "$work/small.csv" -- "$bin" report --format csv --rows families killed.pb)
read -r big_rc big_kb < <(run_in "$work/big" "$work/big.csv" -- "$bin" report --format csv --rows families killed.pb)
scaled=$(families_scaled "$work/small.csv" "$work/big.csv" "$n")
if [[ ${small_rc:-} == 0 && ${big_rc:-} == 0 && $scaled == yes ]]; then
  pass "killed run: every family's launches and time are $n times the capture's, its mean the same"
else
  fail "killed run: exit ${big_rc:-?} (the capture: ${small_rc:-?}); scaled: $scaled"
fi
within "killed run, report --format csv --rows families" "${big_rc:-}" "${big_kb:-}"
read -r big_rc big_kb < <(run_in "$work/big" "$work/big.out" -- "$bin" report killed.pb)
if [[ ${big_rc:-} == 0 ]] && grep -q "is recomputed from the trace" "$work/big.out"; then
  pass "killed run: the report recomputes the application view"
else
  fail "killed run: exit ${big_rc:-?}, no recomputed application view"
fi
within "killed run, report" "${big_rc:-}" "${big_kb:-}"
read -r pipe_rc pipe_kb < <(run_in "$work/big" "$work/pipe.out" --stdin "$work/big/killed.pb" -- "$bin" report /dev/stdin)
same "killed run from a pipe: the report of the file" "${big_rc:-}" "${pipe_rc:-}" "$work/big.out" "$work/pipe.out"
within "killed run from a pipe" "${pipe_rc:-}" "${pipe_kb:-}"
read -r big_rc big_kb < <(run_in "$work/big" "$work/big.html" -- "$bin" report killed.pb --html -)
if [[ ${big_rc:-} == 0 ]] && grep -q 'id="families"' "$work/big.html" && grep -q "timeline-cut" "$work/big.html"; then
  pass "killed run: report --html holds the recomputed families and the capped timeline"
else
  fail "killed run: report --html, exit ${big_rc:-?}"
fi
within "killed run, report --html" "${big_rc:-}" "${big_kb:-}"

echo "$passed passed, $failed failed"
((failed == 0))
