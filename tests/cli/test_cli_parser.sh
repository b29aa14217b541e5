#!/usr/bin/env bash
# docs/cli.md against the command line itself: every command `cutriage help` lists has a section
# there, every flag a command's --help prints is in that section's tables, and every flag those
# tables list is one the command takes. Also --version, and help for every command.
# usage: test_cli_parser.sh CUTRIAGE_BINARY DOCS_CLI_MD
set -u
bin=$1
doc=$2
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"

# The commands, from the main help's command list (two spaces, the name, a space).
"$bin" help >"$tmp/main" || fail "cutriage help exits 0"
mapfile -t commands < <(sed -n '/^commands:/,/^$/p' "$tmp/main" | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | grep -v '^help$')
if ((${#commands[@]} >= 8)); then ok "help lists ${#commands[@]} commands"; else fail "help lists the commands (${commands[*]})"; fi

version=$("$bin" --version)
if [[ $version =~ ^cutriage\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then ok "--version: $version"; else fail "--version: '$version'"; fi
grep -q -- '--version' "$doc" && ok "docs name --version" || fail "docs name --version"

# The flags of a help text's option rows ("  -o, --output OUT.pb  text"): names before the value.
help_flags() {
  sed -n '/^options:/,/^$/p' "$1" | grep -E '^  -' | sed -E 's/^  //; s/  .*//' |
    tr ',' '\n' | sed -E 's/^ +//; s/ .*//' | grep -E '^-' | sort -u
}
# A command's section of the doc: from its "## `cutriage NAME`" heading to the next heading.
section() { awk -v h="## \`cutriage $1\`" '$0 == h {on = 1; next} /^## / {on = 0} on' "$doc"; }
# The flags of a section's table rows ("| `-o`, `--output` `OUT.pb` | ...": the first cell).
doc_flags() {
  grep -E '^\| `-' | awk -F'|' '{print $2}' | grep -oE '`-{1,2}[A-Za-z][A-Za-z0-9-]*`' | tr -d '`' | sort -u
}

for c in "${commands[@]}"; do
  if ! "$bin" "$c" --help >"$tmp/$c.help" 2>"$tmp/$c.err"; then
    fail "$c --help exits 0"
    continue
  fi
  if ! head -1 "$tmp/$c.help" | grep -q "^usage: cutriage $c"; then fail "$c --help prints its usage"; continue; fi
  "$bin" help "$c" >"$tmp/$c.help2" && cmp -s "$tmp/$c.help" "$tmp/$c.help2" ||
    fail "help $c is $c --help"
  section "$c" >"$tmp/$c.doc"
  if [[ ! -s $tmp/$c.doc ]]; then
    fail "docs/cli.md has a section for $c"
    continue
  fi
  help_flags "$tmp/$c.help" >"$tmp/$c.flags"
  doc_flags <"$tmp/$c.doc" >"$tmp/$c.docflags"
  missing=$(comm -23 "$tmp/$c.flags" "$tmp/$c.docflags")
  extra=$(comm -13 "$tmp/$c.flags" "$tmp/$c.docflags")
  if [[ -z $missing ]]; then
    ok "$c: the $(wc -l <"$tmp/$c.flags") flags of --help are in docs/cli.md"
  else
    fail "$c: flags of --help missing from docs/cli.md: $(echo $missing)"
  fi
  if [[ -z $extra ]]; then
    ok "$c: docs/cli.md lists no flag $c does not take"
  else
    fail "$c: docs/cli.md lists flags $c does not take: $(echo $extra)"
  fi
done

# Every exit code the main help names is in the doc's table.
for code in 0 1 2 3 4 5 6 7 10; do
  grep -qE "^\| $code \|" "$doc" || fail "docs/cli.md lists exit code $code"
done
ok "docs/cli.md lists the exit codes"

finish
