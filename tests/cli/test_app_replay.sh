#!/usr/bin/env bash
# `cutriage run --replay application` (issue 21 item 2) without a GPU: the "application" is
# fake_app (tests/cli/fake_app.cpp), the real agent core on the fake platform, configured from the
# CUTRIAGE_* variables `run` hands it and writing where CUTRIAGE_OUTPUT says, with the zoo's H200
# captures as its kernels. The checks: how often run runs the program and with what
# (CUTRIAGE_RESUME, CUTRIAGE_RANKING), when it stops and says why, which file is kept, and the
# report of it.
# usage: test_app_replay.sh CUTRIAGE_BINARY FAKE_APP TEST_DATA_DIR
set -u
bin=$1
app=$2
data=$3
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

run() {  # run [env...] -- cutriage run args... -- app args...: output in $tmp/out, $tmp/err; status in $rc
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f "$tmp/runs" "$tmp"/out*.pb* "$tmp"/run-*.pb*
  env FAKE_APP_RUNS="$tmp/runs" "${envs[@]}" "$bin" run --library "$app" --quiet "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  runs=$(grep -c '^run ' "$tmp/runs" 2>/dev/null)
  runs=${runs:-0}
}
leftovers() {  # the files the loop moved aside and left behind
  local f
  for f in "$tmp"/*.replay-run* "$tmp"/*.ranking-run*; do [[ -e $f ]] && printf '%s ' "${f##*/}"; done
}
show() { sed 's/^/  | /' "$tmp/err" | tail -8; }

# A kernel launched once: one metric group a run, until its counters and PC samples are complete.
run -- --replay application -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 0 && $runs -ge 3 ]] && ok "once-launched kernel: $runs runs" || { fail "once-launched: rc $rc, $runs runs"; show; }
[[ $(grep -c 'application replay, run [0-9]* of at most 40: ' "$tmp/err") -eq $runs ]] &&
  ok "a line per run on stderr" || { fail "a line per run"; show; }
grep -q "application replay, run $runs of at most 40: every profiled family complete (1 family)" "$tmp/err" &&
  ok "the last run's line says every family is complete" || { fail "the last line"; show; }
grep -q "application replay, run 1 of at most 40: 1 family incomplete (zoo_strided_load)" "$tmp/err" &&
  ok "the first run's line names the incomplete family" || { fail "the first line"; show; }
grep -q '^run 1 resume=none ranking=none$' "$tmp/runs" && ok "the first run resumes nothing" ||
  { fail "first run's variables"; cat "$tmp/runs"; }
grep -q "^run 2 resume=$tmp/out.pb.replay-run1 ranking=$tmp/out.pb.replay-run1\$" "$tmp/runs" &&
  grep -q "^run 3 resume=$tmp/out.pb.replay-run2 ranking=$tmp/out.pb.replay-run1\$" "$tmp/runs" &&
  ok "each run resumes the last one's file, with the first run's ranking" || { fail "later runs' variables"; cat "$tmp/runs"; }
[[ -f $tmp/out.pb && -z $(leftovers) ]] && ok "only the final file is left" || fail "files left: $(leftovers)"
counter_runs=$(sed -n 's/.*assembled from [0-9]* launches without replay, over \([0-9]*\) runs of the application.*/\1/p' "$tmp/out")
grep -q '^replay: application' "$tmp/out" && [[ -n $counter_runs && $counter_runs -ge 2 && $counter_runs -le $runs ]] &&
  grep -q "complete  yes, over $counter_runs runs" "$tmp/out" &&
  ok "the report says the counters came from $counter_runs runs and are complete" ||
  { fail "report"; grep -E 'replay|assembled|complete' "$tmp/out"; }
[[ $(grep -c 'fake_app: run [0-9]* done' "$tmp/out") -eq $runs ]] && ok "the application's output, every run" ||
  fail "application output"
"$bin" report "$tmp/out.pb" >/dev/null && ok "the kept file reads" || fail "cutriage report on the kept file"

