#!/usr/bin/env bash
# libcutriage.so as the host process sees it, on a machine without a GPU (CI):
#  - it exports the C API and nothing else, and pulls no libprotobuf, spdlog, fmt or libcuda;
#  - its RUNPATH has no empty or relative entry (which would be the application's working directory);
#  - loaded like the driver loads it, it prints one clear line and leaves the app alone, for no
#    driver, bad configuration, an unknown key, the off switch and a bad output pattern.
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
  env "${clean[@]}" "$@" "$loader" "$lib" >"$tmp_out" 2>"$tmp_err"
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

cd / && rm -rf "$tmpdir"
exit $fail
