#!/usr/bin/env python3
"""`cutriage trace` against Python's own JSON parser.

For every cutriage file given, runs `cutriage trace FILE -o OUT.json`, loads the output with the
json module (NaN and Infinity refused) and compares it with the file's records as `cutriage json`
prints them (libprotobuf's JSON mapping, an independent path): every kernel, copy and NVTX range
present with the right ts/dur (microseconds from the earliest event), pid/tid named after its
GPU/stream or OS thread, profiled launches marked, ranges of one thread nested, events of one
stream track never overlapping, and the shape Perfetto's tokenizer needs ("traceEvents" first,
"ph" and "ts" first in each event, no \\u escapes, no displayTimeUnit). A file without a trace
must fail with exit code 10 and one line, leaving no output file.

usage: test_trace_export.py --cutriage BIN [--make-synthetic BIN] [FILE.pb ...]
  --make-synthetic BIN  tests/cli/make_trace_file: writes the synthetic file of
                        tests/support/trace_fixture.h, checked in detail as well
  FILE.pb ...           more files, e.g. real agent output (tests/data/agent/*.pb); files without
                        a trace are checked for the error. $CUTRIAGE_TRACE_FILES (paths separated
                        by spaces) adds more.
"""
import argparse
import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile

failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")


def check(where, condition, message):
    if not condition:
        fail(where, message)
    return condition


def strict_load(path):
    def refuse(name):
        raise ValueError(f"non-finite number {name} in the JSON")
    with open(path, encoding="utf-8") as f:
        return json.load(f, parse_constant=refuse)


def u64(message, key):
    """proto3 JSON writes 64-bit integers as strings and leaves out zeros."""
    return int(message.get(key, 0))


class FileRecords:
    """What `cutriage json FILE` says the file holds."""

    def __init__(self, cutriage, path):
        run = subprocess.run([cutriage, "json", path], capture_output=True, text=True)
        if run.returncode not in (0, 4):
            raise RuntimeError(f"cutriage json exited {run.returncode}: {run.stderr.strip()}")
        records = json.loads(run.stdout).get("records", [])
        self.session = records[0].get("session", {}) if records else {}
        self.interned = {}
        self.families = {}
        self.kernels, self.copies, self.ranges = [], [], []
        self.profiles = []  # KernelProfile records, every revision
        for r in records:
            if "interned" in r:
                self.interned[u64(r["interned"], "id")] = r["interned"].get("value", "")
            elif "kernel" in r:
                self.profiles.append(r["kernel"])
            elif "family" in r:
                self.families[u64(r["family"], "id")] = r["family"]
            elif "trace" in r:
                self.kernels += r["trace"].get("kernels", [])
                self.copies += r["trace"].get("copies", [])
                self.ranges += r["trace"].get("nvtxRanges", [])
        starts = [u64(e, "startNs") for e in self.kernels + self.copies + self.ranges]
        self.origin = min(starts) if starts else 0

    def family_name(self, family_id):
        fam = self.families.get(family_id)
        if fam is not None:
            for key in ("displayNameIid", "mangledNameIid"):
                name = self.interned.get(u64(fam, key), "")
                if name:
                    return name
        return f"family {family_id}"

    def family_device(self, family_id):
        fam = self.families.get(family_id)
        return fam.get("device", 0) if fam is not None else None


def ns(us):
    """Microseconds with three decimals back to integer nanoseconds."""
    return round(us * 1000)


def check_shape(where, text, doc):
    check(where, re.match(r'\s*\{\s*"traceEvents"\s*:', text) is not None,
          '"traceEvents" must be the first key (Perfetto stops at top-level keys it does not know)')
    check(where, "displayTimeUnit" not in text, "displayTimeUnit present (Perfetto reads it as the unit of ts)")
    check(where, re.search(r"(?<!\\)(?:\\\\)*\\u", text) is None, "a \\u escape (Perfetto's tokenizer refuses them)")
    events = doc.get("traceEvents")
    if not check(where, isinstance(events, list) and events, "no traceEvents array"):
        return []
    for e in events:
        if not check(where, e.get("ph") in ("X", "M"), f"event of phase {e.get('ph')!r}: {e}"):
            continue
        check(where, isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), f"pid/tid not integers: {e}")
        check(where, 0 <= e.get("pid", -1) < 2**31 and 0 <= e.get("tid", -1) < 2**31, f"pid/tid out of range: {e}")
        if e["ph"] == "X":
            check(where, list(e.keys())[:2] == ["ph", "ts"], f'"ph" and "ts" must come first: {list(e.keys())}')
            for key in ("ts", "dur"):
                v = e.get(key)
                check(where, isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, f"bad {key}: {e}")
            check(where, isinstance(e.get("name"), str) and isinstance(e.get("args"), dict), f"name/args: {e}")
    return events


