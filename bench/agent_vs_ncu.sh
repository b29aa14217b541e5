#!/usr/bin/env bash
# Plain run vs `cutriage` (injected agent, adaptive metric sets) vs `ncu --set full`, side by side in
# one run on the GPU machine, on the same kernels. Medians of RUNS runs each.
#
#   bash bench/agent_vs_ncu.sh [BUILD_DIR]      # BUILD_DIR default build-gpu; results under $OUT
#
# Per program: wall time of the whole run (median), and replay passes per profiled kernel: for the
# agent the sum over every profiled launch of the kernel (adaptive collection spreads a kernel's
# counters over up to 3 launches), for ncu the passes it reports for the one launch it profiles.
# Both profile the kernels matched by the same filter. Prints a markdown table (bench.md).
set -u -o pipefail
build="${1:-build-gpu}"
out="${OUT:-$PWD/bench-out}"
runs="${RUNS:-3}"
mkdir -p "$out/bench"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
lib="$PWD/$build/agent/libcutriage.so"
cli="$PWD/$build/tools/cutriage"
zoo="$PWD/$build/examples/zoo"

secs() { python3 -c "print('%.3f' % ($2 - $1))"; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }

# program, agent filter (function name), ncu filter
# ncu's --kernel-id ::NAME:1 profiles the first launch of every kernel whose name matches, the
# same kernels the agent profiles with the same filter.
default_cases=(
  "vector_add|regex:^zoo_|::regex:^zoo_:1"
  "strided_load|regex:^zoo_|::regex:^zoo_:1"
  "register_spill|regex:^zoo_|::regex:^zoo_:1"
  "fma_chain|regex:^zoo_|::regex:^zoo_:1"
  "global_atomics|regex:^zoo_|::regex:^zoo_:1"
  "cublas_gemm|regex:^nvjet|::regex:^nvjet:1"
  "torch_loop||::regex:.:1"
)
if [ -n "${CASES:-}" ]; then read -r -a cases <<<"$CASES"; else cases=("${default_cases[@]}"); fi

table="$out/bench.md"
{
  echo "| program | kernels | plain s | cutriage s | ncu --set full s | cutriage passes/kernel | ncu passes/kernel |"
  echo "|---|---|---|---|---|---|---|"
} >"$table"

for c in "${cases[@]}"; do
  IFS='|' read -r prog afilter nfilter <<<"$c"
  if [ "$prog" = torch_loop ]; then bin=(python3 "$PWD/bench/torch_loop.py"); else bin=("$zoo/zoo_$prog"); fi
  p=(); a=(); n=()
  for r in $(seq "$runs"); do
    t=$(now); "${bin[@]}" >/dev/null 2>&1; p+=("$(secs "$t" "$(now)")")
    rm -f "$out/bench/$prog.pb"
    t=$(now)
    # CUTRIAGE_SELECT=all: the first launch of each matching kernel, as ncu's --kernel-id ...:1.
    CUDA_INJECTION64_PATH="$lib" CUTRIAGE_OUTPUT="$out/bench/$prog.pb" CUTRIAGE_KERNEL_NAME="$afilter" \
      CUTRIAGE_SELECT=all \
      CUTRIAGE_SUMMARY=0 "${bin[@]}" >/dev/null 2>&1
    a+=("$(secs "$t" "$(now)")")
    t=$(now)
    # shellcheck disable=SC2086
    ncu --set full --clock-control none --kernel-id "$nfilter" "${bin[@]}" >"$out/bench/$prog.ncu.log" 2>&1
    n+=("$(secs "$t" "$(now)")")
  done
  pm=$(printf '%s\n' "${p[@]}" | median)
  am=$(printf '%s\n' "${a[@]}" | median)
  nm=$(printf '%s\n' "${n[@]}" | median)
  # Agent passes per kernel from its file: sum of passes of the profiled records, per kernel.
  "$cli" json "$out/bench/$prog.pb" >"$out/bench/$prog.json" 2>/dev/null
  read -r kernels apasses < <(python3 - "$out/bench/$prog.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))
per = collections.Counter()
for r in d.get("records", []):
    k = r.get("kernel")
    if k and k.get("status") == "PROFILE_STATUS_PROFILED":
        per[k.get("mangledNameIid")] += int(k.get("passes", 0))
vals = list(per.values())
print(len(vals), (sum(vals) / len(vals)) if vals else 0)
PY
)
  npasses=$(grep -oE '[0-9]+ passes' "$out/bench/$prog.ncu.log" | grep -oE '[0-9]+' |
            awk '{s+=$1; n++} END {if (n) printf "%.1f (%d kernels)", s/n, n; else print "?"}')
  echo "| $prog | $kernels | $pm | $am | $nm | $apasses | $npasses |" >>"$table"
done
cat "$table"
