#!/usr/bin/env bash
# The installed CMake package (issue 6): installs this build into a scratch prefix, configures and
# builds tests/agent_lib/consumer against it with find_package(cutriage) and cutriage::agent, and
# runs the consumer: it must link, start, print the version, and exit 0 whether or not a GPU is
# usable (without one the agent stays off with one line).
#   test_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
for f in lib/cmake/cutriage/cutriageConfig.cmake include/cutriage/cutriage.h; do
  [[ -e $work/prefix/$f ]] || { echo "FAIL: $f not installed"; exit 1; }
done
ls "$work"/prefix/lib*/libcutriage.so >/dev/null 2>&1 || { echo "FAIL: libcutriage.so not installed"; exit 1; }
cmake -S "$src/tests/agent_lib/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
rc=0
# A clean environment: the caller's CUTRIAGE_* variables (CI sets CUTRIAGE_CMAKE_ARGS for
# tests/run.sh) would rightly draw the agent's unknown-variable warning.
out=$(env -i PATH="$PATH" CUTRIAGE_OUTPUT="$work/consumer.pb" "$work/consumer/consumer" 2>"$work/stderr.txt") || rc=$?
echo "$out"
if [[ $rc -ne 0 ]]; then echo "FAIL: consumer exit $rc"; cat "$work/stderr.txt"; exit 1; fi
grep -Eq '^consumer: cutriage [0-9]+\.[0-9]+\.[0-9]+, started=[01], active=[01]$' <<<"$out" ||
  { echo "FAIL: unexpected output"; exit 1; }
# The agent says at most one line when it stays off.
lines=$(grep -c . "$work/stderr.txt" || true)
if [[ $lines -gt 1 ]]; then echo "FAIL: $lines lines on stderr:"; cat "$work/stderr.txt"; exit 1; fi
echo "PASS: installed package found, linked and ran ($lines line(s) on stderr)"
