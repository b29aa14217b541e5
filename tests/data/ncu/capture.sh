#!/usr/bin/env bash
# Capture Nsight Compute reference data for the cutriage example zoo.
#
# Runs ON THE GPU MACHINE, from anywhere inside the repository:
#   tests/data/ncu/capture.sh [OUTDIR] [METRICS_FILE]
#     OUTDIR        default: $OUT if set, else ./ncu-out
#     METRICS_FILE  optional; one metric name per line ('#' comments and blank
#                   lines ignored), passed as --metrics in addition to --set full
# Environment:
#   ZOO_BUILD_DIR   build directory for the zoo (default: build-zoo)
#   NCU_TIMEOUT     seconds per ncu run (default: 120)
#
# Produces in OUTDIR:
#   timings.csv             unprofiled timings: program,kernel,median_ns,launches
#   <program>.run.log       stdout+stderr of the plain (unprofiled) run
#   <program>.csv           ncu --csv --page raw of the profiled launch(es)
#   <program>.ncu.log       ncu's own log (collection and import)
#   <program>.app.log       the program's stdout+stderr while under ncu
#   rep/<program>.ncu-rep   the ncu report the CSV was printed from
#   env.txt                 GPU, driver, tool versions, date, exact ncu commands
#   build.log, summary.txt
# Exits 0 even if some programs fail (see summary.txt); 1 only if the build fails.
set -u -o pipefail

outdir="${1:-${OUT:-./ncu-out}}"
metrics_file="${2:-}"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../../.." && pwd)"
cd "$repo_root" || exit 1

export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build_dir="${ZOO_BUILD_DIR:-build-zoo}"
ncu_timeout="${NCU_TIMEOUT:-120}"

mkdir -p "$outdir/rep" || exit 1
outdir="$(cd "$outdir" && pwd)"

programs=(vector_add small_grid odd_block strided_load transpose register_spill
          warp_divergence global_atomics fp64_heavy fma_chain cublas_gemm tiny_kernels)

# Which launches ncu profiles, per program. Zoo kernels are the only ones whose
# names start with "zoo_" (input-filling helpers are named fill_*); each program
# launches its main kernel once as a warm-up before the timed launches.
ncu_filter() {
  case "$1" in
    transpose)    # launch order: naive, padded (warm-up), then 5 x (naive, padded)
      echo "-k regex:^zoo_transpose_ --launch-skip 2 --launch-count 2" ;;
    cublas_gemm)  # only the timed GEMMs lie inside cudaProfilerStart/Stop
      echo "--profile-from-start off --launch-count 1" ;;
    tiny_kernels)
      echo "-k regex:^zoo_tiny_kernel --launch-skip 100 --launch-count 3" ;;
    *)
      echo "-k regex:^zoo_ --launch-skip 1 --launch-count 1" ;;
  esac
}

# --- metric list ---------------------------------------------------------
metrics=""
if [[ -n "$metrics_file" ]]; then
  if [[ -f "$metrics_file" ]]; then
    metrics="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$metrics_file" | grep -v '^$' | paste -sd, -)"
  else
    echo "capture.sh: metric list '$metrics_file' not found; using --set full only" >&2
  fi
fi
metrics_args=()
[[ -n "$metrics" ]] && metrics_args=(--metrics "$metrics")

# --- environment ---------------------------------------------------------
env_file="$outdir/env.txt"
{
  echo "# capture.sh environment"
  echo "date: $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
  echo "host: $(hostname)"
  echo "repo commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "outdir: $outdir"
  echo "metrics file: ${metrics_file:-<none>} ($(tr ',' '\n' <<<"$metrics" | grep -c .) metrics)"
  echo
  echo "## nvidia-smi -q | head -60"
  nvidia-smi -q 2>&1 | head -60
  echo
  echo "## ncu --version"
  ncu --version 2>&1
  echo
  echo "## nvcc --version"
  nvcc --version 2>&1
  echo
  echo "## cmake --version"
  cmake --version 2>&1 | head -1
  echo
  echo "## ncu command lines"
} >"$env_file"

