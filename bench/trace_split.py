#!/usr/bin/env python3
"""What the kernel trace costs a program, measured inside one run.

The program runs always-on with a duty-cycled trace (CUTRIAGE_TRACE_DUTY below 100%),
CUTRIAGE_SELECT=none (nothing profiled) and CUTRIAGE_LOG_LEVEL=debug, and prints its throughput
in short windows ("window <CLOCK_MONOTONIC ns> <units>": examples/service with SERVICE_WINDOW_MS,
bench/torch_loop.py with TORCH_LOOP_WINDOW_MS). The agent's debug lines say when it paused and
resumed the trace, on the same clock. Windows wholly inside a traced stretch are compared with
windows wholly inside a paused stretch of the same cycle: the same process, the same GPU, the
same minute, so what differs between processes (placement, clocks, the machine's drift) drops out.

    python3 bench/trace_split.py OUTPUT_TEXT [--margin-ms 200] [--skip-s 10]

Prints, per cycle (a paused stretch and the traced one after it), both rates and the loss while
traced; then the median over cycles and the pooled rates. --margin-ms drops windows that start
within that long after a switch (kernels queued before it still run as they were launched);
--skip-s drops the first seconds of the run (start-up).
"""
import argparse
import re
import statistics
import sys

WINDOW = re.compile(r"^window (\d+) (\d+)\s*$")
SWITCH = re.compile(r"kernel trace (paused|resumed) at monotonic (\d+)")


def parse(lines):
    windows = []  # (start ns, end ns, units)
    switches = []  # (ns, traced after it)
    last_end = None
    for line in lines:
        m = WINDOW.match(line)
        if m:
            end, units = int(m.group(1)), int(m.group(2))
            if last_end is not None:
                windows.append((last_end, end, units))
            last_end = end
            continue
        m = SWITCH.search(line)
        if m:
            switches.append((int(m.group(2)), m.group(1) == "resumed"))
    switches.sort()
    return windows, switches


def split(windows, switches, margin_ns, skip_ns):
    """Per cycle: ([traced windows], [paused windows]). A cycle starts at a pause and runs to the
    next pause; the trace is on before the first pause."""
    if not windows or not switches:
        return []
    t0 = windows[0][0]
    pauses = [t for t, traced in switches if not traced]
    cycles = []
    for i, p in enumerate(pauses):
        end = pauses[i + 1] if i + 1 < len(pauses) else float("inf")
        resumes = [t for t, traced in switches if traced and p < t < end]
        resume = resumes[0] if resumes else None
        traced, paused = [], []
        for w in windows:
            start, stop, _ = w
            if start < t0 + skip_ns or start < p + margin_ns or stop > end:
                continue
            if resume is None or stop <= resume:
                paused.append(w)
            elif start >= resume + margin_ns:
                traced.append(w)
        if traced and paused:
            cycles.append((traced, paused))
    return cycles


def rate(ws):
    units = sum(w[2] for w in ws)
    seconds = sum(w[1] - w[0] for w in ws) / 1e9
    return units / seconds if seconds > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("text")
    ap.add_argument("--margin-ms", type=float, default=200.0)
    ap.add_argument("--skip-s", type=float, default=10.0)
    args = ap.parse_args()
    with open(args.text, errors="replace") as f:
        windows, switches = parse(f)
    if not windows:
        sys.exit("no window lines: set SERVICE_WINDOW_MS or TORCH_LOOP_WINDOW_MS")
    if not any(not traced for _, traced in switches):
        sys.exit("no pause lines: run with CUTRIAGE_TRACE_DUTY below 100% and CUTRIAGE_LOG_LEVEL=debug")
    cycles = split(windows, switches, args.margin_ms * 1e6, args.skip_s * 1e9)
    if not cycles:
        sys.exit("no cycle has both a paused and a traced window: run longer or use longer periods")
    losses = []
    for i, (traced, paused) in enumerate(cycles):
        r_on, r_off = rate(traced), rate(paused)
        loss = (r_off - r_on) / r_off * 100
        losses.append(loss)
        print("cycle %2d: paused %.1f/s (%d windows), traced %.1f/s (%d windows), loss while traced %+.2f%%"
              % (i, r_off, len(paused), r_on, len(traced), loss))
    on = rate([w for c in cycles for w in c[0]])
    off = rate([w for c in cycles for w in c[1]])
    print("cycles %d: median loss while traced %+.2f%% (min %+.2f%%, max %+.2f%%); pooled: paused %.1f/s, "
          "traced %.1f/s, %+.2f%%" % (len(cycles), statistics.median(losses), min(losses), max(losses), off, on,
                                     (off - on) / off * 100))


if __name__ == "__main__":
    main()
