#!/usr/bin/env bash
# Builds some of cutriage's targets on the GPU machine (the probes' and short checks' build; the
# whole tree and the installed package are build_with_service.sh's).
#
#   bash tests/gpu/build_targets.sh BUILD_DIR LOG_DIR TARGET... [-- EXTRA CMAKE ARGS...]
#
# Configures with the examples on and the carried protozero headers (.carry), logs configure.log
# and build.log under LOG_DIR; on failure prints the logs' tails and exits 1.
set -u -o pipefail
build="$1"
logs="$2"
shift 2
targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do targets+=("$1"); shift; done
[ $# -gt 0 ] && shift
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$logs"
cmake -S . -B "$build" -G Ninja -DCUTRIAGE_BUILD_EXAMPLES=ON -DPROTOZERO_INCLUDE_DIR="$PWD/.carry/usr/include" "$@" \
  >"$logs/configure.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$logs/build.log" 2>&1 && exit 0
tail -n 40 "$logs/configure.log" "$logs/build.log" 2>/dev/null
exit 1
