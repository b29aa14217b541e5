#!/usr/bin/env bash
# One device call for a change to the agent's structure (issue 19): the GPU suite with the
# verdicts of every agent file against the committed ones (run_agent_tests.sh, benchmarks off),
# and the agent's CPU per launch callback before and after (bench/launch_enter_ab.sh), the
# "before" tree carried as .carry/old.tgz (git archive of the base commit, see docs in the note).
#
#   git archive --format=tar BASE CMakeLists.txt cmake agent collectors triage proto tools tests/support \
#     tests/CMakeLists.txt tests/unit tests/agent_lib tests/cli tests/fuzz tests/gpu bench examples | gzip > .carry/old.tgz
#   bash tests/gpu/run_split_check.sh      # on the device, carry .carry; results under $OUT
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
old=/tmp/cutriage-old
(
  rm -rf "$old" && mkdir -p "$old" && tar -C "$old" -xzf .carry/old.tgz && ln -s "$PWD/tests/data" "$old/tests/data" &&
    nice -n 19 cmake -S "$old" -B "$old/build" -G Ninja -DCUTRIAGE_BUILD_EXAMPLES=OFF \
      -DPROTOZERO_INCLUDE_DIR="$PWD/.carry/usr/include" >"$out/old-configure.log" 2>&1 &&
    nice -n 19 cmake --build "$old/build" -j4 --target cutriage_bench_launch_enter >"$out/old-build.log" 2>&1
  echo "old bench build: exit $?" >"$out/old-build.done"
) &
PCBENCH=0 BENCH=0 timeout "${SUITE_SECONDS:-470}" bash tests/gpu/run_agent_tests.sh
echo "suite: exit $?" >>"$out/summary.txt"
wait
cat "$out/old-build.done" >>"$out/summary.txt"
if [ -x "$old/build/tests/cutriage_bench_launch_enter" ] && [ -x build-gpu/tests/cutriage_bench_launch_enter ]; then
  bash bench/launch_enter_ab.sh "$old/build/tests/cutriage_bench_launch_enter" build-gpu/tests/cutriage_bench_launch_enter 5 \
    >"$out/launch_enter_ab.md" 2>&1
  cat "$out/launch_enter_ab.md" >>"$out/summary.txt"
fi
nproc >>"$out/summary.txt"; lscpu | grep 'Model name' >>"$out/summary.txt"
