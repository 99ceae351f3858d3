"""Every build command the docs show bounds its parallel jobs.

A reader copies `cmake --build build -j` and, on a small or shared machine,
gets as many compilers as there are files, and a machine that stops
answering. This reads the Markdown pages of the repository (README.md,
docs/, each README beside the code) and the scripts/, and fails, naming file
and line, on a `-j` or `--parallel` with no count after it: every example
says `-j"$(nproc)"` (or a number, or a variable the script sets).
"""

import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))

BOUNDED = re.compile(r"(-j|--parallel)\s*(\"?\$\(nproc\)\"?|\"?\$\{?\w+\}?\"?|\d+)")


def pages():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for f in out.decode().split("\0"):
        if "node_modules/" in f or not f:
            continue
        if f.endswith(".md") or f.startswith("scripts/"):
            yield f


def unbounded(line):
    """The job flags of LINE that carry no count."""
    found = []
    for m in re.finditer(r"(?<![\w-])(-j|--parallel)(?![\w-])", line):
        if not re.search(r"cmake --build|\bmake\b|\bninja\b|\bctest\b", line[:m.start()]):
            continue
        if not BOUNDED.match(line, m.start()):
            found.append(m.group(1))
    return found


def test_self():
    assert unbounded("cmake --build build -j") == ["-j"]
    assert unbounded("cmake -S . -B b && cmake --build b -j && sudo x") == ["-j"]
    assert unbounded("(cd build && ctest --output-on-failure -j)") == ["-j"]
    assert unbounded('cmake --build build -j"$(nproc)"') == []
    assert unbounded("cmake --build build -j2") == []
    assert unbounded('cmake --build "$build" -j"$jobs" --target x') == []
    assert unbounded("grep -j foo") == []


def main():
    test_self()
    bad = []
    for f in pages():
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                for flag in unbounded(line):
                    bad.append("%s:%d: %s with no count: %s" % (f, n, flag, line.strip()))
    for b in bad:
        print("FAIL " + b)
    if bad:
        print("%d build examples without a bound on their jobs; write -j\"$(nproc)\"" % len(bad))
        return 1
    print("every build example bounds its jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
