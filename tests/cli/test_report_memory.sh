#!/usr/bin/env bash
# The report's memory is bounded by what it prints, not by the file (issue 25; docs/guarantees.md,
# "The tool"): a real H200 capture with a trace summary, PC samples and rewritten kernel records
# is inflated (inflate_file) to MIB mebibytes with more trace chunks and superseded revisions of
# its kernel records. `report` (text, json and csv rows, several files), `diff` and `pprof` of the
# large file must print what they print for the capture, and the peak resident memory of each
# must stay below a fixed bound, itself far below the file's size (before: every record read was
# kept, so memory grew with the file).
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
cp "$src" "$work/small/run.pb"
cp "$other" "$work/other.pb"
if ! "$inflate" "$src" "$work/big/run.pb" "$mib"; then
  echo "FAIL inflate_file could not write the large file"; exit 1
fi
size_kb=$(($(stat -c %s "$work/big/run.pb") / 1024))
limit_kb=$((size_kb / 4 < bound_kb ? size_kb / 4 : bound_kb))
echo "the large file: $size_kb KiB; peak resident memory allowed: $limit_kb KiB"

# run_in DIR OUT -- command...: runs the command in DIR, its stdout to OUT; prints its exit status
# and peak resident memory (KiB, getrusage RUSAGE_CHILDREN).
run_in() {
  local dir=$1 out=$2
  shift 3
  python3 - "$dir" "$out" "$@" <<'EOF'
import resource, subprocess, sys
dir, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "wb") as f:
    rc = subprocess.run(cmd, cwd=dir, stdout=f, stderr=subprocess.DEVNULL).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
}

# check NAME -- ARGS...: the command on the capture and on the large file (each named run.pb in
# its own directory, so paths it prints are the same): same exit status, same output, and the
# large file's run within the memory bound.
check() {
  local name=$1
  shift 2
  read -r small_rc small_kb < <(run_in "$work/small" "$work/small.out" -- "$bin" "$@")
  read -r big_rc big_kb < <(run_in "$work/big" "$work/big.out" -- "$bin" "$@")
  if [[ -z ${small_rc:-} || -z ${big_rc:-} ]]; then
    fail "$name: the command could not be run"; return
  fi
  if [[ $small_rc != "$big_rc" ]]; then
    fail "$name: exit $big_rc on the large file, $small_rc on the capture"
  elif ! cmp -s "$work/small.out" "$work/big.out"; then
    fail "$name: the large file's output differs from the capture's"
    diff "$work/small.out" "$work/big.out" | head -8 | sed 's/^/  | /'
  else
    pass "$name: the large file prints what the capture prints (exit $big_rc)"
  fi
  if ((big_kb < limit_kb)); then
    pass "$name: peak resident memory $big_kb KiB < $limit_kb KiB (the capture: $small_kb KiB)"
  else
    fail "$name: peak resident memory $big_kb KiB, allowed $limit_kb KiB (the file: $size_kb KiB)"
  fi
}

check "report" -- report run.pb
check "report --verbose" -- report --verbose run.pb
check "report --format json" -- report --format json run.pb
check "report --format csv --rows families" -- report --format csv --rows families run.pb
check "report of two processes" -- report run.pb ../other.pb
check "diff" -- diff ../other.pb run.pb
check "pprof" -- pprof run.pb -o -

echo "$passed passed, $failed failed"
((failed == 0))
