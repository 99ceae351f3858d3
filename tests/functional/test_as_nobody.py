"""tests/support/as_nobody.sh, which runs test_contain as user nobody (uid
65534) when the suite runs as root (issue 22, point 26).

What a user would notice if it broke: cloned as root into /root (mode 0700
on Debian), test_contain_unprivileged failed every case, because nobody
could not reach the helper programs the test starts from the build
directory ("child_escape cannot be accessed: Permission denied"). The
script copies the program and its helpers into a private directory nobody
can run them from, runs them there, and removes the directory.

Each test builds a "checkout" in a directory of mode 0700, holding a
program (a shell script standing for test_contain) that reports its uid and
starts a helper from $VIGIL_TEST_HELPERS, as test_contain does. Skipped
unless run as root with setpriv (what the script needs to change uid)."""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import HELPERS, run_plain_tests

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
AS_NOBODY = os.path.join(ROOT, "tests", "support", "as_nobody.sh")

PROGRAM = """#!/bin/sh
echo "uid $(id -u)"
"$VIGIL_TEST_HELPERS/child_exit" 0 out:helper-ran || echo "helper failed: $?"
exit "${1:-0}"
"""


def can_switch_uid():
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def checkout(tmp):
    """A build directory nobody cannot enter: tmp/checkout (0700)/build/tests
    with the program and the helper it starts. Returns (program, helpers)."""
    top = os.path.join(tmp, "checkout")
    tests = os.path.join(top, "build", "tests")
    os.makedirs(tests)
    os.chmod(top, 0o700)
    program = os.path.join(tests, "test_prog")
    with open(program, "w") as f:
        f.write(PROGRAM)
    os.chmod(program, 0o755)
    shutil.copy2(os.path.join(HELPERS, "child_exit"), tests)
    return program, tests


def run(program, helpers, tmpdir, *args):
    env = dict(os.environ, VIGIL_TEST_HELPERS=helpers, TMPDIR=tmpdir)
    return subprocess.run([AS_NOBODY, program] + list(args), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)


def test_a_program_in_a_directory_nobody_cannot_enter_runs_with_its_helpers(tmp):
    if not can_switch_uid():
        print("  (skipped: needs root and setpriv)")
        return
    program, helpers = checkout(tmp)
    # The private directory is made in TMPDIR: one of the test's, which
    # nobody can enter, so what is left in it can be seen.
    runs = tempfile.mkdtemp(prefix="vigil-ft-runs-")
    try:
        os.chmod(runs, 0o755)
        p = run(program, helpers, runs)
        assert p.returncode == 0, p.stdout
        assert "uid 65534" in p.stdout, p.stdout
        assert "helper-ran" in p.stdout and "helper failed" not in p.stdout, p.stdout
        assert os.listdir(runs) == [], "left behind: %s" % os.listdir(runs)
        # The program's exit status is the script's, and the directory goes
        # then too.
        p = run(program, helpers, runs, "3")
        assert p.returncode == 3 and "helper-ran" in p.stdout, (p.returncode, p.stdout)
        assert os.listdir(runs) == [], "left behind: %s" % os.listdir(runs)
    finally:
        shutil.rmtree(runs, ignore_errors=True)


def test_a_tmpdir_nobody_cannot_enter_is_passed_over(tmp):
    if not can_switch_uid():
        print("  (skipped: needs root and setpriv)")
        return
    program, helpers = checkout(tmp)
    private = os.path.join(tmp, "private-tmp")
    os.mkdir(private, 0o700)
    p = run(program, helpers, private)
    assert p.returncode == 0, p.stdout
    assert "uid 65534" in p.stdout and "helper-ran" in p.stdout, p.stdout
    assert os.listdir(private) == [], "left behind: %s" % os.listdir(private)


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_a_program_in_a_directory_nobody_cannot_enter_runs_with_its_helpers,
        test_a_tmpdir_nobody_cannot_enter_is_passed_over,
    ], prefix="vigil-ft-nobody-"))