# --max-runs: stops there, says so, keeps the last file; the report says what is missing.
run -- --replay application --max-runs 2 -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 0 && $runs -eq 2 ]] && grep -q 'application replay stopped: --max-runs 2 reached; 1 family incomplete' "$tmp/err" &&
  ok "--max-runs 2: two runs, says why it stopped" || { fail "--max-runs: rc $rc, $runs runs"; show; }
[[ -f $tmp/out.pb && -z $(leftovers) ]] && grep -q 'complete  not yet: ' "$tmp/out" &&
  ok "--max-runs: the report says the counters are not complete" || { fail "--max-runs report"; grep complete "$tmp/out"; }

# A kernel launched 40 times: every group in the first run.
run -- --replay application -o "$tmp/out.pb" -- "$app" "$data" strided_load:40
[[ $rc -eq 0 && $runs -eq 1 ]] && grep -q 'complete  yes, over 1 run$' "$tmp/out" &&
  ok "a kernel launched often completes in one run" || { fail "launched often: rc $rc, $runs runs"; show; }

# top:1 of a program whose trace comes back after its launches: the first run ranks the top kernel
# after its last launch; the second, with the first run's ranking, profiles it from its first.
run FAKE_APP_LATE_TRACE=1 -- --replay application --select top:1 -o "$tmp/out.pb" -- "$app" "$data" vector_add fma_chain:3
[[ $rc -eq 0 && $runs -ge 2 ]] && grep -q "application replay, run 1 of at most 40: 1 family incomplete (zoo_fma_chain)" "$tmp/err" &&
  ok "top:1, late trace: the missed top family counts as incomplete" || { fail "top:1: rc $rc, $runs runs"; show; }
grep -q "^run 2 resume=$tmp/out.pb.replay-run1 ranking=$tmp/out.pb.replay-run1\$" "$tmp/runs" &&
  ok "top:1: the second run has the first run's ranking" || { fail "top:1 variables"; cat "$tmp/runs"; }
grep -q '^\[1\] zoo_fma_chain' "$tmp/out" && grep -q 'Ranking: \|ranking: from an earlier run' "$tmp/out" &&
  [[ -z $(leftovers) ]] && ok "top:1: the top family is profiled, the ranking file removed" ||
  { fail "top:1 report"; grep -E '^\[|ranking' "$tmp/out"; echo "left: $(leftovers)"; }

# A run that adds nothing (the range profiler is busy: nothing collected) ends the loop; the file
# of the run before it is kept.
run FAKE_APP_FAIL_FROM=3 -- --replay application -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 0 && $runs -eq 3 ]] && grep -q 'run 3 of at most 40: .*; it added nothing$' "$tmp/err" &&
  grep -q 'application replay stopped: run 3 added nothing to the counters or samples of run 2; 1 family incomplete (zoo_strided_load) after 3 runs; the report is run 2.s file' "$tmp/err" &&
  ok "a run that adds nothing stops the loop, run 2's file kept" || { fail "adds nothing: rc $rc, $runs runs"; show; }
# (run 1 ranked the kernel after its only launch, top:5 by default: run 2 measured the first group)
[[ -f $tmp/out.pb && -z $(leftovers) ]] && grep -q 'over 1 run of the application' "$tmp/out" &&
  ! "$bin" json "$tmp/out.pb" | grep -q HARDWARE_BUSY &&
  ok "adds nothing: the kept file is run 2's" || { fail "adds nothing: files $(leftovers)"; grep assembled "$tmp/out"; }

# A run that loses what the earlier ones measured (the program's inputs changed: another launch
# shape, so nothing is continued) ends the loop too, keeping the file before it.
run FAKE_APP_SHAPE_FROM=3 -- --replay application -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 0 && $runs -eq 3 ]] && grep -q 'run 3 of at most 40: .*; it lost families or counters of the earlier runs$' "$tmp/err" &&
  grep -q "application replay stopped: run 3 did not continue run 2's families (the program launched other kernels or launch shapes" "$tmp/err" &&
  [[ -f $tmp/out.pb && -z $(leftovers) ]] && grep -q 'over 1 run of the application' "$tmp/out" &&
  ok "a run that loses the earlier counters stops the loop, run 2's file kept" || { fail "lost: rc $rc, $runs runs"; show; }

