#!/usr/bin/env bash
# Static analysis gate: clang-tidy (CUTRIAGE_CLANG_TIDY, default clang-tidy-14) with the checked-in
# .clang-tidy over every C++ translation unit of the project (libraries, tool, agent, collectors,
# tests, fuzzers; not the protoc output, not CUDA sources). Any finding fails. Runnable locally:
#
#   bash .ci/tidy.sh                       # everything
#   bash .ci/tidy.sh tools/src/ncu_csv.cpp # some files (paths relative to the repository)
#
# The compilation database comes from a clang configure in build-tidy/ (nothing is compiled but
# the generated headers the sources include, and cutriage_schema_gen, which writes schema.h). With
# the CUDA toolkit present the CUPTI collectors and the injection library are configured, hence
# analysed, too.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-tidy
tidy=${CUTRIAGE_CLANG_TIDY:-clang-tidy-14}
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="${CUTRIAGE_CLANGXX:-clang++-14}" -DCUTRIAGE_CUDA=AUTO \
  -DCUTRIAGE_BUILD_EXAMPLES=OFF -DCUTRIAGE_BUILD_FUZZERS=ON "-DCUTRIAGE_SANITIZE=address;undefined" \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
# Generated headers the sources include (schema.h builds and runs cutriage_schema_gen first).
cmake --build "$build" --target proto/gen/cutriage/v1/cutriage.pb.h tools/gen/pprof/profile.pb.h \
  proto/wire_gen/cutriage/wire/schema.h >/dev/null

# Unity build (CMAKE_UNITY_BUILD; the tests always, CUTRIAGE_UNITY_TESTS): the database names the
# batch files (<build>/<dir>/CMakeFiles/<target>.dir/Unity/unity_N_cxx.cxx), each including up to
# 8 of the target's sources, and a batch is analysed whole (its headers parsed once, not per file).
# HeaderFilterRegex covers the source directories, so a finding in any file of a batch is reported
# against that file; the batch's own #include of a .cpp is not one. (Each library file still
# compiles on its own in tests/run.sh's build, which is where a missing #include shows.)
mapfile -t database < <(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$build/compile_commands.json" | sort -u)
batch_of() {  # source file -> the unity batch including it, if any
  grep -lF "#include \"$1\"" "$build"/*/CMakeFiles/*/Unity/unity_*.cxx "$build"/*/*/CMakeFiles/*/Unity/unity_*.cxx \
    2>/dev/null | head -1 || true
}
if (($# > 0)); then
  files=()
  for f in "$@"; do
    batch=$(batch_of "$PWD/$f")
    files+=("${batch:-$PWD/$f}")
  done
  mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u)
else
  # Every .cpp of the compilation database that lives in the project's source directories (those
  # kept out of batches), and every batch.
  own="$PWD/(base|triage|tools|agent|collectors|proto/wire|tests)/"
  mapfile -t files < <(printf '%s\n' "${database[@]}" | grep -E "^$own.*\.cpp$")
  # The batches of the project's sources (not those of the protoc output).
  for batch in $(printf '%s\n' "${database[@]}" | grep -E "^$PWD/$build/.*/Unity/unity_[0-9]+_cxx\.cxx$"); do
    if grep -qE "^#include \"$own" "$batch"; then files+=("$batch"); fi
  done
fi
echo "tidy: ${#files[@]} translation units, $jobs at a time"
start=$SECONDS
logs="$build/tidy-logs"
rm -rf "$logs" && mkdir -p "$logs"
# One log per translation unit (parallel runs would interleave their lines); clang-tidy exits
# non-zero on any finding (WarningsAsErrors: '*'), which xargs reports as 123.
rc=0
printf '%s\0' "${files[@]}" | xargs -0 -P "$jobs" -I{} bash -c '
  log="$1/$(echo "${3#"$PWD"/}" | tr / _).log"
  extra=()
  if [[ $3 == */Unity/unity_*.cxx ]]; then extra=(--checks=-bugprone-suspicious-include); fi
  "$2" -p "$4" --quiet --use-color=false "${extra[@]}" "$3" >"$log" 2>&1 || echo "$3" >>"$log.failed"
' _ "$logs" "$tidy" {} "$build" || rc=$?
failed=$(find "$logs" -name '*.failed' | wc -l)
for f in "$logs"/*.log; do
  # "N warnings generated.": the third-party findings the header filter hides.
  grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$f" || true
done
if ((failed > 0 || rc != 0)); then
  echo "tidy: FAILED: findings in $failed of ${#files[@]} translation units ($((SECONDS - start)) s)"
  exit 1
fi
echo "tidy: clean, ${#files[@]} translation units in $((SECONDS - start)) s"
