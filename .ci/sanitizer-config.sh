# Sourced by .ci/sanitize.sh and .ci/fuzz.sh: how the sanitizer builds are configured, written once
# so that the fuzz gate finds the ASan build exactly as the sanitizer gate left it (any difference
# in these arguments would make it compile everything again).

# -O1 with line tables only: what a sanitizer report needs (file and line in each frame), for less
# compile than -O2 -g. Unity build: the same code in batches of 8 files (tests/run.sh's build still
# compiles each library file on its own).
sanitizer_optimize="-O1 -gline-tables-only -DNDEBUG"

configure_sanitized() {  # build-dir sanitizers [cmake arguments...]
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="${CUTRIAGE_CLANGXX:-clang++-14}" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$sanitizer_optimize" \
    -DCUTRIAGE_CUDA=OFF -DCUTRIAGE_BUILD_EXAMPLES=OFF -DCUTRIAGE_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
    "-DCUTRIAGE_SANITIZE=$2" "${@:3}" >/dev/null
}

# The ASan + UBSan build, which holds the fuzzers too (-DCUTRIAGE_BUILD_FUZZERS=ON: the project's
# code gets libFuzzer's coverage instrumentation as well): the sanitizer gate tests it, the fuzz
# gate runs its fuzzers.
asan_build_dir=build-san
configure_asan() {  # build-dir
  configure_sanitized "$1" "address;undefined" -DCUTRIAGE_BUILD_FUZZERS=ON
}
