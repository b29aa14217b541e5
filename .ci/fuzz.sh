#!/usr/bin/env bash
# Fuzz gate: builds the libFuzzer targets (tests/fuzz/, clang, ASan + UBSan) and runs each for a
# bounded time. Fails on any crash, sanitizer report, leak, timeout, out-of-memory or contract
# violation (the exercise_* functions in tests/support/fuzz_*.h). Runnable locally:
#
#   bash .ci/fuzz.sh                                   # every target, 60 s each
#   CUTRIAGE_FUZZ_SECONDS=600 bash .ci/fuzz.sh fuzz_ncu_csv   # one target, longer
#
# The corpus of each target lives in $build/corpus/<target> and grows across local runs (a fresh
# CI clone starts from the seeds). Read-only inputs: the committed seeds (tests/fuzz/seeds/<name>,
# ncu ones derived from the H200 captures by tests/fuzz/make_seeds.py), every input a fuzzer ever
# crashed on (tests/data/fuzz-regressions/<name>), and for the file reader and the exporters the
# cutriage files the tool writes from the ncu seeds, whole and torn.
#
# A crash leaves its input in $build/artifacts/<target>/. Fix the bug, then make the input a
# regression test: copy it to tests/data/fuzz-regressions/<name>/ (the Catch2 tests
# test_fuzz_regressions*.cpp replay every file there through the same exercise_* function).
#
# The build is the ASan + UBSan one of the sanitizer gate (.ci/sanitize.sh asan, build-san/), which
# configures the fuzzers too: after that gate only the fuzz targets are left to link. Alone, this
# script configures the same directory the same way and builds only what it runs.
#
# Environment: CUTRIAGE_FUZZ_SECONDS (per target, default 60), CUTRIAGE_FUZZ_JOBS (targets run at
# once, default nproc), CUTRIAGE_FUZZ_BUILD_DIR (default build-san), CUTRIAGE_CLANGXX (default
# clang++-14).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=.ci/sanitizer-config.sh
source .ci/sanitizer-config.sh
build=${CUTRIAGE_FUZZ_BUILD_DIR:-$asan_build_dir}
seconds=${CUTRIAGE_FUZZ_SECONDS:-60}
parallel=${CUTRIAGE_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
all_targets=(fuzz_ncu_csv fuzz_timings fuzz_file_reader fuzz_thresholds fuzz_config
             fuzz_path_pattern fuzz_kernel_filter fuzz_cubin fuzz_prior_run
             fuzz_trace_export fuzz_pprof_export fuzz_control fuzz_init_string fuzz_nvdisasm)
if (($# > 0)); then targets=("$@"); else targets=("${all_targets[@]}"); fi

# The sanitizer gate's ASan configuration, so that one build serves both. Only the fuzzers and the
# cutriage tool (which writes the file reader's seeds) are built here. Everything of the project is
# instrumented for coverage.
configure_asan "$build"
cmake --build "$build" -j "$parallel" --target "${targets[@]}" cutriage_cli

# Seeds and dictionaries the tool derives: kept in sync with the rules and the schema for free.
gen="$build/generated"
rm -rf "$gen"
mkdir -p "$gen/file_reader" "$gen/prior_run" "$gen/trace_export" "$gen/pprof_export" "$gen/dict"
cli="$build/tools/cutriage"
for csv in tests/fuzz/seeds/ncu_csv/*.csv; do
  name=$(basename "$csv" .csv)
  "$cli" triage --ncu-csv "$csv" --timings tests/data/ncu/timings.csv --clock-control none \
    -o "$gen/file_reader/$name.pb" 2>/dev/null
  size=$(stat -c %s "$gen/file_reader/$name.pb")
  head -c $((size - 7)) "$gen/file_reader/$name.pb" >"$gen/file_reader/$name.torn.pb"
done
# The agent's reader of earlier output (CUTRIAGE_RESUME): the same files, and always-on captures
# (their first 64 KiB: session header, interned names, the first kernel records).
cp "$gen"/file_reader/*.pb "$gen/prior_run/"
# The exporters (cutriage trace, cutriage pprof): the same files (no trace, no samples: the
# refusals), and the first 64 KiB of agent files with a trace and with PC samples (the committed
# seeds hold smaller whole ones).
cp "$gen"/file_reader/*.pb "$gen/trace_export/"
cp "$gen"/file_reader/*.pb "$gen/pprof_export/"
for pb in tests/data/trace/trace_timeline.pb tests/data/trace/zoo_vector_add.pb; do
  head -c 65536 "$pb" >"$gen/trace_export/$(basename "$pb")"
done
for pb in tests/data/pcsampling/*.pb; do
  head -c 65536 "$pb" >"$gen/pprof_export/$(basename "$pb")"
done
for pb in tests/data/always_on/svc-ao-fast.pb tests/data/always_on/torch-ao-1.pb; do
  head -c 65536 "$pb" >"$gen/prior_run/$(basename "$pb")"
done
{
  "$cli" metrics | sed 's/.*/"&"/'
  for w in ID "Kernel Name" "Mangled Name" "Demangled Name" "Function Name" "Block Size" \
           "Grid Size" CC Device "Process ID" "Host Name" "Metric Name" "Metric Value" \
           byte nsecond usecond Kbyte Mbyte Gbyte KiB MiB hz Khz Mhz Ghz "cycle/second" \
           "byte/second" "%" "n/a" "no data" "==PROF==" "==WARNING==" "_Z"; do
    printf '"%s"\n' "$w"
  done
} >"$gen/dict/ncu_csv.dict"
"$cli" rules | sed -n 's/^ *threshold \([^ ]*\) = .*/"\1"/p' >"$gen/dict/thresholds.dict"
{
  "$cli" run --help | grep -o 'CUTRIAGE_[A-Z_]*' | sort -u | sed 's/.*/"&"/'
  printf '"%s"\n' adaptive full base list: regex: function demangled mangled off error warn info \
    debug %p %h %n %q{ %%
} >"$gen/dict/config.dict"
printf '"%s"\n' %p %h %n %q{ %% } >"$gen/dict/path_pattern.dict"
cp "$gen/dict/config.dict" "$gen/dict/init_string.dict"
printf '"%s"\n' deep top: regex: '#' ' ' '\x0a' 3600 >"$gen/dict/control.dict"
printf '"%s"\n' '/*' '*/' ';' '{' '}' '@P0' '@!P0' .headerflags .section .text. '//##' >"$gen/dict/nvdisasm.dict"
printf '"%s"\n' '\x7fELF' .debug_line .nv_debug_line_sass .debug_info .symtab .strtab .shstrtab \
  .text. .nv.info. '\xbe\x00' '\x10' >"$gen/dict/cubin.dict"
printf '"%s"\n' function demangled mangled regex: '(' ')' '[' ']' '*' '+' '?' '{' '}' '|' '^' '$' \
  '\\' '\\d' '\\b' '(?:' '(?=' '[^' '.*' >"$gen/dict/kernel_filter.dict"

max_len() {
  case $1 in
    fuzz_ncu_csv) echo 16384 ;;
    fuzz_file_reader | fuzz_prior_run | fuzz_trace_export | fuzz_pprof_export) echo 65536 ;;
    fuzz_kernel_filter) echo 8192 ;;  # room for the longest regex the filter accepts (4096)
    fuzz_cubin) echo 65536 ;;         # the -G seed is 35 KB
    *) echo 4096 ;;
  esac
}