def index_metadata(where, events):
    processes, threads = {}, {}
    for e in events:
        if e["ph"] != "M":
            continue
        if e.get("name") == "process_name":
            check(where, e["pid"] not in processes, f"process {e['pid']} named twice")
            processes[e["pid"]] = e["args"]["name"]
        elif e.get("name") == "thread_name":
            check(where, (e["pid"], e["tid"]) not in threads, f"thread {e['pid']}/{e['tid']} named twice")
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    return processes, threads


def check_tracks(where, events, processes):
    """NVTX ranges of one thread nest; kernels and copies of one stream track never overlap."""
    tracks = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    for (pid, tid), spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        gpu = processes.get(pid, "").startswith("GPU")
        stack = []
        for start, end, name in spans:
            if gpu:
                if stack:
                    check(where, start >= stack[-1][1],
                          f"GPU track {pid}/{tid}: {name} overlaps {stack[-1][2]} (must go to another thread)")
                stack = [(start, end, name)]
                continue
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack:
                check(where, end <= stack[-1][1],
                      f"track {pid}/{tid}: {name} [{start}, {end}) crosses {stack[-1][2]} (ends {stack[-1][1]})")
            stack.append((start, end, name))


def check_events(where, recs, events, processes, threads):
    def stream_of(pid, tid):
        m = re.match(r"stream (\d+)", threads.get((pid, tid), ""))
        return int(m.group(1)) if m else None

    def device_of(pid):
        m = re.match(r"GPU (\d+)", processes.get(pid, ""))
        return int(m.group(1)) if m else None

    for (pid, tid), name in threads.items():
        if re.fullmatch(r"stream \d+", name):
            check(where, tid == int(name.split()[1]), f"thread {name!r} has tid {tid}")
        if re.fullmatch(r"thread \d+", name):
            check(where, tid == int(name.split()[1]), f"thread {name!r} has tid {tid}")

    want = collections.Counter()
    for k in recs.kernels:
        fam = u64(k, "familyId")
        replayed = bool(k.get("replayed", False))
        want[(recs.family_name(fam), recs.family_device(fam), k.get("streamId", 0), u64(k, "startNs") - recs.origin,
              max(0, u64(k, "endNs") - u64(k, "startNs")), replayed, u64(k, "correlationId"))] += 1
    got = collections.Counter()
    for e in events:
        if e["ph"] != "X" or e.get("cat") not in ("kernel", "profiled") or e["args"].get("placed"):
            continue
        a = e["args"]
        check(where, (e["cat"] == "profiled") == (a.get("replayed") is True),
              f"category {e['cat']} but replayed={a.get('replayed')}: {e}")
        got[(e["name"], device_of(e["pid"]), stream_of(e["pid"], e["tid"]), ns(e["ts"]), ns(e["dur"]),
             a.get("replayed"), a.get("correlation_id"))] += 1
    check(where, got == want, f"kernel events differ: missing {list((want - got).items())[:3]}, "
                              f"unexpected {list((got - want).items())[:3]}")

    want = collections.Counter()
    for c in recs.copies:
        want[(c.get("device", 0), c.get("streamId", 0), u64(c, "startNs") - recs.origin,
              max(0, u64(c, "endNs") - u64(c, "startNs")), u64(c, "bytes"), bool(c.get("pageable", False)))] += 1
    got = collections.Counter()
    for e in events:
        if e["ph"] == "X" and e.get("cat") in ("copy", "memset"):
            a = e["args"]
            got[(device_of(e["pid"]), stream_of(e["pid"], e["tid"]), ns(e["ts"]), ns(e["dur"]), a.get("bytes"),
                 a.get("pageable"))] += 1
    check(where, got == want, f"copy events differ: missing {list((want - got).items())[:3]}, "
                              f"unexpected {list((got - want).items())[:3]}")

    want = collections.Counter()
    for r in recs.ranges:
        want[(recs.interned.get(u64(r, "nameIid"), ""), r.get("threadId", 0), u64(r, "startNs") - recs.origin,
              max(0, u64(r, "endNs") - u64(r, "startNs")))] += 1
    got = collections.Counter()
    for e in events:
        if e["ph"] == "X" and e.get("cat") == "nvtx":
            check(where, processes.get(e["pid"]) == "CPU", f"NVTX range outside the CPU process: {e}")
            m = re.match(r"thread (\d+)", threads.get((e["pid"], e["tid"]), ""))
            got[(e["name"], int(m.group(1)) if m else None, ns(e["ts"]), ns(e["dur"]))] += 1
    check(where, got == want, f"NVTX events differ: missing {list((want - got).items())[:3]}, "
                              f"unexpected {list((got - want).items())[:3]}")

    gpus = {g.get("device", 0): g.get("name", "") for g in recs.session.get("gpus", [])}
    for pid, name in processes.items():
        m = re.match(r"GPU (\d+)", name)
        if m and int(m.group(1)) in gpus and gpus[int(m.group(1))]:
            check(where, name == f"GPU {m.group(1)} \u2014 {gpus[int(m.group(1))]}", f"process name {name!r}")
    # Every profiled launch is drawn, category "profiled": from its execution when the trace holds
    # one, else placed from its KernelProfile record (agents before 2026-12-01 dropped the
    # execution) in the gap between its stream's launches before and after it. Before, such
    # launches were missing and their replay's time read as idle.
    traced = {u64(k, "correlationId") for k in recs.kernels}  # unique in the process
    want_placed = set()
    for k in recs.profiles:
        if (k.get("status") != "PROFILE_STATUS_PROFILED" or "graphScope" in k or
                k.get("replayMode") == "REPLAY_MODE_NONE" or u64(k, "correlationId") == 0):
            continue
        key = (int(k.get("contextId", 0)), u64(k, "correlationId"))
        if key[1] not in traced:
            want_placed.add(key)
    placed = collections.Counter()
    for e in events:
        if e["ph"] == "X" and e["args"].get("placed"):
            check(where, e.get("cat") == "profiled" and e["args"].get("replayed") is True, f"placed launch: {e}")
            placed[(e["args"].get("context"), e["args"].get("correlation_id"))] += 1
    check(where, set(placed) == want_placed and all(n == 1 for n in placed.values()),
          f"profiled launches without an execution: want {sorted(want_placed)[:5]}, "
          f"drawn {sorted(placed.items())[:5]}")
    x_events = sum(1 for e in events if e["ph"] == "X" and not e["args"].get("placed") and e.get("cat") != "graph")
    check(where, x_events == len(recs.kernels) + len(recs.copies) + len(recs.ranges),
          f"{x_events} events for {len(recs.kernels)} kernels, {len(recs.copies)} copies, {len(recs.ranges)} ranges")

    # Each CUDA graph launch is one "graph" slice on its graph's track, spanning its nodes.
    launches = {}
    for kind, items in (("kernels", recs.kernels), ("copies", recs.copies)):
        for x in items:
            g = int(x.get("graphId", 0))
            if g == 0:
                continue
            dev = recs.family_device(u64(x, "familyId")) if kind == "kernels" else int(x.get("device", 0))
            span = launches.setdefault((dev, g, u64(x, "correlationId")), {"start": None, "end": 0, "kernels": 0, "copies": 0})
            start, end = u64(x, "startNs") - recs.origin, u64(x, "endNs") - recs.origin
            span["start"] = start if span["start"] is None else min(span["start"], start)
            span["end"] = max(span["end"], end)
            span[kind] += 1
    drawn = {}
    for e in events:
        if e["ph"] != "X" or e.get("cat") != "graph":
            continue
        a = e["args"]
        check(where, threads.get((e["pid"], e["tid"]), "").startswith(f"CUDA graph {a['graph_id']} (its launches)"),
              f"graph slice on thread {threads.get((e['pid'], e['tid']))!r}: {e}")
        drawn[(device_of(e["pid"]), a["graph_id"], a["correlation_id"])] = (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]),
                                                                             a["kernels"], a["copies"])
    check(where, set(drawn) == set(launches), f"graph launches drawn {sorted(drawn)[:5]}, want {sorted(launches)[:5]}")
    for key, want in launches.items():
        if key in drawn:
            check(where, drawn[key] == (want["start"], want["end"], want["kernels"], want["copies"]),
                  f"graph launch {key}: drawn {drawn[key]}, want {want}")


