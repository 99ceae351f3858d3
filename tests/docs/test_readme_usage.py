#!/usr/bin/env python3
"""README.md's "Using it" block runs as written.

A newcomer pastes that block into a shell on a fresh checkout; if any line
of it fails, the README is wrong. This runs the block's lines with bash
-e, from the repository's root, against this build (the block's `build/`
is this build directory), in a private runtime, home and state directory
so that it neither meets nor leaves anything of the machine's own engine,
and with PYTHONUNBUFFERED unset, as on a machine that does not set it
(the dev server's lines must arrive while it runs). It checks what a
person would see: the monitor's id, the line --wait-for waited for, the
crash the wait returned at, the restart, and the foreground run's output;
then that the engine the block started is gone.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.realpath(os.environ.get("VIGIL_BUILD_DIR", os.path.join(ROOT, "build")))
RUN_S = 300


def usage_block():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text[text.index("\n## Using it"):]
    m = re.search(r"```sh\n(.*?)```", section, re.S)
    assert m, "no ```sh block under ## Using it"
    return m.group(1)


def main():
    block = usage_block()
    # The block's build/ is this build (build-asan under the sanitizers).
    script = re.sub(r"(?<![\w/])build/", BUILD + "/", block)
    tmp = tempfile.mkdtemp(prefix="vigil-readme-")
    try:
        run = os.path.join(tmp, "run")
        home = os.path.join(tmp, "home")
        os.makedirs(run, mode=0o700)
        os.makedirs(home)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("VIGIL_") or k == "VIGIL_TEST_RUN"}
        env.pop("PYTHONUNBUFFERED", None)
        env.update(XDG_RUNTIME_DIR=run, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                   XDG_STATE_HOME=os.path.join(home, ".local", "state"))
        start = time.monotonic()
        p = subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=RUN_S)
        out = p.stdout.decode(errors="replace")
        print(out)
        print("(the block took %.1f s)" % (time.monotonic() - start))
        assert p.returncode == 0, "the block failed (status %d)" % p.returncode
        expected = [
            "vigild: listening on %s/vigil/vigil.sock" % run,  # --daemon returned listening
            "is ready:",                                        # --wait-for saw its line
            "listening on http://localhost:3000",
            "Error: connect ECONNREFUSED",                      # the crash: the match, the lines
            "built",                                            # run's output, live
            "has ended",                                        # vigil shutdown waited
        ]
        missing = [e for e in expected if e not in out]
        assert not missing, "not in the block's output: %s" % missing
        assert len(set(re.findall(r"mon_[0-9a-z]{12}", out))) >= 2, "no restart's new id"
        # The block ends by stopping its engine; nothing of it stays.
        deadline = time.monotonic() + 60
        pattern = BUILD + "/vigild --config config/vigil.lua"
        while subprocess.run(["pgrep", "-f", pattern], stdout=subprocess.DEVNULL).returncode == 0:
            assert time.monotonic() < deadline, "the block's engine is still running"
            time.sleep(0.05)  # a process that is not our child: nothing to wait on
        assert not os.path.exists(os.path.join(run, "vigil", "vigil.sock"))
        assert not os.path.exists(os.path.join(run, "vigil", "vigil.pid"))
        print("ok: README.md's Using it block runs as written")
        return 0
    finally:
        subprocess.run(["pkill", "-f", BUILD + "/vigild --config config/vigil.lua --daemon"])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
