"""Every file a document names exists.

Docs rot quietly: a page keeps citing a file that was renamed, or one that
never was in the repository (the spec the project was given lives outside
it). This check reads every tracked text file and fails, naming file and
line, when
  - a Markdown link ([text](target) or [ref]: target) points at a path that
    does not exist, or at a #heading the target page does not have;
  - a file name ending in .md is mentioned anywhere (docs, comments,
    config) and no file of that name exists in the repository;
  - in a Markdown page, a path with a slash that starts at a top-level
    directory of the repository (core/..., docs/..., tests/...) names
    nothing (a path followed by * is a pattern some file must fit; a path
    whose .c exists is the program built from it).
URLs are not fetched: this is about the repository's own files.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
TEXT_EXT = (".md", ".c", ".h", ".lua", ".py", ".sh", ".txt", ".cmake", ".in", ".js", ".json")

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REF_LINK = re.compile(r"^\s*\[[^\]\n]+\]:\s*(\S+)", re.M)
MD_NAME = re.compile(r"(?<![\w/.-])((?:\.{1,2}/)*(?:[\w.-]+/)*[\w-]+\.md)\b")
REPO_PATH = re.compile(r"(?<![\w/.$-])((?:[\w-]+/)+[\w.-]*[\w-])")


def tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build")) and x != "node_modules"]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
        return files


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out = set()
    with open(path, encoding="utf-8") as f:
        in_code = False
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            elif not in_code and line.startswith("#"):
                out.add(slug(line.lstrip("#")))
    return out


def main():
    files = tracked_files()
    names = {os.path.basename(f) for f in files}
    top = {f.split("/", 1)[0] for f in files if "/" in f}
    exists = set(files)
    dirs = set()
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    problems = []

    def present(rel):
        rel = os.path.normpath(rel)
        return rel in exists or rel in dirs

    for f in files:
        if not f.endswith(TEXT_EXT) or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        here = os.path.dirname(f)

        def where(pos):
            return "%s:%d" % (f, text.count("\n", 0, pos) + 1)

        if f.endswith(".md"):
            for m in list(LINK.finditer(text)) + list(REF_LINK.finditer(text)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # a URL
                path, _, frag = target.partition("#")
                rel = os.path.normpath(os.path.join(here, path)) if path else f
                if path and not present(rel):
                    problems.append("%s: link to %s, which does not exist" % (where(m.start()), target))
                elif frag and rel.endswith(".md") and slug(frag) not in anchors(os.path.join(ROOT, rel)):
                    problems.append("%s: link to %s: no heading #%s there" % (where(m.start()), target, frag))
        for m in MD_NAME.finditer(text):
            name = m.group(1)
            base = os.path.basename(name)
            if "/" in name:
                cands = [os.path.normpath(os.path.join(here, name)), os.path.normpath(name.lstrip("/"))]
                if not any(present(c) for c in cands):
                    problems.append("%s: names %s, which is not in the repository" % (where(m.start()), name))
            elif base not in names:
                problems.append("%s: names %s, which is not in the repository" % (where(m.start()), name))
        for m in (REPO_PATH.finditer(text) if f.endswith(".md") else ()):
            path = m.group(1)
            first = path.split("/", 1)[0]
            if first not in top or path.endswith("/"):
                continue
            if text[m.end():m.end() + 1] in ("*", "<", "{", "$"):
                # A pattern such as tests/unit/test_*.c: some file must fit it.
                if any(x.startswith(path) for x in exists):
                    continue
            elif present(path + ".c"):
                continue  # a program built from that source (bench/ingest)
            if not present(path) and not present(os.path.join(here, path)):
                problems.append("%s: names %s, which is not in the repository" % (where(m.start()), path))

    for p in problems:
        print(p)
    print("%d files checked, %d dangling references" % (len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
