"""What the GPU check scripts (tests/gpu/check_*.sh) share: one "ok" or "FAIL" line per check, and
an exit status of 1 when any failed. They run from the repository root:

    sys.path.insert(0, "tests/gpu")
    from checks import check, finish
"""
import sys

failed = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failed.append(what)


def finish():
    sys.exit(1 if failed else 0)
