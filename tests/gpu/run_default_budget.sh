#!/usr/bin/env bash
# Always-on at the default budget until the top families are complete (issue 6): about 20 minutes
# of traffic, longer than one device command (10 minutes). So the runs go to the background on the
# two-GPU machine (nvidia-h200-x2) and three calls follow each other within the machine's warm
# window (30 s after a call):
#
#   PHASE=start   bash tests/gpu/run_default_budget.sh   # build; start both runs; watch ~9 min
#   PHASE=wait    bash tests/gpu/run_default_budget.sh   # watch ~9.5 min more
#   PHASE=collect bash tests/gpu/run_default_budget.sh   # wait for the end; reports and files to $OUT
#
# GPU 0: the example service for RUN_SECONDS (default 1500), always-on at the default budget.
# GPU 1: bench/torch_loop.py TORCH_STEPS (default 700000, about 23 minutes), the same.
# SVC_RESUME, TORCH_RESUME: an earlier output of the same program for CUTRIAGE_RESUME (a restart:
# e.g. tests/data/always_on/svc-ao-default-1400s.pb and torch-ao-default-1319s.pb, the first 23
# minutes), so that the run continues from what that process had measured.
# CHECKS=1: the GPU test suite (ctest -L gpu), tests/gpu/check_resume.sh,
# tests/gpu/check_control.sh and tests/gpu/check_trace_duty.sh on GPU 0 (about 4 minutes; their
# files come back with `collect`). They
# run while the PyTorch loop already runs on GPU 1, and the service starts on GPU 0 after them.
# AB=1: before the long runs, bench/default_ab.sh on each GPU (the service on GPU 0, the PyTorch
# loop on GPU 1): AB_ROUNDS (2) rounds of agent off vs always-on at the default budget, runs of
# AB_SVC_SECONDS (180) and AB_TORCH_STEPS (90000); their tables come back with `collect`.
# Each phase prints which families said they were complete so far. Whether a background process
# outlives the call that started it is what the first two phases find out: `wait` says so.
set -u -o pipefail
phase="${PHASE:-start}"
persist="$PWD/.ao-default"  # survives between the calls (ignored by git)
watch="${WATCH_SECONDS:-530}"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build=build-gpu

