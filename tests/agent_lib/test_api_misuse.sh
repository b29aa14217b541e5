#!/usr/bin/env bash
# Runs tests/agent_lib/api_misuse.cpp in a scratch directory with only the variables under test:
# it must exit 0, print "api: ok", say one line on stderr at most, and leave no partial output.
# usage: test_api_misuse.sh API_MISUSE_BINARY
set -u
bin=$(realpath "$1")
dir=$(mktemp -d)
cd "$dir" || exit 1
clean=(-u CUDA_INJECTION64_PATH)
for v in $(compgen -e | grep '^CUTRIAGE_'); do clean+=(-u "$v"); done
env "${clean[@]}" "$bin" >out.txt 2>err.txt
rc=$?
cat out.txt
sed 's/^/stderr: /' err.txt
fail=0
[ "$rc" = 0 ] || { echo "FAIL - exit status $rc"; fail=1; }
grep -q '^api: ok' out.txt || { echo "FAIL - not ok"; fail=1; }
[ "$(wc -l <err.txt)" -le 1 ] || { echo "FAIL - more than one line on stderr"; fail=1; }
ls -A | grep -q partial && { echo "FAIL - partial output left"; fail=1; }
cd / && rm -rf "$dir"
exit $fail