def check_synthetic(where, recs, doc, events, processes, threads):
    """The synthetic file of tests/support/trace_fixture.h, whose contents are known."""
    names = set(processes.values())
    check(where, {"CPU", "GPU 0 \u2014 NVIDIA H200", "GPU 1 \u2014 NVIDIA H200"} <= names, f"processes {names}")
    by_name = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_name[e["name"]].append(e)

    def thread(e):
        return threads.get((e["pid"], e["tid"]))

    def one(name):
        found = by_name.get(name, [])
        check(where, len(found) == 1, f"{len(found)} events named {name!r}")
        return found[0] if found else None

    train, step, forward, io = one("train"), one("step"), one("forward"), one("io")
    if train and step and forward and io:
        for child, parent in ((forward, step), (step, train)):
            check(where, (child["pid"], child["tid"]) == (parent["pid"], parent["tid"]),
                  f"{child['name']} not on {parent['name']}'s thread")
            check(where, ns(child["ts"]) >= ns(parent["ts"]) and
                  ns(child["ts"]) + ns(child["dur"]) <= ns(parent["ts"]) + ns(parent["dur"]),
                  f"{child['name']} not within {parent['name']}")
        check(where, thread(train) == "thread 4242" and train["tid"] == 4242, f"train on {thread(train)!r}")
        check(where, thread(io) == "thread 4242 (overlapping 2)", f"io (crosses step) on {thread(io)!r}")
        check(where, io["args"].get("domain") == "loader", f"io's domain: {io['args']}")
        check(where, train["ts"] == 0 and ns(train["dur"]) == 2_000_000, f"train: ts {train['ts']} dur {train['dur']}")
    check(where, one("pr\u00e9fetch \u2713") is not None, "non-ASCII NVTX name")
    reduce = sorted(by_name.get("reduce", []), key=lambda e: e["ts"])
    if check(where, len(reduce) == 2, "two reduce launches"):
        check(where, isinstance(reduce[0]["ts"], float) and ns(reduce[0]["ts"]) == 10_000 and
              ns(reduce[0]["dur"]) == 5_000, f"earliest kernel at ts {reduce[0]['ts']}, dur {reduce[0]['dur']}")
        check(where, thread(reduce[0]) == "stream 13" and processes[reduce[0]["pid"]].startswith("GPU 0"),
              f"reduce on {processes.get(reduce[0]['pid'])}/{thread(reduce[0])}")
    gemm = [e for e in by_name.get("gemm<128>", [])]
    profiled = [e for e in gemm if e["cat"] == "profiled"]
    if check(where, len(gemm) == 5 and len(profiled) == 1, f"{len(gemm)} gemm events, {len(profiled)} profiled"):
        p = profiled[0]
        check(where, p["args"]["correlation_id"] == 102 and p["args"]["replayed"] is True, f"profiled: {p['args']}")
        check(where, p["args"]["grid"] == "264x1x1" and p["args"]["block"] == "256x1x1", f"grid/block: {p['args']}")
    nvtx_gemm = [e for e in gemm if e["args"].get("nvtx") == "train/step/forward"]
    check(where, len(nvtx_gemm) == 2, f"{len(nvtx_gemm)} gemm launches carry their NVTX path")
    graph = sorted(by_name.get('elementwise<"q\\x">', []), key=lambda e: e["args"]["graph_node_id"])
    if check(where, len(graph) == 2, 'two graph kernels named elementwise<"q\\x"> (escaping)'):
        check(where, thread(graph[0]) == "stream 7" and thread(graph[1]) == "stream 7 (concurrent 2)",
              f"concurrent graph nodes on {thread(graph[0])!r} and {thread(graph[1])!r}")
        check(where, graph[0]["args"]["graph_id"] == 3, f"graph args: {graph[0]['args']}")
    long_name = [e for e in events if e.get("name", "").startswith("very_long_kernel_name")]
    if check(where, len(long_name) == 1, "the long-named kernel"):
        check(where, processes[long_name[0]["pid"]].startswith("GPU 1") and thread(long_name[0]) == "stream 7",
              "device 1's stream 7 is its own track")
    copy = by_name.get("memcpy HtoD", [])
    if check(where, len(copy) == 1, "one HtoD copy"):
        a = copy[0]["args"]
        check(where, a["bytes"] == 1 << 20 and a["pageable"] is True and a["kind"] == "host to device", f"copy {a}")
        check(where, thread(copy[0]) == "stream 14", f"copy on {thread(copy[0])!r}")
    other = doc.get("otherData", {})
    start = int(recs.session.get("startTimeUnixNs", 0))
    check(where, other.get("time_origin_unix_ns") == start + 1000, f"otherData {other}")


