#!/usr/bin/env python3
"""Prints the table of code points textfmt_escape shows as escapes (the
textfmt_invisible_ranges[] array of core/base/textfmt.c), from the Unicode Character
Database files of Debian's unicode-data package:

    apt-get install unicode-data
    scripts/gen-textfmt-table.py [/usr/share/unicode]

The set is every code point (U+0080 and up; C0 and DEL are escaped byte by
byte) that is:
  - a control (Cc: the C1 range U+0080..U+009F),
  - a format character (Cf: the bidi controls, ZWSP/ZWNJ/ZWJ, the BOM, the
    word joiner, the invisible operators, the tag characters, ...),
  - a line or paragraph separator (Zl, Zp: U+2028, U+2029),
  - a private use character (Co: U+E000..U+F8FF and planes 15 and 16, which
    mean nothing standard and render as nothing or as whatever a font gives
    them),
  - Default_Ignorable_Code_Point (DerivedCoreProperties.txt): what a renderer
    shows as nothing at all, which adds the variation selectors, the Hangul
    fillers U+115F/U+1160/U+3164/U+FFA0, U+034F, U+17B4/U+17B5, the Mongolian
    free variation selectors and the reserved rest of U+E0000..U+E0FFF,
  - a noncharacter (PropList.txt Noncharacter_Code_Point).
Output: one {first, last} pair per maximal range, sorted, as C text to paste
between the braces of textfmt_invisible_ranges[]. test_textfmt checks the table
against Python's unicodedata when the tests run.
"""

import os
import re
import sys


def property_set(path, name):
    found = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(";")]
            if fields[1] != name:
                continue
            first, _, last = fields[0].partition("..")
            found.update(range(int(first, 16), int(last or first, 16) + 1))
    return found


def categories(path):
    cats = {}
    start = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split(";")
            cp, name, cat = int(fields[0], 16), fields[1], fields[2]
            if name.endswith(", First>"):
                start = cp
                continue
            if name.endswith(", Last>"):
                for c in range(start, cp + 1):
                    cats[c] = cat
                continue
            cats[cp] = cat
    return cats


def main():
    ucd = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"
    cats = categories(os.path.join(ucd, "UnicodeData.txt"))
    chosen = {c for c, k in cats.items() if c >= 0x80 and k in ("Cc", "Cf", "Zl", "Zp", "Co")}
    chosen |= property_set(os.path.join(ucd, "DerivedCoreProperties.txt"),
                           "Default_Ignorable_Code_Point")
    chosen |= property_set(os.path.join(ucd, "PropList.txt"), "Noncharacter_Code_Point")
    ranges = []
    for c in sorted(chosen):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    with open(os.path.join(ucd, "ReadMe.txt"), encoding="utf-8", errors="replace") as f:
        found = re.search(r"Version (\d+\.\d+\.\d+)", f.read())
    print("  /* %d ranges, from Unicode %s */" % (len(ranges), found.group(1) if found else "?"))
    for first, last in ranges:
        print("  {0x%04X, 0x%04X}," % (first, last))


if __name__ == "__main__":
    main()