progress() {
  for f in "$persist"/svc.log "$persist"/torch.log; do
    [ -f "$f" ] || continue
    echo "$(basename "$f"): $(grep -c 'diagnosis complete' "$f") complete"
    # Kernel names hold colons ("(anonymous namespace)::gelu"): match up to the notice's text.
    grep -o '^cutriage: .*: diagnosis complete [0-9.]* s' "$f" | cut -c1-200
  done
  for f in "$persist"/ab/*-ab.txt; do
    [ -f "$f" ] && echo "$(basename "$f"): $(grep -c '^round' "$f") runs done"
  done
  for p in svc torch; do
    if [ -f "$persist/$p.pid" ] && kill -0 "$(cat "$persist/$p.pid")" 2>/dev/null; then
      echo "$p: running"
    else
      echo "$p: not running"
    fi
  done
}

watch_for() {  # watch SECONDS: progress every minute, stop early when both runs ended
  local end=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    sleep 60
    echo "--- $(date -u +%H:%M:%S)"; progress
    if ! kill -0 "$(cat "$persist/svc.pid")" 2>/dev/null && ! kill -0 "$(cat "$persist/torch.pid")" 2>/dev/null; then
      return
    fi
  done
}

case "$phase" in
  start)
    rm -rf "$persist"; mkdir -p "$persist"
    {
      date -u +"date: %Y-%m-%dT%H:%M:%SZ"
      nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
      echo "RUN_SECONDS=${RUN_SECONDS:-1500} TORCH_STEPS=${TORCH_STEPS:-700000}"
    } >"$persist/env.txt" 2>&1
    # Without -Werror: a new warning from the device's compiler must not cost the whole run; the
    # build log (in the collected files) shows any.
    # BUILD_ARGS: more CMake arguments (-DCUTRIAGE_BUILD_TESTS=OFF when only the A/B runs: faster).
    bash tests/gpu/build_with_service.sh "$build" "$persist" ${BUILD_ARGS:-} || exit 1
    echo "SVC_RESUME=${SVC_RESUME:-} TORCH_RESUME=${TORCH_RESUME:-} AB=${AB:-0}" >>"$persist/env.txt"
    # One chain per GPU, each in a session of its own (setsid + nohup) so that the end of this call
    # does not take it: with AB=1, bench/default_ab.sh's rounds first (agent off vs always-on),
    # then the long always-on run. The long runs' own logs are svc.log and torch.log.
    ab_env="ROUNDS=${AB_ROUNDS:-2} SVC_SECONDS=${AB_SVC_SECONDS:-180} TORCH_STEPS=${AB_TORCH_STEPS:-90000} BUILD=$build"
    svc_resume="" torch_resume=""
    [ -n "${SVC_RESUME:-}" ] && svc_resume=";CUTRIAGE_RESUME=$PWD/$SVC_RESUME"
    [ -n "${TORCH_RESUME:-}" ] && torch_resume="CUTRIAGE_RESUME=$PWD/$TORCH_RESUME"
    cat >"$persist/svc-chain.sh" <<CHAIN
export CUDA_VISIBLE_DEVICES=0 PATH="$PATH"
[ "${AB:-0}" = 1 ] && env $ab_env bash bench/default_ab.sh service "$persist/ab" >"$persist/ab-service.out" 2>&1
date -u +"service started: %H:%M:%S" >>"$persist/env.txt"
SERVICE_CUTRIAGE="CUTRIAGE_MODE=always-on;CUTRIAGE_SUMMARY=0;CUTRIAGE_LOG_LEVEL=info;CUTRIAGE_OUTPUT=$persist/svc.pb$svc_resume" \
  build-service/cutriage_service ${RUN_SECONDS:-1500} >"$persist/svc.out" 2>"$persist/svc.log"
CHAIN
    cat >"$persist/torch-chain.sh" <<CHAIN
export CUDA_VISIBLE_DEVICES=1 PATH="$PATH"
[ "${AB:-0}" = 1 ] && env $ab_env bash bench/default_ab.sh torch "$persist/ab" >"$persist/ab-torch.out" 2>&1
date -u +"torch started: %H:%M:%S" >>"$persist/env.txt"
env $torch_resume CUDA_INJECTION64_PATH="$PWD/$build/agent/libcutriage.so" CUTRIAGE_MODE=always-on \
  CUTRIAGE_SUMMARY=0 CUTRIAGE_LOG_LEVEL=info CUTRIAGE_OUTPUT="$persist/torch.pb" \
  python3 bench/torch_loop.py ${TORCH_STEPS:-700000} >"$persist/torch.out" 2>"$persist/torch.log"
CHAIN
    start_chain() {  # NAME
      setsid nohup bash "$persist/$1-chain.sh" </dev/null >/dev/null 2>&1 &
      echo $! >"$persist/$1.pid"
    }
    # Without A/B rounds the PyTorch loop starts at once on GPU 1 (its families need the most
    # traffic); with them it waits for the checks, which would disturb its first rounds.
    [ "${AB:-0}" = 1 ] || start_chain torch
    if [ "${CHECKS:-0}" = 1 ]; then  # on GPU 0
      CUDA_VISIBLE_DEVICES=0 timeout 300 ctest --test-dir "$build" -L gpu -j4 >"$persist/ctest-gpu.log" 2>&1
      echo "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$persist/ctest-gpu.log")"
      CUDA_VISIBLE_DEVICES=0 OUT="$persist/checks" BUILD="$build" timeout 200 bash tests/gpu/check_resume.sh \
        >"$persist/check_resume.txt" 2>&1
      echo "check_resume.sh: exit $?"; grep -E "^(ok|FAIL)" "$persist/check_resume.txt" | grep -c "^ok" | sed 's/^/  ok: /'
      grep "^FAIL" "$persist/check_resume.txt"
      CUDA_VISIBLE_DEVICES=0 OUT="$persist/checks" BUILD="$build" timeout 120 bash tests/gpu/check_control.sh \
        >"$persist/check_control.txt" 2>&1
      echo "check_control.sh: exit $?"; grep -E "^(ok|FAIL)" "$persist/check_control.txt"
      CUDA_VISIBLE_DEVICES=0 OUT="$persist/checks" BUILD="$build" timeout 120 bash tests/gpu/check_trace_duty.sh \
        >"$persist/check_trace_duty.txt" 2>&1
      echo "check_trace_duty.sh: exit $?"; grep -E "^(ok|FAIL)" "$persist/check_trace_duty.txt"
    fi
    [ "${AB:-0}" = 1 ] && start_chain torch
    start_chain svc
    echo "build warnings: $(grep -c 'warning:' "$persist/build.log")"
    echo "started: service chain pid $(cat "$persist/svc.pid"), torch chain pid $(cat "$persist/torch.pid")"
    watch_for "$watch"
    ;;
  wait)
    progress
    watch_for "$watch"
    ;;
  collect)
    while kill -0 "$(cat "$persist/svc.pid")" 2>/dev/null || kill -0 "$(cat "$persist/torch.pid")" 2>/dev/null; do
      sleep 10
    done
    progress
    out="${OUT:-$PWD/gpu-out}"
    mkdir -p "$out/default"
    for p in svc torch; do
      [ -f "$persist/$p.pb" ] || continue
      "$build/tools/cutriage" report "$persist/$p.pb" >"$out/default/$p.report.txt" 2>&1
      python3 tests/data/always_on/strip_timeline.py "$persist/$p.pb" "$out/default/$p.stripped.pb"
      "$build/tools/cutriage" report --verbose "$persist/$p.pb" >"$out/default/$p.report-verbose.txt" 2>&1
      cp "$persist/$p.log" "$persist/$p.out" "$out/default/" 2>/dev/null
    done
    cp "$persist/env.txt" "$out/default/"
    cp "$persist"/build.log "$persist"/service.log "$out/default/" 2>/dev/null
    cp "$persist"/ctest-gpu.log "$persist"/check_*.txt "$out/default/" 2>/dev/null
    cp "$persist"/ab/*-ab*.txt "$persist"/ab-*.out "$out/default/" 2>/dev/null
    cat "$persist"/ab/*-ab-summary.txt 2>/dev/null
    for c in resume control trace_duty; do  # the checks' agent files, stripped like the others
      for pb in "$persist/checks/$c"/*.pb; do
        [ -f "$pb" ] && python3 tests/data/always_on/strip_timeline.py "$pb" "$out/default/$c-$(basename "$pb")" >/dev/null
      done
    done
    grep -h -E "^overhead|^ +\(|^info" "$out"/default/*.report.txt
    tar -C "$out" -czf "$out/default.tgz" default && rm -rf "$out/default"
    ;;
  *) echo "PHASE: start, wait or collect"; exit 2 ;;
esac