# A failing run ends the loop; run returns its status.
run FAKE_APP_EXIT_ON=2:3 -- --replay application -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 3 && $runs -eq 2 ]] && grep -q 'application replay stopped: .* exited with status 3 in run 2' "$tmp/err" &&
  [[ -f $tmp/out.pb && -z $(leftovers) ]] && ok "a failing run stops the loop with its status" ||
  { fail "failing run: rc $rc, $runs runs"; show; }

# A pattern with %p: each run writes its own name; the final file is the last run's.
run -- --replay application --max-runs 3 -o "$tmp/run-%p.pb" -- "$app" "$data" strided_load
n_files=0
for f in "$tmp"/run-*.pb; do [[ -e $f ]] && n_files=$((n_files + 1)); done
[[ $rc -eq 0 && $n_files -eq 1 && -z $(leftovers) ]] && grep -q "saved: $tmp/run-[0-9]*.pb" "$tmp/out" &&
  ok "%p: one file left, the report's" || { fail "%p: $n_files files, left $(leftovers)"; ls "$tmp"; }

# Options.
run -- --replay sometimes -- "$app" "$data" strided_load
[[ $rc -eq 1 && $runs -eq 0 ]] && grep -qx 'cutriage run: --replay "sometimes": expected kernel or application' "$tmp/err" &&
  ok "a bad --replay names the option and the values" || { fail "bad --replay: rc $rc"; show; }
run -- --replay application --mode always-on -- "$app" "$data" strided_load
[[ $rc -eq 1 && $runs -eq 0 ]] && grep -q 'cutriage run: --replay application is .*--mode always-on never replays' "$tmp/err" &&
  ok "--replay application with --mode always-on is refused" || { fail "always-on: rc $rc"; show; }
run CUTRIAGE_REPLAY=bogus -- -- "$app" "$data" strided_load
[[ $rc -eq 1 ]] && grep -q 'CUTRIAGE_REPLAY="bogus": expected kernel or application' "$tmp/err" &&
  ok "a bad CUTRIAGE_REPLAY is named as the variable" || { fail "bad variable: rc $rc"; show; }
run -- --replay application --max-runs 0 -- "$app" "$data" strided_load
[[ $rc -eq 1 && $runs -eq 0 ]] && grep -q -- '--max-runs' "$tmp/err" && ok "--max-runs 0 is refused" ||
  { fail "--max-runs 0: rc $rc"; show; }
run -- --replay application --segment-mb 1 -- "$app" "$data" strided_load
[[ $rc -eq 1 && $runs -eq 0 ]] && grep -q 'expected no --segment-mb or --segment-seconds' "$tmp/err" &&
  ok "--replay application with segments is refused" || { fail "segments: rc $rc"; show; }
run -- --replay application --rerun never --max-runs 2 -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 0 && $runs -eq 2 ]] && grep -q -- '--rerun does not apply with --replay application' "$tmp/err" &&
  ok "--rerun with --replay application: said, and the loop runs" || { fail "--rerun: rc $rc, $runs runs"; show; }
# CUTRIAGE_REPLAY from the environment runs the loop as the flag does.
run CUTRIAGE_REPLAY=application -- --max-runs 2 -o "$tmp/out.pb" -- "$app" "$data" strided_load
[[ $rc -eq 0 && $runs -eq 2 ]] && ok "CUTRIAGE_REPLAY=application in the environment runs the loop" ||
  { fail "variable: rc $rc, $runs runs"; show; }
# Kernel replay (the default) runs the program once here: nothing to rerun for a fully profiled run.
run -- -o "$tmp/out.pb" -- "$app" "$data" strided_load:3
[[ $rc -eq 0 && $runs -eq 1 ]] && ! grep -q 'application replay' "$tmp/err" && ok "kernel replay: one run" ||
  { fail "kernel replay: $runs runs"; show; }

finish
