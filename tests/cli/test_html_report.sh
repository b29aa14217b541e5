#!/usr/bin/env bash
# `cutriage report FILE --html OUT` (docs/html-report.md) on committed H200 files: exit codes, the
# output written whole or not at all, the page's sections, and the JSON rows counting the kernels
# the text report counts.
# usage: test_html_report.sh CUTRIAGE_BINARY DATA_DIR
set -u
bin=$1
data=$2
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
# Only failures print a line; the page's checks pass quietly.
expect_rc() {  # expect_rc WANT DESCRIPTION CMD...
  local want=$1 what=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [[ $rc -eq $want ]] || fail "$what: exit $rc, expected $want ($(head -c 300 "$tmp/err"))"
}

torch=$data/agent-split/torch_loop.pb
expect_rc 0 "html report" "$bin" report "$torch" --html "$tmp/torch.html"
[[ -s $tmp/torch.html ]] || fail "no page written"
grep -q "HTML report -> $tmp/torch.html" "$tmp/err" || fail "stderr does not name the page"
[[ ! -s $tmp/out ]] || fail "--html printed on stdout"
for section in 'id="session"' 'id="families"' 'id="timeline"' 'id="kernels"' '<svg class="roofline"' \
               '<svg class="timeline"' '<table class="evidence">' '<table class="source">' 'NVIDIA H200'; do
  grep -qF "$section" "$tmp/torch.html" || fail "page lacks $section"
done
articles=$(grep -c '<article class="kernel"' "$tmp/torch.html")
text_kernels=$("$bin" report "$torch" | sed -n 's/^\([0-9]*\) profiled kernels\{0,1\}, longest first$/\1/p')
[[ $articles -eq $text_kernels ]] || fail "$articles kernel sections, the text report has $text_kernels"
if grep -qE 'https?://' "$tmp/torch.html"; then fail "the page names a URL"; fi

# The JSON rows count the kernels as the text report does (before: torch_loop's adaptively
# merged launches were a row each).
for f in "$data"/agent/torch_loop.pb "$data"/agent-split/torch_loop.pb "$data"/trace/torch_loop.pb; do
  rows=$("$bin" report "$f" --format json | wc -l)
  shown=$("$bin" report "$f" | awk '/profiled kernels?, longest first$/ {n = $1} /^not profiled$/ {l = 1; next} l && /^  - / {m++} END {print n + m}')
  [[ $rows -eq $shown ]] || fail "$f: $rows JSON rows, the text report shows $shown kernels"
done

# stdout with -, and the page is the same.
expect_rc 0 "html to stdout" "$bin" report "$torch" --html -
cmp -s "$tmp/out" "$tmp/torch.html" || fail "--html - differs from the file"

# Usage errors, and the input never overwritten.
expect_rc 1 "--html without a file" "$bin" report "$torch" --html
expect_rc 1 "--html with --format" "$bin" report "$torch" --html "$tmp/x.html" --format json
cp "$torch" "$tmp/in.pb"
expect_rc 1 "--html naming the input" "$bin" report "$tmp/in.pb" --html "$tmp/in.pb"
cmp -s "$torch" "$tmp/in.pb" || fail "the input was overwritten"
# A failed write leaves what was at the name.
echo "keep" >"$tmp/keep.html"
chmod a-w "$tmp"
if [[ $(id -u) -ne 0 ]]; then
  expect_rc 6 "unwritable directory" "$bin" report "$torch" --html "$tmp/new.html"
fi
chmod u+w "$tmp"
if [[ -w /dev/full ]]; then
  expect_rc 6 "/dev/full" "$bin" report "$torch" --html /dev/full
fi
expect_rc 2 "missing input" "$bin" report "$tmp/missing.pb" --html "$tmp/m.html"
[[ ! -e $tmp/m.html ]] || fail "a page was written for a missing input"

# A torn file: its complete records make the page, and the exit code says it was torn.
size=$(wc -c <"$torch")
head -c $((size - 100)) "$torch" >"$tmp/torn.pb"
expect_rc 4 "torn input" "$bin" report "$tmp/torn.pb" --html "$tmp/torn.html"
grep -q '</html>' "$tmp/torn.html" || fail "no complete page for a torn input"

# Every committed agent file renders; a file without a trace says so.
for f in "$data"/agent/*.pb "$data"/graphs/*.pb "$data"/always_on/*.pb; do
  expect_rc 0 "$(basename "$f")" "$bin" report "$f" --html "$tmp/each.html"
  grep -q '</html>' "$tmp/each.html" || fail "$f: page not complete"
done

if [[ $failed -ne 0 ]]; then
  echo "$failed failure(s)"
  exit 1
fi
echo "ok"
