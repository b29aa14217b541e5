#!/usr/bin/env bash
# Two agent builds on the same programs, for a change that must not move what is profiled: the
# tree of .carry/old.tgz (see run_split_check.sh) and this one, each injected into zoo_fma_chain
# and the two-context program (RUNS times each, alternating) and the PyTorch loop (once each), with
# the GPU suite's settings (top:5). Prints the verdict lines of each file (tests/gpu/verdicts.py).
set -u -o pipefail
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out/ab"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
old=/tmp/cutriage-old
rm -rf "$old" && mkdir -p "$old" && tar -C "$old" -xzf .carry/old.tgz && ln -s "$PWD/tests/data" "$old/tests/data"
for b in "$old" "$PWD"; do
  cmake -S "$b" -B "$b/build-gpu" -G Ninja -DPROTOZERO_INCLUDE_DIR="$PWD/.carry/usr/include" >"$out/ab/cfg.log" 2>&1 &&
    cmake --build "$b/build-gpu" -j16 >"$out/ab/build.log" 2>&1 || { echo "build of $b failed"; tail -30 "$out/ab/build.log"; exit 1; }
done
cli="$PWD/build-gpu/tools/cutriage"
run() {  # run TAG TREE NAME CMD...
  local tag=$1 tree=$2 name=$3
  shift 3
  CUDA_INJECTION64_PATH="$tree/build-gpu/agent/libcutriage.so" CUTRIAGE_OUTPUT="$out/ab/$tag-$name.pb" \
    CUTRIAGE_SELECT=top:5 "$@" >"$out/ab/$tag-$name.out" 2>&1
  echo "== $tag $name: exit $?, $("$cli" json "$out/ab/$tag-$name.pb" 2>/dev/null | python3 tests/gpu/verdicts.py | wc -l) kernels with a record"
  "$cli" json "$out/ab/$tag-$name.pb" 2>/dev/null | python3 tests/gpu/verdicts.py | cut -c1-160
}
for ((i = 1; i <= ${RUNS:-3}; ++i)); do
  for t in old new; do
    tree=$([ $t = old ] && echo "$old" || echo "$PWD")
    run "$t" "$tree" "fma$i" "$tree/build-gpu/examples/zoo/zoo_fma_chain"
    run "$t" "$tree" "2ctx$i" "$tree/build-gpu/tests/gpu/gpu_two_contexts"
  done
done
for t in old new; do
  tree=$([ $t = old ] && echo "$old" || echo "$PWD")
  run "$t" "$tree" torch python3 "$PWD/bench/torch_loop.py"
done
