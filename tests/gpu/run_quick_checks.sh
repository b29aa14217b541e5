#!/usr/bin/env bash
# The short GPU check to run first in a device session (about 4 minutes with the build), before the
# long suites: the build, the range profiler smoke (each CUPTI call's time) and its steps probe
# (issue 22), short programs that exit while the agent is busy (the exits of stops 37 and 38),
# deep mode's default counters against adaptive ones on zoo_many_kernels (issue 21), and the PM
# probe's per-kernel comparison (issue 20). From the repository root, on the device:
#
#   bash tests/gpu/run_quick_checks.sh      # logs in $OUT/quick.tgz (or ./gpu-out), summary on stdout
#                                           # and in the archive (quick/summary.txt)
#
# Carry .carry (the protozero headers). Builds build-gpu (warnings as errors) and the example
# service with tests/gpu/build_with_service.sh, as the long GPU scripts expect them.
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$out/quick"
q="$out/quick"
# The summary goes to stdout and into the archive (quick/summary.txt), so that a caller that
# discards stdout still gets it back.
exec > >(tee "$q/summary.txt") 2>&1
t0=$(date +%s)
secs() { python3 -c "print('%.2f' % ($(date +%s.%N) - $1))"; }
bash tests/gpu/build_with_service.sh build-gpu "$q" -DCUTRIAGE_WERROR=ON || exit 1
echo "build: $(( $(date +%s) - t0 )) s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
timeout 60 build-gpu/tests/range_profiler_smoke >"$q/smoke.txt" 2>&1
echo "range_profiler_smoke: exit $? (each call's time in quick/smoke.txt)"
# Issue 21: can a launch be PC-sampled while the range profiler stays enabled (its Start then free)?
timeout 60 build-gpu/tests/range_profiler_smoke --probe-pc-sampling >"$q/smoke-pc.txt" 2>&1
echo "range_profiler_smoke --probe-pc-sampling: exit $?; $(grep -E '^pc probe|after PC sampling' "$q/smoke-pc.txt" | tr '\n' ';')"
# Issue 22: one collection whose passes are "steps" of several kernels' launches (one range each?).
timeout 120 build-gpu/tests/range_profiler_smoke --probe-steps >"$q/smoke-steps.txt" 2>&1
echo "range_profiler_smoke --probe-steps: exit $?; $(grep -E '^== |first pass|^  range|NOT one' "$q/smoke-steps.txt" | cut -c1-200 | tr '\n' ';')"

lib=$PWD/build-gpu/agent/libcutriage.so
cli=$PWD/build-gpu/tools/cutriage
zoo=$PWD/build-gpu/examples/zoo
fail=0
for i in 1 2 3 4; do
  "$cli" run -o "$q/fma-$i.pb" -- "$zoo/zoo_fma_chain" >"$q/fma-$i.out" 2>&1
  a=$?
  CUDA_INJECTION64_PATH=$lib CUTRIAGE_OUTPUT="$q/mt-$i.pb" build-gpu/tests/gpu/gpu_multithread >"$q/mt-$i.out" 2>&1
  b=$?
  CUDA_INJECTION64_PATH=$lib CUTRIAGE_OUTPUT="$q/sg-$i.pb" CUTRIAGE_SELECT=all "$zoo/zoo_small_grid" >"$q/sg-$i.out" 2>&1
  c=$?
  echo "exits, round $i: cutriage run zoo_fma_chain $a, gpu_multithread injected $b, zoo_small_grid (select all) $c"
  [ "$a$b$c" = 000 ] || fail=1
done

s=$(date +%s.%N)
"$zoo/zoo_many_kernels" >"$q/mk-plain.out" 2>&1
echo "zoo_many_kernels plain: $(secs "$s") s"
for arm in default adaptive; do
  for i in 1 2; do
    flags=()
    [ "$arm" = adaptive ] && flags=(--metrics adaptive)
    s=$(date +%s.%N)
    "$cli" run "${flags[@]}" -o "$q/mk-$arm-$i.pb" -- "$zoo/zoo_many_kernels" >"$q/mk-$arm-$i.out" 2>&1
    rc=$?
    echo "zoo_many_kernels cutriage run ($arm) $i: exit $rc, $(secs "$s") s"
    [ "$rc" = 0 ] || fail=1
    "$cli" report --verbose "$q/mk-$arm-$i.pb" >"$q/mk-$arm-$i.report.txt" 2>&1
  done
  grep -E "^\[|^    (collected|cost|pc cost)" "$q/mk-$arm-1.report.txt" | cut -c1-220 | head -24
done
# Issue 20: PM's alu and issue columns against the rules' ALU-pipe and issue names, per kernel (the
# check a PM mapping of Decision 4's ALU pipe needs; about a minute; does not change the result).
OUT="$q" PM_WAYS="pm_then_rp" bash tests/gpu/run_pm_probe.sh >"$q/pm-probe-run.txt" 2>&1
echo "pm_probe pm_then_rp: exit $? (quick/pm-probe.txt)"
grep -A1 -E '^    (alu|issue) vs ' "$q/pm-probe.txt" 2>/dev/null | grep -v '^--' | cut -c1-200
echo "result: $([ $fail = 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - t0 )) s"
# The device tool brings back a limited number of files: the logs and agent files travel as one
# archive (quick.tgz beside the summary printed above).
sleep 0.2  # tee has written the result line
tar czf "$out/quick.tgz" -C "$out" quick && rm -rf "$q"
