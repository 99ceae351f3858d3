#!/usr/bin/env python3
"""No include runs upward between core/'s folders (core/README.md).

tests/CMakeLists.txt holds each folder's rule (VIGIL_LAYER_<folder>: the
folders it may include besides itself) and compiles every header with only
those on the include path; this reads the includes of every .c and .h
against the same lists, so a source file cannot break the rule either, and
a folder without a rule fails."""
import os
import re
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def rules():
    with open(os.path.join(ROOT, "tests", "CMakeLists.txt")) as f:
        text = f.read()
    return {m.group(1): set(m.group(2).replace('""', "").split())
            for m in re.finditer(r"^set\(VIGIL_LAYER_(\w+)\s*([^)]*)\)", text, re.M)}


def main():
    allowed = rules()
    core = os.path.join(ROOT, "core")
    bad = []
    for folder in sorted(os.listdir(core)):
        d = os.path.join(core, folder)
        if not os.path.isdir(d) or folder == "bin":
            continue
        if folder not in allowed:
            bad.append("core/%s/ has no rule (VIGIL_LAYER_%s in tests/CMakeLists.txt)"
                       % (folder, folder))
            continue
        ok = allowed[folder] | {folder}
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(d, name)) as f:
                for n, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if "/" not in inc:
                        bad.append("core/%s/%s:%d: #include \"%s\" does not name its folder"
                                   % (folder, name, n, inc))
                    elif inc.split("/")[0] not in ok:
                        bad.append("core/%s/%s:%d: #include \"%s\": %s/ may include only %s"
                                   % (folder, name, n, inc, folder, ", ".join(sorted(ok))))
    for b in bad:
        print(b)
    print("%d includes against the layers" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
