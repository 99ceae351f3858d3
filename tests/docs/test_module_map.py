#!/usr/bin/env python3
"""docs/core.md's module map has a section for each folder of core/, and
each section names every source file of its folder.

The map is where a newcomer starts; a file added without a line there is a
file nobody is told about, and a file listed under another folder's section
misleads about its layer. Each folder's section is `### \\`folder/\\``; the
command-line client's cli/ and mcp/ are named as groups (`*.c`). Fails
naming each folder without a section and each file its section lacks.
"""
import os
import re
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GROUPS = ("cli", "mcp")


def sections(text):
    start = text.index("## Module map")
    end = text.index("\n## ", start + 1)
    out = {}
    parts = re.split(r"^### `([a-z]+)/`\s*$", text[start:end], flags=re.M)
    for i in range(1, len(parts), 2):
        out[parts[i]] = set(re.findall(r"`([^`]+)`", parts[i + 1]))
    return out


def main():
    with open(os.path.join(ROOT, "docs", "core.md")) as f:
        named = sections(f.read())
    missing = []
    core = os.path.join(ROOT, "core")
    for folder in sorted(os.listdir(core)):
        d = os.path.join(core, folder)
        if not os.path.isdir(d):
            continue
        if folder not in named:
            missing.append("a section for core/%s/" % folder)
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(".c"):
                continue
            want = "*.c" if folder in GROUPS else name
            if want not in named[folder]:
                missing.append("core/%s/%s in its folder's section" % (folder, name))
    for m in sorted(set(missing)):
        print("docs/core.md's module map lacks %s" % m)
    print("%d missing from the module map" % len(set(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
