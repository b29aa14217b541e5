"""Tables for bench/always_on.sh from the agent files (`cutriage json` output) in one directory:
the budget each always-on run spent, when each family's diagnosis was complete, and the verdicts
always-on reached next to those of a deep (replayed) run of the same program.

    python3 bench/always_on_report.py DIR
"""
import glob
import json
import os
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    interned, families, kernels, notices, controls = {}, {}, {}, [], {}
    session, end = {}, {}
    for rec in doc.get("records", []):
        if "interned" in rec:
            interned[rec["interned"].get("id", "0")] = rec["interned"].get("value", "")
        elif "family" in rec:
            families[rec["family"].get("id", "0")] = rec["family"]
        elif "kernel" in rec:
            k = rec["kernel"]
            key = (k.get("functionNameIid"), k.get("launchIndex", "0"))
            if key not in kernels or int(k.get("revision", 0)) >= int(kernels[key].get("revision", 0)):
                kernels[key] = k
        elif "notice" in rec:
            notices.append(rec["notice"])
        elif "control" in rec:
            controls[rec["control"].get("id", "0")] = rec["control"]
        elif "session" in rec:
            session = rec["session"]
        elif "sessionEnd" in rec:
            end = rec["sessionEnd"]
    # The latest profiled verdict per function.
    verdicts = {}
    for (fn, idx), k in sorted(kernels.items(), key=lambda kv: int(kv[0][1])):
        if k.get("status") != "PROFILE_STATUS_PROFILED":
            continue
        name = interned.get(fn, "?")
        d = k.get("diagnosis", {})
        verdicts[name] = (d.get("classification", "").replace("CLASSIFICATION_", "").lower(),
                          d.get("primaryRuleId", ""), len(k.get("assembledLaunches", [])),
                          k.get("replayMode", ""))
    return {"session": session, "end": end, "verdicts": verdicts, "notices": notices,
            "controls": list(controls.values())}


def main():
    d = sys.argv[1]
    files = {os.path.basename(p)[:-5]: load(p) for p in sorted(glob.glob(os.path.join(d, "*.json")))}
    print("\n### Budget spent (always-on runs)\n")
    print("| file | budget | wall s | spent ms | spent % of wall | worst 60 s window | admitted | deferred | group switches |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, f in files.items():
        o = f["end"].get("overhead")
        if not o:
            continue
        wall = int(o.get("wallNs", 0)) / 1e9
        spent = int(o.get("spentNs", 0)) / 1e6
        win = int(o.get("maxWindowSpentNs", 0)) / 1e6
        print("| %s | %.2f%% | %.1f | %.1f | %.3f%% | %.1f ms | %s | %s | %s |" % (
            name, 100 * float(o.get("budgetFraction", 0)), wall, spent, 100 * spent / 1e3 / wall if wall else 0,
            win, o.get("admitted", 0), o.get("deferred", 0), o.get("groupSwitches", 0)))
    print("\n### When each family's diagnosis was complete (always_on_complete notices)\n")
    for name, f in files.items():
        done = [n["message"] for n in f["notices"] if n.get("code") == "always_on_complete"]
        if "-ao-long" in name or "-ao-fast" in name or "-ao-request" in name or name.startswith("torch-ao-1"):
            print("- %s: %d complete" % (name, len(done)))
            for m in done:
                print("  - " + m)
    print("\n### Verdicts: always-on vs deep (replay) on the same program\n")
    for ao, deep in (("svc-ao-long", "svc-deep"), ("svc-ao-fast", "svc-deep"), ("torch-ao-1", "torch-deep")):
        if ao not in files or deep not in files:
            continue
        print("%s vs %s:\n" % (ao, deep))
        print("| kernel | always-on | launches | deep | same |")
        print("|---|---|---|---|---|")
        for fn, (cls, rule, n, _) in sorted(files[ao]["verdicts"].items()):
            dv = files[deep]["verdicts"].get(fn)
            dtext = "%s (%s)" % dv[:2] if dv else "not profiled"
            same = "yes" if dv and dv[0] == cls and dv[1] == rule else ("class only" if dv and dv[0] == cls else "no")
            print("| %s | %s (%s) | %d | %s | %s |" % (fn[:60], cls, rule, n, dtext, same))
        print()
    for name, f in files.items():
        for c in f["controls"]:
            print("- %s: deep capture %s from %s: %s, %s launches, families %s %s" % (
                name, c.get("id"), c.get("source", ""), c.get("state", ""), c.get("profiledLaunches", 0),
                c.get("familyIds", []), c.get("detail", "")))


if __name__ == "__main__":
    main()
