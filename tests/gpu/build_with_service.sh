#!/usr/bin/env bash
# Builds cutriage on the GPU machine, installs the package under ./prefix and builds the example
# service against it (build-service/cutriage_service): what the GPU run scripts share.
#
#   bash tests/gpu/build_with_service.sh BUILD_DIR LOG_DIR [EXTRA CMAKE ARGS...]
#
# Logs configure.log, build.log, install.log and service.log under LOG_DIR; on failure prints their
# tails and exits 1.
set -u -o pipefail
build="$1"
logs="$2"
shift 2
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$logs"
cmake -S . -B "$build" -G Ninja -DPROTOZERO_INCLUDE_DIR="$PWD/.carry/usr/include" "$@" >"$logs/configure.log" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >"$logs/build.log" 2>&1 &&
  cmake --install "$build" --prefix "$PWD/prefix" >"$logs/install.log" 2>&1 &&
  cmake -S examples/service -B build-service -G Ninja -DCMAKE_PREFIX_PATH="$PWD/prefix" >"$logs/service.log" 2>&1 &&
  cmake --build build-service >>"$logs/service.log" 2>&1 && exit 0
echo "BUILD FAILED"
tail -n 40 "$logs"/configure.log "$logs"/build.log "$logs"/install.log "$logs"/service.log 2>/dev/null
exit 1