run_one() {
  local target=$1 name=${1#fuzz_}
  local corpus="$build/corpus/$target" artifacts="$build/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  local inputs=("$corpus")
  for d in "tests/fuzz/seeds/$name" "tests/data/fuzz-regressions/$name" "$gen/$name"; do
    [[ -d $d ]] && inputs+=("$d")
  done
  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$target")"
                 -print_final_stats=1 -print_funcs=0 -artifact_prefix="$artifacts/")
  [[ -f "$gen/dict/$name.dict" ]] && options+=(-dict="$gen/dict/$name.dict")
  # A leak fails like a crash (libFuzzer checks each new input with LeakSanitizer); an allocation
  # beyond -rss_limit_mb (e.g. a length field trusted blindly) is reported as out-of-memory.
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/$target" "${options[@]}" "${inputs[@]}" >"$build/logs/$target.log" 2>&1 || rc=$?
  echo "$rc" >"$build/logs/$target.rc"
}

mkdir -p "$build/logs"
rm -f "$build"/logs/*.rc
start=$SECONDS
running=0
for target in "${targets[@]}"; do
  if ((running >= parallel)); then
    wait -n
    running=$((running - 1))
  fi
  run_one "$target" &
  running=$((running + 1))
done
wait
declare -A status=()
for target in "${targets[@]}"; do status[$target]=$(cat "$build/logs/$target.rc" 2>/dev/null || echo missing); done

failed=0
printf '\nfuzz gate: %d target(s), %d s each, %d at a time, %d s in all\n' \
  "${#targets[@]}" "$seconds" "$parallel" $((SECONDS - start))
printf '%-22s %12s %10s %8s  %s\n' target executions exec/s corpus result
for target in "${targets[@]}"; do
  log="$build/logs/$target.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$build/corpus/$target" -type f | wc -l)
  if [[ ${status[$target]} == 0 ]]; then
    result=ok
  else
    result="FAILED (exit ${status[$target]})"
    failed=1
  fi
  printf '%-22s %12s %10s %8s  %s\n' "$target" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
if ((failed)); then
  for target in "${targets[@]}"; do
    [[ ${status[$target]} == 0 ]] && continue
    echo
    echo "=== $target: last lines of $build/logs/$target.log"
    tail -n 60 "$build/logs/$target.log"
    echo "=== crashing input(s): $(ls "$build/artifacts/$target"/* 2>/dev/null | tr '\n' ' ')"
    echo "    reproduce: $build/tests/fuzz/$target <input>; after the fix, copy the input to" \
         "tests/data/fuzz-regressions/${target#fuzz_}/"
  done
  exit 1
fi
