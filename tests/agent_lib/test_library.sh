#!/usr/bin/env bash
# libcutriage.so as the host process sees it, on a machine without a GPU (CI):
#  - it exports the C API and nothing else, and pulls no libprotobuf, spdlog, fmt or libcuda;
#  - its RUNPATH has no empty or relative entry (which would be the application's working directory);
#  - loaded like the driver loads it, it prints one clear line and leaves the app alone, for no
#    driver, CUDA's stub driver library found first, bad configuration, an unknown key, the off switch and a bad output pattern, and for a
#    FIFO, /dev/zero, a directory or an oversized file as CUTRIAGE_THRESHOLDS or CUTRIAGE_LOG_FILE.
# usage: test_library.sh LIBCUTRIAGE.so LOAD_AGENT
set -u
lib=$(realpath "$1")
loader=$(realpath "$2")
fail=0
check() {  # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}

# --- exported symbols -------------------------------------------------------------------------
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWVBDR]$/ {print $3}' | sed 's/@.*//' | sort -u)
expected=$(printf '%s\n' InitializeInjection cutriage_active cutriage_finish cutriage_flush cutriage_init \
  cutriage_request_deep_capture cutriage_start cutriage_stop \
  cutriage_version | sort)
check "exports exactly the C API (got: $(echo $exports))" test "$exports" = "$expected"

# --- shared-library dependencies ----------------------------------------------------------------
needed=$(readelf -d "$lib" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}')
for bad in libprotobuf libspdlog libfmt libcuda.so; do
  check "does not depend on $bad (NEEDED: $(echo $needed))" bash -c "! grep -q '^$bad' <<<'$needed'"
done
check "depends on CUPTI" bash -c "grep -q '^libcupti' <<<'$needed'"

