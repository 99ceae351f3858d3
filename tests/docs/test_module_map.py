#!/usr/bin/env python3
"""docs/core.md's module map names every source file of core/.

The map is where a newcomer starts; a file added without a line there is a
file nobody is told about. This lists every .c file under core/ (the
command-line client's core/cli/ as a group) and fails naming each one the
map does not mention in backticks.
"""
import os
import re
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main():
    with open(os.path.join(ROOT, "docs", "core.md")) as f:
        text = f.read()
    start = text.index("## Module map")
    end = text.index("\n## ", start + 1)
    named = set(re.findall(r"`([^`]+)`", text[start:end]))
    missing = []
    core = os.path.join(ROOT, "core")
    for dirpath, _, files in os.walk(core):
        rel = os.path.relpath(dirpath, core)
        for name in sorted(files):
            if not name.endswith(".c"):
                continue
            path = name if rel == "." else "%s/%s" % (rel, name)
            if rel == "cli":
                path = "cli/*.c"
            if path not in named:
                missing.append(path)
    for path in sorted(set(missing)):
        print("docs/core.md's module map does not name core/%s" % path)
    print("%d files missing from the module map" % len(set(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
