#!/usr/bin/env bash
# End-to-end checks of `cutriage pprof` (exit codes, one-line errors, output paths, the gzip
# framing) and of the report's source lines, on the SYNTHETIC PC-sampling file that
# make_pc_sampling_file writes. The profile's contents are checked with the protoc classes in the
# tool tests (tests/unit/tools/test_pprof.cpp).
# usage: test_pprof.sh CUTRIAGE_BINARY MAKE_PC_SAMPLING_FILE MAKE_TRACE_FILE
set -u
bin=$1
make_pc=$2
make_trace=$3
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
# Pinned, whatever this machine has installed: the SASS note is then always the same.
export CUTRIAGE_NVDISASM=$tmp/no-nvdisasm


is_gzip() {  # is_gzip NAME FILE: the gzip magic, and a member gzip itself accepts
  local magic
  magic=$(od -An -tx1 -N2 "$2" | tr -d ' \n')
  if [[ $magic != 1f8b ]]; then
    fail "$1: $2 does not start with the gzip magic (got '$magic')"; return
  fi
  if command -v gzip >/dev/null && ! gzip -t <"$2" 2>/dev/null; then
    fail "$1: gzip -t rejects $2"; return
  fi
  ok "$1"
}

"$make_pc" "$tmp/pc.pb" || { echo "FAIL: make_pc_sampling_file"; exit 1; }
"$make_trace" "$tmp/trace.pb" || { echo "FAIL: make_trace_file"; exit 1; }

expect "pprof help" 0 "usage: cutriage pprof" -- "$bin" pprof --help
expect "main help lists pprof" 0 "pprof FILE.pb" -- "$bin" --help
expect "pprof without file" 1 "FILE.pb is required" -- "$bin" pprof
expect "pprof unknown option" 1 "unknown option '--frobnicate'" -- "$bin" pprof --frobnicate "$tmp/pc.pb"
expect "pprof --kernel without name" 1 "--kernel needs a value \(NAME\)" -- "$bin" pprof "$tmp/pc.pb" --kernel
expect "pprof missing file" 2 "cannot open" -- "$bin" pprof "$tmp/none.pb" -o "$tmp/p.pb.gz"
printf 'not a cutriage file\n' >"$tmp/text.pb"
expect "pprof not cutriage" 3 "not a cutriage file" -- "$bin" pprof "$tmp/text.pb" -o "$tmp/p.pb.gz"
expect "pprof of a file without samples" 10 "the file has no PC samples" -- "$bin" pprof "$tmp/trace.pb" -o "$tmp/p.pb.gz"
if [[ -e "$tmp/p.pb.gz" ]]; then
  fail "pprof of a file without samples: left $tmp/p.pb.gz behind"
fi
expect "pprof --kernel matching nothing" 10 "no sampled kernel matches 'gemm'" -- "$bin" pprof "$tmp/pc.pb" --kernel gemm -o "$tmp/p.pb.gz"
expect "pprof --kernel of a failed sampling" 10 "no PC samples were collected: reduce.*CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" -- \
  "$bin" pprof "$tmp/pc.pb" --kernel reduce -o "$tmp/p.pb.gz"

expect "pprof" 0 "2 kernels, 1175 samples \(1025 stalls\), [0-9]+ SM cycles, in [0-9]+ stacks -> $tmp/p.pb.gz" -- "$bin" pprof "$tmp/pc.pb" -o "$tmp/p.pb.gz"
expect "pprof says once that nvdisasm is missing" 0 "note: CUTRIAGE_NVDISASM=$tmp/no-nvdisasm is not an executable file" -- \
  "$bin" pprof "$tmp/pc.pb" -o "$tmp/p.pb.gz"
if [[ $(grep -c "no-nvdisasm" "$tmp/err") -ne 1 ]]; then
  fail "pprof nvdisasm note: said $(grep -c "no-nvdisasm" "$tmp/err") times"
fi
is_gzip "pprof output is gzip" "$tmp/p.pb.gz"
expect "pprof default output" 0 "-> $tmp/pc.pb.pprof.pb.gz" -- "$bin" pprof "$tmp/pc.pb"
is_gzip "pprof default output is gzip" "$tmp/pc.pb.pprof.pb.gz"
expect "pprof --kernel" 0 "1 kernel, 1095 samples \(965 stalls\)" -- "$bin" pprof "$tmp/pc.pb" --kernel stencil -o "$tmp/k.pb.gz"
"$bin" pprof "$tmp/pc.pb" -o - >"$tmp/stdout.pb.gz" 2>/dev/null
is_gzip "pprof to stdout" "$tmp/stdout.pb.gz"
expect "pprof unwritable output" 6 "cannot write '$tmp/no/dir/p.pb.gz'" -- "$bin" pprof "$tmp/pc.pb" -o "$tmp/no/dir/p.pb.gz"
size=$(stat -c %s "$tmp/pc.pb")
head -c $((size - 5)) "$tmp/pc.pb" >"$tmp/torn.pb"
expect "pprof truncated file" 4 "truncated" -- "$bin" pprof "$tmp/torn.pb" -o "$tmp/torn.pb.gz"

# The report's source lines on the same file.
expect "report source lines" 0 "source    PC sampling of launch #18: 1,095 samples \(965 stalls\)" -- "$bin" report "$tmp/pc.pb"
expect "report hottest line" 0 "^ +1  src/stencil.cu:5 +700 +72.5%  long_scoreboard 85.7%$" -- "$bin" report "$tmp/pc.pb"
expect "report without line info" 0 "note: built without -lineinfo: showing SASS offsets" -- "$bin" report "$tmp/pc.pb"
expect "report failed sampling" 0 "PC sampling of launch #41 failed: cuptiPCSamplingEnable:" -- "$bin" report "$tmp/pc.pb"

finish