# --- search path --------------------------------------------------------------------------------
# An empty or relative RUNPATH/RPATH entry is resolved against the host process's working
# directory: a libgcc_s.so.1 left there would run its constructors inside the application.
# $ORIGIN (the library's own directory) is the one non-absolute form allowed.
runpath=$(readelf -d "$lib" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
bad_entries=""
while IFS= read -r entry; do
  case $entry in
    /* | '$ORIGIN' | '$ORIGIN/'*) ;;
    *) bad_entries+="'$entry' " ;;
  esac
done < <(printf '%s\n' "$runpath" | tr ':' '\n')
if [ -z "$runpath" ]; then bad_entries=""; fi  # no search path at all is fine
check "RUNPATH has no empty or relative entry (RUNPATH: '$runpath'; bad: $bad_entries)" test -z "$bad_entries"

# --- behaviour in a process ---------------------------------------------------------------------
run() {  # run ENV... -> sets out, err, rc
  local tmp_out tmp_err
  tmp_out=$(mktemp)
  tmp_err=$(mktemp)
  # Only the variables under test: the caller's own CUTRIAGE_* (CI exports CUTRIAGE_CMAKE_ARGS for
  # tests/run.sh) would add "unknown variable" warnings to the output checked below.
  local clean=(-u CUDA_INJECTION64_PATH)
  for v in $(compgen -e | grep '^CUTRIAGE_'); do clean+=(-u "$v"); done
  # timeout: a hang inside InitializeInjection (the application's cuInit) shows as rc 124.
  env "${clean[@]}" "$@" timeout 20 "$loader" "$lib" >"$tmp_out" 2>"$tmp_err"
  rc=$?
  out=$(cat "$tmp_out")
  err=$(cat "$tmp_err")
  rm -f "$tmp_out" "$tmp_err"
}
lines() { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l; fi; }

has_driver=0
if ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then has_driver=1; fi

tmpdir=$(mktemp -d)
cd "$tmpdir" || exit 1

if [ "$has_driver" = 0 ]; then
  run
  check "no driver: the app runs" test "$rc" = 0 -a "$out" = "app: ok (InitializeInjection returned 1)"
  check "no driver: exactly one line on stderr (got: $err)" test "$(lines "$err")" = 1
  check "no driver: the line says why" bash -c "grep -q 'cutriage: no usable GPU or driver' <<<'$err'"
  check "no driver: no output file" test -z "$(ls "$tmpdir")"
else
  echo "skip - no-driver check (this machine has a driver)"
fi

# CUDA's stub libcuda.so (lib64/stubs of the toolkit) found first on the library path: CUPTI fails
# without saying why, and the agent must say what is wrong instead of a line of source code.
stub=""
for d in /usr/local/cuda/lib64/stubs /usr/local/cuda/targets/x86_64-linux/lib/stubs; do
  if [ -e "$d/libcuda.so" ]; then stub="$d/libcuda.so"; break; fi
done
if [ -n "$stub" ]; then
  stubdir=$(mktemp -d)
  ln -s "$stub" "$stubdir/libcuda.so.1"
  run LD_LIBRARY_PATH="$stubdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  check "stub driver: the app runs" test "$rc" = 0 -a "$out" = "app: ok (InitializeInjection returned 1)"
  check "stub driver: exactly one line on stderr (got: $err)" test "$(lines "$err")" = 1
  check "stub driver: says no usable GPU and names the stub" \
    bash -c 'grep -q "no usable GPU or driver" <<<"$1" && grep -q "stub library" <<<"$1"' _ "$err"
  check "stub driver: no source code in the message" bash -c '! grep -q "reinterpret_cast\|&subscriber_" <<<"$1"' _ "$err"
  rm -rf "$stubdir"
else
  echo "skip - stub-driver check (no CUDA toolkit stub on this machine)"
fi

run CUTRIAGE_LAUNCH_COUNT=ten
check "bad value: the app runs" test "$rc" = 0 -a -n "$out"
check "bad value: the message names the variable and the accepted values (got: $err)" \
  bash -c "grep -q 'CUTRIAGE_LAUNCH_COUNT' <<<'$err' && grep -qi 'integer' <<<'$err'"
check "bad value: the agent says it is off" bash -c "grep -q 'off for this run' <<<'$err'"
check "bad value: two lines at most (got: $err)" test "$(lines "$err")" -le 2

run CUTRIAGE_LOG_LEVEL=loud
check "bad log level: names the variable and the choices (got: $err)" \
  bash -c "grep -q 'CUTRIAGE_LOG_LEVEL' <<<'$err' && grep -q 'debug' <<<'$err'"

run CUTRIAGE_OUTPUT='run-%z.pb'
check "bad output pattern: names CUTRIAGE_OUTPUT (got: $err)" bash -c "grep -q 'CUTRIAGE_OUTPUT' <<<'$err'"
check "bad output pattern: app runs" test "$rc" = 0 -a -n "$out"

run CUTRIAGE_ENABLE=0
check "off switch: silent (got: $err)" test -z "$err"
check "off switch: app runs" test "$rc" = 0 -a -n "$out"

run CUTRIAGE_LANCH_COUNT=3
check "unknown key: warns with a suggestion (got: $err)" \
  bash -c "grep -q 'CUTRIAGE_LANCH_COUNT' <<<'$err' && grep -q 'CUTRIAGE_LAUNCH_COUNT' <<<'$err'"
check "unknown key: app runs" test "$rc" = 0 -a -n "$out"

# --- files named by the environment (docs/guarantees.md) -----------------------------------------
# Read bounded, never blocking, regular files only: a FIFO, /dev/zero or a directory gives one line
# naming the variable, the agent stays off and the application runs on (before: a FIFO blocked
# cuInit forever, /dev/zero grew to a gigabyte, a directory read as an empty file).
mkdir -p "$tmpdir/files"
mkfifo "$tmpdir/files/fifo"
for var in CUTRIAGE_THRESHOLDS CUTRIAGE_LOG_FILE; do
  for target in "$tmpdir/files/fifo" /dev/zero "$tmpdir/files"; do
    case $target in
      */fifo) kind="named pipe" ;;
      /dev/zero) kind="character device" ;;
      *) kind="directory" ;;
    esac
    start=$SECONDS
    run "$var=$target"
    check "$var=$kind: the app runs at once (rc $rc, $((SECONDS - start)) s)" \
      test "$rc" = 0 -a "$out" = "app: ok (InitializeInjection returned 1)"
    check "$var=$kind: one line naming the variable and what the file is (got: $err)" \
      bash -c "grep -q '$var=\"$target\": is a $kind' <<<\"\$1\" && test \"\$(wc -l <<<\"\$1\")\" = 1" _ "$err"
    check "$var=$kind: the agent says it is off" bash -c "grep -q 'off for this run' <<<'$err'"
  done
done
check "the FIFO is left in place" test -p "$tmpdir/files/fifo"
printf 'x' >"$tmpdir/files/big" && truncate -s 2M "$tmpdir/files/big"
run CUTRIAGE_THRESHOLDS="$tmpdir/files/big"
check "CUTRIAGE_THRESHOLDS over 1 MiB: refused, naming the limit (got: $err)" \
  bash -c "grep -q 'CUTRIAGE_THRESHOLDS=.*is larger than 1 MiB' <<<'$err' && grep -q 'off for this run' <<<'$err'"
# docs/engine.md's example: session checks' thresholds are overridden like the rules' (before: "no rule
# 'session.d2a.idle_gaps'" turned the agent off).
printf 'session.d2a.idle_gaps.max_idle_pct = 20\n' >"$tmpdir/files/session.txt"
run CUTRIAGE_THRESHOLDS="$tmpdir/files/session.txt"
check "CUTRIAGE_THRESHOLDS with a session threshold: accepted (got: $err)" \
  bash -c "! grep -q 'CUTRIAGE_THRESHOLDS' <<<'$err' && test \"\$(wc -l <<<'$err')\" -le 1"
printf 'd0.duration_divergence.max_ratio = -5\n' >"$tmpdir/files/negative.txt"
run CUTRIAGE_THRESHOLDS="$tmpdir/files/negative.txt"
check "CUTRIAGE_THRESHOLDS with a negative value: refused, naming the variable (got: $err)" \
  bash -c "grep -q 'CUTRIAGE_THRESHOLDS=.*line 1: .*not negative; the agent is off for this run' <<<'$err'"
rm -rf "$tmpdir/files"

cd / && rm -rf "$tmpdir"
exit $fail
