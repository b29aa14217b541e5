#!/usr/bin/env bash
# Dependency gate: each room of the project uses only what it may (docs/layout.md). Fails, naming
# the file and the edge, on:
#  - an #include or a target_link_libraries line (direct, or through the targets it links) or a
#    path into another room's directory in a CMakeLists.txt, that is a forbidden edge
#    (.ci/deps.py, FORBIDDEN): base -> anything of the project; triage -> collectors, agent,
#    proto, wire, tools; collectors -> triage, agent, tools; agent -> tools; libprotobuf
#    (protoc's classes) in the agent, the collectors, the wire writer, triage or base; and CLI11
#    (the command line parser, <CLI/...>) anywhere but tools/;
#  - libcutriage.so, when it was built: a NEEDED entry for libprotobuf, spdlog or fmt, or an
#    exported symbol other than the C API of agent/cutriage.map (or one of it missing).
# Runnable locally:
#
#   bash .ci/deps.sh                         # this tree, and build/agent/libcutriage.so if built
#   bash .ci/deps.sh SOURCE_DIR [LIBRARY]    # another tree (the self-test: tests/deps/), a library
#
# The library defaults to $CUTRIAGE_BUILD_DIR/agent/libcutriage.so (build/ by default), relative
# to SOURCE_DIR; without one only the sources are checked, and it says so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-$here/..}
src=$(cd "$src" && pwd)
lib=${2:-$src/${CUTRIAGE_BUILD_DIR:-build}/agent/libcutriage.so}
rc=0

python3 "$here/deps.py" "$src" || rc=1

if [[ -f $lib ]]; then
  bad=0
  needed=$(readelf -d "$lib" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}')
  for n in $needed; do
    case $n in
      libprotobuf* | libspdlog* | libfmt*)
        echo "deps: forbidden edge: $lib: libcutriage.so -> $n (NEEDED)"
        bad=1
        ;;
    esac
  done
  # The map's global names, against what the library defines and exports (versions stripped).
  map=$src/agent/cutriage.map
  api=$(sed -n '/global:/,/local:/p' "$map" | sed -n 's/^ *\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' | sort -u)
  exports=$(nm -D --defined-only "$lib" | awk 'NF >= 3 && $2 ~ /^[TWVBDRiu]$/ {print $3}' | sed 's/@.*//' | sort -u)
  extra=$(comm -13 <(echo "$api") <(echo "$exports"))
  missing=$(comm -23 <(echo "$api") <(echo "$exports"))
  for s in $extra; do
    echo "deps: $lib exports $s, which is not in agent/cutriage.map"
    bad=1
  done
  for s in $missing; do
    echo "deps: $lib does not export $s of agent/cutriage.map"
    bad=1
  done
  if ((bad)); then
    rc=1
  else
    echo "deps: $(basename "$lib"): no libprotobuf, spdlog or fmt; exports exactly the C API ($(wc -w <<<"$api") symbols)"
  fi
else
  echo "deps: no $lib (not built): its NEEDED entries and exports not checked"
fi
if ((rc)); then echo "deps: FAILED"; fi
exit "$rc"
