#!/usr/bin/env bash
# `cutriage run --rerun` (issue 21) without a GPU: the "application" is a shell script that writes,
# where the agent would, a real H200 file. Its first run writes a file whose top family ran before
# the trace ranked it (tests/data/agent-split/run_fma_chain.pb, from `cutriage run` of zoo_fma_chain);
# a second run, given CUTRIAGE_RANKING, writes another real file (zoo_fma_chain.pb, profiled) and
# records what it was handed. The checks: when run runs the application again, what the second
# run is handed, which file is kept and reported, and when it does not run it again.
# usage: test_rerun.sh CUTRIAGE_BINARY TEST_DATA_DIR
set -u
bin=$1
data=$2
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

missed=$data/agent-split/run_fma_chain.pb
profiled=$data/agent-split/zoo_fma_chain.pb
# The application: one line per run in $tmp/runs, then the agent's file at CUTRIAGE_OUTPUT. With
# CUTRIAGE_RANKING it notes the ranking file's bytes (to compare with the first run's) and exits
# with SECOND_STATUS.
cat >"$tmp/app.sh" <<EOF
#!/usr/bin/env bash
echo "app ran: ranking=\${CUTRIAGE_RANKING:-none}" >>"$tmp/runs"
if [[ -z \${CUTRIAGE_RANKING:-} ]]; then
  cp "\$FIRST" "\$CUTRIAGE_OUTPUT"
  exit "\${FIRST_STATUS:-0}"
fi
cmp -s "\$CUTRIAGE_RANKING" "\$FIRST" && echo "ranking is the first run's file" >>"$tmp/runs"
[[ -n \${SECOND:-} ]] && cp "\$SECOND" "\$CUTRIAGE_OUTPUT"
exit "\${SECOND_STATUS:-0}"
EOF
chmod +x "$tmp/app.sh"

run() {  # run NAME [env...] -- cutriage run args...: output in $tmp/out, $tmp/err; status in $rc
  local name=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f "$tmp/runs" "$tmp"/out*.pb*
  env "${envs[@]}" "$bin" run --library "$bin" -o "$tmp/out.pb" --quiet "$@" -- "$tmp/app.sh" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  runs=$(cat "$tmp/runs" 2>/dev/null | grep -c '^app ran')
}

# auto: the first run missed its top family, so the application runs again with its file.
run "auto" FIRST="$missed" SECOND="$profiled" --
[[ $rc -eq 0 && $runs -eq 2 ]] && ok "auto: a missed top family runs the application again" ||
  { fail "auto: rc $rc, $runs runs"; sed 's/^/  | /' "$tmp/err" | head -5; }
grep -q "ranking is the first run's file" "$tmp/runs" && ok "auto: the second run is handed the first run's file" ||
  fail "auto: CUTRIAGE_RANKING was not the first run's file"
grep -q "ranking=$tmp/out.pb.ranking-run" "$tmp/runs" && ok "auto: the first file is moved aside for it" ||
  { fail "auto: ranking path"; cat "$tmp/runs"; }
grep -qE "zoo_fma_chain \(100.0% of the GPU time\) ran before the trace had ranked it; running .* again" "$tmp/err" &&
  ok "auto: says why it runs again" || { fail "auto: message"; cat "$tmp/err"; }
[[ ! -e $tmp/out.pb.ranking-run ]] && cmp -s "$tmp/out.pb" "$profiled" && ok "auto: only the second run's file is kept" ||
  fail "auto: files left: $(ls "$tmp" | tr '\n' ' ')"
grep -q "saved: $tmp/out.pb" "$tmp/out" && ! grep -q "not launched again" "$tmp/out" &&
  ok "auto: the report is the second run's" || fail "auto: the report is not the second run's"

# auto: what the first run missed holds 0.2% of the GPU time (the H200's CUDA-graph serving loop,
# two one-off kernels before the ranking): not worth a second run, and it says so.
run "auto, one-off kernels" FIRST="$data/graphs/graph_mlp-deep.pb" SECOND="$profiled" --
[[ $rc -eq 0 && $runs -eq 1 ]] && cmp -s "$tmp/out.pb" "$data/graphs/graph_mlp-deep.pb" &&
  ok "auto: families with 0.2% of the GPU time missed, runs once" || { fail "auto, one-off: rc $rc, $runs runs"; }
grep -qE "not running .* again: .* and 1 more ran before the trace had ranked them, with 0.2% of the GPU time .*--rerun always" \
  "$tmp/err" && ok "auto: says why it does not run again" || { fail "auto, one-off: message"; cat "$tmp/err"; }

run "never" FIRST="$missed" SECOND="$profiled" -- --rerun never
[[ $rc -eq 0 && $runs -eq 1 ]] && cmp -s "$tmp/out.pb" "$missed" && ok "never: runs once" || fail "never: $runs runs"

run "nothing missed" FIRST="$profiled" --
[[ $runs -eq 1 ]] && ok "auto: nothing missed, runs once" || fail "auto with nothing missed: $runs runs"

run "always" FIRST="$profiled" SECOND="$profiled" -- --rerun always
[[ $runs -eq 2 ]] && grep -q -- "--rerun always" "$tmp/err" && ok "always: runs twice" || fail "always: $runs runs"

run "failed app" FIRST="$missed" FIRST_STATUS=3 --
[[ $rc -eq 3 && $runs -eq 1 ]] && grep -q "exited with status 3" "$tmp/err" && ok "a failed first run is not repeated" ||
  { fail "failed first run: rc $rc, $runs runs"; cat "$tmp/err"; }

run "select all" FIRST="$missed" -- --select all
[[ $runs -eq 1 ]] && grep -q "ranks nothing" "$tmp/err" && ok "select all: no second run, says why" ||
  fail "select all: $runs runs"

run "given ranking" FIRST="$missed" -- --ranking "$missed"
# The app sees a ranking on its first run here: it writes nothing, and nothing more happens.
[[ $runs -eq 1 ]] && ok "a given ranking: no second run" || fail "given ranking: $runs runs"

run "second run writes nothing" FIRST="$missed" SECOND_STATUS=4 --
[[ $runs -eq 2 && $rc -eq 4 ]] && cmp -s "$tmp/out.pb" "$missed" && grep -q "the second run wrote no profile" "$tmp/err" &&
  ok "a second run without a file keeps the first run's" || { fail "second run without a file: rc $rc"; cat "$tmp/err"; }

finish
