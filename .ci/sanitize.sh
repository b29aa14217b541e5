#!/usr/bin/env bash
# Sanitizer gate, runnable locally:
#
#   bash .ci/sanitize.sh          # both builds below
#   bash .ci/sanitize.sh asan     # the whole test suite under AddressSanitizer + UBSan (+ LeakSanitizer);
#                                 # the same build holds the fuzzers (.ci/fuzz.sh runs them)
#   bash .ci/sanitize.sh tsan     # the tests labelled "agent" under ThreadSanitizer
#   bash .ci/sanitize.sh agent-lib  # libcutriage.so itself (CUDA on) under ASan + UBSan, loaded by its
#                                   # host programs: the injection entry, configuration, the CUPTI
#                                   # subscription failing on a machine without a GPU and with CUDA's
#                                   # stub driver, the C API misused from many threads
#
# Builds with clang (CUTRIAGE_CLANGXX, default clang++-14) into build-san/ and build-tsan/, CUDA
# off: the agent core and everything the CI tests cover is CUDA-free; unity builds at -O1
# (.ci/sanitizer-config.sh, shared with the fuzz gate). Any sanitizer report fails
# the gate, including one from a process a test starts itself (the CLI test runs `cutriage` and
# checks its exit code, which a report could mask): reports go to files under
# <build>/sanitizer-reports/ (log_path) and the gate fails when one exists, whatever CTest said.
#
# Third-party code is not instrumented: libstdc++, libprotobuf (the tool's reader) and Catch2's
# main come precompiled from Debian. For ASan/UBSan that only means their own bugs go unseen. For
# TSan it is sound for what the agent tests do: threads, mutexes, condition variables and
# call_once all reach pthread functions TSan intercepts, and the std:: atomics and shared_ptr
# reference counts are inline templates, compiled (instrumented) with the test.
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${CUTRIAGE_CLANGXX:-clang++-14}
jobs=$(nproc 2>/dev/null || echo 2)
modes=("$@")
if ((${#modes[@]} == 0)); then modes=(asan tsan agent-lib); fi

# shellcheck source=.ci/sanitizer-config.sh
source .ci/sanitizer-config.sh

# Fails when a sanitizer wrote a report (after printing it).
check_reports() {  # report-dir
  local reports
  reports=$(find "$1" -type f 2>/dev/null | sort)
  if [[ -n $reports ]]; then
    echo "sanitize: $(wc -l <<<"$reports") sanitizer report(s):"
    for r in $reports; do
      echo "=== $r"
      cat "$r"
    done
    return 1
  fi
}

run_asan() {
  local build=$asan_build_dir
  configure_asan "$build"
  cmake --build "$build" -j "$jobs"
  local reports="$PWD/$build/sanitizer-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  local rc=0
  # -fno-sanitize-recover=all (cutriage_target_defaults): the first UB report ends the process.
  ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs" || rc=$?
  check_reports "$reports" || rc=1
  return "$rc"
}

run_tsan() {
  local build=build-tsan
  configure_sanitized "$build" "thread"
  # Only what the agent tests need (cutriage_agent_tests depends on every helper binary they run).
  # The target list is read whole before grep looks at it: `ninja help | grep -q` under pipefail
  # fails when grep exits at the first match and ninja takes SIGPIPE, which skipped the build.
  local targets
  targets=$(cmake --build "$build" --target help)
  if grep -q '^cutriage_agent_tests:' <<<"$targets"; then
    cmake --build "$build" -j "$jobs" --target cutriage_agent_tests
  else
    echo "sanitize: the TSan build has no cutriage_agent_tests target" >&2
    return 1
  fi
  local reports="$PWD/$build/sanitizer-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  local rc=0
  # setarch -R: clang 14's TSan maps its shadow at fixed addresses and aborts ("unexpected memory
  # mapping") on kernels that randomize mmap with more than 28 bits; without ASLR it always fits.
  local norandom=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then norandom=(setarch "$(uname -m)" -R); fi
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$reports/tsan" \
    "${norandom[@]}" ctest --test-dir "$build" --output-on-failure -j "$jobs" -L agent --no-tests=ignore || rc=$?
  check_reports "$reports" || rc=1
  return "$rc"
}

run_agent_lib() {
  local build=build-san-agent
  if [[ ! -d /usr/local/cuda/include ]] && ! command -v nvcc >/dev/null; then
    echo "sanitize: agent-lib needs the CUDA toolkit (cmake/install-deps.sh installs its CUPTI part)" >&2
    return 1
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$sanitizer_optimize" -DCUTRIAGE_CUDA=ON -DCUTRIAGE_BUILD_EXAMPLES=OFF \
    -DCUTRIAGE_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
    "-DCUTRIAGE_SANITIZE=address;undefined" -DCUTRIAGE_ASAN_SHARED_RUNTIME=ON >/dev/null
  cmake --build "$build" -j "$jobs" --target cutriage_agent cutriage_load_agent cutriage_api_misuse
  local reports="$PWD/$build/sanitizer-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  local rc=0
  ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:log_path=$reports/asan" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs" -R '^agent\.(library_exports_and_failures|api_misuse)$' || rc=$?
  # Both tests must have run: a filter that matches nothing would pass silently.
  if [[ $(ctest --test-dir "$build" -N -R '^agent\.(library_exports_and_failures|api_misuse)$' | grep -c 'Test *#') != 2 ]]; then
    echo "sanitize: agent-lib: the two library tests are not defined in $build" >&2
    rc=1
  fi
  check_reports "$reports" || rc=1
  return "$rc"
}

for mode in "${modes[@]}"; do
  case $mode in
    asan) run_asan ;;
    tsan) run_tsan ;;
    agent-lib) run_agent_lib ;;
    *) echo "usage: $0 [asan] [tsan] [agent-lib]" >&2; exit 1 ;;
  esac
done
