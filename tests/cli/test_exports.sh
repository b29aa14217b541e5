#!/usr/bin/env bash
# `cutriage report --format json|csv` (docs/exports.md) on committed H200 files, read back with
# Python's json and csv modules; and the reader example of docs/exports.md run on a committed file,
# whole and torn.
# usage: test_exports.sh CUTRIAGE_BINARY DATA_DIR DOCS_EXPORTS_MD
set -u
bin=$1
data=$2
doc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }

python3 - "$bin" "$data" "$doc" "$tmp" <<'PY'
import csv, io, json, re, subprocess, sys
bin, data, doc, tmp = sys.argv[1:5]
failures = []

def check(cond, what):
    if not cond:
        failures.append(what)
    return cond

def run(*args, ok=(0,)):
    r = subprocess.run([bin, *args], capture_output=True)
    check(r.returncode in ok, f"{' '.join(args)}: exit {r.returncode}: {r.stderr.decode()[:200]}")
    return r

KERNEL_COLUMNS = ["launch_index", "function", "demangled", "mangled", "device", "grid_x", "grid_y", "grid_z",
                  "block_x", "block_y", "block_z", "duration_ns", "unprofiled_duration_ns", "time_share",
                  "classification", "primary_limiter", "primary_rule", "headline", "next_action",
                  "estimated_speedup", "trust", "library"]
FAMILY_COLUMNS = ["family_id", "name", "device", "launches", "replayed_launches", "total_ns", "mean_ns",
                  "time_share", "verdict", "primary_limiter", "next_action", "not_profiled_reason"]
NUMBERS = {"launch_index", "device", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "duration_ns",
           "unprofiled_duration_ns", "time_share", "estimated_speedup", "family_id", "launches",
           "replayed_launches", "total_ns", "mean_ns"}

def load_jsonl(text):
    rows = []
    for line in text.splitlines():
        rows.append(json.loads(line, parse_constant=lambda c: failures.append(f"non-finite {c}")))
    return rows

# Kernel rows: torch_loop (agent-split) has 8 profiled kernels in 13 launches, rewritten records
# (revision 1); adaptive collection combined 5 of the launches into a later one's record
# (combinedLaunchIndices). One row per kernel as the text report counts them, not per launch.
f = f"{data}/agent-split/torch_loop.pb"
rows = load_jsonl(run("report", f, "--format", "json").stdout.decode())
records = json.loads(run("json", f).stdout)["records"]
launches = {}
for r in records:
    k = r.get("kernel")
    if k is not None:
        key = int(k.get("launchIndex", 0))
        if key not in launches or k.get("revision", 0) >= launches[key].get("revision", 0):
            launches[key] = k
combined = {int(i) for k in launches.values() for i in k.get("combinedLaunchIndices", [])}
kernels = set(launches) - combined
check(len(rows) == len(kernels) == 8 and len(launches) == 13,
      f"{len(rows)} kernel rows for {len(kernels)} kernels in {len(launches)} launches")
check({row["launch_index"] for row in rows} == kernels, "the rows are not the kernels' latest launches")
text = run("report", f).stdout.decode()
check(f"\n{len(rows)} profiled kernels, longest first" in text, "the text report counts other kernels")
for row in rows:
    check(list(row.keys()) == KERNEL_COLUMNS, f"kernel columns {list(row.keys())}")
    for c in NUMBERS & set(row):
        check(row[c] is None or isinstance(row[c], (int, float)) and not isinstance(row[c], bool),
              f"{c} is not a number: {row[c]!r}")
    check(isinstance(row["grid_x"], int) and row["grid_x"] > 0, f"grid {row['grid_x']!r}")
    check(row["classification"] != "" and row["classification"] == row["classification"].lower(),
          f"classification {row['classification']!r}")
    check(row["function"] != "" and not row["mangled"].startswith("\"") , f"names {row['function']!r}")
