#!/usr/bin/env bash
# Build-option gate: the combinations of cmake/CutriageOptions.cmake that tests/run.sh does not
# build (it builds everything), each configured and built (no tests run) in its own directory
# under build-matrix/ (CUTRIAGE_MATRIX_DIR), with the time each took:
#
#   agent   the agent alone (CUTRIAGE_BUILD_TOOLS=OFF, TESTS=OFF, EXAMPLES=OFF); then installed, and
#           with libcutriage.so found and linked from a separate project (tests/agent_lib/test_package.sh)
#   tools   the tool alone (CUTRIAGE_BUILD_AGENT=OFF, TESTS=OFF, EXAMPLES=OFF); then installed and run
#   nocuda  CUTRIAGE_CUDA=OFF with the tests (the agent core and the tool without the toolkit);
#           not in the default set: the sanitizer gate (.ci/sanitize.sh) configures exactly this
#           combination, builds it and runs its tests, so CI would only compile it twice
#
# Runnable locally:
#
#   bash .ci/build-matrix.sh                # agent and tools (what CI runs)
#   bash .ci/build-matrix.sh nocuda agent   # some, nocuda included
#
# What this gate checks is that each combination configures, compiles and links, so it builds
# without optimization or debug information, in unity batches (CMAKE_UNITY_BUILD: cheaper on CI's
# two cores; tests/run.sh's build compiles each file on its own); warnings are errors.
# CUTRIAGE_MATRIX_CMAKE_ARGS adds CMake arguments to every configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${CUTRIAGE_MATRIX_DIR:-build-matrix}
jobs=$(nproc 2>/dev/null || echo 2)
all=(agent tools nocuda)
defaults=(agent tools)
if (($# > 0)); then names=("$@"); else names=("${defaults[@]}"); fi

options() {  # NAME -> the CMake options of that combination
  case $1 in
    agent) echo "-DCUTRIAGE_BUILD_TOOLS=OFF -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF" ;;
    tools) echo "-DCUTRIAGE_BUILD_AGENT=OFF -DCUTRIAGE_BUILD_TESTS=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF" ;;
    nocuda) echo "-DCUTRIAGE_CUDA=OFF -DCUTRIAGE_BUILD_TESTS=ON -DCUTRIAGE_BUILD_EXAMPLES=OFF" ;;
    *) return 1 ;;
  esac
}

# What each combination must have produced, and the install step where it matters.
check_agent() {  # BUILD_DIR
  local dir=$1
  [[ -f $dir/agent/libcutriage_agent_core.a ]] || { echo "matrix: agent: no agent core built"; return 1; }
  [[ ! -e $dir/tools/cutriage ]] || { echo "matrix: agent: the tool was built"; return 1; }
  if [[ -f $dir/agent/libcutriage.so ]]; then
    bash tests/agent_lib/test_package.sh "$dir" "$PWD"
  else
    install_into "$dir"
    echo "matrix: agent: no CUDA toolkit, no libcutriage.so to link against"
  fi
}
check_tools() {
  local dir=$1 prefix
  [[ ! -e $dir/agent/libcutriage_agent_core.a && ! -e $dir/agent/libcutriage.so ]] ||
    { echo "matrix: tools: the agent was built"; return 1; }
  prefix=$(install_into "$dir")
  "$prefix/bin/cutriage" --version
}
check_nocuda() {
  local dir=$1
  [[ -x $dir/tests/cutriage_agent_tests && -x $dir/tools/cutriage ]] ||
    { echo "matrix: nocuda: the agent tests or the tool missing"; return 1; }
  [[ ! -e $dir/agent/libcutriage.so ]] || { echo "matrix: nocuda: libcutriage.so built without CUDA"; return 1; }
}
install_into() {  # BUILD_DIR: installs into BUILD_DIR/prefix, checks the package files; prints the prefix
  local dir=$1 prefix=$1/prefix
  rm -rf "$prefix"
  cmake --install "$dir" --prefix "$prefix" >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; return 1; }
  for f in lib/cmake/cutriage/cutriageConfig.cmake include/cutriage/base/status.h include/cutriage/triage/engine.h; do
    [[ -e $prefix/$f ]] || { echo "matrix: $f not installed" >&2; return 1; }
  done
  echo "$prefix"
}

start=$SECONDS
summary=()
for name in "${names[@]}"; do
  opts=$(options "$name") || { echo "matrix: unknown combination '$name' (known: ${all[*]})"; exit 2; }
  dir=$root/$name
  t=$SECONDS
  echo "=== matrix: $name: $opts"
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DCMAKE_CUDA_FLAGS_DEBUG=-O0 -DCUTRIAGE_WERROR=ON -DCMAKE_UNITY_BUILD=ON $opts ${CUTRIAGE_MATRIX_CMAKE_ARGS:-} \
    >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; echo "matrix: $name: configure FAILED"; exit 1; }
  cmake --build "$dir" -j "$jobs" || { echo "matrix: $name: build FAILED"; exit 1; }
  "check_$name" "$dir" || { echo "matrix: $name: check FAILED"; exit 1; }
  summary+=("$name $((SECONDS - t)) s")
  echo "=== matrix: $name passed in $((SECONDS - t)) s"
done
joined=$(printf '%s; ' "${summary[@]}")
echo "=== matrix: all passed in $((SECONDS - start)) s (${joined%; })"
