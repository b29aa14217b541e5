#!/usr/bin/env bash
# The dependency gate (.ci/deps.sh) checked: it passes on the tree as it is (and on its
# libcutriage.so, when given), and on copies of the tree with one forbidden edge planted each it
# fails and names the file and the edge: an include (project header, quoted header found through
# another room's directory, libprotobuf), a link (direct, and through a target that links it), a
# path into another room in a CMakeLists.txt. With a C++ compiler, stub libraries check the ELF
# half: the C API alone passes, an extra export or a NEEDED libfmt fails.
# usage: test_deps.sh SOURCE_DIR [LIBCUTRIAGE.so] [CXX]
set -u
src=$(cd "$1" && pwd)
lib=${2:-}
cxx=${3:-c++}
deps=$src/.ci/deps.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   - $1"; }
bad() {
  echo "FAIL - $1"
  sed 's/^/       /' "$work/out"
  fail=1
}

copy() {  # a fresh copy of the rooms deps.sh reads, in $work/tree
  rm -rf "$work/tree"
  mkdir -p "$work/tree"
  (cd "$src" && tar -cf - base triage collectors agent proto tools) | tar -xf - -C "$work/tree"
}
run() {  # run TREE LIBRARY -> rc, output in $work/out
  rc=0
  bash "$deps" "$1" "$2" >"$work/out" 2>&1 || rc=$?
}
expect_pass() {  # DESCRIPTION TREE LIBRARY
  run "$2" "$3"
  if [[ $rc -eq 0 ]]; then ok "$1"; else bad "$1 (exit $rc)"; fi
}
expect_fail() {  # DESCRIPTION PATTERN TREE LIBRARY: exit 1 and PATTERN (grep -E) in the output
  run "$3" "$4"
  if [[ $rc -eq 1 ]] && grep -Eq -- "$2" "$work/out"; then ok "$1"; else bad "$1 (exit $rc, wanted /$2/)"; fi
}
plant() {  # FILE TEXT: a fresh copy with TEXT appended to FILE; prints the line it lands on
  copy
  printf '%s\n' "$2" >>"$work/tree/$1"
  wc -l <"$work/tree/$1" | tr -d ' '
}
none=$work/no-such-library.so

# --- the real tree ------------------------------------------------------------------------------
if [[ -n $lib ]]; then
  expect_pass "the tree and its libcutriage.so pass" "$src" "$lib"
  grep -q "exports exactly the C API" "$work/out" || bad "the library was checked"
else
  expect_pass "the tree passes (no libcutriage.so built)" "$src" "$none"
fi
copy
expect_pass "an unchanged copy passes" "$work/tree" "$none"
if grep -q "not checked" "$work/out"; then
  ok "without a library it says the ELF checks did not run"
else
  bad "without a library it says the ELF checks did not run"
fi

# --- planted edges ------------------------------------------------------------------------------
n=$(plant triage/src/engine.cpp '#include "cutriage/collectors/platform.h"')
expect_fail "triage including a collectors header" "triage/src/engine.cpp:$n: triage -> collectors" "$work/tree" "$none"

n=$(plant triage/src/timeline.cpp '#include "cutriage/wire/writer.h"')
expect_fail "triage including the wire writer" "triage/src/timeline.cpp:$n: triage -> wire" "$work/tree" "$none"

n=$(plant triage/include/cutriage/triage/rule.h '#include <google/protobuf/message.h>')
expect_fail "triage including libprotobuf" "triage/include/cutriage/triage/rule.h:$n: triage -> libprotobuf" \
  "$work/tree" "$none"

n=$(plant base/src/status.cpp '#include "cutriage/triage/inputs.h"')
expect_fail "base including triage" "base/src/status.cpp:$n: base -> triage" "$work/tree" "$none"

n=$(plant collectors/src/cubin.cpp '#include "cutriage/triage/timeline.h"')
expect_fail "collectors including triage" "collectors/src/cubin.cpp:$n: collectors -> triage" "$work/tree" "$none"

# A quoted name found only in tools/src (how agent/ used to include demangle.h).
n=$(plant agent/src/config.cpp '#include "report.h"')
expect_fail "the agent including a tools header by its bare name" "agent/src/config.cpp:$n: agent -> tools" \
  "$work/tree" "$none"

# CLI11 is the tool's: its header anywhere else is an edge (the tool's own use passes above).
grep -q '#include <CLI/CLI.hpp>' "$src/tools/src/cli.h" && ok "the tool includes CLI11 (and passes)" ||
  { echo "no CLI11 include in tools/src/cli.h" >"$work/out"; bad "the tool includes CLI11 (and passes)"; }