# (Diagnosis.library came after these files: the column is there, empty.)
check(all(isinstance(r["library"], str) for r in rows), "library is text")
csv_text = run("report", f, "--format", "csv").stdout.decode()
check(csv_text.endswith("\r\n"), "CSV lines end in CRLF")
table = list(csv.reader(io.StringIO(csv_text, newline="")))
check(table[0] == KERNEL_COLUMNS, f"CSV header {table[0]}")
check(len(table) == len(rows) + 1, f"{len(table) - 1} CSV rows for {len(rows)} JSON rows")
for j, c in zip(table[1:], rows):
    check(j[KERNEL_COLUMNS.index("demangled")] == c["demangled"], "CSV and JSON disagree on a name")
    check(float(j[KERNEL_COLUMNS.index("duration_ns")]) == c["duration_ns"], "CSV and JSON disagree on a duration")

# Family rows: the trace summary's families, largest GPU time first.
fam = load_jsonl(run("report", f, "--format", "json", "--rows", "families").stdout.decode())
check(len(fam) >= len(rows), f"{len(fam)} family rows")
for row in fam:
    check(list(row.keys()) == FAMILY_COLUMNS, f"family columns {list(row.keys())}")
    check(bool(row["verdict"]) != bool(row["not_profiled_reason"]), f"verdict xor reason: {row}")
check([r["total_ns"] for r in fam] == sorted((r["total_ns"] for r in fam), reverse=True), "families by time")
check(abs(sum(r["time_share"] for r in fam) - 1) < 1e-6, "family shares sum to 1")
ftable = list(csv.reader(io.StringIO(run("report", f, "--format", "csv", "--rows", "families").stdout.decode(), newline="")))
check(ftable[0] == FAMILY_COLUMNS and len(ftable) == len(fam) + 1, "family CSV")

# Errors name the flag and the accepted values; a file without a trace has no families.
r = run("report", f, "--format", "xml", ok=(1,))
check(b"--format accepts text, json or csv, not 'xml'" in r.stderr, f"--format error: {r.stderr!r}")
r = run("report", f, "--format", "csv", "--rows", "lines", ok=(1,))
check(b"--rows accepts kernels, families or ranks, not 'lines'" in r.stderr, f"--rows error: {r.stderr!r}")
r = run("report", f"{data}/agent/zoo_vector_add.pb", "--format", "csv", "--rows", "families", ok=(10,))
check(b"no trace" in r.stderr, f"no-trace error: {r.stderr!r}")
check(run("report", f"{data}/agent/zoo_vector_add.pb", "--format", "text").stdout.startswith(
      run("report", f"{data}/agent/zoo_vector_add.pb").stdout[:40]), "--format text is the report")

# The reader example of docs/exports.md, whole and torn.
text = open(doc, encoding="utf-8").read()
m = re.search(r"<!-- reader example[^>]*-->\s*```python\n(.*?)```", text, re.S)
if check(m is not None, "no reader example in docs/exports.md"):
    example = f"{tmp}/reader.py"
    open(example, "w").write(m.group(1))
    src = f"{data}/agent/zoo_vector_add.pb"
    out = subprocess.run([sys.executable, example, src], capture_output=True, text=True)
    kinds = {}
    for r in json.loads(run("json", src).stdout)["records"]:
        kind = next(iter(r))
        kinds[kind] = kinds.get(kind, 0) + 1
    want = sum(kinds.values())
    check(out.returncode == 0 and out.stdout.startswith(f"{want} records:"), f"reader: {out.stdout!r} {out.stderr!r}, want {want}")
    check(f"kernel {kinds.get('kernel')}" in out.stdout and "torn" not in out.stdout, f"reader kinds: {out.stdout!r}")
    whole = open(src, "rb").read()
    open(f"{tmp}/torn.pb", "wb").write(whole[:len(whole) - 7])
    out = subprocess.run([sys.executable, example, f"{tmp}/torn.pb"], capture_output=True, text=True)
    check(out.returncode == 0 and out.stdout.startswith(f"{want - 1} records:") and "torn tail" in out.stdout,
          f"reader on a torn file: {out.stdout!r} {out.stderr!r}")

for f in failures:
    print("FAIL", f)
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
PY