def largest_gpu_gap_ms(events, processes):
    """The longest time a GPU ran nothing (no kernel, profiled launch, copy), in milliseconds."""
    spans = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X" and processes.get(e["pid"], "").startswith("GPU"):
            spans[e["pid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    best = 0
    for s in spans.values():
        s.sort()
        end = s[0][1]
        for start, stop in s[1:]:
            best = max(best, start - end)
            end = max(end, stop)
    return best / 1e6


# Files whose profiled launches the trace holds no execution of, and the largest idle gap on the
# GPU once they are placed: in tests/data/trace/zoo_vector_add.pb two profiled launches left
# 919 ms that read as idle; what is left is the 251 ms between the last launch and the copy.
GAPS_MS = {"zoo_vector_add.pb": 300, "trace_timeline.pb": 50, "zoo_fma_chain.pb": 50, "zoo_tiny_kernels.pb": 50}


def export(cutriage, path, out_dir, synthetic):
    where = os.path.basename(path)
    out = os.path.join(out_dir, where + ".trace.json")
    run = subprocess.run([cutriage, "trace", path, "-o", out], capture_output=True, text=True)
    if run.returncode == 10:
        check(where, not synthetic, "the synthetic file has a trace, yet exit 10")
        check(where, "without tracing" in run.stderr and run.stderr.count("\n") == 1,
              f"the no-trace error is not one clear line: {run.stderr!r}")
        check(where, not os.path.exists(out), "an output file was left behind")
        print(f"ok   {where}: no trace, exit 10")
        return
    if not check(where, run.returncode in (0, 4), f"cutriage trace exited {run.returncode}: {run.stderr.strip()}"):
        return
    with open(out, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = strict_load(out)
    except ValueError as e:
        fail(where, f"not valid JSON: {e}")
        return
    before = len(failures)
    events = check_shape(where, text, doc)
    processes, threads = index_metadata(where, events)
    for e in events:
        if e["ph"] == "X":
            check(where, e["pid"] in processes and (e["pid"], e["tid"]) in threads,
                  f"event on an unnamed process/thread: {e}")
    recs = FileRecords(cutriage, path)
    check_events(where, recs, events, processes, threads)
    check_tracks(where, events, processes)
    if synthetic:
        check_synthetic(where, recs, doc, events, processes, threads)
    if where in GAPS_MS and os.path.basename(os.path.dirname(os.path.abspath(path))) == "trace":
        gap = largest_gpu_gap_ms(events, processes)
        check(where, gap < GAPS_MS[where], f"the GPU reads as idle for {gap:.1f} ms (at most {GAPS_MS[where]})")
        check(where, any(e.get("cat") == "profiled" for e in events), "no event of category profiled")
    n = sum(1 for e in events if e["ph"] == "X")
    print(f"{'ok  ' if len(failures) == before else 'FAIL'} {where}: {n} events")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cutriage", required=True)
    parser.add_argument("--make-synthetic")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = list(args.files) + os.environ.get("CUTRIAGE_TRACE_FILES", "").split()
    with tempfile.TemporaryDirectory() as tmp:
        if args.make_synthetic:
            for variant, extra in (("synthetic.pb", []), ("synthetic-no-summary.pb", ["--no-summary"])):
                path = os.path.join(tmp, variant)
                subprocess.run([args.make_synthetic, path] + extra, check=True)
                export(args.cutriage, path, tmp, synthetic=True)
        for path in files:
            export(args.cutriage, path, tmp, synthetic=False)
    for f in failures:
        print("FAIL", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