n=$(plant agent/src/config.cpp '#include <CLI/CLI.hpp>')
expect_fail "the agent including CLI11" "agent/src/config.cpp:$n: agent -> CLI11" "$work/tree" "$none"
n=$(plant triage/src/engine.cpp '#include <CLI/App.hpp>')
expect_fail "triage including CLI11" "triage/src/engine.cpp:$n: triage -> CLI11" "$work/tree" "$none"
n=$(plant proto/wire/src/writer.cpp '#include <CLI/CLI.hpp>')
expect_fail "the wire writer including CLI11" "proto/wire/src/writer.cpp:$n: wire -> CLI11" "$work/tree" "$none"

n=$(plant collectors/CMakeLists.txt 'target_link_libraries(cutriage_collectors_api INTERFACE cutriage::triage)')
expect_fail "collectors linking triage" "collectors/CMakeLists.txt:$n: collectors -> triage" "$work/tree" "$none"

# The wire writer links triage: collectors linking it reach triage through it.
n=$(plant collectors/CMakeLists.txt 'target_link_libraries(cutriage_collectors_cubin PUBLIC cutriage::wire)')
expect_fail "collectors reaching triage through the wire writer" \
  "collectors/CMakeLists.txt:$n: collectors -> triage: .*through cutriage::wire -> cutriage::triage" \
  "$work/tree" "$none"

n=$(plant triage/CMakeLists.txt 'target_link_libraries(cutriage_triage PRIVATE protobuf::libprotobuf)')
expect_fail "triage linking libprotobuf" "triage/CMakeLists.txt:$n: triage -> libprotobuf" "$work/tree" "$none"

n=$(plant base/CMakeLists.txt 'target_link_libraries(cutriage_base PUBLIC cutriage_collectors_api)')
expect_fail "base linking the collectors" "base/CMakeLists.txt:$n: base -> collectors" "$work/tree" "$none"

n=$(plant agent/CMakeLists.txt 'target_link_libraries(cutriage_agent_core PRIVATE cutriage::proto)')
expect_fail "the agent linking the libprotobuf classes" "agent/CMakeLists.txt:$n: agent -> libprotobuf" \
  "$work/tree" "$none"

# shellcheck disable=SC2016 # the CMake variable, written as it is
n=$(plant agent/CMakeLists.txt 'target_include_directories(cutriage_agent_config PUBLIC ${PROJECT_SOURCE_DIR}/tools/src)')
expect_fail "the agent taking an include directory of tools" "agent/CMakeLists.txt:$n: agent -> tools" \
  "$work/tree" "$none"

# --- the library --------------------------------------------------------------------------------
copy
mapfile -t api < <(sed -n '/global:/,/local:/p' "$src/agent/cutriage.map" |
  sed -n 's/^ *\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p')
stub() {  # OUTPUT LINK-FLAGS NAME...: a shared library exporting a C function per NAME
  local out=$1 flags=$2
  shift 2
  for s in "$@"; do echo "extern \"C\" __attribute__((visibility(\"default\"))) int $s() { return 0; }"; done \
    >"$work/stub.cpp"
  # shellcheck disable=SC2086
  "$cxx" -shared -fPIC -fvisibility=hidden -o "$out" "$work/stub.cpp" $flags >"$work/cc.log" 2>&1
}
if stub "$work/api.so" "" "${api[@]}"; then
  expect_pass "a library exporting exactly the C API passes" "$work/tree" "$work/api.so"
  stub "$work/extra.so" "" "${api[@]}" cutriage_extra &&
    expect_fail "a library exporting more than the C API" \
      "exports cutriage_extra, which is not in agent/cutriage.map" "$work/tree" "$work/extra.so"
  stub "$work/missing.so" "" "${api[@]:1}" &&
    expect_fail "a library missing an entry point of the C API" "does not export ${api[0]} " \
      "$work/tree" "$work/missing.so"
  if stub "$work/fmt.so" "-Wl,--no-as-needed -lfmt" "${api[@]}"; then
    expect_fail "a library that needs libfmt" "libcutriage.so -> libfmt" "$work/tree" "$work/fmt.so"
  else
    echo "skip - no libfmt to link a stub against"
  fi
else
  echo "skip - the library checks: '$cxx' could not build a shared library ($(head -1 "$work/cc.log"))"
fi

exit "$fail"
