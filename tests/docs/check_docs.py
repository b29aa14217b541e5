#!/usr/bin/env python3
"""The documentation checked against the tree (CTest label "docs").

  links               every relative link of README.md, BENCHMARKS.md and docs/*.md resolves: the
                      file or directory exists, and an anchor (#...) names a heading of the target
                      page (GitHub's anchors: lower case, punctuation dropped, spaces to '-')
  benchmarks_summary  BENCHMARKS.md opens with its summary table (the first section, the first
                      table): columns what, machine, date, plain, cutriage, ncu, command; one row
                      per benchmark, each row's command naming scripts that exist in bench/
  test_command        the README's test command (the block after the marker docs.test_command)
                      is the one .ci/run runs as its "tests" step
  sample_report       the README's sample report (the text block after the marker
                      docs.sample_report) is what the command in the sh block before the marker
                      prints today, run on the bundled captures with the cutriage just built

usage: check_docs.py CHECK --root SOURCE_DIR [--cutriage BINARY]
Exits 0 when the check passes, 1 with one line per problem.
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(```|~~~)")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def without_code(text):
    """The text with fenced blocks and inline code blanked (links inside them are not links)."""
    out, in_fence = [], False
    for line in text.split("\n"):
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            out.append("")
            continue
        out.append("" if in_fence else re.sub(r"`[^`]*`", "``", line))
    return "\n".join(out)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"`", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    in_fence = False
    for line in text.split("\n"):
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        m = None if in_fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    out.update(re.findall(r'<a (?:name|id)="([^"]+)"', text))
    return out


def pages(root):
    files = ["README.md", "BENCHMARKS.md"]
    files += sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    return files


def check_links(root, _args):
    problems, count = [], 0
    for page in pages(root):
        text = read(root, page)
        plain = without_code(text)
        targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", plain)
        targets += re.findall(r"^\s*\[[^\]]+\]:\s+(\S+)", plain, re.M)
        for target in targets:
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            count += 1
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            full = os.path.join(root, dest)
            if not os.path.exists(full):
                problems.append(f"{page}: link to {target}: {dest} does not exist")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(read(root, dest)):
                problems.append(f"{page}: link to {target}: no heading #{anchor} in {dest}")
    return problems, f"{count} relative links in {len(pages(root))} pages"


def table_rows(lines, start):
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        rows.append(cells)
    return rows


def check_benchmarks_summary(root, _args):
    lines = read(root, "BENCHMARKS.md").split("\n")
    sections = [i for i, l in enumerate(lines) if l.startswith("## ")]
    first_table = next((i for i, l in enumerate(lines) if l.startswith("|")), None)
    if not sections or first_table is None:
        return ["BENCHMARKS.md: no section or no table"], ""
    if lines[sections[0]].strip() != "## Summary" or not (sections[0] < first_table and
                                                         (len(sections) < 2 or first_table < sections[1])):
        return [f"BENCHMARKS.md: the first section must be '## Summary' holding the first table "
                f"(first section: {lines[sections[0]]!r}, first table at line {first_table + 1})"], ""
    rows = table_rows(lines, first_table)
    header = [h.lower() for h in rows[0]]
    problems = []
    for column in ("what", "machine", "date", "plain", "cutriage", "ncu", "command"):
        if not any(h.startswith(column) for h in header):
            problems.append(f"BENCHMARKS.md: the summary table has no column '{column}' (columns: {rows[0]})")
    if problems:
        return problems, ""
    command = next(i for i, h in enumerate(header) if h.startswith("command"))
    body = rows[2:]
    if not body:
        return ["BENCHMARKS.md: the summary table has no rows"], ""
    for row in body:
        scripts = re.findall(r"bench/[A-Za-z0-9_.\-]+", row[command] if command < len(row) else "")
        if not scripts:
            problems.append(f"BENCHMARKS.md: summary row '{row[0]}' names no bench/ script in its command")
        for script in scripts:
            if not os.path.isfile(os.path.join(root, script)):
                problems.append(f"BENCHMARKS.md: summary row '{row[0]}': {script} does not exist")
    return problems, f"{len(body)} benchmarks in the summary table"


def block_after(lines, marker):
    """The lines of the first fenced block after the line holding marker."""
    at = next((i for i, l in enumerate(lines) if marker in l), None)
    if at is None:
        return None, None
    start = next((i for i in range(at + 1, len(lines)) if FENCE.match(lines[i].strip())), None)
    if start is None:
        return None, at
    end = next(i for i in range(start + 1, len(lines)) if FENCE.match(lines[i].strip()))
    return lines[start + 1:end], at


def block_before(lines, at):
    end = next(i for i in range(at - 1, -1, -1) if FENCE.match(lines[i].strip()))
    start = next(i for i in range(end - 1, -1, -1) if FENCE.match(lines[i].strip()))
    return lines[start + 1:end]


def commands(block):
    """Shell lines of a block, continuation lines joined, comments and blanks dropped."""
    out, current = [], ""
    for line in block:
        line = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip():
            out.append(" ".join(current.split()))
        current = ""
    return out


def check_test_command(root, _args):
    block, _ = block_after(read(root, "README.md").split("\n"), "docs.test_command")
    if not block:
        return ["README.md: no block after the marker docs.test_command"], ""
    readme = commands(block)
    if len(readme) != 1:
        return [f"README.md: the test command block holds {len(readme)} commands, expected one"], ""
    ci = [" ".join(l.split()[2:]) for l in read(root, ".ci/run").split("\n") if l.startswith("step tests ")]
    if ci != readme:
        return [f"README.md's test command {readme[0]!r} is not what .ci/run runs ({ci})"], ""
    return [], f"`{readme[0]}` is .ci/run's tests step"


def check_sample_report(root, args):
    if not args.cutriage:
        return ["sample_report needs --cutriage BINARY"], ""
    lines = read(root, "README.md").split("\n")
    expected, at = block_after(lines, "docs.sample_report")
    if expected is None:
        return ["README.md: no text block after the marker docs.sample_report"], ""
    cmds = commands(block_before(lines, at))
    if len(cmds) != 1:
        return [f"README.md: the sample's command block holds {len(cmds)} commands, expected one"], ""
    argv = shlex.split(cmds[0])
    if os.path.basename(argv[0]) != "cutriage":
        return [f"README.md: the sample's command {cmds[0]!r} is not a cutriage command"], ""
    with tempfile.TemporaryDirectory(prefix="cutriage-docs-") as tmp:
        # Run where the README's relative paths resolve, writing its output file in the temporary
        # directory; the report prints the input paths as given.
        for name in os.listdir(root):
            if name in ("tests", "examples", "bench"):
                os.symlink(os.path.join(root, name), os.path.join(tmp, name))
        r = subprocess.run([args.cutriage] + argv[1:], cwd=tmp, capture_output=True, text=True,
                           env=dict(os.environ, CUTRIAGE_NVDISASM=os.path.join(tmp, "no-nvdisasm")))
    if r.returncode != 0:
        return [f"the sample's command exited {r.returncode}: {r.stderr.strip()}"], ""
    got = r.stdout.rstrip("\n").split("\n")
    if got != expected:
        diff = difflib.unified_diff(expected, got, "README.md sample", "cutriage today", lineterm="", n=1)
        return ["README.md's sample report is not what the command prints today "
                "(copy the output below into the README):"] + list(diff), ""
    return [], f"{len(got)} lines, as `{cmds[0][:60]}...` prints them"


CHECKS = {"links": check_links, "benchmarks_summary": check_benchmarks_summary,
          "test_command": check_test_command, "sample_report": check_sample_report}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=sorted(CHECKS) + ["all"])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--cutriage")
    args = parser.parse_args()
    failed = 0
    for name in sorted(CHECKS) if args.check == "all" else [args.check]:
        if name == "sample_report" and not args.cutriage and args.check == "all":
            continue
        if args.cutriage:
            args.cutriage = os.path.abspath(args.cutriage)
        problems, summary = CHECKS[name](os.path.abspath(args.root), args)
        for p in problems:
            print(p)
        print(f"{'FAIL' if problems else 'ok  '} docs.{name}" + (f": {summary}" if summary and not problems else ""))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