# --- build ---------------------------------------------------------------
build_log="$outdir/build.log"
echo "capture.sh: building the zoo in $build_dir (log: $build_log)"
cuda_compiler_arg=()
nvcc_path="$(command -v nvcc || true)"
[[ -n "$nvcc_path" ]] && cuda_compiler_arg=(-DCMAKE_CUDA_COMPILER="$nvcc_path")
if ! { cmake -S examples -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_compiler_arg[@]}" &&
       cmake --build "$build_dir"; } >"$build_log" 2>&1; then
  echo "capture.sh: BUILD FAILED, see $build_log" >&2
  tail -30 "$build_log" >&2
  exit 1
fi
bin_dir="$build_dir/examples/zoo"

# --- plain runs (unprofiled timings) ---------------------------------------
timings="$outdir/timings.csv"
: >"$timings"
declare -A plain_status ncu_rc csv_lines
for p in "${programs[@]}"; do
  exe="$bin_dir/zoo_$p"
  if [[ ! -x "$exe" ]]; then
    plain_status[$p]="MISSING"
    continue
  fi
  ZOO_TIMING_FILE="$timings" timeout 60 "$exe" >"$outdir/$p.run.log" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]]; then plain_status[$p]="OK"; else plain_status[$p]="FAIL($rc)"; fi
  echo "capture.sh: plain $p: ${plain_status[$p]}"
done

# --- ncu runs --------------------------------------------------------------
for p in "${programs[@]}"; do
  exe="$bin_dir/zoo_$p"
  csv="$outdir/$p.csv"
  log="$outdir/$p.ncu.log"
  rep="$outdir/rep/$p"
  rm -f "$csv" "$log" "$rep.ncu-rep"
  if [[ ! -x "$exe" ]]; then
    ncu_rc[$p]="-"
    csv_lines[$p]=0
    continue
  fi
  # shellcheck disable=SC2207
  filter=($(ncu_filter "$p"))
  cmd=(ncu --clock-control none --set full --import-source no "${metrics_args[@]}"
       "${filter[@]}" -f -o "$rep" --log-file "$log" "$exe")
  import_cmd=(ncu --import "$rep.ncu-rep" --csv --page raw --print-units base)
  {
    printf '%s:' "$p"; printf ' %q' timeout "$ncu_timeout" "${cmd[@]}"; echo
    printf '%s:' "$p"; printf ' %q' "${import_cmd[@]}"; printf ' > %q\n' "$csv"
  } >>"$env_file"
  echo "capture.sh: ncu $p ..."
  env -u ZOO_TIMING_FILE timeout "$ncu_timeout" "${cmd[@]}" >"$outdir/$p.app.log" 2>&1
  ncu_rc[$p]=$?
  if [[ ! -f "$rep.ncu-rep" && ${#metrics_args[@]} -gt 0 ]]; then
    # ncu refuses the whole run when one requested metric is unknown to it: keep a --set full
    # capture rather than none (the rules whose metrics are then missing say "not evaluated").
    echo "capture.sh: ncu $p failed with the metric list; retrying with --set full only"
    cmd=(ncu --clock-control none --set full --import-source no
         "${filter[@]}" -f -o "$rep" --log-file "$log.retry" "$exe")
    printf '%s (retry):' "$p" >>"$env_file"; printf ' %q' "${cmd[@]}" >>"$env_file"; echo >>"$env_file"
    env -u ZOO_TIMING_FILE timeout "$ncu_timeout" "${cmd[@]}" >>"$outdir/$p.app.log" 2>&1
    ncu_rc[$p]="retry:$?"
  fi
  if [[ -f "$rep.ncu-rep" ]]; then
    "${import_cmd[@]}" >"$csv" 2>>"$log"
    import_rc=$?
    [[ $import_rc -ne 0 ]] && ncu_rc[$p]="${ncu_rc[$p]}/import:$import_rc"
  else
    : >"$csv"
  fi
  csv_lines[$p]=$(wc -l <"$csv")
done

# --- summary ---------------------------------------------------------------
summary="$outdir/summary.txt"
{
  printf '%-16s %-10s %-10s %s\n' program plain ncu_rc csv_lines
  for p in "${programs[@]}"; do
    printf '%-16s %-10s %-10s %s\n' "$p" "${plain_status[$p]}" "${ncu_rc[$p]}" "${csv_lines[$p]}"
  done
} | tee "$summary"
exit 0
