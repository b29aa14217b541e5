# The helpers the tests/cli/*.sh checks share. A script sources it after reading its arguments:
#
#   source "$(dirname "$0")/lib.sh"
#
# which makes $tmp (a fresh directory, removed when the script exits) and the counters $passed and
# $failed. Each assertion prints one line, "ok   NAME" or "FAIL NAME" (then, for expect, the first
# lines of what the command printed), and counts it; `finish` prints the totals and is the
# script's last command, so that its status is the script's.
#
# Settings expect reads at each call:
#   expect_timeout  seconds a command may run (timeout(1)); unset, no limit
#   expect_show     what a wrong exit status shows: "err", the first 5 lines of stderr (the
#                   default), or "all", the first 8 of stdout and stderr
# shellcheck shell=bash

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() {  # ok NAME
  echo "ok   $1"
  passed=$((passed + 1))
}

fail() {  # fail NAME
  echo "FAIL $1"
  failed=$((failed + 1))
}

check() {  # check NAME CONDITION...: passes when the command CONDITION... succeeds
  local name=$1
  shift
  if "$@"; then ok "$name"; else fail "$name"; fi
}

# expect NAME CODE PATTERN -- command...: runs the command, stdout to $tmp/out and stderr to
# $tmp/err; passes when it exits CODE and, unless PATTERN is empty, $tmp/out or $tmp/err matches
# the extended regular expression PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  if [[ -n ${expect_timeout:-} ]]; then
    timeout "$expect_timeout" "$@" >"$tmp/out" 2>"$tmp/err"
  else
    "$@" >"$tmp/out" 2>"$tmp/err"
  fi
  local rc=$?
  if [[ $rc -ne $code ]]; then
    fail "$name: exit $rc, expected $code"
    if [[ ${expect_show:-err} == all ]]; then
      sed 's/^/  | /' "$tmp/out" "$tmp/err" | head -8
    else
      sed 's/^/  | /' "$tmp/err" | head -5
    fi
    return
  fi
  if [[ -n $pattern ]] && ! grep -qE -- "$pattern" "$tmp/out" "$tmp/err"; then
    fail "$name: output lacks /$pattern/"
    sed 's/^/  | /' "$tmp/out" "$tmp/err" | head -8
    return
  fi
  ok "$name"
}

finish() {  # the totals; succeeds when nothing failed
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
