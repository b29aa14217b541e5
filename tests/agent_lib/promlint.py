#!/usr/bin/env python3
"""The lint rules of `promtool check metrics` (Prometheus' promlint), applied to a .prom file.

promtool itself runs in agent.promtool where it is installed (Debian prometheus) and that test is
skipped where it is not; this applies the rules it applies without it, written from
prometheus/client_golang's testutil/promlint and the text format's parser:

  parse      every line is a comment, "# HELP name text", "# TYPE name type" or a sample
             `name{label="value",...} number`; a metric's HELP and TYPE come at most once each and
             before its samples; a metric's samples are contiguous (a family is not reopened)
  help       every metric has HELP text                          ("no help text")
  camelCase  metric and label names match no [a-z][A-Z]         ("should be written in 'snake_case'")
  reserved   metric names hold no ':'                            (recording rules' separator)
  counter    counters end in _total; nothing else does           ("counter metrics should have "_total"")
  reserved suffixes  _bucket/_count/_sum only on histograms and summaries; label le only on
             histograms, quantile only on summaries
  type in name  no _counter/_gauge/_histogram/_summary/_untyped token in a name
  units      base units only: no prefixed unit (milliseconds, kilobytes, ...) and no abbreviation
             (ms, sec, kb, ...) as a name token
  duplicates no two samples with the same name and label set      ("duplicate metric")

usage: promlint.py FILE.prom [--expect-only-camelcase LABEL]
  exits 0 when FILE passes; 1 with one line per problem. With --expect-only-camelcase LABEL the
  file must fail on exactly one rule: LABEL is a camelCase label name (what the old files did).
"""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE = re.compile(r"^(" + NAME + r")(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$")
LABEL_PAIR = re.compile(r"\s*(" + LABEL + r')\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
CAMEL = re.compile(r"[a-z][A-Z]")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
BASE_UNITS = {"amperes", "bytes", "celsius", "grams", "joules", "kelvin", "meters", "metres", "seconds", "volts"}
PREFIXES = ["pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi", "mega", "mebi",
            "giga", "gibi", "tera", "tebi", "peta", "pebi"]
ABBREVIATIONS = {"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d"}


def parse_labels(text, where, problems):
    labels, pos = [], 0
    while pos < len(text):
        m = LABEL_PAIR.match(text, pos)
        if not m:
            problems.append(f"{where}: cannot parse the labels {text[pos:]!r}")
            return labels
        labels.append((m.group(1), m.group(2)))
        pos = m.end()
    return labels


def family_of(name, types):
    """The family a sample belongs to: histograms and summaries add suffixes to their name."""
    for suffix in ("_bucket", "_count", "_sum"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return name


def lint(text):
    problems = []
    helps, types, order, closed, seen = {}, {}, [], set(), set()
    current = None
    samples = {}
    for n, line in enumerate(text.split("\n"), 1):
        where = f"line {n}"
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if name in closed or (name in samples and current != name):
                    problems.append(f"{where}: {parts[1]} of {name} after its samples")
                book = helps if parts[1] == "HELP" else types
                if name in book:
                    problems.append(f"{where}: second {parts[1]} line for {name}")
                value = parts[3] if len(parts) > 3 else ""
                if parts[1] == "TYPE" and value not in TYPES:
                    problems.append(f"{where}: unknown type {value!r} of {name}")
                book[name] = value
                if current != name and current is not None:
                    closed.add(current)
                current = name
                if name not in order:
                    order.append(name)
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append(f"{where}: not a sample line: {line[:80]!r}")
            continue
        name, _, label_text, value, _ = m.groups()
        try:
            float(value)
        except ValueError:
            problems.append(f"{where}: value {value!r} is not a number")
        family = family_of(name, types)
        if family in closed:
            problems.append(f"{where}: {family}'s samples are not contiguous")
        if current != family:
            if current is not None:
                closed.add(current)
            current = family
            if family not in order:
                order.append(family)
        labels = parse_labels(label_text or "", where, problems)
        names = [k for k, _ in labels]
        if len(set(names)) != len(names):
            problems.append(f"{where}: a label repeated in {name}")
        key = (name, tuple(sorted(labels)))
        if key in seen:
            problems.append(f"{family}: duplicate metric {name}{{{label_text or ''}}}")
        seen.add(key)
        samples.setdefault(family, []).append((name, names))

    for family in order:
        kind = types.get(family, "untyped")
        if not helps.get(family, "").strip():
            problems.append(f"{family}: no help text")
        if CAMEL.search(family):
            problems.append(f"{family}: metric names should be written in 'snake_case' not 'camelCase'")
        if ":" in family:
            problems.append(f"{family}: metric names should not contain ':'")
        if kind == "counter" and not family.endswith("_total"):
            problems.append(f'{family}: counter metrics should have "_total" suffix')
        if kind != "counter" and family.endswith("_total"):
            problems.append(f'{family}: non-counter metrics should not have "_total" suffix')
        if kind not in ("histogram", "summary"):
            for suffix in ("_bucket", "_count", "_sum"):
                if family.endswith(suffix):
                    problems.append(f'{family}: non-histogram and non-summary metrics should not have "{suffix}" suffix')
        tokens = family.split("_")
        for t in TYPES:
            if t in tokens[1:]:
                problems.append(f"{family}: metric name should not include type '{t}'")
        for t in tokens:
            if t in ABBREVIATIONS:
                problems.append(f"{family}: metric names should not contain abbreviated units ({t})")
            for p in PREFIXES:
                if t.startswith(p) and t[len(p):] in BASE_UNITS:
                    problems.append(f"{family}: use base unit {t[len(p):]!r} instead of {t!r}")
        camel_labels = sorted({l for _, names in samples.get(family, []) for l in names if CAMEL.search(l)})
        for l in camel_labels:
            problems.append(f"{family}: label names should be written in 'snake_case' not 'camelCase' ({l})")
        for _, names in samples.get(family, []):
            if "le" in names and kind != "histogram":
                problems.append(f'{family}: non-histogram metrics should not have "le" label')
            if "quantile" in names and kind != "summary":
                problems.append(f'{family}: non-summary metrics should not have "quantile" label')
    return problems


def main():
    args = sys.argv[1:]
    expect = None
    if len(args) == 3 and args[1] == "--expect-only-camelcase":
        expect = args[2]
    elif len(args) != 1:
        print(__doc__)
        return 2
    with open(args[0], encoding="utf-8") as f:
        problems = lint(f.read())
    if expect is None:
        for p in problems:
            print(f"{args[0]}: {p}")
        print(f"{'FAIL' if problems else 'ok  '} {args[0]}: {len(problems)} problems")
        return 1 if problems else 0
    # Every problem is the camelCase label, and there is one.
    wrong = [p for p in problems if not p.endswith(f"not 'camelCase' ({expect})")]
    for p in wrong:
        print(f"{args[0]}: unexpected: {p}")
    if not problems:
        print(f"{args[0]}: expected the camelCase label {expect} to be reported, nothing was")
        return 1
    print(f"{'FAIL' if wrong else 'ok  '} {args[0]}: {len(problems)} problems, all the camelCase label {expect}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
